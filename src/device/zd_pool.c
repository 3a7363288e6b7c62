#include "zd_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "zd_device.h"
#include "zu_error.h"
#include "zu_param.h"
#include "zu_time.h"

struct zd_pool {
  int size;
  pthread_t* threads;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  /* The current job, set under lock; generation tells workers a new one
   * has started (read without the lock while they poll). */
  atomic_ulong generation;
  zd_pool_fn fn;
  void* arg;
  int active;          /* threads taking part in the job (caller included) */
  atomic_int pending;  /* workers still running it */
  atomic_int stop;
  int sleepers;        /* workers asleep on wake (under lock) */
  int waiting;         /* the caller asleep on done (under lock) */
  double spin;         /* ZCCL_POOL_SPIN_US, seconds */
};

typedef struct {
  zd_pool_t* pool;
  int t;
} zd_worker_t;

static int zd_job_started(zd_pool_t* pool, unsigned long seen) {
  return atomic_load_explicit(&pool->generation, memory_order_acquire) != seen ||
         atomic_load_explicit(&pool->stop, memory_order_relaxed);
}

static int zd_job_ended(zd_pool_t* pool, unsigned long unused) {
  (void)unused;
  return atomic_load_explicit(&pool->pending, memory_order_acquire) == 0;
}

/* Polls done(pool, arg), giving the core away between polls, for at most
 * the pool's spin time. Waking a sleeping thread costs 0.15-0.2 ms on this
 * project's VMs, as much as a 1 MiB compression, and jobs come back to back
 * (a codec call's encode and move, a ring's steps): a short poll saves most
 * wake-ups. The caller sleeps afterwards if done is still false. */
static void zd_pool_poll(zd_pool_t* pool, int (*done)(zd_pool_t*, unsigned long), unsigned long arg) {
  if (pool->spin <= 0) return;
  double end = zu_now() + pool->spin;
  for (int k = 0; !done(pool, arg); k++) {
    if ((k & 15) == 15 && zu_now() > end) return;
    sched_yield();
  }
}

static void* zd_pool_worker(void* p) {
  zd_worker_t w = *(zd_worker_t*)p;
  free(p);
  zd_pool_t* pool = w.pool;
  unsigned long seen = 0;
  for (;;) {
    zd_pool_poll(pool, zd_job_started, seen);
    pthread_mutex_lock(&pool->lock);
    while (!pool->stop && pool->generation == seen) {
      pool->sleepers++;
      pthread_cond_wait(&pool->wake, &pool->lock);
      pool->sleepers--;
    }
    if (pool->stop) break;
    seen = pool->generation;
    zd_pool_fn fn = pool->fn;
    void* arg = pool->arg;
    int n = pool->active;
    pthread_mutex_unlock(&pool->lock);
    if (w.t >= n) continue; /* not needed for this job */
    fn(arg, w.t, n);
    if (atomic_fetch_sub(&pool->pending, 1) == 1) {
      pthread_mutex_lock(&pool->lock);
      if (pool->waiting) pthread_cond_signal(&pool->done);
      pthread_mutex_unlock(&pool->lock);
    }
  }
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

zcclResult_t zd_pool_create(int nthreads, zd_pool_t** out) {
  ZU_RETURN_ERR_IF(out == NULL, zcclInvalidArgument, "zd_pool_create: NULL argument");
  if (nthreads <= 0) nthreads = zd_host_ncores();
  zd_pool_t* pool = calloc(1, sizeof *pool);
  ZU_RETURN_ERR_IF(pool == NULL, zcclSystemError, "zd_pool_create: out of memory");
  pool->threads = calloc((size_t)nthreads, sizeof *pool->threads);
  if (pool->threads == NULL) {
    free(pool);
    return ZU_ERROR(zcclSystemError, "zd_pool_create: out of memory");
  }
  int64_t spin = 0;
  zcclResult_t res = zu_param_int(ZU_PARAM_POOL_SPIN_US, &spin);
  if (res == zcclSuccess && spin < 0)
    res = ZU_ERROR(zcclInvalidArgument, "ZCCL_POOL_SPIN_US=%lld must be >= 0", (long long)spin);
  if (res != zcclSuccess) {
    free(pool->threads);
    free(pool);
    return res;
  }
  pool->spin = (double)spin * 1e-6;
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  pool->size = 1;
  for (int t = 1; t < nthreads; t++) {
    zd_worker_t* w = malloc(sizeof *w);
    if (w == NULL || (w->pool = pool, w->t = t, pthread_create(&pool->threads[t], NULL, zd_pool_worker, w) != 0)) {
      free(w);
      zd_pool_destroy(pool);
      return ZU_ERROR(zcclSystemError, "zd_pool_create: cannot start thread %d of %d", t, nthreads);
    }
    pool->size = t + 1;
  }
  ZU_INFO(ZU_LOG_DEVICE, "host thread pool of %d threads", pool->size);
  *out = pool;
  return zcclSuccess;
}

void zd_pool_destroy(zd_pool_t* pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int t = 1; t < pool->size; t++) pthread_join(pool->threads[t], NULL);
  pthread_cond_destroy(&pool->done);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  free(pool->threads);
  free(pool);
}

int zd_pool_size(const zd_pool_t* pool) { return pool ? pool->size : 1; }

void zd_pool_run(zd_pool_t* pool, int nthreads, zd_pool_fn fn, void* arg) {
  int n = pool ? pool->size : 1;
  if (nthreads > 0 && nthreads < n) n = nthreads;
  if (n == 1) {
    fn(arg, 0, 1);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  pool->fn = fn;
  pool->arg = arg;
  pool->active = n;
  atomic_store(&pool->pending, n - 1);
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  if (pool->sleepers) pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  fn(arg, 0, n);
  zd_pool_poll(pool, zd_job_ended, 0); /* then sleep until the last worker signals */
  pthread_mutex_lock(&pool->lock);
  pool->waiting = 1;
  while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done, &pool->lock);
  pool->waiting = 0;
  pthread_mutex_unlock(&pool->lock);
}
