// --rlx-fusion-report prints, after the pipeline, what each fusion pass fused and
// what it considered and left alone, with the reason, to stderr.
// RUN: rlx-opt %s --rlx-fuse-swiglu --rlx-fuse-matmul-bias-act --rlx-fuse-residual-norm --rlx-fusion-report -o %t 2>&1 | FileCheck %s
// RUN: FileCheck %s --input-file=%t --check-prefix=IR
// Without the flag nothing is printed.
// RUN: rlx-opt %s --rlx-fuse-matmul-bias-act -o %t 2>&1 | FileCheck %s --allow-empty --check-prefix=QUIET

// CHECK: RLX fusion report: 3 fused, 3 not fused
// CHECK-NEXT: fused:
// CHECK-NEXT: pass op location result
// CHECK-NEXT: ---
// CHECK-NEXT: rlx-fuse-swiglu rlx.mul {{.*}}fusion-report.mlir:38:9 rlx.fused_swiglu of one matmul on [K, 64] (up then gate)
// CHECK-NEXT: rlx-fuse-matmul-bias-act rlx.matmul {{.*}}fusion-report.mlir:26:8 rlx.fused_matmul_bias_act (activation gelu)
// CHECK-NEXT: rlx-fuse-residual-norm rlx.rms_norm {{.*}}fusion-report.mlir:40:9 rlx.fused_residual_rms_norm
// CHECK-NEXT: not fused:
// CHECK-NEXT: pass op location reason
// CHECK-NEXT: ---
// CHECK-NEXT: rlx-fuse-matmul-bias-act rlx.matmul {{.*}}fusion-report.mlir:29:8 product has 2 uses
// CHECK-NEXT: rlx-fuse-matmul-bias-act rlx.matmul {{.*}}fusion-report.mlir:31:8 weight is batched [2, 8, 8]
// CHECK-NEXT: rlx-fuse-matmul-bias-act rlx.matmul {{.*}}fusion-report.mlir:33:8 bias shape [1, 8] is not [8]
// IR: "rlx.fused_swiglu"
// QUIET-NOT: fusion report
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %wb: tensor<2x8x8xf32>, %b: tensor<8xf32>, %b2: tensor<1x8xf32>,
             %wu: tensor<8x32xf32>, %wg: tensor<8x32xf32>, %g: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x32xf32>, tensor<4x8xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.matmul"(%2, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.add"(%3, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.matmul"(%2, %wb) : (tensor<4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %6 = "rlx.add"(%5, %b) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %7 = "rlx.matmul"(%4, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %8 = "rlx.add"(%7, %b2) : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %9 = "rlx.matmul"(%x, %wu) : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %10 = "rlx.matmul"(%x, %wg) : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %11 = "rlx.silu"(%10) : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %12 = "rlx.mul"(%9, %11) : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %13 = "rlx.add"(%2, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %14 = "rlx.rms_norm"(%13, %g, %g) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %2, %3, %6, %8, %12, %14 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x32xf32>, tensor<4x8xf32>
}
