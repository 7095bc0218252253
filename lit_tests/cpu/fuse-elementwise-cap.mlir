// rlx-fuse-elementwise{max-body-ops=N}: a fused loop body stops growing at N ops (LLVM
// takes super-linear time in the size of one loop body), so a long chain becomes several
// loop nests. Each generic here has 2 ops (its op and the yield); with N = 3 the last one
// absorbs one producer, and the first two are fused together, ahead of it.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-fuse-elementwise{max-body-ops=3})' | FileCheck %s
// RUN: rlx-opt %s --rlx-fuse-elementwise | FileCheck %s --check-prefix=ALL

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8xf32>)
// CHECK: arith.negf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<8xf32>)
// CHECK: math.exp
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[B]]
// ALL-LABEL: func.func @chain(
// ALL-COUNT-1: linalg.generic
// ALL-NOT: linalg.generic
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.negf %u : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.addf %u, %u : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%1 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = math.exp %u : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%2 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.mulf %u, %u : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %3 : tensor<8xf32>
}
