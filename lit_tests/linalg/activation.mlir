// Each activation is one elementwise linalg.generic with its formula inlined.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @relu
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[X]], %[[Z]] : f32
// CHECK: linalg.yield %[[R]]
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @gelu
// CHECK: arith.constant 0.707106769 : f32
// CHECK: math.erf
func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.gelu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @gelu_approx
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
func.func @gelu_approx(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.gelu_approx"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @silu_and_sigmoid
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[N:.*]] = arith.negf %[[X]]
// CHECK: %[[E:.*]] = math.exp %[[N]]
// CHECK: %[[D:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK: %[[S:.*]] = arith.divf %{{.*}}, %[[D]]
// CHECK: %[[R:.*]] = arith.mulf %[[X]], %[[S]]
// CHECK: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.divf
func.func @silu_and_sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.silu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.sigmoid"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @math_functions
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.rsqrt
// CHECK: arith.negf
// CHECK: math.absf
// CHECK-NOT: rlx.
func.func @math_functions(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.exp"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.log"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "rlx.sqrt"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "rlx.rsqrt"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "rlx.neg"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "rlx.abs"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  return %6 : tensor<4xf32>
}

// CHECK-LABEL: func.func @gelu_bf16
// CHECK: ^bb0(%[[X:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: arith.extf %[[X]] : bf16 to f32
// CHECK: math.erf %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @gelu_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "rlx.gelu"(%x) : (tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
