// rlx-split-functions: a function heavier than max-ops has its runs of result-less linalg ops
// and deallocs moved, in order, into private noinline functions called in their place. Values
// of the caller a run reads become arguments (the caller's arguments first); constants are copied in. Ops with results
// (allocations, constants) stay and cut runs; a function at or under max-ops is left whole.
// RUN: rlx-opt %s --rlx-split-functions='max-ops=6' | FileCheck %s

#map = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @main(
// CHECK-SAME:      %[[X:.*]]: memref<16xf32>, %[[Y:.*]]: memref<16xf32>)
// CHECK-NEXT:    %[[C:.*]] = arith.constant 2.0
// CHECK-NEXT:    %[[T:.*]] = memref.alloc()
// CHECK-NEXT:    call @main_part0(%[[X]], %[[T]]) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    call @main_part1(%[[Y]], %[[T]]) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    %[[U:.*]] = memref.alloc()
// CHECK-NEXT:    call @main_part2(%[[Y]], %[[U]]) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main_part2(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT:    linalg.copy ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main_part1(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>)
// CHECK-NEXT:    %[[K:.*]] = arith.constant 2.0
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[B]] : memref<16xf32>) outs(%[[A]] : memref<16xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[K]]
// CHECK:         memref.dealloc %[[B]]
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main_part0(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>)
// CHECK-NEXT:    %[[K:.*]] = arith.constant 2.0
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK:           arith.addf %{{.*}}, %[[K]]
// CHECK:         return
func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c = arith.constant 2.0 : f32
  %t = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : memref<16xf32>) outs(%t : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %0 = arith.addf %a, %c : f32
    %1 = arith.negf %0 : f32
    %2 = arith.negf %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%t : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %t : memref<16xf32>
  %u = memref.alloc() : memref<16xf32>
  linalg.copy ins(%y : memref<16xf32>) outs(%u : memref<16xf32>)
  memref.dealloc %u : memref<16xf32>
  return
}

// A function of at most max-ops ops is left as it is.
// CHECK-LABEL: func.func @small(
// CHECK-NEXT:    linalg.copy
// CHECK-NEXT:    return
func.func @small(%x: memref<16xf32>, %y: memref<16xf32>) {
  linalg.copy ins(%x : memref<16xf32>) outs(%y : memref<16xf32>)
  return
}
