// Bad input: one MLIR-style diagnostic on stderr, exit code 1, no traceback.

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalgg)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS: <pass-pipeline>:1:16: error: unknown pass or pipeline 'rlx-mir-to-linalgg'; did you mean 'rlx-mir-to-linalg'
// UNKNOWN-PASS-NEXT: builtin.module(rlx-mir-to-linalgg)
// UNKNOWN-PASS-NEXT: {{^               \^$}}
// UNKNOWN-PASS-NOT: Traceback

// RUN: not rlx-opt %s --canonicalise 2>&1 | FileCheck %s --check-prefix=UNKNOWN-FLAG
// UNKNOWN-FLAG: rlx-opt: error: --canonicalise: unknown pass or pipeline 'canonicalise'; did you mean 'canonicalize'

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{out-param=false})' 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// BAD-OPTION: <pass-pipeline>:1:16: error: 'rlx-lower-to-llvm' has no option 'out-param' (options: {{.*}}, out-params, {{.*}})

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{out-params=maybe})' 2>&1 | FileCheck %s --check-prefix=BAD-VALUE
// BAD-VALUE: error: option 'out-params' of 'rlx-lower-to-llvm': expected true or false, got 'maybe'

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(canonicalize{max-iteration=3})' 2>&1 | FileCheck %s --check-prefix=UPSTREAM-OPTION
// UPSTREAM-OPTION: error: invalid pipeline element 'canonicalize{max-iteration=3}': <Pass-Options-Parser>: no such option max-iteration

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(func.func(rlx-mir-to-linalg))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: error: RLX pass 'rlx-mir-to-linalg' runs on 'builtin.module' and cannot be nested in 'func.func'

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=UNBALANCED
// UNBALANCED: error: expected 'builtin.module(...)'

// RUN: not rlx-opt %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rlx-opt: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: not rlx-opt %S/Inputs/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: malformed.mlir:3:18: error: use of undeclared SSA value name
// MALFORMED-NEXT: {{^}}  %0 = "rlx.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// MALFORMED-NOT: Traceback

// RUN: not rlx-opt %S/Inputs/bad-matmul.mlir 2>&1 | FileCheck %s --check-prefix=MATMUL
// MATMUL: bad-matmul.mlir:4:8: error: 'rlx.matmul' op contracting dimensions differ: lhs [2, 3] has K = 3, rhs [4, 5] has K = 4
// MATMUL-NEXT: {{^}}  %0 = "rlx.matmul"
// MATMUL-NEXT: {{^       \^$}}

// RUN: not rlx-opt %S/Inputs/unknown-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OP
// UNKNOWN-OP: unknown-op.mlir:3:8: error: unregistered operation 'rlx.frobnicate' found in dialect ('rlx') that does not allow unknown operations

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg)' --cse 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: rlx-opt: error: use either --pass-pipeline or pass flags, not both

// RUN: not rlx-opt %s --no-such-flag=3 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: rlx-opt: error: --no-such-flag: unknown pass or pipeline 'no-such-flag'

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
