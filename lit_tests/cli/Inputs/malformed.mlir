// Uses a value that does not exist.
func.func @f(%b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "rlx.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
