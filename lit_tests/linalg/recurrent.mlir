// rlx.selective_scan and rlx.gated_delta_net lower to one scf.for over the
// sequence whose iter_args are the f32 state and the f32 output: each step
// reads its rows with rank-reduced tensor.extract_slice at the induction
// variable, updates the state with a generic whose outs is the carried state,
// and writes its read-out into extract_slice(out, t) (fill + reduction
// generic), inserted back into the carried output.  Both carry their state
// transposed (channel / value feature innermost).  rlx.depthwise_conv1d_causal
// is one window-reduction generic over left_pad ++ x.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s
// After one-shot bufferization the loops update their carried buffers in place: no allocation inside
// the loop and every iter_arg yielded as is (the carried state is never copied per step).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})' | FileCheck %s --check-prefix=BUF

// conv: xp read at (b, s + k, c), weight at (c, 0, 0, k), k a reduction.
// CHECK-DAG: #[[XP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + d3, d2)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, 0, 0, d3)>
// CHECK-DAG: #[[B_S_C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// selective scan over (b, j, i): x, delta [b, i]; a transposed [j, i]; B, C [b, j]; state [b, j, i].
// CHECK-DAG: #[[T2:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[BI:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[JI:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[BJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// gated delta net over (b, h, j, i): state T[b, h, j, i] = S[b, h, i, j]; k, q at (b, h, j); u, v at (b, h, i).
// CHECK-DAG: #[[T4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[BHI:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[BH:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// grouped heads: value head h reads key head h floordiv (hv / hk).
// CHECK-DAG: #[[GROUP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3)>
// CHECK-DAG: #[[GROUP3:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2)>

// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x3xf32>, %[[WT:.*]]: tensor<3x1x1x4xf32>, %[[PAD:.*]]: tensor<2x3x3xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8x3xf32>
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[PAD]] into %[[E]][0, 0, 0] [2, 3, 3] [1, 1, 1]
// CHECK: %[[XPV:.*]] = tensor.insert_slice %[[X]] into %[[P1]][0, 3, 0] [2, 5, 3] [1, 1, 1]
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x5x3xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[XP]], #[[W]], #[[B_S_C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[XPV]], %[[WT]] : tensor<2x8x3xf32>, tensor<3x1x1x4xf32>) outs(%[[Z]] : tensor<2x5x3xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[WE:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[M:.*]] = arith.mulf %[[WE]], %[[XE]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK: return %[[R]]
func.func @conv(%x: tensor<2x5x3xf32>, %w: tensor<3x1x1x4xf32>, %p: tensor<2x3x3xf32>) -> tensor<2x5x3xf32> {
  %0 = "rlx.depthwise_conv1d_causal"(%x, %w, %p) {kernel_size = 4} : (tensor<2x5x3xf32>, tensor<3x1x1x4xf32>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// K = 1: the pad is empty (no insert), f16 accumulates in f32 and is rounded once.
// CHECK-LABEL: func.func @conv_k1_f16
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2xf16>, %[[WT:.*]]: tensor<2x1x1x1xf16>, %{{.*}}: tensor<1x0x2xf16>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x2xf16>
// CHECK-NOT: tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0] [1, 0, 2]
// CHECK: %[[XPV:.*]] = tensor.insert_slice %[[X]] into %[[E]][0, 0, 0] [1, 4, 2] [1, 1, 1]
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} ins(%[[XPV]], %[[WT]] : tensor<1x4x2xf16>, tensor<2x1x1x1xf16>) outs(%{{.*}} : tensor<1x4x2xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: } -> tensor<1x4x2xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<1x4x2xf32>) outs(%{{.*}} : tensor<1x4x2xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[R]]
func.func @conv_k1_f16(%x: tensor<1x4x2xf16>, %w: tensor<2x1x1x1xf16>, %p: tensor<1x0x2xf16>) -> tensor<1x4x2xf16> {
  %0 = "rlx.depthwise_conv1d_causal"(%x, %w, %p) {kernel_size = 1} : (tensor<1x4x2xf16>, tensor<2x1x1x1xf16>, tensor<1x0x2xf16>) -> tensor<1x4x2xf16>
  return %0 : tensor<1x4x2xf16>
}

// CHECK-LABEL: func.func @selective_scan
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x3xf32>, %[[D:.*]]: tensor<2x5x3xf32>, %[[A:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<2x5x4xf32>, %[[C:.*]]: tensor<2x5x4xf32>)
// CHECK: %[[AT:.*]] = linalg.generic {indexing_maps = [#[[T2]], #[[ID2]]], {{.*}}} ins(%[[A]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: %[[S0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x3xf32>)
// CHECK: %[[Y0:.*]] = tensor.empty() : tensor<2x5x3xf32>
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ST:.*]] = %[[S0]], %[[Y:.*]] = %[[Y0]]) -> (tensor<2x4x3xf32>, tensor<2x5x3xf32>)
// CHECK: %[[XT:.*]] = tensor.extract_slice %[[X]][0, %[[T]], 0] [2, 1, 3] [1, 1, 1] : tensor<2x5x3xf32> to tensor<2x3xf32>
// CHECK: %[[DT:.*]] = tensor.extract_slice %[[D]][0, %[[T]], 0] [2, 1, 3] [1, 1, 1]
// CHECK: %[[BT:.*]] = tensor.extract_slice %[[B]][0, %[[T]], 0] [2, 1, 4] [1, 1, 1] : tensor<2x5x4xf32> to tensor<2x4xf32>
// CHECK: %[[CT:.*]] = tensor.extract_slice %[[C]][0, %[[T]], 0] [2, 1, 4] [1, 1, 1]
// CHECK: %[[NEW:.*]] = linalg.generic {indexing_maps = [#[[BI]], #[[BI]], #[[JI]], #[[BJ]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[XT]], %[[DT]], %[[AT]], %[[BT]] : {{.*}}) outs(%[[ST]] : tensor<2x4x3xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[DE:.*]]: f32, %[[AE:.*]]: f32, %[[BE:.*]]: f32, %[[SE:.*]]: f32):
// CHECK: %[[DA:.*]] = arith.mulf %[[DE]], %[[AE]] : f32
// exp(delta * a) by arith ops (Cephes' expf): range reduction, polynomial, 2^m by exponent bits.
// CHECK: math.floor
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[DECAY:.*]] = arith.select %{{.*}}, %[[DA]], %{{.*}} : f32
// CHECK: %[[DB:.*]] = arith.mulf %[[DE]], %[[BE]] : f32
// CHECK: %[[DRIVE:.*]] = arith.mulf %[[DB]], %[[XE]] : f32
// CHECK: %[[KEEP:.*]] = arith.mulf %[[DECAY]], %[[SE]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[KEEP]], %[[DRIVE]] : f32
// CHECK: linalg.yield %[[SUM]] : f32
// CHECK: %[[YROW:.*]] = tensor.extract_slice %[[Y]][0, %[[T]], 0] [2, 1, 3] [1, 1, 1] : tensor<2x5x3xf32> to tensor<2x3xf32>
// CHECK: %[[YZ:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[YROW]] : tensor<2x3xf32>)
// CHECK: %[[YT:.*]] = linalg.generic {indexing_maps = [#[[BJ]], #[[ID3]], #[[BI]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[CT]], %[[NEW]] : tensor<2x4xf32>, tensor<2x4x3xf32>) outs(%[[YZ]] : tensor<2x3xf32>)
// CHECK: %[[YNEW:.*]] = tensor.insert_slice %[[YT]] into %[[Y]][0, %[[T]], 0] [2, 1, 3] [1, 1, 1]
// CHECK: scf.yield %[[NEW]], %[[YNEW]] : tensor<2x4x3xf32>, tensor<2x5x3xf32>
// CHECK: return %[[LOOP]]#1
// BUF-LABEL: func.func @selective_scan(
// BUF: scf.for %{{.*}} iter_args(%[[ST:.*]] = %{{.*}}, %[[Y:.*]] = %{{.*}}) -> (memref<2x4x3xf32>, memref<2x5x3xf32>)
// BUF-NOT: memref.alloc
// BUF: linalg.generic {{.*}} outs(%[[ST]] : memref<2x4x3xf32>)
// BUF-NOT: memref.alloc
// BUF: scf.yield %[[ST]], %[[Y]] : memref<2x4x3xf32>, memref<2x5x3xf32>
func.func @selective_scan(%x: tensor<2x5x3xf32>, %d: tensor<2x5x3xf32>, %a: tensor<3x4xf32>, %b: tensor<2x5x4xf32>, %c: tensor<2x5x4xf32>) -> tensor<2x5x3xf32> {
  %0:2 = "rlx.selective_scan"(%x, %d, %a, %b, %c) {state_size = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0 : tensor<2x5x3xf32>
}

// bf16: the state and output stay f32 inside the loop, rounded once after it.
// CHECK-LABEL: func.func @selective_scan_bf16
// CHECK: %[[AT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2xbf16>) outs(%{{.*}} : tensor<2x1xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[LOOP:.*]]:2 = scf.for {{.*}} -> (tensor<1x2x1xf32>, tensor<1x1x1xf32>)
// CHECK: outs(%{{.*}} : tensor<1x2x1xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.yield
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#1 : tensor<1x1x1xf32>) outs(%{{.*}} : tensor<1x1x1xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %[[R]]
func.func @selective_scan_bf16(%x: tensor<1x1x1xbf16>, %a: tensor<1x2xbf16>, %b: tensor<1x1x2xbf16>) -> tensor<1x1x1xbf16> {
  %0:2 = "rlx.selective_scan"(%x, %x, %a, %b, %b) {state_size = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<1x1x1xbf16>, tensor<1x1x1xbf16>, tensor<1x2xbf16>, tensor<1x1x2xbf16>, tensor<1x1x2xbf16>) -> (tensor<1x1x1xbf16>, tensor<1x1x2xbf16>)
  return %0#0 : tensor<1x1x1xbf16>
}

// With an initial state: alpha = exp(g) once, the state transposed in once and out once.
// CHECK-LABEL: func.func @gated_delta_net_state
// CHECK-SAME: (%[[Q:.*]]: tensor<2x5x3x4xf32>, %[[K:.*]]: tensor<2x5x3x4xf32>, %[[V:.*]]: tensor<2x5x3x4xf32>, %[[G:.*]]: tensor<2x5x3xf32>, %[[BETA:.*]]: tensor<2x5x3xf32>, %[[S:.*]]: tensor<2x3x4x4xf32>)
// CHECK: %[[ALPHA:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<2x5x3xf32>)
// CHECK: math.exp
// CHECK: %[[S0:.*]] = linalg.generic {indexing_maps = [#[[T4]], #[[ID4]]], {{.*}}} ins(%[[S]] : tensor<2x3x4x4xf32>) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// CHECK: %[[O0:.*]] = tensor.empty() : tensor<2x5x3x4xf32>
// CHECK: %[[U0:.*]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ST:.*]] = %[[S0]], %[[OUT:.*]] = %[[O0]], %[[U:.*]] = %[[U0]])
// CHECK: %[[QT:.*]] = tensor.extract_slice %[[Q]][0, %[[T]], 0, 0] [2, 1, 3, 4] [1, 1, 1, 1] : tensor<2x5x3x4xf32> to tensor<2x3x4xf32>
// CHECK: %[[KT:.*]] = tensor.extract_slice %[[K]][0, %[[T]], 0, 0]
// CHECK: %[[VT:.*]] = tensor.extract_slice %[[V]][0, %[[T]], 0, 0]
// CHECK: %[[AT:.*]] = tensor.extract_slice %[[ALPHA]][0, %[[T]], 0] [2, 1, 3] [1, 1, 1] : tensor<2x5x3xf32> to tensor<2x3xf32>
// CHECK: %[[BT:.*]] = tensor.extract_slice %[[BETA]][0, %[[T]], 0]
// u = S @ k into the carried scratch, then u = beta * (v - alpha * u) in place.
// CHECK: %[[UZ:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[U]] : tensor<2x3x4xf32>)
// CHECK: %[[SK:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[B_S_C]], #[[BHI]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[ST]], %[[KT]] : {{.*}}) outs(%[[UZ]] : tensor<2x3x4xf32>)
// CHECK: %[[UNEW:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[BJ]], #[[BJ]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[VT]], %[[AT]], %[[BT]] : {{.*}}) outs(%[[SK]] : tensor<2x3x4xf32>)
// CHECK: ^bb0(%[[VE:.*]]: f32, %[[AE:.*]]: f32, %[[BE:.*]]: f32, %[[SKE:.*]]: f32):
// CHECK: %[[ASK:.*]] = arith.mulf %[[AE]], %[[SKE]] : f32
// CHECK: %[[DIFF:.*]] = arith.subf %[[VE]], %[[ASK]] : f32
// CHECK: %[[UE:.*]] = arith.mulf %[[BE]], %[[DIFF]] : f32
// S = alpha * S + outer(u, k), written into the carried state.
// CHECK: %[[SNEW:.*]] = linalg.generic {indexing_maps = [#[[B_S_C]], #[[BH]], #[[BHI]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[KT]], %[[AT]], %[[UNEW]] : {{.*}}) outs(%[[ST]] : tensor<2x3x4x4xf32>)
// CHECK: ^bb0(%[[KE:.*]]: f32, %[[AE2:.*]]: f32, %[[UE2:.*]]: f32, %[[SE:.*]]: f32):
// CHECK: %[[DECAYED:.*]] = arith.mulf %[[AE2]], %[[SE]] : f32
// CHECK: %[[OUTER:.*]] = arith.mulf %[[UE2]], %[[KE]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[DECAYED]], %[[OUTER]] : f32
// out[:, t] = S @ (q / sqrt(4)).
// CHECK: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[OROW:.*]] = tensor.extract_slice %[[OUT]][0, %[[T]], 0, 0] [2, 1, 3, 4] [1, 1, 1, 1] : tensor<2x5x3x4xf32> to tensor<2x3x4xf32>
// CHECK: %[[OZ:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[OROW]] : tensor<2x3x4xf32>)
// CHECK: %[[OT:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[B_S_C]], #[[BHI]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[SNEW]], %[[QT]] : {{.*}}) outs(%[[OZ]] : tensor<2x3x4xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[ONEW:.*]] = tensor.insert_slice %[[OT]] into %[[OUT]][0, %[[T]], 0, 0] [2, 1, 3, 4] [1, 1, 1, 1]
// CHECK: scf.yield %[[SNEW]], %[[ONEW]], %[[UNEW]]
// CHECK: %[[FINAL:.*]] = linalg.generic {indexing_maps = [#[[T4]], #[[ID4]]], {{.*}}} ins(%[[LOOP]]#0 : tensor<2x3x4x4xf32>)
// CHECK: return %[[LOOP]]#1, %[[FINAL]]
// BUF-LABEL: func.func @gated_delta_net_state(
// BUF: scf.for %{{.*}} iter_args(%[[ST:.*]] = %{{.*}}, %[[OUT:.*]] = %{{.*}}, %[[U:.*]] = %{{.*}}) -> (memref<2x3x4x4xf32>, memref<2x5x3x4xf32>, memref<2x3x4xf32>)
// BUF-NOT: memref.alloc
// BUF: linalg.generic {{.*}} outs(%[[U]] : memref<2x3x4xf32>)
// BUF-NOT: memref.alloc
// BUF: linalg.generic {{.*}} outs(%[[ST]] : memref<2x3x4x4xf32>)
// BUF-NOT: memref.alloc
// BUF: scf.yield %[[ST]], %[[OUT]], %[[U]] : memref<2x3x4x4xf32>, memref<2x5x3x4xf32>, memref<2x3x4xf32>
func.func @gated_delta_net_state(%q: tensor<2x5x3x4xf32>, %k: tensor<2x5x3x4xf32>, %v: tensor<2x5x3x4xf32>, %g: tensor<2x5x3xf32>, %b: tensor<2x5x3xf32>, %s: tensor<2x3x4x4xf32>) -> (tensor<2x5x3x4xf32>, tensor<2x3x4x4xf32>) {
  %0:2 = "rlx.gated_delta_net"(%q, %k, %v, %g, %b, %s) {state_size = 4} : (tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x3x4x4xf32>) -> (tensor<2x5x3x4xf32>, tensor<2x3x4x4xf32>)
  return %0#0, %0#1 : tensor<2x5x3x4xf32>, tensor<2x3x4x4xf32>
}

// No state: zeros; f16 is widened when read, both results rounded once after the loop.
// CHECK-LABEL: func.func @gated_delta_net_f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.exp
// CHECK: %[[S0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x2x8x8xf32>)
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[S0]], {{.*}}) -> (tensor<1x2x8x8xf32>, tensor<1x6x2x8xf32>, tensor<1x2x8xf32>)
// CHECK: arith.constant 0.353553385 : f32
// CHECK: scf.yield
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#1 : tensor<1x6x2x8xf32>) outs(%{{.*}} : tensor<1x6x2x8xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[FINAL:.*]] = linalg.generic {indexing_maps = [#[[T4]], #[[ID4]]], {{.*}}} ins(%[[LOOP]]#0 : tensor<1x2x8x8xf32>) outs(%{{.*}} : tensor<1x2x8x8xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[OUT]], %[[FINAL]]
func.func @gated_delta_net_f16(%q: tensor<1x6x2x8xf16>, %g: tensor<1x6x2xf16>) -> (tensor<1x6x2x8xf16>, tensor<1x2x8x8xf16>) {
  %0:2 = "rlx.gated_delta_net"(%q, %q, %q, %g, %g) {state_size = 8} : (tensor<1x6x2x8xf16>, tensor<1x6x2x8xf16>, tensor<1x6x2x8xf16>, tensor<1x6x2xf16>, tensor<1x6x2xf16>) -> (tensor<1x6x2x8xf16>, tensor<1x2x8x8xf16>)
  return %0#0, %0#1 : tensor<1x6x2x8xf16>, tensor<1x2x8x8xf16>
}

// Mamba's kernel options: softplus(delta) once before the loop, the initial state [b, h, n]
// transposed in once, the final state transposed back once, and one generic after the loop for
// y + d * x gated by silu(z).
// CHECK-LABEL: func.func @selective_scan_options
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x5x3xf32>, %[[DL:[^:]*]]: tensor<2x5x3xf32>, %{{.*}}: tensor<3x4xf32>, %{{.*}}: tensor<2x5x4xf32>, %{{.*}}: tensor<2x5x4xf32>, %[[SKIP:[^:]*]]: tensor<3xf32>, %[[Z:[^:]*]]: tensor<2x5x3xf32>, %[[S:[^:]*]]: tensor<2x3x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[DL]] : tensor<2x5x3xf32>)
// CHECK: math.log
// CHECK: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x4x3xf32>)
// CHECK: %[[LOOP:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[S0]], %{{.*}} = %{{.*}}) -> (tensor<2x4x3xf32>, tensor<2x5x3xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#1, %[[X]], %[[SKIP]], %[[Z]] : tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3xf32>, tensor<2x5x3xf32>)
// CHECK: ^bb0(%[[YE:.*]]: f32, %[[XE:.*]]: f32, %[[DE:.*]]: f32, %[[ZE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[DX:.*]] = arith.mulf %[[DE]], %[[XE]] : f32
// CHECK: %[[YD:.*]] = arith.addf %[[YE]], %[[DX]] : f32
// CHECK: math.exp
// CHECK: %[[SILU:.*]] = arith.mulf %[[ZE]], %{{.*}} : f32
// CHECK: arith.mulf %[[YD]], %[[SILU]] : f32
// CHECK: %[[FINAL:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#0 : tensor<2x4x3xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK: return %[[Y]], %[[FINAL]]
func.func @selective_scan_options(%x: tensor<2x5x3xf32>, %dl: tensor<2x5x3xf32>, %a: tensor<3x4xf32>, %b: tensor<2x5x4xf32>, %c: tensor<2x5x4xf32>, %d: tensor<3xf32>, %z: tensor<2x5x3xf32>, %s: tensor<2x3x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>) {
  %0:2 = "rlx.selective_scan"(%x, %dl, %a, %b, %c, %d, %z, %s) {state_size = 4, delta_softplus = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<3xf32>, tensor<2x5x3xf32>, tensor<2x3x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x3x4xf32>)
  return %0#0, %0#1 : tensor<2x5x3xf32>, tensor<2x3x4xf32>
}

// Qwen3-Next's gated DeltaNet: 4 value heads reading 2 key heads (head floordiv 2), dk = 4 != dv = 6,
// q and k L2-normalised once before the loop, and the HF/FLA state layout [b, hv, dk, dv], which is
// the loop's own: no transposition in or out.
// CHECK-LABEL: func.func @gated_delta_net_grouped
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x3x2x4xf32>, %[[K:[^:]*]]: tensor<1x3x2x4xf32>, %{{.*}}: tensor<1x3x4x6xf32>, %{{.*}}: tensor<1x3x4xf32>, %{{.*}}: tensor<1x3x4xf32>, %[[S:[^:]*]]: tensor<1x4x4x6xf32>)
// CHECK: %[[QSQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]] : tensor<1x3x2x4xf32>)
// CHECK: %[[QN:.*]] = linalg.generic {indexing_maps = [#[[GROUP]], #[[GROUP3]], #{{.*}}], {{.*}}} ins(%[[Q]], %[[QSQ]] : tensor<1x3x2x4xf32>, tensor<1x3x2xf32>) outs(%{{.*}} : tensor<1x3x4x4xf32>)
// CHECK: math.rsqrt
// CHECK: ins(%[[K]], %{{.*}} : tensor<1x3x2x4xf32>, tensor<1x3x2xf32>) outs(%{{.*}} : tensor<1x3x4x4xf32>)
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[S]], {{.*}}) -> (tensor<1x4x4x6xf32>, tensor<1x3x4x6xf32>, tensor<1x4x6xf32>)
// CHECK: return %[[LOOP]]#1, %[[LOOP]]#0 : tensor<1x3x4x6xf32>, tensor<1x4x4x6xf32>
func.func @gated_delta_net_grouped(%q: tensor<1x3x2x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x3x4x6xf32>, %g: tensor<1x3x4xf32>, %beta: tensor<1x3x4xf32>, %s: tensor<1x4x4x6xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x4x6xf32>) {
  %0:2 = "rlx.gated_delta_net"(%q, %k, %v, %g, %beta, %s) {state_size = 4, use_qk_l2norm = true, state_layout = "k_v"} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x4x4x6xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x4x6xf32>)
  return %0#0, %0#1 : tensor<1x3x4x6xf32>, tensor<1x4x4x6xf32>
}
