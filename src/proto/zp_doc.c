/* ZCCL's computation framework with the szp codec: the DOC
 * (decompress-operate-compress) ring reduce-scatter and allreduce, and the
 * DOC chain for reduce (at the end of this file).
 *
 * Ring reduce-scatter over N blocks: at step s rank r sends the partial
 * result of block r-s-1 to the right and gets that of block r-s-2 from the
 * left, as a stream. Each arriving stream is decompressed, this rank's raw
 * piece of the block is added (zd_reduce_fill), and the partial result is
 * compressed again for the next step. Blocks travel in chunks of at most
 * about 4 chunks (zp_doc_chunk_values, zp_algo.h): every
 * receive and send of a step is posted at once
 * and each chunk is processed as soon as it has arrived, while the others
 * are in flight (on the first step, chunk k is sent as soon as it is
 * compressed). AllReduce then sends the finished streams round the ring
 * unchanged (compress once) and every rank decompresses all N, its own
 * too, so every rank holds the same bits. Buffers that do not fit the pool
 * are done in rounds of columns (the same elements of every block).
 *
 * Bounds, with eb the absolute bound (REL: of every rank's range, one grid):
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
 * fill value absorbs (fill in any input: fill out, as zd_hop does; a
 * partial result that lands exactly on the fill value reads as fill);
 * NaN and +-Inf follow IEEE arithmetic and travel as raw exceptions. */
#include <stdlib.h>
#include <string.h>

#include "zp_stream.h"

#define ZP_DOC_MAX_CHUNKS 32   /* chunks of a block per round: messages in flight */

/* What a step does with each arriving chunk of block rb. */
enum {
  ZP_DOC_REDUCE, /* decompress, add this rank's piece, compress in place (sent next) */
  ZP_DOC_RESULT, /* decompress, add this rank's piece into recvbuff (reduce-scatter's end) */
  ZP_DOC_GATHER  /* decompress into recvbuff (the stream is forwarded next) */
};

typedef struct {
  const zp_ctx_t* ctx;
  const zp_coll_args_t* a;
  const char* what;
  zc_params_t p;
  size_t es, c, cap, capr; /* bytes per value; values per chunk; a chunk stream's room, rounded to 64 */
  size_t lo;               /* this round's first column */
  const size_t *soff, *slen; /* this round's piece of each block */
  int K;                   /* chunks this round */
  int out;                 /* the stream set sent this step; 1 - out is received */
  uint8_t* st[2];          /* chunk k's stream at st[i] + k * capr */
  size_t sz[2][ZP_DOC_MAX_CHUNKS];
  void* T;                 /* one decompressed chunk */
  uint8_t* mem;            /* st and T: one piece of the pool */
  zp_xfer_t x[2 * ZP_DOC_MAX_CHUNKS];
} zp_doc_t;

/* Chunk k of block b this round: offset and length (0 past the block's end). */
static size_t zp_doc_off(const zp_doc_t* d, int b, int k) { return d->soff[b] + (size_t)k * d->c; }
static size_t zp_doc_len(const zp_doc_t* d, int b, int k) {
  size_t at = (size_t)k * d->c, n = d->slen[b];
  return n > at ? (n - at < d->c ? n - at : d->c) : 0;
}

/* Queues the work on arrived chunk k of block rb. */
static zcclResult_t zp_doc_chunk(zp_doc_t* d, int how, int rb, int k) {
  const zp_coll_args_t* a = d->a;
  zd_dev_t* dev = d->ctx->dev;
  size_t n = zp_doc_len(d, rb, k), off = zp_doc_off(d, rb, k);
  uint8_t* s = d->st[1 - d->out] + (size_t)k * d->capr;
  size_t* sz = &d->sz[1 - d->out][k];
  zcclRedOp_t op = zp_reduce_op(a->op);
  int hf = a->compression.hasFill;
  double f = a->compression.fillValue;
  if (how == ZP_DOC_GATHER) return zd_decompress(dev, s, sz, zp_at(a->recvbuff, off, d->es), n);
  ZU_CHECK(zd_decompress(dev, s, sz, d->T, n));
  const uint8_t* mine = zp_at(a->sendbuff, off, d->es);
  if (how == ZP_DOC_RESULT) /* in place, recvbuff is this very piece of sendbuff: dst == b */
    return zd_reduce_fill(dev, zp_at(a->recvbuff, d->lo + (size_t)k * d->c, d->es), d->T, mine, n, a->datatype, op,
                          hf, f);
  ZU_CHECK(zd_reduce_fill(dev, d->T, d->T, mine, n, a->datatype, op, hf, f));
  /* Queued after the decompression that read s and *sz: it may overwrite them. */
  return zd_compress(dev, &d->p, d->T, n, s, d->cap, sz);
}

/* Ends a step, also after an error (res): receives not matched (rx, nrx)
 * are cancelled, as their buffers go back to the pool; the device is
 * drained; sends posted (sx, nsx) are waited for (bounded), as cancelling
 * one would close the endpoint to a peer that did no wrong. Returns the
 * first error. */
static zcclResult_t zp_doc_drain(zp_doc_t* d, zcclResult_t res, zp_xfer_t* rx, int nrx, zp_xfer_t* sx, int nsx) {
  if (nrx > 0) zp_xfers_cancel_what(d->ctx, d->what, rx, nrx);
  zcclResult_t w = zd_sync(d->ctx->dev);
  if (res == zcclSuccess) res = w;
  w = zp_xfers_wait(d->ctx, d->what, sx, nsx);
  return res == zcclSuccess ? w : res;
}

/* One ring step of this round: the streams of block sb go right (first:
 * compressed here from sendbuff, each chunk sent as soon as it is ready),
 * those of block rb come from the left, each handled (how) on arrival while
 * the rest travel. Leaves nothing in flight and the device idle, also on
 * an error. */
static zcclResult_t zp_doc_step(zp_doc_t* d, uint32_t tag, int sb, int rb, int how, int first) {
  const zp_ctx_t* ctx = d->ctx;
  int N = ctx->nranks, r = ctx->rank, K = d->K, right = (r + 1) % N, left = (r + N - 1) % N;
  uint8_t *snd = d->st[d->out], *rcv = d->st[1 - d->out];
  size_t *ssz = d->sz[d->out], *rsz = d->sz[1 - d->out];
  zp_xfer_t *rx = d->x, *sx = d->x + K;
  int sent = 0, got = 0; /* sends posted; receives waited for */
  zcclResult_t res = zcclSuccess;
  for (int k = 0; k < K; k++) {
    zp_recv_at(ctx, &rx[k], left, tag | (uint32_t)(k & 0xff), rcv + (size_t)k * d->capr, d->cap);
    rx[k].var = 1; /* a stream's size is known only to its sender */
  }
  res = zp_xfers_post(ctx, rx, K);
  for (int k = 0; res == zcclSuccess && k < K; k++) { /* ready streams go at once */
    if (first) {
      res = zd_compress(ctx->dev, &d->p, zp_at(d->a->sendbuff, zp_doc_off(d, sb, k), d->es), zp_doc_len(d, sb, k),
                        snd + (size_t)k * d->capr, d->cap, &ssz[k]);
      if (res == zcclSuccess) res = zd_event_wait(ctx->dev, zd_event_record(ctx->dev)); /* its size */
    }
    while (res == zcclSuccess && sent < (first ? k + 1 : K)) {
      zp_send_at(ctx, &sx[sent], right, tag | (uint32_t)(sent & 0xff), snd + (size_t)sent * d->capr, ssz[sent]);
      res = zp_xfers_post(ctx, &sx[sent], 1);
      if (res == zcclSuccess) sent++;
    }
    if (res != zcclSuccess) break;
    res = zp_xfers_wait(ctx, d->what, &rx[k], 1);
    got = k + 1;
    if (res != zcclSuccess) break;
    rsz[k] = rx[k].req.length;
    res = zp_doc_chunk(d, how, rb, k); /* runs (queued devices) while the next chunks travel */
  }
  res = zp_doc_drain(d, res, &rx[got], K - got, sx, sent);
  for (int j = 0; res == zcclSuccess && j < K; j++) zp_count(ctx, zp_doc_len(d, sb, j) * d->es, ssz[j]);
  return res;
}

/* Set as the device's progress hook while a DOC collective runs: the codec
 * calls it between its chunks, so the chunks posted to the neighbours keep
 * moving while this rank compresses (the transport progresses only when
 * called). */
static void zp_doc_poll(void* w) { (void)zt_progress((zt_worker_t*)w); }

/* Chunk size and chunks per round (*kmax) for blocks of maxb values and
 * `sets` sets of chunk streams, from the pool as it is now (the same on
 * every rank): a chunk small enough that one stream of each set and the
 * decompressed chunk fill at most half of it. Takes the streams and the
 * chunk buffer from the pool as one piece (d->mem). */
static zcclResult_t zp_doc_plan(zp_doc_t* d, size_t maxb, int sets, size_t* kmax) {
  size_t room = zd_buf_largest(d->ctx->dev), S = (size_t)sets, tb;
  size_t c = zp_doc_chunk_values(maxb);
  for (;;) {
    d->cap = zd_compress_bound(c, d->a->datatype);
    d->capr = (d->cap + 63) / 64 * 64;
    tb = (c * d->es + 63) / 64 * 64;
    if (c == 1 || 2 * (S * d->capr + tb) <= room) break;
    c = (c + 1) / 2;
  }
  d->c = c;
  size_t k = room / 4 * 3 > tb ? (room / 4 * 3 - tb) / (S * d->capr) : 1, need = (maxb + c - 1) / c;
  if (k > need) k = need;
  if (k > ZP_DOC_MAX_CHUNKS) k = ZP_DOC_MAX_CHUNKS;
  if (k < 1) k = 1;
  *kmax = k;
  ZU_CHECK(zp_tmp_get(d->ctx, S * k * d->capr + tb, (void**)&d->mem));
  d->st[0] = d->mem, d->st[1] = d->mem + (S - 1) * k * d->capr, d->T = d->mem + S * k * d->capr;
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
 * grid), the chunk plan for blocks of up to maxb values with `sets` stream
 * sets, the transport's progress inside the codec; *slice: values a round
 * takes of each block. zp_doc_close undoes it. */
static zcclResult_t zp_doc_open(const zp_ctx_t* ctx, const zp_coll_args_t* a, size_t total, const char* what,
                                const size_t* soff, const size_t* slen, size_t maxb, int sets, zp_doc_t** out,
                                size_t* slice) {
  double eb = 0;
  size_t kmax = 0;
  *out = NULL;
  ZU_CHECK(zp_eb_abs(ctx, a, a->sendbuff, total, 1, &eb));
  zp_doc_t* d = calloc(1, sizeof *d);
  ZU_RETURN_ERR_IF(d == NULL, zcclSystemError, "%s: out of memory", what);
  d->ctx = ctx, d->a = a, d->es = zu_dtype_size(a->datatype), d->p = zp_params(a, eb), d->soff = soff;
  d->slen = slen, d->what = what;
  zd_set_progress(ctx->dev, zp_doc_poll, ctx->w);
  zcclResult_t res = zp_doc_plan(d, maxb, sets, &kmax);
  if (res != zcclSuccess) {
    zp_doc_close(d);
    return res;
  }
  *slice = kmax * d->c;
  *out = d;
  return zcclSuccess;
}

/* The DOC ring over the blocks of zp_ring_blocks (REL: over all of sendbuff);
 * allreduce: every block to every rank; otherwise this rank's block to
 * recvbuff. */
static zcclResult_t zp_doc_ring(const zp_ctx_t* ctx, const zp_coll_args_t* a, int allreduce) {
  int N = ctx->nranks, r = ctx->rank;
  size_t boff[N], blen[N], total = zp_ring_blocks(a, N, allreduce, boff, blen);
  size_t es = zu_dtype_size(a->datatype), maxb = 0, soff[N], slen[N], m;
  for (int b = 0; b < N; b++) maxb = blen[b] > maxb ? blen[b] : maxb;
  const char* what = allreduce ? "compressed allreduce (DOC ring)" : "compressed reduce-scatter (DOC ring)";
  zp_doc_t* d;
  size_t slice;
  zcclResult_t res;
  ZU_CHECK(zp_doc_open(ctx, a, total, what, soff, slen, maxb, 2, &d, &slice));
  for (size_t lo = 0; zp_slice(maxb, slice, lo, &m); lo += slice) {
    zp_slice_of(N, boff, blen, lo, lo + m, soff, slen);
    d->lo = lo, d->K = m ? (int)((m + d->c - 1) / d->c) : 1, d->out = 0;
    for (int s = 0; s < N - 1; s++) {
      int how = s == N - 2 && !allreduce ? ZP_DOC_RESULT : ZP_DOC_REDUCE;
      ZU_CHECK_GOTO(zp_doc_step(d, 0x8000u | (uint32_t)(s & 0x3f) << 8, zp_mod(r - s - 1, N), zp_mod(r - s - 2, N),
                                how, s == 0),
                    res, out);
      d->out ^= 1;
    }
    if (allreduce) {
      /* Block r's finished streams: decompressed here too (queued, while
       * the first allgather step travels), then forwarded unchanged. */
      for (int k = 0; k < d->K; k++)
        ZU_CHECK_GOTO(zd_decompress(ctx->dev, d->st[d->out] + (size_t)k * d->capr, &d->sz[d->out][k],
                                    zp_at(a->recvbuff, zp_doc_off(d, r, k), es), zp_doc_len(d, r, k)),
                      res, out);
      for (int s = 0; s < N - 1; s++) {
        ZU_CHECK_GOTO(zp_doc_step(d, 0xc000u | (uint32_t)(s & 0x3f) << 8, zp_mod(r - s, N), zp_mod(r - s - 1, N),
                                  ZP_DOC_GATHER, 0),
                      res, out);
        d->out ^= 1;
      }
    }
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

zcclResult_t zp_doc_ring_allreduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) { return zp_doc_ring(ctx, a, 1); }

zcclResult_t zp_doc_ring_reduce_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  return zp_doc_ring(ctx, a, 0);
}

/* Reduce along a chain (v = rank - root: N-1, N-2, ..., 0): the first rank
 * compresses its piece, every rank on the way decompresses what arrives,
 * adds its own and compresses the result for the next, and the root adds
 * its own to the last and keeps the sum raw. Each chunk goes on as soon as
 * it is done, so the ranks work as a pipeline. The bounds are
 * ReduceScatter's: the root's result has passed N-1 compressions. */
zcclResult_t zp_doc_chain_reduce(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N);
  int to = v > 0 ? (ctx->rank + N - 1) % N : -1, from = v < N - 1 ? (ctx->rank + 1) % N : -1;
  size_t n = a->count, soff[1] = {0}, slen[1] = {0}, m;
  zp_doc_t* d;
  size_t slice;
  zcclResult_t res;
  ZU_CHECK(zp_doc_open(ctx, a, n, "compressed reduce (DOC chain)", soff, slen, n, 1, &d, &slice));
  /* One set: a chunk arrives in st[1], is reduced there and goes on. */
  for (size_t lo = 0; zp_slice(n, slice, lo, &m); lo += slice) {
    soff[0] = lo, slen[0] = m;
    d->lo = lo, d->K = m ? (int)((m + d->c - 1) / d->c) : 1, d->out = 0;
    int K = d->K, sent = 0, got = 0;
    zp_xfer_t *rx = d->x, *sx = d->x + K;
    uint8_t* st = d->st[1];
    size_t* sz = d->sz[1];
    res = zcclSuccess;
    if (from >= 0) {
      for (int k = 0; k < K; k++) {
        zp_recv_at(ctx, &rx[k], from, 0x8000u | (uint32_t)k, st + (size_t)k * d->capr, d->cap);
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
        res = zp_doc_chunk(d, to >= 0 ? ZP_DOC_REDUCE : ZP_DOC_RESULT, 0, k);
      } else {
        res = zd_compress(ctx->dev, &d->p, zp_at(a->sendbuff, lo + (size_t)k * d->c, d->es), zp_doc_len(d, 0, k),
                          st + (size_t)k * d->capr, d->cap, &sz[k]);
      }
      if (res == zcclSuccess && to >= 0) { /* on as soon as it is done: its size is known then */
        res = zd_event_wait(ctx->dev, zd_event_record(ctx->dev));
        if (res == zcclSuccess) zp_send_at(ctx, &sx[k], to, 0x8000u | (uint32_t)k, st + (size_t)k * d->capr, sz[k]);
        if (res == zcclSuccess) res = zp_xfers_post(ctx, &sx[k], 1);
        if (res == zcclSuccess) sent++;
      }
    }
    res = zp_doc_drain(d, res, from >= 0 ? &rx[got] : rx, from >= 0 ? K - got : 0, sx, sent);
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
