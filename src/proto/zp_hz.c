/* Compressed collectives (ZCCL's two frameworks, hZCCL's homomorphic
 * reduction), first pieces: the homomorphic ring allreduce and the
 * compress-once ring allgather. Streams are the codec's (docs/format.md),
 * made and read through the device (zd_compress/zd_decompress/zd_hop).
 *
 * Bounds (DESIGN.md, "Compression contract"): every input value is
 * quantized exactly once, with the same absolute step on every rank, and
 * every rank decompresses the same final streams (its own included), so
 *   - allreduce SUM: |error| <= N eb; AVG: <= eb (plus the float rounding
 *     of the division); MAX/MIN: <= eb; bit-identical on every rank;
 *   - allgather: <= eb for every element; identical on every rank.
 * Fill values and non-finite values travel exactly. */
#include <math.h>
#include <string.h>

#include "zp_algo.h"

/* The absolute bound for this call. ABS: as given. REL: times the range of
 * the valid values of every rank's input (one small allreduce, so all
 * ranks quantize onto the same grid). Target modes bound the output: a SUM
 * of N inputs divides the bound by N. */
static zcclResult_t zp_eb_abs(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t n, int global,
                              double* eb) {
  const zcclCompression_t* c = &a->compression;
  int rel = c->mode == zcclErrorRel || c->mode == zcclErrorTargetRel;
  double e = c->eb;
  if (rel) {
    double mn = 0, mx = 0;
    size_t valid = 0;
    ZU_CHECK(zd_value_range(ctx->dev, in, n, a->datatype, c->hasFill, c->fillValue, &mn, &mx, &valid));
    /* (-min, max); a rank with no valid value contributes -inf. */
    double lohi[2] = {valid ? -mn : -INFINITY, valid ? mx : -INFINITY};
    if (global) { /* the max over ranks, in a pool temporary (device memory) */
      double* t = NULL;
      ZU_CHECK(zp_tmp_get(ctx, sizeof lohi, (void**)&t));
      memcpy(t, lohi, sizeof lohi);
      zp_coll_args_t r = {.coll = ZP_COLL_ALLREDUCE, .sendbuff = t, .recvbuff = t, .count = 2,
                          .datatype = zcclFloat64, .op = zcclMax};
      zcclResult_t res = zp_rd_allreduce_sub(ctx, &r, 0x7000);
      memcpy(lohi, t, sizeof lohi);
      zp_tmp_put(ctx, t);
      ZU_CHECK(res);
    }
    double lo = -lohi[0], hi = lohi[1], range = hi - lo;
    /* Constant data (or none valid): any step keeps the bound; use one
     * relative to the magnitude. */
    if (!(range > 0) || !isfinite(range)) range = isfinite(hi) && hi != 0 ? fabs(hi) : 1.0;
    e *= range;
  }
  if ((c->mode == zcclErrorTargetAbs || c->mode == zcclErrorTargetRel) && a->coll == ZP_COLL_ALLREDUCE &&
      a->op == zcclSum)
    e /= ctx->nranks;
  ZU_RETURN_ERR_IF(!(e > 0) || !isfinite(e), zcclInvalidArgument, "%s: error bound %g gives an absolute bound %g",
                   zp_coll_name(a->coll), c->eb, e);
  *eb = e;
  return zcclSuccess;
}

static zc_params_t zp_params(const zp_coll_args_t* a, double eb) {
  zc_params_t p = {.dtype = a->datatype, .eb = eb, .has_fill = a->compression.hasFill,
                   .fill = a->compression.fillValue};
  return p;
}

/* Columns [lo, hi) of blocks boff/blen, clipped to each block. */
static void zp_slice_of(int N, const size_t* boff, const size_t* blen, size_t lo, size_t hi, size_t* soff,
                        size_t* slen) {
  for (int b = 0; b < N; b++) {
    size_t l = blen[b] < hi ? blen[b] : hi;
    soff[b] = boff[b] + (lo < l ? lo : l);
    slen[b] = l > lo ? l - lo : 0;
  }
}

/* Elements per block slice so that `streams` compressed slices fit the pool. */
static size_t zp_stream_slice(const zp_ctx_t* ctx, size_t block, zcclDataType_t dt, int streams) {
  size_t room = zd_buf_largest(ctx->dev) / ((size_t)streams + 1), s = block ? block : 1;
  while (s > 1 && zd_compress_bound(s, dt) > room) s /= 2;
  return s;
}

/* One ring step of streams: sbuf (sbytes) to the right neighbour, a stream
 * of up to cap bytes from the left into rbuf; *rbytes says how long. */
static void zp_count(const zp_ctx_t* ctx, size_t raw, size_t wire) {
  if (!ctx->stats) return;
  ctx->stats->raw_bytes += raw;
  ctx->stats->wire_bytes += wire;
}

static zcclResult_t zp_stream_xchg(const zp_ctx_t* ctx, const char* what, const void* sbuf, size_t sbytes,
                                   size_t sraw, void* rbuf, size_t cap, size_t* rbytes, uint32_t sub) {
  int N = ctx->nranks, r = ctx->rank;
  zp_xfer_t x[2];
  zp_send_at(ctx, &x[0], (r + 1) % N, sub, sbuf, sbytes);
  zp_recv_at(ctx, &x[1], (r + N - 1) % N, sub, rbuf, cap);
  x[1].var = 1;
  ZU_CHECK(zp_xfers_run(ctx, what, x, 2));
  *rbytes = x[1].req.length;
  zp_count(ctx, sraw, sbytes);
  return zcclSuccess;
}

/* hZCCL's allreduce: compress the N blocks once; the ring reduce-scatter
 * adds each received compressed block to the local one (zd_hop, integers,
 * no decompression); the ring allgather forwards the finished streams;
 * every rank decompresses all N. */
zcclResult_t zp_hz_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "compressed allreduce";
  double eb;
  ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, n, 1, &eb));
  zc_params_t p = zp_params(a, eb);
  size_t boff[N], blen[N], soff[N], slen[N], sizes[N], rsize = 0;
  for (int b = 0; b < N; b++) {
    boff[b] = zp_off(n, N, b);
    blen[b] = zp_off(n, N, b + 1) - boff[b];
  }
  size_t maxb = blen[N - 1] > blen[0] ? blen[N - 1] : blen[0];
  size_t slice = zp_stream_slice(ctx, maxb, a->datatype, N + 1), cap = zd_compress_bound(slice, a->datatype);
  void *streams = NULL, *rtmp = NULL;
  uint8_t* S[N];
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, (size_t)N * cap, &streams), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, &rtmp), res, out);
  for (int b = 0; b < N; b++) S[b] = (uint8_t*)streams + (size_t)b * cap;
  uint32_t k = 0;
  for (size_t lo = 0; lo < maxb || (lo == 0 && maxb == 0); lo += slice, k++) {
    size_t hi = lo + slice < maxb ? lo + slice : maxb;
    zp_slice_of(N, boff, blen, lo, hi, soff, slen);
    for (int b = 0; b < N; b++)
      ZU_CHECK_GOTO(zd_compress(ctx->dev, &p, zp_at(a->sendbuff, soff[b], es), slen[b], S[b], cap, &sizes[b]), res,
                    out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s - 1, N), rb = zp_mod(r - s - 2, N);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, S[sb], sizes[sb], slen[sb] * es, rtmp, cap, &rsize, (k << 8) | (uint32_t)s), res,
                    out);
      ZU_CHECK_GOTO(zd_hop(ctx->dev, op, S[rb], &sizes[rb], rtmp, &rsize, S[rb], cap, &sizes[rb]), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      ZU_CHECK_GOTO(
          zp_stream_xchg(ctx, what, S[sb], sizes[sb], slen[sb] * es, S[rb], cap, &sizes[rb],
                         (k << 8) | 0x80 | (uint32_t)s), res,
          out);
    }
    for (int b = 0; b < N; b++) {
      uint8_t* dst = zp_at(a->recvbuff, soff[b], es);
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, S[b], &sizes[b], dst, slen[b]), res, out);
      if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, slen[b], a->datatype, N), res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (maxb == 0) break;
  }
  res = zcclSuccess;
out:
  (void)zd_sync(ctx->dev); /* nothing queued may outlive the temporaries */
  zp_tmp_put(ctx, streams);
  zp_tmp_put(ctx, rtmp);
  return res;
}

/* ZCCL's data-movement framework for allgather: each rank compresses its
 * block once, the streams go around the ring unchanged, every rank
 * decompresses all N (its own too, so all hold the same values). */
zcclResult_t zp_hz_ring_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  const char* what = "compressed allgather";
  double eb;
  ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, n, 1, &eb));
  zc_params_t p = zp_params(a, eb);
  size_t slice = zp_stream_slice(ctx, n, a->datatype, N), cap = zd_compress_bound(slice, a->datatype), sizes[N];
  void* streams = NULL;
  uint8_t* S[N];
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, (size_t)N * cap, &streams), res, out);
  for (int b = 0; b < N; b++) S[b] = (uint8_t*)streams + (size_t)b * cap;
  uint32_t k = 0;
  for (size_t lo = 0; lo < n || (lo == 0 && n == 0); lo += slice, k++) {
    size_t m = n - lo < slice ? n - lo : slice;
    ZU_CHECK_GOTO(zd_compress(ctx->dev, &p, zp_at(a->sendbuff, lo, es), m, S[r], cap, &sizes[r]), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, S[sb], sizes[sb], m * es, S[rb], cap, &sizes[rb], (k << 8) | (uint32_t)s), res,
                    out);
    }
    for (int b = 0; b < N; b++)
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, S[b], &sizes[b], zp_at(a->recvbuff, (size_t)b * n + lo, es), m), res,
                    out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (n == 0) break;
  }
  res = zcclSuccess;
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, streams);
  return res;
}

/* ZCCL's data-movement framework for broadcast: the root compresses once
 * (REL from its own data: only its values travel), the stream's size and
 * then the stream go out by the uncompressed broadcast the cost model picks
 * for that many bytes, and every rank decompresses, the root too, so all
 * hold the same values. In slices when the stream does not fit the pool. */
zcclResult_t zp_hz_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int root = a->root, me = ctx->rank == root;
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  double eb = 1.0;
  if (me) ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, n, 0, &eb));
  zc_params_t p = zp_params(a, eb);
  size_t slice = zp_stream_slice(ctx, n, a->datatype, 2), cap = zd_compress_bound(slice, a->datatype);
  void *stream = NULL, *sz = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, cap, &stream), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, sizeof(uint64_t), &sz), res, out);
  for (size_t lo = 0; lo < n || (lo == 0 && n == 0); lo += slice) {
    size_t m = n - lo < slice ? n - lo : slice, bytes = 0;
    if (me) {
      ZU_CHECK_GOTO(zd_compress(ctx->dev, &p, zp_at(a->sendbuff, lo, es), m, stream, cap, &bytes), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      uint64_t b64 = bytes;
      memcpy(sz, &b64, sizeof b64);
    }
    ZU_CHECK_GOTO(zp_tree_broadcast_sub(ctx, sz, sizeof(uint64_t), root, 0xfff0), res, out);
    uint64_t b64;
    memcpy(&b64, sz, sizeof b64);
    ZU_RETURN_ERR_IF(b64 > cap, zcclInternalError, "compressed broadcast: stream of %llu bytes, room for %zu",
                     (unsigned long long)b64, cap);
    bytes = (size_t)b64;
    zp_coll_args_t s = *a;
    s.sendbuff = s.recvbuff = stream;
    s.count = bytes;
    s.datatype = zcclUint8;
    s.compression.codec = zcclCodecNone;
    ZU_CHECK_GOTO(zp_coll_run(ctx, &s), res, out);
    zp_count(ctx, m * es, bytes);
    ZU_CHECK_GOTO(zd_decompress(ctx->dev, stream, &bytes, zp_at(a->recvbuff, lo, es), m), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (n == 0) break;
  }
  res = zcclSuccess;
out:
  (void)zd_sync(ctx->dev);
  zp_tmp_put(ctx, stream);
  zp_tmp_put(ctx, sz);
  return res;
}
