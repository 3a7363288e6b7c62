/* Ring algorithms: reduce-scatter, allgather, and allreduce as the two in a
 * row. Messages go to the right neighbour and come from the left. Large
 * buffers are processed in slices (the same columns of every block) so the
 * temporaries fit the buffer pool. Every block's final value is computed by
 * one rank and then copied around, so all ranks end bit-identical. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zp_algo.h"

/* Pieces a ring step is cut into, so the reduction of one piece overlaps
 * the transfer of the next and a partial leaves as soon as it is ready. */
#define ZP_RING_CHUNK_BYTES (256u << 10)
#define ZP_RING_MAX_CHUNKS 64

/* Elements per piece for blocks of up to maxb elements of es bytes:
 * ZP_RING_CHUNK_BYTES' worth, or more so a block is at most
 * ZP_RING_MAX_CHUNKS pieces, but no more than goes eagerly (zp_eager_cap);
 * *K the most pieces a block has (>= 1). Blocks longer than
 * zp_ring_window elements are cut into windows first, so K stays within
 * ZP_RING_MAX_CHUNKS. */
static size_t zp_ring_piece_elems(const zp_ctx_t* ctx, size_t maxb, size_t es, int* K) {
  size_t C = ZP_RING_CHUNK_BYTES / es ? ZP_RING_CHUNK_BYTES / es : 1;
  if ((maxb + C - 1) / C > ZP_RING_MAX_CHUNKS) C = (maxb + ZP_RING_MAX_CHUNKS - 1) / ZP_RING_MAX_CHUNKS;
  size_t cap = zp_eager_cap(ctx, SIZE_MAX) / es;
  if (C > cap && cap > 0) C = cap;
  *K = maxb ? (int)((maxb + C - 1) / C) : 1;
  return C;
}

/* The most elements of a block one pass of the ring takes: ZP_RING_MAX_CHUNKS
 * pieces of the eager cap (no limit without one). */
static size_t zp_ring_window(const zp_ctx_t* ctx, size_t es) {
  size_t cap = zp_eager_cap(ctx, SIZE_MAX) / es;
  return cap > 0 && cap < SIZE_MAX / es / ZP_RING_MAX_CHUNKS ? cap * ZP_RING_MAX_CHUNKS : SIZE_MAX;
}

int zp_ring_block_pieces(const zp_ctx_t* ctx, size_t block_elems, size_t es) {
  int K;
  size_t w = zp_ring_window(ctx, es);
  (void)zp_ring_piece_elems(ctx, block_elems < w ? block_elems : w, es, &K);
  return K;
}

/* Pieces of a block of n elements: an empty block is one empty message. */
static int zp_ring_npieces(size_t n, size_t C) { return n ? (int)((n + C - 1) / C) : 1; }

/* Reduce-scatter of one slice: elements [lo, hi) of each of the N blocks
 * (block b starts at boff[b]) of `in`, result for this rank's block into
 * out. acc holds two block slices (the partial being sent and the one being
 * made), rtmp one. Pipelined in chunks: chunk c of step s+1 is sent as soon
 * as chunk c of step s is reduced; messages of one step share a tag and
 * match in order (UCX keeps a sender's order per tag). */
static zcclResult_t zp_ring_rs_slice(const zp_ctx_t* ctx, const zp_coll_args_t* a, const uint8_t* in,
                                     const size_t* boff, const size_t* blen, size_t lo, size_t hi, uint8_t* out,
                                     uint8_t* acc, uint8_t* rtmp, uint32_t slice) {
  int N = ctx->nranks, r = ctx->rank, right = (r + 1) % N, left = (r + N - 1) % N;
  size_t es = zu_dtype_size(a->datatype), span = hi - lo;
  zcclRedOp_t op = zp_reduce_op(a->op);
  int K;
  size_t C = zp_ring_piece_elems(ctx, span, es, &K);
  /* sends[s%2][c]: chunk c of step s; recvs[c]: this step's. On the stack:
   * nothing is allocated on the data path. */
  zp_xfer_t x[3 * ZP_RING_MAX_CHUNKS];
  memset(x, 0, sizeof(zp_xfer_t) * 3 * (size_t)K);
  zp_xfer_t *sends[2] = {x, x + K}, *recvs = x + 2 * K;
  zcclResult_t res = zcclSuccess;
  uint8_t* accb[2] = {acc, acc + span * es};
#define ZP_LEN(b) ((hi < blen[b] ? hi : blen[b]) > lo ? (hi < blen[b] ? hi : blen[b]) - lo : 0)
  for (int s = 0; s < N - 1 && res == zcclSuccess; s++) {
    int sb = zp_mod(r - s - 1, N), rb = zp_mod(r - s - 2, N);
    size_t sn = ZP_LEN(sb), rn = ZP_LEN(rb);
    uint32_t tag = zp_sub(ZP_TAG_ALGO, (uint32_t)s, slice);
    int kr = zp_ring_npieces(rn, C), ks = zp_ring_npieces(sn, C);
    for (int c = 0; c < kr; c++) {
      size_t o, m = zp_piece(rn, C, c, &o);
      zp_recv_at(ctx, &recvs[c], left, tag, rtmp + o * es, m * es);
      ZU_CHECK_GOTO(zp_xfers_post(ctx, &recvs[c], 1), res, fail);
    }
    if (s == 0) { /* this rank's own input is ready at once */
      for (int c = 0; c < ks; c++) {
        size_t o, m = zp_piece(sn, C, c, &o);
        zp_send_at(ctx, &sends[0][c], right, tag, in + (boff[sb] + lo + o) * es, m * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &sends[0][c], 1), res, fail);
      }
    }
    int last = s == N - 2;
    for (int c = 0; c < kr; c++) {
      size_t o, m = zp_piece(rn, C, c, &o);
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "ring reduce-scatter", &recvs[c], 1), res, fail);
      /* acc[s%2] was last read by step s-1's sends, complete since the end
       * of step s-1. */
      uint8_t* dst = last ? out + o * es : accb[s % 2] + o * es;
      ZU_CHECK_GOTO(zd_reduce(ctx->dev, dst, in + (boff[rb] + lo + o) * es, rtmp + o * es, m, a->datatype, op), res,
                    fail);
      if (!last) {
        /* The partial leaves now: it must be complete (sim, GPU). */
        ZU_CHECK_GOTO(zd_sync(ctx->dev), res, fail);
        zp_send_at(ctx, &sends[(s + 1) % 2][c], right, zp_sub(ZP_TAG_ALGO, (uint32_t)(s + 1), slice), dst, m * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &sends[(s + 1) % 2][c], 1), res, fail);
      }
    }
    /* Step s's sends are done before their slots are reused at step s+2. */
    ZU_CHECK_GOTO(zp_xfers_wait(ctx, "ring reduce-scatter", sends[s % 2], ks), res, fail);
    memset(sends[s % 2], 0, sizeof(zp_xfer_t) * (size_t)K);
  }
#undef ZP_LEN
  return zd_sync(ctx->dev);
fail:
  zp_xfers_cancel(ctx, x, 3 * K); /* one pass: entries never posted are skipped */
  return res;
}

/* The reduce-scatter's temporaries for blocks of up to `block` elements:
 * slices of the block small enough that acc (two slices) and rtmp (one)
 * fit the pool. */
static zcclResult_t zp_ring_temps(const zp_ctx_t* ctx, size_t block, size_t es, size_t* slice, void** acc,
                                  void** rtmp) {
  *slice = zp_slice_elems(ctx, block * (size_t)ctx->nranks, es, ctx->nranks, 3);
  size_t w = zp_ring_window(ctx, es);
  if (*slice > w) *slice = w;
  ZU_CHECK(zp_tmp_get(ctx, 2 * *slice * es, acc));
  return zp_tmp_get(ctx, *slice * es, rtmp);
}

static zcclResult_t zp_ring_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  if (N == 1) {
    if (a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, n * es));
    if (a->op == zcclAvg) ZU_CHECK(zd_divide(ctx->dev, a->recvbuff, n, a->datatype, 1));
    return zd_sync(ctx->dev);
  }
  size_t boff[N], blen[N];
  zp_whole_blocks(n, N, boff, blen);
  size_t slice;
  void *acc = NULL, *rtmp = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_ring_temps(ctx, n, es, &slice, &acc, &rtmp), res, out);
  /* In place (recvbuff = sendbuff + r*n): the last step writes this rank's
   * own block after its input was last read in that same step. */
  uint32_t k = 0;
  for (size_t lo = 0; lo < n; lo += slice, k++) {
    size_t hi = lo + slice < n ? lo + slice : n;
    ZU_CHECK_GOTO(zp_ring_rs_slice(ctx, a, a->sendbuff, boff, blen, lo, hi, zp_at(a->recvbuff, lo, es), acc, rtmp,
                                   k),
                  res, out);
  }
  if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, a->recvbuff, n, a->datatype, N), res, out);
  res = zd_sync(ctx->dev);
out:
  zp_tmp_put(ctx, acc);
  zp_tmp_put(ctx, rtmp);
  (void)r;
  return res;
}

/* Columns [lo, hi) of every block (block b: boff[b], blen[b] elements;
 * shorter blocks give fewer or none) as blocks of their own. */
static void zp_ring_columns(int N, const size_t* boff, const size_t* blen, size_t lo, size_t hi, size_t* off,
                            size_t* len) {
  for (int b = 0; b < N; b++) {
    size_t l = blen[b] < hi ? blen[b] : hi;
    off[b] = boff[b] + (lo < l ? lo : l);
    len[b] = l > lo ? l - lo : 0;
  }
}

/* Allgather around the ring, pipelined in chunks as the reduce-scatter:
 * chunk c received at step s is sent on at step s+1 as soon as it is in
 * (it is the block that step sends), so a rank never waits for a whole
 * block before forwarding, and the links do not idle at step boundaries. */
static zcclResult_t zp_ring_allgather_window(const zp_ctx_t* ctx, uint8_t* buf, size_t es, const size_t* boff,
                                             const size_t* blen, int me, uint32_t tagbase) {
  int N = ctx->nranks, r = ctx->rank, right = (r + 1) % N, left = (r + N - 1) % N;
  size_t maxb = 0;
  for (int b = 0; b < N; b++) maxb = blen[b] > maxb ? blen[b] : maxb;
  int K;
  size_t C = zp_ring_piece_elems(ctx, maxb, es, &K);
  /* sends[s%2][c] as in zp_ring_rs_slice; recvs[s%2][c]: step s+1's
   * receives are posted when step s starts, so its pieces, which the left
   * neighbour sends as soon as it has them, find a posted receive (over
   * TCP they come eagerly, and an unexpected one costs a copy). */
  zp_xfer_t x[4 * ZP_RING_MAX_CHUNKS];
  memset(x, 0, sizeof(zp_xfer_t) * 4 * (size_t)K);
  zp_xfer_t *sends[2] = {x, x + K}, *recvs[2] = {x + 2 * K, x + 3 * K};
  zcclResult_t res = zcclSuccess;
  for (int s = 0; s < N - 1; s++) {
    int sb = zp_mod(me - s, N), rb = zp_mod(me - s - 1, N);
    size_t sn = blen[sb], rn = blen[rb];
    /* An empty block is one empty message. */
    int kr = zp_ring_npieces(rn, C), ks = zp_ring_npieces(sn, C);
    for (int t = s == 0 ? 0 : s + 1; t <= s + 1 && t < N - 1; t++) {
      int tb = zp_mod(me - t - 1, N), kt = zp_ring_npieces(blen[tb], C);
      for (int c = 0; c < kt; c++) {
        size_t o, m = zp_piece(blen[tb], C, c, &o);
        zp_recv_at(ctx, &recvs[t % 2][c], left, zp_sub_step(tagbase, (uint32_t)t), buf + (boff[tb] + o) * es,
                   m * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &recvs[t % 2][c], 1), res, fail);
      }
    }
    if (s == 0) { /* this rank's own block is there at once */
      for (int c = 0; c < ks; c++) {
        size_t o, m = zp_piece(sn, C, c, &o);
        zp_send_at(ctx, &sends[0][c], right, zp_sub_step(tagbase, 0), buf + (boff[sb] + o) * es, m * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &sends[0][c], 1), res, fail);
      }
    }
    for (int c = 0; c < kr; c++) {
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "ring allgather", &recvs[s % 2][c], 1), res, fail);
      if (s < N - 2) { /* on to the right at once: step s+1 sends block rb */
        size_t o, m = zp_piece(rn, C, c, &o);
        zp_send_at(ctx, &sends[(s + 1) % 2][c], right, zp_sub_step(tagbase, (uint32_t)(s + 1)),
                   buf + (boff[rb] + o) * es, m * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &sends[(s + 1) % 2][c], 1), res, fail);
      }
    }
    ZU_CHECK_GOTO(zp_xfers_wait(ctx, "ring allgather", sends[s % 2], ks), res, fail);
    memset(sends[s % 2], 0, sizeof(zp_xfer_t) * (size_t)K);
  }
  return zcclSuccess;
fail:
  zp_xfers_cancel(ctx, x, 4 * K);
  return res;
}

/* Window by window (the same columns of every block): a window's messages
 * reuse its predecessor's tags, which is safe since a sender's messages of
 * one tag match in the order they were sent, and every receive of a window
 * is posted before any of the next. */
zcclResult_t zp_ring_allgather_blocks(const zp_ctx_t* ctx, uint8_t* buf, size_t es, const size_t* boff,
                                      const size_t* blen, int me, uint32_t tagbase) {
  int N = ctx->nranks;
  if (N == 1) return zcclSuccess;
  size_t maxb = 0, w = zp_ring_window(ctx, es);
  for (int b = 0; b < N; b++) maxb = blen[b] > maxb ? blen[b] : maxb;
  if (maxb <= w) return zp_ring_allgather_window(ctx, buf, es, boff, blen, me, tagbase);
  size_t woff[N], wlen[N];
  for (size_t lo = 0; lo < maxb; lo += w) {
    zp_ring_columns(N, boff, blen, lo, maxb - lo > w ? lo + w : maxb, woff, wlen);
    ZU_CHECK(zp_ring_allgather_window(ctx, buf, es, woff, wlen, me, tagbase));
  }
  return zcclSuccess;
}

static zcclResult_t zp_ring_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  uint8_t* own = zp_at(a->recvbuff, (size_t)r * n, es);
  if ((const uint8_t*)a->sendbuff != own) ZU_CHECK(zd_copy(ctx->dev, own, a->sendbuff, n * es));
  ZU_CHECK(zd_sync(ctx->dev));
  size_t boff[N], blen[N];
  zp_whole_blocks(n, N, boff, blen);
  return zp_ring_allgather_blocks(ctx, a->recvbuff, es, boff, blen, r, zp_sub(ZP_TAG_ALGO, 0, 0));
}

static zcclResult_t zp_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  uint8_t* buf = a->recvbuff;
  if (N == 1) return zp_allreduce_alone(ctx, a);
  size_t boff[N], blen[N];
  zp_split_blocks(n, N, boff, blen);
  size_t maxb = blen[N - 1] > blen[0] ? blen[N - 1] : blen[0];
  size_t slice;
  void *acc = NULL, *rtmp = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_ring_temps(ctx, maxb, es, &slice, &acc, &rtmp), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; lo < maxb; lo += slice, k++) {
    size_t hi = lo + slice < maxb ? lo + slice : maxb;
    /* Reduce-scatter from sendbuff: this rank's block slice of buf gets the
     * sum. Out of place, the input is not copied to buf first: that copy
     * was a pass over memory the ranks share (docs/measurements/collectives.md). */
    int r = ctx->rank;
    size_t ol = blen[r] < hi ? blen[r] : hi;
    uint8_t* mine = buf + (boff[r] + (lo < ol ? lo : ol)) * es;
    ZU_CHECK_GOTO(zp_ring_rs_slice(ctx, a, a->sendbuff, boff, blen, lo, hi, mine, acc, rtmp, k), res, out);
    if (a->op == zcclAvg && ol > lo) ZU_CHECK_GOTO(zd_divide(ctx->dev, mine, ol - lo, a->datatype, N), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    /* Allgather the slice's columns. */
    size_t soff[N], slen[N];
    zp_ring_columns(N, boff, blen, lo, hi, soff, slen);
    ZU_CHECK_GOTO(zp_ring_allgather_blocks(ctx, buf, es, soff, slen, r, zp_sub(ZP_TAG_NESTED_RING, 0, k)), res, out);
  }
  res = zcclSuccess;
out:
  zp_tmp_put(ctx, acc);
  zp_tmp_put(ctx, rtmp);
  return res;
}

zcclResult_t zp_allreduce_alone(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes));
  if (a->op == zcclAvg) ZU_CHECK(zd_divide(ctx->dev, a->recvbuff, a->count, a->datatype, 1));
  return zd_sync(ctx->dev);
}

/* Ring, direct and Rabenseifner allreduce need an element per rank. */
int zp_allreduce_blocks_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  (void)room;
  return a->count >= (size_t)ctx->nranks;
}

/* Pipelined: a piece is reduced while the next is on the wire, so only the
 * longer of the two counts, and one piece of the other. */
static double zp_ring_allreduce_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  double wire = 2 * (N - 1) / N * n / zp_link_bandwidth(ctx), red = (N - 1) / N * n / zp_reduce_bps(ctx);
  double K = zp_ring_block_pieces(ctx, a->count / (size_t)ctx->nranks, zu_dtype_size(a->datatype));
  return 2 * (N - 1) * zp_link_alpha(ctx) + (wire > red ? wire + red / K : red + wire / K);
}

/* N-1 steps of a block of count (n bytes), each reduced. */
static double zp_ring_reduce_scatter_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a);
  return (ctx->nranks - 1) * (zp_link_alpha(ctx) + n / zp_link_bandwidth(ctx) + n / zp_reduce_bps(ctx));
}

/* N-1 steps of one rank's block (n bytes). */
static double zp_ring_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return (ctx->nranks - 1) * (zp_link_alpha(ctx) + zp_call_bytes(a) / zp_link_bandwidth(ctx));
}

const zp_algo_t zp_algo_ring_allreduce = {"ring", "ring reduce-scatter then allgather, pipelined in pieces",
                                          ZP_COLL_ALLREDUCE, 0, 0, zp_allreduce_blocks_usable,
                                          zp_ring_allreduce_cost, zp_ring_allreduce};
const zp_algo_t zp_algo_ring_reduce_scatter = {"ring", "ring, pipelined in pieces", ZP_COLL_REDUCESCATTER, 0, 0,
                                               NULL, zp_ring_reduce_scatter_cost, zp_ring_reduce_scatter};
const zp_algo_t zp_algo_ring_allgather = {"ring", "ring, pipelined in pieces", ZP_COLL_ALLGATHER, 0, 0, NULL,
                                          zp_ring_allgather_cost, zp_ring_allgather};
