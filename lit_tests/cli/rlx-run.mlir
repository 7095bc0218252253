// rlx-run JIT-compiles and runs a function on .npy inputs (by name or by
// position) or on seeded random inputs, printing or saving the results.
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.ones((4, 8), np.float32)); np.save('%t.w.npy', np.full((8, 16), 0.25, np.float32)); np.save('%t.b.npy', np.arange(16, dtype=np.float32) - 8); np.save('%t.bad.npy', np.ones((3, 8), np.float32))"
// RUN: rlx-run %S/Inputs/mlp.mlir --entry mlp --input x=%t.x.npy --input w=%t.w.npy --input b=%t.b.npy --output %t.out.npy
// RUN: %python -c "import numpy as np, math; y = np.load('%t.out.npy'); z = 2.0 + np.arange(16) - 8; ref = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in z]); print(y.shape, y.dtype, np.allclose(y, np.broadcast_to(ref, (4, 16)), rtol=1e-5, atol=1e-6))" | FileCheck %s --check-prefix=SAVED
// SAVED: (4, 16) float32 True

// By position, printed:
// RUN: rlx-run %S/Inputs/mlp.mlir --input %t.x.npy --input %t.w.npy --input %t.b.npy | FileCheck %s --check-prefix=PRINTED
// PRINTED: result0: tensor<4x16xf32>
// PRINTED-NEXT: {{\[\[}}-0.0000000e+00 -1.{{[0-9]+}}e-06
// gelu(1):
// PRINTED: 8.41344{{[0-9]+}}e-01

// Random inputs are reproducible from the seed.
// RUN: rlx-run %S/Inputs/mlp.mlir --random-inputs --seed 7 --output %t.r1.npy
// RUN: rlx-run %S/Inputs/mlp.mlir --random-inputs --seed 7 --output %t.r2.npy
// RUN: %python -c "import numpy as np; print(np.array_equal(np.load('%t.r1.npy'), np.load('%t.r2.npy')))" | FileCheck %s --check-prefix=SEEDED
// SEEDED: True

// Errors: exit code 1, one diagnostic, the argument's location where there is one.
// RUN: not rlx-run %S/Inputs/mlp.mlir --input x=%t.bad.npy --input w=%t.w.npy --input b=%t.b.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: mlp.mlir:2:16: error: argument 'x' of @mlp: expected tensor<4x8xf32> (numpy float32 [4, 8]), got numpy float32 [3, 8]
// RUN: not rlx-run %S/Inputs/mlp.mlir --input x=%t.missing.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rlx-run: error: input 'x': no such file '{{.*}}missing.npy'
// RUN: not rlx-run %S/Inputs/mlp.mlir --input %t.x.npy 2>&1 | FileCheck %s --check-prefix=NOT-ENOUGH
// NOT-ENOUGH: rlx-run: error: missing inputs (w: tensor<8x16xf32>, b: tensor<16xf32>); pass --input for each or use --random-inputs
// RUN: not rlx-run %S/Inputs/mlp.mlir --input y=%t.x.npy 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: rlx-run: error: --input y={{.*}}: no argument named 'y' (arguments: x, w, b)
// RUN: not rlx-run %S/Inputs/mlp.mlir --entry nope --random-inputs 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: rlx-run: error: no function '@nope' in the module (functions: mlp)
// RUN: not rlx-run %S/Inputs/bad-matmul.mlir --random-inputs 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: bad-matmul.mlir:4:8: error: 'rlx.matmul' op contracting dimensions differ
// RUN: not rlx-run %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: rlx-run: error: could not open input file
