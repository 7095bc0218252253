// rlx.transpose without its required attribute.
func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "rlx.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
