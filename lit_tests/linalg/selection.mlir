// rlx.topk and rlx.sample rank values by an i64 sort key per element,
// (ord(f32 bits) << 32) | (N - 1 - i), and select with integer reductions:
// topk is an scf.for over k ranks (largest key below the previous one, stored
// with tensor.insert_slice); sample finds its top-k / top-p cut-offs and its
// inverse-CDF draw by fixed-count bisections.  No sort anywhere.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s
// Every form, bf16 included (numpy has no bf16 for the pytest numerics), bufferizes and reaches the LLVM dialect.
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @topk
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>)
// The sort key: -0.0 made +0.0, negative bit patterns flipped, NaN above +inf, the index in the low half.
// CHECK: %[[KEYS:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<3x8xf32>) outs(%{{.*}} : tensor<3x8xi64>)
// CHECK: ^bb0(%[[V:.*]]: f32, %{{.*}}: i64):
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[POS:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[ISZERO:.*]] = arith.cmpf oeq, %[[V]], %[[ZERO:.*]] : f32
// CHECK: %[[Z:.*]] = arith.select %[[ISZERO]], %[[ZERO]], %[[V]] : f32
// CHECK: %[[BITS:.*]] = arith.bitcast %[[Z]] : f32 to i32
// CHECK: %[[FLIP:.*]] = arith.xori %[[BITS]], %{{.*}} : i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[BITS]], %{{.*}} : i32
// CHECK: %[[ORD:.*]] = arith.select %[[NEG]], %[[FLIP]], %[[BITS]] : i32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[Z]], %[[Z]] : f32
// CHECK: %[[ORD2:.*]] = arith.select %[[NAN]], %{{.*}}, %[[ORD]] : i32
// CHECK: %[[WIDE:.*]] = arith.extsi %[[ORD2]] : i32 to i64
// CHECK: %[[HIGH:.*]] = arith.shli %[[WIDE]], %{{.*}} : i64
// CHECK: %[[LAST:.*]] = arith.constant 7 : i64
// CHECK: %[[LOW:.*]] = arith.subi %[[LAST]], %[[POS]] : i64
// CHECK: %[[KEY:.*]] = arith.ori %[[HIGH]], %[[LOW]] : i64
// CHECK: linalg.yield %[[KEY]] : i64
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[J:.*]] = %{{.*}} to %[[C4]] step %{{.*}} iter_args(%[[CHOSEN:.*]] = %{{.*}}, %[[BOUND:.*]] = %{{.*}}) -> (tensor<3x4xi64>, tensor<3xi64>)
// CHECK: %[[BEST:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[KEYS]], %[[BOUND]] : tensor<3x8xi64>, tensor<3xi64>) outs(%{{.*}} : tensor<3xi64>)
// CHECK: ^bb0(%[[K:.*]]: i64, %[[B:.*]]: i64, %[[ACC:.*]]: i64):
// CHECK: %[[BELOW:.*]] = arith.cmpi slt, %[[K]], %[[B]] : i64
// CHECK: %[[MAX:.*]] = arith.maxsi %[[ACC]], %[[K]] : i64
// CHECK: arith.select %[[BELOW]], %[[MAX]], %[[ACC]] : i64
// CHECK: %[[COL:.*]] = tensor.insert_slice %[[BEST]] into %[[CHOSEN]][0, %[[J]]] [3, 1] [1, 1] : tensor<3xi64> into tensor<3x4xi64>
// CHECK: %[[NEXT:.*]] = linalg.copy {{.*}} ins(%[[BEST]] : tensor<3xi64>) outs(%[[BOUND]] : tensor<3xi64>)
// CHECK: scf.yield %[[COL]], %[[NEXT]]
// Keys decode to positions: N - 1 - (key & 0xFFFFFFFF).
// CHECK: linalg.generic {{.*}} ins(%[[LOOP]]#0 : tensor<3x4xi64>) outs(%{{.*}} : tensor<3x4xi64>)
// CHECK: %[[LAST:.*]] = arith.constant 7 : i64
// CHECK: %[[LOW32:.*]] = arith.constant 4294967295 : i64
// CHECK: %[[P:.*]] = arith.andi %{{.*}}, %[[LOW32]] : i64
// CHECK: arith.subi %[[LAST]], %[[P]] : i64
// CHECK-NOT: rlx.
// LLVM-LABEL: llvm.func @topk(
func.func @topk(%x: tensor<3x8xf32>) -> tensor<3x4xi64> {
  %0 = "rlx.topk"(%x) {k = 4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xi64>
  return %0 : tensor<3x4xi64>
}

// Rank 1: the per-row tensors are rank 0. f16 and bf16 widen exactly to f32 for the key.
// CHECK-LABEL: func.func @topk_rank1_bf16
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.for {{.*}} -> (tensor<2xi64>, tensor<i64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [1] [1] : tensor<i64> into tensor<2xi64>
// LLVM-LABEL: llvm.func @topk_rank1_bf16(
func.func @topk_rank1_bf16(%x: tensor<5xbf16>) -> tensor<2xi64> {
  %0 = "rlx.topk"(%x) {k = 2 : i64} : (tensor<5xbf16>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// temperature 0: greedy argmax, the largest key per row; nothing random, no loop.
// CHECK-LABEL: func.func @sample_greedy
// CHECK: %[[KEYS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x8xi64>)
// CHECK: %[[BEST:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[KEYS]] : tensor<2x8xi64>)
// CHECK: arith.maxsi
// CHECK: %[[IDS:.*]] = linalg.generic {{.*}} ins(%[[BEST]] : tensor<2xi64>)
// CHECK-NOT: scf.for
// CHECK-NOT: math.exp
// CHECK: return %[[IDS]]
func.func @sample_greedy(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  %0 = "rlx.sample"(%x) {top_k = 3 : i64, top_p = 0.5 : f32, temperature = 0.0 : f32, seed = 1 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// Plain sampling: softmax in f32, the SplitMix64 uniform per row, an index bisection
// of ceil(log2 8) = 3 steps over masked prefix sums; the greedy id replaces non-finite rows.
// CHECK-LABEL: func.func @sample_plain
// CHECK: arith.maxsi
// CHECK: %[[SCALED:.*]] = linalg.generic
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: %[[PROBS:.*]] = linalg.generic
// CHECK: arith.divf
// CHECK-NOT: arith.constant 64 : index
// CHECK: %[[U:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK: linalg.index 0 : index
// CHECK: arith.constant -7046029254386353131 : i64
// CHECK: arith.muli
// CHECK: arith.constant 30 : i64
// CHECK: arith.shrui
// CHECK: arith.constant -4658895280553007687 : i64
// CHECK: arith.constant 27 : i64
// CHECK: arith.shrui
// CHECK: arith.constant -7723592293110705685 : i64
// CHECK: arith.constant 31 : i64
// CHECK: arith.shrui
// CHECK: arith.constant 40 : i64
// CHECK: arith.shrui
// CHECK: arith.uitofp
// CHECK: arith.constant 5.96046448E-8 : f32
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C3]]
// CHECK: linalg.generic {{.*}} ins(%[[PROBS]], %{{.*}} : tensor<2x8xf32>, tensor<2xi64>)
// CHECK: arith.cmpi sle
// CHECK: arith.cmpf ule
// CHECK: scf.yield
// CHECK: arith.cmpf ord
// CHECK-NOT: rlx.
// LLVM-LABEL: llvm.func @sample_plain(
func.func @sample_plain(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// top_k and top_p: two 64-step bisections over the key range, counting keys,
// then summing the probability mass of the top-k tokens at or above the midpoint.
// CHECK-LABEL: func.func @sample_top_k_top_p_bf16
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: math.exp
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C64]] {{.*}} -> (tensor<4xi64>, tensor<4xi64>)
// CHECK: arith.cmpi sge
// CHECK: arith.constant 1 : i64
// CHECK: arith.addi
// CHECK: arith.cmpi sge
// CHECK: scf.yield
// CHECK: scf.for {{.*}} -> (tensor<4xi64>, tensor<4xi64>)
// CHECK: arith.cmpi sge
// CHECK: arith.addf
// CHECK: arith.cmpf oge
// CHECK: scf.yield
// CHECK: arith.constant 6 : index
// CHECK: scf.for
// LLVM-LABEL: llvm.func @sample_top_k_top_p_bf16(
// LLVM-NOT: scf.for
// LLVM-NOT: linalg.
func.func @sample_top_k_top_p_bf16(%x: tensor<4x40xbf16>) -> tensor<4xi64> {
  %0 = "rlx.sample"(%x) {top_k = 10 : i64, top_p = 0.9 : f32, temperature = 0.7 : f32, seed = 42 : i64} : (tensor<4x40xbf16>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
