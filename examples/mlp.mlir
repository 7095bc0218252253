// A one-layer MLP: gelu(x @ w + b), arguments named for rlx-run.
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w"},
               %b: tensor<16xf32> {rlx.name = "b"}) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
