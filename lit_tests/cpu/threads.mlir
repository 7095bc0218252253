// Threads: with threads > 1, large linalg ops (here the fused add + gelu on 256x512,
// 131072 points) are split into one scf.forall chunk per thread along their
// outermost dim; small ones (4x8) stay serial. rlx-lower-to-llvm runs the foralls
// as OpenMP parallel loops; with threads=1 there is no OpenMP at all.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-fuse-elementwise,rlx-parallelize-linalg{threads=2})' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=2})' | FileCheck %s --check-prefix=OMP
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1})' | FileCheck %s --check-prefix=SERIAL

// CHECK-LABEL: func.func @act(
// CHECK-SAME: %[[X:[^:]*]]: tensor<256x512xf32>, %[[B:[^:]*]]: tensor<512xf32>, %[[S:[^:]*]]: tensor<4x8xf32>
// CHECK: %[[BIG:.*]] = scf.forall (%[[I:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<256x512xf32>) {
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[X]][%{{.*}}, 0] [128, 512] [1, 1]
// CHECK: %[[CHUNK:.*]] = linalg.generic {{.*}} ins(%[[ROWS]], %{{.*}} : tensor<128x512xf32>, tensor<512xf32>)
// CHECK: math.tanh
// CHECK: tensor.parallel_insert_slice %[[CHUNK]] into %[[OUT]][%{{.*}}, 0] [128, 512] [1, 1]
// CHECK: %[[SMALL:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4x8xf32>)
// CHECK: return %[[BIG]], %[[SMALL]]

// OMP-LABEL: llvm.func @act(
// OMP: omp.parallel num_threads(%{{.*}} : i32) {
// OMP: omp.wsloop {
// OMP: omp.loop_nest
// OMP-NOT: llvm.call @tanhf

// SERIAL-LABEL: llvm.func @act(
// SERIAL-NOT: omp.
// SERIAL: llvm.return
func.func @act(%x: tensor<256x512xf32>, %b: tensor<512xf32>, %s: tensor<4x8xf32>) -> (tensor<256x512xf32>, tensor<4x8xf32>) {
  %y = "rlx.add"(%x, %b) : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %z = "rlx.gelu_approx"(%y) : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %t = "rlx.tanh"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %z, %t : tensor<256x512xf32>, tensor<4x8xf32>
}

// A leading batch of 1 is skipped: the split is along the 256 rows.
// CHECK-LABEL: func.func @batch_of_one(
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs
// CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}, 0] [1, 128, 512] [1, 1, 1]
// OMP-LABEL: llvm.func @batch_of_one(
// OMP: omp.parallel
func.func @batch_of_one(%x: tensor<1x256x512xf32>) -> tensor<1x256x512xf32> {
  %y = "rlx.exp"(%x) : (tensor<1x256x512xf32>) -> tensor<1x256x512xf32>
  return %y : tensor<1x256x512xf32>
}
