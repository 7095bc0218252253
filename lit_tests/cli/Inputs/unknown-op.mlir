// No such op in the rlx dialect.
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "rlx.frobnicate"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
