// Every MIR op parses, verifies and prints back to a form that parses again.
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[ADD:.*]] = "rlx.add"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = "rlx.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.sub"(%[[ADD]], %[[B]])
  %1 = "rlx.sub"(%0, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.mul"
  %2 = "rlx.mul"(%1, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.div"
  %3 = "rlx.div"(%2, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.max"
  %4 = "rlx.max"(%3, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.min"
  %5 = "rlx.min"(%4, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.pow"
  %6 = "rlx.pow"(%5, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.relu"
  %7 = "rlx.relu"(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.gelu"
  %8 = "rlx.gelu"(%7) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.gelu_approx"
  %9 = "rlx.gelu_approx"(%8) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.silu"
  %10 = "rlx.silu"(%9) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.sigmoid"
  %11 = "rlx.sigmoid"(%10) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.tanh"
  %12 = "rlx.tanh"(%11) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.exp"
  %13 = "rlx.exp"(%12) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.log"
  %14 = "rlx.log"(%13) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.sqrt"
  %15 = "rlx.sqrt"(%14) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.rsqrt"
  %16 = "rlx.rsqrt"(%15) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.neg"
  %17 = "rlx.neg"(%16) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: "rlx.abs"
  %18 = "rlx.abs"(%17) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %18 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear_algebra_and_shape
func.func @linear_algebra_and_shape(%x: tensor<2x4x8xf16>, %w: tensor<8x16xf16>) -> tensor<16x8xf16> {
  // CHECK: "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x4x8xf16>, tensor<8x16xf16>) -> tensor<2x4x16xf16>
  %0 = "rlx.matmul"(%x, %w) : (tensor<2x4x8xf16>, tensor<8x16xf16>) -> tensor<2x4x16xf16>
  // CHECK-NEXT: "rlx.reshape"(%{{.*}}) : (tensor<2x4x16xf16>) -> tensor<8x16xf16>
  %1 = "rlx.reshape"(%0) : (tensor<2x4x16xf16>) -> tensor<8x16xf16>
  // CHECK-NEXT: "rlx.transpose"(%{{.*}}) {perm = array<i64: 1, 0>} : (tensor<8x16xf16>) -> tensor<16x8xf16>
  %2 = "rlx.transpose"(%1) {perm = array<i64: 1, 0>} : (tensor<8x16xf16>) -> tensor<16x8xf16>
  return %2 : tensor<16x8xf16>
}
