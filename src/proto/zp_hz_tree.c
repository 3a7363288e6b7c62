/* The homomorphic binomial reduce (hZCCL): each rank compresses its input
 * once and adds its children's streams to it without decompressing. */
#include <string.h>

#include "zp_stream.h"

/* Homomorphic binomial reduce: each rank compresses its input once, adds
 * its children's streams to it in a fixed order (nearest first) without
 * decompressing, and sends the sum up; the root decompresses. */
static zcclResult_t zp_hz_tree_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N), lg = zp_log2_ceil(N);
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[lg + 1], m;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "compressed reduce";
  int child[32], end[32], nc = zp_tree_children(v, N, child, end);
  zp_xfer_t x[lg + 1];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, lg + 2, nc + 1, 0, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    ZU_CHECK_GOTO(zd_encode(ctx->dev, z.codec, &z.p, zp_at(a->sendbuff, lo, es), m, zp_stream(&z, 0), z.cap, &sizes[0]),
                  res, out);
    for (int i = 0; i < nc; i++) {
      zp_recv_at(ctx, &x[i], (child[i] + a->root) % N, ZP_SUB_ALGO, zp_stream(&z, i + 1), z.cap);
      x[i].var = 1;
    }
    ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nc), res, out);
    for (int i = 0; i < nc; i++) {
      sizes[i + 1] = x[i].req.length;
      ZU_CHECK_GOTO(zd_reduce_encoded(ctx->dev, z.codec, op, zp_stream(&z, 0), &sizes[0], zp_stream(&z, i + 1),
                                      &sizes[i + 1], zp_stream(&z, 0), z.cap, &sizes[0]),
                    res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (v) {
      int parent = (v - zp_tree_span(v, N) + a->root) % N;
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, parent, zp_stream(&z, 0), sizes[0], m * es, -1, NULL, 0, NULL,
                                       ZP_SUB_ALGO),
                    res, out);
    } else {
      uint8_t* dst = zp_at(a->recvbuff, lo, es);
      ZU_CHECK_GOTO(zd_decode(ctx->dev, z.codec, zp_stream(&z, 0), &sizes[0], dst, m), res, out);
      ZU_CHECK_GOTO(zp_avg_divide(ctx, a, dst, m), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    }
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Compress, ceil(log2 N) levels each adding a stream of n and sending one
 * up, decompress. */
static double zp_hz_tree_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a), q = zp_ratio(ctx), D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), H = zp_codec_rate(ctx, zp_hop_bps(ctx));
  return (n / C + n / D) + zp_log2_ceil(ctx->nranks) * (n / H + zp_hop_alpha(ctx) + n / (q * zp_link_bandwidth(ctx)));
}

const zp_algo_t zp_algo_hz_tree_reduce = {"tree", "homomorphic binomial tree", ZP_COLL_REDUCE, ZP_NEEDS_HOMOMORPHIC, 0,
                                          NULL, zp_hz_tree_cost, zp_hz_tree_reduce};
