/* Recursive doubling allreduce for small messages: log2(N) exchanges of the
 * whole buffer. For N not a power of two, the first 2*rem ranks pair up:
 * even ones hand their data to the odd neighbour and wait for the result
 * (MPICH's scheme). Both partners of an exchange combine the same two
 * operands (lower rank's first), so every rank ends bit-identical.
 * Also Rabenseifner's allreduce, and the allgathers by recursive doubling
 * (N a power of two) and by Bruck's dissemination (any N). */
#include <stdio.h>
#include <string.h>

#include "zp_algo.h"

/* Temporaries up to a frame's data (ZP_FRAME_BYTES) live on the caller's
 * stack (host memory): the pool's bookkeeping would cost as much as the
 * exchange itself. */
typedef struct {
  int framed; /* 0: plain messages (only the room is used) */
  zp_frame_t out, in;
} zp_rd_io_t;

/* One exchange: bytes from sbuf to dst and as many from src into rbuf
 * (dst, src < 0: none). Framed, each goes through io's frames, and what
 * comes in is checked. */
static zcclResult_t zp_rd_xchg(const zp_ctx_t* ctx, zp_rd_io_t* io, const char* what, int dst, const void* sbuf,
                               int src, void* rbuf, size_t bytes, uint32_t sub) {
  if (io == NULL || !io->framed)
    return zp_sendrecv(ctx, what, dst, sbuf, dst >= 0 ? bytes : 0, src, rbuf, src >= 0 ? bytes : 0, sub);
  zp_xfer_t x[2];
  int n = 0;
  if (dst >= 0) {
    memcpy(io->out.data, sbuf, bytes);
    zp_send_at(ctx, &x[n++], dst, sub, &io->out, offsetof(zp_frame_t, data) + bytes);
  }
  zp_xfer_t* rx = NULL;
  if (src >= 0) {
    rx = &x[n++];
    zp_recv_at(ctx, rx, src, sub, &io->in, sizeof io->in);
    rx->var = 1; /* a peer whose call differs may send any length */
  }
  ZU_CHECK(zp_xfers_run(ctx, what, x, n));
  if (rx == NULL) return zcclSuccess;
  ZU_CHECK(zp_frame_check(ctx, what, src, &io->out.head, &io->in.head, rx->req.length, bytes));
  if (rbuf != io->in.data) memcpy(rbuf, io->in.data, bytes);
  return zcclSuccess;
}

/* Non-power-of-two rank counts (MPICH's scheme): of the first 2*rem ranks
 * (rem = N - p), the even ones hand their input `in` to the odd neighbour
 * and wait; the odd ones add it to theirs, into buf (in may be buf).
 * Returns the rank among the p that go on, or -1. */
static zcclResult_t zp_fold_in(const zp_ctx_t* ctx, zp_rd_io_t* io, const zp_coll_args_t* a, const uint8_t* in,
                               uint8_t* buf, void* tmp, int p, uint32_t sub, const char* what, int* newr) {
  int r = ctx->rank, rem = ctx->nranks - p;
  size_t n = a->count, bytes = n * zu_dtype_size(a->datatype);
  *newr = zp_rd_vrank(r, rem);
  if (r >= 2 * rem) return zcclSuccess;
  if (r % 2 == 0) return zp_rd_xchg(ctx, io, what, r + 1, in, -1, NULL, bytes, sub);
  ZU_CHECK(zp_rd_xchg(ctx, io, what, -1, NULL, r - 1, tmp, bytes, sub));
  ZU_CHECK(zd_reduce(ctx->dev, buf, tmp, in, n, a->datatype, zp_reduce_op(a->op)));
  return zd_sync(ctx->dev);
}

/* The result back to the ranks that handed over. */
static zcclResult_t zp_fold_out(const zp_ctx_t* ctx, zp_rd_io_t* io, uint8_t* buf, size_t bytes, int p,
                                uint32_t sub, const char* what) {
  int r = ctx->rank, rem = ctx->nranks - p;
  if (r >= 2 * rem) return zcclSuccess;
  if (r % 2 == 0) return zp_rd_xchg(ctx, io, what, -1, NULL, r + 1, buf, bytes, sub);
  return zp_rd_xchg(ctx, io, what, r - 1, buf, -1, NULL, bytes, sub);
}

static zcclResult_t zp_rd_run(const zp_ctx_t* ctx, const zp_coll_args_t* a, uint32_t sub0, const zp_sig_t* sig) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, bytes = n * es;
  uint8_t* buf = a->recvbuff;
  zcclRedOp_t op = zp_reduce_op(a->op);
  if (a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, buf, a->sendbuff, bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  /* A small call on host memory keeps its messages' room on the stack:
   * the receive frame is the temporary. */
  zp_rd_io_t local;
  int on_stack = bytes <= sizeof local.in.data && zd_dev_kind(ctx->dev) == ZD_HOST;
  /* Framed messages need both (zp_coll_run asks only then). */
  ZU_RETURN_ERR_IF(sig != NULL && !on_stack, zcclInternalError,
                   "recursive doubling: a framed call of %zu bytes, not on host memory or over %d bytes", bytes,
                   ZP_FRAME_BYTES);
  zp_rd_io_t* io = on_stack ? &local : NULL;
  if (io) {
    io->framed = sig != NULL;
    if (sig) io->out.head = zp_frame_head(sig);
  }
  void* tmp = on_stack ? local.in.data : NULL;
  zcclResult_t res;
  if (!on_stack) ZU_CHECK(zp_tmp_get(ctx, bytes, &tmp));
  int p = zp_pow2_below(N), rem = N - p, newr;
  ZU_CHECK_GOTO(zp_fold_in(ctx, io, a, buf, buf, tmp, p, zp_sub_step(sub0, 0), "recursive doubling", &newr), res,
                out);
  if (newr >= 0) {
    uint32_t step = 1;
    for (int mask = 1; mask < p; mask <<= 1, step++) {
      int peer = zp_rd_rank(newr ^ mask, rem);
      ZU_CHECK_GOTO(zp_rd_xchg(ctx, io, "recursive doubling", peer, buf, peer, tmp, bytes, zp_sub_step(sub0, step)),
                    res, out);
      if (peer < r)
        ZU_CHECK_GOTO(zd_reduce(ctx->dev, buf, tmp, buf, n, a->datatype, op), res, out);
      else
        ZU_CHECK_GOTO(zd_reduce(ctx->dev, buf, buf, tmp, n, a->datatype, op), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
  }
  ZU_CHECK_GOTO(zp_fold_out(ctx, io, buf, bytes, p, zp_sub_step(sub0, ZP_TAG_STEP_LAST), "recursive doubling"),
                res, out);
  if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, buf, n, a->datatype, N), res, out);
  res = zd_sync(ctx->dev);
out:
  if (!on_stack) zp_tmp_put(ctx, tmp);
  return res;
}

static zcclResult_t zp_rd_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_rd_run(ctx, a, zp_sub(ZP_TAG_ALGO, 0, 0), ctx->sig_framed);
}

zcclResult_t zp_rd_allreduce_sub(const zp_ctx_t* ctx, const zp_coll_args_t* a, uint32_t sub0) {
  return zp_rd_run(ctx, a, sub0, NULL);
}

/* Rabenseifner's allreduce for medium and large messages on few links:
 * recursive halving reduce-scatter, then recursive doubling allgather,
 * over the largest power of two p <= N (the other ranks fold in and out as
 * above). Each rank sends 2(p-1)/p of the buffer in 2 log2(p) steps. Each
 * block's result is computed by its one owner, so ranks end bit-identical. */
static zcclResult_t zp_rabenseifner_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, bytes = n * es;
  uint8_t* buf = a->recvbuff;
  /* This rank's values: the input until its first reduction writes buf
   * (out of place, no copy of the input first; see zp_ring_allreduce). */
  const uint8_t* cur = a->sendbuff;
  zcclRedOp_t op = zp_reduce_op(a->op);
  int p = zp_pow2_below(N), rem = N - p, newr;
  void* tmp = NULL;
  zcclResult_t res;
  ZU_CHECK(zp_tmp_get(ctx, (r < 2 * rem ? bytes : (bytes + 1) / 2 + es * (size_t)p), &tmp));
  ZU_CHECK_GOTO(zp_fold_in(ctx, NULL, a, cur, buf, tmp, p, zp_sub(ZP_TAG_ALGO, 0, 0), "rabenseifner", &newr), res, out);
  if (r < 2 * rem) cur = buf; /* the folding rank's sum (or, sitting out, the result to come) */
  if (newr >= 0) {
    int blo = 0, bhi = p; /* blocks this rank still reduces: [blo, bhi) of p */
    uint32_t step = 1;
    for (int mask = p / 2; mask > 0; mask >>= 1, step++) {
      int peer = zp_rd_rank(newr ^ mask, rem), mid = (blo + bhi) / 2;
      int keep_lo = (newr & mask) == 0;
      int klo = keep_lo ? blo : mid, khi = keep_lo ? mid : bhi, slo = keep_lo ? mid : blo, shi = keep_lo ? bhi : mid;
      size_t ko = zp_off(n, p, klo), kn = zp_off(n, p, khi) - ko, so = zp_off(n, p, slo), sn = zp_off(n, p, shi) - so;
      ZU_CHECK_GOTO(zp_sendrecv(ctx, "rabenseifner", peer, cur + so * es, sn * es, peer, tmp, kn * es,
                                zp_sub(ZP_TAG_ALGO, step, 0)),
                    res, out);
      ZU_CHECK_GOTO(zd_reduce(ctx->dev, buf + ko * es, cur + ko * es, tmp, kn, a->datatype, op), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      cur = buf;
      blo = klo, bhi = khi;
    }
    if (cur != buf) /* one rank: no step */
      ZU_CHECK_GOTO(zd_copy(ctx->dev, buf, cur, bytes), res, out);
    /* Now this rank owns block newr; AVG divides it once, here. */
    if (a->op == zcclAvg) {
      size_t o = zp_off(n, p, newr), m = zp_off(n, p, newr + 1) - o;
      ZU_CHECK_GOTO(zd_divide(ctx->dev, buf + o * es, m, a->datatype, N), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
    for (int mask = 1; mask < p; mask <<= 1, step++) {
      int peer = zp_rd_rank(newr ^ mask, rem);
      /* Owned: the aligned run of `mask` blocks holding newr; the peer's is next to it. */
      int mlo = newr & ~(mask - 1), plo = (newr ^ mask) & ~(mask - 1);
      size_t mo = zp_off(n, p, mlo), mn = zp_off(n, p, mlo + mask) - mo;
      size_t po = zp_off(n, p, plo), pn = zp_off(n, p, plo + mask) - po;
      ZU_CHECK_GOTO(zp_sendrecv(ctx, "rabenseifner", peer, buf + mo * es, mn * es, peer, buf + po * es, pn * es,
                                zp_sub(ZP_TAG_ALGO, step, 0)),
                    res, out);
    }
  }
  ZU_CHECK_GOTO(zp_fold_out(ctx, NULL, buf, bytes, p, zp_sub(ZP_TAG_ALGO, ZP_TAG_STEP_LAST, 0), "rabenseifner"), res, out);
  res = zd_sync(ctx->dev);
out:
  zp_tmp_put(ctx, tmp);
  return res;
}

/* Bruck's allgather: ceil(log2 N) steps for any N; step k sends the 2^k
 * blocks gathered so far (fewer at the last step) to rank r - 2^k and gets
 * as many from r + 2^k. Blocks are kept rotated (this rank's first) in a
 * temporary, then put in place. For small messages. */
static zcclResult_t zp_bruck_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bb = a->count * es;
  void* tmp = NULL;
  zcclResult_t res;
  ZU_CHECK(zp_tmp_get(ctx, bb * (size_t)N, &tmp));
  uint8_t* t = tmp;
  ZU_CHECK_GOTO(zd_copy(ctx->dev, t, a->sendbuff, bb), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  int have = 1;
  for (uint32_t k = 0; have < N; k++) {
    int d = 1 << k, m = have < N - have ? have : N - have;
    ZU_CHECK_GOTO(zp_sendrecv(ctx, "bruck allgather", (r - d + N) % N, t, (size_t)m * bb, (r + d) % N,
                              t + (size_t)have * bb, (size_t)m * bb, zp_sub(ZP_TAG_ALGO, k, 0)),
                  res, out);
    have += m;
  }
  /* t[i] is rank (r + i) % N's block. */
  for (int i = 0; i < N; i++)
    ZU_CHECK_GOTO(zd_copy(ctx->dev, (uint8_t*)a->recvbuff + (size_t)((r + i) % N) * bb, t + (size_t)i * bb, bb), res,
                  out);
  res = zd_sync(ctx->dev);
out:
  zp_tmp_put(ctx, tmp);
  return res;
}

/* Recursive-doubling allgather for N a power of two: step k swaps the 2^k
 * blocks gathered so far with rank r ^ 2^k, in place in recvbuff (both
 * runs are contiguous there). Bruck's bytes and steps, without its
 * temporary and its final rotation (a copy of the whole output). */
static zcclResult_t zp_rd_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bb = a->count * es;
  uint8_t *rb = a->recvbuff, *own = rb + (size_t)r * bb;
  if ((const uint8_t*)a->sendbuff != own) ZU_CHECK(zd_copy(ctx->dev, own, a->sendbuff, bb));
  ZU_CHECK(zd_sync(ctx->dev));
  for (uint32_t k = 0; (1 << k) < N; k++) {
    int d = 1 << k, peer = r ^ d;
    size_t mine = (size_t)(r & ~(d - 1)) * bb, theirs = (size_t)(peer & ~(d - 1)) * bb;
    ZU_CHECK(zp_sendrecv(ctx, "rd allgather", peer, rb + mine, (size_t)d * bb, peer, rb + theirs, (size_t)d * bb,
                         zp_sub(ZP_TAG_ALGO, k, 0)));
  }
  return zcclSuccess;
}

/* Recursive doubling over P = 2^floor(log2 N) ranks; the others fold in
 * first and out last (a whole buffer each way, and its reduction). */
static double zp_rd_fold_cost(const zp_ctx_t* ctx, double n) {
  int lg = zp_log2_floor(ctx->nranks);
  if ((1 << lg) == ctx->nranks) return 0;
  return 2 * (zp_link_alpha(ctx) + n / zp_link_bandwidth(ctx)) + n / zp_reduce_bps(ctx);
}

/* One temporary of the whole buffer, not sliced. */
static int zp_rd_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  (void)ctx;
  return a->count * zu_dtype_size(a->datatype) <= room;
}

static double zp_rd_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a);
  return zp_log2_floor(ctx->nranks) * (zp_link_alpha(ctx) + n / zp_link_bandwidth(ctx) + n / zp_reduce_bps(ctx)) +
         zp_rd_fold_cost(ctx, n);
}

/* An element per rank, and one temporary, not sliced: half the buffer, or
 * the whole of it on the folding ranks. */
static int zp_rabenseifner_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  size_t N = (size_t)ctx->nranks, es = zu_dtype_size(a->datatype), bytes = a->count * es;
  if (a->count < N) return 0;
  return ((N & (N - 1)) == 0 ? (bytes + 1) / 2 + es * N : bytes) <= room;
}

static double zp_rabenseifner_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a);
  int lg = zp_log2_floor(ctx->nranks);
  double P = (double)(1 << lg);
  return 2 * lg * zp_link_alpha(ctx) + 2 * (P - 1) / P * n / zp_link_bandwidth(ctx) +
         (P - 1) / P * n / zp_reduce_bps(ctx) + zp_rd_fold_cost(ctx, n);
}

/* N a power of two, and the last step's message (half the output) at most
 * this: above it the ring's pipelined pieces, which travel only between
 * neighbours (one link between two hosts, where ranks share hosts), are
 * worth its extra steps; recursive doubling's last step crosses between
 * hosts from every rank at once, which the model does not see. */
#define ZP_RD_ALLGATHER_MAX_MSG ((size_t)1 << 20)

static int zp_rd_allgather_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  (void)room;
  size_t N = (size_t)ctx->nranks;
  return (N & (N - 1)) == 0 && N / 2 * a->count * zu_dtype_size(a->datatype) <= ZP_RD_ALLGATHER_MAX_MSG;
}

/* log2 N steps; nothing copied but this rank's own block (which the ring
 * and direct allgathers copy too, unpriced). */
static double zp_rd_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  return zp_log2_floor(ctx->nranks) * zp_link_alpha(ctx) + (N - 1) * n / zp_link_bandwidth(ctx);
}

/* All N blocks in one temporary. */
static int zp_bruck_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  return (size_t)ctx->nranks * a->count * zu_dtype_size(a->datatype) <= room;
}

/* ceil(log2 N) steps, and the final copy into place. */
static double zp_bruck_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  int lg = zp_log2_floor(ctx->nranks), pow2 = (1 << lg) == ctx->nranks;
  return (lg + (pow2 ? 0 : 1)) * zp_link_alpha(ctx) + (N - 1) * n / zp_link_bandwidth(ctx) +
         N * n / zp_reduce_bps(ctx);
}

const zp_algo_t zp_algo_rd_allreduce = {"rd", "recursive doubling (whole buffer each step; MPICH's fold for any N)",
                                        ZP_COLL_ALLREDUCE, 0, 0, zp_rd_usable, zp_rd_cost, zp_rd_allreduce};
const zp_algo_t zp_algo_rabenseifner_allreduce = {"rabenseifner", "recursive halving, then doubling",
                                                  ZP_COLL_ALLREDUCE, 0, 0, zp_rabenseifner_usable,
                                                  zp_rabenseifner_cost, zp_rabenseifner_allreduce};
const zp_algo_t zp_algo_bruck_allgather = {"bruck", "Bruck's dissemination, any N", ZP_COLL_ALLGATHER, 0, 0,
                                           zp_bruck_usable, zp_bruck_cost, zp_bruck_allgather};
const zp_algo_t zp_algo_rd_allgather = {"rd", "recursive doubling, in place (N a power of two, up to 1 MiB a message)",
                                        ZP_COLL_ALLGATHER, 0, 0, zp_rd_allgather_usable, zp_rd_allgather_cost,
                                        zp_rd_allgather};
