/* Binomial trees: broadcast, reduce, gather and scatter, and the
 * scatter+allgather broadcast (a binomial scatter, then a ring allgather).
 * Ranks are renumbered relative to the root (v = 0 is the root).
 *
 * The binomial tree: v's parent is v without its lowest set bit; its
 * children are v + m for the powers of two m below that bit (below N for
 * the root), and the subtree of a child c = v + m is [c, min(c + m, N)).
 * Gather and scatter keep a subtree's blocks contiguous in relative order,
 * so each tree edge carries one message. */
#include <math.h>
#include <string.h>

#include "zp_algo.h"

zcclResult_t zp_tree_broadcast_sub(const zp_ctx_t* ctx, void* buf, size_t bytes, int root, uint32_t sub) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - root, N);
  int mask = 1;
  while (mask < N) {
    if (v & mask) {
      int parent = (v - mask + root) % N;
      ZU_CHECK(zp_sendrecv(ctx, "tree broadcast", -1, NULL, 0, parent, buf, bytes, sub));
      break;
    }
    mask <<= 1;
  }
  /* Children: v + m for every m below the bit this rank received on. */
  zp_xfer_t x[32];
  int nx = 0;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < N) zp_send_at(ctx, &x[nx++], (v + mask + root) % N, sub, buf, bytes);
  return zp_xfers_run(ctx, "tree broadcast", x, nx);
}

static zcclResult_t zp_tree_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (ctx->rank == a->root && a->sendbuff != a->recvbuff) {
    ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  return zp_tree_broadcast_sub(ctx, a->recvbuff, bytes, a->root, ZP_SUB_ALGO);
}

static int zp_tree_size(int v, int N) { /* ranks in v's subtree */
  int s = zp_tree_span(v, N);
  return s < N - v ? s : N - v;
}
static int zp_abs(const zp_ctx_t* ctx, const zp_coll_args_t* a, int v) { return (v + a->root) % ctx->nranks; }

/* van de Geijn's broadcast for large messages: a binomial scatter of N
 * pieces (relative rank j gets piece j), then a ring allgather of the
 * pieces, all in recvbuff. Each rank sends about 2 (N-1)/N of the buffer,
 * against log2(N) times the buffer for the binomial tree. */
static zcclResult_t zp_scatter_allgather_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  uint8_t* buf = a->recvbuff;
  if (v == 0 && a->sendbuff != a->recvbuff) ZU_CHECK(zd_copy(ctx->dev, buf, a->sendbuff, bytes));
  ZU_CHECK(zd_sync(ctx->dev));
  if (N == 1) return zcclSuccess;
  size_t boff[N + 1], blen[N];
  for (int j = 0; j <= N; j++) boff[j] = zp_off(bytes, N, j);
  for (int j = 0; j < N; j++) blen[j] = boff[j + 1] - boff[j];
  int span = zp_tree_span(v, N), size = zp_tree_size(v, N);
  if (v) {
    int parent = zp_abs(ctx, a, v - span);
    ZU_CHECK(zp_sendrecv(ctx, "scatter-allgather broadcast", -1, NULL, 0, parent, buf + boff[v],
                         boff[v + size] - boff[v], ZP_SUB_ALGO));
  }
  zp_xfer_t x[32];
  int child[32], end[32], nx = zp_tree_children(v, N, child, end);
  for (int i = 0; i < nx; i++) /* farthest (largest subtree) first */
    zp_send_at(ctx, &x[i], zp_abs(ctx, a, child[nx - 1 - i]), ZP_SUB_ALGO, buf + boff[child[nx - 1 - i]],
               boff[end[nx - 1 - i]] - boff[child[nx - 1 - i]]);
  /* The allgather rewrites the children's pieces (same bytes): the sends
   * finish first. */
  ZU_CHECK(zp_xfers_run(ctx, "scatter-allgather broadcast", x, nx));
  return zp_ring_allgather_blocks(ctx, buf, 1, boff, blen, v, zp_sub(ZP_TAG_NESTED_RING, 0, 0));
}

/* Binomial reduce for small messages: each rank waits for its children's
 * partials (all in flight together), folds them into its own in a fixed
 * order (own, then the children from nearest), and passes the result up. */
static zcclResult_t zp_tree_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t es = zu_dtype_size(a->datatype), n = a->count, bytes = n * es;
  zcclRedOp_t op = zp_reduce_op(a->op);
  int span = zp_tree_span(v, N), nc = 0;
  void* tmp[32] = {NULL};
  zp_xfer_t x[32];
  zcclResult_t res = zcclSuccess;
  int child[32], end[32], nchild = zp_tree_children(v, N, child, end);
  for (; nc < nchild; nc++) {
    ZU_CHECK_GOTO(zp_tmp_get(ctx, bytes, &tmp[nc]), res, out);
    zp_recv_at(ctx, &x[nc], zp_abs(ctx, a, child[nc]), ZP_SUB_ALGO, tmp[nc], bytes);
  }
  ZU_CHECK_GOTO(zp_xfers_run(ctx, "tree reduce", x, nc), res, out);
  uint8_t* acc = (uint8_t*)a->sendbuff;
  if (v == 0) {
    acc = a->recvbuff;
  } else if (nc > 0) {
    ZU_CHECK_GOTO(zp_tmp_get(ctx, bytes, &tmp[nc]), res, out);
    acc = tmp[nc];
  }
  if (nc == 0 && acc != a->sendbuff) ZU_CHECK_GOTO(zd_copy(ctx->dev, acc, a->sendbuff, bytes), res, out);
  for (int k = 0; k < nc; k++)
    ZU_CHECK_GOTO(zd_reduce(ctx->dev, acc, k ? acc : a->sendbuff, tmp[k], n, a->datatype, op), res, out);
  if (v == 0 && a->op == zcclAvg) ZU_CHECK_GOTO(zd_divide(ctx->dev, acc, n, a->datatype, N), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  if (v) res = zp_sendrecv(ctx, "tree reduce", zp_abs(ctx, a, v - span), acc, bytes, -1, NULL, 0, ZP_SUB_ALGO);
out:
  for (int k = 0; k <= nc && k < 32; k++) zp_tmp_put(ctx, tmp[k]);
  return res;
}

/* Relative blocks [0, N) of rel <-> absolute blocks of abs (block j is
 * rank j + root's): two copies around the wrap. */
static zcclResult_t zp_rotate(const zp_ctx_t* ctx, const zp_coll_args_t* a, uint8_t* rel, uint8_t* abs, size_t blk,
                              int to_abs) {
  size_t N = (size_t)ctx->nranks, R = (size_t)a->root;
  uint8_t *d0 = to_abs ? abs + R * blk : rel, *s0 = to_abs ? rel : abs + R * blk;
  uint8_t *d1 = to_abs ? abs : rel + (N - R) * blk, *s1 = to_abs ? rel + (N - R) * blk : abs;
  ZU_CHECK(zd_copy(ctx->dev, d0, s0, (N - R) * blk));
  if (R) ZU_CHECK(zd_copy(ctx->dev, d1, s1, R * blk));
  return zd_sync(ctx->dev);
}

/* Binomial gather: a rank collects its subtree's blocks (relative order)
 * and sends them to its parent in one message; the root puts them in rank
 * order. */
static zcclResult_t zp_tree_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t blk = a->count * zu_dtype_size(a->datatype);
  int span = zp_tree_span(v, N), size = zp_tree_size(v, N);
  if (size == 1 && v)
    return zp_sendrecv(ctx, "tree gather", zp_abs(ctx, a, v - span), a->sendbuff, blk, -1, NULL, 0, ZP_SUB_ALGO);
  void* tmp = NULL;
  uint8_t* buf = a->recvbuff;
  if (v || a->root) {
    ZU_CHECK(zp_tmp_get(ctx, (size_t)size * blk, &tmp));
    buf = tmp;
  }
  zcclResult_t res = zcclSuccess;
  if (buf != a->sendbuff) ZU_CHECK_GOTO(zd_copy(ctx->dev, buf, a->sendbuff, blk), res, out);
  ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  zp_xfer_t x[32];
  int child[32], end[32], nx = zp_tree_children(v, N, child, end);
  for (int i = 0; i < nx; i++)
    zp_recv_at(ctx, &x[i], zp_abs(ctx, a, child[i]), ZP_SUB_ALGO, buf + (size_t)(child[i] - v) * blk,
               (size_t)(end[i] - child[i]) * blk);
  ZU_CHECK_GOTO(zp_xfers_run(ctx, "tree gather", x, nx), res, out);
  if (v)
    res = zp_sendrecv(ctx, "tree gather", zp_abs(ctx, a, v - span), buf, (size_t)size * blk, -1, NULL, 0,
                      ZP_SUB_ALGO);
  else if (tmp)
    res = zp_rotate(ctx, a, tmp, a->recvbuff, blk, 1);
out:
  zp_tmp_put(ctx, tmp);
  return res;
}

/* Binomial scatter: the mirror of the gather. */
static zcclResult_t zp_tree_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t blk = a->count * zu_dtype_size(a->datatype);
  int span = zp_tree_span(v, N), size = zp_tree_size(v, N);
  if (size == 1 && v)
    return zp_sendrecv(ctx, "tree scatter", -1, NULL, 0, zp_abs(ctx, a, v - span), a->recvbuff, blk, ZP_SUB_ALGO);
  void* tmp = NULL;
  uint8_t* buf = (uint8_t*)a->sendbuff;
  if (v || a->root) {
    ZU_CHECK(zp_tmp_get(ctx, (size_t)size * blk, &tmp));
    buf = tmp;
  }
  zcclResult_t res = zcclSuccess;
  if (v)
    ZU_CHECK_GOTO(zp_sendrecv(ctx, "tree scatter", -1, NULL, 0, zp_abs(ctx, a, v - span), buf, (size_t)size * blk,
                              ZP_SUB_ALGO),
                  res, out);
  else if (tmp)
    ZU_CHECK_GOTO(zp_rotate(ctx, a, tmp, (uint8_t*)a->sendbuff, blk, 0), res, out);
  zp_xfer_t x[32];
  int child[32], end[32], nx = zp_tree_children(v, N, child, end);
  for (int i = 0; i < nx; i++)
    zp_send_at(ctx, &x[i], zp_abs(ctx, a, child[i]), ZP_SUB_ALGO, buf + (size_t)(child[i] - v) * blk,
               (size_t)(end[i] - child[i]) * blk);
  /* The own block is copied while the children's messages travel. */
  res = zp_xfers_post(ctx, x, nx);
  if (res == zcclSuccess && buf != a->recvbuff) res = zd_copy(ctx->dev, a->recvbuff, buf, blk);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  zcclResult_t w = zp_xfers_wait(ctx, "tree scatter", x, nx); /* also after a failure: UCX lets go */
  if (res == zcclSuccess) res = w;
out:
  zp_tmp_put(ctx, tmp);
  return res;
}


static double zp_tree_broadcast_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_log2_floor(ctx->nranks) * (zp_hop_alpha(ctx) + zp_call_bytes(a) / zp_link_bandwidth(ctx));
}

/* log2 N relay hops of the scatter, N-1 rounds of the ring; 2 (N-1)/N of
 * the bytes. The binomial trees' levels are relays (zp_hop_alpha). */
static double zp_scatter_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks;
  return zp_log2_floor(ctx->nranks) * zp_hop_alpha(ctx) + (N - 1) * zp_link_alpha(ctx) +
         2 * (N - 1) / N * zp_call_bytes(a) / zp_link_bandwidth(ctx);
}

/* Its children's partials in temporaries at once, not sliced. */
static int zp_tree_reduce_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  return ((size_t)zp_log2_floor(ctx->nranks) + 2) * a->count * zu_dtype_size(a->datatype) <= room;
}

static double zp_tree_reduce_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a);
  return zp_log2_floor(ctx->nranks) * (zp_hop_alpha(ctx) + n / zp_link_bandwidth(ctx) + n / zp_reduce_bps(ctx));
}

/* A subtree's blocks staged in one temporary: the root's holds all N. */
static int zp_tree_blocks_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room) {
  return (size_t)ctx->nranks * a->count * zu_dtype_size(a->datatype) <= room;
}

/* n: one rank's block; the blocks are staged in temporaries. */
static double zp_tree_blocks_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  return zp_log2_floor(ctx->nranks) * zp_hop_alpha(ctx) + (N - 1) * n / zp_link_bandwidth(ctx) +
         N * n / zp_reduce_bps(ctx);
}

const zp_algo_t zp_algo_tree_broadcast = {"tree", "binomial tree", ZP_COLL_BROADCAST, 0, 0, NULL,
                                          zp_tree_broadcast_cost, zp_tree_broadcast};
const zp_algo_t zp_algo_scatter_allgather_broadcast = {
    "scatter_allgather", "van de Geijn: binomial scatter of pieces, then a ring allgather", ZP_COLL_BROADCAST, 0, 0,
    NULL, zp_scatter_allgather_cost, zp_scatter_allgather_broadcast};
const zp_algo_t zp_algo_tree_reduce = {"tree", "binomial tree", ZP_COLL_REDUCE, 0, 0, zp_tree_reduce_usable,
                                       zp_tree_reduce_cost, zp_tree_reduce};
const zp_algo_t zp_algo_tree_gather = {"tree", "binomial tree, a subtree's blocks in one message", ZP_COLL_GATHER, 0,
                                       0, zp_tree_blocks_usable, zp_tree_blocks_cost, zp_tree_gather};
const zp_algo_t zp_algo_tree_scatter = {"tree", "binomial tree, a subtree's blocks in one message", ZP_COLL_SCATTER,
                                        0, 0, zp_tree_blocks_usable, zp_tree_blocks_cost, zp_tree_scatter};
