// rlx-fuse-elementwise: a single-use elementwise producer is computed inside its
// consumer's loop nest. Not fused: a producer that reads its init (fusing it into a
// consumer with more loops would rewrite that init on every extra iteration, the
// LLVM 22 upstream pass's bug), and a consumer that broadcasts the producer (its
// body would run once per broadcast element).
// RUN: rlx-opt %s --split-input-file --rlx-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[BE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[XE]], %[[BE]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[S]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK-NEXT: linalg.yield %[[M]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = math.exp %u : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.mulf %u, %u : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#drop = affine_map<(d0, d1, d2) -> (d0, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-4: linalg.generic
func.func @kept(%x: tensor<4x8xf32>, %acc: tensor<4x8xf32>, %y: tensor<4x3x8xf32>) -> (tensor<4x3x8xf32>, tensor<4x3x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x3x8xf32>
  // Reads its init (%o): stays.
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4x8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.addf %u, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#drop, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0, %y : tensor<4x8xf32>, tensor<4x3x8xf32>) outs(%e3 : tensor<4x3x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.mulf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x3x8xf32>
  // Broadcast along d1 by its consumer: stays.
  %2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = math.exp %u : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %3 = linalg.generic {indexing_maps = [#drop, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %y : tensor<4x8xf32>, tensor<4x3x8xf32>) outs(%e3 : tensor<4x3x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.mulf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x3x8xf32>
  return %1, %3 : tensor<4x3x8xf32>, tensor<4x3x8xf32>
}

// -----

// A gather along d1 (its table read by tensor.extract at linalg.index 0, so none of its
// operands ranges over d0) feeding a reduction over d0 (argmax along axis 0): the fused op
// would have no operand ranging over d0, so no bound for that loop (linalg: "invalid indexing
// maps are non-invertible"). Not fused. Into a parallel consumer, whose result ranges over
// every loop, the same producer is fused.
#col = affine_map<(d0, d1) -> (d1)>
#g2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gather_into_reduction(
// CHECK-SAME: %[[T:[^:]*]]: tensor<3x7xf32>, %[[I:[^:]*]]: tensor<5xi64>
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[I]] : tensor<5xi64>)
// CHECK: tensor.extract %[[T]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME: ins(%[[G]] : tensor<3x5xf32>)
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @gather_into_parallel(
// CHECK-SAME: %[[T:[^:]*]]: tensor<3x7xf32>, %[[I:[^:]*]]: tensor<5xi64>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[I]] : tensor<5xi64>)
// CHECK: tensor.extract %[[T]]
// CHECK: math.exp
// CHECK-NOT: linalg.generic
func.func @gather_into_reduction(%t: tensor<3x7xf32>, %i: tensor<5xi64>) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<3x5xf32>
  %g = linalg.generic {indexing_maps = [#col, #g2], iterator_types = ["parallel", "parallel"]} ins(%i : tensor<5xi64>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%in: i64, %o: f32):
    %k = arith.index_cast %in : i64 to index
    %r = linalg.index 0 : index
    %v = tensor.extract %t[%r, %k] : tensor<3x7xf32>
    linalg.yield %v : f32
  } -> tensor<3x5xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<5xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<5xf32>) -> tensor<5xf32>
  %m = linalg.generic {indexing_maps = [#g2, #col], iterator_types = ["reduction", "parallel"]} ins(%g : tensor<3x5xf32>) outs(%init : tensor<5xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %x = arith.maximumf %in, %acc : f32
    linalg.yield %x : f32
  } -> tensor<5xf32>
  return %m : tensor<5xf32>
}
func.func @gather_into_parallel(%t: tensor<3x7xf32>, %i: tensor<5xi64>) -> tensor<3x5xf32> {
  %e = tensor.empty() : tensor<3x5xf32>
  %g = linalg.generic {indexing_maps = [#col, #g2], iterator_types = ["parallel", "parallel"]} ins(%i : tensor<5xi64>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%in: i64, %o: f32):
    %k = arith.index_cast %in : i64 to index
    %r = linalg.index 0 : index
    %v = tensor.extract %t[%r, %k] : tensor<3x7xf32>
    linalg.yield %v : f32
  } -> tensor<3x5xf32>
  %x = linalg.generic {indexing_maps = [#g2, #g2], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %x : tensor<3x5xf32>
}
