/* Messages of one operation: post, wait with deadlines, check. Every wait
 * ends: on completion, on a dead peer, on ZCCL_TIMEOUT without progress
 * (plus a slow-link allowance), or on abort. Shared by point-to-point
 * operations (core) and the collective algorithms. Runs on the
 * communicator's progress thread, the only user of the worker. */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_algo.h"
#include "zp_coll.h"
#include "zp_tag.h"
#include "zu_dtype.h"
#include "zu_error.h"
#include "zu_time.h"

/* A receive that waits this long gets an endpoint to watch its sender. */
#define ZP_WATCH_AFTER_SECONDS 0.5
/* The no-progress timeout allows this rate for the largest message, which
 * completes only at its end. */
#define ZP_SLOW_LINK_BYTES_PER_S 1e7
/* A waiting rank with a core of its own checks the clock once per 16 empty
 * polls, and yields once per 1024 (tens of microseconds), so that it still
 * lets other work on the machine run. */
#define ZP_CHECK_EVERY_MASK 15u
#define ZP_YIELD_EVERY_MASK 1023u
/* A mailbox wait's nap once it has polled ZCCL_SPIN_US (zp_xfers_wait). */
#define ZP_MBOX_NAP_NS 20000

/* Checks a completed message into why (empty: fine). A receive must get
 * exactly what was posted. Returns the error class. */
static zcclResult_t zp_xfer_check(const zp_ctx_t* ctx, const char* what, const zp_xfer_t* x, char* why,
                                  size_t len) {
  if (x->is_send) {
    if (x->req.status == 0) return zcclSuccess;
    snprintf(why, len, "%s: send of %zu bytes from rank %d to rank %d failed: %s", what, x->bytes, ctx->rank,
             x->peer, zt_req_error(&x->req));
    return zcclRemoteError;
  }
  /* A compressed stream's size is known only to its sender: up to bytes. */
  int short_ok = x->var && x->req.status == 0 && x->req.length <= x->bytes;
  if ((zt_req_truncated(&x->req) || (x->req.status == 0 && x->req.length != x->bytes && !short_ok)) && x->coll) {
    snprintf(why, len,
             "%s: rank %d expected %zu bytes from rank %d, which sent %zu bytes; the call's count, datatype "
             "or root differs across ranks (nothing was written past the buffer)",
             what, ctx->rank, x->bytes, x->peer, x->req.length);
    return zcclInvalidUsage;
  }
  if (zt_req_truncated(&x->req) || (x->req.status == 0 && x->req.length != x->bytes && !short_ok)) {
    snprintf(why, len,
             "%s: rank %d posted a receive of %zu x %s (%zu bytes) from rank %d, which sent %zu bytes; "
             "sizes must match (nothing was written past the buffer)",
             what, ctx->rank, x->count, zu_dtype_name(x->dtype), x->bytes, x->peer, x->req.length);
    return zcclInvalidUsage;
  }
  if (x->req.status == 0) return zcclSuccess;
  snprintf(why, len, "%s: receive from rank %d failed: %s", what, x->peer, zt_req_error(&x->req));
  return zcclRemoteError;
}

static void zp_stage_put(const zp_ctx_t* ctx, zp_xfer_t* x, int n);

/* How long cancelled messages get to complete. A cancelled receive
 * completes at once; a send to a dead peer over shared memory, without
 * UCX's peer error mode, never does, so the grace is short and shared by
 * the whole operation (ctx->cancel_by). */
#define ZP_CANCEL_GRACE_SECONDS 0.25

/* The operation's cancel deadline, set by its first cancel. */
static double zp_cancel_deadline(const zp_ctx_t* ctx) {
  if (ctx->cancel_by == NULL) return zu_now() + ZP_CANCEL_GRACE_SECONDS;
  if (*ctx->cancel_by == 0) *ctx->cancel_by = zu_now() + ZP_CANCEL_GRACE_SECONDS;
  return *ctx->cancel_by;
}

/* Cancels what is still in flight, in one pass, and drives UCX until UCX no
 * longer touches the buffers or the operation's cancel deadline passes. */
void zp_xfers_cancel_what(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n) {
  int pending = 0;
  for (int i = 0; i < n; i++)
    if (zt_req_pending(&x[i].req)) {
      zt_cancel(ctx->w, &x[i].req);
      pending++;
    }
  if (pending) {
    double deadline = zp_cancel_deadline(ctx);
    for (;;) {
      pending = 0;
      for (int i = 0; i < n; i++) pending += zt_req_pending(&x[i].req);
      if (!pending) break;
      if (zu_now() > deadline) {
        /* A rendezvous send to a dead peer without UCX's peer error mode
         * never completes; the peer cannot read it any more. Its staging
         * buffer, if any, stays out rather than be reused under UCX. */
        ZU_WARN("%s: %d messages did not complete after cancel; given up", what, pending);
        for (int i = 0; i < n; i++)
          if (zt_req_pending(&x[i].req)) {
            x[i].stage = NULL;
            zt_abandon(ctx->w, &x[i].req);
          }
        break;
      }
      zt_progress(ctx->w);
    }
  }
  zp_stage_put(ctx, x, n);
}

/* ---- staging -------------------------------------------------------------------
 * Device memory the transport cannot reach (a cuda device without a
 * CUDA-aware UCX; sim with ZCCL_SIM_STAGE=1) moves through host staging
 * buffers: a send's bytes are copied out before it is posted, a receive's
 * copied in once it has completed, and the staging buffers go back after
 * the wait (or the cancel) that lets UCX go of them. */
int zp_xfers_staged(const zp_ctx_t* ctx) { return zd_stage_needed(ctx->dev) && !zt_cuda_memory(); }

static void zp_stage_put(const zp_ctx_t* ctx, zp_xfer_t* x, int n) {
  for (int i = 0; i < n; i++) {
    if (x[i].stage == NULL || !x[i].req.done) continue; /* UCX may still use one not done */
    if (x[i].stage_keep && x[i].stage_late) continue;   /* the caller's now */
    if (x[i].stage_late)
      zd_stage_put_after(ctx->dev, x[i].stage, x[i].stage_ev);
    else
      zd_stage_put(ctx->dev, x[i].stage);
    x[i].stage = NULL;
  }
}

static zcclResult_t zp_stage_out(const zp_ctx_t* ctx, zp_xfer_t* x, int n) {
  int sends = 0;
  for (int i = 0; i < n; i++)
    if (!x[i].prestaged) x[i].stage = NULL;
  for (int i = 0; i < n; i++) {
    if (x[i].bytes == 0 || x[i].prestaged) continue;
    ZU_CHECK(zd_stage_get(ctx->dev, x[i].bytes, &x[i].stage));
    if (!x[i].is_send) continue;
    ZU_CHECK(zd_copy(ctx->dev, x[i].stage, x[i].buf, x[i].bytes));
    sends++;
  }
  /* Only the copies (on the current stream): work on the device's other
   * streams (a ring's compressions ahead) goes on meanwhile. */
  return sends ? zd_event_wait(ctx->dev, zd_event_record(ctx->dev)) : zcclSuccess;
}

/* The received bytes of completed, successful receives into their buffers:
 * waited for, or (stage_async) only queued, their staging buffers going
 * back once the copies have passed. */
static zcclResult_t zp_stage_in(const zp_ctx_t* ctx, zp_xfer_t* x, int n) {
  int copies = 0, queued = 0;
  for (int i = 0; i < n; i++) {
    if (x[i].is_send || x[i].stage == NULL || !x[i].req.done || x[i].req.status != 0) continue;
    size_t len = x[i].req.length < x[i].bytes ? x[i].req.length : x[i].bytes;
    if (len == 0) continue;
    ZU_CHECK(zd_copy(ctx->dev, x[i].buf, x[i].stage, len));
    x[i].stage_late = x[i].stage_async;
    queued += x[i].stage_async;
    copies += !x[i].stage_async;
  }
  if (queued) { /* zp_stage_put gives them back after the copies, or leaves them to the caller */
    zd_event_t ev = zd_event_record(ctx->dev);
    for (int i = 0; i < n; i++)
      if (x[i].stage_late && !x[i].is_send) x[i].stage_ev = ev;
  }
  return copies ? zd_event_wait(ctx->dev, zd_event_record(ctx->dev)) : zcclSuccess;
}

zcclResult_t zp_xfers_post(const zp_ctx_t* ctx, zp_xfer_t* x, int n) {
  zcclResult_t res = zcclSuccess;
  if (zp_xfers_staged(ctx))
    res = zp_stage_out(ctx, x, n);
  else
    for (int i = 0; i < n; i++) x[i].stage = NULL;
  for (int i = 0; i < n && res == zcclSuccess; i++) {
    void* buf = x[i].stage ? x[i].stage : x[i].buf;
    x[i].carried = ctx->sig_carried != NULL && x[i].coll && x[i].stage == NULL;
    if (x[i].carried) {
      const size_t h = sizeof x[i].head_in;
      if (!x[i].is_send) memset(&x[i].head_in, 0, h);
      res = x[i].is_send ? zt_isend_head(ctx->w, x[i].peer, x[i].tag, ctx->sig_carried, h, buf, x[i].bytes, &x[i].req)
                         : zt_irecv_head(ctx->w, x[i].peer, x[i].tag, ZT_TAG_MASK_ALL, &x[i].head_in, h, buf,
                                         x[i].bytes, &x[i].req);
    } else {
      void* memh = zt_mem_find(ctx->w, buf, x[i].bytes); /* a buffer the user registered (zcclCommRegister) */
      res = x[i].is_send ? zt_isend(ctx->w, x[i].peer, x[i].tag, buf, x[i].bytes, memh, &x[i].req)
                         : zt_irecv(ctx->w, x[i].peer, x[i].tag, ZT_TAG_MASK_ALL, buf, x[i].bytes, memh, &x[i].req);
    }
    if (res != zcclSuccess) {
      for (int k = i + 1; k < n; k++) memset(&x[k].req, 0, sizeof x[k].req), x[k].req.done = 1;
      return res;
    }
  }
  if (res != zcclSuccess) { /* staging failed before anything was posted */
    for (int k = 0; k < n; k++) memset(&x[k].req, 0, sizeof x[k].req), x[k].req.done = 1;
    zp_stage_put(ctx, x, n);
  }
  return res;
}

/* ---- failures told to every peer ------------------------------------------------ */
static zcclResult_t zp_stall_listen(zt_worker_t* w, zp_notice_t* n) {
  if (n->stall_listening) return zcclSuccess;
  ZU_CHECK(zt_irecv(w, 0, zp_stall_sig_tag(0), zp_notice_mask(), &n->stall_in, sizeof n->stall_in, NULL,
                    &n->stall_rx));
  n->stall_listening = 1;
  return zcclSuccess;
}

zcclResult_t zp_notice_listen(zt_worker_t* w, zp_notice_t* n) {
  if (n->listening) return zcclSuccess;
  /* From any sender (zp_notice_mask). */
  ZU_CHECK(zt_irecv(w, 0, zp_notice_tag(0), zp_notice_mask(), &n->in, sizeof n->in, NULL, &n->rx));
  n->listening = 1;
  return zp_stall_listen(w, n);
}

void zp_notice_send(zt_worker_t* w, zp_notice_t* n, int rank, int nranks, zcclResult_t code, const char* why) {
  if (n->tx != NULL || nranks < 2) return;
  n->tx = calloc((size_t)nranks, sizeof *n->tx);
  if (n->tx == NULL) return; /* the peers find out by ZCCL_TIMEOUT, as before */
  n->ntx = nranks;
  n->out.rank = rank;
  n->out.code = (int32_t)code;
  snprintf(n->out.why, sizeof n->out.why, "%s", why);
  for (int p = 0; p < nranks; p++) {
    n->tx[p].done = 1; /* this rank, and peers whose send cannot start */
    if (p != rank)
      (void)zt_isend(w, p, zp_notice_tag(rank), &n->out, sizeof n->out, NULL, &n->tx[p]);
  }
}

void zp_notice_close(zt_worker_t* w, zp_notice_t* n) {
  /* Every rank of a failed call may have told this one: take those
   * notices in too (UCX warns about messages left unmatched). */
  for (int k = 0; k < 1024 && n->listening; k++) {
    for (int spin = 0; spin < 4 && !n->rx.done; spin++) zt_progress(w);
    if (!n->rx.done) break;
    n->listening = 0;
    if (zp_notice_listen(w, n) != zcclSuccess) break;
  }
  if (n->listening) zt_cancel(w, &n->rx);
  if (n->stall_listening) zt_cancel(w, &n->stall_rx);
  /* Small eager messages, done once the endpoint is wired up (which takes
   * the peer's progress too), or never (a dead peer). */
  double deadline = zu_now() + 0.5;
  for (;;) {
    int pending = zt_req_pending(&n->rx) + zt_req_pending(&n->stall_rx);
    for (int p = 0; p < n->ntx; p++) pending += zt_req_pending(&n->tx[p]);
    for (int p = 0; p < n->nstall; p++) pending += zt_req_pending(&n->stall_tx[p]);
    if (!pending || zu_now() > deadline) break;
    zt_progress(w);
  }
  zt_abandon(w, &n->rx);
  zt_abandon(w, &n->stall_rx);
  for (int p = 0; p < n->ntx; p++) zt_abandon(w, &n->tx[p]);
  for (int p = 0; p < n->nstall; p++) zt_abandon(w, &n->stall_tx[p]);
  free(n->tx);
  free(n->stall_tx);
  memset(n, 0, sizeof *n);
}

int zp_sig_differs(const zp_sig_t* m, const zp_sig_t* l, int rank, int peer, const char* what, char* why,
                   size_t len) {
  const char* field = m->coll != l->coll       ? "collective"
                      : m->count != l->count   ? "count"
                      : m->dtype != l->dtype   ? "datatype"
                      : m->op != l->op         ? "reduction op"
                      : m->root != l->root     ? "root"
                      : m->codec != l->codec || m->mode != l->mode || m->eb != l->eb || m->min_bytes != l->min_bytes
                          ? "compression setting"
                          : NULL;
  if (field == NULL) return 0;
  snprintf(why, len,
           "%s: the call's %s differs across ranks: rank %d called %s count %llu datatype %u op %u root %d "
           "(codec %d eb %g), rank %d %s count %llu datatype %u op %u root %d (codec %d eb %g)",
           what, field, rank, zp_coll_name((zp_coll_id_t)m->coll), (unsigned long long)m->count, m->dtype, m->op,
           m->root, m->codec, m->eb, peer, zp_coll_name((zp_coll_id_t)l->coll), (unsigned long long)l->count,
           l->dtype, l->op, l->root, l->codec, l->eb);
  return 1;
}

zcclResult_t zp_sig_post(const zp_ctx_t* ctx, const zp_sig_t* mine, zp_sig_t* left, zp_xfer_t x[2]) {
  int N = ctx->nranks, right = (ctx->rank + 1) % N, from = (ctx->rank + N - 1) % N;
  memset(x, 0, 2 * sizeof *x);
  x[0] = (zp_xfer_t){.is_send = 1, .peer = right, .buf = (void*)mine, .bytes = sizeof *mine, .count = sizeof *mine,
                     .dtype = zcclUint8, .coll = 1, .tag = zp_sig_tag(ctx->rank, ctx->seq)};
  x[1] = (zp_xfer_t){.peer = from, .buf = left, .bytes = sizeof *left, .count = sizeof *left, .dtype = zcclUint8,
                     .coll = 1, .tag = zp_sig_tag(from, ctx->seq)};
  /* Tiny host messages: never staged, whatever the device. */
  for (int i = 0; i < 2; i++) {
    zcclResult_t r = x[i].is_send ? zt_isend(ctx->w, x[i].peer, x[i].tag, x[i].buf, x[i].bytes, NULL, &x[i].req)
                                  : zt_irecv(ctx->w, x[i].peer, x[i].tag, ZT_TAG_MASK_ALL, x[i].buf, x[i].bytes, NULL,
                                             &x[i].req);
    if (r != zcclSuccess) {
      if (i == 0) x[1].req.done = 1;
      return r;
    }
  }
  return zcclSuccess;
}

/* A peer said its communicator broke: the operation's own messages get
 * this long without progress to bring their own verdict (a failure the
 * ranks agreed on arrives before the notice, a hop later at most), then it
 * fails naming that peer. */
#define ZP_NOTICE_PATIENCE_SECONDS 0.2

/* 1 once a peer's notice is in; why then says so. */
static int zp_noticed(const zp_ctx_t* ctx, const char* what, char* why, size_t len) {
  if (!ctx->notice || !ctx->notice->rx.done || ctx->notice->rx.status != 0) return 0;
  const zp_notice_msg_t* m = &ctx->notice->in;
  snprintf(why, len, "%s: rank %d's communicator broke: %.*s", what, m->rank, (int)sizeof m->why - 1, m->why);
  return 1;
}

/* A carried receive (zp_xfers_post): its head must be this call's
 * signature, and its length then counts the bytes after the head only.
 * zcclInvalidUsage (why says so) when it is not. */
static zcclResult_t zp_carried_in(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, char* why, size_t len) {
  const size_t h = sizeof x->head_in;
  if (x->req.status != 0 && !zt_req_truncated(&x->req)) return zcclSuccess; /* failed: zp_xfer_check says how */
  size_t got = x->req.length;
  int whole = x->req.status == 0 && got >= h;
  if (whole && memcmp(&x->head_in, ctx->sig_carried, h) == 0) {
    x->req.length = got - h;
    return zcclSuccess;
  }
  /* A head that reads as a signature is named field by field; anything
   * else (a framed or plain message of another call) only as not this call's. */
  if (whole && x->head_in.coll < ZP_NUM_COLLS &&
      zp_sig_differs(ctx->sig_carried, &x->head_in, ctx->rank, x->peer, what, why, len))
    return zcclInvalidUsage;
  snprintf(why, len,
           "%s: rank %d's message of %zu bytes is not this call's (a %zu-byte call signature, then %zu bytes): the "
           "call differs across ranks (collective, count, datatype, compression, ZCCL_CHECK_CALLS or ZCCL_ALGO)",
           what, x->peer, got, h, x->bytes);
  return zcclInvalidUsage;
}

/* A call whose signature travels in its own messages (ctx->sig_framed,
 * zp_frame.c; ctx->sig_carried) sends no signature message; one from the
 * left neighbour means that rank's call went another way (a different
 * count, collective or setting; buffers elsewhere; or ZCCL_ALGO), and both
 * would wait for messages that never come. The wait looks for it once it
 * stalls this long. */
#define ZP_FRAMED_PROBE_SECONDS 0.01

static zcclResult_t zp_left_sig_apart(const zp_ctx_t* ctx, const zp_sig_t* mine, const char* what, char* why,
                                   size_t len) {
  int left = (ctx->rank + ctx->nranks - 1) % ctx->nranks;
  uint64_t tag = zp_sig_tag(left, ctx->seq);
  if (!zt_probe(ctx->w, tag, ZT_TAG_MASK_ALL)) return zcclSuccess;
  /* It is in already: taken by a wait of its own, which does not look again. */
  zp_sig_t theirs;
  memset(&theirs, 0, sizeof theirs);
  zp_xfer_t x = {.peer = left, .buf = &theirs, .bytes = sizeof theirs, .count = sizeof theirs,
                 .dtype = zcclUint8, .coll = 1, .tag = tag};
  zp_ctx_t c = *ctx;
  c.sig_framed = NULL;
  c.sig_carried = NULL;
  if (zp_xfers_run(&c, what, &x, 1) != zcclSuccess ||
      !zp_sig_differs(mine, &theirs, ctx->rank, left, what, why, len))
    snprintf(why, len,
             "%s: rank %d's call went another way than rank %d's, with the same arguments: are the buffers of one "
             "kind (host or device) on every rank, and ZCCL_ALGO the same?",
             what, left, ctx->rank);
  return zcclInvalidUsage;
}

/* A wait for the left neighbour's signature message while a message of
 * this operation from that neighbour is in means its call went another way
 * (it frames or carries its signature): the signature goes before the
 * messages, on the same endpoint. Looked for once the wait stalls this
 * long, as are stalled signatures (below). */
#define ZP_STALL_PROBE_SECONDS 0.25

static int zp_sent_from(const zp_ctx_t* ctx, int peer) {
  return zt_probe(ctx->w, zp_tag(peer, ctx->seq, 0), zp_tag_op_mask());
}

/* Stalled signatures: a call that carries its signature in its messages
 * and stalls ZP_STALL_PROBE_SECONDS sends it to every peer it waits on,
 * again as often, and a stalled peer (waiting on this rank, say, in a call
 * that sends other messages) compares it: two ranks whose calls send each
 * other nothing, or messages no receive takes, still meet. (A stray
 * message from a peer this rank waits on would say the same, but a
 * rendezvous that moves its bytes slowly, with the peer's next message
 * already in, looks alike.) */
zcclResult_t zp_stall_sig_check(const zp_ctx_t* ctx, const zp_sig_t* mine, const char* what, char* why,
                                size_t len) {
  zp_notice_t* n = ctx->notice;
  if (n == NULL || mine == NULL) return zcclSuccess;
  zcclResult_t res = zcclSuccess;
  /* Taken one at a time, each receive posted again at once (UCX matches
   * one already in, so a few came in a row are all seen). */
  for (int k = 0; k < 4 * ctx->nranks && n->stall_listening && n->stall_rx.done; k++) {
    zp_stall_sig_t in = n->stall_in;
    int whole = n->stall_rx.status == 0 && n->stall_rx.length == sizeof in;
    n->stall_listening = 0;
    (void)zp_stall_listen(ctx->w, n); /* failing, stays 0: no more are taken */
    if (res != zcclSuccess || !whole || in.seq != ctx->seq) continue;
    in.algo[sizeof in.algo - 1] = 0;
    if (zp_sig_differs(mine, &in.sig, ctx->rank, in.rank, what, why, len)) {
      res = zcclInvalidUsage;
    } else if (ctx->sig_algo && in.algo[0] && strncmp(ctx->sig_algo, in.algo, sizeof in.algo - 1) != 0) {
      snprintf(why, len,
               "%s: the same call went another way on rank %d (%s) than on rank %d (%s): is ZCCL_ALGO the same on "
               "every rank?",
               what, ctx->rank, ctx->sig_algo, in.rank, in.algo);
      res = zcclInvalidUsage;
    }
  }
  return res;
}

/* Sends mine to every peer that x waits for a message from, but not while
 * an earlier one to that peer is in flight (the message's room is the
 * communicator's). */
static void zp_stall_sig_send(const zp_ctx_t* ctx, const zp_sig_t* mine, const zp_xfer_t* x, int n) {
  zp_notice_t* nt = ctx->notice;
  if (nt == NULL) return;
  if (nt->stall_tx == NULL) {
    nt->stall_tx = calloc((size_t)ctx->nranks, sizeof *nt->stall_tx);
    if (nt->stall_tx == NULL) return;
    nt->nstall = ctx->nranks;
  }
  int busy = 0;
  for (int p = 0; p < nt->nstall; p++) busy += zt_req_pending(&nt->stall_tx[p]);
  if (busy && nt->stall_out.seq != ctx->seq) return; /* the room holds another call's */
  nt->stall_out = (zp_stall_sig_t){.seq = ctx->seq, .rank = ctx->rank, .sig = *mine};
  if (ctx->sig_algo) snprintf(nt->stall_out.algo, sizeof nt->stall_out.algo, "%s", ctx->sig_algo);
  for (int i = 0; i < n; i++) {
    int p = x[i].peer;
    if (x[i].is_send || x[i].req.done || p < 0 || p >= nt->nstall || zt_req_pending(&nt->stall_tx[p])) continue;
    (void)zt_isend(ctx->w, p, zp_stall_sig_tag(ctx->rank), &nt->stall_out, sizeof nt->stall_out, NULL,
                   &nt->stall_tx[p]);
  }
}

/* What a stalled wait looks for: a signature message beside a framed or
 * carried call, the left neighbour's messages without its signature, and
 * stalled call signatures (above); and it sends its own (*sent_at: when it
 * last did). */
static zcclResult_t zp_stall_probe(const zp_ctx_t* ctx, const char* what, const zp_xfer_t* x, int n, double stalled,
                                   double now, double* sent_at, char* why, size_t len) {
  const zp_sig_t* mine = ctx->sig_framed ? ctx->sig_framed : ctx->sig_carried;
  if (mine) ZU_CHECK(zp_left_sig_apart(ctx, mine, what, why, len));
  if (stalled < ZP_STALL_PROBE_SECONDS) return zcclSuccess;
  ZU_CHECK(zp_stall_sig_check(ctx, mine ? mine : ctx->sig_mine, what, why, len));
  if (mine && now - *sent_at > ZP_STALL_PROBE_SECONDS) {
    zp_stall_sig_send(ctx, mine, x, n);
    *sent_at = now;
  }
  int left = (ctx->rank + ctx->nranks - 1) % ctx->nranks;
  if (ctx->sig_rx && !ctx->sig_rx->done && zp_sent_from(ctx, left)) {
    snprintf(why, len,
             "%s: rank %d's messages of this operation came without its call signature: its call went another "
             "way than rank %d's (a different collective, count, datatype or compression setting)",
             what, left, ctx->rank);
    return zcclInvalidUsage;
  }
  return zcclSuccess;
}

/* zcclInvalidUsage (why says so) once the left neighbour's call signature
 * is in and differs. */
static zcclResult_t zp_sig_guard(const zp_ctx_t* ctx, const char* what, int* sig_done, char* why, size_t len) {
  if (!ctx->sig_rx || *sig_done || !ctx->sig_rx->done) return zcclSuccess;
  *sig_done = 1;
  int left = (ctx->rank + ctx->nranks - 1) % ctx->nranks;
  return ctx->sig_rx->status == 0 && zp_sig_differs(ctx->sig_mine, ctx->sig_left, ctx->rank, left, what, why, len)
             ? zcclInvalidUsage
             : zcclSuccess;
}

zcclResult_t zp_xfers_wait(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n) {
  /* A receive of the wrong size is reported, but the other messages still
   * complete (the peers stay in step); anything else ends the wait. */
  char mismatch[400], why[400]; /* only the first byte set: a small call's waits are short */
  mismatch[0] = why[0] = '\0';
  zcclResult_t fatal = zcclSuccess;
  size_t largest = 0;
  for (int i = 0; i < n; i++)
    if (x[i].bytes > largest) largest = x[i].bytes;
  double patience = ctx->timeout + (double)largest / ZP_SLOW_LINK_BYTES_PER_S;
  /* The clock starts at the first check after polls that found nothing: a
   * wait that ends sooner reads it never (a read costs as much as a small
   * exchange on some machines, a VM's). */
  double last_progress = 0;
  int left = 0, sig_done = 0;
  for (int i = 0; i < n; i++) {
    x[i].checked = 0;
    left++;
  }
  double noticed_at = 0, stall_sig_at = 0;
  int crowded = ctx->link == NULL || ctx->link->cpu_share > 1;
  unsigned idle_polls = 0;
  int progressed = 0;
  /* The stall probes' clock: since the last of these messages completed
   * (other events, such as peers' stalled signatures, do not reset it). */
  int completed = 0, mbox = 0;
  double last_done = 0; /* set with last_progress */
  for (int i = 0; i < n; i++) mbox |= x[i].flag != NULL;
  while (left > 0) {
    int events = zt_progress(ctx->w);
    if (mbox) events |= zp_mbox_poll(x, n);
    for (int i = 0; i < n && fatal == zcclSuccess; i++) {
      if (x[i].checked || !x[i].req.done) continue;
      x[i].checked = 1;
      left--;
      events = 1;
      completed = 1;
      char m[400] = "";
      if (x[i].carried && !x[i].is_send && zp_carried_in(ctx, what, &x[i], m, sizeof m) != zcclSuccess) {
        fatal = zcclInvalidUsage; /* the calls differ: the rest may never come */
        snprintf(why, sizeof why, "%s", m);
        break;
      }
      zcclResult_t r = zp_xfer_check(ctx, what, &x[i], m, sizeof m);

      if (r == zcclInvalidUsage && !mismatch[0]) snprintf(mismatch, sizeof mismatch, "%s", m);
      if (r != zcclSuccess && r != zcclInvalidUsage) {
        fatal = r;
        snprintf(why, sizeof why, "%s", m);
      }
    }
    /* After the completions (their own errors come first), also when the
     * last one just came: the collective's final wait sees the signature. */
    if (fatal == zcclSuccess) fatal = zp_sig_guard(ctx, what, &sig_done, why, sizeof why);
    if (fatal != zcclSuccess || left == 0) break;
    if (events) {
      progressed = 1;
      continue;
    }
    /* Reading the clock costs as much as a poll on some machines (a VM's):
     * a rank with a core of its own reads it, and makes the checks below,
     * once per few empty polls. */
    if (!crowded && (++idle_polls & ZP_CHECK_EVERY_MASK) != 0) continue;
    double now = zu_now();
    if (last_progress == 0) last_progress = last_done = now;
    if (progressed) last_progress = now;
    if (completed) last_done = now;
    progressed = completed = 0;
    if (noticed_at == 0 && ctx->notice && ctx->notice->rx.done) noticed_at = now;
    /* Made only now: a peer that finished and destroyed its worker early
     * is normal, and connecting to it would fail. */
    if (now - last_progress > ZP_WATCH_AFTER_SECONDS)
      for (int i = 0; i < n; i++)
        if (!x[i].is_send && !x[i].req.done) zt_watch(ctx->w, x[i].peer);
    for (int i = 0; i < n && fatal == zcclSuccess; i++) {
      int st = x[i].req.done ? 0 : zt_peer_failed(ctx->w, x[i].peer);
      if (st == 0) continue;
      fatal = zcclRemoteError;
      snprintf(why, sizeof why, "%s: rank %d lost rank %d (%s) with %s in flight", what, ctx->rank, x[i].peer,
               zt_req_error(&(zt_req_t){.status = st}), x[i].is_send ? "a send" : "a receive");
    }
    if (fatal == zcclSuccess && ctx->abort && atomic_load(ctx->abort)) {
      fatal = zcclRemoteError;
      snprintf(why, sizeof why, "%s: the communicator was aborted", what);
    }
    if (fatal == zcclSuccess && ctx->cancel_by && *ctx->cancel_by > 0 && now > *ctx->cancel_by) {
      /* The operation already failed and cancelled (an algorithm's clean-up
       * waiting for its sends): its error is the one to report, and the
       * wait ends with its cancel deadline. */
      zp_xfers_cancel_what(ctx, what, x, n);
      return zcclRemoteError;
    }
    if (fatal == zcclSuccess && noticed_at > 0 &&
        now - (last_progress > noticed_at ? last_progress : noticed_at) > ZP_NOTICE_PATIENCE_SECONDS &&
        zp_noticed(ctx, what, why, sizeof why))
      fatal = zcclRemoteError;
    if (fatal == zcclSuccess && now - last_progress > ZP_FRAMED_PROBE_SECONDS)
      fatal = zp_stall_probe(ctx, what, x, n, now - last_done, now, &stall_sig_at, why, sizeof why);
    if (fatal == zcclSuccess && now - last_progress > patience) {
      const zp_xfer_t* p = NULL;
      for (int i = 0; i < n && !p; i++)
        if (!x[i].req.done) p = &x[i];
      fatal = zcclRemoteError;
      snprintf(why, sizeof why,
               "%s: rank %d waited %.0f s (ZCCL_TIMEOUT) for rank %d to %s; is it alive and making the "
               "matching call?",
               what, ctx->rank, patience, p ? p->peer : -1, p && p->is_send ? "receive" : "send");
    }
    if (fatal != zcclSuccess) break;
    /* Nothing happened. Still nothing after ZCCL_SPIN_US: sleep until UCX
     * has an event (a peer that is compressing for milliseconds gets the
     * whole core; yielding costs it system time). The sleep is short so
     * the checks above still run. */
    if (ctx->spin >= 0 && now - last_progress > ctx->spin) {
      /* A mailbox's flag wakes no one: a short nap instead, so that a late
       * peer costs a small exchange tens of microseconds, not a millisecond. */
      if (mbox) {
        nanosleep(&(struct timespec){.tv_nsec = ZP_MBOX_NAP_NS}, NULL);
        continue;
      }
      if (zt_wait(ctx->w, 0.01)) continue;
    }
    /* Before that, poll. With more ranks than cores, give the core away
     * after every empty poll: a rank that spins keeps the peer it waits for
     * off the CPU for a whole time slice (docs/measurements/net.md). With a
     * core each, only now and then: a yield is a system call, which costs
     * more than a small message's whole round trip (docs/measurements/latency.md). */
    if (crowded || (idle_polls & ZP_YIELD_EVERY_MASK) == 0) sched_yield();
  }
  if (fatal != zcclSuccess) {
    /* The communicator breaks: the peers hear it now, before the cancel
     * closes endpoints (not from one that told this rank). */
    if (ctx->notice && !ctx->notice->rx.done)
      zp_notice_send(ctx->w, ctx->notice, ctx->rank, ctx->nranks, fatal, why);
    zp_xfers_cancel_what(ctx, what, x, n); /* also returns the staging buffers */
    return ZU_ERROR(fatal, "%s", why);
  }
  zcclResult_t staged = zp_stage_in(ctx, x, n);
  zp_stage_put(ctx, x, n);
  if (staged != zcclSuccess) return staged;
  if (mismatch[0]) return ZU_ERROR(zcclInvalidUsage, "%s", mismatch);
  return zcclSuccess;
}

void zp_xfers_cancel(const zp_ctx_t* ctx, zp_xfer_t* x, int n) { zp_xfers_cancel_what(ctx, "cancel", x, n); }

zcclResult_t zp_xfers_run(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n) {
  zcclResult_t res = zp_xfers_post(ctx, x, n);
  if (res == zcclSuccess) return zp_xfers_wait(ctx, what, x, n);
  /* The ones posted before the failure still finish; the failure's own
   * message is the one to report (the wait would say what it saw: an
   * unposted receive reads as 0 bytes, a count mismatch). */
  char why[400]; /* copied: the wait's own error would overwrite it */
  snprintf(why, sizeof why, "%s", zu_error_last());
  (void)zp_xfers_wait(ctx, what, x, n);
  return ZU_ERROR(res, "%s: could not post its messages: %s", what, why);
}

/* ---- helpers for the algorithms ---------------------------------------------- */
void zp_send_at(const zp_ctx_t* ctx, zp_xfer_t* x, int peer, uint32_t sub, const void* buf, size_t bytes) {
  memset(x, 0, sizeof *x);
  x->is_send = 1;
  x->peer = peer;
  x->buf = (void*)buf;
  x->bytes = x->count = bytes;
  x->dtype = zcclUint8;
  x->coll = 1;
  x->tag = zp_tag(ctx->rank, ctx->seq, sub);
}

void zp_recv_at(const zp_ctx_t* ctx, zp_xfer_t* x, int peer, uint32_t sub, void* buf, size_t bytes) {
  memset(x, 0, sizeof *x);
  x->peer = peer;
  x->buf = buf;
  x->bytes = x->count = bytes;
  x->dtype = zcclUint8;
  x->coll = 1;
  x->tag = zp_tag(peer, ctx->seq, sub);
}

zcclResult_t zp_sendrecv(const zp_ctx_t* ctx, const char* what, int dst, const void* sbuf, size_t sbytes, int src,
                         void* rbuf, size_t rbytes, uint32_t sub) {
  zp_xfer_t x[2];
  int n = 0;
  if (dst >= 0) zp_send_at(ctx, &x[n++], dst, sub, sbuf, sbytes);
  if (src >= 0) zp_recv_at(ctx, &x[n++], src, sub, rbuf, rbytes);
  return zp_xfers_run(ctx, what, x, n);
}

/* ---- calibration -------------------------------------------------------------- */
/* Times exchanges with the ring neighbours: small ones for latency, then
 * 1 MiB and 4 MiB ones, whose difference gives the bandwidth without what
 * every message pays once (latency, the transport's rendezvous, TCP's
 * window opening), which one size alone would count as slow links; then
 * every rank takes the worst link seen by any rank (max of alpha and of
 * 1/bandwidth, by recursive doubling), so all ranks hold the same model and
 * choose the same algorithms. Large sizes count their fastest sample,
 * latency its median: with more ranks than cores one sample can include a
 * peer's time slice. Figures: docs/measurements/net.md. */
static int zp_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
/* The median of v[0 .. n-1] (sorts v). */
static double zp_median(double* v, size_t n) {
  qsort(v, n, sizeof(double), zp_cmp_double);
  return v[n / 2];
}
#define ZP_CAL_SMALL 12 /* latency samples a round */
#define ZP_CAL_LARGE 3  /* samples of each large size */
#define ZP_CAL_FAN (ZP_CAL_SMALL + 2 * ZP_CAL_LARGE) /* steps of the fan-out rounds, their readies, two direct rounds */
#define ZP_CAL_FAN_ROUNDS 4 /* the first untimed */
#define ZP_CAL_DIRECT (ZP_CAL_FAN + 2 * ZP_CAL_FAN_ROUNDS)
#define ZP_CAL_ROUNDS 3 /* rounds of small exchanges: the first above, then each after a mid-size one */
#define ZP_CAL_LATER (ZP_CAL_DIRECT + 2) /* their steps */

/* A round of ZP_CAL_SMALL 8-byte exchanges with the ring neighbours, steps
 * k0 ...: the median exchange's seconds. */
static zcclResult_t zp_cal_small_round(const zp_ctx_t* ctx, void* sb, void* rb, uint32_t k0, double* median) {
  int N = ctx->nranks, right = (ctx->rank + 1) % N, left = (ctx->rank + N - 1) % N;
  double t[ZP_CAL_SMALL];
  for (uint32_t k = 0; k < ZP_CAL_SMALL; k++) {
    double t0 = zu_now();
    ZU_CHECK(zp_sendrecv(ctx, "calibration", right, sb, 8, left, rb, 8, zp_sub(ZP_TAG_ALGO, k0 + k, 0)));
    t[k] = zu_now() - t0;
  }
  *median = zp_median(t, ZP_CAL_SMALL);
  return zcclSuccess;
}

zcclResult_t zp_calibrate(const zp_ctx_t* ctx, zp_link_t* link) {
  int N = ctx->nranks, right = (ctx->rank + 1) % N, left = (ctx->rank + N - 1) % N;
  /* 4 MiB and 1 MiB, or what a small pool holds (two of them, and room
   * for the max-allreduce below); the same on every rank as long as
   * ZCCL_BUFFER_POOL_BYTES is. */
  size_t big = 4u << 20, room = zd_buf_largest(ctx->dev) / 4 / 256 * 256;
  if (big > room) big = room > 256 ? room : 256;
  size_t mid = big / 4;
  void *sb = NULL, *rb = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zd_buf_get(ctx->dev, big, &sb), res, out);
  ZU_CHECK_GOTO(zd_buf_get(ctx->dev, big, &rb), res, out);
  if (zd_dev_kind(ctx->dev) != ZD_CUDA) memset(sb, 0, big); /* (device memory: any bytes time the same) */
  /* Latency: the median small exchange of a round (the fastest is one
   * whose message had arrived before it was posted), in three rounds: the
   * first, right after the communicator's creation, reads the ranks' start
   * (the worst rank's read 69-462 us on 4 hosts at 10 Gbit/s where later
   * rounds read 7-56; docs/measurements/net.md). Each rank's figure is the
   * median of its rounds; the model's, the median over the rounds of the
   * worst rank's (below). */
  double t_round[ZP_CAL_ROUNDS], t_mid = 1e9, t_big = 1e9, t_mbox = 0;
  if (ctx->mbox && link->one_machine) ZU_CHECK_GOTO(zp_mbox_open(ctx, ctx->mbox), res, out);
  ZU_CHECK_GOTO(zp_cal_small_round(ctx, sb, rb, 0, &t_round[0]), res, out);
  for (uint32_t k = ZP_CAL_SMALL; k < ZP_CAL_FAN; k++) {
    int is_big = (k - ZP_CAL_SMALL) % 2;
    size_t bytes = is_big ? big : mid;
    double t0 = zu_now();
    ZU_CHECK_GOTO(zp_sendrecv(ctx, "calibration", right, sb, bytes, left, rb, bytes, zp_sub(ZP_TAG_ALGO, k, 0)), res,
                  out);
    double t = zu_now() - t0, *best = is_big ? &t_big : &t_mid;
    if (t < *best) *best = t;
  }
  for (uint32_t r = 1; r < ZP_CAL_ROUNDS; r++) {
    uint32_t k0 = ZP_CAL_LATER + (r - 1) * (1 + ZP_CAL_SMALL);
    ZU_CHECK_GOTO(zp_sendrecv(ctx, "calibration", right, sb, mid, left, rb, mid, zp_sub(ZP_TAG_ALGO, k0, 0)), res, out);
    ZU_CHECK_GOTO(zp_cal_small_round(ctx, sb, rb, k0 + 1, &t_round[r]), res, out);
  }
  /* The mailbox's exchange of 8 bytes among all ranks, as the latency. */
  if (ctx->mbox && ctx->mbox->on) {
    const uint8_t* in[N];
    size_t got[N];
    double t[ZP_CAL_SMALL];
    for (int k = 0; k < ZP_CAL_SMALL; k++) {
      double t0 = zu_now();
      ZU_CHECK_GOTO(zp_mbox_exchange(ctx, "calibration", sb, 8, in, got), res, out);
      t[k] = zu_now() - t0;
    }
    t_mbox = zp_median(t, ZP_CAL_SMALL);
  }
  double rounds[ZP_CAL_ROUNDS];
  memcpy(rounds, t_round, sizeof rounds); /* t_round keeps its order: the max below is per round */
  double t_small = zp_median(rounds, ZP_CAL_ROUNDS);
  /* Seconds a byte: the slope between the two sizes, never slower than the
   * larger size alone less the latency (small pools leave sizes where the
   * difference is mostly noise). */
  double per_byte = (t_big - t_small > 1e-9 ? t_big - t_small : 1e-9) / (double)big;
  double slope = (t_big - t_mid) / (double)(big - mid);
  if (t_big > t_mid && slope < per_byte) per_byte = slope;
  /* Fan-out: rank 0 sends the large message to every other rank at once.
   * Over a network its link carries N-1 copies (time ~ (N-1) x one); over
   * shared memory the receivers copy in parallel (less). The factor prices
   * the direct broadcast. Each receiver answers with 8 bytes once it has
   * the message, and rank 0's time ends with the last answer: a send that
   * goes eagerly (ZCCL_TCP_EAGER_BYTES) is done when it is buffered, not
   * delivered, and would read as no fan-out cost at all. Every receiver
   * says it is ready (its receive posted) before rank 0 starts the clock,
   * and the first round is not timed: otherwise rank 0's time takes in how
   * far behind the others still are and the slow first rounds to a rank,
   * and the factor picks the wrong broadcast (docs/measurements/net.md). */
  double fan = N - 1;
  if (N > 2) {
    double t_fan = 1e9;
    for (uint32_t k = ZP_CAL_FAN; k < ZP_CAL_FAN + ZP_CAL_FAN_ROUNDS; k++) {
      uint32_t sub = zp_sub(ZP_TAG_ALGO, k, 0), ready = zp_sub(ZP_TAG_ALGO, k + ZP_CAL_FAN_ROUNDS, 0);
      double t0 = 0;
      if (ctx->rank == 0) {
        /* Rank p's 8-byte answers land in slot p of rb (slots repeat past
         * big / 8 ranks: answers are not read). */
#define ZP_CAL_SLOT(p) ((uint8_t*)rb + 8 * ((size_t)(p) % (big / 8)))
        zp_xfer_t x[2 * N];
        for (int p = 1; p < N; p++) zp_recv_at(ctx, &x[p - 1], p, ready, ZP_CAL_SLOT(p), 8);
        ZU_CHECK_GOTO(zp_xfers_run(ctx, "calibration", x, N - 1), res, out);
        t0 = zu_now();
        for (int p = 1; p < N; p++) {
          zp_send_at(ctx, &x[2 * (p - 1)], p, sub, sb, mid);
          zp_recv_at(ctx, &x[2 * (p - 1) + 1], p, sub, ZP_CAL_SLOT(p), 8);
        }
        ZU_CHECK_GOTO(zp_xfers_run(ctx, "calibration", x, 2 * (N - 1)), res, out);
#undef ZP_CAL_SLOT
      } else {
        zp_xfer_t x[2];
        zp_recv_at(ctx, &x[0], 0, sub, rb, mid);
        zp_send_at(ctx, &x[1], 0, ready, sb, 8);
        ZU_CHECK_GOTO(zp_xfers_run(ctx, "calibration", x, 2), res, out);
        ZU_CHECK_GOTO(zp_sendrecv(ctx, "calibration", 0, sb, 8, -1, NULL, 0, sub), res, out);
      }
      double t = zu_now() - t0;
      if (k > ZP_CAL_FAN && t < t_fan) t_fan = t;
    }
    fan = ctx->rank == 0 ? (t_fan - t_small) / (t_mid - t_small > 1e-9 ? t_mid - t_small : 1e-9) : 0;
    fan = fan < 1 ? 1 : fan > N - 1 ? N - 1 : fan;
    if (ctx->rank != 0) fan = 0; /* rank 0's figure wins the max below */
  }
  /* A direct round: every rank sends big bytes split over all its peers
   * while as much arrives from all of them, against the ring exchange of
   * the same bytes. Over a network N-1 flows meet at every receiver's link
   * and finish unevenly; over shared memory the copies run in parallel.
   * The factor prices the direct rounds' bytes, which are large where they
   * matter: pieces of 1 MiB / (N-1) timed a latency-bound round and priced
   * the round at its clamp where large ones beat the ring (docs/measurements/net.md). */
  double incast = 1;
  if (N > 2 && mid >= (256u << 10)) { /* (smaller: latency would dominate) */
    size_t per = big / (size_t)(N - 1) / 64 * 64;
    double t_all = 1e9;
    for (uint32_t k = ZP_CAL_DIRECT; k < ZP_CAL_DIRECT + 2; k++) {
      zp_xfer_t x[2 * N];
      int nx = 0;
      uint32_t sub = zp_sub(ZP_TAG_ALGO, k, 0);
      for (int s = 1; s < N; s++) {
        zp_recv_at(ctx, &x[nx++], (ctx->rank + N - s) % N, sub, (uint8_t*)rb + (size_t)(s - 1) * per, per);
        zp_send_at(ctx, &x[nx++], (ctx->rank + s) % N, sub, sb, per);
      }
      double t0 = zu_now();
      ZU_CHECK_GOTO(zp_xfers_run(ctx, "calibration", x, nx), res, out);
      double t = zu_now() - t0;
      if (t < t_all) t_all = t;
    }
    double one = (double)per * (N - 1) / (double)big * (t_big - t_small);
    incast = (t_all - t_small) / (one > 1e-9 ? one : 1e-9);
    incast = incast < 1 ? 1 : incast > N - 1 ? N - 1 : incast;
  }
  /* The worst rank's figures; its latency per round in the last slots.
   * Whether the ring crosses a network anywhere: 1 unless this rank's
   * right neighbour is on shared memory only. */
  enum { FIGS = 6 };
  double mine[FIGS + ZP_CAL_ROUNDS] = {per_byte, fan, incast, (double)zt_eager_bytes(ctx->w, right),
                                       zt_peer_shm(ctx->w, right) ? 0.0 : 1.0, t_mbox};
  memcpy(mine + FIGS, t_round, sizeof t_round);
  double all[FIGS + ZP_CAL_ROUNDS];
  ZU_CHECK_GOTO(zd_copy(ctx->dev, sb, mine, sizeof mine), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  zp_coll_args_t a = {.coll = ZP_COLL_ALLREDUCE, .sendbuff = sb, .recvbuff = rb, .count = FIGS + ZP_CAL_ROUNDS,
                      .datatype = zcclFloat64, .op = zcclMax, .rank = ctx->rank, .nranks = N};
  zp_ctx_t c2 = *ctx;
  c2.seq = ctx->seq; /* same operation: its own part of the tags */
  ZU_CHECK_GOTO(zp_rd_allreduce_sub(&c2, &a, zp_sub(ZP_TAG_NESTED_RD, 0, 0)), res, out);
  ZU_CHECK_GOTO(zd_copy(ctx->dev, all, rb, sizeof all), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  double lat = zp_median(all + FIGS, ZP_CAL_ROUNDS);
  link->alpha = lat > 1e-7 ? lat : 1e-7;
  link->bandwidth = all[0] > 1e-12 ? 1.0 / all[0] : 1e12;
  link->fanout = N > 2 ? all[1] : 1;
  link->incast = N > 2 ? all[2] : 1;
  link->eager_bytes = all[3];
  link->shm = all[4] == 0;
  link->mbox_alpha = ctx->mbox && ctx->mbox->on ? all[5] : 0;
  char mbox[48] = "";
  if (link->mbox_alpha > 0) snprintf(mbox, sizeof mbox, "; mailbox exchange %.2f us", link->mbox_alpha * 1e6);
  ZU_INFO(ZU_LOG_TUNING, "calibration: latency %.1f us, bandwidth %.4g GB/s (worst rank), fan-out to %d ranks %.2fx "
          "one, all to all %.2fx the ring; %.2f ranks per core on the busiest machine; eager up to %.0f bytes; %s%s",
          link->alpha * 1e6, link->bandwidth / 1e9, N - 1, link->fanout, link->incast, link->cpu_share,
          link->eager_bytes, link->shm ? "shared memory" : "a network", mbox);
  res = zcclSuccess;
out:
  if (sb) zd_buf_put(ctx->dev, sb);
  if (rb) zd_buf_put(ctx->dev, rb);
  return res;
}
