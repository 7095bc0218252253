// A bf16 round trip through a transpose of 17 rows: LLVM vectorized the transposing copy into
// bf16 vectors of odd lengths (<65 x bfloat> loads and shuffles) that its x86 backend cannot
// legalize with AVX512-BF16, and aborted the process ("Do not know how to soft promote this
// operator's operand!"). rlx-lower-to-llvm now leaves no bf16 value for LLVM: the copy moves
// i16, the casts are integer arithmetic. Checked for an AVX512-BF16 target whatever the host.
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --implicit-check-not=fptrunc --implicit-check-not=fpext
// RUN: rlx-opt %s --rlx-lower-to-llvm | mlir-translate --mlir-to-llvmir \
// RUN:   | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f,+avx512bw,+avx512vl,+avx512bf16 -S \
// RUN:   | FileCheck %s --check-prefix=OPT --implicit-check-not=bfloat
// RUN: rlx-opt %s --rlx-lower-to-llvm | mlir-translate --mlir-to-llvmir \
// RUN:   | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f,+avx512bw,+avx512vl,+avx512bf16 \
// RUN:   | llc -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f,+avx512bw,+avx512vl,+avx512bf16 -o /dev/null

// CHECK-LABEL: llvm.func @round_trip(
// CHECK:         llvm.trunc %{{.*}} : i32 to i16
// CHECK:         llvm.store %{{.*}} : i16, !llvm.ptr
// CHECK:         %[[BITS:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i16
// CHECK:         llvm.store %[[BITS]], %{{.*}} : i16, !llvm.ptr
// CHECK:         llvm.zext %{{.*}} : i16 to i32
// OPT-LABEL: define void @round_trip(
func.func @round_trip(%x: tensor<17x4xf32>) -> tensor<4x17xf32> {
  %0 = "rlx.cast"(%x) : (tensor<17x4xf32>) -> tensor<17x4xbf16>
  %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<17x4xbf16>) -> tensor<4x17xbf16>
  %2 = "rlx.cast"(%1) : (tensor<4x17xbf16>) -> tensor<4x17xf32>
  return %2 : tensor<4x17xf32>
}
