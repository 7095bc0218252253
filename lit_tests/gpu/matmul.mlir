// rlx.matmul for NVIDIA GPUs: C is zeroed by one kernel, then the shared-memory
// tiled kernel of rlx-gpu-tile-matmul runs with blocks of 16 x 16 threads, each
// thread owning an R x R register tile of C (R = 2 here: 16 * 2 <= min(M, N) = 40
// < 16 * 4), strided by 16 so warps touch contiguous columns.  Per 16-wide slice
// of K, the (16R) x 16 slice of A and the 16 x (16R) slice of B are staged in
// workgroup memory (zero outside the matrices), the block synchronises, each
// thread accumulates with fused multiply-adds, and synchronises again; it
// finally adds its sums to C.  f16 operands are widened and accumulated in f32.
// (f16 here with tensor-cores=false: by default rlx-gpu-mma-matmul takes it, see mma-matmul.mlir.)
// R = 2 is what fits with min-blocks=0; by default (min-blocks=132) R halves while
// the grid has fewer than 132 blocks, so a matmul this small keeps R = 1 (DEFAULT).
// RUN: rlx-opt %s '--rlx-lower-to-gpu=min-blocks=0 tensor-cores=false' | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=DEFAULT
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX

// GPU-LABEL: func.func @matmul
// GPU-SAME: (%[[A:.*]]: memref<50x72xf32>, %[[B:.*]]: memref<72x40xf32>, %[[C:.*]]: memref<50x40xf32>)
// GPU: gpu.launch
// GPU: memref.store %{{.*}}, %[[C]]
// GPU: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %{{.*}}) in (%{{.*}} = %[[C2:.*]], %{{.*}} = %[[C2]], %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %[[C16:.*]], %{{.*}} = %[[C16]], %{{.*}} = %{{.*}}) workgroup(%[[AS:.*]] : memref<32x16xf32, #gpu.address_space<workgroup>>, %[[BS:.*]] : memref<16x32xf32, #gpu.address_space<workgroup>>)
// GPU: %[[ROW0:.*]] = arith.addi %{{.*}}, %[[TY]] : index
// GPU: %[[COL0:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// GPU: %[[SROW1:.*]] = arith.addi %[[TY]], %[[C16]] : index
// GPU: %[[ROW1:.*]] = arith.addi %{{.*}}, %[[SROW1]] : index
// GPU: %[[SCOL1:.*]] = arith.addi %[[TX]], %[[C16]] : index
// GPU: %[[COL1:.*]] = arith.addi %{{.*}}, %[[SCOL1]] : index
// GPU: %[[SUMS:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P00:.*]] = %{{.*}}, %[[P01:.*]] = %{{.*}}, %[[P10:.*]] = %{{.*}}, %[[P11:.*]] = %{{.*}}) -> (f32, f32, f32, f32)
// GPU: %[[A0:.*]] = scf.if %{{.*}} -> (f32)
// GPU-NEXT: memref.load %[[A]][%[[ROW0]], %{{.*}}]
// GPU: memref.store %[[A0]], %[[AS]][%[[TY]], %[[TX]]]
// GPU: %[[B0:.*]] = scf.if %{{.*}} -> (f32)
// GPU-NEXT: memref.load %[[B]][%{{.*}}, %[[COL0]]]
// GPU: memref.store %[[B0]], %[[BS]][%[[TY]], %[[TX]]]
// GPU: memref.store %{{.*}}, %[[AS]][%[[SROW1]], %[[TX]]]
// GPU: memref.store %{{.*}}, %[[BS]][%[[TY]], %[[SCOL1]]]
// GPU-NEXT: gpu.barrier
// GPU-NEXT: %[[NEXT:.*]]:4 = scf.for %[[KK:.*]] = %{{.*}} to %[[C16]] step %{{.*}} iter_args(%[[Q00:.*]] = %[[P00]], %[[Q01:.*]] = %[[P01]], %[[Q10:.*]] = %[[P10]], %[[Q11:.*]] = %[[P11]])
// GPU-NEXT: %[[X0:.*]] = memref.load %[[AS]][%[[TY]], %[[KK]]]
// GPU-NEXT: %[[Y0:.*]] = memref.load %[[BS]][%[[KK]], %[[TX]]]
// GPU-NEXT: %[[X1:.*]] = memref.load %[[AS]][%[[SROW1]], %[[KK]]]
// GPU-NEXT: %[[Y1:.*]] = memref.load %[[BS]][%[[KK]], %[[SCOL1]]]
// GPU-NEXT: %[[F00:.*]] = math.fma %[[X0]], %[[Y0]], %[[Q00]] : f32
// GPU-NEXT: %[[F01:.*]] = math.fma %[[X0]], %[[Y1]], %[[Q01]] : f32
// GPU-NEXT: %[[F10:.*]] = math.fma %[[X1]], %[[Y0]], %[[Q10]] : f32
// GPU-NEXT: %[[F11:.*]] = math.fma %[[X1]], %[[Y1]], %[[Q11]] : f32
// GPU-NEXT: scf.yield %[[F00]], %[[F01]], %[[F10]], %[[F11]]
// GPU: gpu.barrier
// GPU-NEXT: scf.yield %[[NEXT]]#0, %[[NEXT]]#1, %[[NEXT]]#2, %[[NEXT]]#3
// GPU: scf.if
// GPU-NEXT: %[[OLD:.*]] = memref.load %[[C]][%[[ROW0]], %[[COL0]]]
// GPU-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %[[SUMS]]#0 : f32
// GPU-NEXT: memref.store %[[NEW]], %[[C]][%[[ROW0]], %[[COL0]]]
// GPU: memref.store %{{.*}}, %[[C]][%[[ROW0]], %[[COL1]]]
// GPU: memref.store %{{.*}}, %[[C]][%[[ROW1]], %[[COL0]]]
// GPU: memref.store %{{.*}}, %[[C]][%[[ROW1]], %[[COL1]]]

// GPU-LABEL: func.func @matmul_f16
// GPU: workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>)
// GPU: memref.load %{{.*}} : memref<32x48xf16>
// GPU-NEXT: arith.extf %{{.*}} : f16 to f32
// GPU: arith.truncf %{{.*}} : f32 to f16

// DEFAULT-LABEL: func.func @matmul
// DEFAULT: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %c3, %{{[a-z0-9_]+}} = %c4, %{{[a-z0-9_]+}} = %c1) threads({{.*}}) in (%{{[a-z0-9_]+}} = %c16, %{{[a-z0-9_]+}} = %c16, %{{.*}}) workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>)

// PTX-LABEL: gpu.binary @matmul_kernel_0
// PTX-SAME: .visible .entry matmul_kernel(
// PTX-SAME: .maxntid 16, 16, 1
// PTX-SAME: .shared .align 32 .b8 __wg_matmul_kernel_0[1024];
// PTX-SAME: .shared .align 32 .b8 __wg_matmul_kernel_1[1024];
// PTX-SAME: st.shared.b32
// PTX-SAME: bar.sync \090;
// PTX-SAME: ld.shared
// PTX-SAME: fma.rn.f32
// PTX-SAME: bar.sync \090;
// PTX-SAME: ld.global.b32
// PTX-SAME: st.global.b32
func.func @matmul(%a: tensor<50x72xf32>, %b: tensor<72x40xf32>) -> tensor<50x40xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<50x72xf32>, tensor<72x40xf32>) -> tensor<50x40xf32>
  return %0 : tensor<50x40xf32>
}

func.func @matmul_f16(%a: tensor<32x48xf16>, %b: tensor<48x16xf16>) -> tensor<32x16xf16> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<32x48xf16>, tensor<48x16xf16>) -> tensor<32x16xf16>
  return %0 : tensor<32x16xf16>
}
