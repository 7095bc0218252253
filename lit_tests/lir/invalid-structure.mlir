// Structurally broken LIR: the plan op's place, slot and phase attributes, and
// view markers that disagree with what the ops compute.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// Not first: rlx-lir-to-linalg creates the arena at the plan op, which must
// dominate every slot.
func.func @plan_not_first(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-error @+1 {{'rlx_lir.plan' must be the first op of a func.func, and its only plan}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Two plans: each is reported.
func.func @two_plans(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' must be the first op of a func.func, and its only plan}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  // expected-error @+1 {{'rlx_lir.plan' must be the first op of a func.func, and its only plan}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A slot's size must be the result's byte size.
func.func @slot_size_differs_from_type(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{size 64}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A slot is array<i64: offset, size>.
func.func @slot_with_one_element(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{rlx_lir.slot}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A slot needs exactly one tensor result.
func.func @slot_on_op_without_results(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{rlx_lir.slot}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady"} : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%0) {rlx_lir.slot = array<i64: 0, 16>} : (tensor<4xf32>) -> ()
}

// -----

// Phases are prologue, steady or epilogue.
func.func @unknown_phase(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{sometimes}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "sometimes", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// `rlx_lir.view` on an op that computes (rlx-lir-to-linalg would skip its slot).
func.func @view_marker_on_a_copy(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{rlx_lir.view}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>, rlx_lir.view} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A placed view without `rlx_lir.view` (rlx-lir-to-linalg would copy the root onto itself).
func.func @view_without_marker(%arg0: tensor<4x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{rlx_lir.view}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.reshape"(%0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %2 = "rlx.exp"(%1) {rlx_lir.phase = "steady"} : (tensor<32xf32>) -> tensor<32xf32>
  return %2 : tensor<32xf32>
}
