// rlx-bf16-as-i16 (the last step of rlx-lower-to-llvm): no bf16 value is left for LLVM.
// bf16 is loaded and stored as i16 (a copy is an i16 load and store), widened to f32 by
// shifting its bits into the high half, and narrowed from f32 by rounding to nearest even on
// the integer bits, with NaN kept quiet; scalars and vectors alike.
// RUN: rlx-opt %s --rlx-bf16-as-i16 | FileCheck %s --implicit-check-not=bf16

// CHECK-LABEL: llvm.func @copy(
// CHECK-NEXT:    %[[V:.*]] = llvm.load %arg0 {alignment = 2 : i64} : !llvm.ptr -> i16
// CHECK-NEXT:    llvm.store %[[V]], %arg1 {alignment = 2 : i64} : i16, !llvm.ptr
// CHECK-NEXT:    %[[W:.*]] = llvm.load %arg0 : !llvm.ptr -> vector<8xi16>
// CHECK-NEXT:    llvm.store %[[W]], %arg1 : vector<8xi16>, !llvm.ptr
// CHECK-NEXT:    llvm.return
llvm.func @copy(%from: !llvm.ptr, %to: !llvm.ptr) {
  %0 = llvm.load %from {alignment = 2 : i64} : !llvm.ptr -> bf16
  llvm.store %0, %to {alignment = 2 : i64} : bf16, !llvm.ptr
  %1 = llvm.load %from : !llvm.ptr -> vector<8xbf16>
  llvm.store %1, %to : vector<8xbf16>, !llvm.ptr
  llvm.return
}

// CHECK-LABEL: llvm.func @widen(
// CHECK-NEXT:    %[[BITS:.*]] = llvm.load %arg0 : !llvm.ptr -> vector<4xi16>
// CHECK-NEXT:    %[[WIDE:.*]] = llvm.zext %[[BITS]] : vector<4xi16> to vector<4xi32>
// CHECK-NEXT:    %[[SIXTEEN:.*]] = llvm.mlir.constant(dense<16> : vector<4xi32>) : vector<4xi32>
// CHECK-NEXT:    %[[HIGH:.*]] = llvm.shl %[[WIDE]], %[[SIXTEEN]] : vector<4xi32>
// CHECK-NEXT:    %[[F:.*]] = llvm.bitcast %[[HIGH]] : vector<4xi32> to vector<4xf32>
// CHECK-NEXT:    llvm.return %[[F]] : vector<4xf32>
llvm.func @widen(%from: !llvm.ptr) -> vector<4xf32> {
  %0 = llvm.load %from : !llvm.ptr -> vector<4xbf16>
  %1 = llvm.fpext %0 : vector<4xbf16> to vector<4xf32>
  llvm.return %1 : vector<4xf32>
}

// CHECK-LABEL: llvm.func @narrow(
// CHECK-NEXT:    %[[BITS:.*]] = llvm.bitcast %arg0 : f32 to i32
// CHECK-NEXT:    %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT:    %[[HIGH:.*]] = llvm.lshr %[[BITS]], %[[C16]] : i32
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    %[[ODD:.*]] = llvm.and %[[HIGH]], %[[C1]] : i32
// CHECK-NEXT:    %[[HALF:.*]] = llvm.mlir.constant(32767 : i32) : i32
// CHECK-NEXT:    %[[BIAS:.*]] = llvm.add %[[ODD]], %[[HALF]] : i32
// CHECK-NEXT:    %[[SUM:.*]] = llvm.add %[[BITS]], %[[BIAS]] : i32
// CHECK-NEXT:    %[[C16B:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT:    %[[ROUNDED:.*]] = llvm.lshr %[[SUM]], %[[C16B]] : i32
// CHECK-NEXT:    %[[ABSMASK:.*]] = llvm.mlir.constant(2147483647 : i32) : i32
// CHECK-NEXT:    %[[ABS:.*]] = llvm.and %[[BITS]], %[[ABSMASK]] : i32
// CHECK-NEXT:    %[[INF:.*]] = llvm.mlir.constant(2139095040 : i32) : i32
// CHECK-NEXT:    %[[NAN:.*]] = llvm.icmp "ugt" %[[ABS]], %[[INF]] : i32
// CHECK-NEXT:    %[[QUIETBIT:.*]] = llvm.mlir.constant(64 : i32) : i32
// CHECK-NEXT:    %[[QUIET:.*]] = llvm.or %[[HIGH]], %[[QUIETBIT]] : i32
// CHECK-NEXT:    %[[CHOSEN:.*]] = llvm.select %[[NAN]], %[[QUIET]], %[[ROUNDED]] : i1, i32
// CHECK-NEXT:    %[[RESULT:.*]] = llvm.trunc %[[CHOSEN]] : i32 to i16
// CHECK-NEXT:    llvm.store %[[RESULT]], %arg1 : i16, !llvm.ptr
// CHECK-NEXT:    llvm.return
llvm.func @narrow(%x: f32, %to: !llvm.ptr) {
  %0 = llvm.fptrunc %x : f32 to bf16
  llvm.store %0, %to : bf16, !llvm.ptr
  llvm.return
}

// Other floating-point types are left alone.
// CHECK-LABEL: llvm.func @f16(
// CHECK-NEXT:    llvm.load %arg0 : !llvm.ptr -> f16
// CHECK-NEXT:    llvm.fpext %{{.*}} : f16 to f32
llvm.func @f16(%from: !llvm.ptr) -> f32 {
  %0 = llvm.load %from : !llvm.ptr -> f16
  %1 = llvm.fpext %0 : f16 to f32
  llvm.return %1 : f32
}
