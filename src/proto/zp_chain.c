/* Pipelined chains: broadcast from the root down the ranks in relative
 * order, and reduce from the last rank up to the root. Pieces are sized
 * from the link model (zp_chain_piece), so every rank cuts the same. */
#include <math.h>
#include <string.h>

#include "zp_algo.h"

size_t zp_chain_piece(const zp_ctx_t* ctx, size_t bytes) {
  /* Sized as if each piece paid a latency, (N - 2 + k) (alpha + bytes/k/B):
   * best at k = sqrt((N - 2) bytes / (alpha B)). The price (zp_chain_cost)
   * overlaps the latencies, whose optimum, pieces of alpha B bytes, would
   * be thousands of messages whose costs on the cores the model does not
   * see. Pieces of 64 KiB ... 4 MiB
   * in multiples of 4 KiB (so of every element size). The link model is
   * the same on every rank, so is the piece. */
  double alpha = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double hops = ctx->nranks > 3 ? ctx->nranks - 2 : 1;
  double k = sqrt(hops * (double)bytes / (alpha * B));
  double piece = k > 1 ? (double)bytes / k : (double)bytes;
  /* Within what goes eagerly: a latency read high gave pieces above 1 MiB,
   * which went by rendezvous (docs/measurements/collectives.md). */
  size_t cap = zp_eager_cap(ctx, 4 << 20);
  size_t p = piece < (64 << 10) ? (64 << 10) : piece > (double)cap ? cap : (size_t)piece;
  return (p + 4095) & ~(size_t)4095; /* <= cap, a multiple of 4 KiB */
}

static zcclResult_t zp_chain_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  uint8_t* buf = a->recvbuff;
  if (v == 0 && a->sendbuff != a->recvbuff) {
    ZU_CHECK(zd_copy(ctx->dev, buf, a->sendbuff, bytes));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  int prev = v > 0 ? (ctx->rank + N - 1) % N : -1, next = v < N - 1 ? (ctx->rank + 1) % N : -1;
  size_t P = zp_chain_piece(ctx, bytes), npieces = bytes ? (bytes + P - 1) / P : 0;
  /* Piece k is forwarded while piece k+1 arrives, and the receive of piece
   * k+2 is posted before piece k is forwarded, so the next piece never
   * waits for its receive to be posted (a rendezvous round trip a piece
   * otherwise). */
  zp_xfer_t x[3]; /* rx[2], then the send: cancelled together */
  memset(x, 0, sizeof x);
  zp_xfer_t *rx = x, *send = &x[2];
  int sending = 0;
  zcclResult_t res = zcclSuccess;
#define ZP_PIECE(k) (buf + (k) * P), ((k) * P + P < bytes ? P : bytes - (k) * P)
  for (size_t k = 0; k < 2 && k < npieces && prev >= 0; k++) {
    zp_recv_at(ctx, &rx[k], prev, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), ZP_PIECE(k));
    ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[k], 1), res, fail);
  }
  for (size_t k = 0; k < npieces; k++) {
    if (prev >= 0) {
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain broadcast", &rx[k % 2], 1), res, fail);
      if (k + 2 < npieces) {
        zp_recv_at(ctx, &rx[k % 2], prev, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)(k + 2)), ZP_PIECE(k + 2));
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[k % 2], 1), res, fail);
      }
    }
    if (sending) {
      sending = 0;
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain broadcast", send, 1), res, fail);
    }
    if (next >= 0) {
      zp_send_at(ctx, send, next, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), ZP_PIECE(k));
      sending = 1;
      ZU_CHECK_GOTO(zp_xfers_post(ctx, send, 1), res, fail);
    }
  }
#undef ZP_PIECE
  if (sending) return zp_xfers_wait(ctx, "chain broadcast", send, 1);
  return zcclSuccess;
fail:
  zp_xfers_cancel(ctx, x, 3); /* one pass; completed and unposted ones are skipped */
  return res;
}

/* Chain from the last rank (relative) to the root: each receives the
 * partial of the ranks after it, adds its own, passes it on; the root's
 * result is the same sum order on every call. Pipelined in pieces, as the
 * chain broadcast: the receives of the next two pieces are posted before a
 * piece is reduced, and a partial goes on while the next piece is reduced
 * (two partials in flight at most), so no rank waits on its neighbour's
 * handshake between pieces. The last rank sends its input as it is. */
static zcclResult_t zp_chain_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  zcclRedOp_t op = zp_reduce_op(a->op);
  int from = v < N - 1 ? (ctx->rank + 1) % N : -1, to = v > 0 ? (ctx->rank + N - 1) % N : -1;
  /* Four temporaries of a piece (two received, two partials): no larger
   * than the pool holds. */
  size_t piece = zp_chain_piece(ctx, n * es), room = zd_buf_largest(ctx->dev) / 5 / 64 * 64;
  piece = (piece < room ? piece : room) / es;
  if (piece == 0) piece = 1;
  size_t npieces = n ? (n + piece - 1) / piece : 0;
  void* t[4] = {NULL, NULL, NULL, NULL}; /* rtmp[2], acc[2] */
  zp_xfer_t x[4]; /* rx[2], sx[2]: cancelled together */
  memset(x, 0, sizeof x);
  zp_xfer_t *rx = x, *sx = x + 2;
  int sposted[2] = {0, 0};
  zcclResult_t res = zcclSuccess;
  for (int i = 0; i < 4 && from >= 0; i++)
    if (i < 2 || v > 0) ZU_CHECK_GOTO(zp_tmp_get(ctx, piece * es, &t[i]), res, out);
  size_t lo, m;
  for (size_t k = 0; k < 2 && k < npieces && from >= 0; k++) {
    m = zp_piece(n, piece, k, &lo);
    zp_recv_at(ctx, &rx[k], from, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), t[k], m * es);
    ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[k], 1), res, out);
  }
  for (size_t k = 0; k < npieces; k++) {
    int j = (int)(k % 2);
    m = zp_piece(n, piece, k, &lo);
    if (sposted[j]) { /* piece k-2's partial is out before its slot (and acc[j]) is reused */
      sposted[j] = 0; /* a failed wait cancels its own */
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain reduce", &sx[j], 1), res, out);
    }
    const uint8_t* mine = zp_at(a->sendbuff, lo, es);
    const uint8_t* partial = mine; /* what goes on to `to` */
    if (from >= 0 || v == 0) {
      uint8_t* dst = v == 0 ? zp_at(a->recvbuff, lo, es) : t[2 + j];
      if (from >= 0) {
        ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain reduce", &rx[j], 1), res, out);
        ZU_CHECK_GOTO(zd_reduce(ctx->dev, dst, mine, t[j], m, a->datatype, op), res, out);
      } else if (dst != mine) { /* one rank */
        ZU_CHECK_GOTO(zd_copy(ctx->dev, dst, mine, m * es), res, out);
      }
      if (v == 0 && a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, m, a->datatype, N), res, out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
      if (from >= 0 && k + 2 < npieces) {
        size_t o2, m2 = zp_piece(n, piece, k + 2, &o2);
        zp_recv_at(ctx, &rx[j], from, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)(k + 2)), t[j], m2 * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[j], 1), res, out);
      }
      partial = dst;
    }
    if (to >= 0) {
      zp_send_at(ctx, &sx[j], to, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), partial, m * es);
      sposted[j] = 1;
      ZU_CHECK_GOTO(zp_xfers_post(ctx, &sx[j], 1), res, out);
    }
  }
  for (int j = 0; j < 2; j++)
    if (sposted[j]) {
      sposted[j] = 0;
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain reduce", &sx[j], 1), res, out);
    }
out:
  zp_xfers_cancel(ctx, x, 4); /* one pass; completed and unposted ones are skipped */
  for (int i = 0; i < 4; i++) zp_tmp_put(ctx, t[i]);
  return res;
}

/* The pieces are posted back to back (receives two ahead), so their
 * latencies overlap (zp_pipeline_cost); a latency each put the 256 KiB
 * chain at 10 Gbit/s above the tree, which it beats
 * (docs/measurements/collectives.md). */
double zp_chain_cost(const zp_ctx_t* ctx, double n, int reduces) {
  double B = zp_link_bandwidth(ctx);
  double piece = (double)zp_chain_piece(ctx, (size_t)n), k = n / piece < 1 ? 1 : n / piece;
  double p = n / k / B + (reduces ? n / k / zp_reduce_bps(ctx) : 0);
  return zp_pipeline_cost(ctx, ctx->nranks - 1, k, p, p);
}

static double zp_chain_broadcast_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chain_cost(ctx, zp_call_bytes(a), 0);
}

static double zp_chain_reduce_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chain_cost(ctx, zp_call_bytes(a), 1);
}

const zp_algo_t zp_algo_chain_broadcast = {"chain", "pipelined chain, pieces sized from the link", ZP_COLL_BROADCAST,
                                           0, 0, NULL, zp_chain_broadcast_cost, zp_chain_broadcast};
const zp_algo_t zp_algo_chain_reduce = {"chain", "pipelined chain, pieces sized from the link", ZP_COLL_REDUCE, 0, 0,
                                        NULL, zp_chain_reduce_cost, zp_chain_reduce};
