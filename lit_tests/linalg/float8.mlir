// rlx.cast to and from the 8-bit float f8E4M3FN lowers to integer arithmetic on the bits (LLVM
// has no 8-bit float): from f32, the magnitude rebiased and rounded to 3 mantissa bits (ties to
// even: + 0x7FFFF + the kept last bit, >> 20), clamped at 0x7F (NaN: from 464 up, infinity),
// below 2^-6 (0x3C800000) the subnormal code roundeven(|x| * 512), a NaN input NaN, the sign
// bit or-ed in, the byte bitcast to f8E4M3FN; to f32, exponent + 120 and mantissa << 20 (or
// mantissa * 2^-9 when the exponent is 0), NaN for 0x7F, the sign moved to bit 31.  After the
// whole lowering to LLVM no f8 type remains (the bytes are i8).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM --implicit-check-not=f8E4M3FN

// CHECK-LABEL: func.func @to_f8
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f8E4M3FN):
// CHECK: %[[BITS:.*]] = arith.bitcast %[[IN]] : f32 to i32
// CHECK: %[[MAG:.*]] = arith.andi %[[BITS]], %c2147483647_i32
// CHECK: %[[REBIASED:.*]] = arith.subi %[[MAG]], %c1006632960_i32
// CHECK: arith.addi %[[REBIASED]], %c524287_i32
// CHECK: %[[NORMAL:.*]] = arith.minui %{{.*}}, %c127_i32
// CHECK: %[[SCALED:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[ROUNDED:.*]] = math.roundeven %[[SCALED]] : f32
// CHECK: %[[SUBNORMAL:.*]] = arith.fptoui %[[ROUNDED]] : f32 to i32
// CHECK: %[[SMALL:.*]] = arith.cmpi ult, %[[MAG]], %c1015021568_i32
// CHECK: %[[CODE:.*]] = arith.select %[[SMALL]], %[[SUBNORMAL]], %[[NORMAL]]
// CHECK: %[[NAN:.*]] = arith.cmpi ugt, %[[MAG]], %c2139095040_i32
// CHECK: arith.select %[[NAN]], %{{.*}}, %[[CODE]]
// CHECK: %[[BYTE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[F8:.*]] = arith.bitcast %[[BYTE]] : i8 to f8E4M3FN
// CHECK: linalg.yield %[[F8]] : f8E4M3FN
// LLVM-LABEL: llvm.func @to_f8
// LLVM: llvm.trunc %{{.*}} : i32 to i8
func.func @to_f8(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  %0 = "rlx.cast"(%x) : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// CHECK-LABEL: func.func @from_f8
// CHECK: ^bb0(%[[IN:.*]]: f8E4M3FN, %{{.*}}: f32):
// CHECK: %[[BYTE:.*]] = arith.bitcast %[[IN]] : f8E4M3FN to i8
// CHECK: %[[BITS:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK: arith.addi %{{.*}}, %c120_i32 : i32
// CHECK: %[[SUB:.*]] = arith.uitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf %[[SUB]], %{{.*}} : f32
// CHECK: arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK: arith.select
// CHECK: arith.select
// CHECK: %[[F32:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: linalg.yield %[[F32]] : f32
// LLVM-LABEL: llvm.func @from_f8
// LLVM: llvm.zext %{{.*}} : i8 to i32
func.func @from_f8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
  %0 = "rlx.cast"(%x) : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
