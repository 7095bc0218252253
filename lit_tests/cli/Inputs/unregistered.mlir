// An op of a dialect nobody registered, between RLX ops.
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mine.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
