// rlx.selective_scan, rlx.gated_delta_net and rlx.depthwise_conv1d_causal reject
// ill-formed operands, attributes and result types with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @ss_state_size_zero(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x0xf32>, %a3: tensor<2x5x0xf32>, %a4: tensor<2x5x0xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op state_size must be positive, got 0}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 0, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x0xf32>, tensor<2x5x0xf32>, tensor<2x5x0xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_x_rank(%a0: tensor<5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op x must have rank 3 ([b, s, h]), got [5, 3]}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<5x3xf32>
}

// -----

func.func @ss_delta_shape(%a0: tensor<2x5x3xf32>, %a1: tensor<2x4x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op delta has shape [2, 4, 3], expected [b, s, h] = [2, 5, 3] for x [2, 5, 3] and state_size 4}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x4x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_a_state_size(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x8xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op a has shape [3, 8], expected [h, n] = [3, 4] for x [2, 5, 3] and state_size 4}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x8xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_a_channels(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<4x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op a has shape [4, 4], expected [h, n] = [3, 4] for x [2, 5, 3] and state_size 4}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<4x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_b_in_shape(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<1x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op b_in has shape [1, 5, 4], expected [b, s, n] = [2, 5, 4] for x [2, 5, 3] and state_size 4}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<1x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_c_shape(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op c has shape [2, 5, 3], expected [b, s, n] = [2, 5, 4] for x [2, 5, 3] and state_size 4}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_mixed_types(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf16>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op requires operands of one element type, got f32, f32, f16, f32, f32}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf16>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_int_operand(%a0: tensor<2x5x3xi32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op operand 'x' must be a ranked tensor of f32, f16 or bf16, but got tensor<2x5x3xi32>}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xi32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @ss_result_type(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x4xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op result #0 ('y') type tensor<2x5x4xf32> does not match the inferred type tensor<2x5x3xf32>}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x4xf32>
}

// -----

func.func @ss_missing_state_size(%a0: tensor<2x5x3xf32>, %a1: tensor<2x5x3xf32>, %a2: tensor<3x4xf32>, %a3: tensor<2x5x4xf32>, %a4: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.selective_scan' op attribute "state_size" is expected but not provided}}
  %0:2 = "rlx.selective_scan"(%a0, %a1, %a2, %a3, %a4) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// -----

func.func @gdn_state_size_zero(%a0: tensor<1x3x2x0xf32>, %a1: tensor<1x3x2x0xf32>, %a2: tensor<1x3x2x0xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x0xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op state_size must be positive, got 0}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 0} : (tensor<1x3x2x0xf32>, tensor<1x3x2x0xf32>, tensor<1x3x2x0xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x0xf32>, tensor<1x2x0x0xf32>)
  return %0#0 : tensor<1x3x2x0xf32>
}

// -----

func.func @gdn_head_dim(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op q head dim 4 (q [1, 3, 2, 4]) differs from state_size 8}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 8} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x8x8xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_q_rank(%a0: tensor<3x2x4xf32>, %a1: tensor<3x2x4xf32>, %a2: tensor<3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op q must have rank 4 ([b, s, hk, dk]), got [3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<3x2x4xf32>
}

// -----

func.func @gdn_k_shape(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x1x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op k has shape [1, 3, 1, 4], expected [b, s, hk, dk] = [1, 3, 2, 4] for q [1, 3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_v_shape(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x2x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op v has shape [1, 2, 2, 4], expected [b, s, hv, dv] = [1, 3, 2, 4] for q [1, 3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_g_shape(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2x1xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op g has shape [1, 3, 2, 1], expected [b, s, hv] = [1, 3, 2] for q [1, 3, 2, 4] and v [1, 3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x1xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_beta_shape(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x1xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op beta has shape [1, 3, 1], expected [b, s, hv] = [1, 3, 2] for q [1, 3, 2, 4] and v [1, 3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x1xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_state_shape(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>, %a5: tensor<1x2x4x3xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op state has shape [1, 2, 4, 3], expected [b, hv, dv, dk] (state_layout v_k) = [1, 2, 4, 4] for q [1, 3, 2, 4] and v [1, 3, 2, 4]}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4, %a5) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_state_type(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>, %a5: tensor<1x2x4x4xf16>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op requires operands of one element type, got f32, f32, f32, f32, f32, f16}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4, %a5) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x2x4x4xf16>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_out_type(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x8xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op result #0 ('out') type tensor<1x3x2x8xf32> does not match the inferred type tensor<1x3x2x4xf32>}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x8xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x8xf32>
}

// -----

func.func @gdn_final_state_type(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op result #1 ('final_state') type tensor<1x2x4x4xf16> does not match the inferred type tensor<1x2x4x4xf32>}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf16>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @gdn_int_beta(%a0: tensor<1x3x2x4xf32>, %a1: tensor<1x3x2x4xf32>, %a2: tensor<1x3x2x4xf32>, %a3: tensor<1x3x2xf32>, %a4: tensor<1x3x2xi64>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{'rlx.gated_delta_net' op operand 'beta' must be a ranked tensor of f32, f16 or bf16, but got tensor<1x3x2xi64>}}
  %0:2 = "rlx.gated_delta_net"(%a0, %a1, %a2, %a3, %a4) {state_size = 4} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xi64>) -> (tensor<1x3x2x4xf32>, tensor<1x2x4x4xf32>)
  return %0#0 : tensor<1x3x2x4xf32>
}

// -----

func.func @conv_kernel_size_zero(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x0xf32>, %a2: tensor<2x0x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op kernel_size must be positive, got 0}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 0} : (tensor<2x5x3xf32>, tensor<3x1x1x0xf32>, tensor<2x0x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_kernel_size_mismatch(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x4xf32>, %a2: tensor<2x2x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op weight has shape [3, 1, 1, 4], expected [C, 1, 1, K] = [3, 1, 1, 3] for x [2, 5, 3] and kernel_size 3}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 3} : (tensor<2x5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x2x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_weight_channels(%a0: tensor<2x5x3xf32>, %a1: tensor<4x1x1x4xf32>, %a2: tensor<2x3x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op weight has shape [4, 1, 1, 4], expected [C, 1, 1, K] = [3, 1, 1, 4] for x [2, 5, 3] and kernel_size 4}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<4x1x1x4xf32>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_weight_rank(%a0: tensor<2x5x3xf32>, %a1: tensor<3x4xf32>, %a2: tensor<2x3x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op weight must have rank 4 ([C, 1, 1, K]), got [3, 4]}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_pad_rows(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x4xf32>, %a2: tensor<2x4x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op left_pad has shape [2, 4, 3], expected [B, K - 1, C] = [2, 3, 3] for x [2, 5, 3] and kernel_size 4}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_x_rank(%a0: tensor<5x3xf32>, %a1: tensor<3x1x1x4xf32>, %a2: tensor<2x3x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op x must have rank 3 ([B, S, C]), got [5, 3]}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x3x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @conv_mixed_types(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x4xbf16>, %a2: tensor<2x3x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op requires operands of one element type, got f32, bf16, f32}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<3x1x1x4xbf16>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

func.func @conv_result_type(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x4xf32>, %a2: tensor<2x3x3xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'rlx.depthwise_conv1d_causal' op result type tensor<2x8x3xf32> does not match the inferred type tensor<2x5x3xf32>}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x3x3xf32>) -> tensor<2x8x3xf32>
  return %0 : tensor<2x8x3xf32>
}

// -----

func.func @conv_kernel_size_float(%a0: tensor<2x5x3xf32>, %a1: tensor<3x1x1x4xf32>, %a2: tensor<2x3x3xf32>) -> tensor<2x5x3xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %0 = "rlx.depthwise_conv1d_causal"(%a0, %a1, %a2) {kernel_size = 4.0} : (tensor<2x5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

// Two results: out and final_state.
func.func @gdn_one_result(%q: tensor<1x2x1x4xf32>, %g: tensor<1x2x1xf32>) -> tensor<1x2x1x4xf32> {
  // expected-error @+1 {{op expects exactly 2 results, but got 1}}
  %0 = "rlx.gated_delta_net"(%q, %q, %q, %g, %g) {state_size = 4} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> tensor<1x2x1x4xf32>
  return %0 : tensor<1x2x1x4xf32>
}

// -----

// At most one initial state.
func.func @gdn_two_states(%q: tensor<1x2x1x4xf32>, %g: tensor<1x2x1xf32>, %s: tensor<1x1x4x4xf32>) -> tensor<1x2x1x4xf32> {
  // expected-error @+1 {{op expects at most 6 operands, but got 7}}
  %0:2 = "rlx.gated_delta_net"(%q, %q, %q, %g, %g, %s, %s) {state_size = 4} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x4x4xf32>)
  return %0#0 : tensor<1x2x1x4xf32>
}
