/* The emulated CUDA runtime as C programs see it (test/gpu/test_gpu_coll.c
 * built against it): the functions are cuda_runtime.h's, exported with C
 * linkage by emu_capi.cpp. A test's cudaLaunchHostFunc is allowed (the
 * library's is not). */
#ifndef ZEMU_CUDA_RUNTIME_API_H_
#define ZEMU_CUDA_RUNTIME_API_H_
#ifdef __cplusplus
#include "cuda_runtime.h"
#else
#include "cuda_emu_types.h"

const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t zemu_test_host_func(cudaStream_t s, cudaHostFn_t fn, void* arg);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* ev, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t* ev);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t ev);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags);
cudaError_t cudaMalloc(void** p, size_t n);
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags);
cudaError_t cudaMallocHost(void** p, size_t n);
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned flags);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s);
cudaError_t cudaFreeAsync(void* p, cudaStream_t s);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p);
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, enum cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaMemset(void* p, int v, size_t n);
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s);
cudaError_t cudaDriverGetVersion(int* v);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int dev);
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaSetDevice(int d);
#define cudaLaunchHostFunc zemu_test_host_func

#endif
#endif /* ZEMU_CUDA_RUNTIME_API_H_ */
