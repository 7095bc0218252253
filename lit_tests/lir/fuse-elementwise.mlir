// rlx-mir-to-lir{fuse-elementwise}: a float elementwise result whose only user is a
// float elementwise op of the same type is computed inside that op's loop nest
// (rlx-fuse-elementwise after lowering): it is marked rlx_lir.fused and gets
// no slot. rlx-lower-to-llvm plans this way.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir{fuse-elementwise})' | FileCheck %s
// The markers survive a round trip and the plan verifies again.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir{fuse-elementwise})' | rlx-opt --split-input-file | FileCheck %s
// Lowered, the chain is two loop nests: neg+exp+add up to the value read twice, then mul+neg+exp.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir{fuse-elementwise},rlx-lir-to-linalg,rlx-fuse-elementwise)' | FileCheck %s --check-prefix=LOOPS

// %2 is read twice (by mul), so it alone needs a slot: the arena is 128 bytes.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 128 : i64, {{.*}}, lower_bound = 128 : i64, {{.*}}, unshared = 128 : i64}
// CHECK-NEXT: "rlx.neg"(%{{.*}}) {rlx_lir.fused, rlx_lir.phase = "steady"}
// CHECK-NEXT: "rlx.exp"(%{{.*}}) {rlx_lir.fused, rlx_lir.phase = "steady"}
// CHECK-NEXT: "rlx.add"(%{{.*}}) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>}
// CHECK-NEXT: "rlx.mul"(%{{.*}}) {rlx_lir.fused, rlx_lir.phase = "steady"}
// CHECK-NEXT: "rlx.neg"(%{{.*}}) {rlx_lir.fused, rlx_lir.phase = "steady"}
// CHECK-NEXT: "rlx.exp"(%{{.*}}) {rlx_lir.phase = "steady"}
// LOOPS-LABEL: func.func @chain
// LOOPS-COUNT-2: linalg.generic
// LOOPS-NOT: linalg.generic
// LOOPS: return
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.add"(%1, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.mul"(%2, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.neg"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.exp"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// Not fused: a broadcast consumer (the producer's result would be recomputed per
// row), a non-elementwise consumer (softmax), and a boolean result.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: rlx_lir.fused
// CHECK: return
func.func @kept(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>) {
  %0 = "rlx.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "rlx.add"(%y, %0) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.neg"(%y) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.softmax"(%2) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.compare"(%y, %y) {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  return %1, %3, %4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>
}

// -----

// A fused op reads its operands where its consumer runs: %0 is read by the fused %1
// inside %3's loop, after %2 is computed, so %0 and %2 must not share bytes (with %1's
// read at its own position they could: the arena would be 128 bytes).
// CHECK-LABEL: func.func @late_read
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 256 : i64
// CHECK-NEXT: "rlx.softmax"(%{{.*}}) {{{.*}}rlx_lir.slot = array<i64: [[S0:[0-9]+]], 128>}
// CHECK-NEXT: "rlx.neg"(%{{.*}}) {rlx_lir.fused, rlx_lir.phase = "steady"}
// CHECK-NEXT: "rlx.softmax"(%{{.*}}) {{{.*}}rlx_lir.slot = array<i64: {{[0-9]+}}, 128>}
// CHECK-NEXT: "rlx.add"
func.func @late_read(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.softmax"(%x) {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.neg"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.add"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
