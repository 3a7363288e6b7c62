/* A host emulation of the part of CUDA that src/device/cuda uses, so tests
 * can compile those files as C++ and run them on a machine without a GPU:
 * test_cuda_codec_emu.cpp the codec's kernels, and the emulated cuda device
 * (test/CMakeLists.txt: zccl_cuda_emu) the whole device layer, streams and
 * all. Not a general CUDA emulator:
 * - streams are threads that run their work in order; events, host
 *   functions, stream memory operations and stream-ordered allocation
 *   follow them; cudaFree waits for every stream, as on a GPU;
 * - in the codec's launches (ZD_LAUNCH) a CTA is an OS thread, so
 *   `__shared__` is `static thread_local`; the CTAs of a launch run at
 *   once, so they really wait for each other in the decoupled look-back;
 *   other kernels (ZD_KERNEL) run one CTA after another on the stream's
 *   thread, their threads as plain calls unless they meet at barriers;
 * - a CTA's threads are coroutines on that OS thread (started with
 *   makecontext/swapcontext, then switched with _setjmp/_longjmp:
 *   swapcontext saves the signal mask with a system call at every switch;
 *   always swapcontext where AddressSanitizer's runtime is linked, whose
 *   _longjmp interceptor maps the shadow of a whole stack at every jump),
 *   switched
 *   only where a CUDA thread waits for others: __syncthreads,
 *   __syncthreads_or and each warp shuffle (a warp-wide exchange); so code
 *   between two of those runs as if no other thread of the CTA ran, which
 *   CUDA does not promise but the kernels never rely on the opposite;
 * - memory is host memory; 16-byte vector loads check their alignment.
 * Deadlocks (a barrier some threads never reach) abort with a message. */
#ifndef ZEMU_CUDA_RUNTIME_H_
#define ZEMU_CUDA_RUNTIME_H_

#include <sched.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <time.h>

/* ZEMU_ASAN_RUNTIME: CMake's word that the runtime is linked (this file
 * may still be compiled without instrumentation). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ZEMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define ZEMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ZEMU_ASAN_RUNTIME)
#define ZEMU_LONGJMP 0
#else
#define ZEMU_LONGJMP 1
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#define ZD_EMULATED 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint4 {
  unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }

/* ---- CTAs and their threads -------------------------------------------------- */

enum { ZEMU_RUN, ZEMU_CTA_BAR, ZEMU_WARP_BAR, ZEMU_DONE };
#define ZEMU_STACK (128 * 1024)

struct zemu_thread {
  ucontext_t ctx; /* its first entry (every entry without ZEMU_LONGJMP) */
  jmp_buf jb;     /* where it waits */
  uint3 tid;
  int state, orval, started;
  unsigned shfl_gen; /* which exchange buffer the next shuffle uses */
  char* stack;
};

/* Coroutine stacks, reused across launches: a fresh zeroed stack per
 * thread (256 a CTA) cost a page fault per page at every launch. */
inline std::mutex zemu_stacks_mu;
inline std::vector<char*>* zemu_stacks = new std::vector<char*>; /* never destroyed: reachable, not leaked */

static inline char* zemu_stack_get(void) {
  std::lock_guard<std::mutex> g(zemu_stacks_mu);
  if (zemu_stacks->empty()) return static_cast<char*>(malloc(ZEMU_STACK));
  char* p = zemu_stacks->back();
  zemu_stacks->pop_back();
  return p;
}

static inline void zemu_stack_put(char* p) {
  /* A finished coroutine may leave frames' redzones poisoned under
   * AddressSanitizer: not for the next one to trip on. */
  ZEMU_UNPOISON(p, ZEMU_STACK);
  std::lock_guard<std::mutex> g(zemu_stacks_mu);
  zemu_stacks->push_back(p);
}

struct zemu_cta {
  ucontext_t sched; /* the scheduler without ZEMU_LONGJMP; else saved by first entries, never resumed */
  jmp_buf sched_jb; /* the scheduler, resumed by every wait */
  std::vector<zemu_thread> th;
  unsigned cur;
  int bar_or;
  int flat; /* zemu_launch_serial's: one thread entry, no barriers */
  uint64_t slot[2][32][32]; /* [buffer][warp][lane] */
  const std::function<void()>* body;
};

inline thread_local zemu_cta* zemu_self;
inline thread_local uint3 blockIdx;
inline thread_local dim3 gridDim;
inline thread_local dim3 blockDim;
#define threadIdx (zemu_self->th[zemu_self->cur].tid)

static inline void zemu_wait(int state) {
  zemu_cta* c = zemu_self;
  if (c->flat) {
    fprintf(stderr,
            "emulated kernel: a barrier or warp exchange in a kernel run flat (name it in zemu_kernel_syncs)\n");
    abort();
  }
  zemu_thread* t = &c->th[c->cur];
  t->state = state;
#if ZEMU_LONGJMP
  if (!_setjmp(t->jb)) _longjmp(c->sched_jb, 1);
#else
  swapcontext(&t->ctx, &c->sched);
#endif
}

static inline void __syncthreads(void) {
  zemu_self->th[zemu_self->cur].orval = 0;
  zemu_wait(ZEMU_CTA_BAR);
}

static inline int __syncthreads_or(int v) {
  zemu_self->th[zemu_self->cur].orval = v != 0;
  zemu_wait(ZEMU_CTA_BAR);
  return zemu_self->bar_or;
}

/* A warp exchange: every lane gives v and gets the value of lane
 * from(lane). Double-buffered: a thread writes buffer g, waits for its
 * warp, reads; the next exchange's wait cannot end before every lane has
 * read buffer g. */
template <typename T, class FROM>
static inline T zemu_shfl(T v, FROM from) {
  zemu_cta* c = zemu_self;
  zemu_thread* t = &c->th[c->cur];
  unsigned lane = t->tid.x & 31, warp = t->tid.x >> 5, g = t->shfl_gen++ & 1;
  uint64_t u = 0;
  memcpy(&u, &v, sizeof v);
  c->slot[g][warp][lane] = u;
  zemu_wait(ZEMU_WARP_BAR);
  uint64_t r = c->slot[g][warp][from(lane)];
  T out;
  memcpy(&out, &r, sizeof out);
  return out;
}
template <typename T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta) {
  (void)mask;
  return zemu_shfl(v, [delta](unsigned lane) { return lane >= delta ? lane - delta : lane; });
}
template <typename T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
  (void)mask;
  return zemu_shfl(v, [delta](unsigned lane) { return lane + delta < 32 ? lane + delta : lane; });
}

static void zemu_entry(void) {
  zemu_cta* c = zemu_self;
  (*c->body)();
  c->th[c->cur].state = ZEMU_DONE;
#if ZEMU_LONGJMP
  _longjmp(c->sched_jb, 1); /* never returns: its first entry's context is stale */
#endif
}

/* Runs one CTA of nthreads on this OS thread until every thread returns. */
static inline void zemu_run_cta(const std::function<void()>& body, unsigned nthreads) {
  zemu_cta* c = new zemu_cta();
  c->th.resize(nthreads);
  c->body = &body;
  zemu_self = c;
  for (unsigned i = 0; i < nthreads; i++) {
    zemu_thread* t = &c->th[i];
    t->tid = uint3{i, 0, 0};
    t->state = ZEMU_RUN;
    t->started = 0;
    t->shfl_gen = 0;
    t->stack = zemu_stack_get();
    if (t->stack == NULL) {
      fprintf(stderr, "emulated CTA: out of memory for thread stacks\n");
      abort();
    }
    getcontext(&t->ctx);
    t->ctx.uc_stack.ss_sp = t->stack;
    t->ctx.uc_stack.ss_size = ZEMU_STACK;
    t->ctx.uc_link = &c->sched;
    makecontext(&t->ctx, zemu_entry, 0);
  }
  for (;;) {
    for (volatile unsigned i = 0; i < nthreads; i++) { /* volatile: kept across _longjmp */
      zemu_thread* t = &c->th[i];
      if (t->state != ZEMU_RUN) continue;
      c->cur = i;
#if ZEMU_LONGJMP
      if (_setjmp(c->sched_jb)) continue; /* the thread waits or is done */
      if (t->started) _longjmp(t->jb, 1);
      t->started = 1;
#endif
      swapcontext(&c->sched, &t->ctx);
    }
    /* Everyone waits or is done: release whatever barrier is complete. */
    unsigned done = 0, at_cta = 0, released = 0;
    int any_or = 0;
    for (unsigned i = 0; i < nthreads; i++) {
      done += c->th[i].state == ZEMU_DONE;
      if (c->th[i].state == ZEMU_CTA_BAR) {
        at_cta++;
        any_or |= c->th[i].orval;
      }
    }
    if (done == nthreads) break;
    for (unsigned w = 0; w * 32 < nthreads; w++) {
      unsigned waiting = 0;
      for (unsigned l = 0; l < 32; l++) waiting += c->th[w * 32 + l].state == ZEMU_WARP_BAR;
      if (waiting == 32) {
        for (unsigned l = 0; l < 32; l++) c->th[w * 32 + l].state = ZEMU_RUN;
        released++;
      }
    }
    if (!released && at_cta + done == nthreads) {
      if (done) {
        fprintf(stderr, "emulated CTA %u: %u threads returned while %u wait at __syncthreads\n", blockIdx.x, done,
                at_cta);
        abort();
      }
      c->bar_or = any_or;
      for (unsigned i = 0; i < nthreads; i++) c->th[i].state = ZEMU_RUN;
      released++;
    }
    if (!released) {
      fprintf(stderr, "emulated CTA %u: threads wait at different barriers\n", blockIdx.x);
      abort();
    }
  }
  for (unsigned i = 0; i < nthreads; i++) zemu_stack_put(c->th[i].stack);
  delete c;
  zemu_self = NULL;
}

/* The calling thread is CTA b of grid, threads wide. */
static inline void zemu_cta_begin(unsigned b, unsigned grid, unsigned threads) {
  blockIdx = uint3{b, 0, 0};
  gridDim = dim3(grid);
  blockDim = dim3(threads);
}

/* A launch: every CTA on its own OS thread, all at once, then joined. */
static inline int zemu_launch(const std::function<void()>& body, unsigned grid, unsigned threads) {
  std::vector<std::thread> ctas;
  for (unsigned b = 0; b < grid; b++) {
    ctas.emplace_back([&body, b, grid, threads] {
      zemu_cta_begin(b, grid, threads);
      zemu_run_cta(body, threads);
    });
  }
  for (auto& t : ctas) t.join();
  return 0;
}

/* A launch whose CTAs do not wait for each other: one after another on the
 * calling thread. Without barriers (flat) a CTA's threads run one after
 * another as plain calls, which is much cheaper than coroutines; a barrier
 * reached in a flat kernel aborts (zemu_wait), so a kernel that has one
 * must be named in zemu_kernel_syncs. */
static inline void zemu_launch_serial(const std::function<void()>& body, unsigned grid, unsigned threads, int flat) {
  if (!flat) {
    for (unsigned b = 0; b < grid; b++) {
      zemu_cta_begin(b, grid, threads);
      zemu_run_cta(body, threads);
    }
    return;
  }
  zemu_cta* c = new zemu_cta(); /* one thread entry, renumbered: every CTA's threads in turn */
  c->th.resize(1);
  c->flat = 1;
  c->cur = 0;
  zemu_self = c;
  for (unsigned b = 0; b < grid; b++) {
    zemu_cta_begin(b, grid, threads);
    for (unsigned t = 0; t < threads; t++) {
      c->th[0].tid = uint3{t, 0, 0};
      body();
    }
  }
  delete c;
  zemu_self = NULL;
}

/* ---- device functions ----------------------------------------------------------- */

static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline int atomicCAS(int* p, int cmp, int v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
static inline unsigned atomicSub(unsigned* p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned long long zemu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
/* Short naps spin (the codec's look-back); a long one sleeps, so a
 * stream's hold kernel waiting for its release leaves the cores alone. */
static inline void __nanosleep(unsigned ns) {
  if (ns < 2000) {
    sched_yield();
    return;
  }
  struct timespec t = {0, (long)ns};
  nanosleep(&t, NULL);
}
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
/* What a GPU faults on: the codec's word and 16-byte accesses
 * (zd_cuda_codec.cu: zd_ld4, zd_ld16, zd_st16) must be aligned. */
static inline void zemu_check_aligned(const void* p, unsigned a) {
  if ((uintptr_t)p & (a - 1)) {
    fprintf(stderr, "emulated: misaligned %u-byte access at %p\n", a, p);
    abort();
  }
}

/* *p = v where better(v, *p), atomically; the old value. */
template <class BETTER>
static inline unsigned long long zemu_atomic_keep(unsigned long long* p, unsigned long long v, BETTER better) {
  unsigned long long cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (better(v, cur) && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return cur;
}
static inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  return zemu_atomic_keep(p, v, [](unsigned long long a, unsigned long long b) { return a < b; });
}
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return zemu_atomic_keep(p, v, [](unsigned long long a, unsigned long long b) { return a > b; });
}
static inline long long __double_as_longlong(double d) {
  long long r;
  memcpy(&r, &d, sizeof r);
  return r;
}
static inline double __longlong_as_double(long long v) {
  double r;
  memcpy(&r, &v, sizeof r);
  return r;
}

/* ---- runtime API ------------------------------------------------------------------
 * Streams are real: each created stream has a worker thread that runs its
 * work (launches, copies, event records and waits, host functions, stream
 * memory operations) in order, so the host side of the device layer meets
 * the asynchrony it meets on a GPU. The legacy stream (NULL) runs work on
 * the calling thread at once. Device, host-pinned and managed memory are
 * all host memory; a registry of allocations answers
 * cudaPointerGetAttributes. */

#include "cuda_emu_types.h"
#define ZEMU_API extern "C" inline

static inline const char* zemu_error_name(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
  }
}
ZEMU_API const char* cudaGetErrorString(cudaError_t e) { return zemu_error_name(e); }
ZEMU_API const char* cudaGetErrorName(cudaError_t e) { return zemu_error_name(e); }
ZEMU_API cudaError_t cudaGetLastError(void) { return cudaSuccess; }
ZEMU_API cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }

struct CUstream_st {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> q;
  int busy = 0, stop = 0;
  std::thread worker;
};

inline std::mutex zemu_streams_mu;
inline std::vector<cudaStream_t>* zemu_streams = new std::vector<cudaStream_t>; /* live streams */

static inline void zemu_stream_main(cudaStream_t s) {
  std::unique_lock<std::mutex> g(s->mu);
  for (;;) {
    s->cv.wait(g, [s] { return s->stop || !s->q.empty(); });
    if (s->q.empty()) return; /* stopped and drained */
    std::function<void()> fn = std::move(s->q.front());
    s->q.pop_front();
    s->busy = 1;
    g.unlock();
    fn();
    g.lock();
    s->busy = 0;
    s->cv.notify_all();
  }
}

/* Queues fn on s, or runs it now on the legacy stream. */
static inline void zemu_enqueue(cudaStream_t s, std::function<void()> fn) {
  if (s == NULL) {
    fn();
    return;
  }
  std::lock_guard<std::mutex> g(s->mu);
  s->q.push_back(std::move(fn));
  s->cv.notify_all();
}

static inline int zemu_stream_idle(cudaStream_t s) { return s->q.empty() && !s->busy; }

ZEMU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  (void)flags;
  cudaStream_t n = new CUstream_st();
  n->worker = std::thread(zemu_stream_main, n);
  std::lock_guard<std::mutex> g(zemu_streams_mu);
  zemu_streams->push_back(n);
  *s = n;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }

static inline cudaError_t zemu_stream_sync(cudaStream_t s) {
  std::unique_lock<std::mutex> g(s->mu);
  s->cv.wait(g, [s] { return zemu_stream_idle(s); });
  return cudaSuccess;
}

/* Waits for every live stream to drain; what cudaFree and cudaDeviceSynchronize
 * do on a GPU. A stream held by a spinning kernel never drains: after
 * ZEMU_DRAIN_S seconds this aborts with what was waiting, rather than
 * hanging the test (an H200 hangs there). */
#define ZEMU_DRAIN_S 30
static inline void zemu_drain_all(const char* why) {
  std::vector<cudaStream_t> all;
  {
    std::lock_guard<std::mutex> g(zemu_streams_mu);
    all = *zemu_streams;
  }
  for (cudaStream_t s : all) {
    std::unique_lock<std::mutex> g(s->mu);
    if (!s->cv.wait_for(g, std::chrono::seconds(ZEMU_DRAIN_S), [s] { return zemu_stream_idle(s); })) {
      fprintf(stderr, "emulated CUDA: %s waited %d s for a stream that does not drain (held?)\n", why,
              ZEMU_DRAIN_S);
      abort();
    }
  }
}

ZEMU_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s == NULL) {
    zemu_drain_all("cudaStreamSynchronize(legacy stream)");
    return cudaSuccess;
  }
  return zemu_stream_sync(s);
}
ZEMU_API cudaError_t cudaDeviceSynchronize(void) {
  zemu_drain_all("cudaDeviceSynchronize");
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaStreamQuery(cudaStream_t s) {
  if (s == NULL) return cudaSuccess;
  std::lock_guard<std::mutex> g(s->mu);
  return zemu_stream_idle(s) ? cudaSuccess : cudaErrorNotReady;
}
ZEMU_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == NULL) return cudaErrorInvalidResourceHandle;
  {
    std::lock_guard<std::mutex> g(zemu_streams_mu);
    for (size_t i = 0; i < zemu_streams->size(); i++)
      if ((*zemu_streams)[i] == s) {
        zemu_streams->erase(zemu_streams->begin() + (long)i);
        break;
      }
  }
  {
    std::lock_guard<std::mutex> g(s->mu);
    s->stop = 1;
    s->cv.notify_all();
  }
  s->worker.join(); /* runs what was queued first, as CUDA does */
  delete s;
  return cudaSuccess;
}
/* The library queues no host function: on a GPU one can wait for a thread
 * that waits behind a held stream (docs/cuda.md). A test's own (a slow
 * writer on its stream) goes through zemu_test_host_func, which the C view
 * (cuda_runtime_api.h) calls cudaLaunchHostFunc. */
ZEMU_API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* arg) {
  (void)s, (void)fn, (void)arg;
  fprintf(stderr, "emulated CUDA: cudaLaunchHostFunc called; the device layer must not queue host functions\n");
  abort();
}
ZEMU_API cudaError_t zemu_test_host_func(cudaStream_t s, cudaHostFn_t fn, void* arg) {
  zemu_enqueue(s, [fn, arg] { fn(arg); });
  return cudaSuccess;
}

/* ---- events ---- */
struct zemu_event_state {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;
};
struct CUevent_st {
  std::shared_ptr<zemu_event_state> st;
};
ZEMU_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* ev, unsigned flags) {
  (void)flags;
  *ev = new CUevent_st{std::make_shared<zemu_event_state>()};
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaEventCreate(cudaEvent_t* ev) { return cudaEventCreateWithFlags(ev, 0); }
ZEMU_API cudaError_t cudaEventDestroy(cudaEvent_t ev) {
  if (ev == NULL) return cudaErrorInvalidResourceHandle;
  delete ev; /* queued records keep the state alive */
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
  if (ev == NULL) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<zemu_event_state> st = ev->st;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(st->mu);
    gen = ++st->recorded;
  }
  zemu_enqueue(s, [st, gen] {
    std::lock_guard<std::mutex> g(st->mu);
    if (st->completed < gen) st->completed = gen;
    st->cv.notify_all();
  });
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaEventQuery(cudaEvent_t ev) {
  if (ev == NULL) return cudaErrorInvalidResourceHandle;
  std::lock_guard<std::mutex> g(ev->st->mu);
  return ev->st->completed >= ev->st->recorded ? cudaSuccess : cudaErrorNotReady;
}
/* The event's last record made before now. */
static inline uint64_t zemu_event_recorded(zemu_event_state* st) {
  std::lock_guard<std::mutex> g(st->mu);
  return st->recorded;
}
/* Waits until the stream has passed record want of the event. */
static inline void zemu_event_wait(zemu_event_state* st, uint64_t want) {
  std::unique_lock<std::mutex> g(st->mu);
  st->cv.wait(g, [&] { return st->completed >= want; });
}
ZEMU_API cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
  if (ev == NULL) return cudaErrorInvalidResourceHandle;
  zemu_event_wait(ev->st.get(), zemu_event_recorded(ev->st.get()));
  return cudaSuccess;
}
/* The stream waits for the event's last record made before this call. */
ZEMU_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags) {
  (void)flags;
  if (ev == NULL) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<zemu_event_state> st = ev->st;
  uint64_t want = zemu_event_recorded(st.get());
  zemu_enqueue(s, [st, want] { zemu_event_wait(st.get(), want); });
  return cudaSuccess;
}

/* ---- the driver's lock ----
 * What an H200 (driver 580) did while a thread of the process waited in a
 * pageable device-to-host copy queued behind a held stream
 * (tools/zccl_cuda_probe.cu, docs/cuda.md): cudaMalloc, cudaHostAlloc,
 * cudaFree, a kernel's first launch and cudaLaunchHostFunc did not return
 * until that copy had. Here a pageable copy to the host blocks its caller
 * until the stream has made it, and those calls wait for every such copy
 * to end; one that waits ZEMU_DRAIN_S seconds aborts, naming itself (where
 * a GPU would hang for ever, the copy waiting for a hold that waits for
 * the call). */
inline std::mutex zemu_drv_mu;
inline std::condition_variable zemu_drv_cv;
inline int zemu_pageable_waiters = 0;

static inline void zemu_driver_lock(const char* what) {
  std::unique_lock<std::mutex> g(zemu_drv_mu);
  if (!zemu_drv_cv.wait_for(g, std::chrono::seconds(ZEMU_DRAIN_S), [] { return zemu_pageable_waiters == 0; })) {
    fprintf(stderr,
            "emulated CUDA: %s waited %d s for a thread in a pageable copy to the host (on an H200 it never "
            "returns: the copy waits behind a held stream)\n",
            what, ZEMU_DRAIN_S);
    abort();
  }
}

/* ---- memory ---- */
struct zemu_alloc {
  size_t size;
  enum cudaMemoryType type;
};
inline std::mutex zemu_allocs_mu;
inline std::map<uintptr_t, zemu_alloc>* zemu_allocs = new std::map<uintptr_t, zemu_alloc>;

static inline cudaError_t zemu_alloc_make(void** p, size_t n, enum cudaMemoryType type) {
  /* 256-byte aligned, as cudaMalloc's are (the kernels' vector loads rely on it) */
  size_t sz = (n ? n : 1) + 255;
  sz -= sz % 256;
  *p = aligned_alloc(256, sz);
  if (*p == NULL) return cudaErrorMemoryAllocation;
  memset(*p, 0, sz);
  std::lock_guard<std::mutex> g(zemu_allocs_mu);
  (*zemu_allocs)[(uintptr_t)*p] = zemu_alloc{n, type};
  return cudaSuccess;
}
static inline cudaError_t zemu_alloc_free(void* p, enum cudaMemoryType type) {
  if (p == NULL) return cudaSuccess;
  {
    std::lock_guard<std::mutex> g(zemu_allocs_mu);
    auto it = zemu_allocs->find((uintptr_t)p);
    if (it == zemu_allocs->end() || it->second.type != type) return cudaErrorInvalidValue;
    zemu_allocs->erase(it);
  }
  free(p);
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaMalloc(void** p, size_t n) {
  zemu_driver_lock("cudaMalloc");
  return zemu_alloc_make(p, n, cudaMemoryTypeDevice);
}
ZEMU_API cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
  (void)flags;
  zemu_driver_lock("cudaHostAlloc");
  return zemu_alloc_make(p, n, cudaMemoryTypeHost);
}
ZEMU_API cudaError_t cudaMallocHost(void** p, size_t n) {
  zemu_driver_lock("cudaMallocHost");
  return zemu_alloc_make(p, n, cudaMemoryTypeHost);
}
ZEMU_API cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned flags) {
  (void)flags;
  *d = h;
  return cudaSuccess;
}
/* cudaFree and cudaFreeHost wait for the device's work, as on a GPU. */
ZEMU_API cudaError_t cudaFree(void* p) {
  if (p == NULL) return cudaSuccess;
  zemu_driver_lock("cudaFree");
  zemu_drain_all("cudaFree");
  return zemu_alloc_free(p, cudaMemoryTypeDevice);
}
ZEMU_API cudaError_t cudaFreeHost(void* p) {
  if (p == NULL) return cudaSuccess;
  zemu_drain_all("cudaFreeHost");
  return zemu_alloc_free(p, cudaMemoryTypeHost);
}
ZEMU_API cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  (void)s;
  return zemu_alloc_make(p, n, cudaMemoryTypeDevice);
}
ZEMU_API cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  zemu_enqueue(s, [p] { zemu_alloc_free(p, cudaMemoryTypeDevice); });
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  memset(a, 0, sizeof *a);
  a->type = cudaMemoryTypeUnregistered;
  std::lock_guard<std::mutex> g(zemu_allocs_mu);
  auto it = zemu_allocs->upper_bound((uintptr_t)p);
  if (it != zemu_allocs->begin()) {
    --it;
    if ((uintptr_t)p < it->first + (it->second.size ? it->second.size : 1)) {
      a->type = it->second.type;
      a->devicePointer = a->hostPointer = (void*)p;
    }
  }
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaMemcpy(void* d, const void* s, size_t n, enum cudaMemcpyKind k) {
  (void)k;
  memmove(d, s, n);
  return cudaSuccess;
}
static inline enum cudaMemoryType zemu_mem_type(const void* p) {
  struct cudaPointerAttributes a;
  cudaPointerGetAttributes(&a, p);
  return a.type;
}
/* A copy from the device to pageable host memory returns once it has been
 * made (CUDA stages it through its own pinned buffer). */
ZEMU_API cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
  (void)k;
  if (st == NULL || n == 0 || zemu_mem_type(d) != cudaMemoryTypeUnregistered ||
      zemu_mem_type(s) != cudaMemoryTypeDevice) {
    zemu_enqueue(st, [d, s, n] { memmove(d, s, n); });
    return cudaSuccess;
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> made = done->get_future();
  {
    std::lock_guard<std::mutex> g(zemu_drv_mu);
    zemu_pageable_waiters++;
  }
  zemu_enqueue(st, [d, s, n, done] {
    memmove(d, s, n);
    done->set_value();
  });
  made.wait();
  {
    std::lock_guard<std::mutex> g(zemu_drv_mu);
    zemu_pageable_waiters--;
  }
  zemu_drv_cv.notify_all();
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  zemu_enqueue(s, [p, v, n] { memset(p, v, n); });
  return cudaSuccess;
}

/* ---- devices ---- */
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount };
#define ZEMU_SMS 3 /* CTAs of a persistent grid */
inline thread_local int zemu_current = 0;
ZEMU_API cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int dev) {
  if (dev != 0) return cudaErrorInvalidDevice;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "emulated GPU (host threads)");
  p->multiProcessorCount = ZEMU_SMS;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaGetDevice(int* d) {
  *d = zemu_current;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
ZEMU_API cudaError_t cudaDeviceGetAttribute(int* v, enum cudaDeviceAttr a, int dev) {
  (void)dev;
  (void)a;
  *v = ZEMU_SMS;
  return cudaSuccess;
}
ZEMU_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* k, int t, size_t s) {
  (void)k;
  (void)t;
  (void)s;
  *n = 1;
  return cudaSuccess;
}
typedef struct {
  int maxThreadsPerBlock, numRegs;
  size_t localSizeBytes, sharedSizeBytes;
} cudaFuncAttributes;
/* Kernels loaded (cudaFuncGetAttributes, or a first launch, which takes
 * the driver's lock). */
inline std::mutex zemu_loaded_mu;
inline std::set<const void*>* zemu_loaded = new std::set<const void*>;
static inline void zemu_load(const void* k, int launch) {
  {
    std::lock_guard<std::mutex> g(zemu_loaded_mu);
    if (zemu_loaded->count(k)) return;
  }
  if (launch) zemu_driver_lock("a kernel's first launch");
  std::lock_guard<std::mutex> g(zemu_loaded_mu);
  zemu_loaded->insert(k);
}
ZEMU_API cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* k) {
  zemu_load(k, 0);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 0; /* (not known on the host) */
  a->localSizeBytes = 0;
  a->sharedSizeBytes = 0;
  return cudaSuccess;
}

/* ---- driver entry points (cuda.h) ---- */
typedef int CUresult;
enum { CUDA_SUCCESS = 0 };
typedef cudaStream_t CUstream;
typedef uintptr_t CUdeviceptr;
typedef uint32_t cuuint32_t;
enum { CU_STREAM_WAIT_VALUE_GEQ = 0 };
enum { cudaEnableDefault = 0 };
typedef enum { cudaDriverEntryPointSuccess, cudaDriverEntryPointSymbolNotFound } cudaDriverEntryPointQueryResult;
static inline CUresult zemu_write_value32(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned flags) {
  (void)flags;
  zemu_enqueue(s, [a, v] { __atomic_store_n((uint32_t*)a, v, __ATOMIC_SEQ_CST); });
  return CUDA_SUCCESS;
}
/* GEQ as the driver defines it: (int32_t)(*addr - value) >= 0. */
static inline CUresult zemu_wait_value32(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned flags) {
  (void)flags;
  zemu_enqueue(s, [a, v] {
    while ((int32_t)(__atomic_load_n((uint32_t*)a, __ATOMIC_SEQ_CST) - v) < 0) sched_yield();
  });
  return CUDA_SUCCESS;
}
ZEMU_API cudaError_t cudaGetDriverEntryPointByVersion(const char* name, void** fn, unsigned version,
                                                           unsigned long long flags,
                                                           cudaDriverEntryPointQueryResult* q) {
  (void)version;
  (void)flags;
  *fn = NULL;
  if (strcmp(name, "cuStreamWriteValue32") == 0) *fn = (void*)zemu_write_value32;
  if (strcmp(name, "cuStreamWaitValue32") == 0) *fn = (void*)zemu_wait_value32;
  *q = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

/* ---- launches ---- */

/* Kernels (by the name they are launched with) that meet at barriers or
 * warp exchanges: their threads need coroutines. */
static inline int zemu_kernel_syncs(const char* name) {
  return strncmp(name, "zd_k_range<", 11) == 0 || strcmp(name, "zd_k_copy_sized") == 0;
}

/* kernel<<<grid, block, 0, stream>>>(args...): the arguments are evaluated
 * and copied at the launch, as CUDA copies them. */
template <class F, class... A>
static inline void zemu_kernel(cudaStream_t s, unsigned grid, unsigned block, const char* name, F* f, A... a) {
  int flat = !zemu_kernel_syncs(name);
  zemu_load((const void*)f, 1);
  auto args = std::make_tuple(a...);
  zemu_enqueue(s, [=] { zemu_launch_serial([&] { std::apply(f, args); }, grid, block, flat); });
}
#define ZD_KERNEL(kernel, grid, block, stream, ...) \
  zemu_kernel((cudaStream_t)(stream), (unsigned)(grid), (unsigned)(block), #kernel, kernel, __VA_ARGS__)

/* The codec's launches (zd_cuda_codec.cu): CTAs at once, since they wait
 * for each other (decoupled look-back). */
#define ZD_LAUNCH(kernel, grid, stream, args)                                                        \
  (zemu_load((const void*)kernel, 1),                                                                \
   zemu_enqueue((cudaStream_t)(stream),                                                              \
                [=, zemu_g_ = (unsigned)(grid)] { zemu_launch([&] { kernel(args); }, zemu_g_, ZD_T); }), \
   cudaSuccess)
/* The persistent kernel: the same, on the engine's own stream, whose worker
 * it occupies until it exits. */
#define ZD_LAUNCH_PERSIST ZD_LAUNCH

#endif /* ZEMU_CUDA_RUNTIME_H_ */
