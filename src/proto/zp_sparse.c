/* Sparse reduce after Hofmann & Rünger: a pipelined chain whose data stays
 * run-length encoded (codec=rle, lossless) through the reduction. Each rank
 * encodes its piece, merges it with the encoded partial from the rank after
 * it (zd_reduce_encoded: runs of zeros meet without being expanded) and passes
 * the encoded result on; only the root decodes. A piece's stream is never
 * larger than its values plus the 24-byte header (RLE's bound), so sparse
 * data only gains and dense data loses nothing but the headers.
 *
 * Order: relative ranks v = (rank - root) mod N; the chain runs from
 * v = N-1 to the root, and v computes op(x_v, partial of v+1 .. N-1), so
 * the root holds x_0 op (x_1 op (... op (x_{N-2} op x_{N-1}))) computed in
 * the dtype's arithmetic, bit for bit what an uncompressed reduction in
 * that order gives (but -0.0 comes out +0.0; MAX/MIN give NaN if either
 * value is NaN). AVG sums, and the root divides.
 * AllReduce: that reduce to rank 0, then rank 0 encodes the result again and
 * sends it down the chain 0 -> 1 -> ... -> N-1, pipelined, every rank
 * decoding it: bit-identical everywhere. */
#include <string.h>

#include "zp_stream.h"

/* Elements per piece: the chain's piece (the link model, the same on every
 * rank), no more than `nbuf` streams of it fit the pool. */
static size_t zp_sparse_piece(const zp_ctx_t* ctx, const zc_codec_info_t* rc, const zc_params_t* cp, size_t n,
                              int nbuf, size_t* cap) {
  size_t es = zu_dtype_size(cp->dtype), p = zp_chain_piece(ctx, n * es) / es;
  p = zp_stream_slice(ctx, rc, cp, p < n ? p : n, nbuf);
  *cap = rc->ops->bound(cp, p);
  return p;
}

/* The pipelines keep each message slot zeroed while nothing is in it. */
static int zp_sparse_busy(const zp_xfer_t* x) { return x->bytes || x->tag; }


/* Waits for slot x's message, if it holds one, and empties it. */
static zcclResult_t zp_sparse_settle(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x) {
  if (!zp_sparse_busy(x)) return zcclSuccess;
  zcclResult_t res = zp_xfers_wait(ctx, what, x, 1);
  memset(x, 0, sizeof *x);
  return res;
}

/* The chain reduce to root. Buffers: the own piece encoded, two receive
 * and two send streams (piece k+1 arrives and piece k-1 leaves while piece
 * k is merged). */
static zcclResult_t zp_sparse_chain(const zp_ctx_t* ctx, const zp_coll_args_t* a, int root) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - root, N);
  size_t es = zu_dtype_size(a->datatype), n = a->count, cap;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "sparse reduce";
  int from = v < N - 1 ? (ctx->rank + 1) % N : -1, to = v > 0 ? (ctx->rank + N - 1) % N : -1;
  const zc_codec_info_t* rc = zc_codec_info(a->compression.codec); /* RLE */
  zc_params_t cp = {.dtype = a->datatype};
  size_t P = zp_sparse_piece(ctx, rc, &cp, n, 5, &cap), npieces = (n + P - 1) / P;
  uint8_t *own = NULL, *rs[2] = {NULL, NULL}, *os[2] = {NULL, NULL};
  size_t own_sz = 0, rsz[2] = {0, 0}, osz[2] = {0, 0};
  zp_xfer_t x[4]; /* receives 0, 1; sends 2, 3 */
  memset(x, 0, sizeof x);
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, (void**)&own), res, out);
  for (int i = 0; i < 2; i++) {
    ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, (void**)&rs[i]), res, out);
    ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, (void**)&os[i]), res, out);
  }
  if (from >= 0 && npieces > 0) {
    zp_recv_at(ctx, &x[0], from, zp_sub(ZP_TAG_ALGO, 0, 0), rs[0], cap);
    x[0].var = 1;
    ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[0], 1), res, fail);
  }
  for (size_t k = 0; k < npieces; k++) {
    size_t lo = k * P, m = n - lo < P ? n - lo : P;
    int b = (int)(k % 2);
    const uint8_t* mine = zp_at(a->sendbuff, lo, es);
    /* The send of piece k-2 read os[b]: it is done before os[b] is rewritten. */
    ZU_CHECK_GOTO(zp_sparse_settle(ctx, what, &x[2 + b]), res, fail);
    if (from < 0) {
      ZU_CHECK_GOTO(zd_encode(ctx->dev, rc, &cp, mine, m, os[b], cap, &osz[b]), res, fail);
    } else {
      ZU_CHECK_GOTO(zd_encode(ctx->dev, rc, &cp, mine, m, own, cap, &own_sz), res, fail);
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, what, &x[b], 1), res, fail);
      rsz[b] = x[b].req.length;
      memset(&x[b], 0, sizeof x[b]);
      if (k + 1 < npieces) { /* rs[b^1] was last merged at piece k-1, synced since */
        zp_recv_at(ctx, &x[b ^ 1], from, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)(k + 1)), rs[b ^ 1], cap);
        x[b ^ 1].var = 1;
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[b ^ 1], 1), res, fail);
      }
      ZU_CHECK_GOTO(zd_reduce_encoded(ctx->dev, rc, op, own, &own_sz, rs[b], &rsz[b], os[b], cap, &osz[b]), res, fail);
    }
    if (to >= 0) {
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, fail); /* the stream and its size, before it leaves */
      zp_send_at(ctx, &x[2 + b], to, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), os[b], osz[b]);
      ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[2 + b], 1), res, fail);
      zp_count(ctx, m * es, osz[b]);
    } else {
      uint8_t* dst = zp_at(a->recvbuff, lo, es);
      ZU_CHECK_GOTO(zd_decode(ctx->dev, rc, os[b], &osz[b], dst, m), res, fail);
      if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, m, a->datatype, N), res, fail);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, fail);
    }
  }
  for (int i = 2; i < 4; i++) ZU_CHECK_GOTO(zp_sparse_settle(ctx, what, &x[i]), res, fail);
  res = zcclSuccess;
  goto out;
fail:
  zp_xfers_cancel(ctx, x, 4);
out:
  (void)zd_sync(ctx->dev); /* nothing queued may outlive the buffers */
  for (int i = 1; i >= 0; i--) {
    zp_tmp_put(ctx, os[i]);
    zp_tmp_put(ctx, rs[i]);
  }
  zp_tmp_put(ctx, own);
  return res;
}

static zcclResult_t zp_sparse_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_sparse_chain(ctx, a, a->root); }

/* The reduce to rank 0, then its result, encoded again, down the chain
 * 0 -> 1 -> ... -> N-1: a rank forwards piece k (as it came) while it
 * decodes it, and receives piece k+1 meanwhile. */
static zcclResult_t zp_sparse_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  ZU_CHECK(zp_sparse_chain(ctx, a, 0));
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, cap;
  const char* what = "sparse allreduce";
  int from = r > 0 ? r - 1 : -1, to = r < N - 1 ? r + 1 : -1;
  const zc_codec_info_t* rc = zc_codec_info(a->compression.codec); /* RLE */
  zc_params_t cp = {.dtype = a->datatype};
  size_t P = zp_sparse_piece(ctx, rc, &cp, n, 2, &cap), npieces = (n + P - 1) / P;
  uint8_t* st[2] = {NULL, NULL};
  size_t sz[2] = {0, 0};
  zp_xfer_t x[4]; /* receives 0, 1; sends 2, 3 */
  memset(x, 0, sizeof x);
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, (void**)&st[0]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, (void**)&st[1]), res, out);
  if (from >= 0 && npieces > 0) {
    zp_recv_at(ctx, &x[0], from, zp_sub(ZP_TAG_ALGO_PHASE2, 0, 0), st[0], cap);
    x[0].var = 1;
    ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[0], 1), res, fail);
  }
  for (size_t k = 0; k < npieces; k++) {
    size_t lo = k * P, m = n - lo < P ? n - lo : P;
    int b = (int)(k % 2);
    uint8_t* dst = zp_at(a->recvbuff, lo, es);
    /* st[b] was sent (piece k-2) and decoded (synced at piece k-1). */
    ZU_CHECK_GOTO(zp_sparse_settle(ctx, what, &x[2 + b]), res, fail);
    if (from < 0) {
      ZU_CHECK_GOTO(zd_encode(ctx->dev, rc, &cp, dst, m, st[b], cap, &sz[b]), res, fail);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, fail);
    } else {
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, what, &x[b], 1), res, fail);
      sz[b] = x[b].req.length;
      memset(&x[b], 0, sizeof x[b]);
    }
    if (to >= 0) {
      zp_send_at(ctx, &x[2 + b], to, zp_sub(ZP_TAG_ALGO_PHASE2, 0, (uint32_t)k), st[b], sz[b]);
      ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[2 + b], 1), res, fail);
      zp_count(ctx, m * es, sz[b]);
    }
    if (from >= 0) {
      ZU_CHECK_GOTO(zd_decode(ctx->dev, rc, st[b], &sz[b], dst, m), res, fail);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, fail); /* st[b^1]: decoded at piece k-1, receives piece k+1 */
      if (k + 1 < npieces) {
        ZU_CHECK_GOTO(zp_sparse_settle(ctx, what, &x[3 - b]), res, fail); /* and sent at piece k-1 */
        zp_recv_at(ctx, &x[b ^ 1], from, zp_sub(ZP_TAG_ALGO_PHASE2, 0, (uint32_t)(k + 1)), st[b ^ 1], cap);
        x[b ^ 1].var = 1;
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &x[b ^ 1], 1), res, fail);
      }
    }
  }
  for (int i = 2; i < 4; i++) ZU_CHECK_GOTO(zp_sparse_settle(ctx, what, &x[i]), res, fail);
  res = zcclSuccess;
  goto out;
fail:
  zp_xfers_cancel(ctx, x, 4);
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, st[1]);
  zp_tmp_put(ctx, st[0]);
  return res;
}

/* A pipelined chain whose pieces shrink by the zeros they hold (priced
 * full here; codec=auto scales it by the zeros it samples); an allreduce
 * adds a chain broadcast of the result. */
double zp_sparse_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chain_cost(ctx, zp_call_bytes(a), 1) * (a->coll == ZP_COLL_ALLREDUCE ? 2 : 1);
}

const zp_algo_t zp_algo_sparse_reduce = {"sparse", "sparse RLE chain", ZP_COLL_REDUCE, ZP_NEEDS_LOSSLESS, 0, NULL,
                                         zp_sparse_cost, zp_sparse_reduce};
const zp_algo_t zp_algo_sparse_allreduce = {"sparse", "sparse RLE chain, then its result down the chain",
                                            ZP_COLL_ALLREDUCE, ZP_NEEDS_LOSSLESS, 0, NULL, zp_sparse_cost,
                                            zp_sparse_allreduce};
