/* Rooted collectives: binomial-tree, pipelined-chain and scatter+allgather
 * broadcast; binomial and chain reduce; binomial and flat gather and
 * scatter (flat: the root talks to every rank at once, all messages in
 * flight together). Ranks are renumbered relative to the root (v = 0 is
 * the root).
 *
 * The binomial tree: v's parent is v without its lowest set bit; its
 * children are v + m for the powers of two m below that bit (below N for
 * the root), and the subtree of a child c = v + m is [c, min(c + m, N)).
 * Gather and scatter keep a subtree's blocks contiguous in relative order,
 * so each tree edge carries one message. */
#include <math.h>
#include <string.h>

#include "zp_algo.h"

size_t zp_chain_piece(const zp_ctx_t* ctx, size_t bytes) {
  /* A chain of N ranks and k pieces takes (N - 2 + k) (alpha + bytes/k/B):
   * best at k = sqrt((N - 2) bytes / (alpha B)). Pieces of 64 KiB ... 4 MiB
   * in multiples of 4 KiB (so of every element size). The link model is
   * the same on every rank, so is the piece. */
  double alpha = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double hops = ctx->nranks > 3 ? ctx->nranks - 2 : 1;
  double k = sqrt(hops * (double)bytes / (alpha * B));
  double piece = k > 1 ? (double)bytes / k : (double)bytes;
  /* Within what goes eagerly: on 4 hosts at 1 Gbit/s a latency read high
   * (100-850 us there) gave 1-1.5 MiB pieces at 64 MiB. */
  size_t cap = zp_eager_cap(ctx, 4 << 20);
  size_t p = piece < (64 << 10) ? (64 << 10) : piece > (double)cap ? cap : (size_t)piece;
  return (p + 4095) & ~(size_t)4095; /* <= cap, a multiple of 4 KiB */
}

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

zcclResult_t zp_tree_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (ctx->rank == a->root && a->sendbuff != a->recvbuff) {
    ZU_CHECK(zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  return zp_tree_broadcast_sub(ctx, a->recvbuff, bytes, a->root, 0);
}

static int zp_tree_size(int v, int N) { /* ranks in v's subtree */
  int s = zp_tree_span(v, N);
  return s < N - v ? s : N - v;
}
static int zp_abs(const zp_ctx_t* ctx, const zp_coll_args_t* a, int v) { return (v + a->root) % ctx->nranks; }

/* Direct broadcast: the root sends to every rank at once. On shared memory
 * each receiver copies from the root's buffer itself, in parallel. */
zcclResult_t zp_direct_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  if (r != a->root) return zp_sendrecv(ctx, "direct broadcast", -1, NULL, 0, a->root, a->recvbuff, bytes, 0);
  zp_xfer_t x[N];
  int nx = 0;
  for (int s = 1; s < N; s++) zp_send_at(ctx, &x[nx++], (r + s) % N, 0, a->sendbuff, bytes);
  zcclResult_t res = zp_xfers_post(ctx, x, nx);
  if (res == zcclSuccess && a->sendbuff != a->recvbuff) res = zd_copy(ctx->dev, a->recvbuff, a->sendbuff, bytes);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  zcclResult_t w = zp_xfers_wait(ctx, "direct broadcast", x, nx);
  return res == zcclSuccess ? w : res;
}

/* van de Geijn's broadcast for large messages: a binomial scatter of N
 * pieces (relative rank j gets piece j), then a ring allgather of the
 * pieces, all in recvbuff. Each rank sends about 2 (N-1)/N of the buffer,
 * against log2(N) times the buffer for the binomial tree. */
zcclResult_t zp_scatter_allgather_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
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
                         boff[v + size] - boff[v], 0));
  }
  zp_xfer_t x[32];
  int child[32], end[32], nx = zp_tree_children(v, N, child, end);
  for (int i = 0; i < nx; i++) /* farthest (largest subtree) first */
    zp_send_at(ctx, &x[i], zp_abs(ctx, a, child[nx - 1 - i]), 0, buf + boff[child[nx - 1 - i]],
               boff[end[nx - 1 - i]] - boff[child[nx - 1 - i]]);
  /* The allgather rewrites the children's pieces (same bytes): the sends
   * finish first. */
  ZU_CHECK(zp_xfers_run(ctx, "scatter-allgather broadcast", x, nx));
  return zp_ring_allgather_blocks(ctx, buf, 1, boff, blen, v, 0x100);
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
    zp_recv_at(ctx, &rx[k], prev, (uint32_t)k, ZP_PIECE(k));
    ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[k], 1), res, fail);
  }
  for (size_t k = 0; k < npieces; k++) {
    if (prev >= 0) {
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain broadcast", &rx[k % 2], 1), res, fail);
      if (k + 2 < npieces) {
        zp_recv_at(ctx, &rx[k % 2], prev, (uint32_t)(k + 2), ZP_PIECE(k + 2));
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[k % 2], 1), res, fail);
      }
    }
    if (sending) {
      sending = 0;
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, "chain broadcast", send, 1), res, fail);
    }
    if (next >= 0) {
      zp_send_at(ctx, send, next, (uint32_t)k, ZP_PIECE(k));
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
zcclResult_t zp_chain_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
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
    zp_recv_at(ctx, &rx[k], from, (uint32_t)k, t[k], m * es);
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
        zp_recv_at(ctx, &rx[j], from, (uint32_t)(k + 2), t[j], m2 * es);
        ZU_CHECK_GOTO(zp_xfers_post(ctx, &rx[j], 1), res, out);
      }
      partial = dst;
    }
    if (to >= 0) {
      zp_send_at(ctx, &sx[j], to, (uint32_t)k, partial, m * es);
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

/* Binomial reduce for small messages: each rank waits for its children's
 * partials (all in flight together), folds them into its own in a fixed
 * order (own, then the children from nearest), and passes the result up. */
zcclResult_t zp_tree_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
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
    zp_recv_at(ctx, &x[nc], zp_abs(ctx, a, child[nc]), 0, tmp[nc], bytes);
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
  if (v) res = zp_sendrecv(ctx, "tree reduce", zp_abs(ctx, a, v - span), acc, bytes, -1, NULL, 0, 0);
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
zcclResult_t zp_tree_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t blk = a->count * zu_dtype_size(a->datatype);
  int span = zp_tree_span(v, N), size = zp_tree_size(v, N);
  if (size == 1 && v)
    return zp_sendrecv(ctx, "tree gather", zp_abs(ctx, a, v - span), a->sendbuff, blk, -1, NULL, 0, 0);
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
    zp_recv_at(ctx, &x[i], zp_abs(ctx, a, child[i]), 0, buf + (size_t)(child[i] - v) * blk,
               (size_t)(end[i] - child[i]) * blk);
  ZU_CHECK_GOTO(zp_xfers_run(ctx, "tree gather", x, nx), res, out);
  if (v)
    res = zp_sendrecv(ctx, "tree gather", zp_abs(ctx, a, v - span), buf, (size_t)size * blk, -1, NULL, 0, 0);
  else if (tmp)
    res = zp_rotate(ctx, a, tmp, a->recvbuff, blk, 1);
out:
  zp_tmp_put(ctx, tmp);
  return res;
}

/* Binomial scatter: the mirror of the gather. */
zcclResult_t zp_tree_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  size_t blk = a->count * zu_dtype_size(a->datatype);
  int span = zp_tree_span(v, N), size = zp_tree_size(v, N);
  if (size == 1 && v)
    return zp_sendrecv(ctx, "tree scatter", -1, NULL, 0, zp_abs(ctx, a, v - span), a->recvbuff, blk, 0);
  void* tmp = NULL;
  uint8_t* buf = (uint8_t*)a->sendbuff;
  if (v || a->root) {
    ZU_CHECK(zp_tmp_get(ctx, (size_t)size * blk, &tmp));
    buf = tmp;
  }
  zcclResult_t res = zcclSuccess;
  if (v)
    ZU_CHECK_GOTO(zp_sendrecv(ctx, "tree scatter", -1, NULL, 0, zp_abs(ctx, a, v - span), buf, (size_t)size * blk, 0),
                  res, out);
  else if (tmp)
    ZU_CHECK_GOTO(zp_rotate(ctx, a, tmp, (uint8_t*)a->sendbuff, blk, 0), res, out);
  zp_xfer_t x[32];
  int child[32], end[32], nx = zp_tree_children(v, N, child, end);
  for (int i = 0; i < nx; i++)
    zp_send_at(ctx, &x[i], zp_abs(ctx, a, child[i]), 0, buf + (size_t)(child[i] - v) * blk,
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
