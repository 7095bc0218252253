// rlx-mir-to-lir writes the plan into each MIR function: the plan op first
// (arena size, alignment, lower bound, unshared total, strategy, I/O manifest,
// fingerprint), a byte slot `array<i64: offset, size>` on every intermediate,
// `rlx_lir.view` on pure views placed inside their root, a phase on every op.
// The planner is deterministic, so the exact slots and sizes are pinned.
// Results, inputs, params and constants never get a slot.
// RUN: rlx-opt %s --rlx-mir-to-lir | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir{alignment=16})' | FileCheck %s --check-prefix=A16
// Planning is idempotent: a function that already has a plan is left alone.
// RUN: rlx-opt %s --rlx-mir-to-lir --rlx-mir-to-lir | FileCheck %s

// A straight line of 4x8xf32 (128 B) values, each read only by the next op:
// two slots ping-pong (lifetimes [i, i+1] overlap pairwise), the arena meets
// the lower bound, unshared = 5 x 128. The last value is the result: no slot.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 256 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["arg0"], lower_bound = 256 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 640 : i64} : () -> ()
// CHECK-NEXT: %[[V0:.*]] = "rlx.neg"(%[[X]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:.*]] = "rlx.exp"(%[[V0]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>}
// CHECK-NEXT: %[[V2:.*]] = "rlx.add"(%[[V1]], %[[X]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>}
// CHECK-NEXT: %[[V3:.*]] = "rlx.mul"(%[[V2]], %[[V2]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>}
// CHECK-NEXT: %[[V4:.*]] = "rlx.neg"(%[[V3]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>}
// CHECK-NEXT: %[[V5:.*]] = "rlx.exp"(%[[V4]]) {rlx_lir.phase = "steady"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V5]] : tensor<4x8xf32>
// A16-LABEL: func.func @chain
// A16-NEXT: "rlx_lir.plan"() {alignment = 16 : i64, arena_size = 256 : i64, {{.*}}, lower_bound = 256 : i64, {{.*}}, unshared = 640 : i64}
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.add"(%1, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.mul"(%2, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.neg"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.exp"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// A diamond: %0 is read by both branches, so %0, %1 and %2 are live together
// at op 2 (three slots); %3 reuses %0's bytes once %0 is dead.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 384 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["arg0"], lower_bound = 384 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 512 : i64}
// CHECK-NEXT: %[[A:.*]] = "rlx.neg"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>}
// CHECK-NEXT: %[[B:.*]] = "rlx.exp"(%[[A]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>}
// CHECK-NEXT: %[[C:.*]] = "rlx.mul"(%[[A]], %[[A]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 256, 128>}
// CHECK-NEXT: %[[D:.*]] = "rlx.add"(%[[B]], %[[C]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>}
// CHECK-NEXT: "rlx.neg"(%[[D]]) {rlx_lir.phase = "steady"} :
func.func @diamond(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.mul"(%0, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.add"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.neg"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// Sizes differ: the 1 KiB exp result dies after the matmul and two 256 B
// values take its bytes. Ops after the last matmul (the last compute op) are
// in the epilogue.
// CHECK-LABEL: func.func @mixed_sizes
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 1280 : i64, {{.*}}, lower_bound = 1280 : i64, {{.*}}, unshared = 1792 : i64}
// CHECK-NEXT: "rlx.exp"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 1024>}
// CHECK-NEXT: "rlx.matmul"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 1024, 256>}
// CHECK-NEXT: "rlx.neg"({{.*}}) {rlx_lir.phase = "epilogue", rlx_lir.slot = array<i64: 0, 256>}
// CHECK-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "epilogue", rlx_lir.slot = array<i64: 256, 256>}
// CHECK-NEXT: "rlx.mul"({{.*}}) {rlx_lir.phase = "epilogue"} :
func.func @mixed_sizes(%x: tensor<16x16xf32>, %w: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %0 = "rlx.exp"(%x) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = "rlx.matmul"(%0, %w) : (tensor<16x16xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %2 = "rlx.neg"(%1) : (tensor<16x4xf32>) -> tensor<16x4xf32>
  %3 = "rlx.add"(%2, %1) : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %4 = "rlx.mul"(%3, %3) : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  return %4 : tensor<16x4xf32>
}

// Views: reshape of reshape, narrow on axis 0 (byte offset start x row bytes),
// same-type cast: all share their root's bytes (`rlx_lir.view`), the chain
// resolved to the root. A narrow on an inner axis is a copy (own slot), a
// narrow on axis 1 behind a unit dim is contiguous (a view), a cast that
// changes the element type is a copy. Views of an input get no slot.
// CHECK-LABEL: func.func @views
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[Y:.*]]: tensor<1x6x4xf32>)
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 256 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["arg0", "arg1"], lower_bound = 256 : i64, outputs = ["result0", "result1", "result2", "result3", "result4", "result5"], params = [], strategy = "greedy_by_size/first_fit", unshared = 384 : i64}
// CHECK-NEXT: %[[R:.*]] = "rlx.neg"(%[[X]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 96>}
// CHECK-NEXT: %[[F:.*]] = "rlx.reshape"(%[[R]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 96>, rlx_lir.view} : (tensor<4x6xf32>) -> tensor<24xf32>
// CHECK-NEXT: %[[G:.*]] = "rlx.reshape"(%[[F]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 96>, rlx_lir.view} : (tensor<24xf32>) -> tensor<6x4xf32>
// Rows 2..4 of a 6x4 f32: 2 x 4 x 4 = 32 bytes in.
// CHECK-NEXT: %[[N:.*]] = "rlx.narrow"(%[[G]]) {axis = 0 : i64, len = 3 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 32, 48>, rlx_lir.view, start = 2 : i64}
// CHECK-NEXT: %[[C:.*]] = "rlx.cast"(%[[N]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 32, 48>, rlx_lir.view} : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: "rlx.exp"(%[[C]]) {rlx_lir.phase = "steady"} :
// Rows 1..2 of the 4x6 root: 1 x 6 x 4 = 24 bytes in.
// CHECK-NEXT: %[[N2:.*]] = "rlx.narrow"(%[[R]]) {axis = 0 : i64, len = 2 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 24, 48>, rlx_lir.view, start = 1 : i64}
// CHECK-NEXT: "rlx.add"(%[[N2]], %[[N2]]) {rlx_lir.phase = "steady"} :
// CHECK-NEXT: "rlx.narrow"(%[[R]]) {axis = 1 : i64, len = 3 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 48>, start = 3 : i64}
// CHECK-NEXT: "rlx.neg"
// CHECK-NEXT: %[[E:.*]] = "rlx.exp"(%[[Y]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 96>}
// CHECK-NEXT: "rlx.narrow"(%[[E]]) {axis = 1 : i64, len = 2 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 192, 32>, rlx_lir.view, start = 4 : i64}
// CHECK-NEXT: "rlx.neg"
// CHECK-NEXT: "rlx.cast"(%[[R]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 48>} : (tensor<4x6xf32>) -> tensor<4x6xf16>
// CHECK-NEXT: "rlx.neg"
// CHECK-NEXT: "rlx.reshape"(%[[X]]) {rlx_lir.phase = "steady"} : (tensor<4x6xf32>) -> tensor<24xf32>
// CHECK-NEXT: return
func.func @views(%x: tensor<4x6xf32>, %y: tensor<1x6x4xf32>)
    -> (tensor<2x6xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<1x2x4xf32>, tensor<4x6xf16>, tensor<24xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = "rlx.reshape"(%0) : (tensor<4x6xf32>) -> tensor<24xf32>
  %2 = "rlx.reshape"(%1) : (tensor<24xf32>) -> tensor<6x4xf32>
  %3 = "rlx.narrow"(%2) {axis = 0 : i64, start = 2 : i64, len = 3 : i64} : (tensor<6x4xf32>) -> tensor<3x4xf32>
  %4 = "rlx.cast"(%3) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = "rlx.exp"(%4) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %6 = "rlx.narrow"(%0) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %7 = "rlx.add"(%6, %6) : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  %8 = "rlx.narrow"(%0) {axis = 1 : i64, start = 3 : i64, len = 3 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %9 = "rlx.neg"(%8) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %10 = "rlx.exp"(%y) : (tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %11 = "rlx.narrow"(%10) {axis = 1 : i64, start = 4 : i64, len = 2 : i64} : (tensor<1x6x4xf32>) -> tensor<1x2x4xf32>
  %12 = "rlx.neg"(%11) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %13 = "rlx.cast"(%0) : (tensor<4x6xf32>) -> tensor<4x6xf16>
  %14 = "rlx.neg"(%13) : (tensor<4x6xf16>) -> tensor<4x6xf16>
  %15 = "rlx.reshape"(%x) : (tensor<4x6xf32>) -> tensor<24xf32>
  return %7, %5, %9, %12, %14, %15 : tensor<2x6xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<1x2x4xf32>, tensor<4x6xf16>, tensor<24xf32>
}

// Several results: a returned value gets no slot even when other ops read it
// after it is made (%0), nor does a returned view of an input; only %1 and %2
// are in the arena (64 B each, live together).
// CHECK-LABEL: func.func @results
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, {{.*}}, lower_bound = 128 : i64, outputs = ["result0", "result1", "result2"], params = [], {{.*}}, unshared = 128 : i64}
// CHECK-NEXT: %[[R0:.*]] = "rlx.neg"({{.*}}) {rlx_lir.phase = "steady"} :
// CHECK-NEXT: %[[E:.*]] = "rlx.exp"(%[[R0]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 64>}
// CHECK-NEXT: %[[M:.*]] = "rlx.mul"(%[[E]], {{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 64>}
// CHECK-NEXT: %[[R1:.*]] = "rlx.add"(%[[M]], %[[E]]) {rlx_lir.phase = "steady"} :
// CHECK-NEXT: %[[R2:.*]] = "rlx.reshape"({{.*}}) {rlx_lir.phase = "steady"} :
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]] :
func.func @results(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<16xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = "rlx.exp"(%0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = "rlx.mul"(%1, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = "rlx.add"(%2, %1) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = "rlx.reshape"(%x) : (tensor<2x8xf32>) -> tensor<16xf32>
  return %0, %3, %4 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<16xf32>
}

// The I/O manifest: inputs and params by `rlx.name` (else argN) in argument
// order. A constant is in the prologue and outside the arena; 32 B values
// take 64 B slots at alignment 64 and 32 B ones at alignment 16.
// CHECK-LABEL: func.func @manifest
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["tokens", "arg2"], lower_bound = 128 : i64, outputs = ["result0"], params = ["w", "bias"], strategy = "greedy_by_size/first_fit", unshared = 192 : i64}
// CHECK-NEXT: "rlx.constant"() {rlx_lir.phase = "prologue", value = dense<2.000000e+00> : tensor<4xf32>}
// CHECK-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: "rlx.matmul"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 32>}
// CHECK-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "epilogue", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: "rlx.mul"({{.*}}) {rlx_lir.phase = "epilogue"} :
// A16-LABEL: func.func @manifest
// A16-NEXT: "rlx_lir.plan"() {alignment = 16 : i64, arena_size = 64 : i64, {{.*}}, lower_bound = 64 : i64, {{.*}}, unshared = 96 : i64}
// A16-NEXT: "rlx.constant"
// A16-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// A16-NEXT: "rlx.matmul"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 32, 32>}
// A16-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "epilogue", rlx_lir.slot = array<i64: 0, 32>}
func.func @manifest(%x: tensor<2x4xf32> {rlx.name = "tokens"}, %w: tensor<4x4xf32> {rlx.name = "w", rlx.param},
                    %y: tensor<2x4xf32>, %b: tensor<4xf32> {rlx.name = "bias", rlx.param}) -> tensor<2x4xf32> {
  %c = "rlx.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "rlx.add"(%x, %y) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.matmul"(%0, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = "rlx.add"(%1, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.mul"(%2, %c) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// Phases are positional: a constant stays in the prologue wherever it is
// scheduled; with no compute op (and no sample/topk) everything else is steady.
// CHECK-LABEL: func.func @phases_without_compute
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 64 : i64, {{.*}}, lower_bound = 64 : i64, {{.*}}, unshared = 64 : i64}
// CHECK-NEXT: "rlx.neg"({{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 16>}
// CHECK-NEXT: "rlx.constant"() {rlx_lir.phase = "prologue", value =
// CHECK-NEXT: "rlx.add"({{.*}}) {rlx_lir.phase = "steady"} :
func.func @phases_without_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "rlx.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %1 = "rlx.add"(%0, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// Nothing to place: an empty arena.
// CHECK-LABEL: func.func @no_intermediates
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64}
// CHECK-NEXT: "rlx.neg"({{.*}}) {rlx_lir.phase = "steady"} :
func.func @no_intermediates(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
