// Hand-written LIR whose plan breaks an invariant does not verify: the plan
// op's verifier re-derives the buffers from the function and runs the
// independent checker (rlx_mlir.lir.checker), reporting at the plan op.
// Buffer ids count the function's values: arguments first, then op results.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// The exp result (buffer 2, live ops 1..2) is put on top of the neg result
// (buffer 1, live ops 0..2, read by the add): both alive at ops 1 and 2.
func.func @live_slots_overlap(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffers 1 [0, 128) live ops 0..2 and 2 [0, 128) live ops 1..2 overlap in bytes and in time}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 384 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 384 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 384 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.add"(%1, %0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.neg"(%2) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Partial overlap counts too: [64, 192) against [0, 128).
func.func @live_slots_overlap_partially(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{buffers 1 [0, 128) live ops 0..2 and 2 [64, 192) live ops 1..2 overlap in bytes and in time}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 384 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 384 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 384 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.add"(%1, %0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 256, 128>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.neg"(%2) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// A read through a view keeps the root alive: the narrow's user (op 2) is a
// read of buffer 1, so buffer 3 (made at op 2) may not take its bytes.
func.func @view_keeps_root_alive(%arg0: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{buffers 3 [0, 64) live ops 2..3 and 1 [0, 128) live ops 0..2 overlap in bytes and in time}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 192 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 192 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 192 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.narrow"(%0) {axis = 0 : i64, len = 2 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 32, 64>, rlx_lir.view, start = 1 : i64} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %2 = "rlx.exp"(%1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 64>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = "rlx.neg"(%2) {rlx_lir.phase = "steady"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}

// -----

func.func @misaligned_slot(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffer 1: offset 32 is not a multiple of the alignment 64}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 256 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 32, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @slot_outside_arena(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffer 1: bytes [64, 192) are outside the arena [0, 128)}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @negative_offset(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{buffer 1: bytes [-64, 64) are outside the arena [0, 128)}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: -64, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @arena_not_a_multiple_of_alignment(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: arena_size 160 is not a multiple of the alignment 64}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 160 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @alignment_not_a_power_of_two(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: alignment 48 is not a positive power of two}}
  "rlx_lir.plan"() {alignment = 48 : i64, arena_size = 144 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 144 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 144 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// An intermediate without a slot would have no bytes to be computed into.
func.func @intermediate_without_slot(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffer 1 (intermediate) lives in the arena but has no offset}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Results are written to the caller's buffers, never to the arena.
func.func @result_in_arena(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffer 2 (output) must not be placed in the arena but has offset 0}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A view of an input aliases the input, not the arena.
func.func @view_of_input_in_arena(%arg0: tensor<4x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: buffer 1 (intermediate) must not be placed in the arena but has offset 0}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
  %0 = "rlx.reshape"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>, rlx_lir.view} : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<32xf32>) -> tensor<32xf32>
  return %1 : tensor<32xf32>
}

// -----

// Rows 1..2 of a 4x8 f32 start 32 bytes into the root.
func.func @view_at_wrong_offset(%arg0: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: view 2: offset 0, expected root 1's offset 0 + cumulative view offset 32 = 32}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.narrow"(%0) {axis = 0 : i64, len = 2 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 64>, rlx_lir.view, start = 1 : i64} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %2 = "rlx.exp"(%1) {rlx_lir.phase = "steady"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}

// -----

// The reported statistics are recomputed, not trusted.
func.func @wrong_statistics(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: unshared_total 256, recomputed 128; lower_bound 64, recomputed 128}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 64 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 256 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @arena_below_lower_bound(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{arena_size 0 is below the lower bound 128}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @missing_arena_size(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op attribute "arena_size" is expected but not provided}}
  "rlx_lir.plan"() {alignment = 64 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @missing_fingerprint(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op attribute "fingerprint" is expected but not provided}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @alignment_of_wrong_kind(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.string'}}
  "rlx_lir.plan"() {alignment = "64", arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'rlx_lir.plan' op must be the first op of a func.func}}
"rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = [], lower_bound = 0 : i64, outputs = [], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()

// -----

// rlx_lir.fused on a value read twice: it cannot live only inside one consumer's loop.
func.func @fused_value_read_twice(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: 'rlx.neg' is marked rlx_lir.fused but its result is not a float elementwise value used only by a float elementwise op of the same type}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.fused, rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.mul"(%0, %0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

func.func @fused_value_with_a_slot(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx_lir.plan' op the plan is invalid: 'rlx.neg': rlx_lir.fused and rlx_lir.slot together (a fused value has no buffer)}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.fused, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A read through a view of a view keeps the root alive: the identity expand
// (buffer 4) of the reshape (3) of buffer 2 is read at op 4, so buffer 5 (made
// at op 3) may not take buffer 2's bytes; the message names the chain.
func.func @view_chain_keeps_root_alive(%arg0: tensor<8xf32>, %arg1: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{buffers 2 [0, 32) live ops 0..4 and 5 [0, 32) live ops 3..4 overlap in bytes and in time; buffer 2 is read until op 4 through buffer 4 (4 views 3, 3 views 2)}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0", "arg1"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "rlx.reshape"(%0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>, rlx_lir.view} : (tensor<8xf32>) -> tensor<2x4xf32>
  %2 = "rlx.expand"(%1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>, rlx_lir.view, shape = array<i64: 2, 4>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.exp"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = "rlx.add"(%2, %3) {rlx_lir.phase = "steady"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}

// -----

// A call's result may be its operand (the callee may return its argument):
// reading the result (buffer 3, at op 3) reads buffer 2, so buffer 4 may not
// take buffer 2's bytes at op 2.
func.func private @pass_through(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %a : tensor<2x4xf32>
}
func.func @call_result_keeps_operand_alive(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{buffers 2 [0, 32) live ops 0..3 and 4 [0, 32) live ops 2..3 overlap in bytes and in time; buffer 2 is read until op 3 through buffer 3 (3 may alias 2)}}
  "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:0", inputs = ["arg0", "arg1"], lower_bound = 128 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 128 : i64} : () -> ()
  %0 = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = func.call @pass_through(%0) {no_inline, rlx_lir.phase = "steady"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = "rlx.exp"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.add"(%1, %2) {rlx_lir.phase = "steady"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}
