// softplus, sin, cos, floor, round, clamp and the integer bitwise ops: one
// elementwise linalg.generic each, the formula inlined.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// softplus(x) = max(x, 0) + log1p(exp(-|x|)), log1p written out (math.log1p
// lowers to log(1 + u), which loses every u below 6e-8).
// CHECK-LABEL: func.func @softplus
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[P:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: %[[A:.*]] = math.absf %[[X]]
// CHECK: %[[N:.*]] = arith.negf %[[A]]
// CHECK: %[[E:.*]] = math.exp %[[N]]
// CHECK: %[[W:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK: math.log %[[W]]
// CHECK: %[[ONE:.*]] = arith.cmpf oeq, %[[W]]
// CHECK: %[[L:.*]] = arith.select %[[ONE]], %[[E]], %{{.*}} : f32
// CHECK: %[[R:.*]] = arith.addf %[[P]], %[[L]]
// CHECK: linalg.yield %[[R]]
// CHECK-NOT: math.log1p
func.func @softplus(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.softplus"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @trig_and_rounding
// CHECK: math.sin
// CHECK: math.cos
// CHECK: math.floor
// CHECK: math.roundeven
func.func @trig_and_rounding(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.sin"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.cos"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.floor"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "rlx.round"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// A bf16 clamp compares in f32 and rounds once; an absent bound emits nothing.
// CHECK-LABEL: func.func @clamp
// CHECK: ^bb0(%[[X:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[W:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK: %[[LO:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[M:.*]] = arith.maximumf %[[W]], %[[LO]] : f32
// CHECK: %[[N:.*]] = arith.truncf %[[M]] : f32 to bf16
// CHECK: linalg.yield %[[N]]
// CHECK-NOT: arith.minimumf
func.func @clamp(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "rlx.clamp"(%x) {min = -1.0 : f32} : (tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// ui8 computes on the same bits as i8 (the lowering retypes ui8 as i8 at its end): a
// logical shift, and 0 where the amount is out of range.
// CHECK-LABEL: func.func @unpack_high_nibble
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<i8>, %{{.*}}: tensor<i8>) -> tensor<4xi8>
// CHECK: ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %{{.*}}: i8):
// CHECK: %[[WIDTH:.*]] = arith.constant 8 : i8
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[B]], %[[WIDTH]] : i8
// CHECK: %[[S:.*]] = arith.shrui %[[A]], %[[B]] : i8
// CHECK: %[[R:.*]] = arith.select %[[OK]], %[[S]], %{{.*}} : i8
// CHECK: linalg.yield %[[R]]
// CHECK: arith.andi
func.func @unpack_high_nibble(%packed: tensor<4xui8>, %four: tensor<ui8>, %mask: tensor<ui8>) -> tensor<4xui8> {
  %0 = "rlx.shift_right"(%packed, %four) : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %1 = "rlx.bitwise_and"(%0, %mask) : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  return %1 : tensor<4xui8>
}

// A signed right shift is arithmetic; an out-of-range amount shifts by width - 1.
// CHECK-LABEL: func.func @signed_shift
// CHECK: %[[LAST:.*]] = arith.constant 31 : i32
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[B:.*]], %{{.*}} : i32
// CHECK: %[[AMOUNT:.*]] = arith.select %[[OK]], %[[B]], %[[LAST]] : i32
// CHECK: arith.shrsi %{{.*}}, %[[AMOUNT]] : i32
func.func @signed_shift(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "rlx.shift_right"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
