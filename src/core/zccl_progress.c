/* The per-communicator progress thread. API calls queue operations; the
 * thread runs them one at a time, in order (stream order), with all the
 * messages of one operation in flight together, and drives UCX. Every wait
 * has a deadline: an operation whose messages make no progress for
 * ZCCL_TIMEOUT seconds, or whose peer UCX declares dead, fails, and the
 * communicator keeps the error (zcclCommGetAsyncError). The thread is the
 * only user of the worker while it runs. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zccl_core.h"
#include "zu_dtype.h"
#include "zu_param.h"
#include "zu_time.h"

/* How long the thread and a waiting caller spin (yielding) before they
 * sleep: long enough to catch a reply in a ping-pong, short enough not to
 * steal cores from ranks that share them. */
#define ZCCL_SPIN_SECONDS 100e-6
/* A receive that waits this long gets an endpoint to watch its sender. */
#define ZCCL_WATCH_AFTER_SECONDS 0.5
/* While idle the thread still drives UCX now and then, so peers' connection
 * set-up and keep-alives are answered. */
#define ZCCL_IDLE_POLL_NS 10000000L

static struct timespec zccl_abstime(double seconds_from_now) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double s = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + seconds_from_now;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  return ts;
}

static void zccl_cond_init(pthread_cond_t* cv) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &attr);
  pthread_condattr_destroy(&attr);
}

/* An error message without the "file.c:123: " the progress thread's
 * ZU_ERROR put in front: it is re-raised on the caller's thread. */
static const char* zccl_msg_body(const char* m) {
  const char* c = strstr(m, ".c:");
  if (c == NULL) return m;
  const char* sp = strstr(c, ": ");
  return sp ? sp + 2 : m;
}

void zccl_comm_set_error(zcclComm_t comm, zcclResult_t res, const char* msg) {
  pthread_mutex_lock(&comm->lock);
  if (comm->async_error == zcclSuccess) {
    snprintf(comm->async_msg, sizeof comm->async_msg, "%s", msg);
    comm->async_error = res;
  }
  pthread_mutex_unlock(&comm->lock);
}

/* ---- running one operation ----------------------------------------------------- */
static zcclResult_t zccl_op_fail(zccl_op_t* op, zcclResult_t res, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static zcclResult_t zccl_op_fail(zccl_op_t* op, zcclResult_t res, const char* fmt, ...) {
  if (op->result != zcclSuccess) return op->result; /* the first reason wins */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(op->msg, sizeof op->msg, fmt, ap);
  va_end(ap);
  op->result = res;
  return res;
}

/* Checks a completed message: a receive must get exactly what was posted. */
static void zccl_xfer_check(zcclComm_t comm, zccl_op_t* op, const zccl_xfer_t* x) {
  const char* dt = zu_dtype_name(x->dtype);
  if (x->is_send) {
    if (x->req.status != 0)
      zccl_op_fail(op, zcclRemoteError, "%s: send of %zu bytes from rank %d to rank %d failed: %s", op->what,
                   x->bytes, comm->rank, x->peer, zt_req_error(&x->req));
    return;
  }
  if (zt_req_truncated(&x->req) || (x->req.status == 0 && x->req.length != x->bytes)) {
    zccl_op_fail(op, zcclInvalidUsage,
                 "%s: rank %d posted a receive of %zu x %s (%zu bytes) from rank %d, which sent %zu "
                 "bytes; sizes must match (nothing was written past the buffer)",
                 op->what, comm->rank, x->count, dt, x->bytes, x->peer, x->req.length);
  } else if (x->req.status != 0) {
    zccl_op_fail(op, zcclRemoteError, "%s: receive from rank %d failed: %s", op->what, x->peer,
                 zt_req_error(&x->req));
  }
}

/* Cancels what is still in flight and drives UCX until UCX no longer
 * touches the buffers (bounded: cancelled requests complete at once). */
static void zccl_op_cancel(zcclComm_t comm, zccl_op_t* op) {
  for (int i = 0; i < op->nxfers; i++) zt_cancel(comm->worker, &op->xfers[i].req);
  double deadline = zu_now() + 1.0;
  for (;;) {
    int pending = 0;
    for (int i = 0; i < op->nxfers; i++) pending += !op->xfers[i].req.done;
    if (!pending) return;
    if (zu_now() > deadline) {
      /* A rendezvous send to a dead peer without UCX's peer error mode
       * never completes; the peer cannot read it any more. */
      ZU_WARN("%s: %d messages did not complete after cancel", op->what, pending);
      return;
    }
    zt_progress(comm->worker);
  }
}

static void zccl_op_execute(zcclComm_t comm, zccl_op_t* op) {
  op->result = zcclSuccess;
  op->msg[0] = '\0';
  zt_worker_t* w = comm->worker;
  int posted = 0;
  for (; posted < op->nxfers; posted++) {
    zccl_xfer_t* x = &op->xfers[posted];
    zcclResult_t res;
    if (x->is_send) {
      res = zt_isend(w, x->peer, x->tag, x->buf, x->bytes, NULL, &x->req);
    } else {
      res = zt_irecv(w, x->peer, x->tag, ZT_TAG_MASK_ALL, x->buf, x->bytes, NULL, &x->req);
    }
    if (res != zcclSuccess) {
      zccl_op_fail(op, res, "%s", zccl_msg_body(zu_error_last()));
      break;
    }
  }
  for (int i = posted; i < op->nxfers; i++) op->xfers[i].req.done = 1; /* never started */

  int* checked = calloc((size_t)op->nxfers + 1, sizeof *checked);
  if (checked == NULL) zccl_op_fail(op, zcclSystemError, "%s: out of memory", op->what);
  /* A receive of the wrong size is reported, but the operation's other
   * messages still complete (the peers stay in step); anything else ends
   * the wait and breaks the communicator. */
  int fatal = op->result != zcclSuccess;
  /* A message may take longer than ZCCL_TIMEOUT on a slow link without
   * completing: allow for 10 MB/s on the largest one. */
  size_t largest = 0;
  for (int i = 0; i < op->nxfers; i++)
    if (op->xfers[i].bytes > largest) largest = op->xfers[i].bytes;
  double patience = comm->timeout + (double)largest / 1e7;
  double last_progress = zu_now();
  int left = op->nxfers;
  while (!fatal && left > 0) {
    int events = zt_progress(w);
    for (int i = 0; i < op->nxfers; i++) {
      zccl_xfer_t* x = &op->xfers[i];
      if (checked[i] || !x->req.done) continue;
      checked[i] = 1;
      left--;
      events = 1;
      zccl_xfer_check(comm, op, x);
      if (op->result != zcclSuccess && op->result != zcclInvalidUsage) fatal = 1;
    }
    if (fatal || left == 0) break;
    double now = zu_now();
    if (events) {
      last_progress = now;
      continue;
    }
    /* A receive waiting long: an endpoint to its sender lets UCX report the
     * sender's death (made only now: a peer that finished and destroyed its
     * worker early is normal, and connecting to it would fail). */
    if (now - last_progress > ZCCL_WATCH_AFTER_SECONDS)
      for (int i = 0; i < op->nxfers; i++)
        if (!op->xfers[i].is_send && !op->xfers[i].req.done) zt_watch(w, op->xfers[i].peer);
    const char* why = NULL;
    for (int i = 0; i < op->nxfers && !why; i++) {
      const zccl_xfer_t* x = &op->xfers[i];
      int st = x->req.done ? 0 : zt_peer_failed(w, x->peer);
      if (st != 0) {
        snprintf(op->msg, sizeof op->msg, "%s: rank %d lost rank %d (%s) with %s in flight", op->what,
                 comm->rank, x->peer, zt_req_error(&(zt_req_t){.status = st}), x->is_send ? "a send" : "a receive");
        why = op->msg;
      }
    }
    if (!why && atomic_load(&comm->abort)) {
      snprintf(op->msg, sizeof op->msg, "%s: the communicator was aborted", op->what);
      why = op->msg;
    }
    if (!why && now - last_progress > patience) {
      const zccl_xfer_t* x = NULL;
      for (int i = 0; i < op->nxfers && !x; i++)
        if (!op->xfers[i].req.done) x = &op->xfers[i];
      snprintf(op->msg, sizeof op->msg,
               "%s: rank %d waited %.0f s (ZCCL_TIMEOUT) for rank %d to %s; is it alive and making the "
               "matching call?",
               op->what, comm->rank, patience, x ? x->peer : -1, x && x->is_send ? "receive" : "send");
      why = op->msg;
    }
    if (why) {
      op->result = zcclRemoteError; /* outranks a size mismatch seen before */
      fatal = 1;
      break;
    }
    if (now - last_progress > ZCCL_SPIN_SECONDS) sched_yield();
  }
  free(checked);
  if (fatal) {
    zccl_op_cancel(comm, op);
    zccl_comm_set_error(comm, op->result, op->msg);
  }
}

/* ---- the thread ------------------------------------------------------------------- */
static void zccl_op_finish(zcclComm_t comm, zccl_op_t* op) {
  pthread_mutex_lock(&comm->lock);
  comm->head = op->next;
  if (comm->head == NULL) comm->tail = NULL;
  atomic_store(&op->done, 1);
  pthread_cond_broadcast(&comm->done_cv);
  pthread_mutex_unlock(&comm->lock);
}

static void* zccl_progress_main(void* arg) {
  zcclComm_t comm = arg;
  zu_log_set_rank(comm->rank);
  double busy_until = 0;
  pthread_mutex_lock(&comm->lock);
  for (;;) {
    if (comm->head) {
      zccl_op_t* op = comm->head;
      zcclResult_t broken = comm->async_error;
      if (broken != zcclSuccess || atomic_load(&comm->abort)) {
        op->result = broken != zcclSuccess ? broken : zcclRemoteError;
        /* The earlier failure's message already names its operation. */
        snprintf(op->msg, sizeof op->msg, "%.*s", (int)sizeof op->msg - 1,
                 broken != zcclSuccess ? comm->async_msg : "the communicator was aborted");
        pthread_mutex_unlock(&comm->lock);
      } else {
        pthread_mutex_unlock(&comm->lock);
        zccl_op_execute(comm, op);
      }
      zccl_op_finish(comm, op);
      busy_until = zu_now() + ZCCL_SPIN_SECONDS;
      pthread_mutex_lock(&comm->lock);
      continue;
    }
    if (comm->stop) break;
    pthread_mutex_unlock(&comm->lock);
    zt_progress(comm->worker);
    if (zu_now() < busy_until) { /* the next call usually comes at once */
      sched_yield();
      pthread_mutex_lock(&comm->lock);
      continue;
    }
    pthread_mutex_lock(&comm->lock);
    if (comm->head == NULL && !comm->stop) {
      struct timespec ts = zccl_abstime(ZCCL_IDLE_POLL_NS * 1e-9);
      pthread_cond_timedwait(&comm->wake, &comm->lock, &ts);
    }
  }
  pthread_mutex_unlock(&comm->lock);
  return NULL;
}

zcclResult_t zccl_runtime_create(zcclComm_t comm) {
  int64_t t;
  ZU_CHECK(zu_param_int(ZU_PARAM_TIMEOUT, &t));
  ZU_RETURN_ERR_IF(t < 1, zcclInvalidArgument, "ZCCL_TIMEOUT=%lld must be >= 1 second", (long long)t);
  comm->timeout = (double)t;
  pthread_mutex_init(&comm->lock, NULL);
  zccl_cond_init(&comm->wake);
  zccl_cond_init(&comm->done_cv);
  comm->runtime = 1;
  return zt_worker_create(&comm->worker);
}

zcclResult_t zccl_runtime_start(zcclComm_t comm) {
  comm->send_seq = calloc((size_t)comm->nranks, sizeof *comm->send_seq);
  comm->recv_seq = calloc((size_t)comm->nranks, sizeof *comm->recv_seq);
  ZU_RETURN_ERR_IF(!comm->send_seq || !comm->recv_seq, zcclSystemError, "out of memory for %d ranks",
                   comm->nranks);
  int rc = pthread_create(&comm->thread, NULL, zccl_progress_main, comm);
  ZU_RETURN_ERR_IF(rc != 0, zcclSystemError, "cannot start the progress thread: %s", strerror(rc));
  comm->thread_started = 1;
  return zcclSuccess;
}

void zccl_runtime_stop(zcclComm_t comm, int abort) {
  if (!comm->runtime) return;
  comm->runtime = 0;
  if (comm->thread_started) {
    pthread_mutex_lock(&comm->lock);
    if (abort) atomic_store(&comm->abort, 1);
    comm->stop = 1;
    pthread_cond_broadcast(&comm->wake);
    pthread_mutex_unlock(&comm->lock);
    pthread_join(comm->thread, NULL);
    comm->thread_started = 0;
  }
  /* Endpoints close gracefully (flushing what was sent) unless aborting. */
  if (comm->worker) zt_worker_destroy(comm->worker, abort ? 0.0 : comm->timeout, abort);
  comm->worker = NULL;
  free(comm->send_seq);
  free(comm->recv_seq);
  comm->send_seq = comm->recv_seq = NULL;
  pthread_cond_destroy(&comm->wake);
  pthread_cond_destroy(&comm->done_cv);
  pthread_mutex_destroy(&comm->lock);
}

/* ---- queueing and waiting ------------------------------------------------------------ */
zcclResult_t zccl_op_submit(zcclComm_t comm, zccl_op_t* op) {
  atomic_store(&op->done, 0);
  op->next = NULL;
  op->result = zcclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (comm->tail)
    comm->tail->next = op;
  else
    comm->head = op;
  comm->tail = op;
  pthread_cond_signal(&comm->wake);
  pthread_mutex_unlock(&comm->lock);
  return zcclSuccess;
}

zcclResult_t zccl_op_wait(zcclComm_t comm, zccl_op_t* op) {
  double spin_until = zu_now() + ZCCL_SPIN_SECONDS;
  while (!atomic_load(&op->done) && zu_now() < spin_until) sched_yield();
  if (!atomic_load(&op->done)) {
    pthread_mutex_lock(&comm->lock);
    /* The thread ends every operation within its timeout; this wait is
     * bounded too, in case the thread itself is stuck inside UCX. */
    double give_up = zu_now() + 2 * comm->timeout + 10;
    while (!atomic_load(&op->done) && zu_now() < give_up) {
      struct timespec ts = zccl_abstime(0.1);
      pthread_cond_timedwait(&comm->done_cv, &comm->lock, &ts);
    }
    pthread_mutex_unlock(&comm->lock);
    if (!atomic_load(&op->done)) {
      zccl_comm_set_error(comm, zcclInternalError, "the progress thread stopped answering");
      return ZU_ERROR(zcclInternalError, "%s: the progress thread did not finish the operation", op->what);
    }
  }
  if (op->result != zcclSuccess) return ZU_ERROR(op->result, "%s", op->msg);
  return zcclSuccess;
}

zcclResult_t zccl_op_run(zcclComm_t comm, zccl_op_t* op) {
  ZU_CHECK(zccl_op_submit(comm, op));
  return zccl_op_wait(comm, op);
}

zccl_op_t* zccl_op_new(const char* what, int nxfers) {
  zccl_op_t* op = calloc(1, sizeof *op + sizeof(zccl_xfer_t) * (size_t)(nxfers > 0 ? nxfers : 1));
  if (op == NULL) return NULL;
  op->what = what;
  op->xfers = (zccl_xfer_t*)(op + 1);
  op->nxfers = nxfers;
  atomic_store(&op->done, 1); /* not queued */
  return op;
}

void zccl_op_free(zccl_op_t* op) {
  if (op == NULL) return;
  /* An operation the thread still holds (only after zccl_op_wait gave up
   * on a stuck thread) is leaked rather than freed under it. */
  if (atomic_load(&op->done)) free(op);
}

zcclResult_t zccl_comm_error(zcclComm_t comm, char* msg, size_t len) {
  pthread_mutex_lock(&comm->lock);
  zcclResult_t res = comm->async_error;
  if (msg && len) snprintf(msg, len, "%s", comm->async_msg);
  pthread_mutex_unlock(&comm->lock);
  return res;
}
