/* The caller's stream (zd_device.h, "stream-ordered calls"): tickets that
 * order an operation after the stream's earlier work and hold its later
 * work, for the cuda device (through zd_cuda_stream.cu) and for sim user
 * streams, which give CI the same orchestration on the CPU. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_dev_impl.h"
#include "zu_error.h"

#define ZD_SIM_STREAM_MAGIC 0x7a737472u /* "zstr" */

typedef struct zd_sim_item {
  void (*fn)(void*);
  void* arg;
  zd_ticket_t* hold; /* instead of fn: block until released */
  struct zd_sim_item* next;
} zd_sim_item_t;

typedef struct zd_sim_stream {
  uint32_t magic;
  pthread_mutex_t lock;
  pthread_cond_t cv; /* items queued or done, holds released, stop */
  pthread_t thread;
  zd_sim_item_t *head, *tail;
  uint64_t queued, done; /* items */
  int stop;
  struct zd_sim_stream* next_live; /* zd_sim_live */
} zd_sim_stream_t;

/* Every live sim stream, for zd_sim_streams_drain (what a CUDA allocation
 * or free may do: wait for the whole device). */
static pthread_mutex_t zd_sim_live_lock = PTHREAD_MUTEX_INITIALIZER;
static zd_sim_stream_t* zd_sim_live;

struct zd_ticket {
  zd_kind_t kind;
  /* sim: the stream, its item count at the call, and whether the hold was
   * released; refs: the caller's side and the stream's hold item. */
  zd_sim_stream_t* s;
  uint64_t mark;
  int released, refs;
  void* cuda; /* cuda: zd_cuda_ticket_enter's state */
};

static void zd_ticket_unref(zd_sim_stream_t* s, zd_ticket_t* t) { /* under s->lock */
  (void)s;
  if (--t->refs == 0) free(t);
}

static void* zd_sim_stream_main(void* arg) {
  zd_sim_stream_t* s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (s->head == NULL && !s->stop) pthread_cond_wait(&s->cv, &s->lock);
    if (s->head == NULL) break;
    zd_sim_item_t* it = s->head;
    if (it->hold) {
      while (!it->hold->released) pthread_cond_wait(&s->cv, &s->lock);
      zd_ticket_unref(s, it->hold);
    } else {
      pthread_mutex_unlock(&s->lock);
      it->fn(it->arg);
      pthread_mutex_lock(&s->lock);
    }
    s->head = it->next;
    if (s->head == NULL) s->tail = NULL;
    free(it);
    s->done++;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static zd_sim_stream_t* zd_sim_stream_of(zcclStream_t s) { return (zd_sim_stream_t*)(void*)s; }

int zd_sim_stream_valid(zcclStream_t s) {
  return s != NULL && zd_sim_stream_of(s)->magic == ZD_SIM_STREAM_MAGIC;
}

zcclResult_t zd_sim_stream_create(zcclStream_t* out) {
  ZU_RETURN_ERR_IF(out == NULL, zcclInvalidArgument, "zd_sim_stream_create: NULL stream");
  zd_sim_stream_t* s = calloc(1, sizeof *s);
  ZU_RETURN_ERR_IF(s == NULL, zcclSystemError, "sim stream: out of memory");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  int rc = pthread_create(&s->thread, NULL, zd_sim_stream_main, s);
  if (rc != 0) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return ZU_ERROR(zcclSystemError, "sim stream: cannot start its thread: %s", strerror(rc));
  }
  s->magic = ZD_SIM_STREAM_MAGIC;
  pthread_mutex_lock(&zd_sim_live_lock);
  s->next_live = zd_sim_live;
  zd_sim_live = s;
  pthread_mutex_unlock(&zd_sim_live_lock);
  *out = (zcclStream_t)(void*)s;
  return zcclSuccess;
}

static zcclResult_t zd_sim_stream_push(zd_sim_stream_t* s, void (*fn)(void*), void* arg, zd_ticket_t* hold,
                                       uint64_t* mark) {
  zd_sim_item_t* it = calloc(1, sizeof *it);
  ZU_RETURN_ERR_IF(it == NULL, zcclSystemError, "sim stream: out of memory");
  it->fn = fn, it->arg = arg, it->hold = hold;
  pthread_mutex_lock(&s->lock);
  if (mark) *mark = s->queued;
  if (hold) hold->refs++;
  if (s->tail)
    s->tail->next = it;
  else
    s->head = it;
  s->tail = it;
  s->queued++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  return zcclSuccess;
}

zcclResult_t zd_sim_stream_launch(zcclStream_t stream, void (*fn)(void*), void* arg) {
  ZU_RETURN_ERR_IF(!zd_sim_stream_valid(stream) || fn == NULL, zcclInvalidArgument,
                   "zd_sim_stream_launch: not a sim stream, or NULL function");
  return zd_sim_stream_push(zd_sim_stream_of(stream), fn, arg, NULL, NULL);
}

static void zd_sim_stream_wait_all(zd_sim_stream_t* s) { /* what is queued now */
  pthread_mutex_lock(&s->lock);
  uint64_t target = s->queued;
  while (s->done < target) pthread_cond_wait(&s->cv, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

zcclResult_t zd_sim_stream_sync(zcclStream_t stream) {
  ZU_RETURN_ERR_IF(!zd_sim_stream_valid(stream), zcclInvalidArgument, "zd_sim_stream_sync: not a sim stream");
  zd_sim_stream_wait_all(zd_sim_stream_of(stream));
  return zcclSuccess;
}

void zd_sim_streams_drain(void) {
  /* The list lock is held throughout: a stream is not destroyed under us
   * (destroy unlinks it first), and its worker never takes this lock. */
  pthread_mutex_lock(&zd_sim_live_lock);
  for (zd_sim_stream_t* s = zd_sim_live; s; s = s->next_live) zd_sim_stream_wait_all(s);
  pthread_mutex_unlock(&zd_sim_live_lock);
}

void zd_sim_stream_destroy(zcclStream_t stream) {
  if (!zd_sim_stream_valid(stream)) return;
  zd_sim_stream_t* s = zd_sim_stream_of(stream);
  pthread_mutex_lock(&zd_sim_live_lock);
  zd_sim_stream_t** at = &zd_sim_live;
  while (*at && *at != s) at = &(*at)->next_live;
  if (*at) *at = s->next_live;
  pthread_mutex_unlock(&zd_sim_live_lock);
  pthread_mutex_lock(&s->lock);
  s->stop = 1; /* the thread drains the queue first */
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  s->magic = 0;
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* ---- tickets ---------------------------------------------------------------- */
static int zd_cuda_usable;
static pthread_once_t zd_cuda_once = PTHREAD_ONCE_INIT;
static void zd_cuda_probe(void) { zd_cuda_usable = zd_cuda_current_device() >= 0; }

int zd_cuda_buffers(const void* a, const void* b) {
  pthread_once(&zd_cuda_once, zd_cuda_probe);
  if (!zd_cuda_usable) return 0;
  int da = a ? zd_cuda_is_device_ptr(a) : -1, db = b ? zd_cuda_is_device_ptr(b) : -1;
  if (da < 0) da = db;
  if (db < 0) db = da;
  return da != db ? -1 : da > 0;
}

int zd_stream_blocking(const zd_dev_t* dev) { return dev->stream_blocking; }

zcclResult_t zd_stream_sync(zd_dev_t* dev, zcclStream_t stream) {
  if (dev->kind == ZD_SIM) return zd_sim_stream_sync(stream);
  if (dev->kind == ZD_CUDA) return zd_cuda_stream_sync(stream);
  return ZU_ERROR(zcclInternalError, "the %s device has no streams", zd_kind_name(dev->kind));
}

zcclResult_t zd_stream_enter(zd_dev_t* dev, zcclStream_t stream, zd_ticket_t** out) {
  *out = NULL;
  zd_ticket_t* t = calloc(1, sizeof *t);
  ZU_RETURN_ERR_IF(t == NULL, zcclSystemError, "stream-ordered call: out of memory");
  t->kind = dev->kind;
  t->refs = 1;
  zcclResult_t res = zcclSuccess;
  if (dev->kind == ZD_SIM) {
    if (!zd_sim_stream_valid(stream)) {
      free(t);
      return ZU_ERROR(zcclInvalidArgument, "the sim device orders calls only on streams from zd_sim_stream_create");
    }
    t->s = zd_sim_stream_of(stream);
    res = zd_sim_stream_push(t->s, NULL, NULL, t, &t->mark);
  } else if (dev->kind == ZD_CUDA) {
    res = zd_cuda_ticket_enter(stream, &t->cuda);
  } else {
    res = ZU_ERROR(zcclInternalError, "the %s device has no streams", zd_kind_name(dev->kind));
  }
  if (res != zcclSuccess) {
    free(t);
    return res;
  }
  *out = t;
  return zcclSuccess;
}

zcclResult_t zd_ticket_wait(zd_ticket_t* t, int (*stop)(void*), void* arg) {
  if (t->kind == ZD_SIM) { /* woken by the stream's thread as items finish */
    zd_sim_stream_t* s = t->s;
    pthread_mutex_lock(&s->lock);
    while (s->done < t->mark) {
      if (stop && stop(arg)) {
        pthread_mutex_unlock(&s->lock);
        return ZU_ERROR(zcclRemoteError, "the communicator was aborted while the call waited for its stream");
      }
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 1000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&s->cv, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return zcclSuccess;
  }
  for (;;) {
    int passed;
    {
      passed = zd_cuda_ticket_passed(t->cuda);
      ZU_RETURN_ERR_IF(passed < 0, zcclUnhandledCudaError,
                       "the stream's work before this call failed (see the CUDA error above)");
    }
    if (passed) return zcclSuccess;
    ZU_RETURN_ERR_IF(stop && stop(arg), zcclRemoteError,
                     "the communicator was aborted while the call waited for its stream");
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

void zd_ticket_release(zd_ticket_t* t) {
  if (t == NULL) return;
  if (t->kind == ZD_SIM) {
    zd_sim_stream_t* s = t->s;
    pthread_mutex_lock(&s->lock);
    t->released = 1;
    pthread_cond_broadcast(&s->cv);
    zd_ticket_unref(s, t);
    pthread_mutex_unlock(&s->lock);
    return;
  }
  zd_cuda_ticket_release(t->cuda);
  free(t);
}
