/* ZCCL's data-movement framework: the compress-once broadcast, allgather,
 * gather, scatter and alltoall (each rank's data compressed once, streams
 * moved unchanged). The homomorphic binomial reduce is zp_hz_tree.c, the
 * compressed rings zp_chunk_ring.c, and these bounds hold for all.
 * Streams are the codec's (docs/format.md), made and read through the
 * device (zd_encode, zd_decode, zd_reduce_encoded).
 *
 * Bounds (DESIGN.md, "Compression contract"): every input value is
 * quantized exactly once, with the same absolute step on every rank, and
 * every rank decompresses the same final streams (its own included), so
 *   - allreduce SUM: |error| <= N eb; AVG: <= eb (plus the float rounding
 *     of the division); MAX/MIN: <= eb; bit-identical on every rank;
 *   - allgather: <= eb for every element; identical on every rank.
 * Fill values and non-finite values travel exactly. The data-movement
 * algorithms (allgather ... alltoall) go through zp_encode/zp_decode, so
 * they also carry RLE (exact) and ZFP (fixed accuracy, within eb) streams;
 * ZFP has no exceptions, and NaN, Inf or a declared fill value make the
 * call zcclInvalidArgument on every rank before anything moves
 * (zp_streams_get). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_stream.h"

/* Decompresses, in ring order from stream *next (at byte *off of the ring
 * buffer [stream r][stream r-1]...), every stream lying whole within the
 * buffer's first `have` bytes into its block of slice [lo, lo + m) of
 * recvbuff; independent, one per device stream. len[b] holds stream b's
 * size until the device has run them. */
static zcclResult_t zp_once_decode_ready(const zp_ctx_t* ctx, const zp_streams_t* z, const zp_coll_args_t* a,
                                         const uint64_t* hs, size_t lo, size_t m, size_t have, int* next,
                                         size_t* off, size_t* len) {
  int N = ctx->nranks;
  size_t es = zu_dtype_size(a->datatype);
  for (; *next < N; (*next)++) {
    int b = zp_mod(ctx->rank - *next, N);
    if (*off + (size_t)hs[b] > have) break;
    len[b] = (size_t)hs[b];
    ZU_CHECK(zp_decode_on(ctx, b, z, z->s + *off, &len[b], zp_at(a->recvbuff, (size_t)b * a->count + lo, es), m));
    *off += (size_t)hs[b];
  }
  return zcclSuccess;
}

/* ZCCL's data-movement framework for allgather: each rank compresses its
 * block once, the streams go around the ring unchanged, every rank
 * decompresses all N (its own too, so all hold the same values).
 *
 * Streams of real data differ in size (land, constant regions), and a ring
 * that forwards one block per step waits each step for the largest. So the
 * sizes are exchanged first and the streams move as one byte sequence in
 * pieces of about the mean stream size: rank r keeps its buffer in ring
 * order, [stream r][stream r-1]...[stream r+1], sends its prefix without
 * stream r+1 and receives the suffix after its own. Each step sends at
 * most one piece of what it has (its own stream, then what came from the
 * left) and receives up to one piece, so every link carries about the same
 * bytes per step whatever the sizes. Both ends of a link stop on the same
 * byte count, so they agree on the number of steps. */
static zcclResult_t zp_hz_ring_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, right = (r + 1) % N, left = (r + N - 1) % N;
  size_t es = zu_dtype_size(a->datatype), n = a->count, m;
  const char* what = "compressed allgather";
  zp_streams_t z;
  uint64_t* sz = NULL; /* pool (device) memory for the exchange; hs: the host's copy */
  uint64_t hs[N];
  size_t boff[N], blen[N], len[N];
  for (int b = 0; b < N; b++) boff[b] = (size_t)b, blen[b] = 1;
  zp_poll_t poll = {.w = ctx->w};
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, N, N, 0, &z), res, out);
  ZU_CHECK_GOTO(zp_tmp_get(ctx, (size_t)N * sizeof(uint64_t), (void**)&sz), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    size_t own = 0;
    ZU_CHECK_GOTO(zp_encode(ctx, &z, zp_at(a->sendbuff, lo, es), m, z.s, z.cap, &own), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    hs[r] = own;
    ZU_CHECK_GOTO(zd_copy(ctx->dev, sz + r, hs + r, sizeof *hs), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    ZU_CHECK_GOTO(zp_ring_allgather_blocks(ctx, (uint8_t*)sz, sizeof(uint64_t), boff, blen, r,
                                           zp_sub(ZP_TAG_STREAM_SIZES, 0, 0)),
                  res, out);
    ZU_CHECK_GOTO(zd_copy(ctx->dev, hs, sz, (size_t)N * sizeof *hs), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    /* Each size on its own first: a bad one must not wrap the sum. */
    size_t total = 0, cap = (size_t)N * z.cap;
    for (int b = 0; b < N; b++) {
      if (hs[b] > z.cap) {
        res = ZU_ERROR(zcclInternalError, "%s: rank %d announced a stream of %llu bytes, room for %zu", what, b,
                       (unsigned long long)hs[b], z.cap);
        goto out;
      }
      total += (size_t)hs[b];
    }
    if (total > cap) {
      res = ZU_ERROR(zcclInternalError, "%s: streams of %zu bytes in all, room for %zu", what, total, cap);
      goto out;
    }
    size_t piece = (total / (size_t)N + 4095) & ~(size_t)4095;
    size_t lout = total - (size_t)hs[right], lin = total - own, sent = 0, got = 0, dec_off = 0;
    int dec_next = 0;
    /* Each step's piece moves while the streams that had arrived whole
     * before it are decompressed (the codec drives the transport). */
    zd_set_progress(ctx->dev, zp_poll, &poll);
    for (uint32_t j = 0; sent < lout || got < lin; j++) {
      size_t avail = own + got - sent, sbytes = lout - sent;
      if (sbytes > piece) sbytes = piece;
      if (sbytes > avail) sbytes = avail;
      size_t rcap = lin - got < piece ? lin - got : piece;
      zp_xfer_t x[2];
      int ri, nx = zp_stream_xfers(ctx, sent < lout ? right : -1, z.s + sent, sbytes, got < lin ? left : -1,
                                   z.s + own + got, rcap, zp_sub(ZP_TAG_ALGO, j, 0), x, &ri);
      res = zp_xfers_post(ctx, x, nx);
      if (res == zcclSuccess) res = zp_once_decode_ready(ctx, &z, a, hs, lo, m, own + got, &dec_next, &dec_off, len);
      if (res != zcclSuccess) { /* what was posted must not outlive the buffers */
        zp_xfers_cancel(ctx, x, nx);
        goto out;
      }
      ZU_CHECK_GOTO(zp_xfers_wait(ctx, what, x, nx), res, out);
      if (sent < lout) zp_count(ctx, 0, sbytes);
      sent += sent < lout ? sbytes : 0;
      got += ri >= 0 ? x[ri].req.length : 0;
    }
    zd_set_progress(ctx->dev, NULL, NULL);
    zp_count(ctx, (size_t)(N - 1) * m * es, 0); /* the wire bytes were counted per step */
    ZU_CHECK_GOTO(zp_once_decode_ready(ctx, &z, a, hs, lo, m, total, &dec_next, &dec_off, len), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zd_set_progress(ctx->dev, NULL, NULL);
  zp_streams_put(ctx, &z);
  zp_tmp_put(ctx, sz);
  return res;
}

/* ZCCL's data-movement framework for broadcast: the root compresses once
 * (REL from its own data: only its values travel), the stream's size and
 * then the stream go out by the uncompressed broadcast the cost model picks
 * for that many bytes, and every rank decompresses, the root too, so all
 * hold the same values. In slices when the stream does not fit the pool. */
static zcclResult_t zp_hz_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int root = a->root, me = ctx->rank == root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, m = 0;
  zp_streams_t z;
  zcclResult_t res;
  /* The root's own failure (its bound, its compression) goes out as the
   * size -1, so the others fail now rather than at ZCCL_TIMEOUT. */
  zcclResult_t mine = zp_streams_get(ctx, a, me ? ZP_EB_LOCAL : ZP_EB_NONE, n, n, 2, 1, 0, &z);
  if (mine != zcclSuccess && !me) {
    res = mine;
    goto out;
  }
  for (size_t lo = 0; mine != zcclSuccess || zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    size_t bytes = 0;
    double size = -1; /* exact: a stream is far below 2^53 bytes */
    if (me) {
      if (mine == zcclSuccess) mine = zp_encode(ctx, &z, zp_at(a->sendbuff, lo, es), m, z.s, z.cap, &bytes);
      if (mine == zcclSuccess) mine = zd_sync(ctx->dev);
      if (mine == zcclSuccess) size = (double)bytes;
    }
    ZU_CHECK_GOTO(zp_agree(ctx, &size, 1, root, zp_sub(ZP_TAG_BCAST_SIZE, 0, 0)), res, out);
    if (size < 0) {
      res = me ? mine
               : ZU_ERROR(zcclRemoteError, "compressed broadcast: the root (rank %d) failed to compress its data",
                          root);
      goto out;
    }
    if (size > (double)z.cap) {
      res = ZU_ERROR(zcclInternalError, "compressed broadcast: stream of %.0f bytes, room for %zu", size, z.cap);
      goto out;
    }
    bytes = (size_t)size;
    zp_coll_args_t s = *a;
    s.sendbuff = s.recvbuff = z.s;
    s.count = bytes;
    s.datatype = zcclUint8;
    s.compression.codec = zcclCodecNone;
    ZU_CHECK_GOTO(zp_coll_run(ctx, &s), res, out);
    zp_count(ctx, m * es, bytes);
    ZU_CHECK_GOTO(zp_decode(ctx, &z, z.s, &bytes, zp_at(a->recvbuff, lo, es), m), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Raw elements per piece of the compressed chain: the chain's piece for
 * the stream expected before any is made (n / ZP_AUTO_RATIO bytes), in raw
 * values. Every rank knows that figure before the call, so every rank
 * cuts the same; a ratio given to the model (zccl-scale's measured one)
 * prices the wire, not the cut, so the model prices the pieces that run. */
static size_t zp_once_chain_elems(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t es = zu_dtype_size(a->datatype);
  double q = ZP_AUTO_RATIO, wire = (double)zp_chain_piece(ctx, (size_t)(zp_call_bytes(a) / q));
  double elems = wire * q / (double)es;
  return elems < 1 ? 1 : (size_t)elems;
}

/* Stream slots of the compressed chain: below the root one being
 * forwarded and decompressed, the rest receiving; at the root two on the
 * link and two ahead of the decompression. */
#define ZP_ONCE_CHAIN_SLOTS 4
#define ZP_ONCE_CHAIN_WHAT "compressed chain broadcast"

/* The compressed chain's root: compresses piece after piece and sends
 * each stream on as soon as it is made, keeping two on the link, and
 * decompresses its own streams while the link is busy. Decompressing each
 * before compressing the next put the root's whole codec work on the
 * link's critical path, which shared cores slow further. A failed
 * compression goes out as a stream of 0 bytes. */
static zcclResult_t zp_once_chain_root(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_streams_t* z,
                                       size_t npieces, int next, zp_xfer_t* sx, int* sposted) {
  const int S = ZP_ONCE_CHAIN_SLOTS;
  size_t es = zu_dtype_size(a->datatype), n = a->count, enc = 0, dec = 0, lo, m, len[ZP_ONCE_CHAIN_SLOTS];
  while (dec < npieces) {
    int busy = 0;
    if (next >= 0) {
      (void)zt_progress(ctx->w);
      for (int j = 0; j < S; j++) busy += sposted[j] && zt_req_pending(&sx[j].req);
    }
    if (enc < npieces && enc - dec < (size_t)S && (busy < 2 || dec == enc)) {
      int j = (int)(enc % (size_t)S);
      if (sposted[j]) { /* piece enc - S's stream is out before its slot is reused */
        sposted[j] = 0;
        ZU_CHECK(zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &sx[j], 1));
      }
      m = zp_piece(n, z->slice, enc, &lo);
      zcclResult_t res = zp_encode(ctx, z, zp_at(a->sendbuff, lo, es), m, zp_stream(z, j), z->cap, &len[j]);
      if (res == zcclSuccess) res = zd_sync(ctx->dev);
      if (res != zcclSuccess) len[j] = 0;
      if (next >= 0) {
        zp_send_at(ctx, &sx[j], next, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)enc), zp_stream(z, j), len[j]);
        sposted[j] = 1;
        zcclResult_t sres = zp_xfers_post(ctx, &sx[j], 1);
        if (res != zcclSuccess && sres == zcclSuccess) { /* the chain is told before the root leaves */
          sposted[j] = 0;
          (void)zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &sx[j], 1);
        }
        if (res == zcclSuccess) res = sres;
      }
      if (res != zcclSuccess) return res;
      zp_count(ctx, m * es, len[j]);
      enc++;
    } else {
      int j = (int)(dec % (size_t)S);
      m = zp_piece(n, z->slice, dec, &lo);
      ZU_CHECK(zp_decode(ctx, z, zp_stream(z, j), &len[j], zp_at(a->recvbuff, lo, es), m));
      ZU_CHECK(zd_sync(ctx->dev));
      dec++;
    }
  }
  return zcclSuccess;
}

/* Piece k's stream from prev, of up to a slot's bytes, into slot k % S. */
static zcclResult_t zp_once_chain_recv(const zp_ctx_t* ctx, const zp_streams_t* z, zp_xfer_t* rx, int prev,
                                       size_t k) {
  int j = (int)(k % ZP_ONCE_CHAIN_SLOTS);
  zp_recv_at(ctx, &rx[j], prev, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), zp_stream(z, j), z->cap);
  rx[j].var = 1;
  return zp_xfers_post(ctx, &rx[j], 1);
}

/* The compressed chain below the root: each stream goes on to the next
 * rank as it arrives, then is decompressed while the next ones arrive;
 * receives run up to S - 1 pieces ahead, each into its piece's slot. */
static zcclResult_t zp_once_chain_relay(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_streams_t* z,
                                        size_t npieces, int prev, int next, zp_xfer_t* rx, zp_xfer_t* sx,
                                        int* sposted) {
  const int S = ZP_ONCE_CHAIN_SLOTS;
  size_t es = zu_dtype_size(a->datatype), n = a->count, lo, m;
  for (size_t k = 0; k + 1 < (size_t)S && k < npieces; k++) ZU_CHECK(zp_once_chain_recv(ctx, z, rx, prev, k));
  for (size_t k = 0; k < npieces; k++) {
    int j = (int)(k % (size_t)S);
    ZU_CHECK(zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &rx[j], 1));
    size_t len = rx[j].req.length;
    if (next >= 0) {
      zp_send_at(ctx, &sx[j], next, zp_sub(ZP_TAG_ALGO, 0, (uint32_t)k), zp_stream(z, j), len);
      sposted[j] = 1;
      ZU_CHECK(zp_xfers_post(ctx, &sx[j], 1));
    }
    if (len == 0) { /* the root failed: passed on before leaving */
      if (sposted[j]) {
        sposted[j] = 0;
        (void)zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &sx[j], 1);
      }
      return ZU_ERROR(zcclRemoteError, "%s: the root (rank %d) failed to compress its data", ZP_ONCE_CHAIN_WHAT,
                      a->root);
    }
    if (k + (size_t)S - 1 < npieces) { /* the receive into piece k - 1's slot, once it went on */
      int i = (j + S - 1) % S;
      if (sposted[i]) {
        sposted[i] = 0;
        ZU_CHECK(zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &sx[i], 1));
      }
      ZU_CHECK(zp_once_chain_recv(ctx, z, rx, prev, k + (size_t)S - 1));
    }
    m = zp_piece(n, z->slice, k, &lo);
    zp_count(ctx, m * es, len);
    ZU_CHECK(zp_decode(ctx, z, zp_stream(z, j), &len, zp_at(a->recvbuff, lo, es), m));
    ZU_CHECK(zd_sync(ctx->dev));
  }
  return zcclSuccess;
}

/* The compressed chain broadcast: the root cuts its data into pieces and
 * compresses each on its own (one bound from all its values); the streams
 * go down the chain (relative rank order), every rank forwarding each as
 * it arrives and decompressing it while the next ones arrive (the codec
 * drives the transport), the root its own streams too, so all hold the
 * same values. The root's compression, the link and the others'
 * decompression overlap, where the stream broadcast runs them one after
 * another. A stream of 0 bytes (no piece's stream is empty) says the root
 * failed; it travels down the chain like the others. */
static zcclResult_t zp_once_chain_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, v = zp_mod(ctx->rank - a->root, N), S = ZP_ONCE_CHAIN_SLOTS;
  int prev = v > 0 ? (ctx->rank + N - 1) % N : -1, next = v < N - 1 ? (ctx->rank + 1) % N : -1;
  zp_xfer_t x[2 * ZP_ONCE_CHAIN_SLOTS]; /* receives, then sends, slot by slot: cancelled together */
  memset(x, 0, sizeof x);
  int sposted[ZP_ONCE_CHAIN_SLOTS] = {0};
  zp_poll_t poll = {.w = ctx->w};
  zp_streams_t z;
  zcclResult_t res = zp_streams_get(ctx, a, v == 0 ? ZP_EB_LOCAL : ZP_EB_NONE, a->count,
                                    zp_once_chain_elems(ctx, a), S, S, 0, &z);
  if (res != zcclSuccess) {
    if (v == 0 && next >= 0) { /* the others fail now rather than at ZCCL_TIMEOUT */
      zp_send_at(ctx, &x[S], next, zp_sub(ZP_TAG_ALGO, 0, 0), NULL, 0);
      if (zp_xfers_post(ctx, &x[S], 1) == zcclSuccess) (void)zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &x[S], 1);
    }
  } else {
    /* n = 0: one empty piece, whose stream still travels */
    size_t npieces = a->count ? (a->count + z.slice - 1) / z.slice : 1;
    zd_set_progress(ctx->dev, zp_poll, &poll);
    res = v == 0 ? zp_once_chain_root(ctx, a, &z, npieces, next, x + S, sposted)
                 : zp_once_chain_relay(ctx, a, &z, npieces, prev, next, x, x + S, sposted);
    zd_set_progress(ctx->dev, NULL, NULL);
    for (int j = 0; j < S && res == zcclSuccess; j++)
      if (sposted[j]) res = zp_xfers_wait(ctx, ZP_ONCE_CHAIN_WHAT, &x[S + j], 1);
  }
  zp_xfers_cancel(ctx, x, 2 * S); /* one pass; completed and unposted ones are skipped */
  zp_streams_put(ctx, &z);
  return res;
}

/* ---- the pipelined compressed allgather ----------------------------------------
 * Each block is cut into pieces, each compressed on its own (one bound from
 * every rank's values). Rank r sends its own pieces to the right as it
 * makes them, then every piece from the left as it arrives (message k of
 * its round is own piece k for k < P, else the (k - P)th it received, until
 * each has gone N - 1 hops), and decompresses each while the next ones
 * arrive. Compression, links and decompression overlap; the ring allgather
 * runs its compression before and its last decompression after the links.
 *
 * No wait can close a cycle: every receive of a round is posted at its
 * start, into a slot of its own (no slot is reused within a round), so a
 * send completes whatever its receiver is doing (one still in the
 * previous round finishes it without this rank's new messages); a rank blocks on a
 * receive only when no message of its own is ready to go (when one waits
 * for the send window, it blocks on its oldest send instead), so what it
 * waits for depends only on ranks to its left, down to someone's own
 * piece, which needs nothing. Two sends at a time keep the link busy
 * without sharing it between messages. A failed compression goes out as
 * streams of 0 bytes (no piece's stream is empty) for the rest of the
 * rank's pieces; they travel around the round like the others, so every
 * rank ends the round and fails together. */
#define ZP_PIPE_PIECES 16 /* pieces per block in a round, at most */
#define ZP_PIPE_WINDOW 2  /* sends in flight per rank */
#define ZP_PIPE_WHAT "pipelined compressed allgather"

/* Pieces of each block in a round: the chain's piece for one block's
 * stream, ZP_PIPE_PIECES at most. The same on every rank. */
static int zp_pipe_pieces(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  size_t q = zp_once_chain_elems(ctx, a), k = a->count ? (a->count + q - 1) / q : 1;
  return k > ZP_PIPE_PIECES ? ZP_PIPE_PIECES : (int)k;
}

/* A round's state. Slot k of z holds message k: own piece k (k < P), else
 * receive k - P; the last P receives, which go no further, fill slots M ..
 * M + P - 1. */
typedef struct {
  const zp_ctx_t* ctx;
  const zp_coll_args_t* a;
  const zp_streams_t* z;
  int P, M;                    /* pieces per block this round; messages each rank sends (and receives) */
  size_t base;                 /* the round's first element of each block */
  uint32_t round;
  zp_xfer_t *rx, *sx;          /* M receives, M sends */
  size_t* len;                 /* slot k's stream's length (read by the device when it decompresses) */
  int enc, got, posted, sdone; /* own pieces made; receives, sends posted, sends done, each in order */
  int dec_own, dec_rx;         /* pieces decompressed */
  zcclResult_t mine;           /* this rank's compression failed */
  zcclResult_t dec;            /* a decompression failed (the round still ends with the others) */
  int failed;                  /* 1 + the first rank whose 0-byte stream came by; 0: none */
} zp_pipe_t;

/* Piece k of the round: its length, *lo its first element within a block. */
static size_t zp_pipe_piece(const zp_pipe_t* p, int k, size_t* lo) {
  size_t o, m = zp_piece(p->a->count - p->base, p->z->slice, (size_t)k, &o);
  *lo = p->base + o;
  return m;
}

/* The block (rank) whose piece the round's receive i carries. */
static int zp_pipe_block(const zp_pipe_t* p, int i) {
  return zp_mod(p->ctx->rank - 1 - i / p->P, p->ctx->nranks);
}

/* Waits for the next receive in order. A stream of 0 bytes names the
 * rank whose piece it is. */
static zcclResult_t zp_pipe_recv(zp_pipe_t* p) {
  int i = p->got;
  ZU_CHECK(zp_xfers_wait(p->ctx, ZP_PIPE_WHAT, &p->rx[i], 1));
  p->len[p->P + i] = p->rx[i].req.length;
  if (p->len[p->P + i] == 0 && !p->failed) p->failed = 1 + zp_pipe_block(p, i);
  p->got++;
  return zcclSuccess;
}

/* Takes in the receives and sends done, in order, and posts the messages
 * that are ready while the window has room. */
static zcclResult_t zp_pipe_advance(zp_pipe_t* p) {
  const zp_ctx_t* ctx = p->ctx;
  int N = ctx->nranks, r = ctx->rank;
  (void)zt_progress(ctx->w);
  while (p->got < p->M && !zt_req_pending(&p->rx[p->got].req)) ZU_CHECK(zp_pipe_recv(p));
  while (p->sdone < p->posted && !zt_req_pending(&p->sx[p->sdone].req))
    ZU_CHECK(zp_xfers_wait(ctx, ZP_PIPE_WHAT, &p->sx[p->sdone++], 1));
  while (p->posted < p->M && p->posted - p->sdone < ZP_PIPE_WINDOW &&
         (p->posted < p->P ? p->posted < p->enc : p->posted - p->P < p->got)) {
    size_t lo, m = zp_pipe_piece(p, p->posted % p->P, &lo), bytes = p->len[p->posted];
    zp_send_at(ctx, &p->sx[p->posted], (r + 1) % N, zp_sub(ZP_TAG_ALGO, p->round, (uint32_t)p->posted),
               zp_stream(p->z, p->posted), bytes);
    ZU_CHECK(zp_xfers_post(ctx, &p->sx[p->posted], 1));
    zp_count(ctx, m * zu_dtype_size(p->a->datatype), bytes);
    p->posted++;
  }
  return zcclSuccess;
}

/* One unit of codec work, *did 1; 0: none is ready. Own pieces first
 * (the link waits for them), then what came, then the own pieces' own
 * decompression. */
static zcclResult_t zp_pipe_work(zp_pipe_t* p, int* did) {
  const zp_ctx_t* ctx = p->ctx;
  int k, b;
  size_t es = zu_dtype_size(p->a->datatype), lo, m;
  *did = 1;
  if (p->enc < p->P) {
    k = p->enc++;
    m = zp_pipe_piece(p, k, &lo);
    p->len[k] = 0;
    if (p->mine == zcclSuccess)
      p->mine = zp_encode(ctx, p->z, zp_at(p->a->sendbuff, lo, es), m, zp_stream(p->z, k), p->z->cap, &p->len[k]);
    if (p->mine == zcclSuccess) p->mine = zd_sync(ctx->dev);
    if (p->mine != zcclSuccess) p->len[k] = 0; /* this piece and the rest go as 0 bytes */
    return zcclSuccess;
  }
  if (p->dec_rx < p->got) { /* receive i: slot P + i */
    int i = p->dec_rx++;
    k = p->P + i, b = zp_pipe_block(p, i), m = zp_pipe_piece(p, i % p->P, &lo);
  } else if (p->dec_own < p->enc) {
    k = p->dec_own++, b = ctx->rank, m = zp_pipe_piece(p, k, &lo);
  } else {
    *did = 0;
    return zcclSuccess;
  }
  if (p->len[k] == 0 || p->failed || p->mine != zcclSuccess || p->dec != zcclSuccess) return zcclSuccess; /* fails */
  p->dec = zp_decode(ctx, p->z, zp_stream(p->z, k), &p->len[k],
                     zp_at(p->a->recvbuff, (size_t)b * p->a->count + lo, es), m);
  return zcclSuccess;
}

/* One round: columns [base, base + P pieces) of every block. */
static zcclResult_t zp_pipe_round(zp_pipe_t* p) {
  const zp_ctx_t* ctx = p->ctx;
  int N = ctx->nranks, left = (ctx->rank + N - 1) % N;
  for (int i = 0; i < p->M; i++) {
    zp_recv_at(ctx, &p->rx[i], left, zp_sub(ZP_TAG_ALGO, p->round, (uint32_t)i), zp_stream(p->z, p->P + i),
               p->z->cap);
    p->rx[i].var = 1;
  }
  ZU_CHECK(zp_xfers_post(ctx, p->rx, p->M));
  for (;;) {
    int did;
    ZU_CHECK(zp_pipe_advance(p));
    ZU_CHECK(zp_pipe_work(p, &did));
    if (did) continue;
    if (p->posted < p->M && p->posted - p->sdone >= ZP_PIPE_WINDOW) /* a message waits for the window */
      ZU_CHECK(zp_xfers_wait(ctx, ZP_PIPE_WHAT, &p->sx[p->sdone++], 1));
    else if (p->got < p->M)
      ZU_CHECK(zp_pipe_recv(p));
    else if (p->sdone < p->posted)
      ZU_CHECK(zp_xfers_wait(ctx, ZP_PIPE_WHAT, &p->sx[p->sdone++], 1));
    else
      break;
  }
  return zd_sync(ctx->dev); /* the slots are reused by the next round */
}

static zcclResult_t zp_pipe_allgather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, P = zp_pipe_pieces(ctx, a);
  size_t n = a->count, q = n ? (n + (size_t)P - 1) / (size_t)P : 1, M = (size_t)P * (size_t)(N - 1);
  zp_poll_t poll = {.w = ctx->w};
  zp_streams_t z;
  zp_pipe_t p = {.ctx = ctx, .a = a, .z = &z};
  zp_xfer_t* x = calloc(2 * M, sizeof *x);
  size_t* len = calloc((size_t)(N * P), sizeof *len);
  zcclResult_t res = zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, q, N * P, N * P, 0, &z);
  if (res == zcclSuccess && (x == NULL || len == NULL))
    res = ZU_ERROR(zcclSystemError, "%s: out of memory for %zu messages", ZP_PIPE_WHAT, 2 * M);
  zd_set_progress(ctx->dev, zp_poll, &poll);
  for (size_t base = 0; res == zcclSuccess && (base == 0 || base < n); base += (size_t)P * z.slice) {
    size_t rest = (n - base + z.slice - 1) / z.slice;
    p.P = rest == 0 ? 1 : rest < (size_t)P ? (int)rest : P;
    p.M = p.P * (N - 1);
    p.base = base;
    p.rx = x;
    p.sx = x + p.M;
    p.len = len;
    p.enc = p.got = p.posted = p.sdone = p.dec_own = p.dec_rx = 0;
    memset(x, 0, 2 * (size_t)p.M * sizeof *x);
    res = zp_pipe_round(&p);
    if (res != zcclSuccess) zp_xfers_cancel(ctx, x, 2 * p.M); /* one pass; completed and unposted ones are skipped */
    p.round++;
    if (res == zcclSuccess) res = p.mine != zcclSuccess ? p.mine : p.dec;
    if (res == zcclSuccess && p.failed)
      res = ZU_ERROR(zcclRemoteError, "%s: rank %d failed to compress its data", ZP_PIPE_WHAT, p.failed - 1);
  }
  zd_set_progress(ctx->dev, NULL, NULL);
  zp_streams_put(ctx, &z);
  free(x);
  free(len);
  return res;
}

/* The first piece's compression, then the slower of two bounds, then the
 * last piece's decompression. The flow: each rank's k messages back to
 * back at the slower of the link and its codec work per message (its own
 * pieces' compression, every piece's decompression). The relay: a piece
 * reaches the rank N-1 hops on, a relay's latency and its wire time each,
 * and a rank's P pieces of a block follow a stage apart. Latencies of
 * messages in flight together overlap: a latency a message priced the
 * 16-host 4 MiB allgather at ten times its measured time
 * (docs/measurements/scale.md). */
static double zp_pipe_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a), C = zp_codec_rate(ctx, zp_compress_bps(ctx));
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx)), P = zp_pipe_pieces(ctx, a), k = (N - 1) * P;
  double piece = n / P, wire = piece / (zp_ratio(ctx) * zp_link_bandwidth(ctx));
  double codec = (n / C + N * n / D) / k, stage = wire > codec ? wire : codec;
  double flow = k * stage, relay = (N - 1) * (zp_hop_alpha(ctx) + wire) + (P - 1) * stage;
  return piece / C + (flow > relay ? flow : relay) + piece / D;
}

/* ---- compress once, point to point: scatter, gather, alltoall ----------------
 * Each block is compressed where it starts and decompressed where it ends,
 * the sender's own block included (every value goes through the codec
 * once, as on every other rank). Slices are the same on every rank (sized
 * for N streams), so the messages pair up. */

/* The root failed before a slice's streams went out: an empty message to
 * each rank in their place, so the others fail now rather than at
 * ZCCL_TIMEOUT. The root returns its own error whatever these do (if
 * they fail too, the last error message is theirs). */
static void zp_hz_scatter_failed(const zp_ctx_t* ctx, const char* what) {
  int N = ctx->nranks, nx = 0;
  zp_xfer_t x[N];
  static const char none = 0;
  for (int b = 0; b < N; b++)
    if (b != ctx->rank) zp_send_at(ctx, &x[nx++], b, ZP_SUB_ALGO, &none, 0);
  (void)zp_xfers_run(ctx, what, x, nx);
}

/* The root compresses every rank's block (REL from its own input: only its
 * values travel) and sends each straight to its rank. */
static zcclResult_t zp_hz_scatter(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, root = a->root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], m;
  const char* what = "compressed scatter";
  zp_xfer_t x[N];
  zp_streams_t z;
  zcclResult_t res = zp_streams_get(ctx, a, r == root ? ZP_EB_LOCAL : ZP_EB_NONE, n * (size_t)N, n, N,
                                    r == root ? N : 1, 0, &z);
  if (res != zcclSuccess) {
    if (r == root) zp_hz_scatter_failed(ctx, what);
    goto out;
  }
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    if (r != root) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, -1, NULL, 0, 0, root, z.s, z.cap, &sizes[0], ZP_SUB_ALGO), res, out);
      if (sizes[0] == 0 && m > 0) { /* no stream of m > 0 values is empty */
        res = ZU_ERROR(zcclRemoteError, "%s: the root (rank %d) failed to compress its data", what, root);
        goto out;
      }
      ZU_CHECK_GOTO(zp_decode(ctx, &z, z.s, &sizes[0], zp_at(a->recvbuff, lo, es), m), res, out);
    } else {
      for (int b = 0; b < N && res == zcclSuccess; b++) /* independent: one per device stream (gZCCL) */
        res = zp_encode_on(ctx, b, &z, zp_at(a->sendbuff, (size_t)b * n + lo, es), m, zp_stream(&z, b), z.cap,
                           &sizes[b]);
      if (res == zcclSuccess) res = zd_sync(ctx->dev); /* every stream */
      if (res != zcclSuccess) {
        zp_hz_scatter_failed(ctx, what);
        goto out;
      }
      int nx = 0;
      for (int b = 0; b < N; b++)
        if (b != r) zp_send_at(ctx, &x[nx++], b, ZP_SUB_ALGO, zp_stream(&z, b), sizes[b]);
      /* The root's own block decompresses while the others travel. */
      res = zp_xfers_post(ctx, x, nx);
      if (res == zcclSuccess)
        res = zp_decode(ctx, &z, zp_stream(&z, r), &sizes[r], zp_at(a->recvbuff, lo, es), m);
      zcclResult_t w = zp_xfers_wait(ctx, what, x, nx);
      ZU_CHECK_GOTO(res != zcclSuccess ? res : w, res, out);
      for (int b = 0; b < N; b++)
        if (b != r) zp_count(ctx, m * es, sizes[b]);
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Every rank compresses its block (REL from every rank's input, like
 * allgather) and sends it to the root, which decompresses all N. */
static zcclResult_t zp_hz_gather(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank, root = a->root;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], m;
  const char* what = "compressed gather";
  zp_xfer_t x[N];
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n, n, N, r == root ? N : 1, 0, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    uint8_t* own = zp_stream(&z, r == root ? r : 0);
    ZU_CHECK_GOTO(zp_encode(ctx, &z, zp_at(a->sendbuff, lo, es), m, own, z.cap, &sizes[r]), res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
    if (r != root) {
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, root, own, sizes[r], m * es, -1, NULL, 0, NULL, ZP_SUB_ALGO), res,
                    out);
    } else {
      int nx = 0;
      for (int b = 0; b < N; b++)
        if (b != r) {
          zp_recv_at(ctx, &x[nx], b, ZP_SUB_ALGO, zp_stream(&z, b), z.cap);
          x[nx++].var = 1;
        }
      ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nx), res, out);
      for (int b = 0, k = 0; b < N; b++) { /* independent: one per device stream */
        if (b != r) sizes[b] = x[k++].req.length;
        ZU_CHECK_GOTO(zp_decode_on(ctx, b, &z, zp_stream(&z, b), &sizes[b],
                                   zp_at(a->recvbuff, (size_t)b * n + lo, es), m),
                      res, out);
      }
    }
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out);
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* Every rank compresses its N blocks once (REL from every rank's input)
 * and exchanges them pairwise: step s sends block r+s to rank r+s and gets
 * block r from rank r-s. */
static zcclResult_t zp_hz_alltoall(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  int N = ctx->nranks, r = ctx->rank;
  size_t es = zu_dtype_size(a->datatype), n = a->count, sizes[N], rsize = 0, m;
  const char* what = "compressed alltoall";
  zp_streams_t z;
  zcclResult_t res;
  ZU_CHECK_GOTO(zp_streams_get(ctx, a, ZP_EB_GLOBAL, n * (size_t)N, n, N + 1, N, 1, &z), res, out);
  for (size_t lo = 0; zp_slice(n, z.slice, lo, &m); lo += z.slice) {
    for (int b = 0; b < N; b++) /* independent: one per device stream */
      ZU_CHECK_GOTO(zp_encode_on(ctx, b, &z, zp_at(a->sendbuff, (size_t)b * n + lo, es), m, zp_stream(&z, b), z.cap,
                                 &sizes[b]),
                    res, out);
    ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* every stream */
    ZU_CHECK_GOTO(
        zp_decode(ctx, &z, zp_stream(&z, r), &sizes[r], zp_at(a->recvbuff, (size_t)r * n + lo, es), m), res,
        out);
    for (int s = 1; s < N; s++) {
      int to = (r + s) % N, from = (r + N - s) % N;
      ZU_CHECK_GOTO(zp_stream_sendrecv(ctx, what, to, zp_stream(&z, to), sizes[to], m * es, from, z.spare, z.cap,
                                       &rsize, zp_sub(ZP_TAG_ALGO, (uint32_t)s, 0)),
                    res, out);
      ZU_CHECK_GOTO(zp_decode(ctx, &z, z.spare, &rsize, zp_at(a->recvbuff, (size_t)from * n + lo, es), m), res,
                    out);
      ZU_CHECK_GOTO(zd_sync(ctx->dev), res, out); /* the spare is reused */
    }
  }
  res = zcclSuccess;
out:
  zp_streams_put(ctx, &z);
  return res;
}

/* n per rank: compress once, decompress N blocks. */
static double zp_once_allgather_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a), C = zp_codec_rate(ctx, zp_compress_bps(ctx));
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  return n / C + N * n / D + (N - 1) * (zp_link_alpha(ctx) + n / (zp_ratio(ctx) * zp_link_bandwidth(ctx)));
}

/* Scatter, gather and alltoall: N blocks compressed and decompressed (the
 * root's, or every rank's), N-1 streams of one block moved. */
static double zp_once_blocks_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double N = ctx->nranks, n = zp_call_bytes(a), C = zp_codec_rate(ctx, zp_compress_bps(ctx));
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  return (N * n / C + N * n / D) + (N - 1) * (zp_link_alpha(ctx) + n / (zp_ratio(ctx) * zp_link_bandwidth(ctx)));
}

/* The uncompressed broadcast the model picks for `bytes` bytes (what
 * zp_hz_broadcast runs the size and the stream through). */
static double zp_once_plain_broadcast(const zp_ctx_t* ctx, const zp_coll_args_t* a, double bytes) {
  zp_coll_args_t s = *a;
  s.count = bytes < 1 ? 1 : (size_t)bytes;
  s.datatype = zcclUint8;
  s.compression.codec = zcclCodecNone;
  double t = 0;
  return zp_algo_select(ctx, &s, NULL, &t, NULL) ? t : 0;
}

/* Compress at the root, the size (a double) and the stream of n/q bytes by
 * the uncompressed broadcast, decompress: the stream's broadcast grows
 * with N as that algorithm does. */
static double zp_once_broadcast_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a), C = zp_codec_rate(ctx, zp_compress_bps(ctx));
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  return (n / C + n / D) + zp_once_plain_broadcast(ctx, a, sizeof(double)) +
         zp_once_plain_broadcast(ctx, a, n / zp_ratio(ctx));
}

/* The compressed chain: the first piece's compression, its N - 1 hops,
 * then one piece per stage of the slower of the link and the root's codec
 * (it compresses and decompresses every piece; zp_pipeline_cost), and the
 * last piece's decompression. */
static double zp_once_chain_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a) {
  double n = zp_call_bytes(a), C = zp_codec_rate(ctx, zp_compress_bps(ctx));
  double D = zp_codec_rate(ctx, zp_decompress_bps(ctx));
  double piece = (double)zp_once_chain_elems(ctx, a) * zu_dtype_size(a->datatype);
  if (piece > n) piece = n;
  double k = piece > 0 ? ceil(n / piece) : 1, wire = piece / zp_ratio(ctx) / zp_link_bandwidth(ctx);
  double codec = piece / C + piece / D;
  return piece / C + zp_pipeline_cost(ctx, ctx->nranks - 1, k, wire, wire > codec ? wire : codec) + piece / D;
}

const zp_algo_t zp_algo_once_allgather = {"ring", "compress-once ring", ZP_COLL_ALLGATHER, ZP_NEEDS_ANY, 0, NULL,
                                          zp_once_allgather_cost, zp_hz_ring_allgather};
const zp_algo_t zp_algo_once_broadcast = {"tree", "compress-once, stream broadcast", ZP_COLL_BROADCAST, ZP_NEEDS_ANY,
                                          0, NULL, zp_once_broadcast_cost, zp_hz_broadcast};
const zp_algo_t zp_algo_once_scatter = {"linear", "compress-once, direct", ZP_COLL_SCATTER, ZP_NEEDS_ANY, 0, NULL,
                                        zp_once_blocks_cost, zp_hz_scatter};
const zp_algo_t zp_algo_once_gather = {"linear", "compress-once, direct", ZP_COLL_GATHER, ZP_NEEDS_ANY, 0, NULL,
                                       zp_once_blocks_cost, zp_hz_gather};
const zp_algo_t zp_algo_once_alltoall = {"pairwise", "compress-once, pairwise", ZP_COLL_ALLTOALL, ZP_NEEDS_ANY, 0,
                                         NULL, zp_once_blocks_cost, zp_hz_alltoall};
const zp_algo_t zp_algo_once_chain_broadcast = {"chain", "compress-once, pipelined chain", ZP_COLL_BROADCAST,
                                                ZP_NEEDS_ANY, 0, NULL, zp_once_chain_cost, zp_once_chain_broadcast};
const zp_algo_t zp_algo_once_pipe_allgather = {"pipeline", "compress-once, pipelined ring of pieces",
                                               ZP_COLL_ALLGATHER, ZP_NEEDS_ANY, 0, NULL, zp_pipe_allgather_cost,
                                               zp_pipe_allgather};
