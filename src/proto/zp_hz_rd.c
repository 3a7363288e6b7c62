/* Homomorphic recursive-doubling allreduce (hZCCL's and ghZCCL's choice
 * for small messages or many ranks): every rank compresses its whole input
 * once, on the grid every rank shares (REL: the global range), and log2(P)
 * exchanges of whole streams, each added to the local one without
 * decompressing (zd_reduce_encoded), give every rank the compressed
 * total, which it decompresses. P is the largest power of two <= N; of the first 2(N - P)
 * ranks, the even ones hand their stream to the odd neighbour first and get
 * the finished stream back at the end (zp_rd.c's scheme, with streams).
 *
 * Bit-identical outputs: both partners of an exchange hop the same two
 * streams in the same order (the lower rank's first), so they end with the
 * same bytes; by induction every rank holds, and decompresses, the same
 * final stream. (The integer sums would commute anyway; the exception
 * positions' raw float results and their NaNs need the fixed order.)
 *
 * Bounds: each input value is quantized once, so SUM is within N eb of the
 * exact sum, AVG within eb (plus the division's rounding), MAX/MIN within
 * eb. Fill values and non-finite values travel exactly. */
#include "zp_stream.h"

/* Tags: the slice is the chunk; step 0 the fold-in, 1 + i round i,
 * ZP_TAG_STEP_LAST the fold-out (as zp_rd_allreduce_sub). */
#define ZP_HZ_RD_SUB(k, step) zp_sub(ZP_TAG_ALGO, (uint32_t)(step), (k))
#define ZP_HZ_RD_FOLD_OUT ZP_TAG_STEP_LAST

static zcclResult_t zp_hz_rd_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, p = zp_pow2_below(N), rem = N - p;
  int v = zp_rd_vrank(r, rem); /* -1: this rank folds out */
  size_t es = zu_dtype_size(a->datatype), n = a->count, raw, size = 0, rsize = 0, m;
  zcclRedOp_t op = zp_reduce_op(a->op);
  const char* what = "compressed recursive doubling";
  zp_streams_t z;
  zcclResult_t res;
  /* Own stream and the received one; slices sized for both, the same on
   * every rank, so the exchanges pair up. */
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, 2, 1, 1, &z), res, out);
  uint32_t k = 0;
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice, k++) {
    uint8_t* own = z.s;
    raw = m * es;
    ZU_CHECK_GOTO(zd_encode(ctx->dev, z.codec, &z.p, zp_at(a->sendbuff, lo, es), m, own, z.cap, &size), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (v < 0) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, r + 1, own, size, raw, -1, NULL, 0, NULL, ZP_HZ_RD_SUB(k, 0)), res,
                    out);
    } else {
      if (r < 2 * rem) { /* the even neighbour's stream, added first (it is the lower rank) */
        ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, -1, NULL, 0, 0, r - 1, z.spare, z.cap, &rsize, ZP_HZ_RD_SUB(k, 0)),
                      res, out);
        ZU_CHECK_GOTO(zd_reduce_encoded(ctx->dev, z.codec, op, z.spare, &rsize, own, &size, own, z.cap, &size), res,
                      out);
        ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      }
      for (int i = 0, mask = 1; mask < p; mask <<= 1, i++) {
        int peer = zp_rd_rank(v ^ mask, rem);
        ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, peer, own, size, raw, peer, z.spare, z.cap, &rsize,
                                         ZP_HZ_RD_SUB(k, 1 + i)),
                      res, out);
        if (peer < r)
          ZU_CHECK_GOTO(zd_reduce_encoded(ctx->dev, z.codec, op, z.spare, &rsize, own, &size, own, z.cap, &size), res,
                        out);
        else
          ZU_CHECK_GOTO(zd_reduce_encoded(ctx->dev, z.codec, op, own, &size, z.spare, &rsize, own, z.cap, &size), res,
                        out);
        ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* size and the spare are read next */
      }
    }
    if (r < 2 * rem) { /* the finished stream to the rank that folded out */
      uint32_t sub = ZP_HZ_RD_SUB(k, ZP_HZ_RD_FOLD_OUT);
      if (v < 0)
        ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, -1, NULL, 0, 0, r + 1, own, z.cap, &size, sub), res, out);
      else
        ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, r - 1, own, size, raw, -1, NULL, 0, NULL, sub), res, out);
    }
    uint8_t* dst = zp_at(a->recvbuff, lo, es);
    ZU_CHECK_GOTO(zd_decode(ctx->dev, z.codec, own, &size, dst, m), res, out);
    ZU_CHECK_GOTO(zp_avg_divide(ctx, a, dst, m), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* own is compressed into next */
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Compress the whole input once, log2(P) rounds each sending a whole
 * stream and adding the received one, plus, for N not a power of two, the
 * fold's stream in (with its add) and out; decompress once. Fewer
 * latencies than the ring (log2 P against 2(N-1)), but every round moves
 * and adds all n: small messages or many ranks. */
static double zp_hz_rd_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a);
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), H = zp_codec_rate(ctx, zp_hop_bps(ctx)), q = zp_ratio(ctx);
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  int lg = zp_log2_floor(ctx->nranks), pow2 = (1 << lg) == ctx->nranks;
  double fold = pow2 ? 0 : 2 * (al_s + n / (q * B)) + n / H;
  return n / C + lg * (al_s + n / (q * B) + n / H) + fold + n / D;
}

const zp_algo_t zp_algo_hz_rd_allreduce = {"rd", "homomorphic recursive doubling", ZP_COLL_ALLREDUCE,
                                           ZP_NEEDS_HOMOMORPHIC, 0, NULL, zp_hz_rd_cost, zp_hz_rd_allreduce};
