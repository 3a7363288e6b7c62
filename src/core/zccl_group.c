/* Groups (zcclGroupStart/End, nestable). Point-to-point calls made inside a
 * group are collected per communicator and issued together at the
 * outermost zcclGroupEnd: each communicator gets one operation whose sends
 * and receives are all in flight at once, so any pairing of sends and
 * receives (a ring exchange, all-to-all) completes without deadlock, as in
 * NCCL. A call that fails inside a group makes zcclGroupEnd fail and issue
 * nothing. Group state is per thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl_core.h"

typedef struct {
  zcclComm_t comm;
  zp_xfer_t* xfers;
  int n, cap;
  zp_coll_args_t* colls;
  int ncolls, capcolls;
  /* How its calls run: all blocking, or all stream-ordered on one device
   * (the distinct streams, each gets a ticket). */
  int ordered;
  zd_dev_t* dev;
  zcclStream_t* streams;
  int nstreams;
} zccl_batch_t;

static _Thread_local struct {
  int depth;
  zcclResult_t error;
  char msg[400];
  zccl_batch_t* batches;
  int n, cap;
} zccl_group;

static void zccl_group_clear(void) {
  for (int i = 0; i < zccl_group.n; i++)
    free(zccl_group.batches[i].xfers), free(zccl_group.batches[i].colls), free(zccl_group.batches[i].streams);
  free(zccl_group.batches);
  zccl_group.batches = NULL;
  zccl_group.n = zccl_group.cap = 0;
  zccl_group.error = zcclSuccess;
  zccl_group.msg[0] = '\0';
}

zcclResult_t zcclGroupStart(void) {
  zccl_group.depth++;
  ZU_TRACE(ZU_LOG_COLL, "zcclGroupStart depth %d", zccl_group.depth);
  return zcclSuccess;
}

int zccl_group_active(void) { return zccl_group.depth > 0; }

void zccl_group_error(zcclResult_t res) {
  if (zccl_group.depth == 0 || zccl_group.error != zcclSuccess) return;
  zccl_group.error = res;
  snprintf(zccl_group.msg, sizeof zccl_group.msg, "%s", zu_error_last());
}

int zccl_group_add(zcclComm_t comm, const zp_xfer_t* x, const zp_coll_args_t* c, const zccl_call_t* how,
                   zcclResult_t* res) {
  *res = zcclSuccess;
  if (zccl_group.depth == 0) return 0;
  zccl_batch_t* b = NULL;
  for (int i = 0; i < zccl_group.n && !b; i++)
    if (zccl_group.batches[i].comm == comm) b = &zccl_group.batches[i];
  if (b == NULL) {
    if (zccl_group.n == zccl_group.cap) {
      int cap = zccl_group.cap ? 2 * zccl_group.cap : 4;
      zccl_batch_t* nb = realloc(zccl_group.batches, sizeof *nb * (size_t)cap);
      if (nb == NULL) goto oom;
      zccl_group.batches = nb;
      zccl_group.cap = cap;
    }
    b = &zccl_group.batches[zccl_group.n++];
    memset(b, 0, sizeof *b);
    b->comm = comm;
    b->ordered = how->ordered;
    b->dev = how->dev;
  }
  if (how->ordered != b->ordered || how->dev != b->dev) {
    *res = ZU_ERROR(zcclInvalidUsage, "%s in a group: the group mixes calls on host buffers (blocking) and on "
                    "device buffers (stream-ordered) for one communicator", x ? "point-to-point" : "collective");
    zccl_group_error(*res);
    return 1;
  }
  if (how->ordered) {
    int known = 0;
    for (int i = 0; i < b->nstreams; i++) known |= b->streams[i] == how->stream;
    if (!known) {
      zcclStream_t* ns = realloc(b->streams, sizeof *ns * (size_t)(b->nstreams + 1));
      if (ns == NULL) goto oom;
      b->streams = ns;
      b->streams[b->nstreams++] = how->stream;
    }
  }
  if (c) {
    if (b->ncolls == b->capcolls) {
      int cap = b->capcolls ? 2 * b->capcolls : 4;
      zp_coll_args_t* nc = realloc(b->colls, sizeof *nc * (size_t)cap);
      if (nc == NULL) goto oom;
      b->colls = nc;
      b->capcolls = cap;
    }
    b->colls[b->ncolls++] = *c;
    return 1;
  }
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 8;
    zp_xfer_t* nx = realloc(b->xfers, sizeof *nx * (size_t)cap);
    if (nx == NULL) goto oom;
    b->xfers = nx;
    b->cap = cap;
  }
  b->xfers[b->n++] = *x;
  return 1;
oom:
  *res = ZU_ERROR(zcclSystemError, "zcclGroupStart: out of memory for the group's calls");
  zccl_group_error(*res);
  return 1;
}

void zccl_group_forget(zcclComm_t comm) {
  for (int i = 0; i < zccl_group.n; i++)
    if (zccl_group.batches[i].comm == comm) zccl_group.batches[i].n = zccl_group.batches[i].ncolls = 0;
}

/* Issues every communicator's batch, then waits for all of them. */
static zcclResult_t zccl_group_issue(void) {
  zcclResult_t res = zcclSuccess;
  zccl_op_t** ops = calloc((size_t)zccl_group.n + 1, sizeof *ops);
  zcclComm_t* held = calloc((size_t)zccl_group.n + 1, sizeof *held); /* against another thread's destroy */
  if (ops == NULL || held == NULL) {
    free(ops);
    free(held);
    return ZU_ERROR(zcclSystemError, "zcclGroupEnd: out of memory");
  }
  int busy = 0; /* communicators with work */
  for (int i = 0; i < zccl_group.n && res == zcclSuccess; i++) {
    zccl_batch_t* b = &zccl_group.batches[i];
    if (b->n == 0 && b->ncolls == 0) continue;
    res = zccl_comm_enter("zcclGroupEnd", b->comm, &held[i]);
    busy++;
  }
  for (int i = 0; i < zccl_group.n && res == zcclSuccess; i++) {
    zccl_batch_t* b = &zccl_group.batches[i];
    if (b->n == 0 && b->ncolls == 0) continue;
    char why[400];
    if (zccl_comm_error(b->comm, why, sizeof why) != zcclSuccess) {
      res = ZU_ERROR(zccl_comm_error(b->comm, NULL, 0), "zcclGroupEnd: comm has a pending error: %s", why);
      break;
    }
    ops[i] = zccl_op_new("zcclGroupEnd", b->n, b->ncolls);
    if (ops[i] == NULL) {
      res = ZU_ERROR(zcclSystemError, "zcclGroupEnd: out of memory");
      break;
    }
    for (int k = 0; k < b->n; k++) {
      ops[i]->xfers[k] = b->xfers[k];
      zccl_p2p_tag(b->comm, &ops[i]->xfers[k]);
    }
    for (int k = 0; k < b->ncolls; k++) {
      ops[i]->colls[k] = b->colls[k];
      ops[i]->colls[k].seq = b->comm->coll_seq++;
    }
    ops[i]->dev = b->dev;
    if (b->ordered) { /* async: the progress thread owns it from here; blocking: waited for below */
      int wait;
      res = zccl_op_order(b->comm, ops[i], b->streams, b->nstreams, &wait);
      if (res != zcclSuccess) zccl_op_free(ops[i]);
      if (res != zcclSuccess || !wait) ops[i] = NULL;
      continue;
    }
    /* One communicator's batch, blocking: on this thread where it may
     * (zccl_op_inline), as a single blocking call, rather than handed to
     * the progress thread and back. Several communicators' batches go to
     * their threads, which progress them together. */
    if (busy == 1 && zccl_op_inline(b->comm, ops[i], &res)) {
      zccl_op_free(ops[i]);
      ops[i] = NULL;
      continue;
    }
    zccl_op_submit(b->comm, ops[i]);
  }
  /* Every submitted operation is waited for, even after an error. */
  for (int i = 0; i < zccl_group.n; i++) {
    if (ops[i] == NULL) continue;
    zcclResult_t r = zccl_op_wait(zccl_group.batches[i].comm, ops[i]);
    if (res == zcclSuccess) res = r;
    zccl_op_free(ops[i]);
  }
  for (int i = 0; i < zccl_group.n; i++) zccl_comm_release(&held[i]);
  free(ops);
  free(held);
  return res;
}

/* The model's time of one communicator's batch: its messages in flight
 * together (one latency, this rank's sent bytes over the link), then its
 * collectives one after another. */
static double zccl_batch_estimate(const zccl_batch_t* b) {
  zcclComm_t comm = b->comm;
  zp_link_t link = comm->link; /* a copy: the thread may refine it meanwhile */
  zp_ctx_t ctx = {.dev = b->dev ? b->dev : comm->dev, .link = &link, .rules = &comm->algo_rules, .rank = comm->rank, .nranks = comm->nranks};
  double t = 0, sent = 0;
  for (int k = 0; k < b->n; k++) sent += b->xfers[k].is_send ? (double)b->xfers[k].bytes : 0;
  if (b->n > 0) t += link.alpha + sent / link.bandwidth;
  for (int k = 0; k < b->ncolls; k++) t += zp_coll_estimate(&ctx, &b->colls[k]);
  return t;
}

zcclResult_t zcclGroupSimulateEnd(double* seconds) {
  ZU_RETURN_ERR_IF(seconds == NULL, zcclInvalidArgument, "zcclGroupSimulateEnd: seconds is NULL");
  ZU_RETURN_ERR_IF(zccl_group.depth == 0, zcclInvalidUsage,
                   "zcclGroupSimulateEnd: not inside a group (no matching zcclGroupStart)");
  zccl_group.depth--;
  if (zccl_group.depth > 0) return zcclSuccess; /* an inner group: the outermost end estimates */
  zcclResult_t res = zcclSuccess;
  if (zccl_group.error != zcclSuccess) {
    res = ZU_ERROR(zccl_group.error, "zcclGroupSimulateEnd: a call in the group failed: %s", zccl_group.msg);
  } else {
    /* Communicators run their batches at once: the slowest one's time. */
    double t = 0;
    for (int i = 0; i < zccl_group.n && res == zcclSuccess; i++) {
      if (zccl_group.batches[i].n == 0 && zccl_group.batches[i].ncolls == 0) continue; /* forgotten */
      zcclComm_t held = NULL;
      res = zccl_comm_enter("zcclGroupSimulateEnd", zccl_group.batches[i].comm, &held);
      double bt = res == zcclSuccess ? zccl_batch_estimate(&zccl_group.batches[i]) : 0;
      zccl_comm_release(&held);
      t = bt > t ? bt : t;
    }
    *seconds = t;
    if (res == zcclSuccess)
      ZU_INFO(ZU_LOG_COLL, "zcclGroupSimulateEnd: %d communicator(s), estimated %.1f us, nothing issued",
              zccl_group.n, t * 1e6);
  }
  zccl_group_clear();
  return res;
}

zcclResult_t zcclGroupEnd(void) {
  ZU_RETURN_ERR_IF(zccl_group.depth == 0, zcclInvalidUsage,
                   "zcclGroupEnd: not inside a group (no matching zcclGroupStart)");
  zccl_group.depth--;
  ZU_TRACE(ZU_LOG_COLL, "zcclGroupEnd depth %d", zccl_group.depth);
  if (zccl_group.depth > 0) return zcclSuccess;
  zcclResult_t res;
  if (zccl_group.error != zcclSuccess) {
    res = ZU_ERROR(zccl_group.error, "zcclGroupEnd: a call in the group failed, nothing was issued: %s",
                   zccl_group.msg);
  } else {
    res = zccl_group_issue();
  }
  zccl_group_clear();
  return res;
}
