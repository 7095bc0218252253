// rlx-run reads and writes exactly the files it is given, and refuses bad ones
// with one error (exit code 1, no traceback).
// RUN: rm -rf %t && mkdir -p %t/dir
// RUN: %python -c "import numpy as np; x = np.arange(32, dtype=np.float32).reshape(4, 8); np.save('%t/x.npy', x); np.save('%t/x-be.npy', x.astype('>f4')); np.save('%t/w.npy', np.full((8, 16), 0.25, np.float32)); np.save('%t/b.npy', np.zeros(16, np.float32))"

// --output writes the path named, not the path with `.npy` appended.
// RUN: rlx-run %S/Inputs/mlp.mlir --input %t/x.npy --input %t/w.npy --input %t/b.npy --output %t/out.bin
// RUN: %python -c "import numpy as np, os; print(os.path.exists('%t/out.bin.npy'), np.load('%t/out.bin').shape)" | FileCheck %s --check-prefix=EXACT
// EXACT: False (4, 16)

// A directory is refused before anything runs.
// RUN: not rlx-run %S/Inputs/mlp.mlir --random-inputs --output %t/dir 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: rlx-run: error: --output {{.*}}dir: is a directory; give the path of a .npy file
// RUN: %python -c "import os; print(os.path.exists('%t/dir.npy'))" | FileCheck %s --check-prefix=NO-DIR-NPY
// NO-DIR-NPY: False

// Big-endian float32 input holds the same values: the results are the native input's.
// RUN: rlx-run %S/Inputs/mlp.mlir --input %t/x-be.npy --input %t/w.npy --input %t/b.npy --output %t/out-be.npy
// RUN: %python -c "import numpy as np; print(np.array_equal(np.load('%t/out-be.npy'), np.load('%t/out.bin')))" | FileCheck %s --check-prefix=BIG-ENDIAN
// BIG-ENDIAN: True

// A .npy header claiming far more data than the file holds is refused before allocating it.
// RUN: %python -c "import numpy as np; f = open('%t/huge.npy', 'wb'); np.lib.format.write_array_header_1_0(f, {'descr': '<f4', 'fortran_order': False, 'shape': (400000, 8000000)}); f.write(bytes(16))"
// RUN: not rlx-run %S/Inputs/mlp.mlir --input x=%t/huge.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: rlx-run: error: input 'x': '{{.*}}huge.npy' is truncated or corrupt: its header claims float32 [400000, 8000000] (12800000000000 bytes) but the file holds 16 bytes of data
// HUGE-NOT: internal error

// --seed takes what numpy's generator takes.
// RUN: not rlx-run %S/Inputs/mlp.mlir --random-inputs --seed -1 2>&1 | FileCheck %s --check-prefix=SEED
// SEED: rlx-run: error: argument --seed: expected a non-negative integer, got -1
// SEED-NOT: internal error

// Standard input that is not UTF-8, for both tools.
// RUN: printf '\377\376' | not rlx-run - --random-inputs 2>&1 | FileCheck %s --check-prefix=UTF8-RUNNER
// UTF8-RUNNER: rlx-run: error: standard input is not UTF-8 text
// RUN: printf '\377\376' | not rlx-opt - 2>&1 | FileCheck %s --check-prefix=UTF8-OPT
// UTF8-OPT: rlx-opt: error: standard input is not UTF-8 text
// UTF8-OPT-NOT: internal error
