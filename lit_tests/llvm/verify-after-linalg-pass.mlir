// The RLX verifier runs after an RLX pass that creates no RLX ops (here rlx-bool-tensors-to-i8)
// as long as RLX ops are left in the module: retyping rlx.where's i1 condition is reported.
// RUN: not rlx-opt %s --rlx-bool-tensors-to-i8 2>&1 | FileCheck %s

// CHECK: error: 'rlx.where' op operand 'condition' must be a ranked tensor of i1, but got tensor<4xi8>
func.func @f(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.where"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
