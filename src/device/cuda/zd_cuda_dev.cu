/* The cuda device: ZCCL_DEVICE_STREAMS non-blocking streams (lanes) on the
 * GPU that was current when the device was created, each a zd_cuda_t with
 * its own notes, size slots, status word and codec scratch (what follows is
 * per lane); the buffer pool in cudaMalloc'd memory. A lane waits for
 * another through a CUDA event recorded on the other's stream.
 *
 * Host functions on the stream ("notes", cudaLaunchHostFunc) bridge what
 * the host must see in stream order:
 * - stream sizes: proto passes host size_t pointers that are read and
 *   written when the operation runs. A note before a kernel copies *size
 *   into a slot of pinned, mapped memory that the kernel reads; a note after
 *   a kernel copies the slot the kernel wrote into *out_size. Slots are a
 *   ring, free again once a note after the kernel using them has run.
 * - events: an event is a mark's sequence number; it has passed when every
 *   mark up to it has (the stream passes them in order). A mark is a note
 *   or, with ZCCL_CUDA_EVENT_MARKS=1 and no status word to collect since
 *   the last note, a CUDA event that the waiting thread polls: on an H200
 *   the progress thread stopped in cudaLaunchHostFunc while the caller
 *   waited in a pageable copy behind a stream-ordered call's hold, and a
 *   collective without compression then needs no host function at all.
 * - errors: kernels store a zcclResult_t in a mapped status word (first
 *   wins); each note, running while the stream waits for it, moves a stored
 *   error to the device and resets the word; the next wait reports it.
 *   A failed launch is returned at once. After a fault in the context CUDA
 *   runs no more host functions, so waits poll the stream for its error.
 * The issuer never holds the lock across a CUDA call: a host function
 * waiting for the lock could otherwise stall a launch waiting for room in
 * the stream.
 *
 * With ZCCL_PERSISTENT_KERNEL=1 the codec operations go to one persistent
 * kernel per device (zd_cuda_kernels.h) instead of a launch each: on the
 * lane's stream a cuStreamWriteValue32 opens the item's gate (the work
 * queued before it is done), and a cuStreamWaitValue32 on the kernel's
 * done word holds what follows until the item has completed; the notes
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

#define ZD_CUDA_SLOTS 1024 /* stream sizes in flight */
#define ZD_CUDA_NOTES 2048 /* host functions in flight; issuing waits beyond */
#define ZD_CUDA_POLL_NS 10000000L /* how often a wait checks for a failed stream */
#define ZD_CUDA_RETIRED 48        /* scratch doubles from 64 KiB: 48 growths is more than memory */

typedef struct {
  double range[2];
  unsigned long long valid;
} zd_range_t;

/* Pinned and mapped: host and kernels share it. */
typedef struct {
  int status; /* zcclResult_t, written by kernels with atomicCAS from zcclSuccess */
  zd_range_t range;
  uint64_t slots[ZD_CUDA_SLOTS];
} zd_pinned_t;

/* One host function's work: before a kernel, *in_slot[i] = *in[i]; after
 * one, *out = *out_slot. */
typedef struct {
  zd_cuda_t* c;
  const size_t* in[2];
  uint64_t* in_slot[2];
  size_t* out;
  const uint64_t* out_slot;
  uint64_t release; /* slots taken before this index are free once it has run */
  const char* what; /* the last operation with a status word before it */
  uint64_t seq;     /* its mark's number */
} zd_note_t;

/* What mark k is (notes[k % ZD_CUDA_NOTES] or events[...]). */
enum { ZD_MARK_NOTE, ZD_MARK_EVENT, ZD_MARK_RECORDING };

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
  pthread_cond_t ran_cv;
  /* under lock; ran also read without it (zd_event_done): marks issued, and
   * the highest that has passed */
  uint64_t issued, ran;
  unsigned char kind[ZD_CUDA_NOTES]; /* ZD_MARK_*, of mark seq at (seq - 1) % ZD_CUDA_NOTES */
  cudaEvent_t* events;               /* ZD_CUDA_NOTES of them with event marks, else NULL */
  uint64_t slots_taken, slots_free; /* slot ring: free below slots_free */
  zcclResult_t err;                 /* first error since the last wait reported one */
  char err_msg[256];
  /* issuer only */
  int dirty;        /* work queued after the last mark */
  int need_note;    /* a kernel that may write the status word queued after the last note */
  const char* what; /* the last operation given the status word */
  zd_note_t notes[ZD_CUDA_NOTES];
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

/* ---- notes ------------------------------------------------------------- */

static void CUDART_CB zd_note_run(void* arg) {
  zd_note_t* n = (zd_note_t*)arg;
  zd_cuda_t* c = n->c;
  for (int i = 0; i < 2; i++)
    if (n->in[i]) *n->in_slot[i] = (uint64_t)*n->in[i];
  if (n->out) *n->out = (size_t)*n->out_slot;
  /* The stream waits for this function: no kernel of it writes the word now. */
  volatile int* status = &c->pin->status;
  int st = *status;
  if (st != zcclSuccess) *status = zcclSuccess;
  pthread_mutex_lock(&c->lock);
  if (st != zcclSuccess && c->err == zcclSuccess) {
    c->err = (zcclResult_t)st;
    snprintf(c->err_msg, sizeof c->err_msg, "%s (queued on the cuda device) reported %s",
             n->what ? n->what : "a kernel", zu_error_name((zcclResult_t)st));
  }
  if (n->release > c->slots_free) c->slots_free = n->release;
  if (n->seq > c->ran) __atomic_store_n(&c->ran, n->seq, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&c->ran_cv);
  pthread_mutex_unlock(&c->lock);
}

/* Lock held: advances ran over the event marks that have passed (a note
 * advances it itself when it runs; a later mark cannot pass before it).
 * The query is made without the lock: a host function waiting for the
 * lock must not meet a CUDA call waiting for the host function. */
static zcclResult_t zd_cuda_poll(zd_cuda_t* c) {
  while (c->ran < c->issued) {
    const uint64_t seq = c->ran + 1;
    const size_t k = (size_t)((seq - 1) % ZD_CUDA_NOTES);
    if (c->kind[k] != ZD_MARK_EVENT) return zcclSuccess;
    cudaEvent_t ev = c->events[k]; /* not reused before it has passed: the ring is full until then */
    pthread_mutex_unlock(&c->lock);
    cudaError_t e = cudaEventQuery(ev);
    pthread_mutex_lock(&c->lock);
    if (e == cudaErrorNotReady) return zcclSuccess;
    if (e != cudaSuccess)
      return ZU_ERROR(zcclUnhandledCudaError, "cuda device: the stream failed: %s (%s)", cudaGetErrorString(e),
                      cudaGetErrorName(e));
    if (seq > c->ran) __atomic_store_n(&c->ran, seq, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&c->ran_cv);
  }
  return zcclSuccess;
}

/* The next mark to pass is an event: nothing will signal it, so waits poll. */
static int zd_cuda_polling(const zd_cuda_t* c) {
  return c->ran < c->issued && c->kind[c->ran % ZD_CUDA_NOTES] != ZD_MARK_NOTE;
}

/* Waits, lock held, until ready(): host functions never run after a fault
 * in the context, so every ZD_CUDA_POLL_NS the stream is asked for its
 * error; event marks are polled, yielding at first, then every 20 us. */
template <class READY>
static zcclResult_t zd_cuda_block(zd_cuda_t* c, READY ready) {
  for (int round = 0;; round++) {
    if (c->events) ZU_CHECK(zd_cuda_poll(c));
    if (ready()) break;
    if (zd_cuda_polling(c)) {
      pthread_mutex_unlock(&c->lock);
      if (round < 64) {
        sched_yield();
      } else {
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
      }
      pthread_mutex_lock(&c->lock);
      continue;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ZD_CUDA_POLL_NS;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(&c->ran_cv, &c->lock, &ts) != ETIMEDOUT || ready()) continue;
    pthread_mutex_unlock(&c->lock);
    cudaError_t e = cudaStreamQuery(c->stream);
    pthread_mutex_lock(&c->lock);
    if (e != cudaSuccess && e != cudaErrorNotReady)
      return ZU_ERROR(zcclUnhandledCudaError, "cuda device: the stream failed: %s (%s)", cudaGetErrorString(e),
                      cudaGetErrorName(e));
  }
  return zcclSuccess;
}

/* Lock held: the next mark, of kind, once the ring has room; *k its place
 * in notes / events. */
static zcclResult_t zd_mark_take(zd_cuda_t* c, unsigned char kind, size_t* k) {
  ZU_CHECK(zd_cuda_block(c, [c] { return c->issued - c->ran < ZD_CUDA_NOTES; }));
  *k = (size_t)(c->issued % ZD_CUDA_NOTES);
  c->kind[*k] = kind;
  c->issued++;
  return zcclSuccess;
}

/* Reserves the next note, waiting while the ring is full; release: the
 * slots free once it has run (UINT64_MAX: every slot taken so far). */
static zcclResult_t zd_note_reserve(zd_cuda_t* c, uint64_t release, zd_note_t** out) {
  pthread_mutex_lock(&c->lock);
  size_t k;
  zcclResult_t res = zd_mark_take(c, ZD_MARK_NOTE, &k);
  if (res == zcclSuccess) {
    zd_note_t* n = &c->notes[k];
    memset(n, 0, sizeof *n);
    n->c = c;
    n->seq = c->issued;
    n->release = release == UINT64_MAX ? c->slots_taken : release;
    n->what = c->what;
    *out = n;
  }
  pthread_mutex_unlock(&c->lock);
  return res;
}

/* Queues the note reserved last; a failed launch takes the reservation back
 * (the note will never run, so no event may count it). */
static zcclResult_t zd_note_issue(zd_cuda_t* c, zd_note_t* n) {
  cudaError_t e = cudaLaunchHostFunc(c->stream, zd_note_run, n);
  if (e != cudaSuccess) {
    pthread_mutex_lock(&c->lock);
    c->issued--;
    pthread_mutex_unlock(&c->lock);
    return ZU_ERROR(zcclUnhandledCudaError, "cuda device: cudaLaunchHostFunc: %s (%s)", cudaGetErrorString(e),
                    cudaGetErrorName(e));
  }
  c->dirty = 0;
  c->need_note = 0;
  return zcclSuccess;
}

/* A mark that is a CUDA event (ZCCL_CUDA_EVENT_MARKS=1). */
static zcclResult_t zd_event_mark(zd_cuda_t* c) {
  pthread_mutex_lock(&c->lock);
  size_t k;
  /* Recording: a poll meanwhile must not take the event's last record for this one. */
  zcclResult_t res = zd_mark_take(c, ZD_MARK_RECORDING, &k);
  pthread_mutex_unlock(&c->lock);
  if (res != zcclSuccess) return res;
  cudaError_t e = cudaEventRecord(c->events[k], c->stream);
  pthread_mutex_lock(&c->lock);
  if (e == cudaSuccess)
    c->kind[k] = ZD_MARK_EVENT;
  else
    c->issued--; /* the issuer is one thread: nothing was issued after it */
  pthread_cond_broadcast(&c->ran_cv);
  pthread_mutex_unlock(&c->lock);
  if (e != cudaSuccess)
    return ZU_ERROR(zcclUnhandledCudaError, "cuda device: cudaEventRecord: %s (%s)", cudaGetErrorString(e),
                    cudaGetErrorName(e));
  c->dirty = 0;
  return zcclSuccess;
}

/* A note with nothing to copy: an event, or freeing slots. */
static zcclResult_t zd_note_mark(zd_cuda_t* c) {
  zd_note_t* n = NULL;
  ZU_CHECK(zd_note_reserve(c, UINT64_MAX, &n));
  return zd_note_issue(c, n);
}

/* k slots for one operation: host and device addresses. *before: the slots
 * taken until now (an IN note before the kernel frees only those). */
static zcclResult_t zd_slots_take(zd_cuda_t* c, int k, uint64_t** host, uint64_t** dev, uint64_t* before) {
  pthread_mutex_lock(&c->lock);
  int full = c->slots_taken - c->slots_free + (uint64_t)k > ZD_CUDA_SLOTS;
  pthread_mutex_unlock(&c->lock);
  if (full) ZU_CHECK(zd_note_mark(c)); /* frees every slot of the operations queued so far */
  pthread_mutex_lock(&c->lock);
  zcclResult_t res =
      zd_cuda_block(c, [c, k] { return c->slots_taken - c->slots_free + (uint64_t)k <= ZD_CUDA_SLOTS; });
  if (res == zcclSuccess) {
    *before = c->slots_taken;
    for (int i = 0; i < k; i++) {
      size_t at = (size_t)(c->slots_taken++ % ZD_CUDA_SLOTS);
      host[i] = &c->pin->slots[at];
      dev[i] = &c->pin_d->slots[at];
    }
  }
  pthread_mutex_unlock(&c->lock);
  return res;
}

/* Codec scratch of at least bytes. Growing frees the old one in stream
 * order (after the kernels using it) and allocates from the stream-ordered
 * pool: no device synchronisation; it happens only when a larger call than
 * any before comes. */
static zcclResult_t zd_scratch(zd_cuda_t* c, size_t bytes) {
  if (bytes <= c->scratch_bytes) return zcclSuccess;
  size_t size = 64 << 10;
  while (size < bytes) size *= 2;
  if (c->persist) {
    /* The persistent kernel, on its own stream, is ordered after the lane
     * only by the gates: the stream-ordered pool does not see that order
     * (nor does compute-sanitizer, which took its accesses for ones out of
     * bounds). Plain memory; the outgrown one stays until the device goes,
     * as a kernel still queued may use it. */
    ZU_RETURN_ERR_IF(c->nretired == ZD_CUDA_RETIRED, zcclInternalError, "cuda device: codec scratch grew %d times",
                     ZD_CUDA_RETIRED);
    void* m = NULL;
    ZD_CUDA_RETURN(cudaMalloc(&m, size));
    if (c->scratch) c->retired[c->nretired++] = c->scratch;
    c->scratch = m;
    c->scratch_bytes = size;
    return zcclSuccess;
  }
  if (c->scratch) ZD_CUDA_RETURN(cudaFreeAsync(c->scratch, c->stream));
  c->scratch = NULL;
  c->scratch_bytes = 0;
  ZD_CUDA_RETURN(cudaMallocAsync(&c->scratch, size, c->stream));
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
  if (c->scratch && c->persist == NULL) cudaFreeAsync(c->scratch, c->stream);
  if (c->stream) cudaStreamSynchronize(c->stream); /* host functions included */
  if (c->persist) { /* only a mark here: the kernel is gone (zd_cuda_fini) */
    if (c->scratch) cudaFree(c->scratch);
    for (int i = 0; i < c->nretired; i++) cudaFree(c->retired[i]);
  }
  if (c->range_d) cudaFree(c->range_d);
  if (c->gate_d) cudaFree(c->gate_d);
  if (c->pin) cudaFreeHost(c->pin);
  if (c->events)
    for (int k = 0; k < ZD_CUDA_NOTES; k++)
      if (c->events[k]) cudaEventDestroy(c->events[k]);
  free(c->events);
  if (c->xev) cudaEventDestroy(c->xev);
  if (c->stream) cudaStreamDestroy(c->stream);
  cudaGetLastError(); /* a failed context fails these too; nothing more to do */
  pthread_cond_destroy(&c->ran_cv);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* One lane on GPU gpu: a non-blocking stream, its pinned words, events. */
static zcclResult_t zd_cuda_lane_make(int gpu, int event_marks, zd_cuda_t** out) {
  zd_cuda_t* c = (zd_cuda_t*)calloc(1, sizeof *c);
  ZU_RETURN_ERR_IF(c == NULL, zcclSystemError, "cuda device: out of memory");
  c->ordinal = gpu;
  pthread_mutex_init(&c->lock, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->ran_cv, &attr);
  pthread_condattr_destroy(&attr);
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
  if (e != cudaSuccess) {
    res = ZU_ERROR(zcclUnhandledCudaError, "cuda device on GPU %d: %s: %s (%s)", gpu, what, cudaGetErrorString(e),
                   cudaGetErrorName(e));
    zd_cuda_release(c);
    return res;
  }
  if (event_marks) {
    c->events = (cudaEvent_t*)calloc(ZD_CUDA_NOTES, sizeof *c->events);
    if (c->events == NULL) res = ZU_ERROR(zcclSystemError, "cuda device: out of memory");
    for (int k = 0; k < ZD_CUDA_NOTES && res == zcclSuccess; k++) {
      e = cudaEventCreateWithFlags(&c->events[k], cudaEventDisableTiming);
      if (e != cudaSuccess)
        res = ZU_ERROR(zcclUnhandledCudaError, "cuda device on GPU %d: cudaEventCreateWithFlags: %s (%s)", gpu,
                       cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (res != zcclSuccess) {
      zd_cuda_release(c);
      return res;
    }
  }
  memset(c->pin, 0, sizeof *c->pin);
  c->pin->status = zcclSuccess;
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
  int64_t event_marks = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_CUDA_EVENT_MARKS, &event_marks));
  zcclResult_t res = zcclSuccess;
  for (int l = 0; l < dev->nlanes && res == zcclSuccess; l++) res = zd_cuda_lane_make(gpu, event_marks != 0, &dev->cuda[l]);
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
  ZU_INFO(ZU_LOG_DEVICE, "cuda device on GPU %d: %d non-blocking stream(s), %d size slots each", gpu, dev->nlanes,
          ZD_CUDA_SLOTS);
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

static zcclResult_t zd_cuda_codec_op(zd_cuda_t* c, const zd_op_t* op) {
  uint64_t *hs[3], *ds[3], before = 0;
  int* status = &c->pin_d->status;
  zd_note_t* n = NULL;
  switch (op->kind) {
    case ZD_OP_COMPRESS: {
      unsigned log2 = op->params.chunk_log2 ? op->params.chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
      ZU_CHECK(zd_scratch(c, zd_cuda_codec_scratch_bytes(op->count, op->params.dtype, log2)));
      ZU_CHECK(zd_slots_take(c, 1, hs, ds, &before));
      c->what = "zd_compress";
      ZU_CHECK(zd_codec_run(
          c,
          [&](const uint32_t* gate, uint32_t gv, uint64_t* seq) {
            return zd_cuda_persist_compress(c->persist, &op->params, op->a, op->count, op->dst, op->cap, ds[0],
                                            c->scratch, c->scratch_bytes, status, gate, gv, seq);
          },
          [&] {
            return zd_cuda_compress(&op->params, op->a, op->count, op->dst, op->cap, ds[0], c->scratch,
                                    c->scratch_bytes, status, c->stream);
          }));
      c->dirty = c->need_note = 1;
      ZU_CHECK(zd_note_reserve(c, UINT64_MAX, &n));
      n->out = op->out_size;
      n->out_slot = hs[0];
      return zd_note_issue(c, n);
    }
    case ZD_OP_DECOMPRESS:
      ZU_CHECK(zd_slots_take(c, 1, hs, ds, &before));
      ZU_CHECK(zd_note_reserve(c, before, &n));
      n->in[0] = op->a_size;
      n->in_slot[0] = hs[0];
      ZU_CHECK(zd_note_issue(c, n));
      c->what = "zd_decompress";
      ZU_CHECK(zd_codec_run(
          c,
          [&](const uint32_t* gate, uint32_t gv, uint64_t* seq) {
            return zd_cuda_persist_decompress(c->persist, op->a, ds[0], op->dst, op->count, status, gate, gv, seq);
          },
          [&] { return zd_cuda_decompress(op->a, ds[0], op->dst, op->count, status, c->stream); }));
      c->dirty = c->need_note = 1;
      return zcclSuccess;
    case ZD_OP_HOP:
      ZU_CHECK(zd_scratch(c, zd_cuda_hop_scratch_bytes(op->cap)));
      ZU_CHECK(zd_slots_take(c, 3, hs, ds, &before));
      ZU_CHECK(zd_note_reserve(c, before, &n));
      n->in[0] = op->a_size;
      n->in_slot[0] = hs[0];
      n->in[1] = op->b_size;
      n->in_slot[1] = hs[1];
      ZU_CHECK(zd_note_issue(c, n));
      c->what = "zd_hop";
      ZU_CHECK(zd_codec_run(
          c,
          [&](const uint32_t* gate, uint32_t gv, uint64_t* seq) {
            return zd_cuda_persist_hop(c->persist, op->op, op->a, ds[0], op->b, ds[1], op->dst, op->cap, ds[2],
                                       c->scratch, c->scratch_bytes, status, gate, gv, seq);
          },
          [&] {
            return zd_cuda_hop(op->op, op->a, ds[0], op->b, ds[1], op->dst, op->cap, ds[2], c->scratch,
                               c->scratch_bytes, status, c->stream);
          }));
      c->dirty = c->need_note = 1;
      ZU_CHECK(zd_note_reserve(c, UINT64_MAX, &n));
      n->out = op->out_size;
      n->out_slot = hs[2];
      return zd_note_issue(c, n);
    default:
      /* zd_dev.c refuses RLE and ZFP for this kind before queueing. */
      return ZU_ERROR(zcclInvalidUsage, "the cuda device has no kernels for operation %d (RLE and ZFP are host-only)",
                      (int)op->kind);
  }
}

static zcclResult_t zd_cuda_submit(zd_dev_t* dev, const zd_op_t* op) {
  zd_cuda_t* c = dev->cuda[dev->lane];
  zd_on_gpu on(c->ordinal);
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
    default:
      return zd_cuda_codec_op(c, op);
  }
  c->dirty = 1;
  return zcclSuccess;
}

/* ---- events ------------------------------------------------------------------ */

static zd_event_t zd_cuda_record(zd_dev_t* dev) {
  zd_cuda_t* c = dev->cuda[dev->lane];
  if (c->dirty) {
    zd_on_gpu on(c->ordinal);
    zcclResult_t res = c->events && !c->need_note ? zd_event_mark(c) : zd_note_mark(c);
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
  if (ran >= ev || !c->events) return ran >= ev;
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
  if (res != zcclSuccess) return res;
  /* Recorded again here so zcclGetLastError of the waiting thread has it. */
  if (err != zcclSuccess) return ZU_ERROR(err, "a queued cuda operation failed: %s", msg);
  return zcclSuccess;
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
  c->what = "zd_cuda_post_error";
  zd_k_post_error<<<1, 1, 0, c->stream>>>(&c->pin_d->status, (int)code);
  ZD_CUDA_LAUNCHED("zd_cuda_post_error");
  c->dirty = c->need_note = 1;
  return zcclSuccess;
}
