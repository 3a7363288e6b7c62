/* Linear gather and scatter (the root exchanges with every rank, all
 * messages in flight together) and the pairwise-exchange alltoall. */
#include <string.h>

#include "zp_algo.h"

/* The root receives (gather) or sends (scatter) every block at once. */
static zcclResult_t zp_linear(const zp_ctx_t* ctx, const zp_coll_args_t* a, int gather) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bytes = a->count * es;
  const char* what = gather ? "gather" : "scatter";
  if (r != a->root)
    return gather ? zp_sendrecv(ctx, what, a->root, a->sendbuff, bytes, -1, NULL, 0, ZP_SUB_ALGO)
                  : zp_sendrecv(ctx, what, -1, NULL, 0, a->root, a->recvbuff, bytes, ZP_SUB_ALGO);
  zp_xfer_t x[N];
  int nx = 0;
  for (int p = 0; p < N; p++) {
    if (p == r) continue;
    if (gather)
      zp_recv_at(ctx, &x[nx++], p, ZP_SUB_ALGO, zp_at(a->recvbuff, (size_t)p * a->count, es), bytes);
    else
      zp_send_at(ctx, &x[nx++], p, ZP_SUB_ALGO, zp_at(a->sendbuff, (size_t)p * a->count, es), bytes);
  }
  const uint8_t* own_src = gather ? a->sendbuff : zp_at(a->sendbuff, (size_t)r * a->count, es);
  uint8_t* own_dst = gather ? zp_at(a->recvbuff, (size_t)r * a->count, es) : a->recvbuff;
  if (own_src != own_dst) ZU_CHECK(zd_copy(ctx->dev, own_dst, own_src, bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  return zp_xfers_run(ctx, what, x, nx);
}

static zcclResult_t zp_linear_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_linear(ctx, a, 1); }

static zcclResult_t zp_linear_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_linear(ctx, a, 0); }

/* AlltoAll by pairwise exchange: step s sends to r+s and receives from r-s. */
static zcclResult_t zp_pairwise_alltoall(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), bytes = a->count * es;
  ZU_CHECK(zd_copy(ctx->dev, zp_at(a->recvbuff, (size_t)r * a->count, es), zp_at(a->sendbuff, (size_t)r * a->count, es),
                   bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  for (int s = 1; s < N; s++) {
    int to = (r + s) % N, from = (r + N - s) % N;
    ZU_CHECK(zp_sendrecv(ctx, "pairwise alltoall", to, zp_at(a->sendbuff, (size_t)to * a->count, es), bytes, from,
                         zp_at(a->recvbuff, (size_t)from * a->count, es), bytes, zp_sub(ZP_TAG_ALGO, (uint32_t)s, 0)));
  }
  return zcclSuccess;
}

/* N-1 messages of one block (n bytes), one at a time on the root's link. */
static double zp_linear_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return (ctx->nranks - 1) * (zp_link_alpha(ctx) + zp_call_bytes(a) / zp_link_bandwidth(ctx));
}

const zp_algo_t zp_algo_linear_gather = {"linear", "the root receives every block at once", ZP_COLL_GATHER, 0, 0,
                                         NULL, zp_linear_cost, zp_linear_gather};
const zp_algo_t zp_algo_linear_scatter = {"linear", "the root sends every block at once", ZP_COLL_SCATTER, 0, 0, NULL,
                                          zp_linear_cost, zp_linear_scatter};
const zp_algo_t zp_algo_pairwise_alltoall = {"pairwise", "N-1 pairwise exchanges", ZP_COLL_ALLTOALL, 0, 0, NULL,
                                             zp_linear_cost, zp_pairwise_alltoall};
