/* Device layer (zd_): where buffers live and where computation on them runs
 * (host CPU, CUDA GPU, or the `sim` device that gives host memory a GPU's
 * asynchronous semantics). May use util and codec; never transport or proto.
 * The zd_ops_t table (alloc, copy, reduce, compress, ...) grows here as the
 * collectives land; for now the layer answers what hardware is present. */
#ifndef ZD_DEVICE_H_
#define ZD_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

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

typedef enum { ZD_HOST = 0, ZD_SIM = 1, ZD_CUDA = 2 } zd_kind_t;
typedef struct zd_dev zd_dev_t;
typedef uint64_t zd_event_t;
zcclResult_t zd_dev_create(zd_kind_t kind, zd_dev_t** dev);
void zd_dev_destroy(zd_dev_t* dev);
zd_kind_t zd_dev_kind(const zd_dev_t* dev);
const char* zd_kind_name(zd_kind_t kind);
zcclResult_t zd_kind_from_env(zd_kind_t* kind);
zcclResult_t zd_buf_get(zd_dev_t* dev, size_t bytes, void** buf);
void zd_buf_put(zd_dev_t* dev, void* buf);
size_t zd_buf_largest(zd_dev_t* dev);
zcclResult_t zd_copy(zd_dev_t* dev, void* dst, const void* src, size_t bytes);
zcclResult_t zd_reduce(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count,
                       zcclDataType_t dtype, zcclRedOp_t op);
zcclResult_t zd_divide(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n);
zd_event_t zd_event_record(zd_dev_t* dev);
int zd_event_done(zd_dev_t* dev, zd_event_t ev);
zcclResult_t zd_event_wait(zd_dev_t* dev, zd_event_t ev);
zcclResult_t zd_sync(zd_dev_t* dev);

#ifdef __cplusplus
}
#endif

#endif /* ZD_DEVICE_H_ */
