// f16 matmuls on tensor cores (rlx-gpu-mma-matmul): rlx.matmul of f16 sums in an f32 buffer C (zeroed by one
// kernel, truncated to f16 by another); the contraction is a gpu.launch of warps (128 threads: 2 x 2 warps of
// one 16 x 16 fragment here, the smallest block tile, as a grid this small has fewer than 132 blocks).
// Per 32-wide slice of K, each thread stages 8 halves of A and of B with one 16-byte vector load (zero outside
// the matrices) into workgroup memory (memory space 3, rows padded to 40 halves); the warps then load their
// A and B fragments (two 16-wide steps) and multiply them into f32 accumulators.  Slice 0 is staged before
// the loop; each iteration loads the next slice into registers first, multiplies, and stores it between
// two barriers.
// @direct: C is f32 with M and N multiples of 16, so each accumulator starts as its fragment of C and goes
// back there; @ragged (50 rows): through a 32 x 36 f32 workgroup tile, added to C element by element.
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX
// RUN: rlx-opt %s '--rlx-lower-to-nvvm=chip=sm_60 features=+ptx50' | FileCheck %s --check-prefix=SM60
// RUN: rlx-opt %s '--rlx-lower-to-gpu=tensor-cores=false' | FileCheck %s --check-prefix=OFF

// GPU-LABEL: func.func @direct
// GPU: gpu.launch
// GPU: gpu.launch {{.*}} threads(%[[TX:[a-z0-9]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1) workgroup(%[[AS:.*]] : memref<32x40xf16, 3>, %[[BS:.*]] : memref<32x40xf16, 3>) {
// GPU: %[[ZERO:.*]] = gpu.subgroup_mma_constant_matrix %{{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// GPU: %[[INIT:.*]] = scf.if %[[IN:.*]] -> (!gpu.mma_matrix<16x16xf32, "COp">) {
// GPU-NEXT: %[[F:.*]] = gpu.subgroup_mma_load_matrix %[[C:.*]][%[[ROW:.*]], %[[COL:.*]]] {leadDimension = 48 : index} : memref<64x48xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
// GPU-NEXT: scf.yield %[[F]]
// GPU-NEXT: } else {
// GPU-NEXT: scf.yield %[[ZERO]]
// GPU: vector.load %{{.*}} {alignment = 16 : i64} : memref<64x96xf16>, vector<8xf16>
// GPU: vector.load %{{.*}} {alignment = 16 : i64} : memref<96x48xf16>, vector<8xf16>
// GPU: vector.store %{{.*}}, %[[AS]][%{{.*}}] {alignment = 16 : i64} : memref<32x40xf16, 3>, vector<8xf16>
// GPU-NEXT: vector.store %{{.*}}, %[[BS]][%{{.*}}] {alignment = 16 : i64} : memref<32x40xf16, 3>, vector<8xf16>
// GPU-NEXT: gpu.barrier
// GPU-NEXT: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %c3 step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (!gpu.mma_matrix<16x16xf32, "COp">) {
// GPU: %[[NA:.*]] = scf.if %{{.*}} -> (vector<8xf16>) {
// GPU-NEXT: vector.load %{{.*}} : memref<64x96xf16>, vector<8xf16>
// GPU: %[[NB:.*]] = scf.if %{{.*}} -> (vector<8xf16>) {
// GPU-NEXT: vector.load %{{.*}} : memref<96x48xf16>, vector<8xf16>
// GPU: %[[A0:.*]] = gpu.subgroup_mma_load_matrix %[[AS]][%[[FM:.*]], %{{.*}}] {leadDimension = 40 : index} {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// GPU-NEXT: %[[B0:.*]] = gpu.subgroup_mma_load_matrix %[[BS]][%{{.*}}, %[[FN:.*]]] {leadDimension = 40 : index} {{.*}} -> !gpu.mma_matrix<16x16xf16, "BOp">
// GPU-NEXT: %[[D0:.*]] = gpu.subgroup_mma_compute %[[A0]], %[[B0]], %[[ACC]]
// GPU-NEXT: %[[A1:.*]] = gpu.subgroup_mma_load_matrix %[[AS]][%[[FM]], %c16]
// GPU-NEXT: %[[B1:.*]] = gpu.subgroup_mma_load_matrix %[[BS]][%c16, %[[FN]]]
// GPU-NEXT: %[[D1:.*]] = gpu.subgroup_mma_compute %[[A1]], %[[B1]], %[[D0]]
// GPU-NEXT: gpu.barrier
// GPU-NEXT: vector.store %[[NA]], %[[AS]]
// GPU-NEXT: vector.store %[[NB]], %[[BS]]
// GPU-NEXT: gpu.barrier
// GPU-NEXT: scf.yield %[[D1]]
// GPU: scf.if %[[IN]] {
// GPU-NEXT: gpu.subgroup_mma_store_matrix %[[SUM]], %[[C]][%[[ROW]], %[[COL]]] {leadDimension = 48 : index}
// GPU: gpu.launch
// GPU: arith.truncf %{{.*}} : f32 to f16

// GPU-LABEL: func.func @ragged
// GPU: gpu.launch {{.*}} workgroup(%{{.*}} : memref<32x40xf16, 3>, %{{.*}} : memref<32x40xf16, 3>, %[[CS:.*]] : memref<32x36xf32, 3>) {
// GPU: %[[SUMS:.*]] = scf.for
// GPU: gpu.subgroup_mma_store_matrix %[[SUMS]], %[[CS]][%{{.*}}] {leadDimension = 36 : index}
// GPU-NEXT: gpu.barrier
// GPU: scf.if
// GPU-NEXT: %[[PART:.*]] = memref.load %[[CS]]
// GPU-NEXT: %[[OLD:.*]] = memref.load %[[OUT:.*]][%[[R:.*]], %[[K:.*]]] : memref<50x40xf32>
// GPU-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %[[PART]] : f32
// GPU-NEXT: memref.store %[[NEW]], %[[OUT]][%[[R]], %[[K]]]

// f16 attention: Q.K^T (f16 x f16 into f32 scores) on the tensor cores; P.V multiplies the f32 probabilities
// by f16 values (widened in the generic's body), so it takes rlx-gpu-tile-matmul's kernel, widening V as it
// stages it, never the one-block-per-output fallback.
// GPU-LABEL: func.func @attention_f16
// GPU: gpu.launch {{.*}} workgroup(%{{.*}} : memref<32x40xf16, 3>
// GPU: gpu.subgroup_mma_compute
// GPU: gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c16, %{{.*}}) workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>)
// GPU: memref.load %{{.*}} : memref<1x20x2x16xf16>
// GPU-NEXT: arith.extf %{{.*}} : f16 to f32
// GPU: math.fma %{{.*}} : f32

// PTX: .shared .align 32 .b8
// PTX-SAME: ld.global.v4.b32
// PTX-SAME: st.shared.v4.b32
// PTX-SAME: wmma.load.a.sync.aligned.row.m16n16k16.shared.f16
// PTX-SAME: wmma.load.b.sync.aligned.row.m16n16k16.shared.f16
// PTX-SAME: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// PTX-SAME: wmma.store.d.sync.aligned.row.m16n16k16.f32

// SM60-NOT: wmma
// SM60: fma.rn.f32
// SM60-NOT: wmma

// OFF-NOT: subgroup_mma
// OFF: math.fma
// OFF-NOT: subgroup_mma
func.func @direct(%a: tensor<64x96xf16>, %b: tensor<96x48xf16>) -> tensor<64x48xf16> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<64x96xf16>, tensor<96x48xf16>) -> tensor<64x48xf16>
  return %0 : tensor<64x48xf16>
}

func.func @ragged(%a: tensor<50x72xf16>, %b: tensor<72x40xf16>) -> tensor<50x40xf16> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<50x72xf16>, tensor<72x40xf16>) -> tensor<50x40xf16>
  return %0 : tensor<50x40xf16>
}

func.func @attention_f16(%q: tensor<1x20x64xf16>, %k: tensor<1x20x32xf16>, %v: tensor<1x20x32xf16>) -> tensor<1x20x64xf16> {
  %0 = "rlx.attention"(%q, %k, %v) {head_dim = 16 : i64, mask_kind = "causal", num_heads = 4 : i64} : (tensor<1x20x64xf16>, tensor<1x20x32xf16>, tensor<1x20x32xf16>) -> tensor<1x20x64xf16>
  return %0 : tensor<1x20x64xf16>
}
