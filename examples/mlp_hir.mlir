// The same MLP in HIR (RLX's model blocks), with a residual add in MIR: linear(linear(x, w1, gelu), w2) + x.
// Written by the README's "Building models" builder (str(g)); rlx-opt --rlx-hir-to-mir lowers it to MIR.
module attributes {rlx_hir.fusion_policy = "direct"} {
  func.func @mlp(%x: tensor<4x64xf32> {rlx.name = "x"}, %w1: tensor<64x256xf32> {rlx.name = "w1", rlx.param},
                 %w2: tensor<256x64xf32> {rlx.name = "w2", rlx.param}) -> tensor<4x64xf32> {
    %0 = "rlx_hir.linear"(%x, %w1) {activation = "gelu"} : (tensor<4x64xf32>, tensor<64x256xf32>) -> tensor<4x256xf32>
    %1 = "rlx_hir.linear"(%0, %w2) {activation = "none"} : (tensor<4x256xf32>, tensor<256x64xf32>) -> tensor<4x64xf32>
    %2 = "rlx.add"(%1, %x) : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
    return %2 : tensor<4x64xf32>
  }
}
