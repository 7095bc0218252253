// A two-layer MLP for the C and C++ examples: x [8, 32] -> gelu(x @ w1 + b1) @ w2 + b2 -> [8, 16].
func.func @mlp(%x: tensor<8x32xf32> {rlx.name = "x"},
               %w1: tensor<32x64xf32> {rlx.name = "w1", rlx.param}, %b1: tensor<64xf32> {rlx.name = "b1", rlx.param},
               %w2: tensor<64x16xf32> {rlx.name = "w2", rlx.param}, %b2: tensor<16xf32> {rlx.name = "b2", rlx.param})
    -> tensor<8x16xf32> {
  %0 = "rlx.matmul"(%x, %w1) : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %1 = "rlx.add"(%0, %b1) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %2 = "rlx.gelu"(%1) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %3 = "rlx.matmul"(%2, %w2) : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %4 = "rlx.add"(%3, %b2) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %4 : tensor<8x16xf32>
}
