// Every pass and pipeline option is checked against the range declared next to
// its default, before anything runs: one error naming the option, the value and
// the valid range, at the pipeline element's column; exit code 1.

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=-1})' 2>&1 | FileCheck %s --check-prefix=LLVM-NEG
// LLVM-NEG: <pass-pipeline>:1:16: error: option 'threads' of 'rlx-lower-to-llvm': expected an integer in [0, 1024], got -1
// LLVM-NEG-NEXT: builtin.module(rlx-lower-to-llvm{threads=-1})
// LLVM-NEG-NEXT: {{^               \^$}}
// LLVM-NEG-NOT: Traceback

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(cse,rlx-lower-to-llvm{threads=99999})' 2>&1 | FileCheck %s --check-prefix=LLVM-BIG
// LLVM-BIG: <pass-pipeline>:1:20: error: option 'threads' of 'rlx-lower-to-llvm': expected an integer in [0, 1024], got 99999

// The default thread count comes from RLX_NUM_THREADS, checked as strictly.
// RUN: env RLX_NUM_THREADS=abc not rlx-opt %s --rlx-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=ENV-TEXT
// ENV-TEXT: rlx-opt: error: --rlx-lower-to-llvm: RLX_NUM_THREADS must be a positive integer, got 'abc'
// ENV-TEXT-NOT: internal error

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-tile-matmul{threads=-2})' 2>&1 | FileCheck %s --check-prefix=TILE
// TILE: <pass-pipeline>:1:16: error: option 'threads' of 'rlx-tile-matmul': expected an integer in [1, 1024], got -2

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-parallelize-linalg{threads=0})' 2>&1 | FileCheck %s --check-prefix=PARALLEL
// PARALLEL: <pass-pipeline>:1:16: error: option 'threads' of 'rlx-parallelize-linalg': expected an integer in [1, 1024], got 0

// pack-rows=0 is meaningful (pack every B); a negative row count is not.
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-pack-matmul{pack-rows=-1})' 2>&1 | FileCheck %s --check-prefix=PACK
// PACK: <pass-pipeline>:1:16: error: option 'pack-rows' of 'rlx-pack-matmul': expected an integer >= 0, got -1

// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir{alignment=48})' 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: <pass-pipeline>:1:16: error: option 'alignment' of 'rlx-mir-to-lir': expected a power of two, got 48

// GPU pipelines: checked on the pipeline named, not only on the passes it expands to.
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{tile=0})' 2>&1 | FileCheck %s --check-prefix=NVVM-TILE
// NVVM-TILE: <pass-pipeline>:1:16: error: option 'tile' of 'rlx-lower-to-nvvm': expected an integer in [1, 32], got 0
// NVVM-TILE-NOT: internal error
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{block-size=0})' 2>&1 | FileCheck %s --check-prefix=NVVM-BLOCK
// NVVM-BLOCK: <pass-pipeline>:1:16: error: option 'block-size' of 'rlx-lower-to-nvvm': expected a power of two in [1, 1024], got 0
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-gpu{block-size=48})' 2>&1 | FileCheck %s --check-prefix=GPU-BLOCK
// GPU-BLOCK: <pass-pipeline>:1:16: error: option 'block-size' of 'rlx-lower-to-gpu': expected a power of two in [1, 1024], got 48
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{opt-level=4})' 2>&1 | FileCheck %s --check-prefix=NVVM-OPT
// NVVM-OPT: <pass-pipeline>:1:16: error: option 'opt-level' of 'rlx-lower-to-nvvm': expected an integer in [0, 3], got 4

// The same check for one flag per pass, and for the passes a pipeline builds from the environment.
// RUN: not rlx-opt %s --rlx-parallelize-linalg=threads=0 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: rlx-opt: error: --rlx-parallelize-linalg: option 'threads' of 'rlx-parallelize-linalg': expected an integer in [1, 1024], got 0
// RUN: env RLX_NUM_THREADS=5000 not rlx-opt %s --rlx-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=ENV
// ENV: rlx-opt: error: --rlx-lower-to-llvm: option 'threads' of 'rlx-tile-matmul': expected an integer in [1, 1024], got 5000

// The listing shows each range.
// RUN: rlx-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST: --rlx-parallelize-linalg
// LIST-NEXT: threads=2 {{ *}}number of chunks (threads) per op (an integer in [1, 1024])

// Values inside the ranges still work.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-pack-matmul{pack-rows=0},rlx-parallelize-linalg{threads=1},rlx-tile-matmul{threads=1024})' | FileCheck %s --check-prefix=OK
// OK: func.func @f

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
