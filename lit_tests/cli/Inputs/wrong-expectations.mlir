// Expectations that do not match what the verifier says.

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{K is wrong}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{never emitted}}
  %0 = "rlx.neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
