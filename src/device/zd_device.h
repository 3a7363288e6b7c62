/* Device layer (zd_): where buffers live and where computation on them runs
 * (host CPU, CUDA GPU, or the `sim` device that gives host memory a GPU's
 * asynchronous semantics). May use util and codec; never transport or proto.
 * The zd_ops_t table (alloc, copy, reduce, compress, ...) grows here as the
 * collectives land; for now the layer answers what hardware is present. */
#ifndef ZD_DEVICE_H_
#define ZD_DEVICE_H_

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int built;            /* 1: this library was compiled with CUDA */
  int ndevices;         /* usable CUDA devices (0 when none or no driver) */
  int runtime_version;  /* CUDART_VERSION linked, e.g. 13000 */
  int driver_version;   /* 0 when no driver */
  char archs[64];       /* architectures compiled, e.g. "80;90" */
  char status[192];     /* one line: devices found, or why there are none */
} zd_cuda_info_t;

/* Fills info. Absence of a GPU or driver is not an error (status says why);
 * returns an error only for an unexpected CUDA failure. */
zcclResult_t zd_cuda_query(zd_cuda_info_t* info);

/* The calling thread's current CUDA device, -1 when CUDA is not built or no
 * device is usable. Never fails. */
int zd_cuda_current_device(void);

/* Runs a small kernel on the current device and checks its output.
 * zcclInvalidUsage when CUDA is not built or no device is present. */
zcclResult_t zd_cuda_selftest(void);

/* Cores (not hardware threads) the calling process may run on, from hwloc;
 * at least 1. */
int zd_host_ncores(void);

#ifdef __cplusplus
}
#endif

#endif /* ZD_DEVICE_H_ */
