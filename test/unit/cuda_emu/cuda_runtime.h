/* A host emulation of the part of CUDA that src/device/cuda/zd_cuda_codec.cu
 * uses, so test_cuda_codec_emu.cpp can compile that file as C++ and run its
 * kernels on a machine without a GPU. Not a general CUDA emulator:
 * - a CTA is an OS thread, so `__shared__` is `static thread_local`; the
 *   CTAs of a launch run at once, so they really wait for each other in the
 *   decoupled look-back and at the grid barrier;
 * - a CTA's threads are coroutines on that OS thread (started with
 *   makecontext/swapcontext, then switched with _setjmp/_longjmp:
 *   swapcontext saves the signal mask with a system call at every switch;
 *   always swapcontext where AddressSanitizer's runtime is linked, whose
 *   _longjmp interceptor maps the shadow of a whole stack at every jump),
 *   switched
 *   only where a CUDA thread waits for others: __syncthreads,
 *   __syncthreads_or and each __shfl_up_sync (a warp-wide exchange); so code
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

/* Double-buffered: a thread writes buffer g, waits for its warp, reads; the
 * next shuffle's wait cannot end before every lane has read buffer g. */
template <typename T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta) {
  (void)mask;
  zemu_cta* c = zemu_self;
  zemu_thread* t = &c->th[c->cur];
  unsigned lane = t->tid.x & 31, warp = t->tid.x >> 5, g = t->shfl_gen++ & 1;
  uint64_t u = 0;
  memcpy(&u, &v, sizeof v);
  c->slot[g][warp][lane] = u;
  zemu_wait(ZEMU_WARP_BAR);
  uint64_t r = c->slot[g][warp][lane >= delta ? lane - delta : lane];
  T out;
  memcpy(&out, &r, sizeof out);
  return out;
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

/* A launch: every CTA on its own OS thread, all at once, then joined. */
static inline int zemu_launch(const std::function<void()>& body, unsigned grid, unsigned threads) {
  std::vector<std::thread> ctas;
  for (unsigned b = 0; b < grid; b++) {
    ctas.emplace_back([&body, b, grid, threads] {
      blockIdx = uint3{b, 0, 0};
      gridDim = dim3(grid);
      blockDim = dim3(threads);
      zemu_run_cta(body, threads);
    });
  }
  for (auto& t : ctas) t.join();
  return 0;
}

#define ZD_LAUNCH(kernel, grid, stream, args) \
  ((void)(stream), zemu_launch([&] { kernel(args); }, (unsigned)(grid), ZD_T))

/* A launch that returns at once (the persistent kernel): its CTAs run on
 * threads of their own, after the previous such launch has ended (one
 * stream); cudaStreamSynchronize joins them. */
inline std::mutex zemu_async_mu;
inline std::vector<std::thread> zemu_async_threads;
inline std::shared_future<void> zemu_async_last;
inline std::atomic<int> zemu_async_running{0};

static inline int zemu_launch_async(std::function<void()> body, unsigned grid, unsigned threads) {
  std::lock_guard<std::mutex> g(zemu_async_mu);
  std::shared_future<void> prev = zemu_async_last;
  auto done = std::make_shared<std::promise<void>>();
  zemu_async_last = done->get_future().share();
  zemu_async_running++;
  zemu_async_threads.emplace_back([body, grid, threads, prev, done] {
    if (prev.valid()) prev.wait();
    zemu_launch(body, grid, threads);
    zemu_async_running--;
    done->set_value();
  });
  return 0;
}

#define ZD_LAUNCH_PERSIST(kernel, grid, stream, args) \
  ((void)(stream), zemu_launch_async([=] { kernel(args); }, (unsigned)(grid), ZD_T))

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
static inline void __nanosleep(unsigned ns) {
  (void)ns;
  sched_yield();
}
static inline uint32_t __ldg(const uint32_t* p) {
  if ((uintptr_t)p & 3) {
    fprintf(stderr, "emulated: misaligned 4-byte load at %p\n", (const void*)p);
    abort();
  }
  return *p;
}
static inline uint4 __ldg(const uint4* p) {
  if ((uintptr_t)p & 15) {
    fprintf(stderr, "emulated: misaligned 16-byte load at %p\n", (const void*)p);
    abort();
  }
  return *p;
}

/* ---- runtime API ------------------------------------------------------------------ */

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorNotReady = 600 };
typedef struct CUstream_st* cudaStream_t;
enum { cudaStreamNonBlocking = 1, cudaHostAllocMapped = 2 };
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  (void)flags;
  *s = (cudaStream_t)(uintptr_t)0x5;
  return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  (void)s;
  std::vector<std::thread> ts;
  {
    std::lock_guard<std::mutex> g(zemu_async_mu);
    ts.swap(zemu_async_threads);
  }
  for (auto& t : ts) t.join();
  return cudaSuccess;
}
static inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  (void)s;
  return zemu_async_running > 0 ? cudaErrorNotReady : cudaSuccess;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t s) { return cudaStreamSynchronize(s); }
static inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = calloc(1, n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
  (void)flags;
  return cudaMalloc(p, n);
}
static inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned flags) {
  (void)flags;
  *d = h;
  return cudaSuccess;
}
static inline cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}
static inline cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
static inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount };
#define ZEMU_SMS 3 /* CTAs of a persistent grid */
static inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
static inline cudaError_t cudaDeviceGetAttribute(int* v, enum cudaDeviceAttr a, int dev) {
  (void)dev;
  (void)a;
  *v = ZEMU_SMS;
  return cudaSuccess;
}
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* k, int t, size_t s) {
  (void)k;
  (void)t;
  (void)s;
  *n = 1;
  return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  (void)s;
  memset(p, v, n);
  return cudaSuccess;
}
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
typedef struct {
  int maxThreadsPerBlock;
} cudaFuncAttributes;
static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* k) {
  (void)k;
  a->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
static inline const char* cudaGetErrorString(cudaError_t e) {
  (void)e;
  return "emulated";
}
static inline const char* cudaGetErrorName(cudaError_t e) {
  (void)e;
  return "emulated";
}

#endif /* ZEMU_CUDA_RUNTIME_H_ */
