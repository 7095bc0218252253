// rlx-approximate-math replaces f32 math.exp / math.exp2 / math.log / math.tanh / math.erf,
// scalar or vector, by arith + math.fma code (no calls); other types stay.
// RUN: rlx-opt %s --split-input-file --rlx-approximate-math | FileCheck %s --implicit-check-not=math.tanh --implicit-check-not=math.erf --implicit-check-not=math.log --implicit-check-not=math.exp

// exp: clamp, n = round(x log2e) by the 1.5*2^23 trick, r = x - n ln2 (two fma),
// polynomial in fma, 2^n as two exponent-field bitcasts, NaN passed through.
// CHECK-LABEL: func.func @exp_scalar(
// CHECK-SAME: %[[X:[^:]*]]: f32)
// CHECK: %[[LO:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: %[[C:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK: %[[T:.*]] = math.fma %[[C]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[N:.*]] = arith.subf %[[T]], %{{.*}} : f32
// CHECK: arith.bitcast %[[T]] : f32 to i32
// CHECK: %[[R1:.*]] = math.fma %[[N]], %{{.*}}, %[[C]] : f32
// CHECK: %[[R:.*]] = math.fma %[[N]], %{{.*}}, %[[R1]] : f32
// CHECK-COUNT-5: math.fma %{{.*}}, %[[R]], %{{.*}} : f32
// CHECK: arith.shli %{{.*}} : i32
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[Y:.*]] = arith.select %[[NAN]], %[[X]], %{{.*}} : f32
// CHECK: return %[[Y]] : f32
func.func @exp_scalar(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// exp marked rlx.nonpositive (x <= 0 or NaN: a softmax's x - max, the tiled attention's): the
// lower clamp alone, as a select that passes NaN through (no uno test), and 2^n as one
// exponent-field bitcast (n + 64) times the constant 2^-64: no shrsi splitting n in two.
// CHECK-LABEL: func.func @exp_of_nonpositive(
// CHECK-SAME: %[[X:[^:]*]]: vector<16xf32>)
// CHECK-NOT: arith.minimumf
// CHECK: %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[LOW:.*]] : vector<16xf32>
// CHECK: %[[C:.*]] = arith.select %[[BELOW]], %[[LOW]], %[[X]] : vector<16xi1>, vector<16xf32>
// CHECK: %[[T:.*]] = math.fma %[[C]], %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: %[[N:.*]] = arith.subf %[[T]], %{{.*}} : vector<16xf32>
// CHECK: %[[R1:.*]] = math.fma %[[N]], %{{.*}}, %[[C]] : vector<16xf32>
// CHECK: %[[R:.*]] = math.fma %[[N]], %{{.*}}, %[[R1]] : vector<16xf32>
// CHECK-COUNT-5: math.fma %{{.*}}, %[[R]], %{{.*}} : vector<16xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[T]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[FIELD:.*]] = arith.shli %[[BITS]], %{{.*}} : vector<16xi32>
// CHECK: %[[BIASED:.*]] = arith.addi %[[FIELD]], %{{.*}} : vector<16xi32>
// CHECK: %[[POWER:.*]] = arith.bitcast %[[BIASED]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[POWER]] : vector<16xf32>
// CHECK: %[[Y:.*]] = arith.mulf %[[SCALED]], %{{.*}} : vector<16xf32>
// CHECK-NOT: arith.cmpf uno
// CHECK: return %[[Y]] : vector<16xf32>
func.func @exp_of_nonpositive(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp %x {rlx.nonpositive} : vector<16xf32>
  return %0 : vector<16xf32>
}

// -----

// exp2: clamp, n = round(x) by the magic sum (which also holds n + 191 in its low bits),
// r = x - n exactly (one subf, no ln2), Horner down to the constant 1, 2^n as two factors, NaN
// passed through.
// CHECK-LABEL: func.func @exp2_scalar(
// CHECK-SAME: %[[X:[^:]*]]: f32)
// CHECK: %[[LO:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: %[[C:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK: %[[T:.*]] = arith.addf %[[C]], %{{.*}} : f32
// CHECK: %[[N:.*]] = arith.subf %[[T]], %{{.*}} : f32
// CHECK: %[[R:.*]] = arith.subf %[[C]], %[[N]] : f32
// CHECK-COUNT-6: math.fma %{{.*}}, %[[R]], %{{.*}} : f32
// CHECK: arith.shrsi
// CHECK: arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: return
func.func @exp2_scalar(%x: f32) -> f32 {
  %0 = math.exp2 %x : f32
  return %0 : f32
}

// -----

// exp2 marked rlx.nonpositive (the tiled attention's weights, log2 units): the lower clamp as a
// select passing NaN, the polynomial's coefficients scaled by 2^-64, and 2^(n + 64) straight
// from the magic sum's bits shifted by 23: one multiply, 12 ops in all.
// CHECK-LABEL: func.func @exp2_of_nonpositive(
// CHECK-SAME: %[[X:[^:]*]]: vector<16xf32>)
// CHECK-NOT: arith.minimumf
// CHECK: %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[LOW:.*]] : vector<16xf32>
// CHECK: %[[C:.*]] = arith.select %[[BELOW]], %[[LOW]], %[[X]] : vector<16xi1>, vector<16xf32>
// CHECK: %[[T:.*]] = arith.addf %[[C]], %{{.*}} : vector<16xf32>
// CHECK: %[[N:.*]] = arith.subf %[[T]], %{{.*}} : vector<16xf32>
// CHECK: %[[R:.*]] = arith.subf %[[C]], %[[N]] : vector<16xf32>
// CHECK-COUNT-6: math.fma %{{.*}}, %[[R]], %{{.*}} : vector<16xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[T]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[FIELD:.*]] = arith.shli %[[BITS]], %{{.*}} : vector<16xi32>
// CHECK: %[[POWER:.*]] = arith.bitcast %[[FIELD]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[Y:.*]] = arith.mulf %{{.*}}, %[[POWER]] : vector<16xf32>
// CHECK-NOT: arith.cmpf uno
// CHECK-NOT: arith.addi
// CHECK: return %[[Y]] : vector<16xf32>
func.func @exp2_of_nonpositive(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp2 %x {rlx.nonpositive} : vector<16xf32>
  return %0 : vector<16xf32>
}

// -----

// Vectors get splat constants and the same code on vector<8xf32> (and vector<8xi32>).
// CHECK-LABEL: func.func @tanh_vector(
// CHECK-SAME: %[[X:[^:]*]]: vector<8xf32>)
// CHECK: arith.constant dense<-7.90531111> : vector<8xf32>
// CHECK: %[[X2:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-COUNT-8: math.fma %{{.*}}, %[[X2]], %{{.*}} : vector<8xf32>
// CHECK: %[[Q:.*]] = math.fma %{{.*}}, %[[X2]], %{{.*}} : vector<8xf32>
// CHECK: %[[RATIO:.*]] = arith.divf %{{.*}}, %[[Q]] : vector<8xf32>
// CHECK: %[[ABS:.*]] = math.absf %[[X]] : vector<8xf32>
// CHECK: %[[SAT:.*]] = arith.cmpf ogt, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: %[[ONE:.*]] = math.copysign %{{.*}}, %[[X]] : vector<8xf32>
// CHECK: %[[V:.*]] = arith.select %[[SAT]], %[[ONE]], %[[RATIO]] : vector<8xi1>, vector<8xf32>
// CHECK: %[[TINY:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK: %[[Y:.*]] = arith.select %[[TINY]], %[[X]], %[[V]] : vector<8xi1>, vector<8xf32>
// CHECK: return %[[Y]] : vector<8xf32>
func.func @tanh_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.tanh %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// -----

// Inside linalg.generic bodies, where the MIR lowerings put them.
// CHECK-LABEL: func.func @erf_log_in_generic(
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN:[^:]*]]: f32, %{{.*}}: f32):
// CHECK: arith.divf
// CHECK: %[[ERF:.*]] = arith.minimumf %{{.*}} : f32
// CHECK: arith.bitcast %[[ERF]] : f32 to i32
// CHECK: arith.shrui
// CHECK: math.fma
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[ERF]], %[[ERF]] : f32
// CHECK: %[[LOG:.*]] = arith.select %[[NAN]], %[[ERF]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[LOG]] : f32
#id = affine_map<(d0) -> (d0)>
func.func @erf_log_in_generic(%x: tensor<16xf32>) -> tensor<16xf32> {
  %init = tensor.empty() : tensor<16xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.erf %in : f32
    %l = math.log %e : f32
    linalg.yield %l : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// f64, f16 and scalable vectors are left to the LLVM lowering, as are other math ops.
// CHECK-LABEL: func.func @untouched(
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.tanh %{{.*}} : f16
// CHECK: math.erf %{{.*}} : vector<[4]xf32>
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: math.powf %{{.*}} : f32
func.func @untouched(%a: f64, %b: f16, %c: vector<[4]xf32>, %d: f32) -> (f64, f16, vector<[4]xf32>, f32, f32) {
  %0 = math.exp %a : f64
  %1 = math.tanh %b : f16
  %2 = math.erf %c : vector<[4]xf32>
  %3 = math.sqrt %d : f32
  %4 = math.powf %d, %d : f32
  return %0, %1, %2, %3, %4 : f64, f16, vector<[4]xf32>, f32, f32
}
