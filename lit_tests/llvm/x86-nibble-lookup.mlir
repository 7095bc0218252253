// rlx-x86-nibble-lookup (last in rlx-lower-to-llvm, on AVX-512 hosts; host=false here so the test
// does not depend on the machine): the f32 of the low 4 bits of 16 i32 lanes, written portably as
// uitofp (or sitofp) of `and(v, 15)`, becomes one vpermps (llvm.x86.avx512.permvar.sf.512) in the
// table 0.0 .. 15.0 indexed by v itself (vpermps reads only the low 4 bits of each index); the
// mask goes when nothing else reads it.  Anything else is left alone: another mask, another width.
// RUN: rlx-opt %s --rlx-x86-nibble-lookup=host=false | FileCheck %s

// CHECK-LABEL: llvm.func @low(
// CHECK-SAME:    %[[V:.*]]: vector<16xi32>
// CHECK:         %[[TABLE:.*]] = llvm.mlir.constant(dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01, 1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01]> : vector<16xf32>) : vector<16xf32>
// CHECK-NEXT:    %[[CODES:.*]] = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%[[TABLE]], %[[V]]) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
// CHECK-NOT:     llvm.and
// CHECK-NOT:     llvm.uitofp
// CHECK:         llvm.return %[[CODES]]
llvm.func @low(%v: vector<16xi32>) -> vector<16xf32> {
  %m = llvm.mlir.constant(dense<15> : vector<16xi32>) : vector<16xi32>
  %a = llvm.and %v, %m : vector<16xi32>
  %f = llvm.uitofp %a : vector<16xi32> to vector<16xf32>
  llvm.return %f : vector<16xf32>
}

// A shifted word, the mask first, sitofp: the shift stays, the lookup takes its result.
// CHECK-LABEL: llvm.func @shifted(
// CHECK:         %[[S:.*]] = llvm.lshr
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%{{.*}}, %[[S]])
// CHECK-NOT:     llvm.sitofp
llvm.func @shifted(%v: vector<16xi32>) -> vector<16xf32> {
  %m = llvm.mlir.constant(dense<15> : vector<16xi32>) : vector<16xi32>
  %four = llvm.mlir.constant(dense<4> : vector<16xi32>) : vector<16xi32>
  %s = llvm.lshr %v, %four : vector<16xi32>
  %a = llvm.and %m, %s : vector<16xi32>
  %f = llvm.sitofp %a : vector<16xi32> to vector<16xf32>
  llvm.return %f : vector<16xf32>
}

// The masked value has another reader: the mask stays for it.
// CHECK-LABEL: llvm.func @shared(
// CHECK:         %[[A:.*]] = llvm.and
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"
// CHECK:         llvm.return %[[A]]
llvm.func @shared(%v: vector<16xi32>, %p: !llvm.ptr) -> vector<16xi32> {
  %m = llvm.mlir.constant(dense<15> : vector<16xi32>) : vector<16xi32>
  %a = llvm.and %v, %m : vector<16xi32>
  %f = llvm.uitofp %a : vector<16xi32> to vector<16xf32>
  llvm.store %f, %p : vector<16xf32>, !llvm.ptr
  llvm.return %a : vector<16xi32>
}

// Another mask (31: 5 bits) or another width (8 lanes): left alone.
// CHECK-LABEL: llvm.func @other(
// CHECK-NOT:     permvar
// CHECK:         llvm.uitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK:         llvm.uitofp %{{.*}} : vector<8xi32> to vector<8xf32>
llvm.func @other(%v: vector<16xi32>, %w: vector<8xi32>) -> vector<8xf32> {
  %m31 = llvm.mlir.constant(dense<31> : vector<16xi32>) : vector<16xi32>
  %a = llvm.and %v, %m31 : vector<16xi32>
  %f = llvm.uitofp %a : vector<16xi32> to vector<16xf32>
  %m = llvm.mlir.constant(dense<15> : vector<8xi32>) : vector<8xi32>
  %b = llvm.and %w, %m : vector<8xi32>
  %g = llvm.uitofp %b : vector<8xi32> to vector<8xf32>
  llvm.return %g : vector<8xf32>
}
