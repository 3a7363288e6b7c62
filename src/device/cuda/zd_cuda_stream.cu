/* Stream-ordered calls on the caller's CUDA stream (zd_device.h): the mark is
 * an event recorded on the stream at the call; the hold is a one-thread
 * kernel queued behind it that spins on a flag in mapped host memory until
 * the progress thread releases it, so later work on the stream waits for
 * the operation without the caller's thread blocking (what NCCL's own
 * kernels achieve by being the operation).
 *
 * Flags live in one pinned slab per process, allocated at the first
 * stream-ordered call, never on the hot path after that. Each slot has a
 * release word (the host writes the ticket's generation) and an ack word
 * (the kernel writes it back once it has seen it): a slot is reused only
 * after its kernel has acknowledged, so a release never reaches a later
 * ticket's kernel. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "zd_cuda_kernels.h"
#include "zd_cuda_util.h"
#include "zd_device.h"
#include "zu_error.h"
#include "zu_log.h"

#define ZD_CUDA_SLOTS 4096

typedef struct {
  volatile unsigned long long* host; /* ZD_CUDA_SLOTS x {release, ack} */
  unsigned long long* dev;
  unsigned char busy[ZD_CUDA_SLOTS];
  unsigned long long gen[ZD_CUDA_SLOTS];
  unsigned long long next_gen;
  int next_slot;
} zd_cuda_slab_t;

static pthread_mutex_t zd_cuda_slab_lock = PTHREAD_MUTEX_INITIALIZER;
static zd_cuda_slab_t* zd_cuda_slab;

typedef struct {
  cudaEvent_t ev;
  int slot;
  unsigned long long gen;
} zd_cuda_ticket_t;

__global__ static void zd_cuda_hold_kernel(volatile unsigned long long* slot, unsigned long long gen) {
  while (slot[0] < gen) __nanosleep(2000);
  slot[1] = gen;
  __threadfence_system();
}

extern "C" zcclResult_t zd_cuda_stream_load(void) {
  ZD_CUDA_LOAD(zd_cuda_hold_kernel);
  return zcclSuccess;
}

extern "C" int zd_cuda_is_device_ptr(const void* p) {
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError(); /* not a pointer CUDA knows: host memory */
    return 0;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

/* A free slot (under the lock): never used, or acknowledged by its kernel. */
static int zd_cuda_slot_take(zd_cuda_slab_t* s) {
  for (int k = 0; k < ZD_CUDA_SLOTS; k++) {
    int i = (s->next_slot + k) % ZD_CUDA_SLOTS;
    if (!s->busy[i] || s->host[2 * i + 1] == s->gen[i]) {
      s->next_slot = (i + 1) % ZD_CUDA_SLOTS;
      return i;
    }
  }
  return -1;
}

extern "C" zcclResult_t zd_cuda_ticket_enter(zcclStream_t stream, void** state) {
  *state = NULL;
  cudaStream_t st = (cudaStream_t)stream;
  pthread_mutex_lock(&zd_cuda_slab_lock);
  if (zd_cuda_slab == NULL) {
    zd_cuda_slab_t* s = (zd_cuda_slab_t*)calloc(1, sizeof *s);
    void* host = NULL;
    cudaError_t e = s ? cudaHostAlloc(&host, 2 * ZD_CUDA_SLOTS * sizeof(unsigned long long), cudaHostAllocMapped)
                      : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)&s->dev, host, 0);
    if (e != cudaSuccess) {
      if (host) cudaFreeHost(host);
      free(s);
      pthread_mutex_unlock(&zd_cuda_slab_lock);
      return ZU_ERROR(zcclUnhandledCudaError, "stream-ordered call: no mapped host memory for its flags: %s",
                      cudaGetErrorString(e));
    }
    s->host = (volatile unsigned long long*)host;
    for (int i = 0; i < 2 * ZD_CUDA_SLOTS; i++) s->host[i] = 0;
    zd_cuda_slab = s;
  }
  zd_cuda_slab_t* s = zd_cuda_slab;
  int slot = zd_cuda_slot_take(s);
  if (slot < 0) {
    pthread_mutex_unlock(&zd_cuda_slab_lock);
    return ZU_ERROR(zcclInvalidUsage, "more than %d stream-ordered calls in flight", ZD_CUDA_SLOTS);
  }
  unsigned long long gen = ++s->next_gen;
  s->busy[slot] = 1;
  s->gen[slot] = gen;
  pthread_mutex_unlock(&zd_cuda_slab_lock);

  zd_cuda_ticket_t* t = (zd_cuda_ticket_t*)calloc(1, sizeof *t);
  cudaError_t e = t ? cudaEventCreateWithFlags(&t->ev, cudaEventDisableTiming) : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaEventRecord(t->ev, st);
  if (e == cudaSuccess) {
    ZD_KERNEL(zd_cuda_hold_kernel, 1, 1, st, s->dev + 2 * slot, gen);
    e = cudaGetLastError();
  }
  if (e != cudaSuccess) {
    pthread_mutex_lock(&zd_cuda_slab_lock);
    s->busy[slot] = 0;
    pthread_mutex_unlock(&zd_cuda_slab_lock);
    if (t && t->ev) cudaEventDestroy(t->ev);
    free(t);
    return ZU_ERROR(zcclUnhandledCudaError, "stream-ordered call: cannot order it on the stream: %s (%s)",
                    cudaGetErrorString(e), cudaGetErrorName(e));
  }
  t->slot = slot;
  t->gen = gen;
  *state = t;
  return zcclSuccess;
}

extern "C" int zd_cuda_ticket_passed(void* state) {
  zd_cuda_ticket_t* t = (zd_cuda_ticket_t*)state;
  cudaError_t e = cudaEventQuery(t->ev);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) return 0;
  ZU_WARN("stream-ordered call: the stream's earlier work failed: %s (%s)", cudaGetErrorString(e),
          cudaGetErrorName(e));
  return -1;
}

extern "C" void zd_cuda_ticket_release(void* state) {
  zd_cuda_ticket_t* t = (zd_cuda_ticket_t*)state;
  if (t == NULL) return;
  zd_cuda_slab->host[2 * t->slot] = t->gen; /* the hold kernel sees it and lets the stream go */
  __sync_synchronize();
  cudaEventDestroy(t->ev);
  free(t);
}

extern "C" zcclResult_t zd_cuda_stream_sync(zcclStream_t stream) {
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
  if (e == cudaSuccess) return zcclSuccess;
  cudaGetLastError();
  return ZU_ERROR(zcclUnhandledCudaError, "stream-ordered call: the stream's earlier work failed: %s (%s)",
                  cudaGetErrorString(e), cudaGetErrorName(e));
}

extern "C" void zd_cuda_use_device(int dev) {
  int cur = -1;
  if (dev >= 0 && (cudaGetDevice(&cur) != cudaSuccess || cur != dev) && cudaSetDevice(dev) != cudaSuccess)
    cudaGetLastError(); /* the operation's first CUDA call reports it */
}

extern "C" zcclResult_t zd_cuda_mem_alloc(void** ptr, size_t size) {
  *ptr = NULL;
  cudaError_t e = cudaMalloc(ptr, size);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *ptr = NULL;
    return ZU_ERROR(e == cudaErrorMemoryAllocation ? zcclSystemError
                    : e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? zcclInvalidUsage
                                                                                   : zcclUnhandledCudaError,
                    "zcclMemAlloc(%zu bytes): %s (%s)", size, cudaGetErrorString(e), cudaGetErrorName(e));
  }
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_mem_free(void* ptr) {
  if (ptr == NULL) return zcclSuccess;
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return ZU_ERROR(zcclInvalidArgument, "zcclMemFree(%p): %s (%s)", ptr, cudaGetErrorString(e),
                    cudaGetErrorName(e));
  }
  return zcclSuccess;
}
