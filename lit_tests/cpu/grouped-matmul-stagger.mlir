// rlx.grouped_matmul with K longer than a block: the chunks of output columns of the second half
// (the second thread's under OpenMP's static schedule) cut K half a block later, a half block
// first and last, so the two threads' memory-bound first tiles of a block do not coincide.  x
// [16, 1024] times [2, 1024, 512]: four chunks of 128 columns, blocks of 512 rows (256 KiB);
// chunks 2 and 3 take rows [0, 256), [256, 768), [768, 1024).  The sums still run over k in order.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @stagger
// CHECK: scf.forall (%[[C:.*]]) in (4)
// CHECK: %[[SECOND:.*]] = arith.cmpi uge, %[[C]], %c2{{.*}} : index
// CHECK: scf.if %[[SECOND]] -> (tensor<24x128xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0, %{{.*}}] [1, 256, 128] [1, 1, 1] : tensor<2x1024x512xf32> to tensor<256x128xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x256xf32>, tensor<256x128xf32>)
// CHECK: scf.for %[[B:[^ ]*]] = %{{.*}} to %c1{{.*}} iter_args
// CHECK: %[[ROW:.*]] = arith.muli %[[B]], %c512{{.*}}
// CHECK: %[[SHIFTED:.*]] = arith.addi %[[ROW]], %c256{{.*}}
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, %[[SHIFTED]], %{{.*}}] [1, 512, 128] [1, 1, 1] : tensor<2x1024x512xf32> to tensor<512x128xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x512xf32>, tensor<512x128xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 768, %{{.*}}] [1, 256, 128] [1, 1, 1] : tensor<2x1024x512xf32> to tensor<256x128xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x256xf32>, tensor<256x128xf32>)
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2{{.*}} iter_args
// CHECK: tensor.extract_slice %{{.*}} [1, 512, 128] [1, 1, 1] : tensor<2x1024x512xf32> to tensor<512x128xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x512xf32>, tensor<512x128xf32>)
// CHECK: scf.forall.in_parallel
func.func @stagger(%x: tensor<16x1024xf32>, %w: tensor<2x1024x512xf32>, %idx: tensor<16xi64>) -> tensor<16x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<16x1024xf32>, tensor<2x1024x512xf32>, tensor<16xi64>) -> tensor<16x512xf32>
  return %0 : tensor<16x512xf32>
}
