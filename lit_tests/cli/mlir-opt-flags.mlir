// rlx-opt takes mlir-opt's flags, set up with MLIR's own PassManager instrumentation.

// Pass options as mlir-opt spells them: --pass{k=v}, --pass='{k=v}', --pass=k=v, one dash or two.
// RUN: rlx-opt %s --rlx-hir-to-mir{policy=fusable} --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BRACES
// RUN: rlx-opt %s '--rlx-hir-to-mir={policy=fusable}' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BRACES
// RUN: rlx-opt %s --rlx-hir-to-mir=policy=fusable --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BRACES
// RUN: rlx-opt %s -rlx-hir-to-mir=policy=fusable -dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BRACES
// BRACES: builtin.module(rlx-hir-to-mir{policy=fusable})
// The fusable policy lowers linear+gelu to a primitive chain: matmul, then gelu.
// RUN: rlx-opt %s --rlx-hir-to-mir{policy=fusable} | FileCheck %s --check-prefix=FUSABLE
// FUSABLE: "rlx.matmul"
// FUSABLE-NEXT: "rlx.gelu"
// RUN: not rlx-opt %s '--rlx-hir-to-mir{policy=fusable' 2>&1 | FileCheck %s --check-prefix=OPEN-BRACE
// OPEN-BRACE: rlx-opt: error: --rlx-hir-to-mir{policy=fusable: expected the options in braces, '--rlx-hir-to-mir{key=value ...}'

// --dump-pass-pipeline shows RLX pipelines expanded into their passes, on stderr.
// RUN: rlx-opt %s --rlx-optimize-mir --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: builtin.module(rlx-cse,{{.*}}rlx-fuse-matmul-bias-act{{.*}})

// IR printing before every pass, and after the passes that changed the IR only.
// RUN: rlx-opt %s --rlx-hir-to-mir --cse --mlir-print-ir-before-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// BEFORE: IR Dump Before rlx-hir-to-mir (rlx-hir-to-mir)
// BEFORE: "rlx_hir.linear"
// BEFORE: IR Dump Before CSE (cse)
// RUN: rlx-opt %s --rlx-hir-to-mir --rlx-verify --mlir-print-ir-after-change -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHANGE
// CHANGE: IR Dump After rlx-hir-to-mir (rlx-hir-to-mir)
// CHANGE-NOT: IR Dump After rlx-verify

// Constants larger than N elements are elided, in the output and in IR printing.
// RUN: rlx-opt %s --mlir-elide-elementsattrs-if-larger=4 | FileCheck %s --check-prefix=ELIDE
// RUN: rlx-opt %s --mlir-elide-elementsattrs-if-larger 4 --cse --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=ELIDE
// ELIDE: "rlx.constant"() {value = dense_resource<__elided__> : tensor<8xf32>}
// RUN: rlx-opt %s | FileCheck %s --check-prefix=FULL
// FULL: dense<[1.000000e+00, 2.000000e+00
// RUN: not rlx-opt %s --mlir-elide-elementsattrs-if-larger=-1 2>&1 | FileCheck %s --check-prefix=ELIDE-BAD
// ELIDE-BAD: rlx-opt: error: argument --mlir-elide-elementsattrs-if-larger: expected a non-negative integer, got -1 (see rlx-opt --help)

// Timing and statistics: MLIR's reports, on stderr.
// RUN: rlx-opt %s --rlx-hir-to-mir --cse --mlir-timing --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORTS
// REPORTS: Pass statistics report
// REPORTS: CSE
// REPORTS-NEXT: num-cse'd
// REPORTS: Execution time report
// REPORTS: rlx-hir-to-mir
// REPORTS: Total

// Single-threaded MLIR gives the same output.
// RUN: rlx-opt %s --rlx-hir-to-mir --mlir-disable-threading | FileCheck %s --check-prefix=FUSABLE-NOT-DIRECT
// FUSABLE-NOT-DIRECT: "rlx.matmul"

// Ops of unregistered dialects, as MLIR's own error message suggests (one dash or two).
// RUN: not rlx-opt %S/Inputs/unregistered.mlir 2>&1 | FileCheck %s --check-prefix=UNREGISTERED
// UNREGISTERED: unregistered.mlir:3:17: error: operation being parsed with an unregistered dialect. If this is intended, please use -allow-unregistered-dialect
// RUN: rlx-opt %S/Inputs/unregistered.mlir --allow-unregistered-dialect | FileCheck %s --check-prefix=ALLOWED
// RUN: rlx-opt %S/Inputs/unregistered.mlir -allow-unregistered-dialect | FileCheck %s --check-prefix=ALLOWED
// ALLOWED: "mine.op"(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>

// Information, then exit 0.
// RUN: rlx-opt --version | FileCheck %s --check-prefix=VERSION
// VERSION: rlx-opt (rlx-mlir {{[0-9.]+}})
// VERSION-NEXT: MLIR Python bindings 22.{{[0-9.]+}}, LLVM tools 22.{{[0-9.]+}}
// RUN: rlx-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// DIALECTS: Available Dialects: {{.*}},linalg,{{.*}},rlx,rlx_hir,rlx_lir,{{.*}},tensor,
// RUN: rlx-opt --print-tools-dir | FileCheck %s --check-prefix=TOOLS
// TOOLS: {{.*}}mlir{{/|\\}}bin
// RUN: rlx-opt --print-tools-dir | %python -c "import os, sys; dirs = sys.stdin.read().strip().split(os.pathsep); print([t for t in ('mlir-opt', 'mlir-translate', 'FileCheck') if any(os.access(os.path.join(d, t), os.X_OK) for d in dirs)])" | FileCheck %s --check-prefix=TOOLS-FOUND
// TOOLS-FOUND: ['mlir-opt', 'mlir-translate', 'FileCheck']
// RUN: rlx-opt --help | FileCheck %s --check-prefix=HELP
// HELP-DAG: --mlir-timing
// HELP-DAG: --mlir-print-ir-before-all
// HELP-DAG: --mlir-print-ir-after-change
// HELP-DAG: --mlir-elide-elementsattrs-if-larger N
// HELP-DAG: --mlir-pass-statistics
// HELP-DAG: --mlir-disable-threading
// HELP-DAG: --allow-unregistered-dialect
// HELP-DAG: --dump-pass-pipeline
// HELP-DAG: --show-dialects
// HELP-DAG: --print-tools-dir
// HELP-DAG: --version

// Unknown flags: one error, `rlx-opt: error: FLAG: ...`, with suggestions among passes and options alike.
// RUN: not rlx-opt %s --verison 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION: rlx-opt: error: --verison: unknown pass or pipeline 'verison'; did you mean '--version'? (see rlx-opt --help)
// RUN: not rlx-opt %s --mlir-timin 2>&1 | FileCheck %s --check-prefix=UNKNOWN-MLIR
// UNKNOWN-MLIR: rlx-opt: error: --mlir-timin: unknown option; did you mean '--mlir-timing'? (see rlx-opt --help)
// RUN: not rlx-opt %s -o 2>&1 | FileCheck %s --check-prefix=NO-VALUE
// NO-VALUE: rlx-opt: error: argument -o: expected one argument (see rlx-opt --help)
// NO-VALUE-NOT: usage

module attributes {rlx_hir.fusion_policy = "direct"} {
  func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
    %0 = "rlx_hir.linear"(%x, %w) {activation = "gelu"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %c = "rlx.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : () -> tensor<8xf32>
    return %0, %c : tensor<4x8xf32>, tensor<8xf32>
  }
}
