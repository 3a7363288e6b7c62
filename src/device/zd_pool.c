#include "zd_pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "zd_device.h"
#include "zu_error.h"

struct zd_pool {
  int size;
  pthread_t* threads;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  /* The current job; generation tells workers a new one has started. */
  unsigned long generation;
  zd_pool_fn fn;
  void* arg;
  int active;  /* threads taking part in the job (caller included) */
  int pending; /* workers still running it */
  int stop;
};

typedef struct {
  zd_pool_t* pool;
  int t;
} zd_worker_t;

static void* zd_pool_worker(void* p) {
  zd_worker_t w = *(zd_worker_t*)p;
  free(p);
  zd_pool_t* pool = w.pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (!pool->stop && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->lock);
    if (pool->stop) break;
    seen = pool->generation;
    if (w.t >= pool->active) continue; /* not needed for this job */
    zd_pool_fn fn = pool->fn;
    void* arg = pool->arg;
    int n = pool->active;
    pthread_mutex_unlock(&pool->lock);
    fn(arg, w.t, n);
    pthread_mutex_lock(&pool->lock);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
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
  pool->pending = n - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  fn(arg, 0, n);
  pthread_mutex_lock(&pool->lock);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
}
