/* The persistent kernel's host side (ZCCL_PERSISTENT_KERNEL=1): the queue
 * of items in mapped pinned memory, the lock its pushers take, and the
 * kernel's launch when it has left for want of work (idle exit). The kernel
 * and the items' checks are zd_cuda_codec.cu's (how the kernel takes the
 * items: the comment on "persistent mode" there); what the two files share
 * is zd_cuda_queue.h. The host emulation of test/unit/cuda_emu compiles this
 * file inside zd_cuda_codec.cu (see the end of that file). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_cuda_kernels.h"
#include "zd_cuda_queue.h"
#include "zu_error.h"

struct zd_cuda_persist {
  zd_pq_t* q;     /* host address */
  zd_pq_t* q_d;   /* device address */
  zd_pctl_t* ctl; /* device memory */
  cudaStream_t stream;
  int grid;
  unsigned long long idle_ns;
  unsigned long long launches;
  cudaError_t broken; /* a launch failed: every later push fails with it */
  pthread_mutex_t lock; /* pushers */
};

extern "C" zcclResult_t zd_cuda_persist_create(unsigned long long idle_us, int ctas, zd_cuda_persist_t** out) {
  ZU_RETURN_ERR_IF(out == NULL, zcclInvalidArgument, "zd_cuda_persist_create: NULL argument");
  *out = NULL;
  zd_cuda_persist_t* p = (zd_cuda_persist_t*)calloc(1, sizeof *p);
  ZU_RETURN_ERR_IF(p == NULL, zcclSystemError, "zd_cuda_persist_create: out of memory");
  pthread_mutex_init(&p->lock, NULL);
  p->idle_ns = idle_us * 1000ull;
  int dev = 0, sms = 0, per = 0;
  cudaError_t e = cudaGetDevice(&dev);
  const char* what = "cudaGetDevice";
  if (e == cudaSuccess) {
    what = "cudaDeviceGetAttribute";
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  }
  if (e == cudaSuccess) {
    what = "cudaOccupancyMaxActiveBlocksPerMultiprocessor";
    e = zd_cuda_pq_occupancy(&per);
  }
  if (e == cudaSuccess) {
    what = "cudaStreamCreateWithFlags";
    e = cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking);
  }
  if (e == cudaSuccess) {
    what = "cudaHostAlloc (mapped)";
    e = cudaHostAlloc((void**)&p->q, sizeof *p->q, cudaHostAllocMapped);
  }
  if (e == cudaSuccess) {
    memset(p->q, 0, sizeof *p->q); /* also before a failure below: destroy reads it */
    p->q->dead = 1;                /* launched at the first item */
    what = "cudaHostGetDevicePointer";
    e = cudaHostGetDevicePointer((void**)&p->q_d, p->q, 0);
  }
  if (e == cudaSuccess) {
    what = "cudaMalloc";
    e = cudaMalloc((void**)&p->ctl, sizeof *p->ctl);
  }
  if (e == cudaSuccess) {
    what = "cudaMemset";
    e = cudaMemset(p->ctl, 0, sizeof *p->ctl);
  }
  if (e != cudaSuccess || per < 1) {
    zcclResult_t res = e != cudaSuccess ? zd_cuda_fail(e, what)
                                        : ZU_ERROR(zcclInternalError, "persistent kernel: no CTA fits on an SM");
    zd_cuda_persist_destroy(p);
    return res;
  }
  /* At most one CTA per SM, and by default half of them: a CTA takes an
   * SM's registers, and an item's gate may wait for a launched kernel
   * (value range, reduction, the user's) that needs a free SM; with every
   * SM held, that kernel could start only once idle CTAs left. */
  p->grid = ctas > 0 ? (ctas < sms ? ctas : sms) : (sms > 1 ? sms / 2 : 1);
  *out = p;
  return zcclSuccess;
}

/* Lock held: waits until done >= seq, polling; fails only when the
 * engine's stream has failed. */
static zcclResult_t zd_persist_wait_locked(zd_cuda_persist_t* p, uint64_t seq) {
  for (unsigned long round = 0; __atomic_load_n(&p->q->done, __ATOMIC_ACQUIRE) < seq; round++) {
    if (round < 64) {
      sched_yield();
      continue;
    }
    if (round % 512 == 0) {
      cudaError_t e = cudaStreamQuery(p->stream);
      if (e != cudaSuccess && e != cudaErrorNotReady) return zd_cuda_fail(e, "persistent kernel");
    }
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_persist_wait(zd_cuda_persist_t* p, uint64_t seq) {
  pthread_mutex_lock(&p->lock);
  zcclResult_t res = zd_persist_wait_locked(p, seq);
  pthread_mutex_unlock(&p->lock);
  return res;
}

/* Publishes the items, waking the kernel when it has left. */
static zcclResult_t zd_persist_push_locked(zd_cuda_persist_t* p, const zd_pitem_t* items, int n, uint64_t* seq) {
  zd_pq_t* q = p->q;
  if (p->broken != cudaSuccess) return zd_cuda_fail(p->broken, "persistent kernel (an earlier launch failed)");
  for (int i = 0; i < n; i++) {
    const uint64_t k = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
    if (k >= ZD_PQ) ZU_CHECK(zd_persist_wait_locked(p, k + 1 - ZD_PQ)); /* item k - ZD_PQ's slot */
    memcpy(&q->item[k % ZD_PQ], &items[i], sizeof items[i]);
    __atomic_store_n(&q->tail, k + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the tail before the look at dead (see above) */
    if (__atomic_load_n(&q->dead, __ATOMIC_RELAXED)) {
      __atomic_store_n(&q->dead, 0, __ATOMIC_RELAXED);
      zd_pargs_t P = {p->q_d, p->ctl, (unsigned)p->grid, p->idle_ns};
      cudaError_t e = zd_cuda_pq_launch(P, p->grid, p->stream);
      if (e != cudaSuccess) { /* no kernel runs: nothing may wait for one */
        __atomic_store_n(&q->dead, 1, __ATOMIC_RELAXED);
        p->broken = e;
        return zd_cuda_fail(e, "persistent kernel launch");
      }
      p->launches++;
    }
    *seq = k + 1;
  }
  return zcclSuccess;
}

static zcclResult_t zd_persist_submit(zd_cuda_persist_t* p, const zd_pitem_t* items, int n, uint64_t* seq) {
  pthread_mutex_lock(&p->lock);
  zcclResult_t res = zd_persist_push_locked(p, items, n, seq);
  pthread_mutex_unlock(&p->lock);
  return res;
}

static void zd_pitem_init(zd_pitem_t* it, uint32_t kind, const uint32_t* gate, uint32_t gate_val) {
  memset(it, 0, sizeof *it);
  it->kind = kind;
  it->gate = gate;
  it->gate_val = gate_val;
}

extern "C" zcclResult_t zd_cuda_persist_compress(zd_cuda_persist_t* p, const zc_params_t* prm, const void* in,
                                                 size_t count, void* out, size_t cap, uint64_t* out_size,
                                                 void* scratch, size_t scratch_bytes, int* status,
                                                 const uint32_t* gate, uint32_t gate_val, uint64_t* seq) {
  ZU_RETURN_ERR_IF(p == NULL || seq == NULL, zcclInvalidArgument, "zd_cuda_persist_compress: NULL argument");
  zd_pitem_t it;
  zd_pitem_init(&it, ZD_P_COMPRESS, gate, gate_val);
  ZU_CHECK(zd_compress_args(prm, in, count, out, cap, out_size, scratch, scratch_bytes, status, &it.a.c));
  return zd_persist_submit(p, &it, 1, seq);
}

extern "C" zcclResult_t zd_cuda_persist_decompress(zd_cuda_persist_t* p, const void* stream_bytes,
                                                   const uint64_t* size, void* out, size_t count, int* status,
                                                   const uint32_t* gate, uint32_t gate_val, uint64_t* seq) {
  ZU_RETURN_ERR_IF(p == NULL || seq == NULL, zcclInvalidArgument, "zd_cuda_persist_decompress: NULL argument");
  zd_pitem_t it;
  zd_pitem_init(&it, ZD_P_DECOMPRESS, gate, gate_val);
  ZU_CHECK(zd_decompress_args(stream_bytes, size, out, count, status, &it.a.d));
  return zd_persist_submit(p, &it, 1, seq);
}

/* In place, a staging item first (what the staging kernel does per launch):
 * items run in order, so every copy is made before the hop writes. */
extern "C" zcclResult_t zd_cuda_persist_hop(zd_cuda_persist_t* p, zcclRedOp_t op, const void* a,
                                            const uint64_t* a_size, const void* b, const uint64_t* b_size, void* out,
                                            size_t cap, uint64_t* out_size, void* scratch, size_t scratch_bytes,
                                            int* status, const uint32_t* gate, uint32_t gate_val, uint64_t* seq) {
  ZU_RETURN_ERR_IF(p == NULL || seq == NULL, zcclInvalidArgument, "zd_cuda_persist_hop: NULL argument");
  zd_pitem_t it[2];
  zd_pitem_init(&it[0], ZD_P_HOP_STAGE, gate, gate_val);
  ZU_CHECK(zd_hop_args(op, a, a_size, b, b_size, out, cap, out_size, scratch, scratch_bytes, status, &it[0].a.h));
  if (!it[0].a.h.inplace) {
    it[0].kind = ZD_P_HOP;
    return zd_persist_submit(p, it, 1, seq);
  }
  zd_pitem_init(&it[1], ZD_P_HOP, NULL, 0);
  it[1].a.h = it[0].a.h;
  return zd_persist_submit(p, it, 2, seq);
}

extern "C" const uint32_t* zd_cuda_persist_done_word(const zd_cuda_persist_t* p) { return &p->ctl->done32; }

extern "C" unsigned long long zd_cuda_persist_launches(zd_cuda_persist_t* p) {
  pthread_mutex_lock(&p->lock);
  unsigned long long n = p->launches;
  pthread_mutex_unlock(&p->lock);
  return n;
}

extern "C" int zd_cuda_persist_ctas(const zd_cuda_persist_t* p) { return p->grid; }

extern "C" void zd_cuda_persist_destroy(zd_cuda_persist_t* p) {
  if (p == NULL) return;
  if (p->q) {
    pthread_mutex_lock(&p->lock);
    zcclResult_t res = zd_persist_wait_locked(p, __atomic_load_n(&p->q->tail, __ATOMIC_RELAXED));
    pthread_mutex_unlock(&p->lock);
    if (res != zcclSuccess) ZU_WARN("persistent kernel destroyed with items not done: %s", zu_error_last());
    __atomic_store_n(&p->q->quit, 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
  if (p->stream) {
    cudaStreamSynchronize(p->stream);
    cudaStreamDestroy(p->stream);
  }
  if (p->ctl) cudaFree(p->ctl);
  if (p->q) cudaFreeHost(p->q);
  cudaGetLastError();
  pthread_mutex_destroy(&p->lock);
  free(p);
}
