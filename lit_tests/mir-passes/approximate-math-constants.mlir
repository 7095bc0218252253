// rlx-approximate-math creates each constant once per function, at the start of its entry
// block (where canonicalize would hoist and merge them), also for math ops nested in loop
// bodies; each function gets its own. 1.44269502 (log2 e) is a coefficient of exp only.
// RUN: rlx-opt %s --rlx-approximate-math | FileCheck %s
// Three copies in all: one in the first function, one f32 and one vector<4xf32> in the second.
// RUN: rlx-opt %s --rlx-approximate-math | grep -c 1.44269502 | FileCheck %s --check-prefix=COUNT
// COUNT: {{^}}3{{$}}

// CHECK-LABEL: func.func @two_exps_in_a_loop_body(
// CHECK-NEXT: arith.constant
// CHECK-COUNT-1: arith.constant 1.44269502 : f32
// CHECK-NOT: arith.constant 1.44269502
// CHECK: linalg.generic
// CHECK-NOT: arith.constant
// CHECK: linalg.yield
// CHECK: return
func.func @two_exps_in_a_loop_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %a = math.exp %u : f32
    %b = math.exp %a : f32
    linalg.yield %b : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Vector constants are shared by type too; a second function has its own copy.
// CHECK-LABEL: func.func @vector_and_scalar(
// CHECK-DAG: arith.constant dense<1.44269502> : vector<4xf32>
// CHECK-DAG: arith.constant 1.44269502 : f32
// CHECK: arith.maximumf
// CHECK-NOT: arith.constant
// CHECK: return
func.func @vector_and_scalar(%v: vector<4xf32>, %s: f32) -> (vector<4xf32>, vector<4xf32>, f32) {
  %a = math.exp %v : vector<4xf32>
  %b = math.exp %a : vector<4xf32>
  %c = math.exp %s : f32
  return %a, %b, %c : vector<4xf32>, vector<4xf32>, f32
}
