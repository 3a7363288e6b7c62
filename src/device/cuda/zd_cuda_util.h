/* CUDA runtime errors as zcclResult_t, for the .cu files of the device layer. */
#ifndef ZD_CUDA_UTIL_H_
#define ZD_CUDA_UTIL_H_

#include <cuda_runtime.h>

#include "zu_error.h"

/* Returns zcclUnhandledCudaError naming the call and CUDA's message when
 * call fails. */
#define ZD_CUDA_RETURN(call)                                                                 \
  do {                                                                                       \
    cudaError_t zd_e_ = (call);                                                              \
    if (zd_e_ != cudaSuccess)                                                                \
      return ZU_ERROR(zcclUnhandledCudaError, "%s: %s (%s)", #call, cudaGetErrorString(zd_e_), \
                      cudaGetErrorName(zd_e_));                                              \
  } while (0)

/* After a <<<>>> launch: its configuration error (cleared, as launch errors
 * are not sticky), as zcclUnhandledCudaError naming what launched. */
#define ZD_CUDA_LAUNCHED(what)                                                                \
  do {                                                                                        \
    cudaError_t zd_e_ = cudaGetLastError();                                                   \
    if (zd_e_ != cudaSuccess)                                                                 \
      return ZU_ERROR(zcclUnhandledCudaError, "%s: kernel launch: %s (%s)", (what),           \
                      cudaGetErrorString(zd_e_), cudaGetErrorName(zd_e_));                    \
  } while (0)

/* kernel<<<grid, block, 0, stream>>>(...), written so that the host
 * emulation of test/unit/cuda_emu (which defines it first) can run it. */
#ifndef ZD_KERNEL
#define ZD_KERNEL(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

/* Loads kernel on the current GPU now (cudaFuncGetAttributes does), rather
 * than at its first launch: see zd_cuda_kernels_load. */
#define ZD_CUDA_LOAD(kernel)                                                                  \
  do {                                                                                        \
    cudaFuncAttributes zd_a_;                                                                 \
    cudaError_t zd_e_ = cudaFuncGetAttributes(&zd_a_, (const void*)(kernel));                 \
    if (zd_e_ != cudaSuccess)                                                                 \
      return ZU_ERROR(zcclUnhandledCudaError, "loading kernel %s: %s (%s)", #kernel,          \
                      cudaGetErrorString(zd_e_), cudaGetErrorName(zd_e_));                    \
  } while (0)

#endif /* ZD_CUDA_UTIL_H_ */
