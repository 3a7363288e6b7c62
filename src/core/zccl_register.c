/* User buffer registration (NCCL's ncclCommRegister): the buffer is mapped
 * with the communicator's transport once, and its messages then carry the
 * mapping, so UCX does not look it up or map it per transfer (what costs on
 * InfiniBand; shared memory and TCP take any memory). The handle is valid
 * until deregistered whatever the transport made of it: memory it cannot
 * map (device memory without a CUDA-aware UCX) stays a record. */
#include <stdatomic.h>
#include <stdlib.h>

#include "zccl_core.h"

#define ZCCL_REG_MAGIC 0x7a6363c17265672bull

typedef struct {
  uint64_t magic;
  zcclComm_t comm;
  void* buff;
  size_t size;
  void* memh; /* the transport's mapping, NULL where it made none */
} zccl_reg_t;

static atomic_int zccl_said_unmapped;

zcclResult_t zcclCommRegister(const zcclComm_t comm, void* buff, size_t size, void** handle) {
  static const char* fn = "zcclCommRegister";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(handle == NULL, zcclInvalidArgument, "%s: handle is NULL", fn);
  *handle = NULL;
  ZU_RETURN_ERR_IF(buff == NULL && size > 0, zcclInvalidArgument, "%s: NULL buffer of %zu bytes", fn, size);
  zccl_reg_t* g = calloc(1, sizeof *g);
  ZU_RETURN_ERR_IF(g == NULL, zcclSystemError, "%s: out of memory", fn);
  *g = (zccl_reg_t){ZCCL_REG_MAGIC, comm, buff, size, NULL};
  if (size > 0) {
    pthread_mutex_lock(&comm->worker_lock); /* the worker's table; the thread reads it as it posts */
    zcclResult_t r = zt_mem_register(comm->worker, buff, size, &g->memh);
    pthread_mutex_unlock(&comm->worker_lock);
    if (r != zcclSuccess) {
      g->memh = NULL;
      if (atomic_exchange(&zccl_said_unmapped, 1) == 0)
        ZU_INFO(ZU_LOG_NET, "%s: the transport cannot map %zu bytes at %p (%s): kept as a record, its messages "
                "are mapped per transfer", fn, size, buff, zu_error_last());
    }
  }
  *handle = g;
  return zcclSuccess;
}

zcclResult_t zcclCommDeregister(const zcclComm_t comm, void* handle) {
  static const char* fn = "zcclCommDeregister";
  ZCCL_HOLD(fn, comm);
  zccl_reg_t* g = handle;
  ZU_RETURN_ERR_IF(g == NULL || g->magic != ZCCL_REG_MAGIC || g->comm != comm, zcclInvalidArgument,
                   "%s: %p is not a handle zcclCommRegister gave for this communicator", fn, handle);
  if (g->memh) {
    pthread_mutex_lock(&comm->worker_lock);
    zt_mem_deregister(comm->worker, g->memh);
    pthread_mutex_unlock(&comm->worker_lock);
  }
  g->magic = 0;
  free(g);
  return zcclSuccess;
}
