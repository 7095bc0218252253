// The GPU passes one by one, on buffers.
// RUN: rlx-opt %s --split-input-file --rlx-gpu-grid-loops | FileCheck %s --check-prefix=GRID
// RUN: rlx-opt %s --split-input-file --rlx-gpu-device-memory | FileCheck %s --check-prefix=MEM
// RUN: rlx-opt %s --split-input-file --rlx-memref-copy-to-linalg | FileCheck %s --check-prefix=COPY
// RUN: rlx-opt %s --split-input-file --rlx-gpu-block-reductions | FileCheck %s --check-prefix=BLOCK
// RUN: rlx-opt %s --split-input-file '--rlx-gpu-block-reductions=min-length=4' | FileCheck %s --check-prefix=SHORT

// A 2 x 3 x 50 nest is flattened to 300 iterations: 2 blocks of 256 threads,
// guarded, the indices delinearized from block * 256 + thread.
// GRID-LABEL: func.func @grid
// GRID-SAME: (%[[X:.*]]: memref<2x3x50xf32>, %[[Y:.*]]: memref<2x3x50xf32>)
// GRID: scf.parallel (%[[B:.*]]) = (%[[ZERO:.*]]) to (%[[TWO:.*]]) step (%[[ONE:.*]]) {
// GRID-NEXT: %[[C256:.*]] = arith.constant 256 : index
// GRID-NEXT: scf.parallel (%[[T:.*]]) = (%[[ZERO]]) to (%[[C256]]) step (%[[ONE]]) {
// GRID: %[[BASE:.*]] = arith.muli %[[B]], %{{.*}} : index
// GRID-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[T]] : index
// GRID-NEXT: %[[C300:.*]] = arith.constant 300 : index
// GRID-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[C300]] : index
// GRID-NEXT: scf.if %[[IN]] {
// GRID-NEXT: %[[C50:.*]] = arith.constant 50 : index
// GRID-NEXT: %[[K:.*]] = arith.remui %[[I]], %[[C50]] : index
// GRID-NEXT: %[[IJ:.*]] = arith.divui %[[I]], %[[C50]] : index
// GRID-NEXT: %[[C3:.*]] = arith.constant 3 : index
// GRID-NEXT: %[[J:.*]] = arith.remui %[[IJ]], %[[C3]] : index
// GRID-NEXT: %[[II:.*]] = arith.divui %[[IJ]], %[[C3]] : index
// GRID: %[[V:.*]] = memref.load %[[X]][%[[II]], %[[J]], %[[K]]]
// GRID-NEXT: memref.store %[[V]], %[[Y]][%[[II]], %[[J]], %[[K]]]
func.func @grid(%x: memref<2x3x50xf32>, %y: memref<2x3x50xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c50 = arith.constant 50 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c3, %c50) step (%c1, %c1, %c1) {
    %v = memref.load %x[%i, %j, %k] : memref<2x3x50xf32>
    memref.store %v, %y[%i, %j, %k] : memref<2x3x50xf32>
    scf.reduce
  }
  return
}

// -----

// Lower bound 2, step 3: 6 iterations, one block of 6 threads, i = 3 * t + 2.
// GRID-LABEL: func.func @strided
// GRID: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step
// GRID: %[[C6:.*]] = arith.constant 6 : index
// GRID-NEXT: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C6]]) step
// GRID: %[[LIN:.*]] = arith.addi %{{.*}}, %[[T]] : index
// GRID-NOT: scf.if
// GRID: %[[SCALED:.*]] = arith.muli %[[LIN]], %{{.*}} : index
// GRID: %[[IDX:.*]] = arith.addi %[[SCALED]], %{{.*}} : index
// GRID-NEXT: memref.store %{{.*}}, %{{.*}}[%[[IDX]]]
func.func @strided(%x: memref<20xf32>) {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c20 = arith.constant 20 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c2) to (%c20) step (%c3) {
    memref.store %zero, %x[%i] : memref<20xf32>
    scf.reduce
  }
  return
}

// -----

// Element accesses outside any loop run on one thread of one block.
// GRID-LABEL: func.func @scalar
// GRID: scf.parallel (%{{.*}}) = (%[[Z:.*]]) to (%[[O:.*]]) step (%[[O]]) {
// GRID-NEXT: scf.parallel (%{{.*}}) = (%[[Z]]) to (%[[O]]) step (%[[O]]) {
// GRID-NEXT: %[[V:.*]] = memref.load
// GRID-NEXT: memref.store %[[V]]
func.func @scalar(%x: memref<f32>, %y: memref<f32>) {
  %v = memref.load %x[] : memref<f32>
  memref.store %v, %y[] : memref<f32>
  return
}

// -----

// One device allocation holds the LIR arena, the constant (copied in where it
// was read) and every other buffer, 256-byte aligned; freed once at the return.
// MEM-LABEL: func.func @memory
// MEM-NEXT: %[[DEV:.*]] = gpu.alloc () : memref<780xi8>
// MEM-NEXT: %[[O0:.*]] = arith.constant 0 : index
// MEM-NEXT: %[[ARENA:.*]] = memref.view %[[DEV]][%[[O0]]][] : memref<780xi8> to memref<512xi8>
// MEM-NEXT: %[[O512:.*]] = arith.constant 512 : index
// MEM-NEXT: %[[TABLE:.*]] = memref.view %[[DEV]][%[[O512]]][] : memref<780xi8> to memref<4xf32>
// MEM-NEXT: %[[O768:.*]] = arith.constant 768 : index
// MEM-NEXT: %[[TMP:.*]] = memref.view %[[DEV]][%[[O768]]][] : memref<780xi8> to memref<2x3xf16>
// MEM: %[[SLOT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<512xi8> to memref<4xf32>
// MEM-NEXT: %[[HOST:.*]] = memref.get_global @table : memref<4xf32>
// MEM-NEXT: gpu.memcpy %[[TABLE]], %[[HOST]] : memref<4xf32>, memref<4xf32>
// MEM-NEXT: memref.copy %{{.*}}, %[[SLOT]]
// MEM-NEXT: memref.copy %[[TABLE]], %{{.*}}
// MEM-NEXT: gpu.dealloc %[[DEV]] : memref<780xi8>
// MEM-NEXT: return
// COPY-LABEL: func.func @memory
// COPY: linalg.copy {{.*}} ins(%{{.*}} : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// COPY: linalg.copy {{.*}} ins(%{{.*}} : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// COPY-NOT: memref.copy
memref.global "private" @__rlx_arena_memory : memref<512xi8> = uninitialized {alignment = 64 : i64}
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @memory(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %arena = memref.get_global @__rlx_arena_memory : memref<512xi8>
  %slot = memref.view %arena[%c0][] : memref<512xi8> to memref<4xf32>
  %t = memref.get_global @table : memref<4xf32>
  %tmp = memref.alloc() : memref<2x3xf16>
  memref.copy %x, %slot : memref<4xf32> to memref<4xf32>
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %tmp : memref<2x3xf16>
  return
}

// -----

// A row sum over 100 elements: a block of 128 threads per row (64 active at the
// first tree step); rows of 10 are too short for a block unless min-length allows.
// BLOCK-LABEL: func.func @row_sums
// BLOCK: gpu.launch blocks(%[[ROW:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %[[ROWS:[a-z0-9_]+]], {{.*}}) threads(%[[T:[a-z0-9_]+]], {{.*}}) in (%{{[a-z0-9_]+}} = %[[C128:[a-z0-9_]+]], {{.*}}) workgroup(%[[SH:[a-z0-9_]+]] : memref<128xf32, #gpu.address_space<workgroup>>)
// BLOCK: arith.cmpi ult, %[[T]], %[[C100:.*]] : index
// BLOCK: memref.load %{{.*}}[%[[ROW]], %[[T]]] : memref<6x100xf32>
// BLOCK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// BLOCK: gpu.barrier
// BLOCK: %[[LOW:.*]] = arith.cmpi ult, %[[T]], %{{.*}} : index
// BLOCK: %[[PARTNER:.*]] = arith.addi %[[T]], %{{.*}} : index
// BLOCK: %[[HAS:.*]] = arith.cmpi ult, %[[PARTNER]], %{{.*}} : index
// BLOCK-COUNT-6: gpu.barrier
// BLOCK: arith.cmpi eq, %[[T]]
// BLOCK: memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<6xf32>
// BLOCK-LABEL: func.func @short_rows
// BLOCK-NOT: gpu.launch
// BLOCK: scf.parallel
// SHORT-LABEL: func.func @short_rows
// SHORT: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
func.func @row_sums(%x: memref<6x100xf32>, %out: memref<6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i) = (%c0) to (%c6) step (%c1) {
    scf.for %k = %c0 to %c100 step %c1 {
      %v = memref.load %x[%i, %k] : memref<6x100xf32>
      %acc = memref.load %out[%i] : memref<6xf32>
      %s = arith.addf %acc, %v : f32
      memref.store %s, %out[%i] : memref<6xf32>
    }
    scf.reduce
  }
  return
}

func.func @short_rows(%x: memref<6x10xf32>, %out: memref<6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  scf.parallel (%i) = (%c0) to (%c6) step (%c1) {
    scf.for %k = %c0 to %c10 step %c1 {
      %v = memref.load %x[%i, %k] : memref<6x10xf32>
      %acc = memref.load %out[%i] : memref<6xf32>
      %s = arith.addf %acc, %v : f32
      memref.store %s, %out[%i] : memref<6xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A reduction over the middle axis of [4, 5, 300]: the parallel loop over the
// last axis moves out of the sequential loop over the reduced one.
// RUN: rlx-opt %s --split-input-file --rlx-gpu-hoist-parallel-loops | FileCheck %s --check-prefix=HOIST
// HOIST-LABEL: func.func @middle_axis
// HOIST-SAME: (%[[X:.*]]: memref<4x5x300xf32>, %[[OUT:.*]]: memref<4x300xf32>)
// HOIST: scf.parallel (%[[B:.*]], %[[N:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}}) {
// HOIST-NEXT: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// HOIST-NEXT: %[[V:.*]] = memref.load %[[X]][%[[B]], %[[R]], %[[N]]]
// HOIST-NEXT: %[[ACC:.*]] = memref.load %[[OUT]][%[[B]], %[[N]]]
// HOIST-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// HOIST-NEXT: memref.store %[[S]], %[[OUT]][%[[B]], %[[N]]]
// HOIST-NEXT: }
// HOIST-NEXT: scf.reduce
// HOIST-NOT: scf.parallel
func.func @middle_axis(%x: memref<4x5x300xf32>, %out: memref<4x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c300 = arith.constant 300 : index
  scf.parallel (%b) = (%c0) to (%c4) step (%c1) {
    scf.for %r = %c0 to %c5 step %c1 {
      scf.parallel (%n) = (%c0) to (%c300) step (%c1) {
        %v = memref.load %x[%b, %r, %n] : memref<4x5x300xf32>
        %acc = memref.load %out[%b, %n] : memref<4x300xf32>
        %s = arith.addf %acc, %v : f32
        memref.store %s, %out[%b, %n] : memref<4x300xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// -----

// Element code left in the host function (ops on scalars have no loops; loops of
// one iteration are folded away): each run of loads, stores and arithmetic goes
// in a loop of one iteration, in place; constants before it stay outside, and a
// run whose value is used after it is left alone (rlx-gpu-check-mapping reports it).
// RUN: rlx-opt %s --split-input-file --rlx-gpu-straight-line-kernels | FileCheck %s --check-prefix=STRAIGHT
// HOIST-LABEL: func.func @straight_line
// STRAIGHT-LABEL: func.func @straight_line
// STRAIGHT-SAME: (%[[X:.*]]: memref<f32>, %[[Y:.*]]: memref<1xf32>, %[[V:.*]]: memref<4xf32>)
// STRAIGHT: %[[TWO:.*]] = arith.constant 2.0
// STRAIGHT: scf.parallel (%{{.*}}) = (%[[ZERO:.*]]) to (%[[ONE:.*]]) step (%[[ONE]]) {
// STRAIGHT-NEXT: %[[A:.*]] = memref.load %[[X]][] : memref<f32>
// STRAIGHT-NEXT: %[[B:.*]] = arith.mulf %[[A]], %[[TWO]] : f32
// STRAIGHT-NEXT: memref.store %[[B]], %[[Y]][%{{.*}}] : memref<1xf32>
// STRAIGHT-NEXT: scf.reduce
// STRAIGHT-NEXT: }
// STRAIGHT-NEXT: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// STRAIGHT-NEXT: memref.store %[[TWO]], %[[V]][%[[I]]]
// STRAIGHT: }
// STRAIGHT-NEXT: %[[KEPT:.*]] = memref.load %[[X]][] : memref<f32>
// STRAIGHT-NEXT: return %[[KEPT]] : f32
func.func @straight_line(%x: memref<f32>, %y: memref<1xf32>, %v: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %a = memref.load %x[] : memref<f32>
  %b = arith.mulf %a, %two : f32
  memref.store %b, %y[%c0] : memref<1xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %two, %v[%i] : memref<4xf32>
    scf.reduce
  }
  %kept = memref.load %x[] : memref<f32>
  return %kept : f32
}

// -----

// A view in the run (the arena's slot of a scalar) stays on the host, before the loop.
// STRAIGHT-LABEL: func.func @with_view
// STRAIGHT-SAME: (%[[ARENA:.*]]: memref<64xi8>, %[[X:.*]]: memref<1x1xf32>, %[[OUT:.*]]: memref<1x1xf32>)
// STRAIGHT: %[[SLOT:.*]] = memref.view %[[ARENA]]
// STRAIGHT-NEXT: %{{.*}} = arith.constant 0 : index
// STRAIGHT-NEXT: %{{.*}} = arith.constant 1 : index
// STRAIGHT-NEXT: scf.parallel
// STRAIGHT-NEXT: memref.load %[[X]]
// STRAIGHT-NEXT: arith.addf
// STRAIGHT-NEXT: memref.store %{{.*}}, %[[SLOT]]
// STRAIGHT-NEXT: memref.load %[[SLOT]]
// STRAIGHT-NEXT: memref.store %{{.*}}, %[[OUT]]
// STRAIGHT-NEXT: scf.reduce
func.func @with_view(%arena: memref<64xi8>, %x: memref<1x1xf32>, %out: memref<1x1xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.load %x[%c0, %c0] : memref<1x1xf32>
  %b = arith.addf %a, %one : f32
  %slot = memref.view %arena[%c0][] : memref<64xi8> to memref<1x1xf32>
  memref.store %b, %slot[%c0, %c0] : memref<1x1xf32>
  %c = memref.load %slot[%c0, %c0] : memref<1x1xf32>
  memref.store %c, %out[%c0, %c0] : memref<1x1xf32>
  return
}
