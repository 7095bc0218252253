/* A fake CUDA driver (libcuda.so.1) for testing the CUDA runtime plumbing on machines
 * without a GPU: "device" memory is host memory, copies are memcpy, kernels do not run.
 * It counts what the tested code asks of it; `fake_cuda_counts` reads the counters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static long allocs, frees, copies, launches, modules;
static long long copied_bytes;

void fake_cuda_counts(long long *out) {
  out[0] = allocs; out[1] = frees; out[2] = copies; out[3] = copied_bytes; out[4] = launches; out[5] = modules;
}

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 1; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) { *device = 0; return 0; }
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  *value = attribute == 75 ? 9 : 0;  /* compute capability 9.0 */
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **context, int device) { *context = (void *)0x1; return 0; }
CUresult cuCtxPushCurrent_v2(void *context) { return 0; }
CUresult cuCtxPopCurrent_v2(void **context) { if (context) *context = (void *)0x1; return 0; }
CUresult cuStreamCreate(void **stream, unsigned flags) { *stream = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void *stream) { free(stream); return 0; }
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) { return 0; }
CUresult cuEventCreate(void **event, unsigned flags) { *event = malloc(1); return 0; }
CUresult cuEventDestroy_v2(void *event) { free(event); return 0; }
CUresult cuEventRecord(void *event, void *stream) { return 0; }
CUresult cuEventSynchronize(void *event) { return 0; }
CUresult cuMemAlloc_v2(uint64_t *pointer, size_t bytes) {
  allocs++;
  *pointer = (uint64_t)(uintptr_t)calloc(bytes ? bytes : 1, 1);
  return 0;
}
CUresult cuMemAllocManaged(uint64_t *pointer, size_t bytes, unsigned flags) { return cuMemAlloc_v2(pointer, bytes); }
CUresult cuMemFree_v2(uint64_t pointer) { frees++; free((void *)(uintptr_t)pointer); return 0; }
CUresult cuMemcpy(uint64_t dst, uint64_t src, size_t bytes) {
  copies++; copied_bytes += bytes;
  memcpy((void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes);
  return 0;
}
CUresult cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void *stream) { return cuMemcpy(dst, src, bytes); }
CUresult cuMemsetD16Async(uint64_t dst, unsigned short value, size_t count, void *stream) { return 0; }
CUresult cuMemsetD32Async(uint64_t dst, unsigned value, size_t count, void *stream) { return 0; }
CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned flags) { return 0; }
CUresult cuMemHostUnregister(void *pointer) { return 0; }
CUresult cuModuleLoadData(void **module, const void *image) { modules++; *module = malloc(1); return 0; }
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, void *options, void **values) {
  return cuModuleLoadData(module, image);
}
CUresult cuModuleUnload(void *module) { free(module); return 0; }
CUresult cuModuleGetFunction(void **function, void *module, const char *name) { *function = (void *)0x1; return 0; }
CUresult cuFuncSetAttribute(void *function, int attribute, int value) { return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  launches++;
  return 0;
}
CUresult cuLaunchKernelEx(void *config, void *f, void **params, void **extra) { launches++; return 0; }
CUresult cuGetErrorName(CUresult error, const char **name) { *name = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuTensorMapEncodeTiled(void) { return 1; }
