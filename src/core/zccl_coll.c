/* Collective and point-to-point entry points: NCCL's argument rules, then
 * the call goes down to proto. */
#include <stddef.h>
#include <stdint.h>

#include "zccl_core.h"
#include "zp_coll.h"
#include "zu_dtype.h"

/* Whether this rank reads sendbuff / writes recvbuff for the call. */
static int zccl_uses_send(const zp_coll_args_t* a) {
  switch (a->coll) {
    case ZP_COLL_BROADCAST:
    case ZP_COLL_SCATTER: return a->rank == a->root;
    case ZP_COLL_RECV: return 0;
    default: return 1;
  }
}

static int zccl_uses_recv(const zp_coll_args_t* a) {
  switch (a->coll) {
    case ZP_COLL_REDUCE:
    case ZP_COLL_GATHER: return a->rank == a->root;
    case ZP_COLL_SEND: return 0;
    default: return 1;
  }
}

/* Elements in the larger of the two buffers: count scaled by nranks for
 * the collectives whose other buffer holds one block per rank. */
static int zccl_total_elems(const zp_coll_args_t* a, size_t* total) {
  int scaled = a->coll == ZP_COLL_ALLGATHER || a->coll == ZP_COLL_REDUCESCATTER ||
               a->coll == ZP_COLL_ALLTOALL || a->coll == ZP_COLL_GATHER || a->coll == ZP_COLL_SCATTER;
  size_t n = (size_t)a->nranks;
  if (scaled && a->count > SIZE_MAX / n) return -1;
  *total = scaled ? a->count * n : a->count;
  return 0;
}

/* Sends and receives between a pair of ranks match in the order they were
 * called (NCCL's rule), whatever their sizes: a per-pair sequence number in
 * the tag, which also names the sender so a receive matches only its peer. */
void zccl_p2p_tag(zcclComm_t comm, zp_xfer_t* x) {
  if (x->is_send)
    x->tag = zt_tag(ZT_TAG_P2P, comm->rank, comm->send_seq[x->peer]++, 0);
  else
    x->tag = zt_tag(ZT_TAG_P2P, x->peer, comm->recv_seq[x->peer]++, 0);
}

/* Runs op: blocking, or queued behind the caller's stream. */
static zcclResult_t zccl_op_issue(zcclComm_t comm, zccl_op_t* op, const zccl_call_t* how) {
  op->dev = how->dev;
  if (how->ordered) {
    int wait;
    zcclResult_t res = zccl_op_order(comm, op, &how->stream, 1, &wait);
    if (res == zcclSuccess && wait) res = zccl_op_wait(comm, op);
    if (res != zcclSuccess || wait) zccl_op_free(op);
    return res;
  }
  zcclResult_t res = zccl_op_run(comm, op);
  zccl_op_free(op);
  return res;
}

/* A blocking call of one message (x) or one collective (c) runs inline
 * when it may (zccl_op_inline), its operation on the stack: 1 and its
 * result in *res; else 0, and the caller queues it. */
static int zccl_op_inline_one(zcclComm_t comm, const zccl_call_t* how, const char* what, const zp_xfer_t* x,
                              const zp_coll_args_t* c, zcclResult_t* res) {
  if (how->ordered) return 0;
  struct {
    zccl_op_t op;
    union {
      zp_xfer_t x;
      zp_coll_args_t c;
    } one;
  } mem;
  _Static_assert(offsetof(__typeof__(mem), one) == sizeof(zccl_op_t), "the message or collective after the op");
  zccl_op_t* op = zccl_op_init(&mem, what, x != NULL, c != NULL);
  op->dev = how->dev;
  if (x) op->xfers[0] = *x;
  if (c) op->colls[0] = *c;
  return zccl_op_inline(comm, op, res);
}

/* Point-to-point: one message, issued now or at the group's end. */
static zcclResult_t zccl_p2p_post(const zp_coll_args_t* a, zcclComm_t comm, const zccl_call_t* how) {
  zp_xfer_t x = {.is_send = a->coll == ZP_COLL_SEND,
                   .peer = a->root,
                   .buf = a->coll == ZP_COLL_SEND ? (void*)a->sendbuff : a->recvbuff,
                   .bytes = a->count * zu_dtype_size(a->datatype),
                   .count = a->count,
                   .dtype = a->datatype};
  zcclResult_t res;
  if (zccl_group_add(comm, &x, NULL, how, &res)) return res;
  zccl_p2p_tag(comm, &x);
  if (zccl_op_inline_one(comm, how, zp_coll_name(a->coll), &x, NULL, &res)) return res;
  zccl_op_t* op = zccl_op_new(zp_coll_name(a->coll), 1, 0);
  ZU_RETURN_ERR_IF(op == NULL, zcclSystemError, "%s: out of memory", zp_coll_name(a->coll));
  op->xfers[0] = x;
  return zccl_op_issue(comm, op, how);
}

static zcclResult_t zccl_coll_check(zp_coll_args_t* a, zcclComm_t comm) {
  const char* fn = zp_coll_name(a->coll); /* no formatting on the call path */
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(comm->finalized, zcclInvalidUsage, "%s: comm is finalized", fn);
  ZU_CHECK(zccl_comm_check_usable(comm, fn));
  a->rank = comm->rank;
  a->nranks = comm->nranks;
  a->compression = comm->compression;

  size_t esize = zu_dtype_size(a->datatype);
  ZU_RETURN_ERR_IF(esize == 0, zcclInvalidArgument, "%s: invalid datatype %d", fn, (int)a->datatype);
  if (zp_coll_reduces(a->coll)) ZU_CHECK(zccl_redop_resolve(comm, fn, a));
  if (zp_coll_rooted(a->coll))
    ZU_RETURN_ERR_IF(a->root < 0 || a->root >= a->nranks, zcclInvalidArgument,
                     "%s: %s %d is outside [0, nranks=%d)", fn,
                     a->coll == ZP_COLL_SEND || a->coll == ZP_COLL_RECV ? "peer" : "root", a->root,
                     a->nranks);
  size_t total;
  ZU_RETURN_ERR_IF(zccl_total_elems(a, &total) != 0 || total > (size_t)PTRDIFF_MAX / esize,
                   zcclInvalidArgument, "%s: count %zu x %d ranks of %s overflows the address space",
                   fn, a->count, a->nranks, zu_dtype_name(a->datatype));
  if (a->count > 0) {
    ZU_RETURN_ERR_IF(zccl_uses_send(a) && a->sendbuff == NULL, zcclInvalidArgument,
                     "%s: sendbuff is NULL with count %zu", fn, a->count);
    ZU_RETURN_ERR_IF(zccl_uses_recv(a) && a->recvbuff == NULL, zcclInvalidArgument,
                     "%s: recvbuff is NULL with count %zu", fn, a->count);
    ZU_RETURN_ERR_IF(a->coll == ZP_COLL_ALLTOALL && a->sendbuff == a->recvbuff, zcclInvalidArgument,
                     "%s: in-place AlltoAll is not supported (sendbuff == recvbuff)", fn);
  }
  ZU_TRACE(ZU_LOG_COLL, "%s count %zu %s %s root %d comm %p", fn, a->count, zu_dtype_name(a->datatype),
           zp_coll_reduces(a->coll) ? zu_op_name(a->op) : "-", a->root, (void*)comm);
  zccl_call_t how;
  ZU_CHECK(zccl_call_how(comm, fn, a->count > 0 && zccl_uses_send(a) ? a->sendbuff : NULL,
                         a->count > 0 && zccl_uses_recv(a) ? a->recvbuff : NULL, a->stream, &how));
  /* Point-to-point calls pair up even with zero elements; a collective of
   * zero elements has nothing to move on any rank. */
  if (a->coll == ZP_COLL_SEND || a->coll == ZP_COLL_RECV) return zccl_p2p_post(a, comm, &how);
  if (a->count == 0) return zcclSuccess;
  /* The collective runs on the progress thread, in call order. */
  zcclResult_t res;
  if (zccl_group_add(comm, NULL, a, &how, &res)) return res;
  a->seq = comm->coll_seq++;
  if (zccl_op_inline_one(comm, &how, fn, NULL, a, &res)) return res;
  zccl_op_t* op = zccl_op_new(fn, 0, 1);
  ZU_RETURN_ERR_IF(op == NULL, zcclSystemError, "%s: out of memory", fn);
  op->colls[0] = *a;
  return zccl_op_issue(comm, op, &how);
}

static zcclResult_t zccl_coll_enqueue(zp_coll_args_t* a, zcclComm_t comm) {
  zcclResult_t res = zccl_coll_check(a, comm);
  if (res != zcclSuccess) zccl_group_error(res); /* inside a group, zcclGroupEnd fails too */
  return res;
}

zcclResult_t zcclAllReduce(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                           zcclRedOp_t op, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_ALLREDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .op = op, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclBroadcast(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                           int root, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_BROADCAST, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .root = root, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclReduce(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                        zcclRedOp_t op, int root, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_REDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .op = op, .root = root, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_ALLGATHER, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = sendcount, .datatype = datatype, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                               zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_REDUCESCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = recvcount, .datatype = datatype, .op = op, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                          zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_ALLTOALL, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclGather(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                        int root, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_GATHER, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .root = root, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclScatter(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                         int root, zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_SCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff,
                      .count = count, .datatype = datatype, .root = root, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclSend(const void* sendbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_SEND, .sendbuff = sendbuff, .count = count,
                      .datatype = datatype, .root = peer, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}

zcclResult_t zcclRecv(void* recvbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  zp_coll_args_t a = {.coll = ZP_COLL_RECV, .recvbuff = recvbuff, .count = count,
                      .datatype = datatype, .root = peer, .stream = stream};
  return zccl_coll_enqueue(&a, comm);
}
