// The fusion policy comes from the pass option when given, else from the
// module attribute `rlx_hir.fusion_policy`, else it is `direct`.  The pass
// drops the attribute: its output is MIR.
// RUN: rlx-opt %s --split-input-file --rlx-hir-to-mir | FileCheck %s --check-prefixes=ATTR
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=direct})' | FileCheck %s --check-prefixes=OPTION

// ATTR: module {
// ATTR-LABEL: func.func @from_attribute
// ATTR-NEXT: %[[S:.*]] = "rlx.add"
// ATTR-NEXT: "rlx.rms_norm"(%[[S]], %{{.*}}, %{{.*}}) {axis = -1 : i64, eps = 9.99999997E-7 : f32}
// OPTION: module {
// OPTION-LABEL: func.func @from_attribute
// OPTION-NEXT: "rlx.fused_residual_rms_norm"
module attributes {rlx_hir.fusion_policy = "fusable"} {
  func.func @from_attribute(%x: tensor<3x8xf32>, %r: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
    %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
}

// -----

// Other module attributes stay.
// ATTR: module attributes {test.keep = 1 : i64} {
// ATTR-LABEL: func.func @explicit_direct
// ATTR-NEXT: "rlx.fused_residual_rms_norm"
// OPTION: module attributes {test.keep = 1 : i64} {
// OPTION-LABEL: func.func @explicit_direct
// OPTION-NEXT: "rlx.fused_residual_rms_norm"
module attributes {rlx_hir.fusion_policy = "direct", test.keep = 1 : i64} {
  func.func @explicit_direct(%x: tensor<3x8xf32>, %r: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
    %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
}

// -----

// No attribute: direct.
// ATTR-LABEL: func.func @default_direct
// ATTR-NEXT: "rlx.fused_residual_rms_norm"
// OPTION-LABEL: func.func @default_direct
// OPTION-NEXT: "rlx.fused_residual_rms_norm"
func.func @default_direct(%x: tensor<3x8xf32>, %r: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
