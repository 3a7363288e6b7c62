/* ZCCL's computation framework: the chunk-pipelined compressed rings,
 * DOC (decompress-operate-compress, codec szp) and homomorphic (hZCCL,
 * codec hz), reduce-scatter and allreduce, and the DOC chain for reduce
 * (at the end of this file).
 *
 * Ring reduce-scatter over N blocks: at step s rank r sends the partial
 * result of block r-s-1 to the right and gets that of block r-s-2 from the
 * left, as a stream. DOC: each arriving stream is decompressed, this
 * rank's raw piece of the block is added (zd_reduce_fill), and the partial
 * result is compressed again for the next step. Homomorphic: this rank's
 * piece is compressed (once: each of its N blocks is compressed at exactly
 * one step) and added to the arriving stream in the integer domain
 * (zd_hop_values: both in one pass; zd_encode and zd_reduce_encoded on a device
 * without it); the bounds are zp_compress_once.c's. Blocks travel in chunks (about 4 a
 * block, zp_doc_chunk_values, zp_algo.h) as a wavefront (zp_ring_round):
 * each chunk is handled as soon as it has arrived and sent on at once,
 * while the others are in flight, and the codec drives the transport
 * between its chunks (zp_poll), so a rank that computes keeps its
 * messages moving. AllReduce then sends the finished streams round the ring
 * unchanged (compress once) and every rank decompresses all N, its own
 * too, so every rank holds the same bits. Buffers that do not fit the pool
 * are done in rounds of columns (the same elements of every block).
 *
 * DOC's bounds, with eb the absolute bound (REL: of every rank's range, one grid):
 * a block's partial result is compressed once per hop, N-1 times, each
 * time within eb of the float value compressed (the codec checks the
 * reconstruction), and errors pass through an addition unchanged, so
 *   - ReduceScatter SUM: (N-1) eb (the last rank adds its raw values and
 *     keeps the sum raw); AllReduce SUM: N eb (one more compression for the
 *     allgather); AVG: those over N;
 *   - MAX/MIN: eb. The grid rounding is monotone and a decoded value
 *     compresses to itself (exactly on the grid, or an exception kept raw),
 *     so the compressed maximum of a decoded partial and a raw value is the
 *     maximum of the two once-quantized values: by induction the result is
 *     the maximum of every input quantized once, as in the homomorphic
 *     ring. (Without that, max being 1-Lipschitz would still give N eb.)
 * plus the float roundings of the N-1 additions (and AVG's division). The
 * fill value absorbs (fill in any input: fill out, as hz's reduction does; a
 * partial result that lands exactly on the fill value reads as fill);
 * NaN and +-Inf follow IEEE arithmetic and travel as raw exceptions. */
#include <stdlib.h>
#include <string.h>

#include "zu_time.h"

#include "zp_stream.h"

#define ZP_DOC_MAX_CHUNKS 32   /* chunks of a block per round: messages in flight */

/* What a step does with each arriving chunk of block rb. */
enum {
  ZP_DOC_REDUCE, /* decompress, add this rank's piece, compress in place (sent next) */
  ZP_DOC_RESULT, /* decompress, add this rank's piece into recvbuff (reduce-scatter's end) */
  ZP_HZ_REDUCE,  /* compress this rank's piece, add the streams in place (homomorphic; sent next) */
  ZP_HZ_RESULT   /* the same, then decompress into recvbuff (reduce-scatter's end) */
};

typedef struct {
  const zp_ctx_t* ctx;
  const zp_coll_args_t* a;
  const char* what;
  const zc_codec_info_t* codec; /* the call's (auto: hz's table) */
  zc_params_t p;
  size_t es, c, cap, capr; /* bytes per value; values per chunk; a chunk stream's room, rounded to 64 */
  size_t lo;               /* this round's first column */
  const size_t *soff, *slen; /* this round's piece of each block */
  int K;                   /* chunks this round */
  uint8_t* st[3];          /* chunk k's stream at st[i] + k * capr (the chain has one set, the rings three) */
  size_t sz[3][ZP_DOC_MAX_CHUNKS];
  void* T;                 /* one decompressed chunk, or (homomorphic) this rank's chunk stream */
  size_t tsz;              /* the size of that stream */
  /* Homomorphic on a device with several streams and no fused step (cuda,
   * sim): this rank's K chunk streams of a step are compressed ahead, chunk
   * k into T + k * capr on stream k while the chunks travel (ghZCCL);
   * chunk k's sum follows on the same stream (pend). */
  int ahead;
  size_t tszk[ZP_DOC_MAX_CHUNKS];
  /* With ahead, chunk k's sum (and the rest of its work) also runs on
   * stream k, so the sums of a step's chunks overlap on the device and the
   * host does not wait for one before queueing the next; its send goes
   * when the sum has passed (pend, sev: zp_ring_flush). */
  uint8_t pend[ZP_DOC_MAX_CHUNKS];
  zd_event_t sev[ZP_DOC_MAX_CHUNKS];
  uint8_t* mem;            /* st and T: one piece of the pool */
  zp_xfer_t x[2 * ZP_DOC_MAX_CHUNKS];  /* the chain's receives and sends */
  /* The rings: the receive into and the send from set i of chunk k,
   * whether the send is posted and not yet waited for, and the device's
   * last use of the set's chunk. */
  zp_xfer_t xr[3][ZP_DOC_MAX_CHUNKS], xs[3][ZP_DOC_MAX_CHUNKS];
  uint8_t spend[3][ZP_DOC_MAX_CHUNKS];
  zd_event_t ev[3][ZP_DOC_MAX_CHUNKS];
  /* Staged: the staging piece chunk k of set i goes out from, filled on the
   * device right behind the kernel that made the stream (zd_copy_sized),
   * so the send waits for nothing more than that kernel's mark; NULL: the
   * send copies out as any other (zp_xfers_post). */
  void* pst[3][ZP_DOC_MAX_CHUNKS];
  int staged;              /* zp_xfers_staged, asked once */
  /* A forwarded chunk (allgather steps) goes out from the very staging
   * buffer it came in by, which its copy in may still read: back after
   * pev (plate set). */
  zd_event_t pev[3][ZP_DOC_MAX_CHUNKS];
  uint8_t plate[3][ZP_DOC_MAX_CHUNKS];
  zp_poll_t poll; /* the transport's progress inside the codec (zp_poll) */
} zp_doc_t;

/* Compression and sum in one pass (zd_hop_values) where the device has
 * it and the model's rates say it beats compressing, then summing the two
 * streams; on the host it does not (zp_algo.h, ZP_AUTO_HOP_VALUES_BPS). */
static int zp_fuses(const zp_ctx_t* ctx) {
  return zd_has_hop_values(ctx->dev) && 1 / zp_hop_values_bps(ctx) < 1 / zp_compress_bps(ctx) + 1 / zp_hop_bps(ctx);
}

static int zp_fused(const zp_doc_t* d) { return zp_fuses(d->ctx) && (d->codec->caps & ZC_CAP_STREAM); }

/* The device stream of chunk k's reduce-scatter work (zp_doc_t.pend). */
static int zp_ring_lane(const zp_doc_t* d, int k) { return d->ahead ? k : 0; }

/* Chunk k of block b this round: offset and length (0 past the block's end). */
static size_t zp_doc_off(const zp_doc_t* d, int b, int k) { return d->soff[b] + (size_t)k * d->c; }
static size_t zp_doc_len(const zp_doc_t* d, int b, int k) {
  size_t at = (size_t)k * d->c, n = d->slen[b];
  return n > at ? (n - at < d->c ? n - at : d->c) : 0;
}

/* Queues the work on arrived chunk k of block rb, the stream s (*sz bytes,
 * rewritten in place). */
static zcclResult_t zp_doc_chunk(zp_doc_t* d, int how, int rb, int k, uint8_t* s, size_t* sz) {
  const zp_coll_args_t* a = d->a;
  zd_dev_t* dev = d->ctx->dev;
  size_t n = zp_doc_len(d, rb, k), off = zp_doc_off(d, rb, k);
  zcclRedOp_t op = zp_reduce_op(a->op);
  int hf = a->compression.hasFill;
  double f = a->compression.fillValue;
  const uint8_t* mine = zp_at(a->sendbuff, off, d->es);
  if (how == ZP_HZ_REDUCE || how == ZP_HZ_RESULT) {
    /* This rank's piece is compressed here, once, when it is first needed
     * (while the other chunks travel), and added to the arrived stream
     * without decompressing: in one pass where the device has it (the
     * piece's own stream is never written), else compressed into T and
     * added, queued in order, so T is free again when the next chunk's
     * compression runs. The bytes are the same either way. */
    if (zp_fused(d)) {
      ZU_CHECK(zd_hop_values(dev, op, &d->p, mine, n, s, sz, s, d->cap, sz));
    } else if (d->ahead) { /* compressed already (zp_ring_ahead) */
      uint8_t* tk = (uint8_t*)d->T + (size_t)k * d->capr;
      ZU_CHECK(zd_reduce_encoded(dev, d->codec, op, tk, &d->tszk[k], s, sz, s, d->cap, sz));
    } else {
      ZU_CHECK(zd_encode(dev, d->codec, &d->p, mine, n, d->T, d->cap, &d->tsz));
      ZU_CHECK(zd_reduce_encoded(dev, d->codec, op, d->T, &d->tsz, s, sz, s, d->cap, sz));
    }
    if (how == ZP_HZ_REDUCE) return zcclSuccess;
    return zd_decode(dev, d->codec, s, sz, zp_at(a->recvbuff, d->lo + (size_t)k * d->c, d->es), n);
  }
  ZU_CHECK(zd_decode(dev, d->codec, s, sz, d->T, n));
  if (how == ZP_DOC_RESULT) /* in place, recvbuff is this very piece of sendbuff: dst == b */
    return zd_reduce_fill(dev, zp_at(a->recvbuff, d->lo + (size_t)k * d->c, d->es), d->T, mine, n, a->datatype, op,
                          hf, f);
  ZU_CHECK(zd_reduce_fill(dev, d->T, d->T, mine, n, a->datatype, op, hf, f));
  /* Queued after the decompression that read s and *sz: it may overwrite them. */
  return zd_encode(dev, d->codec, &d->p, d->T, n, s, d->cap, sz);
}

/* ---- the rings' pipeline ------------------------------------------------------
 * One round is T steps (the reduce-scatter's N-1, then for allreduce the
 * allgather's N-1) over the K chunks of each block, run as a wavefront:
 * chunk k of step t+1 goes right as soon as chunk k of step t has arrived
 * and been handled, while the later chunks of step t still travel, so no
 * step waits for the end of the one before (each link carries its chunks
 * in the order they are ready, one after the other, rather than a whole
 * step's at once). Step t receives into set t%3 and step t+1 sends that set
 * on; a set's chunk is received into again (posted one step ahead) only
 * once its send is done and the device has finished reading it. */
static int zp_ring_set(int t) { return (t % 3 + 3) % 3; }
static uint32_t zp_ring_tag(int t, int k) { return zp_sub(ZP_TAG_ALGO, (uint32_t)t, (uint32_t)k); }

/* Posts the receive of chunk k for step t, once its set is free. */
static zcclResult_t zp_ring_post_recv(zp_doc_t* d, int t, int k) {
  const zp_ctx_t* ctx = d->ctx;
  int i = zp_ring_set(t), left = (ctx->rank + ctx->nranks - 1) % ctx->nranks;
  if (d->spend[i][k]) {
    d->spend[i][k] = 0;
    ZU_CHECK(zp_xfers_wait(ctx, d->what, &d->xs[i][k], 1));
  }
  ZU_CHECK(zd_event_wait(ctx->dev, d->ev[i][k]));
  zp_recv_at(ctx, &d->xr[i][k], left, zp_ring_tag(t, k), d->st[i] + (size_t)k * d->capr, d->cap);
  d->xr[i][k].var = 1; /* a stream's size is known only to its sender */
  d->xr[i][k].stage_async = 1; /* staged: the copy in goes first on the chunk's stream (zp_ring_round) */
  ZU_CHECK(zp_xfers_post(ctx, &d->xr[i][k], 1));
  return zcclSuccess;
}

/* Queues, on the current device stream, the copy of chunk k of set i's
 * stream (its size *still to be written* by the work queued before) to a
 * staging piece it will be sent from (pst), when messages are staged and
 * the pool has a piece. */
static zcclResult_t zp_ring_prestage(zp_doc_t* d, int i, int k) {
  if (!d->staged) return zcclSuccess;
  zd_dev_t* dev = d->ctx->dev;
  ZU_CHECK(zd_stage_try(dev, d->cap, &d->pst[i][k]));
  if (d->pst[i][k] == NULL) return zcclSuccess;
  return zd_copy_sized(dev, d->pst[i][k], d->st[i] + (size_t)k * d->capr, &d->sz[i][k], d->cap);
}

/* Sends chunk k of set i (block b's) as step t's; its size is known (the
 * device has passed its last write). From its staging piece when
 * zp_ring_prestage made one (that copy has passed with the size); else a
 * staging copy goes on the chunk's device stream (zp_ring_lane), so it
 * waits only for that chunk's work. */
static zcclResult_t zp_ring_post_send(zp_doc_t* d, int t, int k, int i, int b) {
  const zp_ctx_t* ctx = d->ctx;
  zp_send_at(ctx, &d->xs[i][k], (ctx->rank + 1) % ctx->nranks, zp_ring_tag(t, k), d->st[i] + (size_t)k * d->capr,
             d->sz[i][k]);
  if (d->pst[i][k]) { /* the send owns it now (zp_xfers_wait gives it back) */
    d->xs[i][k].stage = d->pst[i][k];
    d->xs[i][k].prestaged = 1;
    d->xs[i][k].stage_late = d->plate[i][k];
    d->xs[i][k].stage_ev = d->pev[i][k];
    d->pst[i][k] = NULL;
    d->plate[i][k] = 0;
  }
  int prev = zd_set_lane(ctx->dev, zp_ring_lane(d, k));
  zcclResult_t res = zp_xfers_post(ctx, &d->xs[i][k], 1);
  zd_set_lane(ctx->dev, prev);
  ZU_CHECK(res);
  d->spend[i][k] = 1;
  zp_count(ctx, zp_doc_len(d, b, k) * d->es, d->sz[i][k]);
  return zcclSuccess;
}

/* Step t's reduced chunks whose sums are queued but not yet sent on
 * (pend[k]: its sum ends at sev[k]) go right in chunk order, as far as
 * their sums have passed; all of them with wait_all. */
static zcclResult_t zp_ring_flush(zp_doc_t* d, int t, int i, int b, int wait_all) {
  for (int k = 0; k < d->K; k++) {
    if (!d->pend[k]) continue;
    if (!wait_all && !zd_event_done(d->ctx->dev, d->sev[k])) return zcclSuccess;
    ZU_CHECK(zd_event_wait(d->ctx->dev, d->sev[k])); /* its size, and the errors of its stream */
    d->pend[k] = 0;
    ZU_CHECK(zp_ring_post_send(d, t + 1, k, i, b));
  }
  return zcclSuccess;
}

/* Ends a round, also after an error (res): receives still posted are
 * cancelled (their buffers go back to the pool), the device is drained,
 * sends are waited for (bounded, all at once), as cancelling one would
 * close the endpoint to a peer that did no wrong; after a remote error (a
 * dead or silent peer: the communicator is broken anyway) they are
 * cancelled too, rather than wait a second ZCCL_TIMEOUT. Entries never
 * posted, or already waited for, are done (zp_ring_round clears them so).
 * Returns the first error. */
static zcclResult_t zp_ring_drain(zp_doc_t* d, zcclResult_t res) {
  const int n = 3 * ZP_DOC_MAX_CHUNKS;
  zp_xfers_cancel_what(d->ctx, d->what, &d->xr[0][0], n);
  zcclResult_t w = zd_sync(d->ctx->dev);
  if (res == zcclSuccess) res = w;
  for (int i = 0; i < 3; i++) /* staged for sends that never went (an error; the device is idle) */
    for (int k = 0; k < ZP_DOC_MAX_CHUNKS; k++) {
      zd_stage_put(d->ctx->dev, d->pst[i][k]);
      d->pst[i][k] = NULL;
      d->plate[i][k] = 0;
    }
  if (res == zcclRemoteError) {
    zp_xfers_cancel_what(d->ctx, d->what, &d->xs[0][0], n);
    return res;
  }
  w = zp_xfers_wait(d->ctx, d->what, &d->xs[0][0], n);
  return res == zcclSuccess ? w : res;
}

/* Queues the compression of this rank's chunk k of block b into dst (*sz
 * its size) on device stream k; *ev (if given) marks its end. On the host
 * (one stream) it runs now. send_set >= 0: dst is chunk k of that set, to
 * be sent: its staging copy follows on the same stream (zp_ring_prestage). */
static zcclResult_t zp_ring_compress(zp_doc_t* d, int b, int k, void* dst, size_t* sz, zd_event_t* ev, int send_set) {
  zd_dev_t* dev = d->ctx->dev;
  int prev = zd_set_lane(dev, k);
  zcclResult_t res = zd_encode(dev, d->codec, &d->p, zp_at(d->a->sendbuff, zp_doc_off(d, b, k), d->es),
                               zp_doc_len(d, b, k), dst, d->cap, sz);
  if (res == zcclSuccess && send_set >= 0) res = zp_ring_prestage(d, send_set, k);
  if (ev) *ev = zd_event_record(dev);
  zd_set_lane(dev, prev);
  return res;
}

/* Queues this rank's K chunk streams of block rb (compressed ahead, see
 * zp_doc_t.ahead); T_k's last reader, chunk k's sum of the step before,
 * ran on the same stream. */
static zcclResult_t zp_ring_ahead(zp_doc_t* d, int rb) {
  zcclResult_t res = zcclSuccess;
  for (int k = 0; k < d->K && res == zcclSuccess; k++)
    res = zp_ring_compress(d, rb, k, (uint8_t*)d->T + (size_t)k * d->capr, &d->tszk[k], NULL, -1);
  return res;
}

/* One round: reduce (DOC or homomorphic, `reduce`/`result` per chunk) and,
 * for allreduce, forward and decompress every block. */
static zcclResult_t zp_ring_round(zp_doc_t* d, int allreduce, int reduce, int result) {
  const zp_ctx_t* ctx = d->ctx;
  const zp_coll_args_t* a = d->a;
  zd_dev_t* dev = ctx->dev;
  int N = ctx->nranks, r = ctx->rank, K = d->K, T = (N - 1) * (allreduce ? 2 : 1);
  zcclResult_t res = zcclSuccess;
  memset(d->spend, 0, sizeof d->spend);
  memset(d->pend, 0, sizeof d->pend);
  memset(d->xr, 0, sizeof d->xr);
  memset(d->xs, 0, sizeof d->xs);
  zd_event_t now = zd_event_record(dev);
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < ZP_DOC_MAX_CHUNKS; k++) {
      d->xr[i][k].req.done = d->xs[i][k].req.done = 1; /* nothing posted: done, fine (zp_ring_drain) */
      d->ev[i][k] = now;
    }
  for (int k = 0; k < K && res == zcclSuccess; k++) res = zp_ring_post_recv(d, 0, k);
  /* The first sends' compressions share nothing: on a device with several
   * streams they are all queued now, chunk k on stream k, and run at once
   * (ghZCCL); on the host each runs where its send is posted, so the first
   * goes out without waiting for the others. */
  int j0 = zp_ring_set(-1), first_ahead = zd_lanes(dev) > 1;
  for (int k = 0; first_ahead && T > 0 && k < K && res == zcclSuccess; k++)
    res = zp_ring_compress(d, zp_mod(r - 1, N), k, d->st[j0] + (size_t)k * d->capr, &d->sz[j0][k], &d->ev[j0][k],
                           j0);
  for (int t = 0; t < T && res == zcclSuccess; t++) {
    int rs = t < N - 1, g = t - (N - 1); /* reduce-scatter step t, or allgather step g */
    int sb = rs ? zp_mod(r - t - 1, N) : zp_mod(r - g, N), rb = rs ? zp_mod(r - t - 2, N) : zp_mod(r - g - 1, N);
    int i = zp_ring_set(t);
    if (rs && d->ahead) res = zp_ring_ahead(d, rb);
    for (int k = 0; k < K && res == zcclSuccess; k++) {
      uint8_t* s = d->st[i] + (size_t)k * d->capr;
      if (t == 0) { /* the first send: compressed from sendbuff (set 2, free until step 2) */
        if (!first_ahead)
          res = zp_ring_compress(d, sb, k, d->st[j0] + (size_t)k * d->capr, &d->sz[j0][k], &d->ev[j0][k], j0);
        if (res == zcclSuccess) res = zd_event_wait(dev, d->ev[j0][k]); /* its size */
        if (res == zcclSuccess) res = zp_ring_post_send(d, 0, k, j0, sb);
      }
      if (res == zcclSuccess && t + 1 < T) res = zp_ring_post_recv(d, t + 1, k);
      if (res != zcclSuccess) break;
      if (res == zcclSuccess && rs) res = zp_ring_flush(d, t, i, rb, 0);
      /* The chunk's work on its stream, the staging copy that brings it in
       * first (queued, not waited for). It needs no other stream's: the
       * set's last use had passed before the receive was posted
       * (zp_ring_post_recv), and T_k is this stream's; its send's staging
       * copy goes on the same stream (zp_ring_post_send). */
      int prev = zd_set_lane(dev, zp_ring_lane(d, k));
      zp_xfer_t* xr = &d->xr[i][k];
      xr->stage_keep = !rs && t + 1 < T; /* forwarded next step: sent from its staging buffer */
      if (res == zcclSuccess) res = zp_xfers_wait(ctx, d->what, xr, 1);
      if (xr->stage_keep && xr->stage_late && xr->stage) {
        d->pst[i][k] = xr->stage;
        d->pev[i][k] = xr->stage_ev;
        d->plate[i][k] = 1;
        xr->stage = NULL;
      }
      if (res != zcclSuccess) {
        zd_set_lane(dev, prev);
        break;
      }
      d->sz[i][k] = d->xr[i][k].req.length;
      if (rs)
        res = zp_doc_chunk(d, t == N - 2 && !allreduce ? result : reduce, rb, k, s, &d->sz[i][k]);
      if (res == zcclSuccess && t + 1 < T) { /* on as soon as its size is known (the device has passed) */
        if (rs) {
          res = zp_ring_prestage(d, i, k);
          d->sev[k] = zd_event_record(dev);
          d->pend[k] = 1;
        } else {
          res = zp_ring_post_send(d, t + 1, k, i, rb); /* step t+1's sb */
        }
      }
      /* Decompressed while it travels: this rank's finished block (the
       * reduce-scatter's last step), then every block forwarded to it. */
      if (res == zcclSuccess && allreduce && t >= N - 2)
        res = zd_decode(dev, d->codec, s, &d->sz[i][k], zp_at(a->recvbuff, zp_doc_off(d, rb, k), d->es),
                            zp_doc_len(d, rb, k));
      d->ev[i][k] = zd_event_record(dev);
      zd_set_lane(dev, prev);
      if (res == zcclSuccess && rs) res = zp_ring_flush(d, t, i, rb, 0);
    }
    if (res == zcclSuccess && rs) res = zp_ring_flush(d, t, i, rb, 1);
  }
  return zp_ring_drain(d, res);
}

/* Chunk size (c0 values or less) and chunks per round (*kmax) for blocks
 * of maxb values and `sets` sets of chunk streams, from the pool as it is now (the same on
 * every rank): a chunk small enough that one stream of each set and the
 * decompressed chunk fill at most half of it. Takes the streams and the
 * chunk buffer from the pool as one piece (d->mem). */
static zcclResult_t zp_doc_plan(zp_doc_t* d, size_t maxb, size_t c0, int sets, int hz, size_t* kmax) {
  size_t room = zd_buf_largest(d->ctx->dev), S = (size_t)sets, tb, c = c0;
  /* The homomorphic step needs no T where the device fuses compression
   * and sum (zd_hop_values): its room goes to chunks in flight. */
  int no_T = hz && zp_fused(d);
  d->ahead = hz && !no_T && zd_lanes(d->ctx->dev) > 1; /* a T per chunk */
  for (;;) {
    d->cap = d->codec->ops->bound(&d->p, c);
    d->capr = (d->cap + 63) / 64 * 64;
    tb = (c * d->es + 63) / 64 * 64;
    if (hz && tb < d->capr) tb = d->capr; /* T holds this rank's chunk stream (homomorphic) */
    if (no_T) tb = 0;
    if (c == 1 || 2 * (S * d->capr + tb) <= room) break;
    c = (c + 1) / 2;
  }
  d->c = c;
  /* Chunks in flight: the more the better (docs/measurements/compressed.md,
   * "Chunk sizes"); an eighth of the pool left to others. */
  size_t use = room - room / 8;
  size_t per = S * d->capr + (d->ahead ? tb : 0), fixed = d->ahead ? 0 : tb;
  size_t k = use > fixed ? (use - fixed) / per : 1, need = (maxb + c - 1) / c;
  if (k > need) k = need;
  if (k > ZP_DOC_MAX_CHUNKS) k = ZP_DOC_MAX_CHUNKS;
  if (k < 1) k = 1;
  *kmax = k;
  ZU_CHECK(zp_tmp_get(d->ctx, S * k * d->capr + (d->ahead ? k : 1) * tb, (void**)&d->mem));
  for (size_t i = 0; i < 3; i++) d->st[i] = d->mem + (i < S ? i : S - 1) * k * d->capr;
  d->T = d->mem + S * k * d->capr;
  ZU_TRACE(ZU_LOG_COLL, "%s: eb %g, chunks of %zu values (streams of up to %zu bytes), %zu per round, %zu round(s)",
           d->what, d->p.eb, c, d->cap, k, maxb ? (maxb + k * c - 1) / (k * c) : 1);
  return zcclSuccess;
}

static void zp_doc_close(zp_doc_t* d) {
  if (d == NULL) return;
  (void)zd_sync(d->ctx->dev); /* nothing queued may outlive the buffers */
  zd_set_progress(d->ctx->dev, NULL, NULL);
  zp_tmp_put(d->ctx, d->mem);
  free(d);
}

/* A DOC collective's state: the bound over every rank's in[0, total) (one
 * grid), the chunk plan for blocks of up to maxb values in chunks of up
 * to c0 values with `sets` stream sets (hz: for the homomorphic step), the
 * transport's progress inside the codec; *slice: values a round takes of
 * each block. zp_doc_close undoes it. */
static zcclResult_t zp_doc_open(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t total, const char* what,
                                const size_t* soff, const size_t* slen, size_t maxb, size_t c0, int sets, int hz,
                                zp_doc_t** out, size_t* slice) {
  double eb = 0;
  size_t kmax = 0;
  *out = NULL;
  ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, total, 1, &eb));
  zp_doc_t* d = calloc(1, sizeof *d);
  ZU_RETURN_ERR_IF(d == NULL, zcclSystemError, "%s: out of memory", what);
  d->ctx = ctx, d->a = a, d->es = zu_dtype_size(a->datatype), d->p = zp_params(ctx, a, eb), d->soff = soff;
  d->codec = zc_codec_info(a->compression.codec);
  d->slen = slen, d->what = what, d->staged = zp_xfers_staged(ctx);
  d->poll.w = ctx->w;
  zd_set_progress(ctx->dev, zp_poll, &d->poll);
  zcclResult_t res = zp_doc_plan(d, maxb, c0, sets, hz, &kmax);
  if (res != zcclSuccess) {
    zp_doc_close(d);
    return res;
  }
  *slice = kmax * d->c;
  *out = d;
  return zcclSuccess;
}

/* The DOC ring (hz 0) or the homomorphic ring (hz 1) over the blocks of
 * zp_ring_blocks (REL: over all of sendbuff); allreduce: every block to
 * every rank; otherwise this rank's block to recvbuff. */
static zcclResult_t zp_chunk_ring(const zp_ctx_t* ctx, const zp_coll_args_t* a, int allreduce, int hz) {
  int N = ctx->nranks, r = ctx->rank;
  size_t boff[N], blen[N], total = zp_ring_blocks(a, N, allreduce, boff, blen);
  size_t es = zu_dtype_size(a->datatype), maxb = 0, soff[N], slen[N], m;
  for (int b = 0; b < N; b++) maxb = blen[b] > maxb ? blen[b] : maxb;
  const char* what = hz ? (allreduce ? "compressed allreduce (homomorphic ring)"
                                     : "compressed reduce-scatter (homomorphic ring)")
                        : (allreduce ? "compressed allreduce (DOC ring)" : "compressed reduce-scatter (DOC ring)");
  int reduce = hz ? ZP_HZ_REDUCE : ZP_DOC_REDUCE, result = hz ? ZP_HZ_RESULT : ZP_DOC_RESULT;
  zp_doc_t* d;
  size_t slice;
  zcclResult_t res;
  ZU_CHECK(zp_doc_open(ctx, a, total, what, soff, slen, maxb, zp_ring_chunk_values(ctx, maxb), 3, hz, &d,
                       &slice));
  for (size_t lo = 0; zp_slice(maxb, slice, lo, &m); lo += slice) {
    zp_slice_of(N, boff, blen, lo, lo + m, soff, slen);
    d->lo = lo, d->K = m ? (int)((m + d->c - 1) / d->c) : 1;
    ZU_CHECK_GOTO(zp_ring_round(d, allreduce, reduce, result), res, out);
    for (int b = 0; a->op == zcclAvg && b < N; b++) { /* after decompression: the fill is left alone */
      if (!allreduce && b != r) continue;
      uint8_t* dst = allreduce ? zp_at(a->recvbuff, soff[b], es) : zp_at(a->recvbuff, lo, es);
      ZU_CHECK_GOTO(zp_avg_divide(ctx, a, dst, slen[b]), res, out);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_doc_close(d);
  return res;
}

static zcclResult_t zp_doc_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chunk_ring(ctx, a, 1, 0);
}

static zcclResult_t zp_doc_ring_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chunk_ring(ctx, a, 0, 0);
}

static zcclResult_t zp_hz_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chunk_ring(ctx, a, 1, 1);
}

static zcclResult_t zp_hz_ring_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_chunk_ring(ctx, a, 0, 1);
}

/* Reduce along a chain (v = rank - root: N-1, N-2, ..., 0): the first rank
 * compresses its piece, every rank on the way decompresses what arrives,
 * adds its own and compresses the result for the next, and the root adds
 * its own to the last and keeps the sum raw. Each chunk goes on as soon as
 * it is done, so the ranks work as a pipeline. The bounds are
 * ReduceScatter's: the root's result has passed N-1 compressions. */
static zcclResult_t zp_doc_chain_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  int to = v > 0 ? (ctx->rank + N - 1) % N : -1, from = v < N - 1 ? (ctx->rank + 1) % N : -1;
  size_t n = a->count, soff[1] = {0}, slen[1] = {0}, m;
  zp_doc_t* d;
  size_t slice;
  zcclResult_t res;
  ZU_CHECK(zp_doc_open(ctx, a, n, "compressed reduce (DOC chain)", soff, slen, n, zp_doc_chunk_values(n), 1, 0, &d,
                       &slice));
  /* One set: a chunk arrives in st[1], is reduced there and goes on. */
  for (size_t lo = 0; zp_slice(n, slice, lo, &m); lo += slice) {
    soff[0] = lo, slen[0] = m;
    d->lo = lo, d->K = m ? (int)((m + d->c - 1) / d->c) : 1;
    int K = d->K, sent = 0, got = 0;
    zp_xfer_t *rx = d->x, *sx = d->x + K;
    uint8_t* st = d->st[1];
    size_t* sz = d->sz[1];
    res = zcclSuccess;
    if (from >= 0) {
      for (int k = 0; k < K; k++) {
        zp_recv_at(ctx, &rx[k], from, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), st + (size_t)k * d->capr, d->cap);
        rx[k].var = 1;
      }
      res = zp_xfers_post(ctx, rx, K);
    }
    for (int k = 0; res == zcclSuccess && k < K; k++) {
      if (from >= 0) {
        res = zp_xfers_wait(ctx, d->what, &rx[k], 1);
        got = k + 1;
        if (res != zcclSuccess) break;
        sz[k] = rx[k].req.length;
        res = zp_doc_chunk(d, to >= 0 ? ZP_DOC_REDUCE : ZP_DOC_RESULT, 0, k, st + (size_t)k * d->capr, &sz[k]);
      } else {
        res = zd_encode(ctx->dev, d->codec, &d->p, zp_at(a->sendbuff, lo + (size_t)k * d->c, d->es),
                        zp_doc_len(d, 0, k), st + (size_t)k * d->capr, d->cap, &sz[k]);
      }
      if (res == zcclSuccess && to >= 0) { /* on as soon as it is done: its size is known then */
        res = zd_event_wait(ctx->dev, zd_event_record(ctx->dev));
        if (res == zcclSuccess)
          zp_send_at(ctx, &sx[k], to, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), st + (size_t)k * d->capr, sz[k]);
        if (res == zcclSuccess) res = zp_xfers_post(ctx, &sx[k], 1);
        if (res == zcclSuccess) sent++;
      }
    }
    /* Also after an error: the receives not matched are cancelled (their
     * buffers go back to the pool), the device drained, the sends waited
     * for (bounded), as cancelling one would close the endpoint to a peer
     * that did no wrong. */
    if (from >= 0 && K - got > 0) zp_xfers_cancel_what(ctx, d->what, &rx[got], K - got);
    zcclResult_t w = zd_sync(ctx->dev);
    if (res == zcclSuccess) res = w;
    w = zp_xfers_wait(ctx, d->what, sx, sent);
    if (res == zcclSuccess) res = w;
    for (int k = 0; res == zcclSuccess && to >= 0 && k < K; k++) zp_count(ctx, zp_doc_len(d, 0, k) * d->es, sz[k]);
    if (res == zcclSuccess && to < 0) res = zp_avg_divide(ctx, a, zp_at(a->recvbuff, lo, d->es), m);
    if (res == zcclSuccess) res = zd_sync(ctx->dev);
    if (res != zcclSuccess) goto out;
  }
  res = zcclSuccess;
out:
  zp_doc_close(d);
  return res;
}

/* The rings: the first compression, then per step the work on a block of
 * b bytes (hop_s seconds a byte) and the transfer of its b/q stream bytes,
 * in the k chunks the ring cuts the block into (zp_ring_chunk_values). A
 * chunk crosses a hop in its work plus its transfer, and a step passes k
 * chunks through both: a step is the slowest of the work, the transfer
 * and (work + transfer) / k. About 4 chunks: the slower of the two; one
 * chunk a block (ranks crowding the cores): their sum. AllReduce then
 * forwards the streams, each received chunk sent on before it is
 * decompressed (the slower of the two), and decompresses its own block. */
static double zp_pipe_ring_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a, double hop_s) {
  double N = ctx->nranks, n = zp_call_bytes(a);
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx);
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  double q = zp_ratio(ctx);
  double b = a->coll == ZP_COLL_ALLREDUCE ? n / N : n, wire = b / (q * B), hop = hop_s * b;
  size_t maxb = a->coll == ZP_COLL_ALLREDUCE ? (a->count + ctx->nranks - 1) / (size_t)ctx->nranks : a->count;
  size_t c = zp_ring_chunk_values(ctx, maxb);
  double k = (double)((maxb + c - 1) / c), step = hop > wire ? hop : wire;
  if (k > 0 && (hop + wire) / k > step) step = (hop + wire) / k;
  double t = b / C + (N - 1) * (al_s + step);
  if (a->coll == ZP_COLL_ALLREDUCE) t += b / D + (N - 1) * (al_s + (b / D > wire ? b / D : wire));
  return t;
}

/* The homomorphic ring: a step compresses this rank's piece and adds it
 * to the arrived stream (in one pass where that is faster, zp_fuses). */
static double zp_hz_ring_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), H = zp_codec_rate(ctx, zp_hop_bps(ctx));
  double F = zp_codec_rate(ctx, zp_hop_values_bps(ctx));
  return zp_pipe_ring_cost(ctx, a, zp_fuses(ctx) ? 1 / F : 1 / C + 1 / H);
}

/* The DOC ring: per hop the decompression, reduction and compression of a block. */
static double zp_doc_ring_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  return zp_pipe_ring_cost(ctx, a, (1 / D + 1 / C) + 1 / zp_reduce_bps(ctx));
}

/* The DOC chain: a pipeline of k chunks (of zp_doc_chunk_values), N-2+k stages. */
static double zp_doc_chain_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double C = zp_codec_rate(ctx, zp_compress_bps(ctx)), D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  double G = zp_reduce_bps(ctx), N = ctx->nranks, n = zp_call_bytes(a);
  double al_s = zp_link_alpha(ctx), B = zp_link_bandwidth(ctx), q = zp_ratio(ctx);
  double c = (double)(zp_doc_chunk_values(a->count) * zu_dtype_size(a->datatype)), k = n > c ? n / c : 1;
  c = n / k;
  double hop = (c / D + c / C) + c / G, wire = c / (q * B);
  return c / C + (N - 2 + k) * (al_s + (hop > wire ? hop : wire));
}

const zp_algo_t zp_algo_hz_ring_allreduce = {"ring", "homomorphic ring", ZP_COLL_ALLREDUCE, ZP_NEEDS_HOMOMORPHIC, 0,
                                             NULL, zp_hz_ring_cost, zp_hz_ring_allreduce};
const zp_algo_t zp_algo_hz_ring_reduce_scatter = {"ring", "homomorphic ring", ZP_COLL_REDUCESCATTER,
                                                  ZP_NEEDS_HOMOMORPHIC, 0, NULL, zp_hz_ring_cost,
                                                  zp_hz_ring_reduce_scatter};
const zp_algo_t zp_algo_doc_ring_allreduce = {"ring", "DOC ring", ZP_COLL_ALLREDUCE, ZP_NEEDS_DOC, 0, NULL,
                                              zp_doc_ring_cost, zp_doc_ring_allreduce};
const zp_algo_t zp_algo_doc_ring_reduce_scatter = {"ring", "DOC ring", ZP_COLL_REDUCESCATTER, ZP_NEEDS_DOC, 0, NULL,
                                                   zp_doc_ring_cost, zp_doc_ring_reduce_scatter};
const zp_algo_t zp_algo_doc_chain_reduce = {"chain", "DOC chain", ZP_COLL_REDUCE, ZP_NEEDS_DOC, 0, NULL,
                                            zp_doc_chain_cost, zp_doc_chain_reduce};
