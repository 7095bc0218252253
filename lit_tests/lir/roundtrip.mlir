// LIR prints, parses back (the plan op's verifier re-checks the plan) and
// prints again identically: plan op, slots, view markers, phases, manifest and
// fingerprint all survive; planning an already planned module changes nothing.
// RUN: rlx-opt %s --rlx-mir-to-lir | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --rlx-mir-to-lir -o %t.lir.mlir
// RUN: rlx-opt %t.lir.mlir -o %t.again.mlir
// RUN: diff %t.lir.mlir %t.again.mlir
// RUN: rlx-opt %t.lir.mlir --rlx-mir-to-lir -o %t.replanned.mlir
// RUN: diff %t.lir.mlir %t.replanned.mlir
// The generic form (as the fingerprint hashes it) round-trips too.
// RUN: rlx-opt %t.lir.mlir --mlir-print-op-generic -o %t.generic.mlir
// RUN: rlx-opt %t.generic.mlir --mlir-print-op-generic -o %t.generic2.mlir
// RUN: diff %t.generic.mlir %t.generic2.mlir
// RUN: rlx-opt %t.generic.mlir -o %t.from-generic.mlir
// RUN: diff %t.lir.mlir %t.from-generic.mlir

// Arena: the two 128 B values live together (256 B, the lower bound); unshared
// is 128 + 128 + 64 (the 32 B matmul result rounded up to the alignment).
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32> {rlx.name = "x"}, %[[W1:.*]]: tensor<8x16xf32> {rlx.name = "w1", rlx.param}, %[[W2:.*]]: tensor<16x4xf32> {rlx.name = "w2", rlx.param})
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 256 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["x"], lower_bound = 256 : i64, outputs = ["result0", "result1"], params = ["w1", "w2"], strategy = "greedy_by_size/first_fit", unshared = 320 : i64} : () -> ()
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W1]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 128>} : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %[[A:.*]] = "rlx.exp"(%[[H]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>} : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %[[V:.*]] = "rlx.reshape"(%[[A]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>, rlx_lir.view} : (tensor<2x16xf32>) -> tensor<32xf32>
// CHECK-NEXT: %[[V2:.*]] = "rlx.reshape"(%[[V]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 128>, rlx_lir.view} : (tensor<32xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %[[Y:.*]] = "rlx.matmul"(%[[V2]], %[[W2]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>} : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.narrow"(%[[Y]]) {axis = 0 : i64, len = 1 : i64, rlx_lir.phase = "epilogue", rlx_lir.slot = array<i64: 16, 16>, rlx_lir.view, start = 1 : i64} : (tensor<2x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[O0:.*]] = "rlx.neg"(%[[R]]) {rlx_lir.phase = "epilogue"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[O1:.*]] = "rlx.add"(%[[Y]], %[[Y]]) {rlx_lir.phase = "epilogue"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[O0]], %[[O1]] : tensor<1x4xf32>, tensor<2x4xf32>
func.func @mlp(%x: tensor<2x8xf32> {rlx.name = "x"}, %w1: tensor<8x16xf32> {rlx.name = "w1", rlx.param},
               %w2: tensor<16x4xf32> {rlx.name = "w2", rlx.param}) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
  %h = "rlx.matmul"(%x, %w1) : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = "rlx.exp"(%h) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %v = "rlx.reshape"(%a) : (tensor<2x16xf32>) -> tensor<32xf32>
  %v2 = "rlx.reshape"(%v) : (tensor<32xf32>) -> tensor<2x16xf32>
  %y = "rlx.matmul"(%v2, %w2) : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %r = "rlx.narrow"(%y) {axis = 0 : i64, start = 1 : i64, len = 1 : i64} : (tensor<2x4xf32>) -> tensor<1x4xf32>
  %o0 = "rlx.neg"(%r) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %o1 = "rlx.add"(%y, %y) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %o0, %o1 : tensor<1x4xf32>, tensor<2x4xf32>
}

// A function with a constant (prologue) and an empty arena.
// CHECK-LABEL: func.func @constant_only
// CHECK-NEXT: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = 0 : i64, dynamic_symbols = [], fingerprint = "sha256:{{([0-9a-f]{64})}}", inputs = ["arg0"], lower_bound = 0 : i64, outputs = ["result0"], params = [], strategy = "greedy_by_size/first_fit", unshared = 0 : i64} : () -> ()
// CHECK-NEXT: %[[C:.*]] = "rlx.constant"() {rlx_lir.phase = "prologue", value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>} : () -> tensor<3xf32>
// CHECK-NEXT: "rlx.mul"(%{{.*}}, %[[C]]) {rlx_lir.phase = "steady"}
func.func @constant_only(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = "rlx.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "rlx.mul"(%x, %c) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
