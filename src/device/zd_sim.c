/* The sim device: host memory with a GPU stream's semantics. Operations go
 * into a fixed ring and one worker thread runs them in order, each after a
 * random delay, so an algorithm that reads a result before waiting for it
 * sees stale data in tests. Events are operation counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_dev_impl.h"
#include "zu_error.h"
#include "zu_param.h"

/* Pending operations; enqueue blocks when full, as a GPU launch queue does,
 * so queueing never allocates. */
#define ZD_SIM_QUEUE 1024

struct zd_sim {
  pthread_mutex_t lock;
  pthread_cond_t work;  /* worker: something queued, or stop */
  pthread_cond_t space; /* issuer: a slot freed */
  pthread_cond_t done;  /* waiters: completed advanced */
  pthread_t worker;
  zd_op_t ring[ZD_SIM_QUEUE];
  uint64_t submitted, completed; /* head = completed + running; tail = submitted */
  int stop;
  int delay_us;
  uint64_t rng; /* worker only */
  /* First error since the last report, with its message (the worker's
   * thread-local last error would not reach the caller otherwise). */
  zcclResult_t err;
  char err_msg[256];
};

static uint64_t zd_sim_rand(zd_sim_t* s) {
  /* xorshift64: cheap, and seeded per device so runs differ. */
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return s->rng;
}

static void* zd_sim_worker(void* arg) {
  zd_dev_t* dev = arg;
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (s->completed == s->submitted && !s->stop) pthread_cond_wait(&s->work, &s->lock);
    if (s->completed == s->submitted) break; /* stop, and drained */
    /* The slot stays owned by the worker until completed advances. */
    zd_op_t op = s->ring[s->completed % ZD_SIM_QUEUE];
    pthread_mutex_unlock(&s->lock);

    if (s->delay_us > 0) {
      long us = (long)(zd_sim_rand(s) % ((uint64_t)s->delay_us + 1));
      struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
      while (nanosleep(&ts, &ts) != 0) {
      }
    }
    zcclResult_t res = zd_op_exec(dev, &op);

    pthread_mutex_lock(&s->lock);
    if (res != zcclSuccess && s->err == zcclSuccess) {
      s->err = res;
      snprintf(s->err_msg, sizeof s->err_msg, "%s", zu_error_last());
    }
    s->completed++;
    pthread_cond_broadcast(&s->done);
    pthread_cond_signal(&s->space);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* The queue's synchronisation objects and memory (no worker running). */
static void zd_sim_free(zd_dev_t* dev) {
  zd_sim_t* s = dev->sim;
  pthread_cond_destroy(&s->done);
  pthread_cond_destroy(&s->space);
  pthread_cond_destroy(&s->work);
  pthread_mutex_destroy(&s->lock);
  free(s);
  dev->sim = NULL;
}

static zcclResult_t zd_sim_init(zd_dev_t* dev) {
  int64_t delay = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_SIM_DELAY_US, &delay));
  ZU_RETURN_ERR_IF(delay < 0 || delay > 10000000, zcclInvalidArgument,
                   "ZCCL_SIM_DELAY_US=%lld: expected 0 .. 10000000", (long long)delay);
  zd_sim_t* s = calloc(1, sizeof *s);
  ZU_RETURN_ERR_IF(s == NULL, zcclSystemError, "sim device: out of memory");
  s->delay_us = (int)delay;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  s->rng = ((uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(uintptr_t)s ^ 1;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->space, NULL);
  pthread_cond_init(&s->done, NULL);
  dev->sim = s;
  if (pthread_create(&s->worker, NULL, zd_sim_worker, dev) != 0) {
    zd_sim_free(dev);
    return ZU_ERROR(zcclSystemError, "sim device: cannot start its worker thread");
  }
  return zcclSuccess;
}

static void zd_sim_fini(zd_dev_t* dev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->worker, NULL); /* runs what is queued first */
  if (s->err != zcclSuccess) ZU_WARN("sim device destroyed with an unreported error: %s", s->err_msg);
  zd_sim_free(dev);
}

static zcclResult_t zd_sim_submit(zd_dev_t* dev, const zd_op_t* op) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  while (s->submitted - s->completed == ZD_SIM_QUEUE) pthread_cond_wait(&s->space, &s->lock);
  s->ring[s->submitted % ZD_SIM_QUEUE] = *op;
  s->submitted++;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
  return zcclSuccess;
}

static zd_event_t zd_sim_record(zd_dev_t* dev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  zd_event_t ev = s->submitted;
  pthread_mutex_unlock(&s->lock);
  return ev;
}

static int zd_sim_done(zd_dev_t* dev, zd_event_t ev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  int done = s->completed >= ev;
  pthread_mutex_unlock(&s->lock);
  return done;
}

static zcclResult_t zd_sim_wait(zd_dev_t* dev, zd_event_t ev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  while (s->completed < ev) pthread_cond_wait(&s->done, &s->lock);
  zcclResult_t res = s->err;
  char msg[sizeof s->err_msg];
  memcpy(msg, s->err_msg, sizeof msg);
  s->err = zcclSuccess;
  pthread_mutex_unlock(&s->lock);
  /* Recorded again here so zcclGetLastError of the waiting thread has it. */
  if (res != zcclSuccess) return ZU_ERROR(res, "a queued sim operation failed: %s", msg);
  return zcclSuccess;
}

/* Allocations and frees wait for every sim user stream first, the strict
 * reading of what their CUDA counterparts may do (zd_sim_streams_drain). */
static zcclResult_t zd_sim_mem_alloc(zd_dev_t* dev, size_t bytes, void** mem) {
  (void)dev;
  zd_sim_streams_drain();
  *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
  ZU_RETURN_ERR_IF(*mem == NULL, zcclSystemError, "sim device: cannot allocate %zu bytes", bytes);
  return zcclSuccess;
}

static void zd_sim_mem_free(zd_dev_t* dev, void* mem) {
  (void)dev;
  zd_sim_streams_drain();
  free(mem);
}

const zd_ops_t zd_sim_ops = {
    .name = "sim",
    .init = zd_sim_init,
    .fini = zd_sim_fini,
    .submit = zd_sim_submit,
    .record = zd_sim_record,
    .done = zd_sim_done,
    .wait = zd_sim_wait,
    .pool_alloc = zd_sim_mem_alloc,
    .pool_free = zd_sim_mem_free,
    .host_alloc = zd_sim_mem_alloc,
    .host_free = zd_sim_mem_free,
};
