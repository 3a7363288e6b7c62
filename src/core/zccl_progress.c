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
    atomic_store(&comm->troubled, 1);
  }
  pthread_mutex_unlock(&comm->lock);
}

/* ---- running one operation ----------------------------------------------------- */
static int zccl_aborted(void* comm) { return atomic_load(&((zcclComm_t)comm)->abort); }

static void zccl_op_execute(zcclComm_t comm, zccl_op_t* op) {
  zd_dev_t* dev = op->dev ? op->dev : comm->dev;
  if (zd_dev_kind(dev) == ZD_CUDA) zd_cuda_use_device(comm->cuda_dev);
  zd_dev_t* host = dev != comm->dev && zd_dev_kind(comm->dev) == ZD_HOST ? comm->dev : NULL;
  double cancel_by = 0;
  zp_ctx_t ctx = {.w = comm->worker, .dev = dev, .host = host, .link = &comm->link, .stats = &comm->stats, .rank = comm->rank, .nranks = comm->nranks,
                  .timeout = comm->timeout, .spin = comm->spin, .abort = op->despite_error ? &comm->abort : &comm->cancel,
                  .cancel_by = &cancel_by, .rules = &comm->algo_rules, .check_calls = comm->check_calls, .checksum = comm->checksum,
                  .memo = &comm->algo_memo, .mbox = &comm->mbox};
  /* Peers' failure notices: posted at the first operation (UCX keeps one
   * that comes earlier); without it peers are found out by ZCCL_TIMEOUT.
   * An exchange that runs despite an error does not heed them. */
  if (comm->nranks > 1 && zp_notice_listen(comm->worker, &comm->notice) == zcclSuccess && !op->despite_error)
    ctx.notice = &comm->notice;
  zcclResult_t res = zcclSuccess;
  /* Stream-ordered: not before the callers' streams have passed the call. */
  for (int i = 0; i < op->ntickets && res == zcclSuccess; i++)
    res = zd_ticket_wait(op->tickets[i], zccl_aborted, comm);
  /* An exchange despite an error: its peers are the live ones, whose
   * endpoints the failed operation may have closed. */
  for (int i = 0; op->despite_error && i < op->nxfers; i++) zt_revive(comm->worker, op->xfers[i].peer);
  if (op->nxfers > 0 && res == zcclSuccess) res = zp_xfers_run(&ctx, op->what, op->xfers, op->nxfers);
  if (op->calibrate) {
    ctx.seq = op->seq;
    res = zp_calibrate(&ctx, &comm->link);
  }
  for (int i = 0; i < op->ncolls && res == zcclSuccess; i++) {
    ctx.seq = op->colls[i].seq;
    res = zp_coll_run(&ctx, &op->colls[i]);
  }
  op->result = res;
  op->msg[0] = '\0';
  if (res == zcclSuccess) return;
  snprintf(op->msg, sizeof op->msg, "%s", zccl_msg_body(zu_error_last()));
  /* A point-to-point size mismatch leaves the peers in step; anything else,
   * and any failed collective, breaks the communicator. A stream-ordered
   * caller learns of failures only from the communicator. */
  if (res != zcclInvalidUsage || op->ncolls > 0 || op->detached) {
    zccl_comm_set_error(comm, res, op->msg);
    /* Every peer learns at once (not one that told this rank first). */
    if (!comm->notice.rx.done) zp_notice_send(comm->worker, &comm->notice, comm->rank, comm->nranks, res, op->msg);
  }
}

/* ---- the thread ------------------------------------------------------------------- */
static void zccl_op_finish(zcclComm_t comm, zccl_op_t* op) {
  /* Whatever happened, the held streams go on (a failure is the
   * communicator's error, not a hang). */
  for (int i = 0; i < op->ntickets; i++) zd_ticket_release(op->tickets[i]);
  op->ntickets = 0;
  int detached = op->detached;
  pthread_mutex_lock(&comm->lock);
  comm->head = op->next;
  if (comm->head == NULL) comm->tail = NULL;
  atomic_store(&comm->queued, comm->head != NULL);
  atomic_store(&op->done, 1);
  pthread_cond_broadcast(&comm->done_cv);
  pthread_mutex_unlock(&comm->lock);
  if (detached) zccl_op_free(op);
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
      int refuse = !op->despite_error && (broken != zcclSuccess || comm->revoked);
      if (refuse || atomic_load(&comm->abort)) {
        op->result = atomic_load(&comm->abort) ? zcclRemoteError : comm->revoked ? zcclInvalidUsage : broken;
        /* The earlier failure's message already names its operation. */
        snprintf(op->msg, sizeof op->msg, "%.*s", (int)sizeof op->msg - 1,
                 atomic_load(&comm->abort) ? "the communicator was aborted"
                 : comm->revoked          ? "the communicator was revoked (zcclCommRevoke)"
                                          : comm->async_msg);
        pthread_mutex_unlock(&comm->lock);
      } else {
        pthread_mutex_unlock(&comm->lock);
        pthread_mutex_lock(&comm->worker_lock);
        zccl_op_execute(comm, op);
        pthread_mutex_unlock(&comm->worker_lock);
      }
      zccl_op_finish(comm, op);
      busy_until = zu_now() + ZCCL_SPIN_SECONDS;
      pthread_mutex_lock(&comm->lock);
      continue;
    }
    if (comm->stop) break;
    pthread_mutex_unlock(&comm->lock);
    /* A caller running its operation inline holds the worker: skip. */
    if (pthread_mutex_trylock(&comm->worker_lock) == 0) {
      zt_progress(comm->worker);
      pthread_mutex_unlock(&comm->worker_lock);
    }
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
  ZU_CHECK(zu_param_int(ZU_PARAM_SPIN_US, &t));
  ZU_RETURN_ERR_IF(t < -1, zcclInvalidArgument, "ZCCL_SPIN_US=%lld must be >= -1", (long long)t);
  comm->spin = t < 0 ? -1.0 : (double)t * 1e-6;
  ZU_CHECK(zu_param_int(ZU_PARAM_CHECK_CALLS, &t));
  ZU_RETURN_ERR_IF(t != 0 && t != 1, zcclInvalidArgument, "ZCCL_CHECK_CALLS=%lld must be 0 or 1", (long long)t);
  comm->check_calls = (int)t;
  ZU_CHECK(zu_param_int(ZU_PARAM_CHECKSUM, &t));
  ZU_RETURN_ERR_IF(t != 0 && t != 1, zcclInvalidArgument, "ZCCL_CHECKSUM=%lld must be 0 or 1", (long long)t);
  comm->checksum = (int)t;
  zp_algo_rules_parse(zu_param_str(ZU_PARAM_ALGO), &comm->algo_rules);
  pthread_mutex_init(&comm->lock, NULL);
  pthread_mutex_init(&comm->worker_lock, NULL);
  zccl_cond_init(&comm->wake);
  zccl_cond_init(&comm->done_cv);
  comm->runtime = 1;
  /* Until large messages teach it: a conservative shared-memory/NIC guess. */
  comm->link = (zp_link_t){.alpha = 10e-6, .bandwidth = 1e9, .incast = 1, .cpu_share = 1};
  zd_kind_t kind;
  ZU_CHECK(zd_kind_from_env(&kind));
  /* cuda: the GPU's device now (so a missing GPU fails here); host buffers
   * keep the host device, whose kernels can read them. */
  if (kind == ZD_CUDA) {
    zd_cuda_use_device(comm->cuda_dev);
    ZU_CHECK(zd_dev_create(ZD_CUDA, &comm->gpu));
    kind = ZD_HOST;
  }
  ZU_CHECK(zd_dev_create(kind, &comm->dev));
  return zt_worker_create(&comm->worker);
}

/* Every rank measures the link together, so all hold the same model. */
static zcclResult_t zccl_calibrate(zcclComm_t comm) {
  if (comm->nranks == 1) return zcclSuccess;
  zccl_op_t* op = zccl_op_new("calibration", 0, 0);
  ZU_RETURN_ERR_IF(op == NULL, zcclSystemError, "out of memory");
  op->calibrate = 1;
  op->seq = comm->coll_seq++;
  zcclResult_t res = zccl_op_run(comm, op);
  zccl_op_free(op);
  return res;
}

zcclResult_t zccl_runtime_start(zcclComm_t comm) {
  comm->send_seq = calloc((size_t)comm->nranks, sizeof *comm->send_seq);
  comm->recv_seq = calloc((size_t)comm->nranks, sizeof *comm->recv_seq);
  ZU_RETURN_ERR_IF(!comm->send_seq || !comm->recv_seq, zcclSystemError, "out of memory for %d ranks",
                   comm->nranks);
  int rc = pthread_create(&comm->thread, NULL, zccl_progress_main, comm);
  ZU_RETURN_ERR_IF(rc != 0, zcclSystemError, "cannot start the progress thread: %s", strerror(rc));
  comm->thread_started = 1;
  return zccl_calibrate(comm);
}

void zccl_runtime_abort(zcclComm_t comm) {
  if (!comm->runtime) return;
  pthread_mutex_lock(&comm->lock);
  atomic_store(&comm->abort, 1);
  atomic_store(&comm->cancel, 1);
  pthread_cond_broadcast(&comm->wake);
  pthread_mutex_unlock(&comm->lock);
}

void zccl_runtime_stop(zcclComm_t comm, int abort) {
  if (!comm->runtime) return;
  if (abort) zccl_runtime_abort(comm);
  comm->runtime = 0;
  if (comm->thread_started) {
    pthread_mutex_lock(&comm->lock);
    comm->stop = 1;
    pthread_cond_broadcast(&comm->wake);
    pthread_mutex_unlock(&comm->lock);
    pthread_join(comm->thread, NULL);
    comm->thread_started = 0;
  }
  /* An operation another thread runs inline ends soon once abort is set
   * (it checks the flag while it waits): wait for it to let go. Endpoints
   * close gracefully (flushing what was sent) unless aborting. */
  pthread_mutex_lock(&comm->worker_lock);
  if (comm->worker) zp_notice_close(comm->worker, &comm->notice);
  zp_mbox_close(comm->worker, &comm->mbox);
  if (comm->worker) zt_worker_destroy(comm->worker, abort ? 0.0 : comm->timeout, abort);
  comm->worker = NULL;
  pthread_mutex_unlock(&comm->worker_lock);
  if (comm->dev) zd_dev_destroy(comm->dev);
  comm->dev = NULL;
  if (comm->gpu) zd_dev_destroy(comm->gpu);
  comm->gpu = NULL;
  free(comm->send_seq);
  free(comm->recv_seq);
  comm->send_seq = comm->recv_seq = NULL;
  pthread_cond_destroy(&comm->wake);
  pthread_cond_destroy(&comm->done_cv);
  pthread_mutex_destroy(&comm->lock);
  pthread_mutex_destroy(&comm->worker_lock);
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
  atomic_store(&comm->queued, 1);
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

int zccl_op_inline(zcclComm_t comm, zccl_op_t* op, zcclResult_t* res) {
  /* A blocking host call with nothing queued before it runs on the
   * caller's thread: no hand-off to the progress thread and back (two
   * wake-ups, which cost most of a small message's time on busy cores).
   * Holding the worker lock keeps the progress thread off the worker; an
   * operation queued meanwhile by another thread runs after this one. */
  if (atomic_load(&comm->queued) || atomic_load(&comm->troubled) || atomic_load(&comm->abort)) return 0;
  pthread_mutex_lock(&comm->worker_lock);
  zccl_op_execute(comm, op);
  pthread_mutex_unlock(&comm->worker_lock);
  atomic_store(&op->done, 1);
  *res = op->result != zcclSuccess ? ZU_ERROR(op->result, "%s", op->msg) : zcclSuccess;
  return 1;
}

zcclResult_t zccl_op_run(zcclComm_t comm, zccl_op_t* op) {
  zcclResult_t res;
  if (zccl_op_inline(comm, op, &res)) return res;
  ZU_CHECK(zccl_op_submit(comm, op));
  return zccl_op_wait(comm, op);
}

static zcclResult_t zccl_op_order_try(zcclComm_t comm, zccl_op_t* op, const zcclStream_t* streams, int nstreams,
                                      int* wait) {
  *wait = 0;
  zd_dev_t* dev = op->dev ? op->dev : comm->dev;
  if (zd_stream_blocking(dev)) {
    for (int i = 0; i < nstreams; i++) ZU_CHECK(zd_stream_sync(dev, streams[i]));
    *wait = 1;
    return zccl_op_submit(comm, op); /* never inline: the progress thread owns the CUDA device */
  }
  op->tickets = calloc((size_t)nstreams, sizeof *op->tickets);
  ZU_RETURN_ERR_IF(op->tickets == NULL && nstreams > 0, zcclSystemError, "%s: out of memory", op->what);
  for (int i = 0; i < nstreams; i++) {
    zcclResult_t res = zd_stream_enter(dev, streams[i], &op->tickets[i]);
    if (res != zcclSuccess) {
      for (int k = 0; k < i; k++) zd_ticket_release(op->tickets[k]);
      free(op->tickets);
      op->tickets = NULL;
      return res;
    }
    op->ntickets++;
  }
  op->detached = 1;
  return zccl_op_submit(comm, op);
}

zcclResult_t zccl_op_order(zcclComm_t comm, zccl_op_t* op, const zcclStream_t* streams, int nstreams, int* wait) {
  zcclResult_t res = zccl_op_order_try(comm, op, streams, nstreams, wait);
  if (res != zcclSuccess) {
    /* The call took its sequence numbers but will never run: the peers'
     * matching calls would wait for messages that never come, and every
     * later call here would pair with the wrong ones. The communicator
     * fails now, with the reason, instead of timing out later. */
    char msg[400];
    snprintf(msg, sizeof msg, "%s (not issued: this rank is out of step with its peers)",
             zccl_msg_body(zu_error_last()));
    zccl_comm_set_error(comm, res, msg);
  }
  return res;
}

zcclResult_t zccl_call_how(zcclComm_t comm, const char* fn, const void* sb, const void* rb, zcclStream_t stream,
                           zccl_call_t* how) {
  *how = (zccl_call_t){.dev = comm->dev, .ordered = 0, .stream = stream};
  if (zd_dev_kind(comm->dev) == ZD_SIM) { /* a sim stream stands for a CUDA stream */
    how->ordered = zd_sim_stream_valid(stream);
    return zcclSuccess;
  }
  int kind = zd_cuda_buffers(sb, rb);
  ZU_RETURN_ERR_IF(kind < 0, zcclInvalidArgument,
                   "%s: one buffer is CUDA device memory and the other host memory: give both of one kind", fn);
  if (kind == 0) return zcclSuccess;
  ZU_RETURN_ERR_IF(comm->cuda_dev < 0, zcclInvalidUsage,
                   "%s: device buffers, but the communicator was created without a current CUDA device", fn);
  if (comm->gpu == NULL) {
    zd_cuda_use_device(comm->cuda_dev);
    ZU_CHECK(zd_dev_create(ZD_CUDA, &comm->gpu));
  }
  how->dev = comm->gpu;
  how->ordered = 1;
  return zcclSuccess;
}

static size_t zccl_op_bytes(int nxfers, int ncolls) {
  return sizeof(zccl_op_t) + sizeof(zp_xfer_t) * (size_t)nxfers + sizeof(zp_coll_args_t) * (size_t)ncolls;
}

zccl_op_t* zccl_op_init(void* mem, const char* what, int nxfers, int ncolls) {
  memset(mem, 0, zccl_op_bytes(nxfers, ncolls));
  zccl_op_t* op = mem;
  op->what = what;
  op->xfers = (zp_xfer_t*)(op + 1);
  op->nxfers = nxfers;
  op->colls = (zp_coll_args_t*)(op->xfers + nxfers);
  op->ncolls = ncolls;
  atomic_store(&op->done, 1); /* not queued */
  return op;
}

zccl_op_t* zccl_op_new(const char* what, int nxfers, int ncolls) {
  void* mem = malloc(zccl_op_bytes(nxfers, ncolls));
  return mem ? zccl_op_init(mem, what, nxfers, ncolls) : NULL;
}

void zccl_op_free(zccl_op_t* op) {
  if (op == NULL) return;
  /* An operation the thread still holds (only after zccl_op_wait gave up
   * on a stuck thread) is leaked rather than freed under it. */
  if (atomic_load(&op->done)) {
    free(op->tickets);
    free(op);
  }
}

zcclResult_t zccl_comm_revoke(zcclComm_t comm) {
  pthread_mutex_lock(&comm->lock);
  comm->revoked = 1;
  atomic_store(&comm->troubled, 1);
  atomic_store(&comm->cancel, 1); /* what runs gives up; what is queued fails (zccl_progress_main) */
  pthread_cond_broadcast(&comm->wake);
  double give_up = zu_now() + 2 * comm->timeout + 10;
  while (comm->head != NULL && zu_now() < give_up) {
    struct timespec ts = zccl_abstime(0.1);
    pthread_cond_timedwait(&comm->done_cv, &comm->lock, &ts);
  }
  int quiet = comm->head == NULL;
  pthread_mutex_unlock(&comm->lock);
  /* A caller running an operation inline holds the worker until it has
   * given up too. */
  pthread_mutex_lock(&comm->worker_lock);
  pthread_mutex_unlock(&comm->worker_lock);
  ZU_RETURN_ERR_IF(!quiet, zcclInternalError, "zcclCommRevoke: the progress thread did not let go of its operations");
  return zcclSuccess;
}

zcclResult_t zccl_comm_check_usable(zcclComm_t comm, const char* fn) {
  if (!atomic_load(&comm->troubled)) return zcclSuccess;
  pthread_mutex_lock(&comm->lock);
  int revoked = comm->revoked;
  zcclResult_t broken = comm->async_error;
  char why[sizeof comm->async_msg];
  if (broken != zcclSuccess) memcpy(why, comm->async_msg, sizeof why);
  pthread_mutex_unlock(&comm->lock);
  ZU_RETURN_ERR_IF(revoked, zcclInvalidUsage,
                   "%s: comm was revoked (zcclCommRevoke): only destroy, abort, split and shrink remain", fn);
  ZU_RETURN_ERR_IF(broken != zcclSuccess, broken, "%s: comm has a pending error from an earlier operation: %.*s", fn,
                   (int)sizeof why, why);
  return zcclSuccess;
}

int zccl_comm_revoked(zcclComm_t comm) {
  pthread_mutex_lock(&comm->lock);
  int r = comm->revoked;
  pthread_mutex_unlock(&comm->lock);
  return r;
}

zcclResult_t zccl_comm_error(zcclComm_t comm, char* msg, size_t len) {
  pthread_mutex_lock(&comm->lock);
  zcclResult_t res = comm->async_error;
  if (msg && len) { /* every call asks: format only what there is to say */
    if (res != zcclSuccess) snprintf(msg, len, "%s", comm->async_msg);
    else msg[0] = '\0';
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}
