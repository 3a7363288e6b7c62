/* Rooted collectives: binomial-tree and pipelined-chain broadcast, chain
 * reduce, and the flat gather and scatter (the root talks to every rank at
 * once; all messages in flight together). Ranks are renumbered relative to
 * the root (v = 0 is the root). */
#include <string.h>

#include "zp_algo.h"

/* Pieces of a pipelined chain. */
#define ZP_CHAIN_PIECE (1u << 20)

zcclResult_t zp_tree_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (v == 0 && a->sendbuff != a->recvbuff) {
    ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  int mask = 1;
  while (mask < N) {
    if (v & mask) {
      int parent = (v - mask + a->root) % N;
      ZU_CHECK(zp_sendrecv(ctx, "tree broadcast", -1, NULL, 0, parent, a->recvbuff, bytes, 0));
      break;
    }
    mask <<= 1;
  }
  /* Children: v + m for every m below the bit this rank received on. */
  zp_xfer_t x[32];
  int nx = 0;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < N) zp_send_at(ctx, &x[nx++], (v + mask + a->root) % N, 0, a->recvbuff, bytes);
  return zp_xfers_run(ctx, "tree broadcast", x, nx);
}

zcclResult_t zp_chain_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  uint8_t* buf = a->recvbuff;
  if (v == 0 && a->sendbuff != a->recvbuff) {
    ZU_CHECK(zd_copy(ctx->dev, buf, a->sendbuff, bytes));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  int prev = v > 0 ? (ctx->rank + N - 1) % N : -1, next = v < N - 1 ? (ctx->rank + 1) % N : -1;
  size_t npieces = bytes ? (bytes + ZP_CHAIN_PIECE - 1) / ZP_CHAIN_PIECE : 0;
  /* Piece k is forwarded while piece k+1 arrives. */
  zp_xfer_t send = {0};
  int sending = 0;
  for (size_t k = 0; k < npieces; k++) {
    size_t off = k * ZP_CHAIN_PIECE, len = bytes - off < ZP_CHAIN_PIECE ? bytes - off : ZP_CHAIN_PIECE;
    zp_xfer_t x[2];
    int nx = 0;
    if (prev >= 0) zp_recv_at(ctx, &x[nx++], prev, (uint32_t)k, buf + off, len);
    if (nx) ZU_CHECK(zp_xfers_run(ctx, "chain broadcast", x, nx));
    if (sending) ZU_CHECK(zp_xfers_wait(ctx, "chain broadcast", &send, 1));
    sending = 0;
    if (next >= 0) {
      zp_send_at(ctx, &send, next, (uint32_t)k, buf + off, len);
      ZU_CHECK(zp_xfers_post(ctx, &send, 1));
      sending = 1;
    }
  }
  if (sending) ZU_CHECK(zp_xfers_wait(ctx, "chain broadcast", &send, 1));
  return zcclSuccess;
}

/* Chain from the last rank (relative) to the root: each receives the
 * partial of the ranks after it, adds its own, passes it on. Pipelined in
 * pieces; the root's result is the same sum order on every call. */
zcclResult_t zp_chain_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t es = zu_dtype_size(a->datatype), n = a->count;
  zcclRedOp_t op = zp_reduce_op(a->op);
  int from = v < N - 1 ? (ctx->rank + 1) % N : -1, to = v > 0 ? (ctx->rank + N - 1) % N : -1;
  size_t piece = ZP_CHAIN_PIECE / es ? ZP_CHAIN_PIECE / es : 1;
  void *rtmp = NULL, *acc = NULL;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_tmp_get(ctx, piece * es, &rtmp), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, piece * es, &acc), res, out);
  for (size_t lo = 0, k = 0; lo < n; lo += piece, k++) {
    size_t m = n - lo < piece ? n - lo : piece;
    const uint8_t* mine = zp_at(a->sendbuff, lo, es);
    uint8_t* dst = v == 0 ? zp_at(a->recvbuff, lo, es) : acc;
    if (from >= 0) {
      ZU_CHECK_GOTO(zp_sendrecv(ctx, "chain reduce", -1, NULL, 0, from, rtmp, m * es, (uint32_t)k), res, out);
      ZU_CHECK_GOTO(zd_reduce(ctx->dev, dst, mine, rtmp, m, a->datatype, op), res, out);
    } else if (dst != mine) {
      ZU_CHECK_GOTO(zd_copy(ctx->dev, dst, mine, m * es), res, out);
    }
    if (v == 0 && a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, dst, m, a->datatype, N), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (to >= 0) ZU_CHECK_GOTO(zp_sendrecv(ctx, "chain reduce", to, dst, m * es, -1, NULL, 0, (uint32_t)k), res, out);
  }
  res = zcclSuccess;
out:
  zp_tmp_put(ctx, rtmp);
  zp_tmp_put(ctx, acc);
  return res;
}

/* The root receives (gather) or sends (scatter) every block at once. */
static zcclResult_t zp_linear(const zp_ctx_t* ctx, const zp_coll_args_t* a, int gather) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bytes = a->count * es;
  const char* what = gather ? "gather" : "scatter";
  if (r != a->root)
    return gather ? zp_sendrecv(ctx, what, a->root, a->sendbuff, bytes, -1, NULL, 0, 0)
                  : zp_sendrecv(ctx, what, -1, NULL, 0, a->root, a->recvbuff, bytes, 0);
  zp_xfer_t x[N];
  int nx = 0;
  for (int p = 0; p < N; p++) {
    if (p == r) continue;
    if (gather)
      zp_recv_at(ctx, &x[nx++], p, 0, zp_at(a->recvbuff, (size_t)p * a->count, es), bytes);
    else
      zp_send_at(ctx, &x[nx++], p, 0, zp_at(a->sendbuff, (size_t)p * a->count, es), bytes);
  }
  const uint8_t* own_src = gather ? a->sendbuff : zp_at(a->sendbuff, (size_t)r * a->count, es);
  uint8_t* own_dst = gather ? zp_at(a->recvbuff, (size_t)r * a->count, es) : a->recvbuff;
  if (own_src != own_dst) ZU_CHECK(zd_copy(ctx->dev, own_dst, own_src, bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  return zp_xfers_run(ctx, what, x, nx);
}

zcclResult_t zp_linear_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_linear(ctx, a, 1); }
zcclResult_t zp_linear_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_linear(ctx, a, 0); }

/* AlltoAll by pairwise exchange: step s sends to r+s and receives from r-s. */
zcclResult_t zp_pairwise_alltoall(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bytes = a->count * es;
  ZU_CHECK(zd_copy(ctx->dev, zp_at(a->recvbuff, (size_t)r * a->count, es), zp_at(a->sendbuff, (size_t)r * a->count, es),
                   bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  for (int s = 1; s < N; s++) {
    int to = (r + s) % N, from = (r + N - s) % N;
    ZU_CHECK(zp_sendrecv(ctx, "pairwise alltoall", to, zp_at(a->sendbuff, (size_t)to * a->count, es), bytes, from,
                         zp_at(a->recvbuff, (size_t)from * a->count, es), bytes, (uint32_t)s));
  }
  return zcclSuccess;
}
