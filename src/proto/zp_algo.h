/* Shared pieces of the algorithm files (proto-internal). */
#ifndef ZP_ALGO_H_
#define ZP_ALGO_H_

#include "zc_codec.h"
#include "zp_coll.h"
#include "zp_tag.h"
#include "zu_dtype.h"
#include "zu_error.h"

/* Block b of n elements split over nb blocks: [zp_off(n, nb, b), zp_off(n, nb, b + 1)). */
static inline size_t zp_off(size_t n, int nb, int b) {
  return (size_t)(((unsigned __int128)n * (unsigned)b) / (unsigned)nb);
}
static inline int zp_mod(int a, int n) { return ((a % n) + n) % n; }
/* The blocks of a ring over n elements: n split in N (allreduce), or N
 * blocks of n (reduce-scatter's input, allgather's output). */
static inline void zp_split_blocks(size_t n, int N, size_t* boff, size_t* blen) {
  for (int b = 0; b < N; b++) {
    boff[b] = zp_off(n, N, b);
    blen[b] = zp_off(n, N, b + 1) - boff[b];
  }
}
static inline void zp_whole_blocks(size_t n, int N, size_t* boff, size_t* blen) {
  for (int b = 0; b < N; b++) boff[b] = (size_t)b * n, blen[b] = n;
}
/* A reducing ring's blocks: allreduce's count split in N, or
 * reduce-scatter's N blocks of count; returns the values in sendbuff. */
static inline size_t zp_ring_blocks(const zp_coll_args_t* a, int N, int allreduce, size_t* boff, size_t* blen) {
  if (allreduce) {
    zp_split_blocks(a->count, N, boff, blen);
    return a->count;
  }
  zp_whole_blocks(a->count, N, boff, blen);
  return a->count * (size_t)N;
}
/* Piece c of a run of n elements cut in pieces of C: its first element
 * *o and its length (0 past the end). */
static inline size_t zp_piece(size_t n, size_t C, size_t c, size_t* o) {
  *o = c * C;
  if (*o >= n) return *o = 0;
  return n - *o < C ? n - *o : C;
}
static inline uint8_t* zp_at(const void* base, size_t elems, size_t esize) {
  return (uint8_t*)base + elems * esize;
}
/* Recursive doubling over p, the largest power of two <= n ranks
 * (MPICH's fold): of the first 2 rem ranks (rem = n - p) the even ones
 * hand their data to the odd neighbour and sit out. zp_rd_vrank: a rank's
 * place among the p (-1: it sits out); zp_rd_rank: the rank at place v. */
static inline int zp_pow2_below(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
static inline int zp_rd_vrank(int r, int rem) { return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem; }
static inline int zp_rd_rank(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }
/* ceil(log2 n), n >= 1. */
static inline int zp_log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) l++;
  return l;
}
/* floor(log2 n), n >= 1: the depth of a binomial tree of n ranks (the
 * most set bits of any relative rank below n). */
static inline int zp_log2_floor(int n) {
  int l = 0;
  while ((2 << l) <= n) l++;
  return l;
}
/* Binomial trees over relative ranks v (0 the root): the bit below which
 * v's children hang (a power of two >= N for the root); v's parent is
 * v - zp_tree_span(v, N). */
static inline int zp_tree_span(int v, int N) { return v ? v & -v : 1 << zp_log2_ceil(N); }
/* v's children, nearest first: child[i] = v + 2^i, whose subtree is
 * [child[i], end[i]). Returns how many (at most 31). */
static inline int zp_tree_children(int v, int N, int* child, int* end) {
  int span = zp_tree_span(v, N), n = 0;
  for (int m = 1; m < span && v + m < N; m <<= 1, n++) {
    child[n] = v + m;
    end[n] = v + 2 * m < N ? v + 2 * m : N;
  }
  return n;
}
/* The op the device reduces with: AVG sums, then divides at the end. */
static inline zcclRedOp_t zp_reduce_op(zcclRedOp_t op) { return op == zcclAvg ? zcclSum : op; }

/* The communicator's link model (latency s, bandwidth bytes/s), or a
 * guess before calibration. */
static inline double zp_link_alpha(const zp_ctx_t* ctx) { return ctx->link ? ctx->link->alpha : 20e-6; }
static inline double zp_link_bandwidth(const zp_ctx_t* ctx) { return ctx->link ? ctx->link->bandwidth : 1e9; }
/* Whether the ranks reach each other over shared memory only
 * (zp_link_t.shm); not calibrated yet counts as a network. */
static inline int zp_link_shm(const zp_ctx_t* ctx) { return ctx->link && ctx->link->shm; }
/* Pipeline pieces of at most cap bytes, cut to what goes eagerly over the
 * link (zp_link_t.eager_bytes, over TCP; a multiple of 4 KiB) where that
 * is less: a larger piece goes by rendezvous, whose handshake queues
 * behind the data already on the socket and idles the link between pieces
 * (4 MiB chain pieces on 1 Gbit/s links: half the link rate). Under 64 KiB
 * (or none: shared memory) the transport's own choice stands. */
static inline size_t zp_eager_cap(const zp_ctx_t* ctx, size_t cap) {
  if (ctx->link && ctx->link->eager_bytes >= (64 << 10) && ctx->link->eager_bytes < (double)cap)
    return (size_t)ctx->link->eager_bytes & ~(size_t)4095;
  return cap;
}

/* A temporary from the communicator's buffer pool, released by zp_tmp_put. */
zcclResult_t zp_tmp_get(const zp_ctx_t* ctx, size_t bytes, void** buf);
void zp_tmp_put(const zp_ctx_t* ctx, void* buf);
/* Elements per slice so that `per` temporaries of slice/nblocks elements
 * fit the pool (at least one element per block). */
size_t zp_slice_elems(const zp_ctx_t* ctx, size_t count, size_t esize, int nblocks, int per);

/* Ring allgather in place over buf: block b is boff[b]/blen[b] elements of
 * es bytes; this rank holds block `me` (its rank, or its rank relative to
 * a root: the ring's neighbours are the same). tagbase: a zp_sub whose
 * part and chunk its messages keep; the ring numbers the steps. */
zcclResult_t zp_ring_allgather_blocks(const zp_ctx_t* ctx, uint8_t* buf, size_t es, const size_t* boff,
                                      const size_t* blen, int me, uint32_t tagbase);

/* Bytes per piece of a pipelined chain of `bytes` (a multiple of 4 KiB),
 * from the link model: the same on every rank. */
size_t zp_chain_piece(const zp_ctx_t* ctx, size_t bytes);

/* Pieces the ring cuts a block of block_elems elements of es bytes into
 * (>= 1): what its pipeline overlaps. */
int zp_ring_block_pieces(const zp_ctx_t* ctx, size_t block_elems, size_t es);

/* Calls shared between families. */
/* An allreduce on one rank: the input, AVG divided by 1 (ring, direct). */
zcclResult_t zp_allreduce_alone(const zp_ctx_t* ctx, const zp_coll_args_t* a);
/* Whether count gives every rank an element (ring, direct, Rabenseifner). */
int zp_allreduce_blocks_usable(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room);
/* Binomial broadcast of bytes at buf from root, its messages tagged sub. */
zcclResult_t zp_tree_broadcast_sub(const zp_ctx_t* ctx, void* buf, size_t bytes, int root, uint32_t sub);
/* Recursive-doubling allreduce whose messages keep sub0's part and chunk:
 * step 0 the fold-in, 1 + i round i, ZP_TAG_STEP_LAST the fold-out. */
zcclResult_t zp_rd_allreduce_sub(const zp_ctx_t* ctx, const zp_coll_args_t* a, uint32_t sub0);

/* ---- the mailbox (zp_mailbox.c) ------------------------------------------------
 * Made with the calibration where every rank is on one machine: every rank
 * exchanges its window's key with every other (ZP_TAG_ALGO at step
 * ZP_MBOX_STEP, above the calibration's steps), then all agree. */
#define ZP_MBOX_STEP 1000
zcclResult_t zp_mbox_open(const zp_ctx_t* ctx, zp_mbox_t* mb);
/* Whether a message of bytes goes by ctx's mailbox (host memory only). */
int zp_mbox_fits(const zp_ctx_t* ctx, size_t bytes);
/* Sends msg to every peer and waits for every peer's: in[q], got[q] its
 * message and length in this rank's window, readable until this rank's
 * next exchange. Waits as zp_xfers_wait does (timeouts, lost peers, stalls). */
zcclResult_t zp_mbox_exchange(const zp_ctx_t* ctx, const char* what, const void* msg, size_t bytes,
                              const uint8_t** in, size_t* got);
/* Marks done the mailbox receives among x whose flag came; 1 if any did. */
int zp_mbox_poll(zp_xfer_t* x, int n);

/* ---- algorithms as descriptors ----------------------------------------------
 * Every algorithm is one zp_algo_t, defined in the file of its family with
 * its cost beside its code; zp_algos.c lists them all (ZP_ALGO_LIST), and
 * choosing one is a loop over that list (zp_algo_select). */

/* What an algorithm needs of the call's codec: any one of these
 * capabilities (the codec table's, zc_codec.h); 0: it moves the data
 * uncompressed. */
#define ZP_NEEDS_HOMOMORPHIC ZC_CAP_HOMOMORPHIC /* adds streams as they are */
#define ZP_NEEDS_DOC ZC_CAP_DOC                 /* decompress, operate, compress at every hop */
#define ZP_NEEDS_STREAM ZC_CAP_STREAM           /* zccl's own stream format */
#define ZP_NEEDS_LOSSY ZC_CAP_LOSSY
#define ZP_NEEDS_LOSSLESS ZC_CAP_LOSSLESS
#define ZP_NEEDS_ANY (ZC_CAP_LOSSY | ZC_CAP_LOSSLESS) /* compress once, move streams */

typedef struct zp_algo {
  const char* name;     /* as ZCCL_ALGO names it; one name may serve several collectives */
  const char* desc;     /* one line, for the log and zccl-info --algos */
  zp_coll_id_t coll;
  unsigned needs;       /* a codec with any of these capabilities (ZP_NEEDS_*); 0: uncompressed */
  unsigned forced_only; /* codecs with any of these it runs with only when ZCCL_ALGO names it */
  /* Whether it can run the call with `room` bytes of the pool free (NULL:
   * always); every rank answers the same. */
  int (*usable)(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t room);
  double (*cost)(const zp_ctx_t* ctx, const zp_coll_args_t* a); /* modelled seconds */
  zcclResult_t (*run)(const zp_ctx_t* ctx, const zp_coll_args_t* a);
} zp_algo_t;

/* The table (zp_algos.c): zp_algo_count() entries, in the order ties go. */
size_t zp_algo_count(void);
const zp_algo_t* zp_algo_at(size_t i);

/* ---- framed messages (zp_frame.c) ------------------------------------------------
 * A small uncompressed allreduce on host memory run by an algorithm that
 * frames (recursive doubling, one-shot) carries its call signature in its
 * own messages (ctx->sig_framed): each starts with a 16-byte head, so that
 * up to 76 data bytes still go as one of UCX's short shared-memory
 * messages (92 bytes). A framed call is an allreduce of at most
 * ZP_FRAME_BYTES: collective and root are implied, the count fits 16 bits,
 * and the compression setting goes as a hash (its eb rounded, for the
 * report). */
#define ZP_FRAME_BYTES 4096
typedef struct {
  uint16_t magic;
  uint8_t dtype, op;
  uint16_t count;
  int8_t codec;
  uint8_t mode;
  float eb;
  uint32_t setting; /* codec, mode, eb and minBytes, hashed */
} zp_frame_head_t;
_Static_assert(sizeof(zp_frame_head_t) == 16, "a frame's head is 16 bytes");
typedef struct {
  zp_frame_head_t head;
  _Alignas(16) uint8_t data[ZP_FRAME_BYTES]; /* the reduction reads it as the datatype */
} zp_frame_t;
_Static_assert(offsetof(zp_frame_t, data) == sizeof(zp_frame_head_t), "the data right after the head");

extern const zp_algo_t zp_algo_rd_allreduce, zp_algo_oneshot_allreduce;
/* Whether the call is small enough to frame, and whether the algorithm frames. */
int zp_frames(const zp_coll_args_t* a);
int zp_algo_frames(const zp_algo_t* algo);
/* This rank's head for the call's signature. */
zp_frame_head_t zp_frame_head(const zp_sig_t* s);
/* zcclInvalidUsage, saying how, unless the frame whose head is `in` that
 * came from src (got bytes) has this call's length (bytes of data) and
 * head (mine). */
zcclResult_t zp_frame_check(const zp_ctx_t* ctx, const char* what, int src, const zp_frame_head_t* mine,
                            const zp_frame_head_t* in, size_t got, size_t bytes);

/* The algorithm a call runs: the first that `rules` name for its
 * collective and size and that fits its codec (and, uncompressed, can run
 * it); else the cheapest by its cost, leaving out those forced_only for the
 * codec. The call's codec decides the kind: zcclCodecNone picks among the
 * uncompressed. NULL: none. *t gets its modelled time; *by_rule (may be
 * NULL) whether a rule chose it. rules may be NULL (the model alone). */
const zp_algo_t* zp_algo_select(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_algo_rules_t* rules,
                                double* t, int* by_rule);
/* The algorithm `rules` name for the call (its collective, bytes and
 * codec), without asking whether it can run it (tools: which rule
 * applies); NULL: the cost model chooses. */
const zp_algo_t* zp_algo_ruled_for(const zp_coll_args_t* a, const zp_algo_rules_t* rules);
/* The collective's name in ZCCL_ALGO rules ("allreduce", ...). */
const char* zp_algo_coll_name(zp_coll_id_t coll);

/* ---- the cost model's shared pieces --------------------------------------------
 * alpha-beta per message with the communicator's learnt link (zp_link_t)
 * and a host reduction rate; each algorithm's cost counts its steps and the
 * bytes each rank sends and reduces. The rates and the ratio below are the
 * defaults; costs read them through zp_compress_bps() and its siblings, which
 * take zp_link_t.speeds where a tool set it. */
#define ZP_REDUCE_BYTES_PER_S 2e9
static inline double zp_call_bytes(const zp_coll_args_t* a) { return (double)(a->count * zu_dtype_size(a->datatype)); }
/* The compressed algorithms' codec rates (decompression priced as
 * compression unless speeds says otherwise): this project's single-core
 * figures (perf/codec_table.sh: compress and decompress about 2 GB/s,
 * homomorphic sum about 1 GB/s), taken a little lower; the ratio is
 * assumed 4 (TEMP at REL 1e-3 gives 8-11). */
#define ZP_AUTO_COMPRESS_BPS 1.5e9
#define ZP_AUTO_HOP_BPS 1.0e9
/* Compress and sum in one pass (zd_hop_values): measured at about 0.8x
 * of the two in turn since those got their SIMD paths
 * (docs/measurements/codec.md), so priced at 0.8x of the two defaults in
 * turn, and the ring compresses, then sums (zp_fuses). */
#define ZP_AUTO_HOP_VALUES_BPS 0.5e9
#define ZP_AUTO_RATIO 4.0
/* The value-range scan a REL bound needs (zp_eb_cost) reads the input
 * once: about twice compression's rate on one core (zccl-scale). */
#define ZP_AUTO_RANGE_BPS 3.0e9
/* The figures the model prices with: the link's zp_speeds_t where set,
 * else the defaults above (a communicator's: always the defaults). */
static inline double zp_speed_pick(double set, double dflt) { return set > 0 ? set : dflt; }
#define ZP_SPEED(ctx, f) ((ctx)->link ? (ctx)->link->speeds.f : 0)
static inline double zp_compress_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, compress_bps), ZP_AUTO_COMPRESS_BPS);
}
static inline double zp_decompress_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, decompress_bps), zp_compress_bps(ctx));
}
static inline double zp_hop_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, hop_bps), ZP_AUTO_HOP_BPS);
}
static inline double zp_hop_values_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, hop_values_bps), ZP_AUTO_HOP_VALUES_BPS);
}
static inline double zp_reduce_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, reduce_bps), ZP_REDUCE_BYTES_PER_S);
}
static inline double zp_ratio(const zp_ctx_t* ctx) { return zp_speed_pick(ZP_SPEED(ctx, ratio), ZP_AUTO_RATIO); }
static inline double zp_range_bps(const zp_ctx_t* ctx) {
  return zp_speed_pick(ZP_SPEED(ctx, range_bps), ZP_AUTO_RANGE_BPS);
}
#undef ZP_SPEED
/* A host codec's rate per rank: rate over the ranks sharing each core of
 * the busiest machine (a GPU's codec shares nothing). Only the agreed link
 * and share enter, so every rank prices the same. */
static inline double zp_codec_rate(const zp_ctx_t* ctx, double rate) {
  double share = ctx->link && ctx->link->cpu_share > 1 ? ctx->link->cpu_share : 1;
  return zd_dev_kind(ctx->dev) == ZD_CUDA ? rate : rate / share;
}
/* A relay's hop: the calibrated latency is a round in which every rank
 * exchanges at once, which with more ranks than cores waits for the time
 * slices of every rank sharing a core; in a relay (a chain, the pipelined
 * allgather's ring) one rank wakes a sleeping other, whose core is mostly
 * free: the latency over the ranks per core. One rank a core: the same
 * (docs/measurements/scale.md, "A relay's hop on shared cores"). */
static inline double zp_hop_alpha(const zp_ctx_t* ctx) {
  double share = ctx->link && ctx->link->cpu_share > 1 ? ctx->link->cpu_share : 1;
  return zp_link_alpha(ctx) / share;
}
/* A pipeline of k pieces down `hops` links: the first piece crosses every
 * hop, a relay's latency and `first` seconds each; every later one follows
 * a stage behind, `stage` seconds or a latency where that is longer. Pieces
 * posted back to back overlap their latencies instead of adding them. */
static inline double zp_pipeline_cost(const zp_ctx_t* ctx, double hops, double k, double first, double stage) {
  double al_s = zp_hop_alpha(ctx);
  return hops * (al_s + first) + (k - 1) * (stage > al_s ? stage : al_s);
}
/* A pipelined chain of n bytes (broadcast, or reduce adding each piece on the way): zp_chain.c. */
double zp_chain_cost(const zp_ctx_t* ctx, double n, int reduces);
/* The sparse chain (zp_sparse.c), which codec=auto also weighs. */
double zp_sparse_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a);

/* The compressed rings (zp_chunk_ring.c): a block of maxb values goes in about 4
 * chunks of zp_doc_chunk_values values (when the pool has room): enough to
 * overlap the codec work on one with the transfer of the others, few
 * enough that per-message costs stay small (docs/measurements/compressed.md,
 * "Chunk sizes"). The cost model uses the same. */
static inline size_t zp_doc_chunk_values(size_t maxb) {
  size_t c = (maxb + 3) / 4, lo = 16384, hi = 262144;
  c = c < lo ? lo : c > hi ? hi : c;
  return c > maxb ? (maxb ? maxb : 1) : c;
}
/* The rings' chunks (DOC and homomorphic): zp_doc_chunk_values, so that a
 * rank's codec work overlaps its transfers. With more ranks than cores
 * (cpu_share > 1) a rank's wait is another rank's compute time anyway, and
 * every chunk costs messages and wake-ups: one chunk a block, up to
 * ZP_RING_CHUNK_MAX values (the pool may make it smaller; figures in
 * docs/measurements/compressed.md, "Chunk sizes"). */
#define ZP_RING_CHUNK_MAX ((size_t)1 << 20)
static inline size_t zp_ring_chunk_values(const zp_ctx_t* ctx, size_t maxb) {
  /* A GPU (and sim, standing in for one) computes off the host's cores:
   * the chunks then overlap its work with the transfers whatever the share. */
  if (!(ctx->link && ctx->link->cpu_share > 1) || zd_dev_kind(ctx->dev) != ZD_HOST) return zp_doc_chunk_values(maxb);
  return maxb < ZP_RING_CHUNK_MAX ? (maxb ? maxb : 1) : ZP_RING_CHUNK_MAX;
}
#endif /* ZP_ALGO_H_ */
