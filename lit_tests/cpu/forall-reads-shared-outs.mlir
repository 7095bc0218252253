// rlx-forall-reads-shared-outs: inside an scf.forall whose shared out starts as %m, a slice
// of %m that is exactly the tile the same iteration writes reads the shared out instead (the
// form one-shot bufferization updates in place); a slice of another tile is left alone.
// The end-to-end run: a tied update m = 0.9 m + 0.1 g split across 2 threads is computed in
// m's buffer, with no copy of m and no allocation.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-forall-reads-shared-outs)' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=2})' | FileCheck %s --check-prefix=LLVM

#tile = affine_map<(d0) -> (d0 * 128)>
#next = affine_map<(d0) -> (d0 * 128 + 1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @update(
// CHECK-SAME: %[[M:[^:]*]]: tensor<256x64xf32>, %[[G:[^:]*]]: tensor<256x64xf32>
// CHECK: scf.forall (%[[I:.*]]) in (2) shared_outs(%[[OUT:.*]] = %[[M]])
// CHECK: %[[OWN:.*]] = tensor.extract_slice %[[OUT]][%{{.*}}, 0] [128, 64] [1, 1]
// CHECK: %[[OTHER:.*]] = tensor.extract_slice %[[M]][%{{.*}}, 0] [128, 64] [1, 1]
// CHECK-NOT: tensor.extract_slice %[[OUT]]
// CHECK: linalg.generic {{.*}} ins(%[[OWN]], %[[OTHER]] : {{.*}}) outs(%[[OWN]] :
// LLVM-LABEL: llvm.func @update
func.func @update(%m: tensor<256x64xf32>, %g: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %r = scf.forall (%i) in (2) shared_outs(%out = %m) -> (tensor<256x64xf32>) {
    %a = affine.apply #tile(%i)
    %b = affine.apply #tile(%i)
    %c = affine.apply #next(%i)
    %own = tensor.extract_slice %m[%a, 0] [128, 64] [1, 1] : tensor<256x64xf32> to tensor<128x64xf32>
    %other = tensor.extract_slice %m[%c, 0] [128, 64] [1, 1] : tensor<256x64xf32> to tensor<128x64xf32>
    %dst = tensor.extract_slice %out[%b, 0] [128, 64] [1, 1] : tensor<256x64xf32> to tensor<128x64xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%own, %other : tensor<128x64xf32>, tensor<128x64xf32>) outs(%dst : tensor<128x64xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<128x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sum into %out[%b, 0] [128, 64] [1, 1] : tensor<128x64xf32> into tensor<256x64xf32>
    }
  }
  return %r : tensor<256x64xf32>
}

// -----

// LLVM-LABEL: llvm.func @tied_update(
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: llvm.intr.memcpy
// LLVM: omp.parallel
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: llvm.intr.memcpy
// LLVM: llvm.return
func.func @tied_update(%m: tensor<256x512xf32> {rlx.name = "m"}, %g: tensor<256x512xf32> {rlx.name = "g"})
    -> (tensor<256x512xf32> {rlx.tied = 0 : i64}) {
  %a = "rlx.constant"() {value = dense<0.9> : tensor<f32>} : () -> tensor<f32>
  %b = "rlx.constant"() {value = dense<0.1> : tensor<f32>} : () -> tensor<f32>
  %0 = "rlx.mul"(%m, %a) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %1 = "rlx.mul"(%g, %b) : (tensor<256x512xf32>, tensor<f32>) -> tensor<256x512xf32>
  %2 = "rlx.add"(%0, %1) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %2 : tensor<256x512xf32>
}
