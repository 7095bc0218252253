// Row reductions for NVIDIA GPUs (rlx-gpu-block-reductions): softmax's max and
// sum over 1000 columns and the RMS norm's sum of squares over 512 each become
// one block of 256 threads per row.  Thread t folds elements t, t + 256, ...
// (starting from its first element: no identity needed), writes its partial to
// workgroup memory, a tree halves the partials (strides 128 ... 1, a barrier
// after each), and thread 0 folds the total into the row's initial value.
// Elementwise steps between the reductions keep one thread per element.
// RUN: rlx-opt %s --rlx-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: rlx-opt %s --rlx-lower-to-nvvm | FileCheck %s --check-prefix=PTX
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-gpu{block-reductions=false})' | FileCheck %s --check-prefix=THREAD

// GPU-LABEL: func.func @softmax
// GPU-SAME: (%[[X:.*]]: memref<8x1000xf32>, %[[OUT:.*]]: memref<8x1000xf32>)
// GPU: %[[ARENA:.*]] = gpu.alloc () : memref<[[SIZE:[0-9]+]]xi8>
// GPU: %[[MAX:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<[[SIZE]]xi8> to memref<8xf32>
// The row maximum starts at -inf (one thread per row), then the block reduction:
// GPU: gpu.launch
// GPU: memref.store %{{.*}}, %[[MAX]]
// GPU: gpu.launch blocks(%[[ROW:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}} = %[[C8:[a-z0-9_]+]], {{.*}}) threads(%[[T:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}} = %[[C256:[a-z0-9_]+]], {{.*}}) workgroup(%[[SH:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>>)
// GPU-NEXT: %[[HAS:.*]] = arith.cmpi ult, %[[T]], %[[C1000:.*]] : index
// GPU-NEXT: %[[PARTIAL:.*]] = scf.if %[[HAS]] -> (f32) {
// GPU-NEXT: %[[FIRST:.*]] = memref.load %[[X]][%[[ROW]], %[[T]]]
// GPU-NEXT: %[[NEXT:.*]] = arith.addi %[[T]], %[[C256]] : index
// GPU-NEXT: %[[FOLD:.*]] = scf.for %[[J:.*]] = %[[NEXT]] to %[[C1000]] step %[[C256]] iter_args(%[[P:.*]] = %[[FIRST]]) -> (f32) {
// GPU-NEXT: %[[XJ:.*]] = memref.load %[[X]][%[[ROW]], %[[J]]]
// GPU-NEXT: %[[M:.*]] = arith.maximumf %[[P]], %[[XJ]] : f32
// GPU-NEXT: scf.yield %[[M]] : f32
// GPU: scf.yield %[[FOLD]] : f32
// GPU: memref.store %[[PARTIAL]], %[[SH]][%[[T]]]
// GPU-NEXT: gpu.barrier
// GPU-NEXT: %[[LOW:.*]] = arith.cmpi ult, %[[T]], %[[C128:.*]] : index
// GPU-NEXT: %[[PARTNER:.*]] = arith.addi %[[T]], %[[C128]] : index
// GPU: scf.if
// GPU-NEXT: %[[MINE:.*]] = memref.load %[[SH]][%[[T]]]
// GPU-NEXT: %[[THEIRS:.*]] = memref.load %[[SH]][%[[PARTNER]]]
// GPU-NEXT: %[[BOTH:.*]] = arith.maximumf %[[MINE]], %[[THEIRS]] : f32
// GPU-NEXT: memref.store %[[BOTH]], %[[SH]][%[[T]]]
// GPU-NEXT: }
// GPU-NEXT: gpu.barrier
// GPU-COUNT-6: gpu.barrier
// GPU: %[[LEADER:.*]] = arith.cmpi eq, %[[T]], %{{.*}} : index
// GPU-NEXT: scf.if %[[LEADER]] {
// GPU-NEXT: %[[INIT:.*]] = memref.load %[[MAX]][%[[ROW]]]
// GPU-NEXT: %[[TOTAL:.*]] = memref.load %[[SH]][%{{.*}}]
// GPU-NEXT: %[[ROWMAX:.*]] = arith.maximumf %[[INIT]], %[[TOTAL]] : f32
// GPU-NEXT: memref.store %[[ROWMAX]], %[[MAX]][%[[ROW]]]
// The row sums of exp(x - max), a block reduction per row (exp computed where it is summed, no
// [8, 1000] temporary):
// GPU: workgroup(%{{.*}} : memref<256xf32, #gpu.address_space<workgroup>>)
// GPU: math.exp
// GPU: arith.addf
// exp(x - max) / sum, one thread per element (8000 = 32 blocks of 256, guarded):
// GPU: gpu.launch blocks(%{{.*}}) in (%{{[a-z0-9_]+}} = %c32, {{.*}}) threads
// GPU: arith.cmpi ult, %{{.*}}, %{{.*}} : index
// GPU: math.exp
// GPU: arith.divf
// GPU: gpu.dealloc %[[ARENA]]

// GPU-LABEL: func.func @rms_norm
// GPU: workgroup(%{{.*}} : memref<256xf32, #gpu.address_space<workgroup>>)
// GPU: %[[V:.*]] = memref.load %{{.*}} : memref<4x512xf32>
// GPU-NEXT: %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] : f32
// GPU: arith.addf
// GPU: math.sqrt
// GPU: arith.divf

// PTX-LABEL: gpu.binary @softmax_kernel_0
// PTX-SAME: .visible .entry softmax_kernel(
// PTX-SAME: .maxntid 256, 1, 1
// PTX-SAME: .shared .align 32 .b8 __wg_softmax_kernel_0[1024];
// PTX-SAME: ld.global.b32
// PTX-SAME: max.NaN.f32
// PTX-SAME: st.shared.b32
// PTX-SAME: bar.sync \090;
// PTX-SAME: ld.shared.b32
// PTX-SAME: st.global.b32

// Without block reductions: one thread per row, looping over the 1000 columns.
// THREAD-LABEL: func.func @softmax
// THREAD-NOT: workgroup
// THREAD: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %[[ONE:[a-z0-9_]+]], {{.*}}) threads(%[[T:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %[[ROWS:[a-z0-9_]+]], {{.*}})
// THREAD: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %[[ONE]], {{.*}}) threads(%[[T2:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %[[ROWS]], {{.*}})
// THREAD-NEXT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// THREAD-NEXT: memref.load %{{.*}}[%[[T2]], %[[K]]]
func.func @softmax(%x: tensor<8x1000xf32>) -> tensor<8x1000xf32> {
  %0 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<8x1000xf32>) -> tensor<8x1000xf32>
  return %0 : tensor<8x1000xf32>
}

func.func @rms_norm(%x: tensor<4x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<4x512xf32> {
  %0 = "rlx.rms_norm"(%x, %g, %b) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<4x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x512xf32>
  return %0 : tensor<4x512xf32>
}
