/* CUDA presence, and a self-test kernel that proves the device and the
 * compiled architectures work together. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zd_cuda_util.h"
#include "zd_device.h"
#include "zu_error.h"

#ifndef ZCCL_CUDA_ARCHS
#define ZCCL_CUDA_ARCHS "unknown"
#endif

/* No CUDA call at all: on an H200 (driver 580) a parent that had only
 * asked cudaDriverGetVersion left its forked children with
 * cudaErrorInitializationError. The runtime's version is the one built in. */
extern "C" void zd_cuda_versions(zd_cuda_info_t* info) {
  memset(info, 0, sizeof *info);
  info->built = 1;
  snprintf(info->archs, sizeof info->archs, "%s", ZCCL_CUDA_ARCHS);
  info->runtime_version = CUDART_VERSION;
  snprintf(info->status, sizeof info->status, "built for sm %s, runtime %d", info->archs, info->runtime_version);
}

extern "C" zcclResult_t zd_cuda_query(zd_cuda_info_t* info) {
  zd_cuda_versions(info);
  cudaDriverGetVersion(&info->driver_version); /* 0 without a driver */
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    /* No driver / no device is a normal state for a host-only run. */
    snprintf(info->status, sizeof info->status, "no usable CUDA device: %s (%s)",
             cudaGetErrorString(err), cudaGetErrorName(err));
    cudaGetLastError(); /* clear, so later CUDA calls don't see it */
    return zcclSuccess;
  }
  info->ndevices = n;
  snprintf(info->status, sizeof info->status, "%d CUDA device%s", n, n == 1 ? "" : "s");
  return zcclSuccess;
}

extern "C" int zd_cuda_current_device(void) {
  int n = 0, dev = -1;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

__global__ static void zd_cuda_selftest_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i] + 1.0f;
}

#define ZD_CUDA_TRY(call, label)                                                           \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      res = ZU_ERROR(zcclUnhandledCudaError, "%s: %s (%s)", #call, cudaGetErrorString(e_), \
                     cudaGetErrorName(e_));                                                \
      goto label;                                                                          \
    }                                                                                      \
  } while (0)

extern "C" zcclResult_t zd_cuda_selftest(void) {
  enum { N = 1 << 16 };
  float* dev = NULL;
  zcclResult_t res = zcclSuccess;
  if (zd_cuda_current_device() < 0)
    return ZU_ERROR(zcclInvalidUsage, "no usable CUDA device for the self-test");
  float* host = (float*)malloc(N * sizeof(float));
  if (host == NULL) return ZU_ERROR(zcclSystemError, "self-test: out of host memory");
  for (int i = 0; i < N; i++) host[i] = (float)i;
  ZD_CUDA_TRY(cudaMalloc((void**)&dev, N * sizeof(float)), free_host);
  ZD_CUDA_TRY(cudaMemcpy(dev, host, N * sizeof(float), cudaMemcpyHostToDevice), free_dev);
  ZD_KERNEL(zd_cuda_selftest_kernel, (N + 255) / 256, 256, (cudaStream_t)0, dev, (int)N);
  ZD_CUDA_TRY(cudaGetLastError(), free_dev);
  ZD_CUDA_TRY(cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost), free_dev);
  for (int i = 0; i < N; i++) {
    if (host[i] != 2.0f * (float)i + 1.0f) {
      res = ZU_ERROR(zcclInternalError, "self-test kernel: element %d is %g, expected %g", i,
                     (double)host[i], 2.0 * i + 1.0);
      break;
    }
  }
free_dev:
  cudaFree(dev);
free_host:
  free(host);
  return res;
}
