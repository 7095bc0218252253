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

// -----

// A stored producer reading an arena slot (%g, read twice, so planned) fuses into its reader when
// no slot is written between them: the update reads %g's slot in the fused loop.
// CHECK-LABEL: func.func @momentum_of_computed_grad(
// CHECK: %[[VIEW:.*]] = memref.view
// CHECK: %[[G:.*]] = bufferization.to_tensor %[[VIEW]] restrict
// CHECK: linalg.generic {{.*}} ins(%[[G]] :
// CHECK: %[[U:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[G]] :
// CHECK: bufferization.materialize_in_destination %[[U]]#1 in
// CHECK: bufferization.materialize_in_destination %[[U]]#0 in
func.func @momentum_of_computed_grad(%p: tensor<64xf32> {rlx.name = "p"}, %m: tensor<64xf32> {rlx.name = "m"},
                                     %x: tensor<64xf32> {rlx.name = "x"})
    -> (tensor<64xf32> {rlx.tied = 0 : i64}, tensor<64xf32> {rlx.tied = 1 : i64}, tensor<64xf32>) {
  %g = "rlx.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %s = "rlx.neg"(%g) : (tensor<64xf32>) -> tensor<64xf32>
  %newm = "rlx.add"(%m, %g) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %newp = "rlx.sub"(%p, %newm) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %newp, %newm, %s : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// Not fused (the fuzzer's seed 125): the stored %w reads the mask's arena slot, which the plan,
// seeing that read at the where, gave to the add's result as well. Computed in the add's loop,
// the where would read mask bytes the add has already overwritten: the where stays its own loop.
// CHECK-LABEL: func.func @stored_reads_a_slot_its_reader_writes(
// CHECK: %[[MASKVIEW:.*]] = memref.view %[[ARENA:.*]][%[[C0:.*]]][] : memref<?xi8> to memref<3x6x4xi1>
// CHECK: %[[MASK:.*]] = bufferization.to_tensor %[[MASKVIEW]] restrict
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[MASK]],
// CHECK: %[[STORED:.*]] = bufferization.materialize_in_destination %[[W]] in
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[STORED]] :
// CHECK: %[[SUMVIEW:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<?xi8> to memref<3x6x4xf32>
// CHECK: bufferization.materialize_in_destination %[[SUM]] in restrict writable %[[SUMVIEW]]
func.func @stored_reads_a_slot_its_reader_writes(%a0: tensor<6x4xf32>, %a1: tensor<3x6x4xf32>, %a2: tensor<4x6x4xf32>)
    -> (tensor<7x6x4xf32>, tensor<3x6x4xf32>) {
  %mask = "rlx.compare"(%a0, %a1) {predicate = "le"} : (tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xi1>
  %w = "rlx.where"(%mask, %a0, %a1) : (tensor<3x6x4xi1>, tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xf32>
  %sum = "rlx.add"(%a0, %w) : (tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xf32>
  %cat = "rlx.concat"(%sum, %a2) {axis = 0 : i64} : (tensor<3x6x4xf32>, tensor<4x6x4xf32>) -> tensor<7x6x4xf32>
  return %cat, %w : tensor<7x6x4xf32>, tensor<3x6x4xf32>
}
