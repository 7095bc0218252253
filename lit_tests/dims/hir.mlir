// An HIR function dynamic in BATCH and SEQ: it lowers to dynamic MIR (the blocks'
// expansions infer `?` sizes), and binds before or after lowering to the same static MIR.
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --check-prefix=DYN
// RUN: rlx-opt %s --rlx-bind-dims=BATCH=2,SEQ=5 --rlx-hir-to-mir | FileCheck %s
// RUN: rlx-opt %s --rlx-hir-to-mir --rlx-bind-dims=BATCH=2,SEQ=5 | FileCheck %s

// DYN-LABEL: func.func @block
// DYN-SAME: (%[[X:.*]]: tensor<?x?x8xf32> {rlx.dims = ["BATCH", "SEQ", 8], rlx.name = "x"}
// DYN: %[[COS:.*]] = "rlx.narrow"(%{{.*}}) {axis = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}, start = 0 : i64} : (tensor<16x2xf32>) -> tensor<?x2xf32>
// DYN: %[[H:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], {{.*}}) {activation = "gelu"} : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// DYN: "rlx.rope"(%[[H]], %[[COS]], %[[COS]]) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<?x?x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x?x16xf32>

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf32> {rlx.name = "x"}
// CHECK-NOT: rlx.sym
// CHECK: %[[COS:.*]] = "rlx.narrow"(%{{.*}}) {axis = 0 : i64, len = 5 : i64, start = 0 : i64} : (tensor<16x2xf32>) -> tensor<5x2xf32>
// CHECK: %[[H:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], {{.*}}) {activation = "gelu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
// CHECK: "rlx.rope"(%[[H]], %[[COS]], %[[COS]]) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<2x5x16xf32>, tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<2x5x16xf32>
func.func @block(%x: tensor<?x?x8xf32> {rlx.name = "x", rlx.dims = ["BATCH", "SEQ", 8]}, %w: tensor<8x16xf32>, %b: tensor<16xf32>,
                 %table: tensor<16x2xf32>) -> tensor<?x?x16xf32> {
  %cos = "rlx.narrow"(%table) {axis = 0 : i64, start = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}} : (tensor<16x2xf32>) -> tensor<?x2xf32>
  %h = "rlx_hir.linear"(%x, %w, %b) {activation = "gelu"} : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %r = "rlx_hir.rope"(%h, %cos, %cos) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<?x?x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x?x16xf32>
  return %r : tensor<?x?x16xf32>
}
