/* Direct algorithms: every rank talks to every other at once, one round
 * (broadcast, allgather) or two (allreduce: a one-round reduce-scatter and
 * a one-round allgather). Few latencies; the bytes of a round meet at each
 * receiver at once (the link's incast), which the cost model prices. */
#include <string.h>

#include "zp_algo.h"

/* Direct broadcast: the root sends to every rank at once. On shared memory
 * each receiver copies from the root's buffer itself, in parallel. */
static zcclResult_t zp_direct_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (r != a->root)
    return zp_sendrecv(ctx, "direct broadcast", -1, NULL, 0, a->root, a->recvbuff, bytes, ZP_SUB_ALGO);
  zp_xfer_t x[N];
  int nx = 0;
  for (int s = 1; s < N; s++) zp_send_at(ctx, &x[nx++], (r + s) % N, ZP_SUB_ALGO, a->sendbuff, bytes);
  zcclResult_t res = zp_xfers_post(ctx, x, nx);
  if (res == zcclSuccess && a->sendbuff != a->recvbuff) res = zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  zcclResult_t w = zp_xfers_wait(ctx, "direct broadcast", x, nx);
  return res == zcclSuccess ? w : res;
}

/* Direct allgather: every block to every rank at once, one round. On
 * shared memory the receivers copy in parallel and nothing waits on a
 * chain of neighbours (which, on oversubscribed cores, means waiting for
 * each to be scheduled in turn). */
static zcclResult_t zp_direct_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, bytes = n * es;
  uint8_t* own = zp_at(a->recvbuff, (size_t)r * n, es);
  if ((const uint8_t*)a->sendbuff != own) ZU_CHECK(zd_copy(ctx->dev, own, a->sendbuff, bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  zp_xfer_t x[2 * N];
  int nx = 0;
  for (int s = 1; s < N; s++) {
    int to = (r + s) % N, from = (r + N - s) % N;
    zp_recv_at(ctx, &x[nx++], from, ZP_SUB_ALGO, zp_at(a->recvbuff, (size_t)from * n, es), bytes);
    zp_send_at(ctx, &x[nx++], to, ZP_SUB_ALGO, own, bytes);
  }
  return zp_xfers_run(ctx, "direct allgather", x, nx);
}

/* Direct allreduce: a one-round reduce-scatter (every rank sends block b to
 * rank b, which reduces the N contributions: its own first, then the others
 * in rank order) and a one-round allgather of the results, in slices that
 * fit the pool. The same bytes per rank as the ring, 2 rounds instead of
 * 2 (N-1). Each block is computed once, so ranks end bit-identical. */
static zcclResult_t zp_direct_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  zcclRedOp_t op = zp_reduce_op(a->op);
  uint8_t* buf = a->recvbuff;
  const uint8_t* in = a->sendbuff; /* read in place: no copy to buf first */
  if (N == 1) return zp_allreduce_alone(ctx, a);
  size_t boff[N], blen[N];
  zp_split_blocks(n, N, boff, blen);
  size_t maxb = blen[N - 1] > blen[0] ? blen[N - 1] : blen[0];
  size_t slice = zp_slice_elems(ctx, maxb * (size_t)N, es, N, N - 1);
  void* tmp = NULL;
  zcclResult_t res;
  ZU_CHECK(zp_tmp_get(ctx, (size_t)(N - 1) * slice * es, &tmp));
  zp_xfer_t x[2 * N];
  uint32_t k = 0;
  for (size_t lo = 0; lo < maxb; lo += slice, k++) {
    size_t hi = lo + slice < maxb ? lo + slice : maxb, soff[N], slen[N];
    for (int b = 0; b < N; b++) {
      size_t l = blen[b] < hi ? blen[b] : hi;
      soff[b] = boff[b] + (lo < l ? lo : l);
      slen[b] = l > lo ? l - lo : 0;
    }
    uint8_t* mine = buf + soff[r] * es;
    int nx = 0;
    for (int s = 1; s < N; s++) {
      int to = (r + s) % N, from = (r + N - s) % N;
      zp_recv_at(ctx, &x[nx++], from, zp_sub(ZP_TAG_ALGO, 0, k), zp_at(tmp, (size_t)(s - 1) * slice, es), slen[r] * es);
      zp_send_at(ctx, &x[nx++], to, zp_sub(ZP_TAG_ALGO, 0, k), in + soff[to] * es, slen[to] * es);
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, "direct allreduce", x, nx), res, out);
    const uint8_t* acc = in + soff[r] * es; /* own first, then the others in rank order */
    for (int q = 0; q < N; q++)
      if (q != r) {
        ZU_CHECK_GOTO(zd_reduce(ctx->dev, mine, acc, zp_at(tmp, (size_t)(zp_mod(r - q, N) - 1) * slice, es), slen[r],
                                a->datatype, op),
                      res, out);
        acc = mine;
      }
    if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, mine, slen[r], a->datatype, N), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    nx = 0;
    for (int s = 1; s < N; s++) {
      int to = (r + s) % N, from = (r + N - s) % N;
      zp_recv_at(ctx, &x[nx++], from, zp_sub(ZP_TAG_ALGO_PHASE2, 0, k), buf + soff[from] * es, slen[from] * es);
      zp_send_at(ctx, &x[nx++], to, zp_sub(ZP_TAG_ALGO_PHASE2, 0, k), mine, slen[r] * es);
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, "direct allreduce", x, nx), res, out);
  }
  res = zcclSuccess;
out:
  zp_tmp_put(ctx, tmp);
  return res;
}

/* One-shot allreduce for small messages: every rank sends its whole buffer
 * to every other at once, then reduces the N buffers itself in rank order
 * (so every rank ends bit-identical). One round instead of recursive
 * doubling's log2 N (more for N not a power of two), for N-1 times the
 * bytes on each link: where a round is a wait for the peers to be
 * scheduled (more ranks than cores) it is the smaller latency
 * (docs/measurements/latency.md). A framed call (ctx->sig_framed,
 * zp_frame.c) sends its head and data as one message and checks every
 * peer's. The received buffers live on the caller's stack when they fit. */
#define ZP_ONESHOT_STACK_BYTES 16384

static size_t zp_oneshot_stride(size_t bytes, int framed) {
  return (framed ? sizeof(zp_frame_head_t) : 0) + (bytes + 15) / 16 * 16; /* aligned for the reduction */
}

/* Whether the call's messages go by the mailbox: decided on the framed
 * size whether the call frames or not, so that its price (below) and its
 * run agree. */
static int zp_oneshot_mbox(const zp_ctx_t* ctx, size_t bytes) {
  return zp_mbox_fits(ctx, sizeof(zp_frame_head_t) + bytes);
}

static zcclResult_t zp_oneshot_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, bytes = n * es;
  if (N == 1) return zp_allreduce_alone(ctx, a);
  const char* what = "one-shot allreduce";
  const zp_sig_t* sig = ctx->sig_framed;
  size_t head = sig ? sizeof(zp_frame_head_t) : 0, stride = zp_oneshot_stride(bytes, sig != NULL);
  _Alignas(16) uint8_t stack[ZP_ONESHOT_STACK_BYTES];
  int on_stack = (size_t)N * stride <= sizeof stack && zd_dev_kind(ctx->dev) == ZD_HOST;
  ZU_RETURN_ERR_IF(sig != NULL && zd_dev_kind(ctx->dev) != ZD_HOST, zcclInternalError,
                   "%s: a framed call not on host memory", what);
  void* tmp = stack;
  if (!on_stack) ZU_CHECK(zp_tmp_get(ctx, (size_t)N * stride, &tmp));
  uint8_t* slots = tmp; /* rank q's buffer at q * stride (its frame when framed) */
  zp_xfer_t x[2 * N];
  const uint8_t* in[N]; /* each peer's message */
  size_t got[N];
  zcclResult_t res;
  /* What this rank sends, and its own operand: its input, or its frame
   * (head, then a copy of the input); in place, a copy (the reduction
   * writes the input's buffer while it still reads the operands). */
  const uint8_t* own = a->sendbuff;
  const void* msg = a->sendbuff;
  uint8_t* slot = slots + (size_t)r * stride;
  zp_frame_head_t mine;
  if (sig) {
    mine = zp_frame_head(sig);
    memcpy(slot, &mine, sizeof mine);
    memcpy(slot + head, a->sendbuff, bytes);
    own = slot + head, msg = slot;
  } else if (a->sendbuff == a->recvbuff) {
    own = slot;
    ZU_CHECK_GOTO(zd_copy(ctx->dev, slot, a->sendbuff, bytes), res, out);
  }
  /* Each peer's message (its frame when framed): in the mailbox when every
   * rank is on this machine, else received into its slot. */
  if (zp_oneshot_mbox(ctx, bytes)) {
    ZU_CHECK_GOTO(zp_mbox_exchange(ctx, what, msg, head + bytes, in, got), res, out);
  } else {
    int nx = 0;
    for (int s = 1; s < N; s++) {
      int to = (r + s) % N, from = (r + N - s) % N;
      zp_recv_at(ctx, &x[nx], from, ZP_SUB_ALGO, slots + (size_t)from * stride, sig ? stride : bytes);
      x[nx++].var = sig != NULL; /* a peer whose call differs may send any length */
      zp_send_at(ctx, &x[nx++], to, ZP_SUB_ALGO, msg, head + bytes);
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nx), res, out);
    for (int s = 1; s < N; s++) {
      int from = (r + N - s) % N;
      in[from] = slots + (size_t)from * stride;
      got[from] = x[2 * (s - 1)].req.length;
    }
  }
  for (int s = 1; s < N; s++) {
    int from = (r + N - s) % N;
    if (sig)
      ZU_CHECK_GOTO(zp_frame_check(ctx, what, from, &mine, (const zp_frame_head_t*)in[from], got[from], bytes), res,
                    out);
    else if (got[from] != bytes)
      ZU_CHECK_GOTO(ZU_ERROR(zcclInvalidUsage,
                             "%s: rank %d expected %zu bytes from rank %d, which sent %zu bytes; the call's count or "
                             "datatype differs across ranks",
                             what, r, bytes, from, got[from]),
                    res, out);
  }
#define ZP_OPERAND(q) ((q) == r ? own : in[q] + head)
  zcclRedOp_t op = zp_reduce_op(a->op);
  ZU_CHECK_GOTO(zd_reduce(ctx->dev, a->recvbuff, ZP_OPERAND(0), ZP_OPERAND(1), n, a->datatype, op), res, out);
  for (int q = 2; q < N; q++)
    ZU_CHECK_GOTO(zd_reduce(ctx->dev, a->recvbuff, a->recvbuff, ZP_OPERAND(q), n, a->datatype, op), res, out);
#undef ZP_OPERAND
  if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, a->recvbuff, n, a->datatype, N), res, out);
  res = zd_sync(ctx->dev);
out:
  if (!on_stack) zp_tmp_put(ctx, tmp);
  return res;
}

/* Rounds in which every rank talks to every other at once: one latency
 * each, plus half a latency per message of a round (posting and matching
 * N-1 of them). Past 8 ranks the incast of a round grows with N; the
 * model then prices each message as a full latency. */
static double zp_direct_rounds(const zp_ctx_t* ctx, int rounds) {
  double al_s = zp_link_alpha(ctx), N = ctx->nranks;
  return rounds * (al_s + (N - 1) * al_s * (N <= 8 ? 0.5 : 1.0));
}

/* What a direct round's bytes cost more than a ring's: the measured
 * all-to-all factor, over a network (zp_link_t.shm), where N-1 flows meet
 * at each receiver's link. Over shared memory it is left out: the factor
 * is noisy there and direct rounds measured as fast as the ring's or
 * faster (docs/collectives.md). */
static double zp_direct_bytes_factor(const zp_ctx_t* ctx) {
  const zp_link_t* l = ctx->link;
  if (!l || ctx->nranks < 3 || zp_link_shm(ctx)) return 1.0;
  return l->incast > 1 ? l->incast : 1.0;
}

static double zp_direct_allreduce_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  return zp_direct_rounds(ctx, 2) + zp_direct_bytes_factor(ctx) * 2 * (N - 1) / N * n / zp_link_bandwidth(ctx) +
         (N - 1) / N * n / zp_reduce_bps(ctx);
}

static double zp_direct_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_direct_rounds(ctx, 1) +
         zp_direct_bytes_factor(ctx) * (ctx->nranks - 1) * zp_call_bytes(a) / zp_link_bandwidth(ctx);
}

/* The root's N-1 copies cost the measured fan-out over a network; over
 * shared memory the receivers copy in parallel, and the fan-out is noise
 * that handed large broadcasts to a chain twice as slow
 * (docs/measurements/collectives.md, "Shared memory or a network"). */
static double zp_direct_broadcast_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zp_link_t* l = ctx->link;
  double fan = zp_link_shm(ctx) ? 1.0 : l && l->fanout >= 1 ? l->fanout : ctx->nranks - 1;
  return zp_direct_rounds(ctx, 1) + fan * zp_call_bytes(a) / zp_link_bandwidth(ctx);
}

const zp_algo_t zp_algo_direct_allreduce = {"direct", "one-round reduce-scatter and allgather, every rank at once",
                                            ZP_COLL_ALLREDUCE, 0, 0, zp_allreduce_blocks_usable,
                                            zp_direct_allreduce_cost, zp_direct_allreduce};
const zp_algo_t zp_algo_direct_allgather = {"direct", "every block to every rank at once", ZP_COLL_ALLGATHER, 0, 0,
                                            NULL, zp_direct_allgather_cost, zp_direct_allgather};
const zp_algo_t zp_algo_direct_broadcast = {"direct", "the root sends to every rank at once", ZP_COLL_BROADCAST, 0, 0,
                                            NULL, zp_direct_broadcast_cost, zp_direct_broadcast};

/* Its N buffers on the stack (host memory) or in one temporary. */
static int zp_oneshot_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  size_t all = (size_t)ctx->nranks * zp_oneshot_stride(a->count * zu_dtype_size(a->datatype), 1);
  return all <= room || (zd_dev_kind(ctx->dev) == ZD_HOST && all <= ZP_ONESHOT_STACK_BYTES);
}

/* One round and N-1 copies of the buffer sent and reduced. Over a network
 * (or not measured) the round is priced as a direct round (a latency, and
 * half of one per message: recursive doubling wins at 4 ranks, as
 * measured on netlab). Over shared memory, where the messages do not queue
 * on one link, a round is one latency however many messages it has: with
 * more ranks than cores it is mostly the wait for the peers' time slices,
 * which one round pays once and recursive doubling once a step
 * (docs/measurements/latency.md). */
static double zp_oneshot_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  double round = N > 2 && zp_link_shm(ctx) ? zp_link_alpha(ctx) : zp_direct_rounds(ctx, 1);
  if (ctx->link && ctx->link->mbox_alpha > 0 && zp_oneshot_mbox(ctx, (size_t)n)) round = ctx->link->mbox_alpha;
  return round + zp_direct_bytes_factor(ctx) * (N - 1) * n / zp_link_bandwidth(ctx) + (N - 1) * n / zp_reduce_bps(ctx);
}

const zp_algo_t zp_algo_oneshot_allreduce = {"oneshot",
                                             "every rank's whole buffer to every rank at once, each reduces all N",
                                             ZP_COLL_ALLREDUCE, 0, 0, zp_oneshot_usable, zp_oneshot_cost,
                                             zp_oneshot_allreduce};
