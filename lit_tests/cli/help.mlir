// --help and --list-passes list every RLX pass and pipeline with a summary.
// RUN: rlx-opt --help | FileCheck %s
// RUN: rlx-opt --list-passes | FileCheck %s
// RUN: rlx-run --help | FileCheck %s --check-prefix=RUNNER

// CHECK: RLX passes:
// CHECK-DAG: --rlx-hir-to-mir
// CHECK-DAG: --rlx-mir-to-linalg {{ *}}Lower MIR ops (dialect rlx) to linalg
// CHECK-DAG: --rlx-emit-c-interface {{ *}}Mark public func.func ops
// CHECK-DAG: --rlx-verify {{ *}}Check RLX ops' shape and dtype rules
// CHECK: RLX pipelines:
// CHECK-NEXT: --rlx-optimize-mir {{ *}}MIR clean-up and fusion
// CHECK-NEXT: --rlx-lower-to-llvm {{ *}}Lower HIR/MIR to the LLVM dialect for CPU
// CHECK-NEXT: out-params=true {{ *}}return results through caller-allocated buffers
// CHECK: Any upstream MLIR pass or pipeline is accepted

// RUNNER: --input [NAME=]FILE.npy
// RUNNER: --random-inputs
