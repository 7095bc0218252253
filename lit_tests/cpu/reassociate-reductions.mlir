// rlx-reassociate-reductions: float arithmetic in a body whose innermost loop reduces
// may be reordered (fastmath<reassoc,contract>), so LLVM vectorizes the sum; bodies
// whose innermost loop is parallel, and elementwise bodies, keep their exact order.
// (The affine-map aliases after the comments also pin that the implicit module opens
// after them: an arrow `->` in a map is not a closing bracket.)
// RUN: rlx-opt %s --rlx-reassociate-reductions | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @row_sum(
// CHECK: linalg.reduce
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
func.func @row_sum(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<4xf32>
}

// The reduction is not innermost (columns sum over rows, the row loop outside): exact order.
// CHECK-LABEL: func.func @column_sum(
// CHECK: arith.addf
// CHECK-NOT: fastmath
// CHECK: return
func.func @column_sum(%x: tensor<4x64xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<64xf32>
}

// CHECK-LABEL: func.func @dot_rows(
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK-LABEL: func.func @elementwise(
// CHECK: arith.addf
// CHECK-NOT: fastmath
// CHECK: return
func.func @dot_rows(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %y : tensor<4x64xf32>, tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @elementwise(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x64xf32>) outs(%x : tensor<4x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
