// Symbolic dimension expressions that cannot be sizes are errors at the argument,
// not internal errors.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{argument #1 'rlx.dims': division by zero in 'BATCH // 0'}}
func.func @literal_zero(%x: tensor<?x8xf32> {rlx.dims = ["BATCH", 8]}, %p: tensor<?x8xf32> {rlx.dims = ["BATCH // 0", 8]}) -> tensor<?x8xf32> {
  return %p : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{argument #1: division by zero in 'BATCH//(BATCH - BATCH)'}}
func.func @zero_at_every_size(%x: tensor<?x8xf32> {rlx.dims = ["BATCH", 8]}, %p: tensor<?x8xf32> {rlx.dims = ["BATCH // (BATCH - BATCH)", 8]}) -> tensor<?x8xf32> {
  return %p : tensor<?x8xf32>
}

// An expression nested deeper than 100 operators or parentheses (5000 of each here)
// is refused when parsed, instead of exhausting Python's recursion.
// RUN: %python -c "print('func.func @f(%%x: tensor<?x8xf32> {rlx.dims = [\"' + '(' * 5000 + 'BATCH' + ')' * 5000 + '\", 8]}) -> tensor<?x8xf32> {\n  return %%x : tensor<?x8xf32>\n}')" > %t.parens.mlir
// RUN: not rlx-opt %t.parens.mlir 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: parens.mlir:1:14: error: argument #0 'rlx.dims': dimension expression '((((((((((((((((((((((((((((((((((((((((...' is too deep: it nests more than 100 operators and parentheses
// PARENS-NOT: RecursionError
// RUN: %python -c "print('func.func @f(%%x: tensor<?x8xf32> {rlx.dims = [\"' + '+'.join(['BATCH'] * 3000) + '\", 8]}) -> tensor<?x8xf32> {\n  return %%x : tensor<?x8xf32>\n}')" > %t.chain.mlir
// RUN: not rlx-opt %t.chain.mlir 2>&1 | FileCheck %s --check-prefix=CHAIN
// CHAIN: chain.mlir:1:14: error: argument #0 'rlx.dims': dimension expression 'BATCH+BATCH+BATCH+BATCH+BATCH+BATCH+BATC...' is too deep
// CHAIN-NOT: RecursionError
