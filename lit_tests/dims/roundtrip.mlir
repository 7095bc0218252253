// Dynamic functions keep their symbols through printing and parsing: `?` in the
// types, `rlx.dims` on arguments and shape-annotated results, `rlx.sym` on size attributes.
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @embed
// CHECK-SAME: (%[[TOK:.*]]: tensor<?x?xi64> {rlx.dims = ["BATCH", "SEQ"], rlx.name = "tokens"}, %[[TABLE:.*]]: tensor<97x64xf32> {rlx.name = "embed", rlx.param}, %[[ROPE:.*]]: tensor<128x8xf32> {rlx.name = "cos"})
// CHECK-SAME: -> (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x8xf32>)
// CHECK: %[[X:.*]] = "rlx.gather"(%[[TABLE]], %[[TOK]]) {axis = 0 : i64} : (tensor<97x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
// CHECK: %[[ROWS:.*]] = "rlx.reshape"(%[[X]]) {rlx.dims = ["BATCH*SEQ", 64]} : (tensor<?x?x64xf32>) -> tensor<?x64xf32>
// CHECK: %[[COS:.*]] = "rlx.narrow"(%[[ROPE]]) {axis = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}, start = 0 : i64} : (tensor<128x8xf32>) -> tensor<?x8xf32>
// CHECK: return %[[X]], %[[ROWS]], %[[COS]]
func.func @embed(%tokens: tensor<?x?xi64> {rlx.name = "tokens", rlx.dims = ["BATCH", "SEQ"]},
                 %table: tensor<97x64xf32> {rlx.name = "embed", rlx.param}, %rope: tensor<128x8xf32> {rlx.name = "cos"})
    -> (tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x8xf32>) {
  %x = "rlx.gather"(%table, %tokens) {axis = 0 : i64} : (tensor<97x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  %rows = "rlx.reshape"(%x) {rlx.dims = ["BATCH*SEQ", 64]} : (tensor<?x?x64xf32>) -> tensor<?x64xf32>
  %cos = "rlx.narrow"(%rope) {axis = 0 : i64, start = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}} : (tensor<128x8xf32>) -> tensor<?x8xf32>
  return %x, %rows, %cos : tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x8xf32>
}
