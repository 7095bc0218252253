// rlx-lower-to-llvm takes MIR (or linalg on tensors) all the way to the LLVM
// dialect: results become caller-provided out-params, intermediates live in
// the LIR plan's arena (one buffer the caller passes, no allocation per call; with plan=false
// internal buffers are malloc'ed and freed before returning), and public
// functions get a C interface.
// RUN: rlx-opt %s --split-input-file --rlx-lower-to-llvm | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{plan=false})' | FileCheck %s --check-prefix=DIRECT
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{out-params=false})' | FileCheck %s --check-prefix=RESULTS

// The add is fused into the gelu's loop (no slot), so the arena holds the matmul's 256 bytes:
// the caller's, the fourth memref argument (after the three inputs, before the out-param), not
// a global; erf is an inline polynomial (rlx-approximate-math), not a libm call.
// CHECK-NOT: llvm.mlir.global
// CHECK-LABEL: llvm.func @mlp(
// CHECK-SAME: %arg19: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr,
// CHECK-SAME: attributes {llvm.emit_c_interface, rlx.arena = array<i64: 256, 64>}
// CHECK-NOT: func.func
// CHECK-NOT: memref.
// CHECK-NOT: @malloc
// CHECK-NOT: llvm.mlir.addressof
// CHECK-NOT: @erff
// CHECK: llvm.intr.fma
// CHECK: llvm.return{{$}}
// DIRECT-LABEL: llvm.func @mlp(
// DIRECT: %[[TMP:.*]] = llvm.call @malloc
// DIRECT: llvm.call @free(%[[TMP]])
// Three inputs, the arena and the output, each as a pointer to its memref descriptor.
// CHECK-LABEL: llvm.func @_mlir_ciface_mlp(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-SAME: attributes {llvm.emit_c_interface, rlx.arena = array<i64: 256, 64>}

// RESULTS-LABEL: llvm.func @mlp(
// RESULTS-SAME: -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// Plain linalg on tensors goes through the same pipeline.
// CHECK-LABEL: llvm.func @scale(
// CHECK: llvm.fmul
// CHECK-LABEL: llvm.func @_mlir_ciface_scale(
#id = affine_map<(d0) -> (d0)>
func.func @scale(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = arith.constant 2.0 : f32
  %init = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %c : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
