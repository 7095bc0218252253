// rlx.scan lowers to one scf.for over the steps: the carry (a copy of init, so
// init is never written) and, with save_trajectory, the trajectory are
// iter_args; each step slices xs[t] with a rank-reduced tensor.extract_slice,
// calls the body with func.call and copies the new carry into the carried
// tensor (linalg.copy: the yield is the carried buffer, updated in place after
// bufferization); the trajectory row t is a tensor.insert_slice.  rlx.if is
// scf.if on the extracted predicate, one func.call per branch.  rlx.while is
// scf.while calling cond in the before-region (and with max_iterations also
// comparing an index counter), body in the after-region.  rlx.custom_fn is a
// func.call of fwd.  The body functions are left as they are (lowered too).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s
// The full CPU pipeline (planned into LIR, and without the plan) accepts all of them.
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --rlx-lower-to-llvm-direct | FileCheck %s --check-prefix=LLVM
// LLVM-LABEL: llvm.func @scan_trajectory

func.func private @step(%c: tensor<3xf32>, %b: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "rlx.mul"(%c, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// CHECK-LABEL: func.func @scan_trajectory
// CHECK-SAME: (%[[INIT:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[XS:.*]]: tensor<4x3xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[COPY:.*]] = linalg.copy {{.*}}ins(%[[INIT]] : tensor<3xf32>) outs(%[[E]] : tensor<3xf32>)
// CHECK: %[[TRAJ:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[T:.*]] = %[[C0]] to %[[C4]] step %[[C1]] iter_args(%[[CARRY:.*]] = %[[COPY]], %[[ROWS:.*]] = %[[TRAJ]])
// CHECK:   %[[XT:.*]] = tensor.extract_slice %[[XS]][%[[T]], 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<3xf32>
// CHECK:   %[[NEW:.*]] = func.call @step(%[[CARRY]], %[[B]], %[[XT]])
// CHECK:   %[[UPD:.*]] = linalg.copy {{.*}}ins(%[[NEW]] : tensor<3xf32>) outs(%[[CARRY]] : tensor<3xf32>)
// CHECK:   %[[INS:.*]] = tensor.insert_slice %[[NEW]] into %[[ROWS]][%[[T]], 0] [1, 3] [1, 1]
// CHECK:   scf.yield %[[UPD]], %[[INS]]
// CHECK: return %[[LOOP]]#1 : tensor<4x3xf32>
func.func @scan_trajectory(%init: tensor<3xf32>, %b: tensor<3xf32>, %xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = "rlx.scan"(%init, %b, %xs) {body = @step, length = 4, save_trajectory = true, num_checkpoints = 2, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

func.func private @square(%c: tensor<2x2xbf16>) -> tensor<2x2xbf16> {
  %0 = "rlx.mul"(%c, %c) : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
  return %0 : tensor<2x2xbf16>
}

// Without xs or bcast the body takes the carry only; the final carry is the result.
// CHECK-LABEL: func.func @scan_final_bf16
// CHECK: %[[LOOP:.*]] = scf.for {{.*}} iter_args(%[[CARRY:.*]] = {{.*}}) -> (tensor<2x2xbf16>)
// CHECK-NOT: tensor.extract_slice
// CHECK:   %[[NEW:.*]] = func.call @square(%[[CARRY]]) : (tensor<2x2xbf16>) -> tensor<2x2xbf16>
// CHECK:   %[[UPD:.*]] = linalg.copy {{.*}}ins(%[[NEW]] : tensor<2x2xbf16>) outs(%[[CARRY]] : tensor<2x2xbf16>)
// CHECK:   scf.yield %[[UPD]]
// CHECK: return %[[LOOP]] : tensor<2x2xbf16>
func.func @scan_final_bf16(%init: tensor<2x2xbf16>) -> tensor<2x2xbf16> {
  %0 = "rlx.scan"(%init) {body = @square, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x2xbf16>) -> tensor<2x2xbf16>
  return %0 : tensor<2x2xbf16>
}

func.func private @neg(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "rlx.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @ident(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// CHECK-LABEL: func.func @branch
// CHECK-SAME: (%[[P:.*]]: tensor<i1>, %[[X:.*]]: tensor<2xf32>)
// CHECK: %[[PRED:.*]] = tensor.extract %[[P]][] : tensor<i1>
// CHECK: %[[R:.*]] = scf.if %[[PRED]] -> (tensor<2xf32>) {
// CHECK:   %[[N:.*]] = func.call @neg(%[[X]])
// CHECK:   scf.yield %[[N]]
// CHECK: } else {
// CHECK:   %[[I:.*]] = func.call @ident(%[[X]])
// CHECK:   scf.yield %[[I]]
// CHECK: return %[[R]]
func.func @branch(%p: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "rlx.if"(%p, %x) {then_branch = @neg, else_branch = @ident, operandSegmentSizes = array<i32: 1, 1>} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

func.func private @small(%c: tensor<1xf32>) -> tensor<1xi1> {
  %limit = "rlx.constant"() {value = dense<10.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %0 = "rlx.compare"(%c, %limit) {predicate = "lt"} : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
  return %0 : tensor<1xi1>
}
func.func private @double(%c: tensor<1xf32>) -> tensor<1xf32> {
  %0 = "rlx.add"(%c, %c) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// CHECK-LABEL: func.func @loop
// CHECK: %[[COPY:.*]] = linalg.copy
// CHECK: %[[W:.*]] = scf.while (%[[C:.*]] = %[[COPY]]) : (tensor<1xf32>) -> tensor<1xf32> {
// CHECK:   %[[OK:.*]] = func.call @small(%[[C]]) : (tensor<1xf32>) -> tensor<1xi1>
// CHECK:   %[[B:.*]] = tensor.extract %[[OK]][%{{.*}}] : tensor<1xi1>
// CHECK:   scf.condition(%[[B]]) %[[C]]
// CHECK: } do {
// CHECK: ^bb0(%[[A:.*]]: tensor<1xf32>):
// CHECK:   %[[D:.*]] = func.call @double(%[[A]])
// CHECK:   %[[U:.*]] = linalg.copy {{.*}}ins(%[[D]] : tensor<1xf32>) outs(%[[A]] : tensor<1xf32>)
// CHECK:   scf.yield %[[U]]
// CHECK: return %[[W]]
func.func @loop(%init: tensor<1xf32>) -> tensor<1xf32> {
  %0 = "rlx.while"(%init) {cond = @small, body = @double} : (tensor<1xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// max_iterations: an index counter beside the carry, and-ed into the condition.
// CHECK-LABEL: func.func @bounded_loop
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[W:.*]]:2 = scf.while (%[[C:.*]] = %{{.*}}, %[[N:.*]] = %[[ZERO]]) : (tensor<1xf32>, index) -> (tensor<1xf32>, index) {
// CHECK:   %[[OK:.*]] = func.call @small(%[[C]])
// CHECK:   %[[B:.*]] = tensor.extract %[[OK]]
// CHECK:   %[[MAX:.*]] = arith.constant 5 : index
// CHECK:   %[[UNDER:.*]] = arith.cmpi slt, %[[N]], %[[MAX]] : index
// CHECK:   %[[GO:.*]] = arith.andi %[[B]], %[[UNDER]] : i1
// CHECK:   scf.condition(%[[GO]]) %[[C]], %[[N]]
// CHECK: } do {
// CHECK: ^bb0(%[[A:.*]]: tensor<1xf32>, %[[K:.*]]: index):
// CHECK:   func.call @double(%[[A]])
// CHECK:   %[[NEXT:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK:   scf.yield %{{.*}}, %[[NEXT]]
// CHECK: return %[[W]]#0
func.func @bounded_loop(%init: tensor<1xf32>) -> tensor<1xf32> {
  %0 = "rlx.while"(%init) {cond = @small, body = @double, max_iterations = 5} : (tensor<1xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

func.func private @fwd(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = "rlx.tanh"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}
func.func private @fwd_vjp(%x: tensor<2x3xf16>, %g: tensor<2x3xf16>) -> tensor<2x3xf16> {
  return %g : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @custom
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = call @fwd(%[[X]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: return %[[R]]
func.func @custom(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = "rlx.custom_fn"(%x) {fwd = @fwd, vjp = @fwd_vjp} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}
