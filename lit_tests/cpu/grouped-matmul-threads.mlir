// rlx.grouped_matmul with threads: its scf.forall over chunks of output columns is the one
// parallel loop (N = 512: four chunks of 128), the experts and their row tiles inside it; the kernels of
// the tiles (8 rows: rlx-tile-gemv's GEMV kernel; more rows: rlx-tile-matmul's GEMM kernel) are
// tiled and vectorized but not split again (both passes leave a kernel inside an scf.forall
// serial), so a call forks threads once, not once per tile.  Each expert's block of the weight
// (here all 64 rows of the chunk's columns) is read in place by its tiles, not copied.  With one
// thread the forall is a plain loop.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-tile-gemv{threads=2},rlx-pack-matmul,canonicalize,rlx-tile-matmul{threads=2})' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1})' | FileCheck %s --check-prefix=SERIAL

// CHECK-LABEL: func.func @grouped
// CHECK: scf.forall (%[[B:.*]]) in (4) shared_outs(%{{.*}}) -> (tensor<72x512xf32>)
// CHECK-NOT: scf.forall
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0, %{{.*}}] [1, 64, 128] [1, 1, 1] : tensor<2x64x512xf32> to tensor<64x128xf32>
// CHECK-NOT: linalg.copy
// CHECK: scf.for
// CHECK-NOT: scf.forall
// CHECK: vector.fma %{{.*}} : vector<32xf32>
// CHECK-NOT: scf.forall
// CHECK: scf.forall.in_parallel

// SERIAL-LABEL: llvm.func @grouped(
// SERIAL-NOT: omp.
// SERIAL: llvm.return
func.func @grouped(%x: tensor<64x64xf32>, %w: tensor<2x64x512xf32>, %idx: tensor<64xi64>) -> tensor<64x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<64x64xf32>, tensor<2x64x512xf32>, tensor<64xi64>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}
