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

/* A stream (sbuf, sbytes; standing for sraw bytes) to dst and one of up to
 * cap bytes from src into rbuf, *rbytes its length; either peer may be -1. */
static zcclResult_t zp_stream_sendrecv(const zp_ctx_t* ctx, const char* what, int dst, const void* sbuf,
                                       size_t sbytes, size_t sraw, int src, void* rbuf, size_t cap, size_t* rbytes,
                                       uint32_t sub) {
  zp_xfer_t x[2];
  int nx = 0, ri = -1;
  if (dst >= 0) zp_send_at(ctx, &x[nx++], dst, sub, sbuf, sbytes);
  if (src >= 0) {
    ri = nx;
    zp_recv_at(ctx, &x[nx++], src, sub, rbuf, cap);
    x[ri].var = 1;
  }
  ZU_CHECK(zp_xfers_run(ctx, what, x, nx));
  if (ri >= 0) *rbytes = x[ri].req.length;
  if (dst >= 0) zp_count(ctx, sraw, sbytes);
  return zcclSuccess;
}

/* One ring step of streams: to the right neighbour, from the left. */
static zcclResult_t zp_stream_xchg(const zp_ctx_t* ctx, const char* what, const void* sbuf, size_t sbytes,
                                   size_t sraw, void* rbuf, size_t cap, size_t* rbytes, uint32_t sub) {
  int N = ctx->nranks, r = ctx->rank;
  return zp_stream_sendrecv(ctx, what, (r + 1) % N, sbuf, sbytes, sraw, (r + N - 1) % N, rbuf, cap, rbytes, sub);
}

/* What a compressed algorithm works with: the codec's parameters, slices
 * of `slice` elements, and stream buffers of `cap` bytes from the pool. */
typedef struct {
  zc_params_t p;
  size_t slice, cap;
  uint8_t* s;     /* nbuf streams: stream b at s + b * cap */
  uint8_t* spare; /* one more, or NULL */
} zp_streams_t;

enum { ZP_EB_NONE, ZP_EB_LOCAL, ZP_EB_GLOBAL };

/* The bound from a->sendbuff[0, in_n) (eb_from: not at all, this rank's
 * values, every rank's), slices of a block of `block` elements small
 * enough that `fit` streams fit the pool (the same on every rank, so
 * slices pair up across ranks), nbuf streams and maybe a spare. */
static zcclResult_t zp_streams_get(const zp_ctx_t* ctx, const zp_coll_args_t* a, int eb_from, size_t in_n,
                                   size_t block, int fit, int nbuf, int spare, zp_streams_t* z) {
  double eb = 1.0;
  memset(z, 0, sizeof *z);
  if (eb_from != ZP_EB_NONE) ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, in_n, eb_from == ZP_EB_GLOBAL, &eb));
  z->p = zp_params(a, eb);
  z->slice = zp_stream_slice(ctx, block, a->datatype, fit);
  z->cap = zd_compress_bound(z->slice, a->datatype);
  ZU_CHECK(zp_tmp_get(ctx, (size_t)nbuf * z->cap, (void**)&z->s));
  if (spare) ZU_CHECK(zp_tmp_get(ctx, z->cap, (void**)&z->spare));
  return zcclSuccess;
}

static void zp_streams_put(const zp_ctx_t* ctx, zp_streams_t* z) {
  (void)zd_sync(ctx->dev); /* nothing queued may outlive the buffers */
  zp_tmp_put(ctx, z->s);
  zp_tmp_put(ctx, z->spare);
}

static uint8_t* zp_stream(const zp_streams_t* z, int b) { return z->s + (size_t)b * z->cap; }

/* Slice [lo, lo + *m) of n elements, for (lo = 0; zp_slice(...); lo +=
 * slice). n = 0 makes one empty slice: its (empty) streams still travel,
 * so every rank takes part the same way. */
static int zp_slice(size_t n, size_t slice, size_t lo, size_t* m) {
  if (lo > 0 && lo >= n) return 0;
  *m = n - lo < slice ? n - lo : slice;
  return 1;
}

/* hZCCL's ring: compress the N blocks (boff/blen) once; the ring
 * reduce-scatter adds each received compressed block to the local one
 * (zd_hop, integers, no decompression). Allreduce: a ring allgather then
 * forwards the finished streams and every rank decompresses all N (its own
 * too). Reduce-scatter: each rank decompresses its own block into
 * recvbuff. */
static zcclResult_t zp_hz_ring(const zp_ctx_t* ctx, const zp_coll_args_t* a, const size_t* boff,
                               const size_t* blen, size_t total, int allgather) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype);
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = allgather ? "compressed allreduce" : "compressed reduce-scatter";
  size_t soff[N], slen[N], sizes[N], rsize = 0, m;
  size_t maxb = blen[N - 1] > blen[0] ? blen[N - 1] : blen[0];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, total, maxb, N + 1, N, 1, &z), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(maxb, z.slice, lo, &m); lo += z.slice, k++) {
    zp_slice_of(N, boff, blen, lo, lo + m, soff, slen);
    for (int b = 0; b < N; b++)
      ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, soff[b], es), slen[b], zp_stream(&z, b), z.cap,
                                &sizes[b]),
                    res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s - 1, N), rb = zp_mod(r - s - 2, N);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, zp_stream(&z, sb), sizes[sb], slen[sb] * es, z.spare, z.cap, &rsize,
                                   (k << 8) | (uint32_t)s),
                    res, out);
      ZU_CHECK_GOTO(zd_hop(ctx->dev, op, zp_stream(&z, rb), &sizes[rb], z.spare, &rsize, zp_stream(&z, rb), z.cap,
                           &sizes[rb]),
                    res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
    for (int s = 0; allgather && s < N - 1; s++) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, zp_stream(&z, sb), sizes[sb], slen[sb] * es, zp_stream(&z, rb), z.cap,
                                   &sizes[rb], (k << 8) | 0x80 | (uint32_t)s),
                    res, out);
    }
    for (int b = 0; b < N; b++) {
      if (!allgather && b != r) continue;
      uint8_t* dst = allgather ? zp_at(a->recvbuff, soff[b], es) : zp_at(a->recvbuff, lo, es);
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, zp_stream(&z, b), &sizes[b], dst, slen[b]), res, out);
      if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, slen[b], a->datatype, N), res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

zcclResult_t zp_hz_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks;
  size_t n = a->count, boff[N], blen[N];
  for (int b = 0; b < N; b++) {
    boff[b] = zp_off(n, N, b);
    blen[b] = zp_off(n, N, b + 1) - boff[b];
  }
  return zp_hz_ring(ctx, a, boff, blen, n, 1);
}

zcclResult_t zp_hz_ring_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks;
  size_t n = a->count, boff[N], blen[N];
  for (int b = 0; b < N; b++) boff[b] = (size_t)b * n, blen[b] = n;
  return zp_hz_ring(ctx, a, boff, blen, n * (size_t)N, 0);
}

/* Homomorphic binomial reduce: each rank compresses its input once, adds
 * its children's streams to it in a fixed order (nearest first) without
 * decompressing, and sends the sum up; the root decompresses. */
zcclResult_t zp_hz_tree_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N), lg = 0;
  while ((1 << lg) < N) lg++;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[lg + 1], m;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "compressed reduce";
  int span = v ? v & -v : 1 << lg, nc = 0;
  for (int c = 1; c < span && v + c < N; c <<= 1) nc++;
  zp_xfer_t x[lg + 1];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, lg + 2, nc + 1, 0, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, lo, es), m, zp_stream(&z, 0), z.cap, &sizes[0]), res,
                  out);
    for (int i = 0; i < nc; i++) {
      zp_recv_at(ctx, &x[i], (v + (1 << i) + a->root) % N, 0, zp_stream(&z, i + 1), z.cap);
      x[i].var = 1;
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nc), res, out);
    for (int i = 0; i < nc; i++) {
      sizes[i + 1] = x[i].req.length;
      ZU_CHECK_GOTO(zd_hop(ctx->dev, op, zp_stream(&z, 0), &sizes[0], zp_stream(&z, i + 1), &sizes[i + 1],
                           zp_stream(&z, 0), z.cap, &sizes[0]),
                    res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (v) {
      int parent = (v - span + a->root) % N;
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, parent, zp_stream(&z, 0), sizes[0], m * es, -1, NULL, 0, NULL, 0),
                    res, out);
    } else {
      uint8_t* dst = zp_at(a->recvbuff, lo, es);
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, zp_stream(&z, 0), &sizes[0], dst, m), res, out);
      if (a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, m, a->datatype, N), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* ZCCL's data-movement framework for allgather: each rank compresses its
 * block once, the streams go around the ring unchanged, every rank
 * decompresses all N (its own too, so all hold the same values). */
zcclResult_t zp_hz_ring_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], m;
  const char* what = "compressed allgather";
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, N, N, 0, &z), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice, k++) {
    ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, lo, es), m, zp_stream(&z, r), z.cap, &sizes[r]), res,
                  out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    for (int s = 0; s < N - 1; s++) {
      int sb = zp_mod(r - s, N), rb = zp_mod(r - s - 1, N);
      ZU_CHECK_GOTO(zp_stream_xchg(ctx, what, zp_stream(&z, sb), sizes[sb], m * es, zp_stream(&z, rb), z.cap,
                                   &sizes[rb], (k << 8) | (uint32_t)s),
                    res, out);
    }
    for (int b = 0; b < N; b++)
      ZU_CHECK_GOTO(
          zd_decompress(ctx->dev, zp_stream(&z, b), &sizes[b], zp_at(a->recvbuff, (size_t)b * n + lo, es), m), res,
          out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* ZCCL's data-movement framework for broadcast: the root compresses once
 * (REL from its own data: only its values travel), the stream's size and
 * then the stream go out by the uncompressed broadcast the cost model picks
 * for that many bytes, and every rank decompresses, the root too, so all
 * hold the same values. In slices when the stream does not fit the pool. */
zcclResult_t zp_hz_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int root = a->root, me = ctx->rank == root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, m;
  zp_streams_t z;
  void* sz = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, me ? ZP_EB_LOCAL : ZP_EB_NONE, n, n, 2, 1, 0, &z), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, sizeof(uint64_t), &sz), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    size_t bytes = 0;
    uint64_t b64;
    if (me) {
      ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, lo, es), m, z.s, z.cap, &bytes), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      b64 = bytes;
      memcpy(sz, &b64, sizeof b64);
    }
    ZU_CHECK_GOTO(zp_tree_broadcast_sub(ctx, sz, sizeof(uint64_t), root, 0xfff0), res, out);
    memcpy(&b64, sz, sizeof b64);
    if (b64 > z.cap) {
      res = ZU_ERROR(zcclInternalError, "compressed broadcast: stream of %llu bytes, room for %zu",
                     (unsigned long long)b64, z.cap);
      goto out;
    }
    bytes = (size_t)b64;
    zp_coll_args_t s = *a;
    s.sendbuff = s.recvbuff = z.s;
    s.count = bytes;
    s.datatype = zcclUint8;
    s.compression.codec = zcclCodecNone;
    ZU_CHECK_GOTO(zp_coll_run(ctx, &s), res, out);
    zp_count(ctx, m * es, bytes);
    ZU_CHECK_GOTO(zd_decompress(ctx->dev, z.s, &bytes, zp_at(a->recvbuff, lo, es), m), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  zp_tmp_put(ctx, sz);
  return res;
}

/* ---- compress once, point to point: scatter, gather, alltoall ----------------
 * Each block is compressed where it starts and decompressed where it ends,
 * the sender's own block included (every value goes through the codec
 * once, as on every other rank). Slices are the same on every rank (sized
 * for N streams), so the messages pair up. */

/* The root compresses every rank's block (REL from its own input: only its
 * values travel) and sends each straight to its rank. */
zcclResult_t zp_hz_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, root = a->root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], m;
  const char* what = "compressed scatter";
  zp_xfer_t x[N];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, r == root ? ZP_EB_LOCAL : ZP_EB_NONE, n * (size_t)N, n, N, r == root ? N : 1,
                               0, &z),
                res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    if (r != root) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, -1, NULL, 0, 0, root, z.s, z.cap, &sizes[0], 0), res, out);
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, z.s, &sizes[0], zp_at(a->recvbuff, lo, es), m), res, out);
    } else {
      for (int b = 0; b < N; b++)
        ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, (size_t)b * n + lo, es), m, zp_stream(&z, b),
                                  z.cap, &sizes[b]),
                      res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      int nx = 0;
      for (int b = 0; b < N; b++)
        if (b != r) zp_send_at(ctx, &x[nx++], b, 0, zp_stream(&z, b), sizes[b]);
      /* The root's own block decompresses while the others travel. */
      res = zp_xfers_post(ctx, x, nx);
      if (res == zcclSuccess)
        res = zd_decompress(ctx->dev, zp_stream(&z, r), &sizes[r], zp_at(a->recvbuff, lo, es), m);
      zcclResult_t w = zp_xfers_wait(ctx, what, x, nx);
      ZU_CHECK_GOTO(res != zcclSuccess ? res : w, res, out);
      for (int b = 0; b < N; b++)
        if (b != r) zp_count(ctx, m * es, sizes[b]);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Every rank compresses its block (REL from every rank's input, like
 * allgather) and sends it to the root, which decompresses all N. */
zcclResult_t zp_hz_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, root = a->root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], m;
  const char* what = "compressed gather";
  zp_xfer_t x[N];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, N, r == root ? N : 1, 0, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    uint8_t* own = zp_stream(&z, r == root ? r : 0);
    ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, lo, es), m, own, z.cap, &sizes[r]), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (r != root) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, root, own, sizes[r], m * es, -1, NULL, 0, NULL, 0), res, out);
    } else {
      int nx = 0;
      for (int b = 0; b < N; b++)
        if (b != r) {
          zp_recv_at(ctx, &x[nx], b, 0, zp_stream(&z, b), z.cap);
          x[nx++].var = 1;
        }
      ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nx), res, out);
      for (int b = 0, k = 0; b < N; b++) {
        if (b != r) sizes[b] = x[k++].req.length;
        ZU_CHECK_GOTO(zd_decompress(ctx->dev, zp_stream(&z, b), &sizes[b],
                                    zp_at(a->recvbuff, (size_t)b * n + lo, es), m),
                      res, out);
      }
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Every rank compresses its N blocks once (REL from every rank's input)
 * and exchanges them pairwise: step s sends block r+s to rank r+s and gets
 * block r from rank r-s. */
zcclResult_t zp_hz_alltoall(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], rsize = 0, m;
  const char* what = "compressed alltoall";
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n * (size_t)N, n, N + 1, N, 1, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    for (int b = 0; b < N; b++)
      ZU_CHECK_GOTO(zd_compress(ctx->dev, &z.p, zp_at(a->sendbuff, (size_t)b * n + lo, es), m, zp_stream(&z, b),
                                z.cap, &sizes[b]),
                    res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    ZU_CHECK_GOTO(
        zd_decompress(ctx->dev, zp_stream(&z, r), &sizes[r], zp_at(a->recvbuff, (size_t)r * n + lo, es), m), res,
        out);
    for (int s = 1; s < N; s++) {
      int to = (r + s) % N, from = (r + N - s) % N;
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, to, zp_stream(&z, to), sizes[to], m * es, from, z.spare, z.cap,
                                       &rsize, (uint32_t)s),
                    res, out);
      ZU_CHECK_GOTO(zd_decompress(ctx->dev, z.spare, &rsize, zp_at(a->recvbuff, (size_t)from * n + lo, es), m), res,
                    out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* the spare is reused */
    }
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}
