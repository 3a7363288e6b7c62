/* CPRP2P, the naive baseline the papers beat: compress before every send,
 * decompress after every receive, compute on raw values in between. Kept so
 * the benchmark can show what compression-aware algorithms gain. Any lossy
 * codec: ZFP fixed accuracy (codec=zfp: its only reductions, its streams
 * having no homomorphic sum; allgather and broadcast compete with
 * compress-once) or the szp/hz stream codec (only when ZCCL_ALGO=cprp2p).
 *
 * Bounds (eb: the call's absolute bound; every compression of a value
 * costs at most eb, and nothing else does but float rounding):
 *   - allreduce (a fill value absorbs, as in the homomorphic and DOC
 *     reductions): each block's partial is recompressed at each of the N-1
 *     reduce-scatter hops, then its owner compresses the total once and the
 *     allgather forwards those bytes unchanged, every rank (the owner too)
 *     decompressing them: SUM, MAX, MIN within N eb; AVG (the division
 *     after decompression) within eb; bit-identical on every rank;
 *   - allgather: every hop decompresses and recompresses what it forwards,
 *     so rank q's block on rank r has been through d = (r - q) mod N
 *     compressions: within d eb (the own block exact);
 *   - broadcast, binomial tree: each rank decompresses what its parent
 *     sent and compresses it again for its children; relative rank v is
 *     popcount(v) hops from the root: within popcount(v) eb (<= ceil(log2 N)
 *     eb; the root exact);
 *   - reduce-scatter, ring: a block's partial is compressed by the rank it
 *     starts at and recompressed by the N-2 after it, the owner keeping
 *     the total raw: N-1 compressions, each moving the value by <= eb, an
 *     addition of raw values (and max, min: 1-Lipschitz) passing an error
 *     on unchanged: SUM, MAX, MIN within (N-1) eb, AVG (N-1) eb / N;
 *   - reduce, binomial tree: every non-root rank compresses its partial
 *     once; a sum adds its children's errors, so the root's SUM is within
 *     (N-1) eb (AVG (N-1) eb / N), while max and min keep the largest of
 *     them, so MAX/MIN are within the deepest path, floor(log2 N) eb.
 * Plus the float rounding of the raw reductions. Target modes divide the
 * bound by those counts (N, 1 for AVG, N-1, ceil(log2 N); reduce-scatter
 * N-1; reduce N-1, floor(log2 N) for MAX/MIN, 1 for AVG).
 *
 * ZFP cannot carry NaN, Inf or fill values: such input is a
 * zcclInvalidArgument on every rank, found before anything is sent. A
 * compression that fails on the way (finite inputs whose partial sum
 * overflows to Inf) sends an empty message instead and the schedule runs to
 * its end, so nobody waits for a message that never comes; a small
 * agreement at the end (ZFP only: the stream codec stores anything) makes
 * every rank return the error. */
#include <stdio.h>
#include <string.h>

#include "zp_stream.h"

/* The codec of one call (zp_streams_t without buffers): ZFP or the stream
 * codec, its parameters (ZFP: p.eb is the tolerance), slices of `slice`
 * elements and streams of `cap` bytes. */
typedef zp_streams_t zp_cpr_t;

/* A stream to send: compressed and complete, or, once this rank has an
 * error (*bad), empty (size 0; no stream is): the receiver learns of it. */
static void zp_cpr_outgoing(const zp_ctx_t* ctx, const char* what, const zp_cpr_t* c, const void* in, size_t n,
                            void* out, size_t* size, zcclResult_t* bad) {
  if (*bad == zcclSuccess) {
    zcclResult_t r = zp_encode(ctx, c, in, n, out, c->cap, size);
    if (r == zcclSuccess) r = zd_sync(ctx->dev);
    if (r == zcclSuccess) return;
    char why[256]; /* the codec's message, copied: ZU_ERROR writes where it lies */
    snprintf(why, sizeof why, "%s", zu_error_last());
    *bad = ZU_ERROR(r, "%s: could not compress what this rank sends: %s", what, why);
  }
  *size = 0;
}

/* A received stream: empty means the sender had an error, and this rank's
 * results are void from here on. 1: decompress it. */
static int zp_cpr_incoming(const char* what, int from, size_t size, zcclResult_t* bad) {
  if (size == 0 && *bad == zcclSuccess)
    *bad = ZU_ERROR(zcclInvalidArgument, "%s: rank %d could not compress what it sends here (see its log)", what,
                    from);
  return *bad == zcclSuccess;
}

/* The end of a call: with a finite-only codec (ZFP), every rank learns
 * whether any had an error (the last rank + 1 that had one travels in a
 * max-allreduce). */
static zcclResult_t zp_cpr_finish(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_cpr_t* c,
                                  zcclResult_t bad) {
  if (!(c->codec->caps & ZC_CAP_FINITE)) return bad;
  double who = bad != zcclSuccess ? ctx->rank + 1 : 0;
  ZU_CHECK(zp_agree(ctx, &who, 1, -1, zp_sub(ZP_TAG_CPR_WHO, 0, 0)));
  if (bad != zcclSuccess) return bad;
  ZU_RETURN_ERR_IF(who > 0, zcclInvalidArgument,
                   "%s: codec=%s could not compress on rank %d during the collective (it cannot carry the NaN "
                   "or Inf that partial results can reach; see that rank's log)",
                   zp_coll_name(a->coll), c->codec->name, (int)who - 1);
  return zcclSuccess;
}

/* The call's codec. The bound comes from in[0, in_n): every rank's values
 * (root < 0) or the root's, which then tells everyone (intermediate ranks
 * of a broadcast compress too). paths: compressions on the longest path
 * (target modes divide by it). Slices of a block of `block` elements so
 * that `streams` streams and `raws` raw slices fit the pool. Every rank
 * returns the same result. */
static zcclResult_t zp_cpr_setup(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t in_n, int root,
                                 int paths, size_t block, int streams, int raws, zp_cpr_t* c) {
  const zcclCompression_t* cm = &a->compression;
  const char* fn = zp_coll_name(a->coll);
  memset(c, 0, sizeof *c);
  c->codec = zc_codec_info(cm->codec);
  /* zp_eb_abs divides an allreduce SUM's target by N; the division here
   * is by this algorithm's path length instead. */
  zp_coll_args_t b = *a;
  b.op = zcclMax;
  double eb = 0;
  ZU_CHECK(zp_eb_agreed(ctx, &b, in, in_n, root, &eb));
  if (cm->mode == zcclErrorTargetAbs || cm->mode == zcclErrorTargetRel) eb /= paths > 1 ? paths : 1;
  c->p = zp_params(ctx, a, eb);
  /* Slices: each buffer gets an equal share of the largest free piece
   * (first fit needs the slack). */
  size_t es = zu_dtype_size(a->datatype), room = zd_buf_largest(ctx->dev) / (size_t)(streams + raws + 1);
  size_t s = block ? block : 1;
  while (s > 1 && (zp_bound(c, s) > room || s * es > room)) s /= 2;
  c->slice = s;
  c->cap = zp_bound(c, s);
  ZU_RETURN_ERR_IF(c->cap == 0, zcclInvalidArgument, "%s: no stream size for bound %g", fn, eb);
  return zcclSuccess;
}

/* Ring reduce-scatter with a decompress-reduce-recompress at every hop,
 * then a ring allgather of the totals' streams, forwarded unchanged and
 * decompressed by every rank (the owner too), in column slices of the N
 * blocks. Works in recvbuff. */
static zcclResult_t zp_cpr_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, left = (r + N - 1) % N;
  size_t es = zu_dtype_size(a->datatype), n = a->count, boff[N], blen[N], soff[N], slen[N], m;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "cprp2p allreduce";
  zp_split_blocks(n, N, boff, blen);
  size_t maxb = blen[N - 1] > blen[0] ? blen[N - 1] : blen[0];
  zp_cpr_t c;
  ZU_CHECK(zp_cpr_setup(ctx, a, a->sendbuff, n, -1, a->op == zcclAvg ? 1 : N, maxb, 2, 1, &c));
  uint8_t* buf = a->recvbuff;
  uint8_t *st[2] = {NULL, NULL}, *raw = NULL;
  size_t sz[2] = {0, 0};
  zcclResult_t res, bad = zcclSuccess;
  if (a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, buf, a->sendbuff, n * es));
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[0]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[1]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.slice * es, (void**)&raw), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(maxb, c.slice, lo, &m); lo += c.slice, k++) {
    zp_slice_of(N, boff, blen, lo, lo + m, soff, slen);
    /* Reduce-scatter: the partial of block r-s-1 leaves compressed; the
     * one of block r-s-2 arrives, is decompressed and reduced with this
     * rank's values. After N-1 steps block r holds the total. */
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s - 1, N), rb = zp_mod(r - s - 2, N);
      zp_cpr_outgoing(ctx, what, &c, zp_at(buf, soff[sb], es), slen[sb], st[0], &sz[0], &bad);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, st[0], sz[0], slen[sb] * es, st[1], c.cap, &sz[1],
                                   zp_sub(ZP_TAG_ALGO, (uint32_t)s, k)),
                    res, out);
      if (!zp_cpr_incoming(what, left, sz[1], &bad)) continue;
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[1], &sz[1], raw, slen[rb]), res, out);
      ZU_CHECK_GOTO(zd_reduce_fill(ctx->dev, zp_at(buf, soff[rb], es), zp_at(buf, soff[rb], es), raw, slen[rb],
                                   a->datatype, op, c.p.has_fill, c.p.fill),
                    res, out);
    }
    /* Allgather: the owner compresses its total once and decompresses it
     * itself; the stream then goes round unchanged, so every rank decodes
     * the same bytes for every block. */
    int cur = 0;
    zp_cpr_outgoing(ctx, what, &c, zp_at(buf, soff[r], es), slen[r], st[cur], &sz[cur], &bad);
    if (bad == zcclSuccess)
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[cur], &sz[cur], zp_at(buf, soff[r], es), slen[r]), res, out);
    for (int s = 0; s < N - 1; s++, cur ^= 1) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* st[cur^1] was being decompressed */
      if (bad != zcclSuccess) sz[cur] = 0; /* forwards only what it could read */
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, st[cur], sz[cur], slen[sb] * es, st[cur ^ 1], c.cap, &sz[cur ^ 1],
                                   zp_sub(ZP_TAG_ALGO_PHASE2, (uint32_t)s, k)),
                    res, out);
      if (!zp_cpr_incoming(what, left, sz[cur ^ 1], &bad)) continue;
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[cur ^ 1], &sz[cur ^ 1], zp_at(buf, soff[rb], es), slen[rb]), res,
                    out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  if (bad == zcclSuccess) ZU_CHECK_GOTO(zp_avg_divide(ctx, a, buf, n), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  res = zp_cpr_finish(ctx, a, &c, bad);
out:
  (void)zd_sync(ctx->dev); /* nothing queued may outlive the buffers */
  zp_tmp_put(ctx, raw);
  zp_tmp_put(ctx, st[1]);
  zp_tmp_put(ctx, st[0]);
  return res;
}

/* Ring allgather that decompresses every block it receives and compresses
 * it again to forward it; the own block stays exact. */
static zcclResult_t zp_cpr_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, left = (r + N - 1) % N;
  size_t es = zu_dtype_size(a->datatype), n = a->count, m;
  const char* what = "cprp2p allgather";
  zp_cpr_t c;
  ZU_CHECK(zp_cpr_setup(ctx, a, a->sendbuff, n, -1, N - 1, n, 2, 0, &c));
  uint8_t* buf = a->recvbuff;
  uint8_t* st[2] = {NULL, NULL};
  size_t sz[2] = {0, 0};
  zcclResult_t res, bad = zcclSuccess;
  if ((const uint8_t*)a->sendbuff != zp_at(buf, (size_t)r * n, es))
    ZU_CHECK(zd_copy(ctx->dev, zp_at(buf, (size_t)r * n, es), a->sendbuff, n * es));
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[0]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[1]), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, c.slice, lo, &m); lo += c.slice, k++) {
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      /* (its sync also ends st[1]'s last decompression) */
      zp_cpr_outgoing(ctx, what, &c, zp_at(buf, (size_t)sb * n + lo, es), m, st[0], &sz[0], &bad);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, st[0], sz[0], m * es, st[1], c.cap, &sz[1],
                                   zp_sub(ZP_TAG_ALGO, (uint32_t)s, k)),
                    res, out);
      if (!zp_cpr_incoming(what, left, sz[1], &bad)) continue;
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[1], &sz[1], zp_at(buf, (size_t)rb * n + lo, es), m), res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zp_cpr_finish(ctx, a, &c, bad);
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, st[1]);
  zp_tmp_put(ctx, st[0]);
  return res;
}

/* Binomial broadcast (the tree of zp_tree.c, ranks relative to the root):
 * each rank decompresses what its parent sent into recvbuff, compresses
 * that again once, and sends the stream to each of its children. */
static zcclResult_t zp_cpr_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N), lg = zp_log2_ceil(N);
  size_t es = zu_dtype_size(a->datatype), n = a->count, m;
  const char* what = "cprp2p broadcast";
  int child[32], end[32], nc = zp_tree_children(v, N, child, end), parent = (v - zp_tree_span(v, N) + a->root) % N;
  for (int i = 0; i < nc; i++) child[i] = (child[i] + a->root) % N; /* ranks */
  zp_cpr_t c;
  ZU_CHECK(zp_cpr_setup(ctx, a, a->sendbuff, v == 0 ? n : 0, a->root, lg, n, 1, 0, &c));
  uint8_t* st = NULL;
  size_t sz = 0;
  zp_xfer_t x[32];
  zcclResult_t res, bad = zcclSuccess;
  if (v == 0 && a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, n * es));
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, c.slice, lo, &m); lo += c.slice, k++) {
    uint8_t* dst = zp_at(a->recvbuff, lo, es);
    if (v) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, -1, NULL, 0, 0, parent, st, c.cap, &sz, zp_sub(ZP_TAG_ALGO, 0, k)),
                    res, out);
      if (zp_cpr_incoming(what, parent, sz, &bad))
        ZU_CHECK_GOTO(zp_decode(ctx, &c, st, &sz, dst, m), res, out);
    }
    if (nc) {
      zp_cpr_outgoing(ctx, what, &c, dst, m, st, &sz, &bad);
      for (int i = 0; i < nc; i++) zp_send_at(ctx, &x[i], child[i], zp_sub(ZP_TAG_ALGO, 0, k), st, sz);
      ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nc), res, out);
      for (int i = 0; i < nc; i++) zp_count(ctx, m * es, sz);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zp_cpr_finish(ctx, a, &c, bad);
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, st);
  return res;
}

/* Ring reduce-scatter over the N blocks of count values (block b's total
 * to rank b): at step s rank r compresses its partial of block r-s-1 (at
 * step 0 its own values) and sends it right; the partial of block r-s-2
 * arrives, is decompressed and this rank's values are added, giving what
 * it sends next. The last step's sum is block r's total, kept raw in
 * recvbuff: N-1 compressions on every element's path. */
static zcclResult_t zp_cpr_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, left = (r + N - 1) % N;
  size_t es = zu_dtype_size(a->datatype), n = a->count, m;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "cprp2p reduce-scatter";
  zp_cpr_t c;
  ZU_CHECK(zp_cpr_setup(ctx, a, a->sendbuff, n * (size_t)N, -1, a->op == zcclAvg ? 1 : N - 1, n, 2, 2, &c));
  uint8_t *st[2] = {NULL, NULL}, *raw = NULL, *acc = NULL;
  size_t sz[2] = {0, 0};
  zcclResult_t res, bad = zcclSuccess;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[0]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[1]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.slice * es, (void**)&raw), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.slice * es, (void**)&acc), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, c.slice, lo, &m); lo += c.slice, k++) {
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s - 1, N), rb = zp_mod(r - s - 2, N);
      /* (its sync ends the last step's reduction into acc) */
      zp_cpr_outgoing(ctx, what, &c, s == 0 ? zp_at(a->sendbuff, (size_t)sb * n + lo, es) : acc, m, st[0], &sz[0],
                      &bad);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, st[0], sz[0], m * es, st[1], c.cap, &sz[1],
                                   zp_sub(ZP_TAG_ALGO, (uint32_t)s, k)),
                    res, out);
      if (!zp_cpr_incoming(what, left, sz[1], &bad)) continue;
      /* In place, recvbuff is block r of sendbuff: only the last step,
       * whose block is r, writes there, each value after reading it. */
      uint8_t* dst = s == N - 2 ? zp_at(a->recvbuff, lo, es) : acc;
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[1], &sz[1], raw, m), res, out);
      ZU_CHECK_GOTO(zd_reduce_fill(ctx->dev, dst, zp_at(a->sendbuff, (size_t)rb * n + lo, es), raw, m, a->datatype, op,
                                   c.p.has_fill, c.p.fill),
                    res, out);
    }
    if (bad == zcclSuccess) ZU_CHECK_GOTO(zp_avg_divide(ctx, a, zp_at(a->recvbuff, lo, es), m), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zp_cpr_finish(ctx, a, &c, bad);
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, acc);
  zp_tmp_put(ctx, raw);
  zp_tmp_put(ctx, st[1]);
  zp_tmp_put(ctx, st[0]);
  return res;
}

/* Binomial reduce (the tree of zp_tree.c, ranks relative to the root):
 * each rank receives its children's streams, decompresses them and adds
 * them to its own values (nearest child first), compresses that partial
 * once and sends it to its parent; the root keeps the sum raw. Every
 * non-root rank compresses once; relative rank v's values pass
 * popcount(v) compressions on their way. */
static zcclResult_t zp_cpr_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N), lg = zp_log2_ceil(N), depth = zp_log2_floor(N);
  size_t es = zu_dtype_size(a->datatype), n = a->count, m, sz[33];
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "cprp2p reduce";
  int child[32], end[32], nc = zp_tree_children(v, N, child, end), parent = (v - zp_tree_span(v, N) + a->root) % N;
  /* SUM: every compression's error adds up (N-1 of them); MAX/MIN: the
   * deepest rank's path (max and min pass an error on, never add two). */
  int paths = a->op == zcclAvg ? 1 : op == zcclSum ? N - 1 : depth;
  zp_cpr_t c;
  /* The same slices on every rank: room for the most children any rank has. */
  ZU_CHECK(zp_cpr_setup(ctx, a, a->sendbuff, n, -1, paths, n, lg + 1, 2, &c));
  uint8_t *st[33] = {NULL}, *raw = NULL, *tmp = NULL;
  zp_xfer_t x[32];
  zcclResult_t res, bad = zcclSuccess;
  for (int i = 0; i <= nc; i++) ZU_CHECK_GOTO(zp_tmp_get(ctx, c.cap, (void**)&st[i]), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, c.slice * es, (void**)&raw), res, out);
  if (v) ZU_CHECK_GOTO(zp_tmp_get(ctx, c.slice * es, (void**)&tmp), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, c.slice, lo, &m); lo += c.slice, k++) {
    const uint8_t* own = zp_at(a->sendbuff, lo, es);
    uint8_t* acc = v ? tmp : zp_at(a->recvbuff, lo, es); /* the root sums in recvbuff (in place: own) */
    for (int i = 0; i < nc; i++) {
      zp_recv_at(ctx, &x[i], (child[i] + a->root) % N, zp_sub(ZP_TAG_ALGO, 0, k), st[i + 1], c.cap);
      x[i].var = 1;
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nc), res, out);
    int summed = 0; /* acc holds a sum (the first child's adds to own) */
    for (int i = 0; i < nc; i++) {
      sz[i + 1] = x[i].req.length;
      if (!zp_cpr_incoming(what, (child[i] + a->root) % N, sz[i + 1], &bad)) continue;
      ZU_CHECK_GOTO(zp_decode(ctx, &c, st[i + 1], &sz[i + 1], raw, m), res, out);
      ZU_CHECK_GOTO(zd_reduce_fill(ctx->dev, acc, summed ? acc : own, raw, m, a->datatype, op, c.p.has_fill,
                                   c.p.fill),
                    res, out);
      summed = 1;
    }
    if (v) { /* a leaf sends its own values */
      zp_cpr_outgoing(ctx, what, &c, summed ? acc : own, m, st[0], &sz[0], &bad);
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, parent, st[0], sz[0], m * es, -1, NULL, 0, NULL,
                                       zp_sub(ZP_TAG_ALGO, 0, k)),
                    res, out);
    } else {
      if (!summed && acc != own) ZU_CHECK_GOTO(zd_copy(ctx->dev, acc, own, m * es), res, out);
      if (bad == zcclSuccess) ZU_CHECK_GOTO(zp_avg_divide(ctx, a, acc, m), res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zp_cpr_finish(ctx, a, &c, bad);
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, tmp);
  zp_tmp_put(ctx, raw);
  for (int i = nc; i >= 0; i--) zp_tmp_put(ctx, st[i]);
  return res;
}

/* The codec's rates at both ends of every hop. */
static double zp_cpr_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  double q = zp_ratio(ctx), lg = zp_log2_ceil(ctx->nranks);
  switch (a->coll) {
    case ZP_COLL_ALLREDUCE: /* 2(N-1) hops of n/N, each compressed and decompressed */
      return 2 * (N - 1) * (al_s + n / N / (q * B) + (n / N / C + n / N / D));
    case ZP_COLL_ALLGATHER: /* n per rank */
    case ZP_COLL_REDUCESCATTER: /* N-1 hops of n, the raw reduction aside as for the allreduce */
      return (N - 1) * (al_s + n / (q * B) + (n / C + n / D));
    default: /* broadcast and reduce: binomial trees of log2 N levels */
      return lg * (al_s + n / (q * B) + (n / C + n / D));
  }
}

/* The baseline runs unforced only with codec=zfp, whose streams cannot be
 * added: its only reductions; for allgather and broadcast it competes with
 * compress-once. */
#define ZP_CPR_ALGO(coll, desc, fn) \
  {"cprp2p", "CPRP2P " desc " (recompress every hop)", coll, ZP_NEEDS_LOSSY, ZP_NEEDS_STREAM, NULL, zp_cpr_cost, fn}
const zp_algo_t zp_algo_cpr_allreduce = ZP_CPR_ALGO(ZP_COLL_ALLREDUCE, "ring", zp_cpr_allreduce);
const zp_algo_t zp_algo_cpr_allgather = ZP_CPR_ALGO(ZP_COLL_ALLGATHER, "ring", zp_cpr_allgather);
const zp_algo_t zp_algo_cpr_broadcast = ZP_CPR_ALGO(ZP_COLL_BROADCAST, "binomial tree", zp_cpr_broadcast);
const zp_algo_t zp_algo_cpr_reduce_scatter = ZP_CPR_ALGO(ZP_COLL_REDUCESCATTER, "ring", zp_cpr_reduce_scatter);
const zp_algo_t zp_algo_cpr_reduce = ZP_CPR_ALGO(ZP_COLL_REDUCE, "binomial tree", zp_cpr_reduce);
