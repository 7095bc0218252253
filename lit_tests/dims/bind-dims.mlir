// rlx-bind-dims turns a function with symbolic dimensions into a static one:
// argument types from their `rlx.dims`, size attributes from their `rlx.sym`
// expressions, reshape results from their `rlx.dims`, every other result type
// inferred again; the symbol attributes are gone afterwards.
// RUN: rlx-opt %s --rlx-bind-dims=BATCH=2,SEQ=7 | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-bind-dims{BATCH=1 SEQ=3})' | FileCheck %s --check-prefix=SMALL
// RUN: rlx-opt %s --rlx-bind-dims=BATCH=2,SEQ=7 --rlx-mir-to-lir | FileCheck %s --check-prefix=PLAN

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.*]]: tensor<2x7x8xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<8x4xf32> {rlx.name = "w"}, %[[T:.*]]: tensor<16x4xf32> {rlx.name = "t"})
// CHECK-SAME: -> tensor<30x4xf32>
// CHECK-NOT: rlx.dims
// CHECK-NOT: rlx.sym
// CHECK: %[[MM:.*]] = "rlx.matmul"(%[[X]], %[[W]]) : (tensor<2x7x8xf32>, tensor<8x4xf32>) -> tensor<2x7x4xf32>
// CHECK: %[[ROPE:.*]] = "rlx.narrow"(%[[T]]) {axis = 0 : i64, len = 7 : i64, start = 0 : i64} : (tensor<16x4xf32>) -> tensor<7x4xf32>
// CHECK: %[[SUM:.*]] = "rlx.add"(%[[MM]], %[[ROPE]]) : (tensor<2x7x4xf32>, tensor<7x4xf32>) -> tensor<2x7x4xf32>
// CHECK: %[[TAIL:.*]] = "rlx.narrow"(%[[SUM]]) {axis = 1 : i64, len = 6 : i64, start = 1 : i64} : (tensor<2x7x4xf32>) -> tensor<2x6x4xf32>
// CHECK: %[[ROWS:.*]] = "rlx.reshape"(%[[TAIL]]) : (tensor<2x6x4xf32>) -> tensor<12x4xf32>
// CHECK: %[[WIDE:.*]] = "rlx.expand"(%[[W]]) {shape = array<i64: 2, 8, 4>} : (tensor<8x4xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[FLAT:.*]] = "rlx.reshape"(%[[WIDE]]) : (tensor<2x8x4xf32>) -> tensor<16x4xf32>
// CHECK: %[[JOIN:.*]] = "rlx.concat"(%[[ROWS]], %[[FLAT]]) {axis = 0 : i64} : (tensor<12x4xf32>, tensor<16x4xf32>) -> tensor<28x4xf32>
// CHECK: %[[TWO:.*]] = "rlx.narrow"(%[[T]]) {axis = 0 : i64, len = 2 : i64, start = 0 : i64} : (tensor<16x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[ALL:.*]] = "rlx.concat"(%[[JOIN]], %[[TWO]]) {axis = 0 : i64} : (tensor<28x4xf32>, tensor<2x4xf32>) -> tensor<30x4xf32>
// CHECK: return %[[ALL]] : tensor<30x4xf32>

// SMALL-LABEL: func.func @block
// SMALL-SAME: tensor<1x3x8xf32>
// SMALL-SAME: -> tensor<12x4xf32>
// SMALL: "rlx.narrow"({{.*}}) {axis = 0 : i64, len = 3 : i64, start = 0 : i64}
// SMALL: "rlx.narrow"({{.*}}) {axis = 1 : i64, len = 2 : i64, start = 1 : i64} : (tensor<1x3x4xf32>) -> tensor<1x2x4xf32>
// SMALL: "rlx.expand"({{.*}}) {shape = array<i64: 1, 8, 4>}

// The bound function plans like any static one.
// PLAN-LABEL: func.func @block
// PLAN: "rlx_lir.plan"() {alignment = 64 : i64, arena_size = {{[0-9]+}} : i64, dynamic_symbols = [], fingerprint = "sha256:

func.func @block(%x: tensor<?x?x8xf32> {rlx.name = "x", rlx.dims = ["BATCH", "SEQ", 8]},
                 %w: tensor<8x4xf32> {rlx.name = "w"}, %t: tensor<16x4xf32> {rlx.name = "t"}) -> tensor<?x4xf32> {
  %mm = "rlx.matmul"(%x, %w) : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
  %rope = "rlx.narrow"(%t) {axis = 0 : i64, start = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}} : (tensor<16x4xf32>) -> tensor<?x4xf32>
  %sum = "rlx.add"(%mm, %rope) : (tensor<?x?x4xf32>, tensor<?x4xf32>) -> tensor<?x?x4xf32>
  %tail = "rlx.narrow"(%sum) {axis = 1 : i64, start = 1 : i64, len = -1 : i64, rlx.sym = {len = "SEQ - 1"}} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %rows = "rlx.reshape"(%tail) {rlx.dims = ["BATCH*(SEQ - 1)", 4]} : (tensor<?x?x4xf32>) -> tensor<?x4xf32>
  %wide = "rlx.expand"(%w) {shape = array<i64: -1, 8, 4>, rlx.sym = {shape = ["BATCH", 8, 4]}} : (tensor<8x4xf32>) -> tensor<?x8x4xf32>
  %flat = "rlx.reshape"(%wide) {rlx.dims = ["BATCH*8", 4]} : (tensor<?x8x4xf32>) -> tensor<?x4xf32>
  %join = "rlx.concat"(%rows, %flat) {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %two = "rlx.narrow"(%t) {axis = 0 : i64, start = 0 : i64, len = 2 : i64} : (tensor<16x4xf32>) -> tensor<2x4xf32>
  %all = "rlx.concat"(%join, %two) {axis = 0 : i64} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x4xf32>
  return %all : tensor<?x4xf32>
}
