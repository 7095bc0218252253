// rlx-fuse-elementwise, stored producers: an elementwise result that the function returns (it
// is materialised in its destination, here a tied argument) and that one op reads is fused
// into that op as an extra result of one multi-result linalg.generic, which writes it to the
// destination and uses it. An AdamW update (m, v, then p from m and v) is one loop nest
// producing p, m and v, each written in its own argument's buffer: no allocation, no copy,
// with 1 and with 2 threads (one parallel loop). Not fused: a stored value read by two ops.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir{fuse-elementwise},rlx-lir-to-linalg{caller-arena=true},inline,rlx-fuse-elementwise)' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1})' | FileCheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=2})' | FileCheck %s --check-prefix=OMP

// CHECK-LABEL: func.func @adamw(
// CHECK-SAME: %[[P:[^:]*]]: tensor<256x512xf32> {{.*}}, %[[G:[^:]*]]: tensor<256x512xf32> {{.*}}, %[[M:[^:]*]]: tensor<256x512xf32> {{.*}}, %[[V:[^:]*]]: tensor<256x512xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[U:.*]]:3 = linalg.generic
// CHECK-SAME: ins(%[[P]], {{.*}}, %[[M]], {{.*}}, %[[G]], {{.*}}, %[[V]], {{.*}}) outs(
// CHECK: ^bb0(
// CHECK: math.sqrt
// CHECK: %[[NEWP:.*]] = arith.subf
// CHECK: linalg.yield %[[NEWP]], %{{.*}}, %{{.*}} : f32, f32, f32
// CHECK-NOT: linalg.generic
// CHECK: %[[RV:.*]] = bufferization.materialize_in_destination %[[U]]#2 in %[[V]]
// CHECK: %[[RM:.*]] = bufferization.materialize_in_destination %[[U]]#1 in %[[M]]
// CHECK: %[[RP:.*]] = bufferization.materialize_in_destination %[[U]]#0 in %[[P]]
// CHECK: return %[[RP]], %[[RM]], %[[RV]]
// LLVM-LABEL: llvm.func @adamw(
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: llvm.intr.memcpy
// LLVM: llvm.return
// OMP-LABEL: llvm.func @adamw(
// OMP-NOT: llvm.call @malloc
// OMP-NOT: llvm.intr.memcpy
// OMP: omp.wsloop
// OMP-NOT: omp.wsloop
// OMP-NOT: llvm.call @malloc
// OMP-NOT: llvm.intr.memcpy
// OMP: llvm.return
func.func @adamw(%p: tensor<256x512xf32> {rlx.name = "p"}, %g: tensor<256x512xf32> {rlx.name = "g"},
                 %m: tensor<256x512xf32> {rlx.name = "m"}, %v: tensor<256x512xf32> {rlx.name = "v"})
    -> (tensor<256x512xf32> {rlx.tied = 0 : i64}, tensor<256x512xf32> {rlx.tied = 2 : i64},
        tensor<256x512xf32> {rlx.tied = 3 : i64}) {
  %b1 = "rlx.constant"() {value = dense<0.9> : tensor<f32>} : () -> tensor<f32>
  %c1 = "rlx.constant"() {value = dense<0.1> : tensor<f32>} : () -> tensor<f32>
  %b2 = "rlx.constant"() {value = dense<0.999> : tensor<f32>} : () -> tensor<f32>
  %c2 = "rlx.constant"() {value = dense<0.001> : tensor<f32>} : () -> tensor<f32>
  %eps = "rlx.constant"() {value = dense<1.0e-8> : tensor<f32>} : () -> tensor<f32>
  %lr = "rlx.constant"() {value = dense<0.001> : tensor<f32>} : () -> tensor<f32>
  %0 = "rlx.mul"(%m, %b1) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %1 = "rlx.mul"(%g, %c1) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %newm = "rlx.add"(%0, %1) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %2 = "rlx.mul"(%v, %b2) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %3 = "rlx.mul"(%g, %g) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %4 = "rlx.mul"(%3, %c2) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %newv = "rlx.add"(%2, %4) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %5 = "rlx.sqrt"(%newv) : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %6 = "rlx.add"(%5, %eps) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %7 = "rlx.div"(%newm, %6) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %8 = "rlx.mul"(%7, %lr) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %newp = "rlx.sub"(%p, %8) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %newp, %newm, %newv : tensor<256x512xf32>, tensor<256x512xf32>, tensor<256x512xf32>
}

// -----

// CHECK-LABEL: func.func @read_twice(
// CHECK: %[[V:.*]] = linalg.generic
// CHECK: %[[SAVED:.*]] = bufferization.materialize_in_destination %[[V]]
// CHECK: linalg.generic {{.*}} ins({{.*}}%[[SAVED]]
// CHECK: linalg.generic {{.*}} ins({{.*}}%[[SAVED]]
func.func @read_twice(%p: tensor<64xf32> {rlx.name = "p"}, %q: tensor<64xf32> {rlx.name = "q"},
                      %v: tensor<64xf32> {rlx.name = "v"}, %g: tensor<64xf32> {rlx.name = "g"})
    -> (tensor<64xf32> {rlx.tied = 0 : i64}, tensor<64xf32> {rlx.tied = 1 : i64}, tensor<64xf32> {rlx.tied = 2 : i64}) {
  %0 = "rlx.add"(%v, %g) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %1 = "rlx.sub"(%p, %0) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %2 = "rlx.sub"(%q, %0) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %1, %2, %0 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// SGD with momentum: the new velocity is stored and read by the parameter's update: one loop.
// CHECK-LABEL: func.func @sgd(
// CHECK-SAME: %[[P:[^:]*]]: tensor<256x512xf32> {{.*}}, %[[V:[^:]*]]: tensor<256x512xf32> {{.*}}, %[[G:[^:]*]]: tensor<256x512xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[U:.*]]:2 = linalg.generic
// CHECK: %[[NEWV:.*]] = arith.addf
// CHECK: %[[NEWP:.*]] = arith.subf
// CHECK: linalg.yield %[[NEWP]], %[[NEWV]] : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: %[[RV:.*]] = bufferization.materialize_in_destination %[[U]]#1 in %[[V]]
// CHECK: %[[RP:.*]] = bufferization.materialize_in_destination %[[U]]#0 in %[[P]]
// CHECK: return %[[RP]], %[[RV]]
// LLVM-LABEL: llvm.func @sgd(
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: llvm.intr.memcpy
// LLVM: llvm.return
// OMP-LABEL: llvm.func @sgd(
// OMP-NOT: llvm.call @malloc
// OMP-NOT: llvm.intr.memcpy
// OMP: omp.wsloop
// OMP-NOT: omp.wsloop
// OMP-NOT: llvm.call @malloc
// OMP-NOT: llvm.intr.memcpy
// OMP: llvm.return
func.func @sgd(%p: tensor<256x512xf32> {rlx.name = "p"}, %v: tensor<256x512xf32> {rlx.name = "v"}, %g: tensor<256x512xf32> {rlx.name = "g"})
    -> (tensor<256x512xf32> {rlx.tied = 0 : i64}, tensor<256x512xf32> {rlx.tied = 1 : i64}) {
  %a = "rlx.constant"() {value = dense<0.9> : tensor<f32>} : () -> tensor<f32>
  %lr = "rlx.constant"() {value = dense<0.1> : tensor<f32>} : () -> tensor<f32>
  %0 = "rlx.mul"(%v, %a) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %newv = "rlx.add"(%0, %g) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %1 = "rlx.mul"(%newv, %lr) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %newp = "rlx.sub"(%p, %1) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %newp, %newv : tensor<256x512xf32>, tensor<256x512xf32>
}

// -----

// Not fused: a stored value read by a reduction (argmax over its only axis), whose loop would
// write the extra result at every step of the reduction.
// CHECK-LABEL: func.func @read_by_reduction(
// CHECK: %[[V:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: %[[SAVED:.*]] = bufferization.materialize_in_destination %[[V]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[SAVED]]
func.func @read_by_reduction(%a: tensor<3xf32> {rlx.name = "a"}, %s: tensor<3xf32> {rlx.name = "s"})
    -> (tensor<i64>, tensor<3xf32> {rlx.tied = 1 : i64}) {
  %0 = "rlx.add"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "rlx.argmax"(%0) {axis = -1 : i64, keep_dim = false} : (tensor<3xf32>) -> tensor<i64>
  return %1, %0 : tensor<i64>, tensor<3xf32>
}
