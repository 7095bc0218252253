// Bad targets are refused before anything reaches LLVM (whose NVPTX backend
// aborts the process on a chip / PTX version pair it does not support), and a
// loop nest left on the host is an error at the loop, not a silent host loop
// over device memory.
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{chip=sm_90 features=+ptx60})' 2>&1 | FileCheck %s --check-prefix=OLD-PTX
// RUN: not rlx-opt %s '--rlx-lower-to-nvvm=chip=sm_90a features=+ptx78' 2>&1 | FileCheck %s --check-prefix=OLD-PTX-FLAG
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{chip=sm_99})' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{features=+ptx99})' 2>&1 | FileCheck %s --check-prefix=PTX99
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{features=sm_90})' 2>&1 | FileCheck %s --check-prefix=NO-PTX
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-nvvm{format=cubin})' 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: rlx-opt %s --split-input-file --rlx-gpu-check-mapping --verify-diagnostics

// OLD-PTX: <pass-pipeline>:1:16: error: 'rlx-lower-to-nvvm': PTX version 6.0 does not support 'sm_90': it needs '+ptx78' (PTX 7.8) or newer
// OLD-PTX-NEXT: builtin.module(rlx-lower-to-nvvm{chip=sm_90 features=+ptx60})
// OLD-PTX-NEXT: {{^               \^$}}
// OLD-PTX-FLAG: rlx-opt: error: --rlx-lower-to-nvvm: 'rlx-lower-to-nvvm': PTX version 7.8 does not support 'sm_90a': it needs '+ptx80' (PTX 8.0) or newer
// CHIP: error: 'rlx-lower-to-nvvm': unknown NVIDIA chip 'sm_99' (known: sm_20, {{.*}}, sm_90, sm_90a, sm_100, {{.*}})
// PTX99: error: 'rlx-lower-to-nvvm': PTX version 9.9 ('+ptx99') is not supported by LLVM 22 (supported: 3.2, {{.*}}, 9.0)
// NO-PTX: error: 'rlx-lower-to-nvvm': features 'sm_90' must name exactly one PTX version, such as '+ptx80'
// FORMAT: error: 'rlx-lower-to-nvvm': unknown binary format 'cubin' (formats: isa, bin, fatbin)

func.func @scale(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  // expected-error @+1 {{'scf.for' was not mapped to the GPU: it would run on the host in '@scale' over device memory}}
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %out[%i] : memref<8xf32>
  }
  return
}

// -----

// A loop that launches kernels (a scan over steps) may stay on the host; element
// accesses next to it may not.
func.func @steps(%x: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%tx] : memref<8xf32>
      memref.store %v, %x[%c0] : memref<8xf32>
      gpu.terminator
    }
  }
  // expected-error @+1 {{'memref.load' was not mapped to the GPU: it would run on the host in '@steps'}}
  %v = memref.load %x[%c0] : memref<8xf32>
  // expected-error @+1 {{'linalg.fill' was not mapped to the GPU}}
  linalg.fill ins(%v : f32) outs(%x : memref<8xf32>)
  return
}
