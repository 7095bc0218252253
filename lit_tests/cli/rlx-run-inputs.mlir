// rlx-run as iree-run-module: inline typed inputs, @file inputs, symbolic sizes read off the
// inputs, timing over repeated runs, the thread count and target, and what LLVM-dialect input needs.
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.arange(48, dtype=np.float32).reshape(2, 3, 8)); np.save('%t.x4.npy', np.ones((1, 4, 8), np.float32))"

// Inline literals: one value fills the tensor, else one value per element (commas or spaces).
// RUN: rlx-run %S/../../examples/mlp.mlir --input=4x8xf32=1.0 --input w=8x16xf32=0.25 --input "b=16xf32=-8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7" | FileCheck %s --check-prefix=INLINE
// x @ w = 2 everywhere, so row i of the result is gelu(2 + b): gelu(0) = 0, gelu(1) = 0.841345, gelu(9) = 9.
// INLINE: result0: tensor<4x16xf32>
// INLINE: 0.0000000e+00 8.41344{{[0-9]+}}e-01
// INLINE: 9.0000000e+00]]
// RUN: not rlx-run %S/../../examples/mlp.mlir --input=4x8xf32=1,2 --random-inputs 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: rlx-run: error: --input 4x8xf32=1,2: 4x8xf32 has 32 elements but 2 values were given (give one value to fill them all)
// RUN: not rlx-run %S/../../examples/mlp.mlir --input=4x8xf32=one --random-inputs 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: rlx-run: error: --input 4x8xf32=one: cannot read the values as f32
// RUN: not rlx-run %S/../../examples/mlp.mlir --input=3x8xf32=1 --random-inputs 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: mlp.mlir:2:16: error: argument 'x' of @mlp: expected tensor<4x8xf32> (numpy float32 [4, 8]), got numpy float32 [3, 8]

// Symbolic sizes come from the inputs (x [BATCH, SEQ, 8] gives BATCH = 2, SEQ = 3); @file reads a .npy file.
// RUN: rlx-run %S/../../examples/dyn.mlir --input x=@%t.x.npy --input=8xf32=2 | FileCheck %s --check-prefix=INFERRED
// INFERRED: result0: tensor<2x3x8xf32>
// INFERRED-NEXT: {{\[\[\[}} 0.  2.  4.
// RUN: rlx-run %S/../../examples/dyn.mlir --input %t.x4.npy --random-inputs | FileCheck %s --check-prefix=RANDOM-REST
// RANDOM-REST: result0: tensor<1x4x8xf32>
// RUN: not rlx-run %S/../../examples/dyn.mlir --input %t.x.npy --random-inputs --bind BATCH=3 2>&1 | FileCheck %s --check-prefix=DISAGREE
// DISAGREE: rlx-run: error: --bind: BATCH=3, but the inputs give BATCH=2
// RUN: not rlx-run %S/../../examples/dyn.mlir --input=2x3x4xf32=1 --random-inputs 2>&1 | FileCheck %s --check-prefix=BAD-DIM
// BAD-DIM: rlx-run: error: --input: argument 'x' of @scale_rows: dimension 2 must be 8 ([BATCH, SEQ, 8]), got shape [2, 3, 4]

// --repeat N: the time of a call, min and median, on stderr (stdout keeps the results).
// RUN: rlx-run %S/../../examples/mlp.mlir --random-inputs --repeat 5 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING
// TIMING: @mlp: 5 runs, min {{[0-9]+\.[0-9]+}} ms, median {{[0-9]+\.[0-9]+}} ms
// RUN: rlx-run %S/../../examples/mlp.mlir --random-inputs 2>&1 >/dev/null | count 0

// --threads and --target reach compile().
// RUN: rlx-run %S/../../examples/mlp.mlir --input=4x8xf32=1 --input=8x16xf32=0.25 --input=16xf32=0 --threads 1 --target cpu | FileCheck %s --check-prefix=THREADS
// THREADS: {{\[\[}}1.9544997 1.9544997
// RUN: not rlx-run %S/../../examples/mlp.mlir --random-inputs --threads 5000 2>&1 | FileCheck %s --check-prefix=THREADS-MAX
// THREADS-MAX: rlx-run: error: compile(): threads must be at most 1024, got 5000
// RUN: not rlx-run %S/../../examples/mlp.mlir --random-inputs --threads 0 2>&1 | FileCheck %s --check-prefix=THREADS-BAD
// THREADS-BAD: rlx-run: error: argument --threads: expected a positive integer, got 0 (see rlx-run --help)
// RUN: not rlx-run %S/../../examples/mlp.mlir --random-inputs --target rocm 2>&1 | FileCheck %s --check-prefix=TARGET-BAD
// TARGET-BAD: rlx-run: error: argument --target: invalid choice: 'rocm' (choose from {{'?}}cpu{{'?}}, {{'?}}cuda{{'?}})

// LLVM-dialect input: say what rlx-run needs instead of "public functions: none".
// RUN: rlx-opt %S/../../examples/mlp.mlir --rlx-lower-to-llvm -o %t.llvm.mlir
// RUN: not rlx-run %t.llvm.mlir --random-inputs 2>&1 | FileCheck %s --check-prefix=LLVM
// LLVM: rlx-run: error: {{.*}}.llvm.mlir holds LLVM-dialect IR (llvm.func): rlx-run compiles RLX (rlx_hir, rlx) or linalg input; give it the module from before rlx-lower-to-llvm (mlir-runner runs LLVM-dialect IR)

// bf16 arguments and results: ml_dtypes' bfloat16 arrays, inline literals included.
// RUN: rlx-run %S/Inputs/bf16.mlir --input=4xbf16=1,2,3,4.5 | FileCheck %s --check-prefix=BF16
// BF16: result0: tensor<4xbf16>
// BF16-NEXT: [-1 -2 -3 -4.5]

// Integer literals keep their values: the extremes of each type pass through; a value outside the
// element type is an error (numpy wrapped 300 to 44 as i8, and 2**64 failed as an internal error).
// RUN: rlx-run %S/Inputs/ints.mlir --input a=2xi8=-128,127 --input b=2xi64=-9223372036854775808,9223372036854775807 | FileCheck %s --check-prefix=INT-EXTREMES
// INT-EXTREMES: result0: tensor<2xi64>
// INT-EXTREMES-NEXT: [-128  127]
// INT-EXTREMES: result1: tensor<2xi64>
// INT-EXTREMES-NEXT: [-9223372036854775808  9223372036854775807]
// RUN: not rlx-run %S/Inputs/ints.mlir --input a=2xi8=300 --input b=2xi64=1 2>&1 | FileCheck %s --check-prefix=INT-WRAP
// INT-WRAP: rlx-run: error: --input a=2xi8=300: 300 is out of range for i8 (-128 to 127)
// RUN: not rlx-run %S/Inputs/ints.mlir --input a=2xi8=1,-129 --input b=2xi64=1 2>&1 | FileCheck %s --check-prefix=INT-LOW
// INT-LOW: rlx-run: error: --input a=2xi8=1,-129: -129 is out of range for i8 (-128 to 127)
// RUN: not rlx-run %S/Inputs/ints.mlir --input a=2xi8=1 --input b=2xi64=99999999999999999999 2>&1 | FileCheck %s --check-prefix=INT-HUGE
// INT-HUGE: rlx-run: error: --input b=2xi64=99999999999999999999: 99999999999999999999 is out of range for i64 (-9223372036854775808 to 9223372036854775807)
