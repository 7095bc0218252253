// The plan and rlx-lir-to-linalg agree on which values are views (issue 13):
// an identity expand or transpose is a view (`rlx_lir.view`, its source's
// slot); a narrow on an inner axis is a copy with a slot of its own, and every
// reader then reads that slot (`bufferization.to_tensor` of it), never the
// lowered `tensor.extract_slice` of the source, whose slot the plan reuses;
// unless only RoPE and attention read it (issue 19: the q / k / v ranges of a
// fused QKV product): then it is a strided view of its source's slot.
// A returned strided narrow is copied out of its source's slot when it is
// made (into a tensor of its own), not at the return.
// RUN: rlx-opt %s --rlx-mir-to-lir | FileCheck %s
// RUN: rlx-opt %s --rlx-mir-to-lir --rlx-lir-to-linalg | FileCheck %s --check-prefix=TENSOR

// CHECK-LABEL: func.func @identity_expand
// CHECK: %[[N:.*]] = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 16>}
// CHECK-NEXT: %[[E:.*]] = "rlx.expand"(%[[N]]) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 16>, rlx_lir.view, shape = array<i64: 4>}
// The scalar may not take bytes 0..16: the expand (a view of them) is read after it.
// CHECK-NEXT: %[[S:.*]] = "rlx.neg"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 4>}
// CHECK-NEXT: "rlx.add"(%[[E]], %[[S]])
// TENSOR-LABEL: func.func @identity_expand
// TENSOR: %[[V0:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<128xi8> to memref<4xf32>
// TENSOR-NEXT: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[V0]]
// TENSOR-NEXT: %[[R0:.*]] = bufferization.to_tensor %[[V0]] restrict : memref<4xf32> to tensor<4xf32>
// TENSOR: %[[V1:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<128xi8> to memref<f32>
// TENSOR-NEXT: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[V1]]
// TENSOR-NEXT: %[[R1:.*]] = bufferization.to_tensor %[[V1]] restrict : memref<f32> to tensor<f32>
// TENSOR: linalg.generic {{.*}} ins(%[[R0]], %[[R1]] : tensor<4xf32>, tensor<f32>)
func.func @identity_expand(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.expand"(%0) {shape = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.neg"(%s) : (tensor<f32>) -> tensor<f32>
  %3 = "rlx.add"(%1, %2) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// CHECK-LABEL: func.func @identity_transpose
// CHECK: %[[N:.*]] = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: "rlx.transpose"(%[[N]]) {perm = array<i64: 0, 1>, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>, rlx_lir.view}
// CHECK-NEXT: "rlx.exp"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 32>}
// A transpose that permutes is a copy.
// CHECK-NEXT: "rlx.transpose"(%{{.*}}) {perm = array<i64: 1, 0>, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 32>}
// CHECK-NEXT: "rlx.add"
func.func @identity_transpose(%x: tensor<2x4xf32>, %s: tensor<4x2xf32>) -> tensor<2x4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.transpose"(%0) {perm = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = "rlx.exp"(%s) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %3 = "rlx.transpose"(%2) {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %4 = "rlx.add"(%1, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}

// The narrow of %0 on axis 1 gets its own slot (64), so %0's bytes (0) go to
// the exp once the narrow has copied them out.
// CHECK-LABEL: func.func @strided_narrow
// CHECK: %[[N:.*]] = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: %[[A:.*]] = "rlx.narrow"(%[[N]]) {axis = 1 : i64, len = 3 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 24>, start = 0 : i64}
// CHECK-NEXT: %[[E:.*]] = "rlx.exp"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: %[[B:.*]] = "rlx.narrow"(%[[E]]) {axis = 1 : i64, len = 3 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 128, 24>, start = 1 : i64}
// CHECK-NEXT: "rlx.add"(%[[A]], %[[B]])
// TENSOR-LABEL: func.func @strided_narrow
// TENSOR: %[[V0:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<192xi8> to memref<2x4xf32>
// TENSOR: %[[R0:.*]] = bufferization.to_tensor %[[V0]] restrict : memref<2x4xf32> to tensor<2x4xf32>
// TENSOR-NEXT: %[[SLICE:.*]] = tensor.extract_slice %[[R0]][0, 0] [2, 3] [1, 1]
// TENSOR: %[[V1:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<192xi8> to memref<2x3xf32>
// TENSOR-NEXT: bufferization.materialize_in_destination %[[SLICE]] in restrict writable %[[V1]]
// TENSOR-NEXT: %[[R1:.*]] = bufferization.to_tensor %[[V1]] restrict : memref<2x3xf32> to tensor<2x3xf32>
// TENSOR-NOT: %[[SLICE]]{{[^_0-9a-z]}}
// TENSOR: linalg.generic {{.*}} ins(%[[R1]], %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32>)
func.func @strided_narrow(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "rlx.exp"(%s) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.narrow"(%2) {axis = 1 : i64, start = 1 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %4 = "rlx.add"(%1, %3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// The returned narrow has no slot (it goes to the caller's buffer); the exp
// may take %0's bytes because the narrow is copied out when it is made.
// CHECK-LABEL: func.func @returned_narrow
// CHECK: %[[N:.*]] = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// CHECK-NEXT: "rlx.narrow"(%[[N]]) {axis = 1 : i64, len = 3 : i64, rlx_lir.phase = "steady", start = 0 : i64}
// CHECK-NEXT: "rlx.exp"(%arg1) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 32>}
// TENSOR-LABEL: func.func @returned_narrow
// TENSOR: %[[R0:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<2x4xf32> to tensor<2x4xf32>
// TENSOR-NEXT: %[[OWN:.*]] = bufferization.alloc_tensor() : tensor<2x3xf32>
// TENSOR-NEXT: %[[SLICE:.*]] = tensor.extract_slice %[[R0]][0, 0] [2, 3] [1, 1]
// TENSOR-NEXT: %[[OUT:.*]] = bufferization.materialize_in_destination %[[SLICE]] in %[[OWN]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// TENSOR: return %[[OUT]], %{{.*}} : tensor<2x3xf32>, tensor<2x4xf32>
func.func @returned_narrow(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "rlx.exp"(%s) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.softmax"(%2) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = "rlx.neg"(%3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %1, %4 : tensor<2x3xf32>, tensor<2x4xf32>
}

// The q / k / v column ranges of one product (issue 19): the narrows read only
// by RoPE and attention are views of %0's slot (no copy), which stays live until
// the attention; k's narrow, also read by the add, is a copy with a slot.
// CHECK-LABEL: func.func @qkv_narrows
// CHECK: %[[T:.*]] = "rlx.neg"(%arg0) {rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 192>}
// CHECK-NEXT: %[[Q:.*]] = "rlx.narrow"(%[[T]]) {axis = 2 : i64, len = 8 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 0, 64>, rlx_lir.view, start = 0 : i64}
// CHECK-NEXT: %[[K:.*]] = "rlx.narrow"(%[[T]]) {axis = 2 : i64, len = 8 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 192, 64>, start = 8 : i64}
// CHECK-NEXT: %[[V:.*]] = "rlx.narrow"(%[[T]]) {axis = 2 : i64, len = 8 : i64, rlx_lir.phase = "steady", rlx_lir.slot = array<i64: 64, 64>, rlx_lir.view, start = 16 : i64}
// CHECK-NEXT: "rlx.rope"(%[[Q]], %arg1, %arg2) {{.*}}rlx_lir.slot = array<i64: 256, 64>
// CHECK-NEXT: "rlx.rope"(%[[K]], %arg1, %arg2) {{.*}}rlx_lir.slot = array<i64: 320, 64>
// CHECK-NEXT: "rlx.attention"(%{{.*}}, %{{.*}}, %[[V]]) {{.*}}rlx_lir.slot = array<i64: 384, 64>
// TENSOR-LABEL: func.func @qkv_narrows
// TENSOR: %[[R0:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<1x2x24xf32> to tensor<1x2x24xf32>
// TENSOR-NEXT: %[[QS:.*]] = tensor.extract_slice %[[R0]][0, 0, 0] [1, 2, 8] [1, 1, 1]
// TENSOR-NEXT: %[[KS:.*]] = tensor.extract_slice %[[R0]][0, 0, 8] [1, 2, 8] [1, 1, 1]
// TENSOR: bufferization.materialize_in_destination %[[KS]] in restrict writable
// TENSOR-NOT: materialize_in_destination %[[QS]]
// TENSOR: tensor.expand_shape %[[QS]]
func.func @qkv_narrows(%t: tensor<1x2x24xf32>, %c: tensor<2x2xf32>, %s: tensor<2x2xf32>) -> tensor<1x2x8xf32> {
  %0 = "rlx.neg"(%t) : (tensor<1x2x24xf32>) -> tensor<1x2x24xf32>
  %1 = "rlx.narrow"(%0) {axis = 2 : i64, start = 0 : i64, len = 8 : i64} : (tensor<1x2x24xf32>) -> tensor<1x2x8xf32>
  %2 = "rlx.narrow"(%0) {axis = 2 : i64, start = 8 : i64, len = 8 : i64} : (tensor<1x2x24xf32>) -> tensor<1x2x8xf32>
  %3 = "rlx.narrow"(%0) {axis = 2 : i64, start = 16 : i64, len = 8 : i64} : (tensor<1x2x24xf32>) -> tensor<1x2x8xf32>
  %4 = "rlx.rope"(%1, %c, %s) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x8xf32>
  %5 = "rlx.rope"(%2, %c, %s) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x8xf32>
  %6 = "rlx.attention"(%4, %5, %3) {head_dim = 4 : i64, mask_kind = "causal", num_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %7 = "rlx.add"(%6, %2) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %7 : tensor<1x2x8xf32>
}
