// rlx.attention for NVIDIA GPUs, causal, 2 query heads sharing 1 kv head,
// 128 queries and keys of head_dim 16.  Each linalg stage of the lowering is a
// kernel.  The two contractions, Q.K^T and P.V, are linalg.generic ops whose
// maps keep the heads interleaved in the hidden dimension; rlx-gpu-tile-matmul
// recognises them as batched matmuls and runs them as shared-memory tiled
// kernels (batch = (batch, head) in the grid's z index, the kv head of a query
// head is that head divided by the group size).  Between them: the scaled and
// masked scores, the row max and the row sum as block reductions (one block of
// 128 threads per row), and exp(s - max).  Every intermediate is a view of the
// one device arena.
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX

// GPU-LABEL: func.func @attention
// GPU-SAME: (%[[Q:.*]]: memref<1x128x32xf32>, %[[K:.*]]: memref<1x128x16xf32>, %[[V:.*]]: memref<1x128x16xf32>, %[[OUT:.*]]: memref<1x128x32xf32>)
// GPU: %[[ARENA:.*]] = gpu.alloc () : memref<[[SIZE:[0-9]+]]xi8>
// GPU: %[[SCORES:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<[[SIZE]]xi8> to memref<1x2x128x128xf32>
// GPU-NOT: gpu.alloc
// Scores: 8 x 8 blocks of 16 x 16 threads per head (z), one score per thread (R = 1: larger register tiles
// would leave fewer than min-blocks = 132 blocks).
// GPU: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:.*]]) in (%{{[a-z0-9_]+}} = %c8, %{{[a-z0-9_]+}} = %c8, %{{[a-z0-9_]+}} = %c2) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{[a-z0-9_]+}} = %c16, %{{[a-z0-9_]+}} = %c16, %{{.*}}) workgroup(%[[AS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[BS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>)
// GPU: %[[HEAD:.*]] = arith.remui %[[BZ]], %c2 : index
// GPU-NEXT: %[[BATCH:.*]] = arith.divui %[[BZ]], %c2 : index
// GPU-NEXT: %[[KV:.*]] = arith.divui %[[HEAD]], %c2 : index
// GPU: memref.load %{{.*}}[%[[BATCH]], %{{.*}}, %[[HEAD]], %[[TX]]] : memref<1x128x2x16xf32>
// GPU: memref.store %{{.*}}, %[[AS]][%[[TY]], %[[TX]]]
// GPU: memref.load %{{.*}}[%[[BATCH]], %[[KV]], %[[TY]], %{{.*}}] : memref<1x1x16x128xf32>
// GPU: memref.store %{{.*}}, %[[BS]][%[[TY]], %[[TX]]]
// GPU: gpu.barrier
// GPU: math.fma
// GPU: memref.store %{{.*}}, %[[SCORES]][%[[BATCH]], %[[HEAD]], %{{.*}}, %{{.*}}]
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
// P.V: 128 x 16 outputs per head, blocks of 16 x 16 threads tiling the queries (y) for each head (z).
// GPU: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ2:.*]]) in (%{{[a-z0-9_]+}} = %c1, %{{[a-z0-9_]+}} = %c8, %{{[a-z0-9_]+}} = %c2) threads({{.*}}) in (%{{[a-z0-9_]+}} = %c16, %{{[a-z0-9_]+}} = %c16, %{{.*}}) workgroup({{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>)
// GPU: %[[HEAD2:.*]] = arith.remui %[[BZ2]], %c2 : index
// GPU-NEXT: %[[BATCH2:.*]] = arith.divui %[[BZ2]], %c2 : index
// GPU-NEXT: %[[KV2:.*]] = arith.divui %[[HEAD2]], %c2 : index
// GPU: memref.load %{{.*}}[%[[BATCH2]], %[[HEAD2]], %{{.*}}, %{{.*}}] : memref<1x2x128x128xf32>
// GPU: memref.load %{{.*}}[%[[BATCH2]], %{{.*}}, %[[KV2]], %{{.*}}] : memref<1x128x1x16xf32>
// GPU: math.fma
// GPU: memref.store %{{.*}}, %[[OUT]]
// GPU: gpu.dealloc %[[ARENA]]

// PTX: gpu.binary @attention_kernel
// PTX-SAME: .visible .entry attention_kernel(
// PTX: gpu.binary {{.*}}.visible .entry attention_kernel({{.*}}ld.global.b32{{.*}}mul.rn.f32{{.*}}st.global.b32
// PTX: gpu.binary {{.*}}.shared .align 32 .b8 __wg_attention_kernel_0[512];
// PTX-SAME: max.NaN.f32
// PTX-SAME: bar.sync \090;
// PTX: gpu.binary {{.*}}ex2.approx.ftz.f32
func.func @attention(%q: tensor<1x128x32xf32>, %k: tensor<1x128x16xf32>, %v: tensor<1x128x16xf32>) -> tensor<1x128x32xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {head_dim = 16 : i64, mask_kind = "causal", num_heads = 2 : i64} : (tensor<1x128x32xf32>, tensor<1x128x16xf32>, tensor<1x128x16xf32>) -> tensor<1x128x32xf32>
  return %0 : tensor<1x128x32xf32>
}
