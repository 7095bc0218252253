// rlx-hir-to-mir rejects an unknown fusion policy, from the module attribute
// (at the module) or from the pass option.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --rlx-hir-to-mir
// RUN: not rlx-opt %s --split-input-file --rlx-hir-to-mir=policy=eager 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: error: rlx-hir-to-mir: unknown fusion policy 'eager' (option 'policy'); expected 'direct' or 'fusable'

// expected-error @+1 {{rlx-hir-to-mir: unknown fusion policy 'eager' in module attribute 'rlx_hir.fusion_policy'; expected 'direct' or 'fusable'}}
module attributes {rlx_hir.fusion_policy = "eager"} {
  func.func @f(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
    %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
}

// -----

// expected-error @+1 {{rlx-hir-to-mir: module attribute 'rlx_hir.fusion_policy' must be a string, got 1 : i64}}
module attributes {rlx_hir.fusion_policy = 1} {
  func.func @f(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
    %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
}
