// rlx-vectorize-elementwise: a small static elementwise linalg.generic on buffers (identity maps,
// parallel loops, f32/f64/integer operands contiguous in the last dimension, at most max-elements
// elements, arith/math scalar ops) becomes one vector transfer per operand and the body's ops on
// vectors, computed lane by lane. Larger ones, broadcasts, integer division and f16 are left to LLVM.
// RUN: rlx-opt %s --rlx-vectorize-elementwise | FileCheck %s
// RUN: rlx-opt %s --rlx-vectorize-elementwise='max-elements=128' | FileCheck %s --check-prefix=LARGE

// CHECK-LABEL: func.func @small(
// CHECK-NOT:     linalg.generic
// CHECK-DAG:     %[[X:.*]] = vector.transfer_read %arg0{{.*}} : memref<16xf32>, vector<16xf32>
// CHECK-DAG:     %[[Y:.*]] = vector.transfer_read %arg1{{.*}} : memref<16xf32>, vector<16xf32>
// CHECK-DAG:     %[[C:.*]] = arith.constant dense<2.000000e+00> : vector<16xf32>
// CHECK:         %[[M:.*]] = arith.mulf %[[X]], %[[C]] : vector<16xf32>
// CHECK:         %[[F:.*]] = math.fma %[[M]], %[[Y]], %[[X]] : vector<16xf32>
// CHECK:         vector.transfer_write %[[F]], %arg2{{.*}} : vector<16xf32>, memref<16xf32>
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @strided(
// CHECK:         %[[A:.*]] = vector.transfer_read %arg0{{.*}} : memref<4x8xf32, strided<[16, 1], offset: 4>>, vector<4x8xf32>
// CHECK:         %[[B:.*]] = arith.bitcast %[[A]] : vector<4x8xf32> to vector<4x8xi32>
// CHECK:         vector.transfer_write %[[B]], %arg1{{.*}} : vector<4x8xi32>, memref<4x8xi32>
// CHECK-LABEL: func.func @large(
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @column_stride(
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @broadcast(
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @division(
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @half(
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @reduction(
// CHECK:         linalg.generic

// LARGE-LABEL: func.func @large(
// LARGE-NOT:     linalg.generic
// LARGE:         arith.negf %{{.*}} : vector<128xf32>

#id = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
func.func @small(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) {
  %c = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %y : memref<16xf32>, memref<16xf32>) outs(%z : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %c : f32
    %1 = math.fma %0, %b, %a : f32
    linalg.yield %1 : f32
  }
  return
}
func.func @strided(%x: memref<4x8xf32, strided<[16, 1], offset: 4>>, %z: memref<4x8xi32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x8xf32, strided<[16, 1], offset: 4>>) outs(%z : memref<4x8xi32>) {
  ^bb0(%a: f32, %o: i32):
    %0 = arith.bitcast %a : f32 to i32
    linalg.yield %0 : i32
  }
  return
}
func.func @large(%x: memref<128xf32>, %z: memref<128xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<128xf32>) outs(%z : memref<128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  }
  return
}
func.func @column_stride(%x: memref<8xf32, strided<[2]>>, %z: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<8xf32, strided<[2]>>) outs(%z : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  }
  return
}
func.func @broadcast(%x: memref<8xf32>, %z: memref<2x8xf32>) {
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8xf32>) outs(%z : memref<2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  }
  return
}
func.func @division(%x: memref<8xi32>, %z: memref<8xi32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<8xi32>) outs(%z : memref<8xi32>) {
  ^bb0(%a: i32, %o: i32):
    %0 = arith.divsi %o, %a : i32
    linalg.yield %0 : i32
  }
  return
}
func.func @half(%x: memref<8xf16>, %z: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<8xf16>) outs(%z : memref<8xf32>) {
  ^bb0(%a: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    linalg.yield %0 : f32
  }
  return
}
func.func @reduction(%x: memref<2x8xf32>, %z: memref<2xf32>) {
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]} ins(%x : memref<2x8xf32>) outs(%z : memref<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %o : f32
    linalg.yield %0 : f32
  }
  return
}
