// Elementwise ops for NVIDIA GPUs: each linalg op is one kernel over the flattened
// iteration space (64 x 300 = 19200 = 75 blocks of 256 threads, so no bounds
// guard), the intermediate lives in the function's one device arena, and the
// embedded PTX reads and writes global memory.
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-gpu,gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{chip=sm_80 features=+ptx70})' | FileCheck %s --check-prefix=SM80

// GPU-LABEL: func.func @bias_gelu
// GPU-SAME: (%[[X:.*]]: memref<64x300xf32>, %[[B:.*]]: memref<300xf32>, %[[OUT:.*]]: memref<64x300xf32>)
// GPU: %[[ARENA:.*]] = gpu.alloc () : memref<[[SIZE:[0-9]+]]xi8>
// GPU: %[[SUM:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<{{[0-9]+}}xi8> to memref<64x300xf32>
// GPU: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C75:.*]], %{{.*}} = %[[C1:.*]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256:.*]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]])
// GPU-NEXT: %[[BASE:.*]] = arith.muli %[[BX]], %[[C256]] : index
// GPU-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// GPU-NEXT: %[[COL:.*]] = arith.remui %[[I]], %[[C300:.*]] : index
// GPU-NEXT: %[[ROW:.*]] = arith.divui %[[I]], %[[C300]] : index
// GPU-NEXT: %[[XV:.*]] = memref.load %[[X]][%[[ROW]], %[[COL]]]
// GPU-NEXT: %[[BV:.*]] = memref.load %[[B]][%[[COL]]]
// GPU-NEXT: %[[S:.*]] = arith.addf %[[XV]], %[[BV]] : f32
// GPU-NEXT: memref.store %[[S]], %[[SUM]][%[[ROW]], %[[COL]]]
// GPU-NEXT: gpu.terminator
// GPU: gpu.launch
// GPU: memref.load %[[SUM]]
// GPU: math.erf
// GPU: memref.store %{{.*}}, %[[OUT]]
// GPU: gpu.dealloc %[[ARENA]] : memref<[[SIZE]]xi8>
// GPU-NEXT: return
// GPU-NOT: gpu.launch

// NVVM-LABEL: func.func @bias_gelu
// NVVM: gpu.launch_func @[[K0:bias_gelu_kernel]]::@bias_gelu_kernel blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// NVVM: gpu.launch_func @[[K1:bias_gelu_kernel_0]]::@bias_gelu_kernel
// NVVM: gpu.module @[[K0]]
// NVVM: llvm.func @bias_gelu_kernel({{.*}}) attributes {gpu.kernel, gpu.known_block_size = array<i32: 256, 1, 1>, gpu.known_grid_size = array<i32: 75, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// NVVM: nvvm.read.ptx.sreg.ctaid.x range <i32, 0, 75> : i32
// NVVM: nvvm.read.ptx.sreg.tid.x range <i32, 0, 256> : i32
// NVVM: llvm.fadd
// NVVM: gpu.module @[[K1]]

// PTX-LABEL: llvm.func @bias_gelu(
// PTX: llvm.call @mgpuStreamCreate()
// PTX: llvm.call @mgpuMemAlloc
// PTX: gpu.launch_func <%{{.*}} : !llvm.ptr> @bias_gelu_kernel::@bias_gelu_kernel
// PTX: gpu.launch_func <%{{.*}} : !llvm.ptr> @bias_gelu_kernel_0::@bias_gelu_kernel
// PTX: llvm.call @mgpuMemFree
// PTX: llvm.call @mgpuStreamSynchronize
// PTX: llvm.func @_mlir_ciface_bias_gelu(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// PTX: gpu.binary @bias_gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "
// PTX-SAME: .version 8.0\0A.target sm_90\0A.address_size 64
// PTX-SAME: .visible .entry bias_gelu_kernel(
// PTX-SAME: .maxntid 256, 1, 1
// PTX-SAME: mov.u32 \09%r{{[0-9]+}}, %ctaid.x;
// PTX-SAME: mov.u32 \09%r{{[0-9]+}}, %tid.x;
// PTX-SAME: ld.global.b32
// PTX-SAME: add.rn.f32
// PTX-SAME: st.global.b32
// PTX: gpu.binary @bias_gelu_kernel_0
// PTX-SAME: st.global.b32
// SM80: gpu.binary @bias_gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">
// SM80-SAME: .version 7.0\0A.target sm_80\0A
func.func @bias_gelu(%x: tensor<64x300xf32>, %b: tensor<300xf32>) -> tensor<64x300xf32> {
  %0 = "rlx.add"(%x, %b) : (tensor<64x300xf32>, tensor<300xf32>) -> tensor<64x300xf32>
  %1 = "rlx.gelu"(%0) : (tensor<64x300xf32>) -> tensor<64x300xf32>
  return %1 : tensor<64x300xf32>
}
