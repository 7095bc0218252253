// rlx-split-functions{loops}: result-less scf loops (a GEMM kernel's or the tiled attention's loop
// nest, on one thread) move into functions of their own too, so that with max-ops=1 every loop nest
// is a symbol a profiler names.  Without the option a loop stays in its function and cuts the runs
// of linalg ops around it; a loop with results (a carried value) stays either way.
// RUN: rlx-opt %s --rlx-split-functions='max-ops=1 loops=true' | FileCheck %s --check-prefix=LOOPS
// RUN: rlx-opt %s --rlx-split-functions='max-ops=1' | FileCheck %s --check-prefix=PLAIN

// LOOPS-LABEL: func.func @main(
// LOOPS-SAME:      %[[X:.*]]: memref<16xf32>, %[[Y:.*]]: memref<16xf32>) -> f32
// LOOPS-DAG:     call @main_part0(%[[X]], %[[Y]])
// LOOPS-DAG:     call @main_part1(%[[X]], %[[Y]])
// LOOPS:         %[[S:.*]] = scf.for
// LOOPS:         return %[[S]]
// LOOPS-LABEL: func.func private @main_part1(
// LOOPS-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>)
// LOOPS-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// LOOPS-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// LOOPS:         scf.for %[[I:.*]] = %[[C0]]
// LOOPS:           memref.load %[[A]][%[[I]]]
// LOOPS:           memref.store %{{.*}}, %[[B]][%[[I]]]
// LOOPS:         return
// LOOPS-LABEL: func.func private @main_part0(
// LOOPS-NEXT:    linalg.copy

// PLAIN-LABEL: func.func @main(
// PLAIN:         call @main_part0(
// PLAIN:         scf.for
// PLAIN:           memref.load
// PLAIN:         scf.for
// PLAIN:         return
// PLAIN-NOT:     func.func private @main_part1
func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  linalg.copy ins(%x : memref<16xf32>) outs(%y : memref<16xf32>)
  scf.for %i = %c0 to %c16 step %c1 {
    %a = memref.load %x[%i] : memref<16xf32>
    %b = arith.addf %a, %a : f32
    memref.store %b, %y[%i] : memref<16xf32>
  }
  %s = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %a = memref.load %y[%i] : memref<16xf32>
    %n = arith.addf %acc, %a : f32
    scf.yield %n : f32
  }
  return %s : f32
}
