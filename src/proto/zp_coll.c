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
  ZU_CHECK(zp_agree(ctx, &z, 1, -1, zp_sub(ZP_TAG_AUTO_ZEROS, 0, 0)));
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

/* The uncompressed algorithm for a call (t: its modelled time; ruled: set
 * by ZCCL_ALGO), and its run. */
static const zp_algo_t* zp_plain_choice(const zp_ctx_t* ctx, const zp_coll_args_t* a, double* t, int* ruled) {
  zp_coll_args_t plain = *a;
  plain.compression.codec = zcclCodecNone;
  return zp_algo_select(ctx, &plain, ctx->rules, t, ruled);
}

static zcclResult_t zp_plain_run(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_algo_t* algo, double t,
                                 int ruled) {
  const char* fn = zp_coll_name(a->coll);
  ZU_RETURN_ERR_IF(algo == NULL, zcclInternalError, "%s: no algorithm", fn);
  if (ZU_LOG_ENABLED(ZU_LOG_INFO, ZU_LOG_TUNING))
    ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: %s%s (model %.1f us; link %.1f us, %.4g GB/s)",
            fn, a->count, zu_dtype_name(a->datatype), ctx->nranks, algo->name, ruled ? " (ZCCL_ALGO)" : "", t * 1e6,
            ctx->link ? ctx->link->alpha * 1e6 : 0, ctx->link ? ctx->link->bandwidth / 1e9 : 0);
  return algo->run(ctx, a);
}

static zcclResult_t zp_coll_dispatch(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const char* fn = zp_coll_name(a->coll);
  const zcclCompression_t* c = &a->compression;
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  int compress = zp_wants_compression(ctx, a), ruled = 0;
  if (compress) {
    double tc = 0;
    const zp_algo_t* cal = zp_algo_select(ctx, a, ctx->rules, &tc, &ruled);
    if (c->codec == zcclCodecAuto) { /* compress only where the model says it pays */
      zp_coll_args_t plain = *a, rle = *a;
      plain.compression.codec = zcclCodecNone;
      rle.compression.codec = zcclCodecRle;
      double tp = 0, ts = HUGE_VAL, zeros = 0;
      zp_algo_select(ctx, &plain, NULL, &tp, NULL);
      /* Sampled (one small allreduce) only where even all-zero data could
       * make the sparse chain pay: the same answer on every rank. */
      if ((a->coll == ZP_COLL_ALLREDUCE || a->coll == ZP_COLL_REDUCE) && bytes >= ZP_AUTO_SPARSE_MIN_BYTES &&
          zd_codec_runs(ctx->dev, zc_codec_info(zcclCodecRle)) && zp_sparse_auto_cost(ctx, a, 1.0) < tp) {
        ZU_CHECK(zp_agreed_zeros(ctx, a, &zeros));
        if (zeros >= ZP_AUTO_SPARSE_ZEROS) ts = zp_sparse_auto_cost(ctx, a, zeros);
      }
      if (ts < tp && (!cal || ts < tc)) {
        double t2 = 0;
        const zp_algo_t* sp = zp_algo_select(ctx, &rle, NULL, &t2, NULL);
        if (sp) {
          ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: codec=auto, %.0f%% zeros: %s (model %.1f us; "
                  "uncompressed %.1f us, hz %.1f us)", fn, a->count, zu_dtype_name(a->datatype), ctx->nranks,
                  zeros * 100, sp->desc, ts * 1e6, tp * 1e6, cal ? tc * 1e6 : 0);
          return sp->run(ctx, &rle);
        }
      }
      if (cal && !(tc < tp)) {
        ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: codec=auto sends it uncompressed (model %.1f us, "
                "compressed %.1f us; link %.4g GB/s)", fn, a->count, zu_dtype_name(a->datatype), ctx->nranks,
                tp * 1e6, tc * 1e6, ctx->link ? ctx->link->bandwidth / 1e9 : 0);
        cal = NULL;
        compress = 0;
      }
    }
    if (cal) {
      ZU_INFO(ZU_LOG_TUNING, "%s count %zu %s, %d ranks: compressed, %s %s(codec %d, mode %d, eb %g; model %.1f us)",
              fn, a->count, zu_dtype_name(a->datatype), ctx->nranks, cal->desc, ruled ? "(ZCCL_ALGO) " : "",
              c->codec, c->mode, c->eb, tc * 1e6);
      return cal->run(ctx, a);
    }
    /* Said once per collective: this one moves its data uncompressed. */
    static atomic_int warned[ZP_NUM_COLLS];
    if (compress && !atomic_exchange(&warned[a->coll], 1))
      ZU_WARN("%s: compression is set, but this collective has no compressed algorithm for codec %d yet in "
              "zccl %d.%d.%d: its data goes uncompressed (exact)",
              fn, c->codec, ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH);
  }
  double t = 0;
  const zp_algo_t* algo = zp_plain_choice(ctx, a, &t, &ruled);
  return zp_plain_run(ctx, a, algo, t, ruled);
}

/* The ring reduce-scatter and pairwise alltoall are each the only one of
 * their collective, priced uncompressed whatever the setting. */
double zp_coll_estimate(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  const zcclCompression_t* c = &a->compression;
  double N = ctx->nranks, n = (double)(a->count * zu_dtype_size(a->datatype));
  if (ctx->nranks < 2 || a->count == 0) return 0;
  /* The premultiplication reads and writes the input once more. */
  double pre = a->premul ? (a->coll == ZP_COLL_REDUCESCATTER ? N : 1) * n / zp_reduce_bps(ctx) : 0;
  zp_coll_args_t plain = *a;
  plain.compression.codec = zcclCodecNone;
  double tp = 0, tc = 0;
  if (!zp_algo_select(ctx, &plain, NULL, &tp, NULL)) tp = 0;
  if (a->coll == ZP_COLL_REDUCESCATTER || a->coll == ZP_COLL_ALLTOALL) return pre + tp;
  if (zp_wants_compression(ctx, a) && zp_algo_select(ctx, a, ctx->rules, &tc, NULL) != NULL)
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

/* Whether an uncompressed call on host memory carries its signature in its
 * own messages (frames or carries it, below) instead of a message pair of
 * its own, which over TCP costs a fifth of a 64 KiB allgather
 * (docs/measurements/collectives.md). Only collectives in which every rank
 * receives, so that every rank checks a peer's signature (a broadcast's
 * root would not), and up to ZP_CARRY_BYTES a rank: above it the message
 * pair costs nothing next to the data. What it reads is the call's fields
 * and the device's kind, alike on ranks whose calls agree. */
#define ZP_CARRY_BYTES (1u << 20)

static int zp_carries(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t bytes = a->count * zu_dtype_size(a->datatype);
  int everyone_receives = a->coll == ZP_COLL_ALLREDUCE || a->coll == ZP_COLL_ALLGATHER ||
                          a->coll == ZP_COLL_REDUCESCATTER || a->coll == ZP_COLL_ALLTOALL;
  return everyone_receives && bytes > 0 && bytes <= ZP_CARRY_BYTES && !a->premul && !zp_wants_compression(ctx, a) &&
         zd_dev_kind(ctx->dev) == ZD_HOST;
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
  /* A peer whose call stalled may have sent its signature already. */
  char why[400];
  if (zp_stall_sig_check(ctx, &mine, fn, why, sizeof why) != zcclSuccess)
    return ZU_ERROR(zcclInvalidUsage, "%s", why);
  zp_ctx_t g = *ctx;
  /* A small uncompressed allreduce on host memory that the model gives to
   * an algorithm that frames (recursive doubling, one-shot) carries the
   * signature in its own messages, a 16-byte head in a copy (zp_frame.c):
   * one message pair fewer, most of such a call's time. Other calls that
   * zp_carries takes carry all of it in front of each message instead
   * (zp_xfers_post). The choice depends on the signature's fields and the
   * communicator's model only, so ranks whose calls agree make it alike; a
   * rank whose call differs sends messages its peers reject, and ranks
   * that stall send each other their signatures (zp_xfers_wait). */
  if (zp_carries(ctx, a)) {
    double t = 0;
    int ruled = 0;
    const zp_algo_t* algo = zp_plain_choice(ctx, a, &t, &ruled);
    if (a->coll == ZP_COLL_ALLREDUCE && zp_frames(a) && zp_algo_frames(algo))
      g.sig_framed = &mine;
    else
      g.sig_carried = &mine;
    g.sig_algo = algo ? algo->name : NULL;
    return zp_plain_run(&g, a, algo, t, ruled);
  }
  zp_xfer_t x[2];
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
