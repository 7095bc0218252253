// Bindings that cannot apply are errors naming the symbol, with the function's location.
// RUN: not rlx-opt %s --rlx-bind-dims=BATCH=2,SEQ=7,HEADS=4 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not rlx-opt %s --rlx-bind-dims=BATCH=2 2>&1 | FileCheck %s --check-prefix=UNBOUND
// RUN: not rlx-opt %s --rlx-bind-dims=BATCH=0,SEQ=7 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not rlx-opt %s --rlx-bind-dims=BATCH=two,SEQ=7 2>&1 | FileCheck %s --check-prefix=NOT-INT
// RUN: not rlx-opt %s --rlx-bind-dims=BATCH=2,BATCH=3 2>&1 | FileCheck %s --check-prefix=TWICE

// UNKNOWN: bind-errors.mlir:[[@LINE+6]]:1: error: the module has no symbol 'HEADS' (its symbols: BATCH, SEQ)
// UNBOUND: bind-errors.mlir:[[@LINE+5]]:1: error: symbol 'SEQ' of @f is not bound
// ZERO: bind-errors.mlir:[[@LINE+4]]:1: error: symbol 'BATCH' must be bound to a positive integer, got 0
// NOT-INT: rlx-opt: error: --rlx-bind-dims: 'rlx-bind-dims': the size of symbol 'BATCH' must be an integer, got 'two'
// TWICE: rlx-opt: error: --rlx-bind-dims: 'rlx-bind-dims': symbol 'BATCH' is bound twice
// UNKNOWN-NOT: Traceback
func.func @f(%x: tensor<?x?x8xf32> {rlx.dims = ["BATCH", "SEQ", 8]}) -> tensor<?x?x8xf32> {
  %0 = "rlx.relu"(%x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}
