// Reductions: linalg.reduce with an f32 accumulator (f16 / bf16 extended in the
// combiner, rounded once afterwards); softmax subtracts the max; cumsum is an
// O(n) loop nest; argmax is one two-output linalg.generic reduction.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// The affine maps of @softmax and @argmax, printed at the top of the module.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @sum
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<2x4xf32>)
// CHECK: %[[R:.*]] = linalg.reduce { arith.addf } ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>) dimensions = [1]
// CHECK-NEXT: return %[[R]]
func.func @sum(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %0 = "rlx.reduce"(%x) {kind = "sum", axes = array<i64: -2>, keep_dim = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// mean over two (unsorted) axes of f16, keep_dim: f32 sum, divide by 12, round, expand.
// CHECK-LABEL: func.func @mean_f16
// CHECK: %[[R:.*]] = linalg.reduce ins(%{{.*}} : tensor<2x3x4xf16>) outs(%{{.*}} : tensor<2xf32>) dimensions = [1, 2]
// CHECK-NEXT: (%[[IN:.*]]: f16, %[[ACC:.*]]: f32) {
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[W]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<2xf32>) outs(%{{.*}} : tensor<2xf16>)
// CHECK: %[[COUNT:.*]] = arith.constant 1.200000e+01 : f32
// CHECK: %[[D:.*]] = arith.divf %{{.*}}, %[[COUNT]] : f32
// CHECK: arith.truncf %[[D]] : f32 to f16
// CHECK: %[[K:.*]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf16> into tensor<2x1x1xf16>
// CHECK: return %[[K]]
func.func @mean_f16(%x: tensor<2x3x4xf16>) -> tensor<2x1x1xf16> {
  %0 = "rlx.reduce"(%x) {kind = "mean", axes = array<i64: 2, 1>, keep_dim = true} : (tensor<2x3x4xf16>) -> tensor<2x1x1xf16>
  return %0 : tensor<2x1x1xf16>
}

// max starts from -inf and propagates NaN (arith.maximumf); bf16 rounds once at the end.
// CHECK-LABEL: func.func @max_bf16
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.reduce ins(%{{.*}} : tensor<5x6xbf16>) outs(%{{.*}} : tensor<6xf32>) dimensions = [0]
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @max_bf16(%x: tensor<5x6xbf16>) -> tensor<6xbf16> {
  %0 = "rlx.reduce"(%x) {kind = "max", axes = array<i64: 0>, keep_dim = false} : (tensor<5x6xbf16>) -> tensor<6xbf16>
  return %0 : tensor<6xbf16>
}

// CHECK-LABEL: func.func @min_prod
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: linalg.reduce { arith.minimumf } ins(%{{.*}} : tensor<5x6xf32>) outs(%{{.*}} : tensor<5xf32>) dimensions = [1]
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: linalg.reduce { arith.mulf } ins(%{{.*}} : tensor<5x6xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0, 1]
func.func @min_prod(%x: tensor<5x6xf32>) -> (tensor<5xf32>, tensor<f32>) {
  %0 = "rlx.reduce"(%x) {kind = "min", axes = array<i64: 1>, keep_dim = false} : (tensor<5x6xf32>) -> tensor<5xf32>
  %1 = "rlx.reduce"(%x) {kind = "prod", axes = array<i64: 0, 1>, keep_dim = false} : (tensor<5x6xf32>) -> tensor<f32>
  return %0, %1 : tensor<5xf32>, tensor<f32>
}

// Three passes, no temporary of the input's size: the row maxima, the row sums of exp(x - max)
// (one reduction generic), then exp(x - max) / sum computed again and rounded once.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16>)
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[X]] : tensor<2x8xbf16>) outs(%{{.*}} : tensor<2xf32>) dimensions = [1]
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MAX]] : tensor<2x8xbf16>, tensor<2xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: %[[SHIFTED:.*]] = arith.subf %[[W]], %[[M]] : f32
// CHECK: %[[E:.*]] = math.exp %[[SHIFTED]] : f32
// CHECK: arith.addf %[[ACC]], %[[E]] : f32
// CHECK-NOT: tensor<2x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[MAX]], %[[SUM]] : tensor<2x8xbf16>, tensor<2xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x8xbf16>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @softmax(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  %0 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// Exclusive cumsum along axis 0: the outer loop walks axis 1, the inner one
// walks axis 0 carrying the f32 running sum; it writes the sum *before* adding.
// CHECK-LABEL: func.func @cumsum
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf16>)
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<3x4xf16>
// CHECK: %[[R:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[O1:.*]] = %[[OUT]]) -> (tensor<3x4xf16>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[IN:.*]]:2 = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]], %[[O2:.*]] = %[[O1]]) -> (f32, tensor<3x4xf16>)
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[X]][%[[I]], %[[J]]] : tensor<3x4xf16>
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[V]] : f16 to f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[W]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[ACC]] : f32 to f16
// CHECK-NEXT: %[[INS:.*]] = tensor.insert %[[T]] into %[[O2]][%[[I]], %[[J]]] : tensor<3x4xf16>
// CHECK-NEXT: scf.yield %[[S]], %[[INS]] : f32, tensor<3x4xf16>
// CHECK: scf.yield %[[IN]]#1 : tensor<3x4xf16>
// CHECK: return %[[R]]
func.func @cumsum(%x: tensor<3x4xf16>) -> tensor<3x4xf16> {
  %0 = "rlx.cumsum"(%x) {axis = 0 : i64, exclusive = true} : (tensor<3x4xf16>) -> tensor<3x4xf16>
  return %0 : tensor<3x4xf16>
}

// Inclusive: the sum *after* adding is written.
// CHECK-LABEL: func.func @cumsum_inclusive
// CHECK: scf.for
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: tensor.insert %[[S]] into
func.func @cumsum_inclusive(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = "rlx.cumsum"(%x) {axis = -1 : i64, exclusive = false} : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// CHECK-LABEL: func.func @argmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x5xbf16>)
// CHECK: %[[BEST:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[IDX:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<2x5xbf16>) outs(%[[BEST]], %[[IDX]] : tensor<2xf32>, tensor<2xi64>)
// CHECK: ^bb0(%[[IN:.*]]: bf16, %[[B:.*]]: f32, %[[K:.*]]: i64):
// CHECK: %[[V:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: %[[POS:.*]] = linalg.index 1 : index
// CHECK: %[[P:.*]] = arith.index_cast %[[POS]] : index to i64
// CHECK: arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK: arith.cmpf ogt, %[[V]], %[[B]] : f32
// CHECK: arith.cmpf oeq, %[[V]], %[[B]] : f32
// CHECK: arith.cmpi slt, %[[P]], %[[K]] : i64
// CHECK: %[[TAKE:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i1
// CHECK: %[[NB:.*]] = arith.select %[[TAKE]], %[[V]], %[[B]] : f32
// CHECK: %[[NK:.*]] = arith.select %[[TAKE]], %[[P]], %[[K]] : i64
// CHECK: linalg.yield %[[NB]], %[[NK]] : f32, i64
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]]#1 {{\[\[}}0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
// CHECK: return %[[E]]
func.func @argmax(%x: tensor<2x5xbf16>) -> tensor<2x1xi64> {
  %0 = "rlx.argmax"(%x) {axis = -1 : i64, keep_dim = true} : (tensor<2x5xbf16>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}
