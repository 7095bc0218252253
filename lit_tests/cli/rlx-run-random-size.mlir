// --random-inputs refuses to generate arguments larger than half of the
// machine's memory, at once, instead of running for minutes and swapping.
// RUN: not rlx-run %s --random-inputs 2>&1 | FileCheck %s
// CHECK: rlx-run: error: --random-inputs: generating the arguments takes 800000000000000 bytes (largest: 'x'), more than half of this machine's memory ({{[0-9]+}} bytes)
// CHECK-NOT: Traceback
func.func @f(%x: tensor<10000000x10000000xf32> {rlx.name = "x"}) -> tensor<10000000x10000000xf32> {
  %0 = "rlx.neg"(%x) : (tensor<10000000x10000000xf32>) -> tensor<10000000x10000000xf32>
  return %0 : tensor<10000000x10000000xf32>
}
