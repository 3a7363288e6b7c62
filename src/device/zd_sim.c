/* The sim device: host memory with a GPU stream's semantics. Each lane
 * (zd_device.h, "streams of one device") is a fixed ring that a worker
 * thread of its own runs in order, each operation after a random delay, so
 * an algorithm that reads a result before waiting for it, or that lets two
 * lanes write one buffer, sees wrong data in tests. Events are a lane's
 * operation counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_dev_impl.h"
#include "zu_error.h"
#include "zu_param.h"

/* Pending operations per lane; enqueue blocks when full, as a GPU launch
 * queue does, so queueing never allocates. */
#define ZD_SIM_QUEUE 1024

/* An operation, or (wait_lane >= 0) a wait for another lane's event. */
typedef struct {
  zd_op_t op;
  int wait_lane;
  uint64_t wait_seq;
} zd_sim_item_t;

typedef struct {
  zd_sim_item_t ring[ZD_SIM_QUEUE];
  uint64_t submitted, completed; /* head = completed + running; tail = submitted */
  pthread_t worker;
  int started;
  uint64_t rng; /* the worker's */
  /* First error since the last report, with its message (the worker's
   * thread-local last error would not reach the caller otherwise). */
  zcclResult_t err;
  char err_msg[256];
  zd_dev_t* dev;
} zd_sim_lane_t;

struct zd_sim {
  pthread_mutex_t lock;
  pthread_cond_t work;  /* workers: something queued, or stop */
  pthread_cond_t space; /* issuer: a slot freed */
  pthread_cond_t done;  /* waiters and waiting lanes: a lane's completed advanced */
  int stop;
  int delay_us;
  long lane_lag_us; /* ZCCL_SIM_LANE_LAG_US */
  int fail_range;   /* ZCCL_SIM_FAIL_RANGE */
  int fail_encode;  /* ZCCL_SIM_FAIL_ENCODE */
  zd_sim_lane_t lanes[ZD_LANES_MAX];
};

static uint64_t zd_sim_rand(zd_sim_lane_t* l) {
  /* xorshift64: cheap, and seeded per lane so runs differ. */
  l->rng ^= l->rng << 13;
  l->rng ^= l->rng >> 7;
  l->rng ^= l->rng << 17;
  return l->rng;
}

static void* zd_sim_worker(void* arg) {
  zd_sim_lane_t* l = arg;
  zd_dev_t* dev = l->dev;
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (l->completed == l->submitted && !s->stop) pthread_cond_wait(&s->work, &s->lock);
    if (l->completed == l->submitted) break; /* stop, and drained */
    /* The slot stays owned by the worker until completed advances. */
    const zd_sim_item_t* it = &l->ring[l->completed % ZD_SIM_QUEUE];
    if (it->wait_lane >= 0) {
      /* Recorded before this wait was queued, so never behind it: no cycle. */
      while (s->lanes[it->wait_lane].completed < it->wait_seq) pthread_cond_wait(&s->done, &s->lock);
    } else {
      zd_op_t op = it->op;
      pthread_mutex_unlock(&s->lock);
      long lag = l == &s->lanes[0] ? 0 : s->lane_lag_us; /* streams other than 0 run late */
      if (s->delay_us > 0 || lag > 0) {
        long us = lag + (s->delay_us > 0 ? (long)(zd_sim_rand(l) % ((uint64_t)s->delay_us + 1)) : 0);
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {
        }
      }
      zcclResult_t res = zd_op_exec(dev, &op);
      pthread_mutex_lock(&s->lock);
      if (res != zcclSuccess && l->err == zcclSuccess) {
        l->err = res;
        snprintf(l->err_msg, sizeof l->err_msg, "%s", zu_error_last());
      }
    }
    l->completed++;
    pthread_cond_broadcast(&s->done);
    pthread_cond_broadcast(&s->space);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Stops and joins the workers started (they run what is queued first),
 * then frees the queues. */
static void zd_sim_free(zd_dev_t* dev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; i < dev->nlanes; i++) {
    zd_sim_lane_t* l = &s->lanes[i];
    if (l->started) pthread_join(l->worker, NULL);
    if (l->err != zcclSuccess) ZU_WARN("sim device destroyed with an unreported error: %s", l->err_msg);
  }
  pthread_cond_destroy(&s->done);
  pthread_cond_destroy(&s->space);
  pthread_cond_destroy(&s->work);
  pthread_mutex_destroy(&s->lock);
  free(s);
  dev->sim = NULL;
}

static zcclResult_t zd_sim_init(zd_dev_t* dev) {
  int64_t delay = 0;
  int64_t lag = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_SIM_DELAY_US, &delay));
  ZU_CHECK(zu_param_int(ZU_PARAM_SIM_LANE_LAG_US, &lag));
  int64_t fail_range = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_SIM_FAIL_RANGE, &fail_range));
  int64_t fail_encode = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_SIM_FAIL_ENCODE, &fail_encode));
  ZU_RETURN_ERR_IF(lag < 0 || lag > 10000000, zcclInvalidArgument,
                   "ZCCL_SIM_LANE_LAG_US=%lld: expected 0 .. 10000000", (long long)lag);
  ZU_RETURN_ERR_IF(delay < 0 || delay > 10000000, zcclInvalidArgument,
                   "ZCCL_SIM_DELAY_US=%lld: expected 0 .. 10000000", (long long)delay);
  zd_sim_t* s = calloc(1, sizeof *s);
  ZU_RETURN_ERR_IF(s == NULL, zcclSystemError, "sim device: out of memory");
  s->delay_us = (int)delay;
  s->lane_lag_us = (long)lag;
  s->fail_range = fail_range != 0;
  s->fail_encode = fail_encode != 0;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->space, NULL);
  pthread_cond_init(&s->done, NULL);
  dev->sim = s;
  for (int i = 0; i < dev->nlanes; i++) {
    zd_sim_lane_t* l = &s->lanes[i];
    l->dev = dev;
    l->rng = ((uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(uintptr_t)l ^ 1;
    if (pthread_create(&l->worker, NULL, zd_sim_worker, l) != 0) {
      zd_sim_free(dev);
      return ZU_ERROR(zcclSystemError, "sim device: cannot start a worker thread");
    }
    l->started = 1;
  }
  return zcclSuccess;
}

static void zd_sim_fini(zd_dev_t* dev) { zd_sim_free(dev); }

static zcclResult_t zd_sim_push(zd_dev_t* dev, const zd_sim_item_t* it) {
  zd_sim_t* s = dev->sim;
  zd_sim_lane_t* l = &s->lanes[dev->lane];
  pthread_mutex_lock(&s->lock);
  while (l->submitted - l->completed == ZD_SIM_QUEUE) pthread_cond_wait(&s->space, &s->lock);
  l->ring[l->submitted % ZD_SIM_QUEUE] = *it;
  l->submitted++;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->lock);
  return zcclSuccess;
}

static zcclResult_t zd_sim_submit(zd_dev_t* dev, const zd_op_t* op) {
  ZU_RETURN_ERR_IF(dev->sim->fail_encode && op->kind == ZD_OP_ENCODE, zcclInternalError,
                   "sim device: compression failed (ZCCL_SIM_FAIL_ENCODE=1)");
  zd_sim_item_t it = {.op = *op, .wait_lane = -1};
  return zd_sim_push(dev, &it);
}

static zcclResult_t zd_sim_lane_wait(zd_dev_t* dev, zd_event_t ev) {
  zd_sim_item_t it = {.wait_lane = zd_ev_lane(ev), .wait_seq = zd_ev_seq(ev)};
  return zd_sim_push(dev, &it);
}

static zd_event_t zd_sim_record(zd_dev_t* dev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  zd_event_t ev = zd_ev_make(dev->lane, s->lanes[dev->lane].submitted);
  pthread_mutex_unlock(&s->lock);
  return ev;
}

static int zd_sim_done(zd_dev_t* dev, zd_event_t ev) {
  zd_sim_t* s = dev->sim;
  pthread_mutex_lock(&s->lock);
  int done = s->lanes[zd_ev_lane(ev)].completed >= zd_ev_seq(ev);
  pthread_mutex_unlock(&s->lock);
  return done;
}

static zcclResult_t zd_sim_wait(zd_dev_t* dev, zd_event_t ev) {
  zd_sim_t* s = dev->sim;
  zd_sim_lane_t* l = &s->lanes[zd_ev_lane(ev)];
  pthread_mutex_lock(&s->lock);
  if (zd_ev_seq(ev) > l->submitted) {
    pthread_mutex_unlock(&s->lock);
    return ZU_ERROR(zcclInvalidArgument, "zd_event_wait: event %llu was not recorded on this device",
                    (unsigned long long)zd_ev_seq(ev));
  }
  while (l->completed < zd_ev_seq(ev)) pthread_cond_wait(&s->done, &s->lock);
  zcclResult_t res = l->err;
  char msg[sizeof l->err_msg];
  memcpy(msg, l->err_msg, sizeof msg);
  l->err = zcclSuccess;
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

/* The host's range, or (ZCCL_SIM_FAIL_RANGE) the failure a broken GPU
 * would give. */
static zcclResult_t zd_sim_value_range(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype,
                                       int has_fill, double fill, double* min, double* max, size_t* valid) {
  ZU_RETURN_ERR_IF(dev->sim->fail_range, zcclInternalError, "sim device: value range failed (ZCCL_SIM_FAIL_RANGE=1)");
  return zd_value_range_host(dev, in, count, dtype, has_fill, fill, min, max, valid);
}

const zd_ops_t zd_sim_ops = {
    .name = "sim",
    .init = zd_sim_init,
    .fini = zd_sim_fini,
    .submit = zd_sim_submit,
    .record = zd_sim_record,
    .done = zd_sim_done,
    .wait = zd_sim_wait,
    .lane_wait = zd_sim_lane_wait,
    .pool_alloc = zd_sim_mem_alloc,
    .pool_free = zd_sim_mem_free,
    .value_range = zd_sim_value_range,
    .host_alloc = zd_sim_mem_alloc,
    .host_free = zd_sim_mem_free,
};
