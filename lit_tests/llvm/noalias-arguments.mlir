// rlx-noalias-arguments: a memref argument of a private leaf function is marked noalias (the
// LLVM position of its aligned pointer in rlx.noalias_pointers: a rank-1 memref is 5 LLVM
// arguments, its aligned pointer the 2nd) when, at every call, no other argument that may
// overlap it is accessed with a write on either side, and the function does not free it.
// RUN: rlx-opt %s --rlx-noalias-arguments --split-input-file | FileCheck %s
// rlx-noalias-to-llvm puts llvm.noalias on those LLVM arguments after convert-func-to-llvm.
// RUN: rlx-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(rlx-noalias-arguments,convert-linalg-to-loops,finalize-memref-to-llvm,convert-scf-to-cf,convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts,rlx-noalias-to-llvm)' \
// RUN:   | FileCheck %s --check-prefix=LLVM

#map = affine_map<(d0) -> (d0)>

// Two allocations are distinct objects: the one read and the one written are both noalias.
// The caller's arguments may overlap one another (an output may be an input): %x read against
// %y written gets nothing, but against the allocations %x is noalias where %y is not passed.
// CHECK-LABEL: func.func private @allocs(
// CHECK-SAME:      rlx.noalias_pointers = array<i64: 1, 6>
// CHECK-LABEL: func.func private @arguments_read_and_written(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @argument_and_alloc(
// CHECK-SAME:      rlx.noalias_pointers = array<i64: 1, 6>
// LLVM-LABEL: llvm.func @allocs(
// LLVM-SAME:      %arg0: !llvm.ptr, %arg1: !llvm.ptr {llvm.noalias}, %arg2: i64,
// LLVM-SAME:      %arg5: !llvm.ptr, %arg6: !llvm.ptr {llvm.noalias}, %arg7: i64,
// LLVM-NOT:   rlx.noalias_pointers
// LLVM-LABEL: llvm.func @arguments_read_and_written(
// LLVM-NOT:       llvm.noalias
// LLVM-LABEL: llvm.func @argument_and_alloc(
func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  call @allocs(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  call @arguments_read_and_written(%x, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @argument_and_alloc(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  return
}
func.func private @allocs(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @arguments_read_and_written(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @argument_and_alloc(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// Views of one arena: disjoint constant byte ranges never overlap; a slot reused (the same bytes)
// or a view of a view (its range not known) may. Only reads on both sides need no distinction.
// CHECK-LABEL: func.func private @disjoint_slots(
// CHECK-SAME:      rlx.noalias_pointers = array<i64: 1, 6>
// CHECK-LABEL: func.func private @reused_slot(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @subview_of_slot(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @both_read(
// CHECK-SAME:      rlx.noalias_pointers = array<i64: 1, 6, 11>
memref.global "private" @arena : memref<256xi8> = uninitialized
func.func @views(%x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %arena = memref.get_global @arena : memref<256xi8>
  %s0 = memref.view %arena[%c0][] : memref<256xi8> to memref<16xf32>
  %s1 = memref.view %arena[%c64][] : memref<256xi8> to memref<16xf32>
  %s2 = memref.view %arena[%c32][] : memref<256xi8> to memref<16xf32>
  call @disjoint_slots(%s0, %s1) : (memref<16xf32>, memref<16xf32>) -> ()
  call @reused_slot(%s0, %s2) : (memref<16xf32>, memref<16xf32>) -> ()
  %sub = memref.subview %s1[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  call @subview_of_slot(%sub, %s0) : (memref<8xf32, strided<[1]>>, memref<16xf32>) -> ()
  call @both_read(%s0, %s2, %x) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  return
}
func.func private @disjoint_slots(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @reused_slot(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @subview_of_slot(%in: memref<8xf32, strided<[1]>>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<8xf32, strided<[1]>>
  memref.store %v, %out[%c0] : memref<16xf32>
  return
}
func.func private @both_read(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %0 = memref.load %a[%c0] : memref<16xf32>
  %1 = memref.load %b[%c0] : memref<16xf32>
  %2 = memref.load %c[%c0] : memref<16xf32>
  return
}

// -----

// Not marked: an argument the function frees (its other, unfreed one is); a function that reaches
// other memory (a global, a call); a function noalias at one call but not at another; a public
// function (its callers are unknown); a function whose address is taken.
// CHECK-LABEL: func.func private @frees(
// CHECK-SAME:      rlx.noalias_pointers = array<i64: 1>
// CHECK-LABEL: func.func private @reads_a_global(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @calls(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @two_calls(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func @public(
// CHECK-NOT:       rlx.noalias_pointers
// CHECK-LABEL: func.func private @address_taken(
// CHECK-NOT:       rlx.noalias_pointers
memref.global "private" constant @table : memref<16xf32> = dense<1.0>
func.func @callers(%x: memref<16xf32>, %y: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  call @frees(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  call @reads_a_global(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @calls(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @two_calls(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @two_calls(%x, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @public(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  call @address_taken(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  %f = func.constant @address_taken : (memref<16xf32>, memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  return
}
func.func private @frees(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  memref.dealloc %out : memref<16xf32>
  return
}
func.func private @reads_a_global(%in: memref<16xf32>, %out: memref<16xf32>) {
  %t = memref.get_global @table : memref<16xf32>
  linalg.copy ins(%t : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @calls(%in: memref<16xf32>, %out: memref<16xf32>) {
  call @public(%in, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}
func.func private @two_calls(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func @public(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
func.func private @address_taken(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
