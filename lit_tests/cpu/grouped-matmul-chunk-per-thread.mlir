// rlx.grouped_matmul where the compile's thread count is known (rlx-mir-to-linalg{threads}, which
// rlx-lower-to-llvm sets; rlx-lir-to-linalg passes it on): the fewest chunks of output columns that
// are a multiple of the thread count (each thread gets as many, and streams long runs of every
// weight row), of at most 1024 columns, whole 16-float vectors and at least 1 KiB (256 floats) of a
// weight row.  Where no multiple allows, as without a thread count: chunks of at most 1024
// columns, at least 4 of them (N = 512: four of 128; see grouped-matmul-threads.mlir).  One expert
// here (fewer experts than threads): with one per thread or more, 8-row tiles and whole vectors of
// columns the threads share out the experts instead (grouped-matmul-experts-per-thread.mlir).
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=2})' | FileCheck %s --check-prefix=TWO
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{threads=2})' | FileCheck %s --check-prefix=TWO
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=3})' | FileCheck %s --check-prefix=UNEVEN
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=4})' | FileCheck %s --check-prefix=SHORT
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=1})' | FileCheck %s --check-prefix=ONE

// Two threads: two chunks of 256 columns (1 KiB of each weight row).
// TWO-LABEL: func.func @grouped
// TWO: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<64x512xf32>)
// TWO: tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] [1, 64, 256] [1, 1, 1] : tensor<1x64x512xf32> to tensor<64x256xf32>
// TWO: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64x256xf32>)
// Three threads do not divide 512 columns: four chunks of 128, as without a thread count.
// UNEVEN-LABEL: func.func @grouped
// UNEVEN: scf.forall (%{{.*}}) in (4) shared_outs
// UNEVEN: tensor<1x64x512xf32> to tensor<64x128xf32>
// Four threads would give runs of 512 bytes: four chunks of 128 (the count without threads).
// SHORT-LABEL: func.func @grouped
// SHORT: scf.forall (%{{.*}}) in (4) shared_outs
// SHORT: tensor<1x64x512xf32> to tensor<64x128xf32>
// One thread: the experts path on one worker (grouped-matmul-experts-per-thread.mlir), no chunks
// of columns: blocks of 32 whole weight rows in pieces of 512 columns.
// ONE-LABEL: func.func @grouped
// ONE: scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}}) -> (tensor<64x528xf32>)
// ONE: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>,
// ONE: vector.transfer_read %arg1{{.*}} : tensor<1x64x512xf32>, vector<16xf32>
func.func @grouped(%x: tensor<64x64xf32>, %w: tensor<1x64x512xf32>, %idx: tensor<64xi64>) -> tensor<64x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<64x64xf32>, tensor<1x64x512xf32>, tensor<64xi64>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}

// -----

// N = 3072 (without a thread count: four chunks of 768): two threads take two chunks each (one of
// 1536 would pass 1024 columns); three threads one chunk of 1024 each; one thread the experts path.
// TWO-LABEL: func.func @wide
// TWO: scf.forall (%{{.*}}) in (4) shared_outs
// TWO: tensor<1x32x3072xf32> to tensor<32x768xf32>
// UNEVEN-LABEL: func.func @wide
// UNEVEN: scf.forall (%{{.*}}) in (3) shared_outs
// UNEVEN: tensor<1x32x3072xf32> to tensor<32x1024xf32>
// SHORT-LABEL: func.func @wide
// SHORT: scf.forall (%{{.*}}) in (4) shared_outs
// SHORT: tensor<1x32x3072xf32> to tensor<32x768xf32>
// ONE-LABEL: func.func @wide
// ONE: scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}}) -> (tensor<16x3088xf32>)
// ONE: scf.for %{{.*}} = %c0{{.*}} to %c6{{.*}} step
// ONE: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>,
// ONE: vector.transfer_read %arg1{{.*}} : tensor<1x32x3072xf32>, vector<16xf32>
func.func @wide(%x: tensor<16x32xf32>, %w: tensor<1x32x3072xf32>, %idx: tensor<16xi64>) -> tensor<16x3072xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<16x32xf32>, tensor<1x32x3072xf32>, tensor<16xi64>) -> tensor<16x3072xf32>
  return %0 : tensor<16x3072xf32>
}
