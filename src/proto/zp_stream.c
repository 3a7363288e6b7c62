/* What every compressed algorithm uses: the call's absolute bound (REL
 * agreed over ranks), codec parameters, stream buffers from the pool in
 * slices that fit it, and stream messages of variable length. */
#include <math.h>
#include <string.h>

#include "zp_stream.h"
#include "zu_time.h"

/* The absolute bound for this call. ABS: as given. REL: times the range of
 * the valid values of every rank's input (one small allreduce, so all
 * ranks quantize onto the same grid). Target modes bound the output: a SUM
 * of N inputs divides the bound by N. */
double zp_rel_span(double lo, double hi) {
  double range = hi - lo;
  /* Constant data (or none valid: hi = -inf): any step keeps the bound;
   * use one relative to the magnitude. */
  if (!(range > 0) || !isfinite(range)) range = isfinite(hi) && hi != 0 ? fabs(hi) : 1.0;
  return range;
}

zcclResult_t zp_eb_abs(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t n, int global,
                              double* eb) {
  const zcclCompression_t* c = &a->compression;
  int rel = c->mode == zcclErrorRel || c->mode == zcclErrorTargetRel;
  double e = c->eb;
  if (rel) {
    double mn = 0, mx = 0;
    size_t valid = 0;
    zcclResult_t res = zd_value_range(ctx->dev, in, n, a->datatype, c->hasFill, c->fillValue, &mn, &mx, &valid);
    /* (-min, max, the last rank + 1 that failed to find its range); a rank
     * with no valid value contributes -inf. A failed rank still agrees, so
     * the others fail now rather than at ZCCL_TIMEOUT. */
    double v[3] = {-INFINITY, -INFINITY, res != zcclSuccess ? ctx->rank + 1 : 0};
    if (res == zcclSuccess && valid) v[0] = -mn, v[1] = mx;
    if (global) ZU_CHECK(zp_agree(ctx, v, 3, -1, zp_sub(ZP_TAG_EB_AGREE, 0, 0))); /* the max over ranks */
    if (res != zcclSuccess) return res;
    ZU_RETURN_ERR_IF(v[2] > 0, zcclRemoteError, "%s: rank %d failed to find its input's value range (error mode rel)",
                     zp_coll_name(a->coll), (int)v[2] - 1);
    e *= zp_rel_span(-v[0], v[1]);
  }
  /* Every reduction's SUM carries up to N quantizations (AllReduce,
   * ReduceScatter, Reduce; homomorphic or DOC). */
  if ((c->mode == zcclErrorTargetAbs || c->mode == zcclErrorTargetRel) && zp_coll_reduces(a->coll) &&
      a->op == zcclSum)
    e /= ctx->nranks;
  ZU_RETURN_ERR_IF(!(e > 0) || !isfinite(e), zcclInvalidArgument, "%s: error bound %g gives an absolute bound %g",
                   zp_coll_name(a->coll), c->eb, e);
  *eb = e;
  return zcclSuccess;
}

double zp_eb_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zcclCompression_t* c = &a->compression;
  const zc_codec_info_t* ci = zc_codec_info(c->codec);
  int lossy = c->codec == zcclCodecAuto || (ci && (ci->caps & ZC_CAP_LOSSY));
  /* Scans: the range under REL; a finite-only codec (ZFP) also checks
   * every value, under any mode (zp_eb_agreed). Each ends in an agreement. */
  int scans = (lossy && (c->mode == zcclErrorRel || c->mode == zcclErrorTargetRel)) +
              (ci && (ci->caps & ZC_CAP_FINITE) ? 1 : 0);
  if (scans == 0 || ctx->nranks < 2) return 0;
  /* The values a rank scans: count is per rank for allgather and gather,
   * per block (N of them) for reducescatter, scatter and alltoall. */
  double n = zp_call_bytes(a);
  if (a->coll == ZP_COLL_REDUCESCATTER || a->coll == ZP_COLL_SCATTER || a->coll == ZP_COLL_ALLTOALL) n *= ctx->nranks;
  /* An agreement: one small allreduce (or the root's word sent on) by
   * recursive doubling. */
  return scans * (n / zp_codec_rate(ctx, zp_range_bps(ctx)) + zp_log2_ceil(ctx->nranks) * zp_link_alpha(ctx));
}

zcclResult_t zp_eb_agreed(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t in_n, int root,
                          double* eb) {
  const zcclCompression_t* cm = &a->compression;
  const char* fn = zp_coll_name(a->coll);
  const zc_codec_info_t* ci = zc_codec_info(cm->codec);
  int finite = ci && (ci->caps & ZC_CAP_FINITE) ? 1 : 0; /* ZFP */
  /* The same setting on every rank: every rank returns here. */
  ZU_RETURN_ERR_IF(finite && cm->hasFill, zcclInvalidArgument,
                   "%s: codec=%s cannot keep fill values exactly (it has no fill handling); use codec=hz or szp, "
                   "or drop fill=", fn, ci->name);
  int mine = root < 0 || ctx->rank == root;
  /* The bound (the root's), the last rank + 1 with non-finite input, the
   * last rank + 1 whose own part failed (it still agrees, so the others
   * fail now rather than at ZCCL_TIMEOUT). */
  double v[3] = {0, 0, 0};
  zcclResult_t res = zcclSuccess;
  if (mine) {
    res = zp_eb_abs(ctx, a, in, in_n, root < 0, &v[0]);
    if (res != zcclSuccess && root < 0) return res; /* agreed: every rank returns here */
    if (res == zcclSuccess && finite) {
      double mn = 0, mx = 0;
      size_t valid = 0;
      res = zd_value_range(ctx->dev, in, in_n, a->datatype, 0, 0.0, &mn, &mx, &valid);
      if (res == zcclSuccess && valid < in_n) v[1] = ctx->rank + 1;
    }
    if (res != zcclSuccess) v[2] = ctx->rank + 1;
  }
  /* Global: the bound already is agreed; only the flags need it. */
  if (root >= 0 || finite)
    ZU_CHECK(zp_agree(ctx, root < 0 ? &v[1] : v, root < 0 ? 2 : 3, root, zp_sub(ZP_TAG_ROOT_AGREE, 0, 0)));
  if (res != zcclSuccess) return res; /* this rank's own error, after telling the others */
  ZU_RETURN_ERR_IF(v[2] > 0, root >= 0 ? zcclInvalidArgument : zcclRemoteError,
                   "%s: rank %d failed to work out the call's error bound (its own call says why)", fn, (int)v[2] - 1);
  ZU_RETURN_ERR_IF(v[1] > 0, zcclInvalidArgument,
                   "%s: codec=%s cannot carry NaN or Inf, and rank %d's input has some; use codec=hz or szp", fn,
                   ci->name, (int)v[1] - 1);
  *eb = v[0];
  return zcclSuccess;
}

zc_params_t zp_params(const zp_ctx_t* ctx, const zp_coll_args_t* a, double eb) {
  zc_params_t p = {.dtype = a->datatype, .eb = eb, .has_fill = a->compression.hasFill,
                   .fill = a->compression.fillValue, .checksum = ctx->checksum};
  return p;
}

/* Columns [lo, hi) of blocks boff/blen, clipped to each block. */
void zp_slice_of(int N, const size_t* boff, const size_t* blen, size_t lo, size_t hi, size_t* soff,
                        size_t* slen) {
  for (int b = 0; b < N; b++) {
    size_t l = blen[b] < hi ? blen[b] : hi;
    soff[b] = boff[b] + (lo < l ? lo : l);
    slen[b] = l > lo ? l - lo : 0;
  }
}

size_t zp_bound(const zp_streams_t* z, size_t n) { return z->codec->ops->bound(&z->p, n); }

size_t zp_stream_slice(const zp_ctx_t* ctx, const zc_codec_info_t* codec, const zc_params_t* p, size_t block,
                       int streams) {
  size_t room = zd_buf_largest(ctx->dev) / ((size_t)streams + 1), s = block ? block : 1;
  while (s > 1 && codec->ops->bound(p, s) > room) s /= 2;
  return s;
}

zcclResult_t zp_encode(const zp_ctx_t* ctx, const zp_streams_t* z, const void* in, size_t n, void* out, size_t cap,
                       size_t* size) {
  return zd_encode(ctx->dev, z->codec, &z->p, in, n, out, cap, size);
}

zcclResult_t zp_decode(const zp_ctx_t* ctx, const zp_streams_t* z, const void* stream, const size_t* size, void* out,
                       size_t n) {
  return zd_decode(ctx->dev, z->codec, stream, size, out, n);
}

zcclResult_t zp_encode_on(const zp_ctx_t* ctx, int lane, const zp_streams_t* z, const void* in, size_t n, void* out,
                          size_t cap, size_t* size) {
  int prev = zd_set_lane(ctx->dev, lane);
  zcclResult_t res = zp_encode(ctx, z, in, n, out, cap, size);
  zd_set_lane(ctx->dev, prev);
  return res;
}

zcclResult_t zp_decode_on(const zp_ctx_t* ctx, int lane, const zp_streams_t* z, const void* stream,
                          const size_t* size, void* out, size_t n) {
  int prev = zd_set_lane(ctx->dev, lane);
  zcclResult_t res = zp_decode(ctx, z, stream, size, out, n);
  zd_set_lane(ctx->dev, prev);
  return res;
}

zcclResult_t zp_avg_divide(const zp_ctx_t* ctx, const zp_coll_args_t* a, void* buf, size_t n) {
  if (a->op != zcclAvg) return zcclSuccess;
  return zd_divide_fill(ctx->dev, buf, n, a->datatype, ctx->nranks, a->compression.hasFill, a->compression.fillValue);
}

zcclResult_t zp_agree(const zp_ctx_t* ctx, double* v, int nv, int root, uint32_t sub) {
  zp_ctx_t on_host;
  if (ctx->host) { /* host memory, host reduction, no staging: no GPU round trip */
    on_host = *ctx;
    on_host.dev = ctx->host;
    on_host.host = NULL;
    ctx = &on_host;
  }
  double* t = NULL; /* the collectives work on pool (device) memory: copies in and out */
  ZU_CHECK(zp_tmp_get(ctx, (size_t)nv * sizeof *v, (void**)&t));
  zcclResult_t res = zd_copy(ctx->dev, t, v, (size_t)nv * sizeof *v);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  if (res != zcclSuccess) {
    zp_tmp_put(ctx, t);
    return res;
  }
  if (root < 0) {
    zp_coll_args_t r = {.coll = ZP_COLL_ALLREDUCE, .sendbuff = t, .recvbuff = t, .count = (size_t)nv,
                        .datatype = zcclFloat64, .op = zcclMax};
    res = zp_rd_allreduce_sub(ctx, &r, sub);
  } else {
    res = zp_tree_broadcast_sub(ctx, t, (size_t)nv * sizeof *v, root, sub);
  }
  if (res == zcclSuccess) res = zd_copy(ctx->dev, v, t, (size_t)nv * sizeof *v);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  zp_tmp_put(ctx, t);
  return res;
}

/* Counts raw bytes sent as wire bytes (zcclCommCompressionStats). */
void zp_count(const zp_ctx_t* ctx, size_t raw, size_t wire) {
  if (!ctx->stats) return;
  ctx->stats->raw_bytes += raw;
  ctx->stats->wire_bytes += wire;
}

/* A stream (sbuf, sbytes; standing for sraw bytes) to dst and one of up to
 * cap bytes from src into rbuf, *rbytes its length; either peer may be -1. */
int zp_stream_xfers(const zp_ctx_t* ctx, int dst, const void* sbuf, size_t sbytes, int src, void* rbuf, size_t cap,
                    uint32_t sub, zp_xfer_t x[2], int* ri) {
  int nx = 0;
  *ri = -1;
  if (dst >= 0) zp_send_at(ctx, &x[nx++], dst, sub, sbuf, sbytes);
  if (src >= 0) {
    *ri = nx;
    zp_recv_at(ctx, &x[nx++], src, sub, rbuf, cap);
    x[*ri].var = 1;
  }
  return nx;
}

zcclResult_t zp_stream_sendrecv(const zp_ctx_t* ctx, const char* what, int dst, const void* sbuf,
                                       size_t sbytes, size_t sraw, int src, void* rbuf, size_t cap, size_t* rbytes,
                                       uint32_t sub) {
  zp_xfer_t x[2];
  int ri, nx = zp_stream_xfers(ctx, dst, sbuf, sbytes, src, rbuf, cap, sub, x, &ri);
  ZU_CHECK(zp_xfers_run(ctx, what, x, nx));
  if (ri >= 0) *rbytes = x[ri].req.length;
  if (dst >= 0) zp_count(ctx, sraw, sbytes);
  return zcclSuccess;
}

/* At most every ZP_POLL_S: the codec calls between chunks of 4096 values,
 * some microseconds apart, and each transport progress over TCP is a
 * system call (epoll) that would cost more than the codec's work. */
#define ZP_POLL_S 50e-6
void zp_poll(void* arg) {
  zp_poll_t* p = arg;
  double now = zu_now();
  if (now - p->polled < ZP_POLL_S) return;
  p->polled = now;
  (void)zt_progress(p->w);
}

/* One ring step of streams: to the right neighbour, from the left. */
zcclResult_t zp_stream_xchg(const zp_ctx_t* ctx, const char* what, const void* sbuf, size_t sbytes,
                                   size_t sraw, void* rbuf, size_t cap, size_t* rbytes, uint32_t sub) {
  int N = ctx->nranks, r = ctx->rank;
  return zp_stream_sendrecv(ctx, what, (r + 1) % N, sbuf, sbytes, sraw, (r + N - 1) % N, rbuf, cap, rbytes, sub);
}


/* The bound from a->sendbuff[0, in_n) (eb_from: not at all, this rank's
 * values, every rank's), slices of a block of `block` elements small
 * enough that `fit` streams fit the pool (the same on every rank, so
 * slices pair up across ranks), nbuf streams and maybe a spare. */
zcclResult_t zp_streams_get(const zp_ctx_t* ctx, const zp_coll_args_t* a, int eb_from, size_t in_n,
                                   size_t block, int fit, int nbuf, int spare, zp_streams_t* z) {
  double eb = 1.0;
  memset(z, 0, sizeof *z);
  z->codec = zc_codec_info(a->compression.codec);
  ZU_RETURN_ERR_IF(z->codec == NULL || z->codec->ops == NULL, zcclInternalError, "%s: codec %d has no operations",
                   zp_coll_name(a->coll), a->compression.codec);
  /* A finite-only codec (ZFP) refuses NaN, Inf and fill values on every
   * rank before anything moves; the receive-only ranks learn the root's
   * tolerance with that, so every rank sizes the same streams. A lossless
   * one has no bound to agree on. */
  if (z->codec->caps & ZC_CAP_FINITE)
    ZU_CHECK(zp_eb_agreed(ctx, a, a->sendbuff, eb_from == ZP_EB_NONE ? 0 : in_n,
                          eb_from == ZP_EB_GLOBAL ? -1 : a->root, &eb));
  else if (eb_from != ZP_EB_NONE && (z->codec->caps & ZC_CAP_LOSSY))
    ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, in_n, eb_from == ZP_EB_GLOBAL, &eb));
  z->p = zp_params(ctx, a, eb);
  z->slice = zp_stream_slice(ctx, z->codec, &z->p, block, fit);
  z->cap = zp_bound(z, z->slice);
  ZU_CHECK(zp_tmp_get(ctx, (size_t)nbuf * z->cap, (void**)&z->s));
  if (spare) ZU_CHECK(zp_tmp_get(ctx, z->cap, (void**)&z->spare));
  return zcclSuccess;
}

void zp_streams_put(const zp_ctx_t* ctx, zp_streams_t* z) {
  (void)zd_sync(ctx->dev); /* nothing queued may outlive the buffers */
  zp_tmp_put(ctx, z->s);
  zp_tmp_put(ctx, z->spare);
}
