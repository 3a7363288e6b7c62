/* The collectives' table and the choice of algorithm. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zp_stream.h"
#include "zu_param.h"

static const struct {
  const char* name;
  int reduces;
  int rooted;
} zp_colls[ZP_NUM_COLLS] = {
    [ZP_COLL_ALLREDUCE] = {"zcclAllReduce", 1, 0},   [ZP_COLL_BROADCAST] = {"zcclBroadcast", 0, 1},
    [ZP_COLL_REDUCE] = {"zcclReduce", 1, 1},         [ZP_COLL_ALLGATHER] = {"zcclAllGather", 0, 0},
    [ZP_COLL_REDUCESCATTER] = {"zcclReduceScatter", 1, 0}, [ZP_COLL_ALLTOALL] = {"zcclAlltoAll", 0, 0},
    [ZP_COLL_GATHER] = {"zcclGather", 0, 1},         [ZP_COLL_SCATTER] = {"zcclScatter", 0, 1},
    [ZP_COLL_SEND] = {"zcclSend", 0, 1},             [ZP_COLL_RECV] = {"zcclRecv", 0, 1},
};

const char* zp_coll_name(zp_coll_id_t coll) {
  return (coll >= 0 && coll < ZP_NUM_COLLS) ? zp_colls[coll].name : "invalid";
}

int zp_coll_reduces(zp_coll_id_t coll) { return coll < ZP_NUM_COLLS && zp_colls[coll].reduces; }
int zp_coll_rooted(zp_coll_id_t coll) { return coll < ZP_NUM_COLLS && zp_colls[coll].rooted; }

/* ---- temporaries ---------------------------------------------------------------- */
zcclResult_t zp_tmp_get(const zp_ctx_t* ctx, size_t bytes, void** buf) {
  return zd_buf_get(ctx->dev, bytes ? bytes : 1, buf);
}

void zp_tmp_put(const zp_ctx_t* ctx, void* buf) {
  if (buf) zd_buf_put(ctx->dev, buf);
}

size_t zp_slice_elems(const zp_ctx_t* ctx, size_t count, size_t esize, int nblocks, int per) {
  size_t block = (count + (size_t)nblocks - 1) / (size_t)nblocks;
  /* Leave room: the pool is first fit, and other temporaries may be out. */
  size_t budget = zd_buf_largest(ctx->dev) / ((size_t)per + 1) / esize;
  if (budget < 1) budget = 1;
  return block < budget ? (block ? block : 1) : budget;
}

/* ---- choosing ---------------------------------------------------------------------- */
typedef zcclResult_t (*zp_algo_fn)(const zp_ctx_t*, const zp_coll_args_t*);
/* The model tells algorithms apart by kind (a name compare per candidate
 * and call cost a small message a tenth of its time). */
typedef enum {
  ZP_RING, ZP_RD, ZP_RABENSEIFNER, ZP_DIRECT, ZP_BRUCK, ZP_TREE, ZP_CHAIN, ZP_SCATTER_ALLGATHER, ZP_LINEAR,
  ZP_PAIRWISE
} zp_algo_kind_t;

typedef struct {
  zp_coll_id_t coll;
  zp_algo_kind_t kind;
  const char* name; /* as ZCCL_ALGO names it */
  zp_algo_fn fn;
} zp_algo_t;

static const zp_algo_t zp_algos[] = {
    {ZP_COLL_ALLREDUCE, ZP_RING, "ring", zp_ring_allreduce},
    {ZP_COLL_ALLREDUCE, ZP_RD, "rd", zp_rd_allreduce},
    {ZP_COLL_ALLREDUCE, ZP_RABENSEIFNER, "rabenseifner", zp_rabenseifner_allreduce},
    {ZP_COLL_ALLREDUCE, ZP_DIRECT, "direct", zp_direct_allreduce},
    {ZP_COLL_REDUCESCATTER, ZP_RING, "ring", zp_ring_reduce_scatter},
    {ZP_COLL_ALLGATHER, ZP_RING, "ring", zp_ring_allgather},
    {ZP_COLL_ALLGATHER, ZP_BRUCK, "bruck", zp_bruck_allgather},
    {ZP_COLL_ALLGATHER, ZP_DIRECT, "direct", zp_direct_allgather},
    {ZP_COLL_BROADCAST, ZP_TREE, "tree", zp_tree_broadcast},
    {ZP_COLL_BROADCAST, ZP_CHAIN, "chain", zp_chain_broadcast},
    {ZP_COLL_BROADCAST, ZP_SCATTER_ALLGATHER, "scatter_allgather", zp_scatter_allgather_broadcast},
    {ZP_COLL_BROADCAST, ZP_DIRECT, "direct", zp_direct_broadcast},
    {ZP_COLL_REDUCE, ZP_TREE, "tree", zp_tree_reduce},
    {ZP_COLL_REDUCE, ZP_CHAIN, "chain", zp_chain_reduce},
    {ZP_COLL_GATHER, ZP_TREE, "tree", zp_tree_gather},
    {ZP_COLL_GATHER, ZP_LINEAR, "linear", zp_linear_gather},
    {ZP_COLL_SCATTER, ZP_TREE, "tree", zp_tree_scatter},
    {ZP_COLL_SCATTER, ZP_LINEAR, "linear", zp_linear_scatter},
    {ZP_COLL_ALLTOALL, ZP_PAIRWISE, "pairwise", zp_pairwise_alltoall},
};
#define ZP_NUM_ALGOS (sizeof zp_algos / sizeof zp_algos[0])

/* ---- the cost model ------------------------------------------------------------
 * alpha-beta per message with the communicator's learnt link (zp_link_t)
 * and a host reduction rate; each algorithm's cost counts its steps and the
 * bytes each rank sends and reduces. */
#define ZP_REDUCE_BYTES_PER_S 2e9


/* A pipelined chain (broadcast, or reduce adding each piece on the way). */
static double zp_chain_cost(const zp_ctx_t* ctx, double n, int reduces) {
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double piece = (double)zp_chain_piece(ctx, (size_t)n), k = n / piece < 1 ? 1 : n / piece;
  double hops = ctx->nranks - 1;
  return (hops - 1 + k) * (al_s + n / k / B + (reduces ? n / k / ZP_REDUCE_BYTES_PER_S : 0));
}

/* Whether al can run this call: ring, direct and Rabenseifner need an
 * element per rank; temporaries that are not sliced (recursive doubling,
 * Rabenseifner, Bruck, the trees) must fit the buffer pool (room: its
 * largest free block), checked before anything is out, so every rank
 * answers the same. */
static int zp_usable(const zp_ctx_t* ctx, const zp_algo_t* al, const zp_coll_args_t* a, size_t room) {
  size_t N = (size_t)ctx->nranks, es = zu_dtype_size(a->datatype), bytes = a->count * es;
  int pow2 = (N & (N - 1)) == 0;
  if (a->coll == ZP_COLL_ALLREDUCE) {
    /* One temporary, not sliced: the whole buffer (rd; Rabenseifner's
     * folding ranks), or half of it (Rabenseifner). */
    if (al->kind == ZP_RD) return bytes <= room;
    if (a->count < N) return 0;
    if (al->kind == ZP_RABENSEIFNER) return (pow2 ? (bytes + 1) / 2 + es * N : bytes) <= room;
    return 1;
  }
  if (a->coll == ZP_COLL_ALLGATHER && al->kind == ZP_BRUCK) return N * bytes <= room;
  if (al->kind != ZP_TREE) return 1;
  if (a->coll == ZP_COLL_GATHER || a->coll == ZP_COLL_SCATTER) return N * bytes <= room;
  if (a->coll == ZP_COLL_REDUCE) return ((size_t)zp_log2_floor(ctx->nranks) + 2) * bytes <= room;
  return 1;
}

/* Rounds in which every rank talks to every other at once: one latency
 * each, plus half a latency per message of a round (posting and matching
 * N-1 of them). Past 8 ranks the incast of a round grows with N; the
 * model then prices each message as a full latency. */
static double zp_direct_rounds(const zp_ctx_t* ctx, int rounds) {
  double al_s = zp_link_alpha(ctx), N = ctx->nranks;
  return rounds * (al_s + (N - 1) * al_s * (N <= 8 ? 0.5 : 1.0));
}

/* What a direct round's bytes cost more than a ring's: the measured
 * all-to-all factor, where the links are what limits (the root's N-1
 * copies took at least 0.7 (N-1) times one: a network). Over shared memory
 * it is left out: the factor is noisy there (1.06-2.26 in three runs on 2
 * cores) and direct rounds measured as fast as the ring's or faster. */
static double zp_direct_bytes_factor(const zp_ctx_t* ctx) {
  const zp_link_t* l = ctx->link;
  if (!l || ctx->nranks < 3 || !(l->fanout >= 0.7 * (ctx->nranks - 1))) return 1.0;
  return l->incast > 1 ? l->incast : 1.0;
}

static double zp_cost(const zp_ctx_t* ctx, const zp_algo_t* al, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx),
         G = ZP_REDUCE_BYTES_PER_S;
  int lg = zp_log2_floor(ctx->nranks), pow2 = (1 << lg) == ctx->nranks;
  zp_algo_kind_t k = al->kind;
  switch (al->coll) {
    case ZP_COLL_ALLREDUCE: {
      double P = (double)(1 << lg), fold = pow2 ? 0 : 2 * (al_s + n / B) + n / G;
      if (k == ZP_RING) {
        /* Pipelined: a piece is reduced while the next is on the wire, so
         * only the longer of the two counts, and one piece of the other. */
        double wire = 2 * (N - 1) / N * n / B, red = (N - 1) / N * n / G;
        double K = zp_ring_block_pieces(ctx, a->count / (size_t)ctx->nranks, zu_dtype_size(a->datatype));
        return 2 * (N - 1) * al_s + (wire > red ? wire + red / K : red + wire / K);
      }
      if (k == ZP_DIRECT)
        return zp_direct_rounds(ctx, 2) + zp_direct_bytes_factor(ctx) * 2 * (N - 1) / N * n / B + (N - 1) / N * n / G;
      if (k == ZP_RABENSEIFNER) return 2 * lg * al_s + 2 * (P - 1) / P * n / B + (P - 1) / P * n / G + fold;
      return lg * (al_s + n / B + n / G) + fold;
    }
    case ZP_COLL_ALLGATHER: /* n: one rank's block */
      if (k == ZP_RING) return (N - 1) * (al_s + n / B);
      if (k == ZP_DIRECT) return zp_direct_rounds(ctx, 1) + zp_direct_bytes_factor(ctx) * (N - 1) * n / B;
      return (lg + (pow2 ? 0 : 1)) * al_s + (N - 1) * n / B + N * n / G; /* bruck's final copy */
    case ZP_COLL_BROADCAST:
      if (k == ZP_TREE) return lg * (al_s + n / B);
      if (k == ZP_DIRECT) /* the root's N-1 copies cost the measured fan-out */
        return zp_direct_rounds(ctx, 1) + (ctx->link && ctx->link->fanout >= 1 ? ctx->link->fanout : N - 1) * n / B;
      if (k == ZP_SCATTER_ALLGATHER) return (lg + N - 1) * al_s + 2 * (N - 1) / N * n / B;
      return zp_chain_cost(ctx, n, 0);
    case ZP_COLL_REDUCE:
      if (k == ZP_TREE) return lg * (al_s + n / B + n / G);
      return zp_chain_cost(ctx, n, 1);
    case ZP_COLL_GATHER: /* n: one rank's block; the tree stages blocks in temporaries */
    case ZP_COLL_SCATTER:
      if (k == ZP_TREE) return lg * al_s + (N - 1) * n / B + N * n / G;
      return (N - 1) * (al_s + n / B);
    default: return 0;
  }
}

static const zp_algo_t* zp_default_algo(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zp_algo_t* best = NULL;
  double best_t = 0;
  size_t room = zd_buf_largest(ctx->dev);
  for (size_t i = 0; i < ZP_NUM_ALGOS; i++) {
    if (zp_algos[i].coll != a->coll || !zp_usable(ctx, &zp_algos[i], a, room)) continue;
    double t = zp_cost(ctx, &zp_algos[i], a);
    if (best == NULL || t < best_t) best = &zp_algos[i], best_t = t;
  }
  return best;
}

/* codec=auto: compress only where the model says it pays. The codec's
 * rates are this project's single-core figures (perf/codec_table.sh:
 * compress and decompress about 2 GB/s, homomorphic sum about 1 GB/s),
 * taken a little lower, and divided among the ranks that share a core
 * (zp_codec_rate); the ratio is assumed 4 (TEMP at REL 1e-3 gives 8-11).
 * Only the agreed link and share enter, so every rank decides the same. */
#define ZP_AUTO_COMPRESS_BPS 1.5e9
#define ZP_AUTO_HOP_BPS 1.0e9
#define ZP_AUTO_HOP_VALUES_BPS 1.2e9 /* compress and sum in one pass (zd_hop_values): about 1.4 GB/s */
#define ZP_AUTO_RATIO 4.0

/* A host codec's rate per rank: rate over the ranks sharing each core of
 * the busiest machine (a GPU's codec shares nothing). */
static double zp_codec_rate(const zp_ctx_t* ctx, double rate) {
  double share = ctx->link && ctx->link->cpu_share > 1 ? ctx->link->cpu_share : 1;
  return zd_dev_kind(ctx->dev) == ZD_CUDA ? rate : rate / share;
}

static double zp_compressed_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), H = zp_codec_rate(ctx, ZP_AUTO_HOP_BPS), q = ZP_AUTO_RATIO;
  switch (a->coll) {
    case ZP_COLL_REDUCE: /* compress, log2 N hops of n, one stream per tree edge */
      return 2 * n / C + zp_log2_ceil(ctx->nranks) * (n / H + al_s + n / (q * B));
    case ZP_COLL_ALLGATHER: /* n per rank: compress once, decompress N blocks */
      return n / C + N * n / C + (N - 1) * (al_s + n / (q * B));
    case ZP_COLL_ALLTOALL:
      return 2 * N * n / C + (N - 1) * (al_s + n / (q * B));
    case ZP_COLL_SCATTER:
    case ZP_COLL_GATHER: /* the root compresses or decompresses N blocks */
      return 2 * N * n / C + (N - 1) * (al_s + n / (q * B));
    default: /* broadcast: compress, a broadcast of n/q, decompress */
      return 2 * n / C + 2 * al_s + n / (q * B);
  }
}

/* Homomorphic recursive doubling: compress the whole input once, log2(P)
 * rounds each sending a whole stream and adding the received one, plus,
 * for N not a power of two, the fold's stream in (with its add) and out;
 * decompress once. Fewer latencies than the ring (log2 P against 2(N-1)),
 * but every round moves and adds all n: small messages or many ranks. */
static double zp_hz_rd_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), H = zp_codec_rate(ctx, ZP_AUTO_HOP_BPS), q = ZP_AUTO_RATIO;
  int lg = zp_log2_floor(ctx->nranks), pow2 = (1 << lg) == ctx->nranks;
  double fold = pow2 ? 0 : 2 * (al_s + n / (q * B)) + n / H;
  return n / C + lg * (al_s + n / (q * B) + n / H) + fold + n / C;
}

/* The chunk-pipelined rings (zp_doc.c): the first compression, then per
 * step the work on a block of b bytes (hop_s seconds a byte), chunk by
 * chunk overlapped with the transfer of its b/q stream bytes (the slower
 * of the two, not their sum). AllReduce then forwards the streams with each
 * received chunk's decompression overlapped likewise, and decompresses its
 * own block. */
static double zp_pipe_ring_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a, double hop_s) {
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), q = ZP_AUTO_RATIO;
  double b = a->coll == ZP_COLL_ALLREDUCE ? n / N : n, wire = b / (q * B), hop = hop_s * b;
  double t = b / C + (N - 1) * (al_s + (hop > wire ? hop : wire));
  if (a->coll == ZP_COLL_ALLREDUCE) t += b / C + (N - 1) * (al_s + (b / C > wire ? b / C : wire));
  return t;
}

/* The homomorphic ring: a step compresses this rank's piece and adds it
 * to the arrived stream, in one pass where the device has it. */
static double zp_hz_ring_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), H = zp_codec_rate(ctx, ZP_AUTO_HOP_BPS);
  double F = zp_codec_rate(ctx, ZP_AUTO_HOP_VALUES_BPS);
  return zp_pipe_ring_cost(ctx, a, zd_has_hop_values(ctx->dev) ? 1 / F : 1 / C + 1 / H);
}

/* The DOC ring and chain (codec szp): per hop the decompression, reduction
 * and compression of a block. The chain (Reduce) is a pipeline of chunks
 * (of zp_doc_chunk_values): N-2+k stages for k chunks. */
static double zp_doc_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), G = ZP_REDUCE_BYTES_PER_S;
  if (a->coll == ZP_COLL_REDUCE) {
    double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
    double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx), q = ZP_AUTO_RATIO;
    double c = (double)(zp_doc_chunk_values(a->count) * zu_dtype_size(a->datatype)), k = n > c ? n / c : 1;
    c = n / k;
    double hop = 2 * c / C + c / G, wire = c / (q * B);
    return c / C + (N - 2 + k) * (al_s + (hop > wire ? hop : wire));
  }
  return zp_pipe_ring_cost(ctx, a, 2 / C + 1 / G);
}

/* CPRP2P (decompress and recompress at every hop): the codec's rates at
 * both ends of every hop. */
static double zp_cpr_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, ZP_AUTO_COMPRESS_BPS), q = ZP_AUTO_RATIO, lg = zp_log2_ceil(ctx->nranks);
  switch (a->coll) {
    case ZP_COLL_ALLREDUCE: /* 2(N-1) hops of n/N, each compressed and decompressed */
      return 2 * (N - 1) * (al_s + n / N / (q * B) + 2 * n / N / C);
    case ZP_COLL_ALLGATHER: /* n per rank */
    case ZP_COLL_REDUCESCATTER: /* N-1 hops of n, the raw reduction aside as for the allreduce */
      return (N - 1) * (al_s + n / (q * B) + 2 * n / C);
    default: /* broadcast and reduce: binomial trees of log2 N levels */
      return lg * (al_s + n / (q * B) + 2 * n / C);
  }
}

/* The sparse chain (codec=rle): a pipelined chain whose pieces shrink by
 * the zeros they hold; an allreduce adds a chain broadcast of the result. */
static double zp_sparse_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = (double)(a->count * zu_dtype_size(a->datatype));
  return zp_chain_cost(ctx, n, 1) * (a->coll == ZP_COLL_ALLREDUCE ? 2 : 1);
}

/* ---- compressed algorithms ---------------------------------------------------
 * Each serves a set of codecs (one bit per zcclCodec_t). ZCCL_ALGO names
 * one where the call's collective and codec have it; otherwise the
 * cheapest by its cost, leaving out those forced_only for the codec
 * (CPRP2P, the baseline, runs unforced only with codec=zfp, whose streams
 * cannot be added homomorphically: its only reductions; for allgather and
 * broadcast it competes with compress-once); codec=auto then also weighs
 * it against the uncompressed choice. */
#define ZP_CODEC(c) (1u << (c))
#define ZP_HZ (ZP_CODEC(zcclCodecHz) | ZP_CODEC(zcclCodecAuto))
#define ZP_MOVES (ZP_HZ | ZP_CODEC(zcclCodecSzp)) /* data movement: any stream codec */
#define ZP_LOSSY (ZP_MOVES | ZP_CODEC(zcclCodecZfp)) /* any lossy codec */
#define ZP_RLE ZP_CODEC(zcclCodecRle)
#define ZP_ONCE (ZP_LOSSY | ZP_RLE) /* compress once, move streams: any codec */

typedef double (*zp_cost_fn)(const zp_ctx_t*, const zp_coll_args_t*);
typedef struct {
  zp_coll_id_t coll;
  const char* name; /* as ZCCL_ALGO names it */
  unsigned codecs;  /* it runs with these */
  const char* what; /* for the log */
  zp_algo_fn fn;
  zp_cost_fn cost;
  unsigned forced_only; /* of its codecs, those it runs with only when ZCCL_ALGO names it */
} zp_calgo_t;

static const zp_calgo_t zp_calgos[] = {
    {ZP_COLL_ALLREDUCE, "ring", ZP_HZ, "homomorphic ring", zp_hz_ring_allreduce, zp_hz_ring_cost, 0},
    {ZP_COLL_ALLREDUCE, "rd", ZP_HZ, "homomorphic recursive doubling", zp_hz_rd_allreduce, zp_hz_rd_cost, 0},
    {ZP_COLL_REDUCESCATTER, "ring", ZP_HZ, "homomorphic ring", zp_hz_ring_reduce_scatter, zp_hz_ring_cost, 0},
    {ZP_COLL_ALLREDUCE, "ring", ZP_CODEC(zcclCodecSzp), "DOC ring", zp_doc_ring_allreduce, zp_doc_cost, 0},
    {ZP_COLL_REDUCESCATTER, "ring", ZP_CODEC(zcclCodecSzp), "DOC ring", zp_doc_ring_reduce_scatter, zp_doc_cost, 0},
    {ZP_COLL_REDUCE, "chain", ZP_CODEC(zcclCodecSzp), "DOC chain", zp_doc_chain_reduce, zp_doc_cost, 0},
    {ZP_COLL_REDUCE, "tree", ZP_HZ, "homomorphic binomial tree", zp_hz_tree_reduce, zp_compressed_cost, 0},
    {ZP_COLL_ALLGATHER, "ring", ZP_ONCE, "compress-once ring", zp_hz_ring_allgather, zp_compressed_cost, 0},
    {ZP_COLL_BROADCAST, "tree", ZP_ONCE, "compress-once, stream broadcast", zp_hz_broadcast, zp_compressed_cost, 0},
    {ZP_COLL_SCATTER, "linear", ZP_ONCE, "compress-once, direct", zp_hz_scatter, zp_compressed_cost, 0},
    {ZP_COLL_GATHER, "linear", ZP_ONCE, "compress-once, direct", zp_hz_gather, zp_compressed_cost, 0},
    {ZP_COLL_ALLTOALL, "pairwise", ZP_ONCE, "compress-once, pairwise", zp_hz_alltoall, zp_compressed_cost, 0},
    {ZP_COLL_ALLREDUCE, "cprp2p", ZP_LOSSY, "CPRP2P ring (recompress every hop)", zp_cpr_allreduce, zp_cpr_cost,
     ZP_MOVES},
    {ZP_COLL_ALLGATHER, "cprp2p", ZP_LOSSY, "CPRP2P ring (recompress every hop)", zp_cpr_allgather, zp_cpr_cost,
     ZP_MOVES},
    {ZP_COLL_BROADCAST, "cprp2p", ZP_LOSSY, "CPRP2P binomial tree (recompress every hop)", zp_cpr_broadcast,
     zp_cpr_cost, ZP_MOVES},
    {ZP_COLL_REDUCESCATTER, "cprp2p", ZP_LOSSY, "CPRP2P ring (recompress every hop)", zp_cpr_reduce_scatter,
     zp_cpr_cost, ZP_MOVES},
    {ZP_COLL_REDUCE, "cprp2p", ZP_LOSSY, "CPRP2P binomial tree (recompress every hop)", zp_cpr_reduce, zp_cpr_cost,
     ZP_MOVES},
    {ZP_COLL_REDUCE, "sparse", ZP_RLE, "sparse RLE chain", zp_sparse_reduce, zp_sparse_cost, 0},
    {ZP_COLL_ALLREDUCE, "sparse", ZP_RLE, "sparse RLE chain, then its result down the chain", zp_sparse_allreduce,
     zp_sparse_cost, 0},
};
#define ZP_NUM_CALGOS (sizeof zp_calgos / sizeof zp_calgos[0])

/* The compressed algorithm for this call (NULL: none for its codec), its
 * modelled time in *t. */
static const zp_calgo_t* zp_compressed_algo(const zp_ctx_t* ctx, const zp_coll_args_t* a, const char* forced,
                                            double* t) {
  const zp_calgo_t* best = NULL;
  int codec = a->compression.codec;
  if (codec < 0 || codec >= 32) return NULL;
  /* RLE and ZFP run on the host's codec: a cuda device has neither. */
  if ((codec == zcclCodecRle || codec == zcclCodecZfp) && !zd_has_host_codecs(ctx->dev)) return NULL;
  for (size_t i = 0; i < ZP_NUM_CALGOS; i++) {
    const zp_calgo_t* al = &zp_calgos[i];
    if (al->coll != a->coll || !(al->codecs & ZP_CODEC(codec))) continue;
    if (forced[0] && strcmp(forced, al->name) == 0) {
      *t = al->cost(ctx, a);
      return al;
    }
    if (al->forced_only & ZP_CODEC(codec)) continue;
    double ti = al->cost(ctx, a);
    if (best == NULL || ti < *t) best = al, *t = ti;
  }
  return best;
}

/* codec=auto on sparse data: Reduce and AllReduce of at least
 * ZP_AUTO_SPARSE_MIN_BYTES whose every rank's sample is at least
 * ZP_AUTO_SPARSE_ZEROS zeros may take the sparse chain (lossless, so within
 * any bound) when the model prices it below the alternatives: the chain
 * carries only the nonzeros (1 - zeros of the bytes), and encoding and
 * decoding run at about ZP_AUTO_RLE_BPS. */
#define ZP_AUTO_SPARSE_MIN_BYTES ((size_t)1 << 20)
#define ZP_AUTO_SPARSE_ZEROS 0.9
#define ZP_AUTO_SPARSE_SAMPLES 4096
#define ZP_AUTO_RLE_BPS 2e9

/* The smallest zero fraction of any rank's input (one small allreduce). */
static zcclResult_t zp_agreed_zeros(const zp_ctx_t* ctx, const zp_coll_args_t* a, double* zeros) {
  double z = 0;
  ZU_CHECK(zd_zero_fraction(ctx->dev, a->sendbuff, a->count, a->datatype, ZP_AUTO_SPARSE_SAMPLES, &z));
  z = -z; /* the max of -z: minus the min */
  ZU_CHECK(zp_agree(ctx, &z, 1, -1, 0x7300));
  *zeros = -z;
  return zcclSuccess;
}

static double zp_sparse_auto_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a, double zeros) {
  double n = (double)(a->count * zu_dtype_size(a->datatype)), keep = 1.0 - zeros;
  return zp_sparse_cost(ctx, a) * (keep > 0.02 ? keep : 0.02) + 2 * n / zp_codec_rate(ctx, ZP_AUTO_RLE_BPS);
}

/* Whether the call's compression setting asks to compress it: a codec,
 * float data of at least minBytes, more than one rank, not PROD (the
 * codecs have no product). */
static int zp_wants_compression(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zcclCompression_t* c = &a->compression;
  return c->codec != zcclCodecNone && c->codec != ZCCL_CONFIG_UNDEF_INT && ctx->nranks > 1 &&
         (a->datatype == zcclFloat32 || a->datatype == zcclFloat64) &&
         a->count * zu_dtype_size(a->datatype) >= c->minBytes && !(zp_coll_reduces(a->coll) && a->op == zcclProd);
}

static zcclResult_t zp_coll_dispatch(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const char* fn = zp_coll_name(a->coll);
  const zcclCompression_t* c = &a->compression;
  const char* forced = zu_param_str(ZU_PARAM_ALGO);
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  int compress = zp_wants_compression(ctx, a);
  if (compress) {
    double tc = 0;
    const zp_calgo_t* cal = zp_compressed_algo(ctx, a, forced, &tc);
    if (c->codec == zcclCodecAuto) { /* compress only where the model says it pays */
      zp_coll_args_t plain = *a, rle = *a;
      plain.compression.codec = zcclCodecNone;
      rle.compression.codec = zcclCodecRle;
      const zp_algo_t* al = zp_default_algo(ctx, &plain);
      double tp = al ? zp_cost(ctx, al, &plain) : 0, ts = HUGE_VAL, zeros = 0;
      /* Sampled (one small allreduce) only where even all-zero data could
       * make the sparse chain pay: the same answer on every rank. */
      if ((a->coll == ZP_COLL_ALLREDUCE || a->coll == ZP_COLL_REDUCE) && bytes >= ZP_AUTO_SPARSE_MIN_BYTES &&
          zd_has_host_codecs(ctx->dev) && zp_sparse_auto_cost(ctx, a, 1.0) < tp) {
        ZU_CHECK(zp_agreed_zeros(ctx, a, &zeros));
        if (zeros >= ZP_AUTO_SPARSE_ZEROS) ts = zp_sparse_auto_cost(ctx, a, zeros);
      }
      if (ts < tp && (!cal || ts < tc)) {
        double t2 = 0;
        const zp_calgo_t* sp = zp_compressed_algo(ctx, &rle, "", &t2);
        if (sp) {
          ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: codec=auto, %.0f%% zeros: %s (model %.1f us; "
                  "uncompressed %.1f us, hz %.1f us)", fn, a->count, zu_dtype_name(a->datatype), ctx->nranks,
                  zeros * 100, sp->what, ts * 1e6, tp * 1e6, cal ? tc * 1e6 : 0);
          return sp->fn(ctx, &rle);
        }
      }
      if (cal && !(tc < tp)) {
        ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: codec=auto sends it uncompressed (model %.1f us, "
                "compressed %.1f us; link %.2f GB/s)", fn, a->count, zu_dtype_name(a->datatype), ctx->nranks,
                tp * 1e6, tc * 1e6, ctx->link ? ctx->link->bandwidth / 1e9 : 0);
        cal = NULL;
        compress = 0;
      }
    }
    if (cal) {
      ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: compressed, %s %s(codec %d, mode %d, eb %g; model %.1f us)",
              fn, a->count, zu_dtype_name(a->datatype), ctx->nranks, cal->what,
              forced[0] && strcmp(forced, cal->name) == 0 ? "(ZCCL_ALGO) " : "", c->codec, c->mode, c->eb, tc * 1e6);
      return cal->fn(ctx, a);
    }
    /* Said once per collective: this one moves its data uncompressed. */
    static atomic_int warned[ZP_NUM_COLLS];
    if (compress && !atomic_exchange(&warned[a->coll], 1))
      ZU_WARN("%s: compression is set, but this collective has no compressed algorithm for codec %d yet in "
              "zccl %d.%d.%d: its data goes uncompressed (exact)",
              fn, c->codec, ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH);
  }
  const zp_algo_t* algo = NULL;
  if (forced[0]) {
    for (size_t i = 0; i < ZP_NUM_ALGOS && !algo; i++)
      if (zp_algos[i].coll == a->coll && strcmp(zp_algos[i].name, forced) == 0 &&
          zp_usable(ctx, &zp_algos[i], a, zd_buf_largest(ctx->dev)))
        algo = &zp_algos[i];
    /* Forcing names one algorithm; collectives that lack it, and calls it
     * cannot run, keep their choice. */
  }
  if (algo == NULL) algo = zp_default_algo(ctx, a);
  ZU_RETURN_ERR_IF(algo == NULL, zcclInternalError, "%s: no algorithm", fn);
  if (ZU_LOG_ENABLED(ZU_LOG_INFO, ZU_LOG_TUNING))
    ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: %s%s (model %.1f us; link %.1f us, %.2f GB/s)",
            fn, a->count, zu_dtype_name(a->datatype), ctx->nranks, algo->name,
            forced[0] && strcmp(forced, algo->name) == 0 ? " (ZCCL_ALGO)" : "", zp_cost(ctx, algo, a) * 1e6,
            ctx->link ? ctx->link->alpha * 1e6 : 0, ctx->link ? ctx->link->bandwidth / 1e9 : 0);
  return algo->fn(ctx, a);
}

double zp_coll_estimate(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zcclCompression_t* c = &a->compression;
  const char* forced = zu_param_str(ZU_PARAM_ALGO);
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  if (ctx->nranks < 2 || a->count == 0) return 0;
  /* The premultiplication reads and writes the input once more. */
  double pre = a->premul ? (a->coll == ZP_COLL_REDUCESCATTER ? N : 1) * n / ZP_REDUCE_BYTES_PER_S : 0;
  /* One algorithm each, priced here (the choice needs no model). */
  if (a->coll == ZP_COLL_REDUCESCATTER) return pre + (N - 1) * (al_s + n / B + n / ZP_REDUCE_BYTES_PER_S);
  if (a->coll == ZP_COLL_ALLTOALL) return (N - 1) * (al_s + n / B);
  zp_coll_args_t plain = *a;
  plain.compression.codec = zcclCodecNone;
  const zp_algo_t* al = zp_default_algo(ctx, &plain);
  double tp = al ? zp_cost(ctx, al, &plain) : 0;
  double tc = 0;
  if (zp_wants_compression(ctx, a) && zp_compressed_algo(ctx, a, forced, &tc) != NULL)
    return pre + (c->codec == zcclCodecAuto && tp < tc ? tp : tc);
  return pre + tp;
}

/* A pre-multiplied sum: each rank's input times its scalar, then a sum.
 * The products go where the reduction may read and write them: an
 * allreduce's recvbuff (the sum then runs in place), else memory of their
 * own, the same kind on every rank (the algorithms size their pieces by the
 * pool's free room, which must stay alike across ranks): host memory on a
 * host-memory device, a pool piece on a GPU. They are complete before the
 * sum starts (algorithms may send a send buffer as it is). */
static zcclResult_t zp_premul_run(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const char* fn = zp_coll_name(a->coll);
  size_t n = a->coll == ZP_COLL_REDUCESCATTER ? a->count * (size_t)a->nranks : a->count;
  size_t bytes = n * zu_dtype_size(a->datatype);
  zp_coll_args_t b = *a;
  b.premul = 0;
  b.op = zcclSum;
  void *pooled = NULL, *own = NULL, *dst = a->recvbuff;
  if (a->coll != ZP_COLL_ALLREDUCE) {
    if (zd_dev_kind(ctx->dev) == ZD_CUDA) {
      ZU_RETURN_ERR_IF(bytes > zd_buf_largest(ctx->dev) / 2, zcclInvalidUsage,
                       "%s: a pre-multiplied sum of %zu bytes needs as much GPU memory for the products, more than "
                       "half of ZCCL_BUFFER_POOL_BYTES's largest free piece (%zu bytes): raise it",
                       fn, bytes, zd_buf_largest(ctx->dev));
      ZU_CHECK(zp_tmp_get(ctx, bytes, &pooled));
      dst = pooled;
    } else {
      own = aligned_alloc(64, (bytes + 63) / 64 * 64);
      ZU_RETURN_ERR_IF(own == NULL, zcclSystemError, "%s: out of memory for %zu bytes of products", fn, bytes);
      dst = own;
    }
  }
  zcclResult_t res = zd_scale(ctx->dev, dst, a->sendbuff, n, a->datatype, a->scalar_at, a->scalar_bits);
  if (res == zcclSuccess) res = zd_sync(ctx->dev);
  b.sendbuff = dst;
  if (res == zcclSuccess) res = zp_coll_dispatch(ctx, &b);
  if (pooled || own) { /* queued work may still read the products */
    zcclResult_t s = zd_sync(ctx->dev);
    if (res == zcclSuccess) res = s;
  }
  zp_tmp_put(ctx, pooled);
  free(own);
  return res;
}

static zcclResult_t zp_coll_exec(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return a->premul ? zp_premul_run(ctx, a) : zp_coll_dispatch(ctx, a);
}

/* Every collective sends its call signature to the right neighbour beside
 * its own messages (one small eager message, not waited for until the
 * end): a rank whose arguments differ from its neighbour's fails as soon
 * as the signature is in, whatever the algorithms did with the sizes, and
 * its failure notice (core) makes every other rank fail at once. */
zcclResult_t zp_coll_run(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  if (ctx->nranks < 2 || !ctx->check_calls) return zp_coll_exec(ctx, a);
  const char* fn = zp_coll_name(a->coll);
  const zcclCompression_t* c = &a->compression;
  zp_sig_t mine, left;
  memset(&mine, 0, sizeof mine); /* padding too: it goes on the wire */
  mine.coll = (uint32_t)a->coll;
  mine.dtype = (uint32_t)a->datatype;
  mine.count = a->count;
  mine.codec = c->codec;
  mine.mode = c->mode;
  mine.eb = c->eb;
  mine.min_bytes = c->minBytes;
  /* A pre-multiplied sum is an op of its own: a plain sum beside it differs. */
  if (zp_coll_reduces(a->coll)) mine.op = a->premul ? (uint32_t)zcclNumOps : (uint32_t)a->op;
  mine.root = zp_coll_rooted(a->coll) ? a->root : -1;
  zp_xfer_t x[2];
  zp_ctx_t g = *ctx;
  g.sig_mine = &mine;
  g.sig_left = &left;
  g.sig_rx = &x[1].req;
  zcclResult_t res = zp_sig_post(ctx, &mine, &left, x);
  if (res == zcclSuccess) res = zp_coll_exec(&g, a);
  if (res != zcclSuccess) {
    zp_xfers_cancel(ctx, x, 2);
    return res;
  }
  return zp_xfers_wait(&g, fn, x, 2); /* the signature is checked as it completes */
}
