/* The cuda device: ZCCL_DEVICE_STREAMS non-blocking streams (lanes) on the
 * GPU that was current when the device was created, each a zd_cuda_t with
 * its own marks, size slots and codec scratch (what follows is per lane);
 * the buffer pool in cudaMalloc'd memory. A lane waits for another through
 * a CUDA event recorded on the other's stream.
 *
 * No host function (cudaLaunchHostFunc) is queued: on an H200 one did not
 * return while another thread of the process waited in a pageable copy
 * behind a stream-ordered call's hold (docs/cuda.md), and the progress
 * thread queues work while callers wait. What the host must see in stream
 * order comes through marks, CUDA events that a waiting thread polls:
 * - events: an event is a mark's sequence number; it has passed when every
 *   mark up to it has (the stream passes them in order).
 * - stream sizes: proto passes host size_t pointers that are read and
 *   written when the operation runs. A kernel reads and writes sizes in
 *   slots of pinned, mapped memory. A size the host knows is stored in a
 *   fresh slot when the operation is queued; one still to come from a
 *   kernel queued earlier (a compress, then a hop of its stream) is read
 *   from that kernel's slot (the lane's table of sizes in flight), which is
 *   held until the reader's mark has passed. The mark after a kernel that
 *   writes a size copies the slot to the caller's size_t when a poll finds
 *   that it has passed. Slots are a ring, freed as marks pass.
 * - errors: each codec kernel stores a zcclResult_t in a status slot of its
 *   own (first wins); the mark after it moves a stored error to the device
 *   and the next wait reports it. A failed launch is returned at once; a
 *   fault in the context fails the event queries, so waits report it.
 *
 * With ZCCL_PERSISTENT_KERNEL=1 the codec operations go to one persistent
 * kernel per device (zd_cuda_kernels.h) instead of a launch each: on the
 * lane's stream a cuStreamWriteValue32 opens the item's gate (the work
 * queued before it is done), and a cuStreamWaitValue32 on the kernel's
 * done word holds what follows until the item has completed; the marks
 * around it are the same as around a launch. Items of every lane run in
 * submission order, one at a time, each over the whole GPU. */
#include <cuda.h> /* types of the two stream memory operations, fetched from the driver at run time */
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_cuda_kernels.h"
#include "zd_cuda_util.h"
#include "zd_dev_impl.h"
#include "zu_param.h"
#include "zu_time.h"

#define ZD_CUDA_SLOTS 1024 /* size and status slots in flight */
#define ZD_CUDA_MARKS 1024 /* marks in flight; issuing waits beyond */
#define ZD_CUDA_SIZES 256  /* sizes a kernel is still to write, per lane */
#define ZD_CUDA_HOLDS 256  /* slots read by kernels queued after their writer's mark */
#define ZD_CUDA_RETIRED 48 /* scratch doubles from 64 KiB: 48 growths is more than memory */

typedef struct {
  double range[2];
  unsigned long long valid;
} zd_range_t;

/* Pinned and mapped: host and kernels share it. */
typedef struct {
  zd_range_t range;
  uint64_t slots[ZD_CUDA_SLOTS];
} zd_pinned_t;

/* What a mark carries out when it has passed. */
typedef struct {
  size_t* out;              /* *out = *out_slot */
  const uint64_t* out_slot;
  const volatile int* status; /* the operation's status slot, or NULL */
  const char* what;           /* the operation, for its error */
  uint64_t release;           /* slots taken before this index are free then (held ones excepted) */
} zd_mark_t;

/* A size a kernel queued on this lane is still to write. */
typedef struct {
  const size_t* ptr; /* the caller's size_t */
  uint64_t slot;     /* the slot's index in the ring */
  uint64_t seq;      /* the mark that copies it to *ptr */
} zd_size_t;

typedef struct {
  uint64_t slot, until; /* slot stays taken until mark until has passed */
} zd_hold_t;

struct zd_cuda { /* one lane of the device: its stream and what goes with it */
  int ordinal;
  cudaStream_t stream;
  cudaEvent_t xev; /* recorded on another lane's stream for zd_lane_wait */
  zd_pinned_t* pin;   /* host address */
  zd_pinned_t* pin_d; /* device address */
  zd_range_t* range_d; /* device memory: the range kernels' atomics stay on the GPU */
  void* scratch;       /* codec scratch: grows, stream-ordered, never shrinks */
  size_t scratch_bytes;
  void* retired[ZD_CUDA_RETIRED]; /* persistent kernel: scratch outgrown, freed with the device */
  int nretired;
  zd_cuda_persist_t* persist; /* the device's persistent kernel (lane 0 owns it), or NULL */
  uint32_t* gate_d;           /* device word this lane's stream writes to open its items' gates */
  uint32_t gate_val;          /* the last value written (issuer only) */
  pthread_mutex_t lock;
  /* under lock; ran also read without it (zd_event_done): marks issued, and
   * the highest that has passed */
  uint64_t issued, ran;
  cudaEvent_t events[ZD_CUDA_MARKS]; /* mark seq's at (seq - 1) % ZD_CUDA_MARKS */
  zd_mark_t marks[ZD_CUDA_MARKS];
  uint64_t slots_taken, slots_free; /* slot ring: free below slots_free */
  uint64_t released;                /* the highest release of a passed mark */
  zd_hold_t holds[ZD_CUDA_HOLDS];
  int nholds;
  /* under lock: what ZCCL_DEBUG=INFO reports when the device goes */
  unsigned long long n_marks, n_waits;
  double wait_s;
  zcclResult_t err; /* first error since the last wait reported one */
  char err_msg[256];
  /* issuer only */
  int dirty; /* work queued after the last mark */
  unsigned long long n_ops; /* operations queued */
  zd_size_t sizes[ZD_CUDA_SIZES];
  int nsizes;
};

/* Makes the device's GPU current on this thread for a scope (proto issues
 * from the communicator's threads, whose current device may be another). */
struct zd_on_gpu {
  int prev, want;
  explicit zd_on_gpu(int gpu) : prev(-1), want(gpu) {
    if (cudaGetDevice(&prev) != cudaSuccess) {
      cudaGetLastError();
      prev = -1;
    }
    if (prev != want) cudaSetDevice(want); /* a failure shows in the calls that follow */
  }
  ~zd_on_gpu() {
    if (prev >= 0 && prev != want) cudaSetDevice(prev);
  }
};

/* ---- marks --------------------------------------------------------------- */

/* Lock held: mark seq has passed; carries it out. */
static void zd_mark_passed(zd_cuda_t* c, uint64_t seq) {
  zd_mark_t* m = &c->marks[(seq - 1) % ZD_CUDA_MARKS];
  if (m->out) *m->out = (size_t)*m->out_slot;
  if (m->status) {
    int st = *m->status;
    if (st != zcclSuccess && c->err == zcclSuccess) {
      c->err = (zcclResult_t)st;
      snprintf(c->err_msg, sizeof c->err_msg, "%s (queued on the cuda device) reported %s",
               m->what ? m->what : "a kernel", zu_error_name((zcclResult_t)st));
    }
  }
  if (m->release > c->released) c->released = m->release;
  uint64_t free_to = c->released;
  for (int i = 0; i < c->nholds;) {
    if (c->holds[i].until <= seq) {
      c->holds[i] = c->holds[--c->nholds];
      continue;
    }
    if (c->holds[i].slot < free_to) free_to = c->holds[i].slot;
    i++;
  }
  if (free_to > c->slots_free) c->slots_free = free_to;
  __atomic_store_n(&c->ran, seq, __ATOMIC_RELEASE);
}

/* Lock held: advances ran over the marks that have passed. No host
 * function ever takes the lock, so the queries may be made holding it. */
static zcclResult_t zd_cuda_poll(zd_cuda_t* c) {
  while (c->ran < c->issued) {
    const uint64_t seq = c->ran + 1;
    cudaError_t e = cudaEventQuery(c->events[(seq - 1) % ZD_CUDA_MARKS]);
    if (e == cudaErrorNotReady) return zcclSuccess;
    if (e != cudaSuccess)
      return ZU_ERROR(zcclUnhandledCudaError, "cuda device: the stream failed: %s (%s)", cudaGetErrorString(e),
                      cudaGetErrorName(e));
    zd_mark_passed(c, seq);
  }
  return zcclSuccess;
}

/* Waits, lock held, until ready(), polling the marks: yielding at first,
 * then sleeping 20 us, then (after about 50 ms) 200 us between polls. */
template <class READY>
static zcclResult_t zd_cuda_block(zd_cuda_t* c, READY ready) {
  double t0 = 0;
  for (int round = 0;; round++) {
    ZU_CHECK(zd_cuda_poll(c));
    if (ready()) {
      if (round) c->wait_s += zu_now() - t0;
      return zcclSuccess;
    }
    if (round == 0) {
      c->n_waits++;
      t0 = zu_now();
    }
    pthread_mutex_unlock(&c->lock);
    if (round < 64) {
      sched_yield();
    } else {
      struct timespec nap = {0, round < 2500 ? 20000L : 200000L};
      nanosleep(&nap, NULL);
    }
    pthread_mutex_lock(&c->lock);
  }
}

/* A mark after the work queued so far, carrying m (NULL: nothing) out. The
 * slots taken until now are freed when it passes; with close, the open
 * holds (zd_size_in) last until it. *seq (may be NULL): its number. */
static zcclResult_t zd_mark(zd_cuda_t* c, const zd_mark_t* m, int close, uint64_t* seq) {
  pthread_mutex_lock(&c->lock);
  zcclResult_t res = zd_cuda_block(c, [c] { return c->issued - c->ran < ZD_CUDA_MARKS; });
  if (res != zcclSuccess) {
    pthread_mutex_unlock(&c->lock);
    return res;
  }
  const uint64_t s = c->issued + 1;
  zd_mark_t* slot = &c->marks[(s - 1) % ZD_CUDA_MARKS];
  if (m)
    *slot = *m;
  else
    memset(slot, 0, sizeof *slot);
  slot->release = c->slots_taken;
  if (close)
    for (int i = 0; i < c->nholds; i++)
      if (c->holds[i].until == UINT64_MAX) c->holds[i].until = s;
  /* Recorded under the lock: a poll meanwhile must not query the event's
   * previous record for this mark (no host function waits for the lock). */
  cudaError_t e = cudaEventRecord(c->events[(s - 1) % ZD_CUDA_MARKS], c->stream);
  if (e == cudaSuccess) {
    c->issued = s;
    c->n_marks++;
  }
  pthread_mutex_unlock(&c->lock);
  if (e != cudaSuccess)
    return ZU_ERROR(zcclUnhandledCudaError, "cuda device: cudaEventRecord: %s (%s)", cudaGetErrorString(e),
                    cudaGetErrorName(e));
  c->dirty = 0;
  if (seq) *seq = s;
  return zcclSuccess;
}

/* k slots for one operation: host and device addresses, and their ring
 * indices. A full ring frees itself with a mark after the work queued. */
static zcclResult_t zd_slots_take(zd_cuda_t* c, int k, uint64_t** host, uint64_t** dev, uint64_t* index) {
  pthread_mutex_lock(&c->lock);
  int full = c->slots_taken - c->slots_free + (uint64_t)k > ZD_CUDA_SLOTS;
  pthread_mutex_unlock(&c->lock);
  if (full) ZU_CHECK(zd_mark(c, NULL, 0, NULL));
  pthread_mutex_lock(&c->lock);
  zcclResult_t res =
      zd_cuda_block(c, [c, k] { return c->slots_taken - c->slots_free + (uint64_t)k <= ZD_CUDA_SLOTS; });
  if (res == zcclSuccess) {
    for (int i = 0; i < k; i++) {
      size_t at = (size_t)(c->slots_taken % ZD_CUDA_SLOTS);
      if (index) index[i] = c->slots_taken;
      c->slots_taken++;
      host[i] = &c->pin->slots[at];
      dev[i] = &c->pin_d->slots[at];
    }
  }
  pthread_mutex_unlock(&c->lock);
  return res;
}

/* ---- sizes in flight ----------------------------------------------------- */

/* Drops the entries of the lane's table whose mark has passed: their value
 * is in the caller's size_t now. */
static void zd_sizes_prune(zd_cuda_t* c) {
  uint64_t ran = __atomic_load_n(&c->ran, __ATOMIC_ACQUIRE);
  for (int i = 0; i < c->nsizes;)
    if (c->sizes[i].seq <= ran)
      c->sizes[i] = c->sizes[--c->nsizes];
    else
      i++;
}

/* The entry of the lane's table for ptr whose mark has not passed, or -1. */
static int zd_size_find(zd_cuda_t* c, const size_t* ptr) {
  zd_sizes_prune(c);
  for (int i = 0; i < c->nsizes; i++)
    if (c->sizes[i].ptr == ptr) return i;
  return -1;
}

/* Waits until mark seq of lane c has passed. */
static zcclResult_t zd_mark_wait(zd_cuda_t* c, uint64_t seq) {
  pthread_mutex_lock(&c->lock);
  zcclResult_t res = zd_cuda_block(c, [c, seq] { return c->ran >= seq; });
  pthread_mutex_unlock(&c->lock);
  return res;
}

/* Where a kernel queued now on lane c reads the size *ptr will hold when
 * it runs: *dev_slot. A size another lane's kernel is still to write is
 * waited for; one of this lane's is read from its writer's slot, held open
 * until the reader's mark (zd_mark with close); otherwise *ptr, stored now
 * in the fresh slot the operation took for it (host and device address;
 * taken before any hold opens, so a full ring never waits for a hold of
 * the operation waiting). */
static zcclResult_t zd_size_in(zd_dev_t* dev, zd_cuda_t* c, const size_t* ptr, uint64_t* fresh_host,
                               uint64_t* fresh_dev, uint64_t** dev_slot) {
  for (int l = 0; l < dev->nlanes; l++) {
    zd_cuda_t* o = dev->cuda[l];
    if (o == c) continue;
    int i = zd_size_find(o, ptr);
    if (i >= 0) ZU_CHECK(zd_mark_wait(o, o->sizes[i].seq));
  }
  int i = zd_size_find(c, ptr);
  if (i >= 0) {
    pthread_mutex_lock(&c->lock);
    int pending = c->ran < c->sizes[i].seq;
    if (pending && c->nholds < ZD_CUDA_HOLDS) {
      zd_hold_t* h = &c->holds[c->nholds++];
      h->slot = c->sizes[i].slot;
      h->until = UINT64_MAX; /* open */
      *dev_slot = &c->pin_d->slots[c->sizes[i].slot % ZD_CUDA_SLOTS];
      pthread_mutex_unlock(&c->lock);
      return zcclSuccess;
    }
    pthread_mutex_unlock(&c->lock);
    if (pending) ZU_CHECK(zd_mark_wait(c, c->sizes[i].seq)); /* too many holds: the value itself */
  }
  *fresh_host = (uint64_t)*ptr;
  *dev_slot = fresh_dev;
  return zcclSuccess;
}

/* An operation failed before its mark: its open holds last until the
 * last mark issued (they are dropped when a later one passes). */
static void zd_holds_drop(zd_cuda_t* c) {
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->nholds; i++)
    if (c->holds[i].until == UINT64_MAX) c->holds[i].until = c->issued;
  pthread_mutex_unlock(&c->lock);
}

/* A size a kernel queued on c writes into slot index (ring index) for ptr,
 * copied to *ptr by mark seq: later readers take it from the slot. */
static zcclResult_t zd_size_out(zd_dev_t* dev, zd_cuda_t* c, const size_t* ptr, uint64_t index, uint64_t seq) {
  for (int l = 0; l < dev->nlanes; l++) {
    zd_cuda_t* o = dev->cuda[l];
    int i = zd_size_find(o, ptr);
    if (i < 0) continue;
    if (o == c) {
      o->sizes[i] = o->sizes[--o->nsizes]; /* this lane's marks pass in order: the new one wins */
    } else {
      ZU_CHECK(zd_mark_wait(o, o->sizes[i].seq)); /* its copy must not land after this one's */
    }
  }
  if (c->nsizes == ZD_CUDA_SIZES) {
    ZU_CHECK(zd_mark_wait(c, c->sizes[0].seq));
    zd_sizes_prune(c);
  }
  zd_size_t* s = &c->sizes[c->nsizes++];
  s->ptr = ptr;
  s->slot = index;
  s->seq = seq;
  return zcclSuccess;
}

/* Codec scratch of at least bytes, from the stream-ordered pool on the
 * lane's stream: no device synchronisation, and no cudaMalloc, which on an
 * H200 did not return while a caller waited in a pageable copy behind a
 * held stream (docs/cuda.md); it happens only when a larger call than any
 * before comes. The old one is freed in stream order after the kernels
 * using it; with the persistent kernel, which is ordered after the lane
 * only by the gates (on its own stream), it stays until the device goes.
 * The new one's use by that kernel follows its allocation on the lane's
 * stream through the gate the lane writes after it. */
static zcclResult_t zd_scratch(zd_cuda_t* c, size_t bytes) {
  if (bytes <= c->scratch_bytes) return zcclSuccess;
  size_t size = 64 << 10;
  while (size < bytes) size *= 2;
  ZU_RETURN_ERR_IF(c->persist && c->scratch && c->nretired == ZD_CUDA_RETIRED, zcclInternalError,
                   "cuda device: codec scratch grew %d times", ZD_CUDA_RETIRED);
  void* m = NULL;
  ZD_CUDA_RETURN(cudaMallocAsync(&m, size, c->stream));
  if (c->scratch && c->persist)
    c->retired[c->nretired++] = c->scratch;
  else if (c->scratch)
    ZD_CUDA_RETURN(cudaFreeAsync(c->scratch, c->stream));
  c->scratch = m;
  c->scratch_bytes = size;
  return zcclSuccess;
}

/* ---- persistent kernel --------------------------------------------------- */

/* cuStreamWriteValue32 / cuStreamWaitValue32 (driver API, CUDA 12 ABI),
 * looked up at run time: the library links only the runtime. */
typedef CUresult (*zd_memop32_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static zd_memop32_t zd_write_value32, zd_wait_value32;

static zcclResult_t zd_memops_load(void) {
  const char* names[2] = {"cuStreamWriteValue32", "cuStreamWaitValue32"};
  zd_memop32_t* fns[2] = {&zd_write_value32, &zd_wait_value32};
  for (int i = 0; i < 2; i++) {
    if (__atomic_load_n(fns[i], __ATOMIC_ACQUIRE)) continue; /* another device's init found it */
    void* fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(names[i], &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == NULL)
      return ZU_ERROR(zcclUnhandledCudaError,
                      "ZCCL_PERSISTENT_KERNEL=1: the driver has no %s (%s); unset it to launch kernels per operation",
                      names[i], e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
    __atomic_store_n(fns[i], (zd_memop32_t)fn, __ATOMIC_RELEASE);
  }
  return zcclSuccess;
}

static zcclResult_t zd_memop_fail(CUresult r, const char* what) {
  return ZU_ERROR(zcclUnhandledCudaError, "cuda device (ZCCL_PERSISTENT_KERNEL=1): %s failed with CUresult %d", what,
                  (int)r);
}

/* One codec operation: launched on the lane's stream, or with a persistent
 * kernel an item between a gate the stream opens and a wait for its
 * completion on the stream. */
template <class PERSIST, class LAUNCH>
static zcclResult_t zd_codec_run(zd_cuda_t* c, PERSIST persist, LAUNCH launch) {
  if (c->persist == NULL) return launch();
  const uint32_t gv = c->gate_val + 1;
  CUresult r = zd_write_value32((CUstream)c->stream, (CUdeviceptr)(uintptr_t)c->gate_d, gv, 0);
  if (r != CUDA_SUCCESS) return zd_memop_fail(r, "cuStreamWriteValue32");
  c->gate_val = gv;
  uint64_t seq = 0;
  ZU_CHECK(persist(c->gate_d, gv, &seq));
  r = zd_wait_value32((CUstream)c->stream, (CUdeviceptr)(uintptr_t)zd_cuda_persist_done_word(c->persist),
                      (cuuint32_t)seq, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) return zd_memop_fail(r, "cuStreamWaitValue32");
  return zcclSuccess;
}

/* ---- lifetime ------------------------------------------------------------ */

/* Frees what init made (any part may be missing), after the stream's work. */
static void zd_cuda_release(zd_cuda_t* c) {
  /* The persistent kernel is gone by now (zd_cuda_fini). */
  if (c->scratch) cudaFreeAsync(c->scratch, c->stream);
  for (int i = 0; i < c->nretired; i++) cudaFreeAsync(c->retired[i], c->stream);
  if (c->stream) cudaStreamSynchronize(c->stream);
  if (c->range_d) cudaFree(c->range_d);
  if (c->gate_d) cudaFree(c->gate_d);
  if (c->pin) cudaFreeHost(c->pin);
  for (int k = 0; k < ZD_CUDA_MARKS; k++)
    if (c->events[k]) cudaEventDestroy(c->events[k]);
  if (c->xev) cudaEventDestroy(c->xev);
  if (c->stream) cudaStreamDestroy(c->stream);
  cudaGetLastError(); /* a failed context fails these too; nothing more to do */
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* One lane on GPU gpu: a non-blocking stream, its pinned words, events. */
static zcclResult_t zd_cuda_lane_make(int gpu, zd_cuda_t** out) {
  zd_cuda_t* c = (zd_cuda_t*)calloc(1, sizeof *c);
  ZU_RETURN_ERR_IF(c == NULL, zcclSystemError, "cuda device: out of memory");
  c->ordinal = gpu;
  pthread_mutex_init(&c->lock, NULL);
  zcclResult_t res = zcclSuccess;
  zd_on_gpu on(gpu);
  cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  const char* what = "cudaStreamCreateWithFlags";
  if (e == cudaSuccess) {
    what = "cudaHostAlloc (mapped)";
    e = cudaHostAlloc((void**)&c->pin, sizeof *c->pin, cudaHostAllocMapped);
  }
  if (e == cudaSuccess) {
    what = "cudaHostGetDevicePointer";
    e = cudaHostGetDevicePointer((void**)&c->pin_d, c->pin, 0);
  }
  if (e == cudaSuccess) {
    what = "cudaMalloc";
    e = cudaMalloc((void**)&c->range_d, sizeof *c->range_d);
  }
  if (e == cudaSuccess) {
    what = "cudaEventCreateWithFlags";
    e = cudaEventCreateWithFlags(&c->xev, cudaEventDisableTiming);
  }
  for (int k = 0; k < ZD_CUDA_MARKS && e == cudaSuccess; k++)
    e = cudaEventCreateWithFlags(&c->events[k], cudaEventDisableTiming);
  if (e != cudaSuccess) {
    res = ZU_ERROR(zcclUnhandledCudaError, "cuda device on GPU %d: %s: %s (%s)", gpu, what, cudaGetErrorString(e),
                   cudaGetErrorName(e));
    zd_cuda_release(c);
    return res;
  }
  memset(c->pin, 0, sizeof *c->pin);
  *out = c;
  return zcclSuccess;
}

/* ZCCL_PERSISTENT_KERNEL=1: the engine (not yet launched: the first item
 * does), shared by the lanes, and each lane's gate word. */
static zcclResult_t zd_cuda_persist_init(zd_dev_t* dev, int gpu) {
  int64_t idle_us = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_PERSISTENT_IDLE_US, &idle_us));
  ZU_RETURN_ERR_IF(idle_us < 1 || idle_us > 60000000, zcclInvalidArgument,
                   "ZCCL_PERSISTENT_IDLE_US=%lld: expected 1..60000000", (long long)idle_us);
  int64_t ctas = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_PERSISTENT_CTAS, &ctas));
  ZU_RETURN_ERR_IF(ctas < 0 || ctas > 65536, zcclInvalidArgument, "ZCCL_PERSISTENT_CTAS=%lld: expected 0..65536",
                   (long long)ctas);
  ZU_CHECK(zd_memops_load());
  zd_on_gpu on(gpu);
  zd_cuda_persist_t* p = NULL;
  ZU_CHECK(zd_cuda_persist_create((unsigned long long)idle_us, (int)ctas, &p));
  for (int l = 0; l < dev->nlanes; l++) { /* lane 0's pointer owns it: destroyed with the device */
    zd_cuda_t* c = dev->cuda[l];
    c->persist = p;
    ZD_CUDA_RETURN(cudaMalloc((void**)&c->gate_d, sizeof *c->gate_d));
    ZD_CUDA_RETURN(cudaMemset(c->gate_d, 0, sizeof *c->gate_d));
  }
  ZU_INFO(ZU_LOG_DEVICE, "cuda device on GPU %d: codec work in a persistent kernel of %d CTAs (idle exit after %lld us)",
          gpu, zd_cuda_persist_ctas(p), (long long)idle_us);
  return zcclSuccess;
}

static zcclResult_t zd_cuda_init(zd_dev_t* dev) {
  int gpu = zd_cuda_current_device();
  if (gpu < 0) {
    zd_cuda_info_t info;
    zd_cuda_query(&info);
    if (strstr(info.status, "no usable CUDA device") != NULL)
      return ZU_ERROR(zcclInvalidUsage, "the cuda device: %s", info.status);
    return ZU_ERROR(zcclInvalidUsage, "the cuda device: no usable CUDA device (%s)", info.status);
  }
  zcclResult_t res = zcclSuccess;
  for (int l = 0; l < dev->nlanes && res == zcclSuccess; l++) res = zd_cuda_lane_make(gpu, &dev->cuda[l]);
  /* Before any call holds a stream (zd_cuda_kernels.h, "loading"). */
  if (res == zcclSuccess) {
    zd_on_gpu on(gpu);
    res = zd_cuda_kernels_load();
  }
  int64_t persistent = 0;
  if (res == zcclSuccess) res = zu_param_int(ZU_PARAM_PERSISTENT_KERNEL, &persistent);
  if (res == zcclSuccess && persistent) res = zd_cuda_persist_init(dev, gpu);
  if (res != zcclSuccess) {
    if (dev->cuda[0] && dev->cuda[0]->persist) zd_cuda_persist_destroy(dev->cuda[0]->persist);
    for (int l = 0; l < dev->nlanes; l++)
      if (dev->cuda[l]) zd_cuda_release(dev->cuda[l]), dev->cuda[l] = NULL;
    return res;
  }
  dev->gpu = gpu;
  ZU_INFO(ZU_LOG_DEVICE, "cuda device on GPU %d: %d non-blocking stream(s), %d slots and %d event marks each", gpu,
          dev->nlanes, ZD_CUDA_SLOTS, ZD_CUDA_MARKS);
  return zcclSuccess;
}

static void zd_cuda_fini(zd_dev_t* dev) {
  /* Every lane's stream first (their persistent items done), then the
   * persistent kernel, then the lanes' memory. */
  for (int l = 0; l < dev->nlanes; l++) {
    zd_cuda_t* c = dev->cuda[l];
    if (c == NULL) continue;
    zd_on_gpu on(c->ordinal);
    cudaError_t e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess)
      ZU_WARN("cuda device destroyed after its stream failed: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    else if (c->err != zcclSuccess)
      ZU_WARN("cuda device destroyed with an unreported error: %s", c->err_msg);
  }
  /* Where a call's fixed cost may go: operations, marks, and the host's
   * waits for marks (sizes before sends, events). */
  unsigned long long ops = 0, marks = 0, waits = 0;
  double wait_s = 0;
  for (int l = 0; l < dev->nlanes; l++) {
    zd_cuda_t* c = dev->cuda[l];
    if (c == NULL) continue;
    ops += c->n_ops, marks += c->n_marks, waits += c->n_waits, wait_s += c->wait_s;
  }
  ZU_INFO(ZU_LOG_DEVICE,
          "cuda device: %llu operations queued, %llu marks, the host waited for a mark %llu times (%.3f ms in all)",
          ops, marks, waits, wait_s * 1e3);
  if (dev->cuda[0] && dev->cuda[0]->persist) {
    zd_on_gpu on(dev->cuda[0]->ordinal);
    ZU_INFO(ZU_LOG_DEVICE, "cuda device: the persistent kernel was launched %llu times",
            zd_cuda_persist_launches(dev->cuda[0]->persist));
    zd_cuda_persist_destroy(dev->cuda[0]->persist);
  }
  for (int l = 0; l < dev->nlanes; l++) {
    if (dev->cuda[l] == NULL) continue;
    zd_cuda_release(dev->cuda[l]);
    dev->cuda[l] = NULL;
  }
}

static zcclResult_t zd_cuda_pool_alloc(zd_dev_t* dev, size_t bytes, void** mem) {
  zd_on_gpu on(dev->gpu);
  cudaError_t e = cudaMalloc(mem, bytes);
  if (e != cudaSuccess) {
    *mem = NULL;
    return ZU_ERROR(zcclUnhandledCudaError,
                    "cannot allocate the buffer pool on GPU %d (ZCCL_BUFFER_POOL_BYTES=%zu): %s (%s)", dev->gpu, bytes,
                    cudaGetErrorString(e), cudaGetErrorName(e));
  }
  return zcclSuccess;
}

static void zd_cuda_pool_free(zd_dev_t* dev, void* mem) {
  zd_on_gpu on(dev->gpu);
  cudaFree(mem);
}

/* ---- operations ------------------------------------------------------------ */

/* One codec operation: a status slot, an output size slot (compress,
 * hop), where its kernel reads its input sizes (zd_size_in), the launch
 * (or persistent item), then a mark that collects the status and the size. */
static zcclResult_t zd_cuda_codec_op(zd_dev_t* dev, zd_cuda_t* c, const zd_op_t* op) {
  uint64_t* in_d[2] = {NULL, NULL};
  const int has_out = op->kind != ZD_OP_DECODE;
  const char* what = op->kind == ZD_OP_ENCODE ? "zd_encode" : op->kind == ZD_OP_REDUCE_ENCODED ? "zd_reduce_encoded"
                                                                                                : "zd_decode";
  if ((op->kind != ZD_OP_ENCODE && op->kind != ZD_OP_DECODE && op->kind != ZD_OP_REDUCE_ENCODED) ||
      !(op->codec->caps & ZC_CAP_STREAM))
    /* zd_dev.c refuses other codecs for this kind before queueing. */
    return ZU_ERROR(zcclInvalidUsage, "the cuda device has kernels for the stream format only (operation %d)",
                    (int)op->kind);
  zcclResult_t res = zcclSuccess;
  if (op->kind == ZD_OP_ENCODE) {
    unsigned log2 = op->params.chunk_log2 ? op->params.chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
    res = zd_scratch(c, zd_cuda_codec_scratch_bytes(op->count, op->params.dtype, log2));
  } else if (op->kind == ZD_OP_REDUCE_ENCODED) {
    res = zd_scratch(c, zd_cuda_hop_scratch_bytes(op->cap));
  }
  /* Slots: 0 status, 1 the output size (compress, hop), 2 and 3 the inputs'
   * sizes (decompress, hop) when the host has them; all taken at once, so
   * a mark that frees the ring never comes between them (it would free the
   * first before its kernel has read it). */
  const int nin = op->kind == ZD_OP_REDUCE_ENCODED ? 2 : op->kind == ZD_OP_DECODE ? 1 : 0;
  uint64_t *hs[4], *ds[4], idx[4];
  if (res == zcclSuccess) res = zd_slots_take(c, 2 + nin, hs, ds, idx);
  const size_t* in_ptr[2] = {op->a_size, op->b_size};
  for (int k = 0; k < nin && res == zcclSuccess; k++)
    res = zd_size_in(dev, c, in_ptr[k], hs[2 + k], ds[2 + k], &in_d[k]);
  if (res != zcclSuccess) {
    zd_holds_drop(c);
    return res;
  }
  int* status = (int*)ds[0];
  *(volatile int*)hs[0] = zcclSuccess;
  auto persist = [&](const uint32_t* gate, uint32_t gv, uint64_t* seq) {
    switch (op->kind) {
      case ZD_OP_ENCODE:
        return zd_cuda_persist_compress(c->persist, &op->params, op->a, op->count, op->dst, op->cap, ds[1],
                                        c->scratch, c->scratch_bytes, status, gate, gv, seq);
      case ZD_OP_DECODE:
        return zd_cuda_persist_decompress(c->persist, op->a, in_d[0], op->dst, op->count, status, gate, gv, seq);
      default:
        return zd_cuda_persist_hop(c->persist, op->op, op->a, in_d[0], op->b, in_d[1], op->dst, op->cap, ds[1],
                                   c->scratch, c->scratch_bytes, status, gate, gv, seq);
    }
  };
  auto launch = [&] {
    switch (op->kind) {
      case ZD_OP_ENCODE:
        return zd_cuda_compress(&op->params, op->a, op->count, op->dst, op->cap, ds[1], c->scratch,
                                c->scratch_bytes, status, c->stream);
      case ZD_OP_DECODE:
        return zd_cuda_decompress(op->a, in_d[0], op->dst, op->count, status, c->stream);
      default:
        return zd_cuda_hop(op->op, op->a, in_d[0], op->b, in_d[1], op->dst, op->cap, ds[1], c->scratch,
                           c->scratch_bytes, status, c->stream);
    }
  };
  res = zd_codec_run(c, persist, launch);
  if (res != zcclSuccess) {
    zd_holds_drop(c);
    return res;
  }
  zd_mark_t m;
  memset(&m, 0, sizeof m);
  m.status = (const volatile int*)hs[0];
  m.what = what;
  if (has_out) {
    m.out = op->out_size;
    m.out_slot = hs[1];
  }
  uint64_t seq = 0;
  res = zd_mark(c, &m, 1, &seq);
  if (res != zcclSuccess) {
    zd_holds_drop(c);
    return res;
  }
  return has_out ? zd_size_out(dev, c, op->out_size, idx[1], seq) : zcclSuccess;
}

/* A sized copy: its status slot and where it reads the size (zd_size_in),
 * the launch, then a mark that collects the status. */
static zcclResult_t zd_cuda_copy_sized_op(zd_dev_t* dev, zd_cuda_t* c, const zd_op_t* op) {
  uint64_t *hs[2], *ds[2], idx[2], *in_d = NULL;
  zcclResult_t res = zd_slots_take(c, 2, hs, ds, idx);
  if (res == zcclSuccess) res = zd_size_in(dev, c, op->a_size, hs[1], ds[1], &in_d);
  if (res == zcclSuccess) {
    *(volatile int*)hs[0] = zcclSuccess;
    res = zd_cuda_copy_sized(op->dst, op->a, in_d, op->cap, (int*)ds[0], c->stream);
  }
  if (res == zcclSuccess) {
    zd_mark_t m;
    memset(&m, 0, sizeof m);
    m.status = (const volatile int*)hs[0];
    m.what = "zd_copy_sized";
    res = zd_mark(c, &m, 1, NULL);
  }
  if (res != zcclSuccess) zd_holds_drop(c);
  return res;
}

static zcclResult_t zd_cuda_submit(zd_dev_t* dev, const zd_op_t* op) {
  zd_cuda_t* c = dev->cuda[dev->lane];
  zd_on_gpu on(c->ordinal);
  c->n_ops++;
  switch (op->kind) {
    case ZD_OP_COPY:
      ZD_CUDA_RETURN(cudaMemcpyAsync(op->dst, op->a, op->count, cudaMemcpyDefault, c->stream));
      break;
    case ZD_OP_REDUCE:
      ZU_CHECK(zd_cuda_reduce(op->dst, op->a, op->b, op->count, op->dtype, op->op, op->params.has_fill,
                              op->params.fill, c->stream));
      break;
    case ZD_OP_DIVIDE:
      ZU_CHECK(zd_cuda_divide(op->dst, op->count, op->dtype, op->n, op->params.has_fill, op->params.fill, c->stream));
      break;
    case ZD_OP_SCALE:
      ZU_CHECK(zd_cuda_scale(op->dst, op->a, op->count, op->dtype, op->b, op->scalar, c->stream));
      break;
    case ZD_OP_COPY_SIZED:
      return zd_cuda_copy_sized_op(dev, c, op);
    default:
      return zd_cuda_codec_op(dev, c, op);
  }
  c->dirty = 1;
  return zcclSuccess;
}

/* ---- events ------------------------------------------------------------------ */

static zd_event_t zd_cuda_record(zd_dev_t* dev) {
  zd_cuda_t* c = dev->cuda[dev->lane];
  if (c->dirty) {
    zd_on_gpu on(c->ordinal);
    zcclResult_t res = zd_mark(c, NULL, 0, NULL);
    if (res != zcclSuccess) {
      /* No event to give: the failure is kept for the next wait (whose
       * event, an earlier one, passes). */
      pthread_mutex_lock(&c->lock);
      if (c->err == zcclSuccess) {
        c->err = res;
        snprintf(c->err_msg, sizeof c->err_msg, "zd_event_record: %s", zu_error_last());
      }
      pthread_mutex_unlock(&c->lock);
    }
  }
  pthread_mutex_lock(&c->lock);
  zd_event_t ev = zd_ev_make(dev->lane, c->issued);
  pthread_mutex_unlock(&c->lock);
  return ev;
}

static int zd_cuda_done(zd_dev_t* dev, zd_event_t lev) {
  zd_cuda_t* c = dev->cuda[zd_ev_lane(lev)];
  uint64_t ev = zd_ev_seq(lev);
  uint64_t ran = __atomic_load_n(&c->ran, __ATOMIC_ACQUIRE);
  if (ran >= ev) return 1;
  pthread_mutex_lock(&c->lock);
  if (zd_cuda_poll(c) != zcclSuccess) cudaGetLastError(); /* the next wait reports the failed stream */
  int done = c->ran >= ev;
  pthread_mutex_unlock(&c->lock);
  return done;
}

static zcclResult_t zd_cuda_wait(zd_dev_t* dev, zd_event_t lev) {
  zd_cuda_t* c = dev->cuda[zd_ev_lane(lev)];
  uint64_t ev = zd_ev_seq(lev);
  zd_on_gpu on(c->ordinal);
  pthread_mutex_lock(&c->lock);
  if (ev > c->issued) { /* would never pass: an idle stream is not a failed one */
    pthread_mutex_unlock(&c->lock);
    return ZU_ERROR(zcclInvalidArgument, "zd_event_wait: event %llu was not recorded on this device",
                    (unsigned long long)ev);
  }
  zcclResult_t res = zd_cuda_block(c, [c, ev] { return c->ran >= ev; });
  zcclResult_t err = c->err;
  char msg[sizeof c->err_msg];
  memcpy(msg, c->err_msg, sizeof msg);
  c->err = zcclSuccess;
  pthread_mutex_unlock(&c->lock);
  /* Recorded again here so zcclGetLastError of the waiting thread has it;
   * a queued operation's failure came first, before any failed poll. */
  if (err != zcclSuccess) return ZU_ERROR(err, "a queued cuda operation failed: %s", msg);
  return res;
}

/* The current lane waits for the other lane's work queued so far (a
 * superset of what ev covers: an event recorded now), on the GPU. */
static zcclResult_t zd_cuda_lane_wait(zd_dev_t* dev, zd_event_t ev) {
  zd_cuda_t *src = dev->cuda[zd_ev_lane(ev)], *dst = dev->cuda[dev->lane];
  if (__atomic_load_n(&src->ran, __ATOMIC_ACQUIRE) >= zd_ev_seq(ev)) return zcclSuccess; /* passed */
  zd_on_gpu on(dst->ordinal);
  ZD_CUDA_RETURN(cudaEventRecord(dst->xev, src->stream));
  ZD_CUDA_RETURN(cudaStreamWaitEvent(dst->stream, dst->xev, 0)); /* takes the record made just now */
  return zcclSuccess;
}

/* The range into device memory, copied to the pinned area, then a wait. */
static zcclResult_t zd_cuda_range(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                                  double fill, double* min, double* max, size_t* valid) {
  zd_cuda_t* c = dev->cuda[dev->lane];
  {
    zd_on_gpu on(c->ordinal);
    ZU_CHECK(zd_cuda_value_range(in, count, dtype, has_fill, fill, c->range_d->range, &c->range_d->valid, c->stream));
    ZD_CUDA_RETURN(
        cudaMemcpyAsync(&c->pin->range, c->range_d, sizeof c->pin->range, cudaMemcpyDeviceToHost, c->stream));
    c->dirty = 1;
  }
  ZU_CHECK(zd_cuda_wait(dev, zd_cuda_record(dev)));
  *valid = (size_t)c->pin->range.valid;
  if (*valid) {
    *min = c->pin->range.range[0];
    *max = c->pin->range.range[1];
  }
  return zcclSuccess;
}

/* Staging memory: pinned, so the copies in and out are DMA at full speed. */
static zcclResult_t zd_cuda_host_alloc(zd_dev_t* dev, size_t bytes, void** mem) {
  zd_on_gpu on(dev->gpu);
  cudaError_t e = cudaHostAlloc(mem, bytes, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    *mem = NULL;
    return ZU_ERROR(zcclUnhandledCudaError, "cannot allocate %zu bytes of pinned staging memory: %s (%s)", bytes,
                    cudaGetErrorString(e), cudaGetErrorName(e));
  }
  return zcclSuccess;
}

static void zd_cuda_host_free(zd_dev_t* dev, void* mem) {
  zd_on_gpu on(dev->gpu);
  cudaFreeHost(mem);
}

/* name, init, fini, submit, record, done, wait, lane_wait, pool_alloc, pool_free, value_range, host_alloc,
 * host_free */
extern "C" const zd_ops_t zd_cuda_ops = {
    "cuda",          zd_cuda_init,       zd_cuda_fini,      zd_cuda_submit,    zd_cuda_record,
    zd_cuda_done,    zd_cuda_wait,       zd_cuda_lane_wait, zd_cuda_pool_alloc, zd_cuda_pool_free,
    zd_cuda_range,   zd_cuda_host_alloc, zd_cuda_host_free,
};

/* ---- tests ------------------------------------------------------------------- */

__global__ static void zd_k_post_error(int* status, int code) { atomicCAS(status, (int)zcclSuccess, code); }

extern "C" zcclResult_t zd_cuda_kernels_load(void) {
  ZU_CHECK(zd_cuda_reduce_load());
  ZU_CHECK(zd_cuda_codec_load());
  ZU_CHECK(zd_cuda_stream_load());
  ZD_CUDA_LOAD(zd_k_post_error);
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_post_error(zd_dev_t* dev, zcclResult_t code) {
  ZU_RETURN_ERR_IF(dev == NULL || zd_dev_kind(dev) != ZD_CUDA, zcclInvalidUsage,
                   "zd_cuda_post_error: not a cuda device");
  zd_cuda_t* c = dev->cuda[dev->lane];
  zd_on_gpu on(c->ordinal);
  uint64_t *h = NULL, *d = NULL;
  ZU_CHECK(zd_slots_take(c, 1, &h, &d, NULL));
  *(volatile int*)h = zcclSuccess;
  ZD_KERNEL(zd_k_post_error, 1, 1, c->stream, (int*)d, (int)code);
  ZD_CUDA_LAUNCHED("zd_cuda_post_error");
  zd_mark_t m;
  memset(&m, 0, sizeof m);
  m.status = (const volatile int*)h;
  m.what = "zd_cuda_post_error";
  return zd_mark(c, &m, 0, NULL);
}
