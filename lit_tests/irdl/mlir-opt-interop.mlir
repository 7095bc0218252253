// The RLX dialects are real MLIR dialects: plain upstream mlir-opt loads the
// generated IRDL, then parses, verifies and prints RLX IR.  (IRDL checks
// structure; shape rules are rlx-opt's.)
// RUN: mlir-opt --irdl-file=%dialect/rlx.irdl.mlir %s | FileCheck %s
// RUN: mlir-opt --irdl-file=%dialect/rlx.irdl.mlir %s | rlx-opt | FileCheck %s
// RUN: not mlir-opt --irdl-file=%dialect/rlx.irdl.mlir %S/Inputs/missing-perm.mlir 2>&1 | FileCheck %s --check-prefix=STRUCTURE

// CHECK-LABEL: func.func @mlp
// CHECK: "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK: "rlx.add"
// CHECK: "rlx.gelu"
// CHECK: "rlx.transpose"(%{{.*}}) {perm = array<i64: 1, 0>}
// STRUCTURE: missing-perm.mlir:3:8: error: 'rlx.transpose' op attribute "perm" is expected but not provided
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<16x4xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "rlx.transpose"(%2) {perm = array<i64: 1, 0>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
  return %3 : tensor<16x4xf32>
}
