// rlx.attention for NVIDIA GPUs, causal, 2 query heads sharing 1 kv head,
// 128 queries and keys of head_dim 16.  Each linalg stage of the lowering is a
// kernel: scores (one thread per score, the 16-term dot product in a loop), the
// scaled and masked scores, the row max and the row sum as block reductions
// (one block of 128 threads per row), exp(s - max), and P.V as a block
// reduction over the 128 keys for each of the 128 x 2 x 16 outputs.  Every
// intermediate is a view of the one device arena.
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX

// GPU-LABEL: func.func @attention
// GPU-SAME: (%[[Q:.*]]: memref<1x128x32xf32>, %[[K:.*]]: memref<1x128x16xf32>, %[[V:.*]]: memref<1x128x16xf32>, %[[OUT:.*]]: memref<1x128x32xf32>)
// GPU: %[[ARENA:.*]] = gpu.alloc () : memref<[[SIZE:[0-9]+]]xi8>
// GPU: %[[SCORES:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<[[SIZE]]xi8> to memref<1x2x128x128xf32>
// GPU-NOT: gpu.alloc
// Scores: 2 x 128 x 128 = 32768 threads, each looping over the head dimension.
// GPU: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %c128, {{.*}}) threads({{.*}}) in (%{{[a-z0-9_]+}} = %c256, {{.*}})
// GPU: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %c128, {{.*}}) threads({{.*}}) in (%{{[a-z0-9_]+}} = %c256, {{.*}})
// GPU: scf.for %[[D:.*]] = %{{.*}} to %c16 step %{{.*}} {
// GPU-NEXT: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[D]]] : memref<1x128x2x16xf32>
// GPU: arith.mulf
// GPU-NEXT: arith.addf
// GPU-NEXT: memref.store %{{.*}}, %[[SCORES]]
// The causal mask:
// GPU: arith.select
// Row max and row sum: one block of 128 threads per (head, query) row.
// GPU: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %c256, {{.*}}) threads(%[[T:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %c128, {{.*}}) workgroup(%[[SH:[a-z0-9_]+]] : memref<128xf32, #gpu.address_space<workgroup>>)
// GPU: arith.maximumf
// GPU: memref.store %{{.*}}, %[[SH]][%[[T]]]
// GPU-NEXT: gpu.barrier
// GPU: math.exp
// GPU: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %c256, {{.*}}) threads({{.*}}) in (%{{[a-z0-9_]+}} = %c128, {{.*}}) workgroup({{.*}} : memref<128xf32, #gpu.address_space<workgroup>>)
// GPU: arith.addf
// P.V: 4096 outputs (query, head, d), one block each, reducing over the 128 keys.
// GPU: gpu.launch blocks(%[[B:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %c4096, {{.*}}) threads(%[[TV:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %c128, {{.*}}) workgroup({{.*}} : memref<128xf32, #gpu.address_space<workgroup>>)
// GPU-NEXT: %[[DIM:.*]] = arith.remui %[[B]], %c16 : index
// GPU: memref.load %{{.*}}[%{{.*}}, %[[TV]], %{{.*}}, %[[DIM]]] : memref<1x128x1x16xf32>
// GPU: arith.mulf
// GPU: gpu.barrier
// GPU: memref.store %{{.*}}, %[[OUT]]
// GPU: gpu.dealloc %[[ARENA]]

// PTX: gpu.binary @attention_kernel
// PTX-SAME: .visible .entry attention_kernel(
// PTX: gpu.binary {{.*}}.visible .entry attention_kernel({{.*}}ld.global.b32{{.*}}mul.rn.f32{{.*}}st.global.b32
// PTX: gpu.binary {{.*}}.shared .align 4 .b8 __wg_attention_kernel_0[512];
// PTX-SAME: max.NaN.f32
// PTX-SAME: bar.sync \090;
// PTX: gpu.binary {{.*}}ex2.approx.ftz.f32
func.func @attention(%q: tensor<1x128x32xf32>, %k: tensor<1x128x16xf32>, %v: tensor<1x128x16xf32>) -> tensor<1x128x32xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {head_dim = 16 : i64, mask_kind = "causal", num_heads = 2 : i64} : (tensor<1x128x32xf32>, tensor<1x128x16xf32>, tensor<1x128x16xf32>) -> tensor<1x128x32xf32>
  return %0 : tensor<1x128x32xf32>
}
