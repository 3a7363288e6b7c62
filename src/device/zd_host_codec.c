#include "zd_host_codec.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zc_szp_block.h"
#include "zu_error.h"

#define ZD_MAX_THREADS 256
#define ZD_BATCH_MAX 16 /* chunks per claim, at most */

/* One parallel codec job. Decompression: threads claim batches of chunks
 * as they go, so a slower core does less: thread 0 from the front, the
 * others from the back (claim: front | back << 32, chunks [front, back)
 * unclaimed). Encoding (compressed sizes are known only once compressed):
 * thread t owns range t of the chunks, claims it from the front in batches
 * and writes them back to back from where the range would start if every
 * chunk before took its bound (zd_off); a thread done with its own range
 * steals batches from the back of the others' and writes each where its
 * first chunk would start. The pieces then move down into place. Without
 * room in out for the whole bound, thread t does its range whole and the
 * ranges 1.. go to scratch of their own. */
typedef struct {
  size_t at, bytes;
} zd_piece_t;

typedef struct {
  int is_hop;         /* 1: two streams; 2: values (in, p) with a stream (hb, at_b) */
  /* compress */
  const zc_params_t* p;
  const void* in;
  size_t count;
  zcclDataType_t dtype;
  unsigned lg;
  /* decompress */
  const zc_header_t* h;
  void* values;
  /* hop (is_hop 2: ha is the values' header) */
  zcclRedOp_t op;
  const zc_header_t *ha, *hb;
  /* chunk c of the inputs (hop: a and b; decompress: a) at at_x[c] past the first chunk */
  uint64_t *at_a, *at_b;
  /* output */
  uint8_t* out; /* the stream */
  size_t head, cap;
  /* batches */
  uint32_t nchunks, batch;
  _Atomic uint64_t claim;
  /* encoding: thread t owns chunks [c0[t], c0[t+1]), claimed as claim is */
  uint32_t c0[ZD_MAX_THREADS + 1];
  _Atomic uint64_t rclaim[ZD_MAX_THREADS];
  uint32_t *steal_hi, *steal_bytes; /* a stolen batch [c, steal_hi[c]) took steal_bytes[c] */
  zd_piece_t* pieces;               /* the output in order: where each piece is, its bytes */
  int npieces;
  size_t moved, move_total; /* where pieces 1.. go, and their bytes */
  uint8_t* scratch[ZD_MAX_THREADS];
  size_t scratch_cap[ZD_MAX_THREADS];
  size_t bytes[ZD_MAX_THREADS];
  /* errors: each thread keeps the one of its lowest batch */
  uint32_t err_chunk[ZD_MAX_THREADS];
  zcclResult_t res[ZD_MAX_THREADS];
  char why[ZD_MAX_THREADS][160];
} zd_codec_job_t;

static void zd_note_error(zd_codec_job_t* j, int t, zcclResult_t r, uint32_t c0) {
  if (r == zcclSuccess || (j->res[t] != zcclSuccess && j->err_chunk[t] <= c0)) return;
  j->res[t] = r;
  j->err_chunk[t] = c0;
  snprintf(j->why[t], sizeof j->why[t], "%s", zcclGetLastError(NULL));
}

/* The error of the lowest chunk that failed: what one thread would report. */
static zcclResult_t zd_first_error(const zd_codec_job_t* j, int n, const char* what) {
  int first = -1;
  for (int t = 0; t < n; t++)
    if (j->res[t] != zcclSuccess && (first < 0 || j->err_chunk[t] < j->err_chunk[first])) first = t;
  if (first < 0) return zcclSuccess;
  return ZU_ERROR(j->res[first], "%s (thread %d): %s", what, first, j->why[first]);
}

/* Claims the next batch [*c0, *c1) of claim (front | back << 32) from the
 * front or from the back; 0 when nothing is left. */
static int zd_claim_end(_Atomic uint64_t* claim, uint32_t batch, int front, uint32_t* c0, uint32_t* c1) {
  uint64_t s = atomic_load_explicit(claim, memory_order_relaxed);
  for (;;) {
    uint32_t f = (uint32_t)s, b = (uint32_t)(s >> 32), lo, hi;
    if (f >= b) return 0;
    if (front) {
      lo = f;
      hi = b - f > batch ? f + batch : b;
    } else {
      hi = b;
      lo = b - f > batch ? b - batch : f;
    }
    uint64_t next = front ? (uint64_t)hi | (uint64_t)b << 32 : (uint64_t)f | (uint64_t)lo << 32;
    if (atomic_compare_exchange_weak_explicit(claim, &s, next, memory_order_relaxed, memory_order_relaxed)) {
      *c0 = lo;
      *c1 = hi;
      return 1;
    }
  }
}

/* Decompression's claims: thread 0 from the front, the others from the back. */
static int zd_claim(zd_codec_job_t* j, int t, uint32_t* c0, uint32_t* c1) {
  return zd_claim_end(&j->claim, j->batch, t == 0, c0, c1);
}

static _Atomic unsigned long zd_stolen;

unsigned long zd_host_stolen_batches(void) { return atomic_load_explicit(&zd_stolen, memory_order_relaxed); }

/* The calling thread's hook (zd_set_progress): thread 0 of a job is the
 * calling thread, so only it calls the hook; pool threads see none. */
static _Thread_local void (*zd_hook)(void*);
static _Thread_local void* zd_hook_arg;

void zd_host_set_progress(void (*fn)(void*), void* arg) {
  zd_hook = fn;
  zd_hook_arg = arg;
}

static void zd_codec_progress(void* arg, uint32_t done, uint32_t total) {
  (void)arg, (void)done, (void)total;
  if (zd_hook) zd_hook(zd_hook_arg);
}

static zc_progress_fn zd_progress_here(void) { return zd_hook ? zd_codec_progress : NULL; }

/* Where chunk c's bytes start if every chunk before took its bound. */
static size_t zd_off(const zd_codec_job_t* j, uint32_t c) {
  return j->head + zc_chunks_bound(j->count, j->dtype, j->lg, 0, c);
}

static zcclResult_t zd_encode_chunks(zd_codec_job_t* j, uint32_t c0, uint32_t c1, uint8_t* dst, size_t cap,
                                     size_t* bytes) {
  uint8_t* index = j->out + ZC_HEADER_BYTES + 4 * (size_t)c0;
  if (j->is_hop == 2)
    return zc_hop_values_chunks(j->op, j->ha, j->hb, c0, c1, j->in, j->hb->chunks + j->at_b[c0], dst, cap, index,
                                bytes, zd_progress_here(), NULL);
  if (j->is_hop)
    return zc_hop_chunks(j->op, j->ha, j->hb, c0, c1, j->ha->chunks + j->at_a[c0], j->hb->chunks + j->at_b[c0], dst,
                         cap, index, bytes);
  return zc_compress_chunks(j->p, j->in, j->count, c0, c1, dst, cap, index, bytes, zd_progress_here(), NULL);
}

/* Thread t: its own range's batches from the front, back to back from
 * zd_off(c0[t]); then the others' from their backs, each batch at zd_off of
 * its first chunk (past anything the owner can write: the owner's bytes up
 * to chunk c end at or below zd_off(c)). */
static void zd_encode_in_place(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  uint32_t lo, hi;
  size_t at = zd_off(j, j->c0[t]);
  j->bytes[t] = 0;
  while (zd_claim_end(&j->rclaim[t], j->batch, 1, &lo, &hi)) {
    size_t b = 0;
    zd_note_error(j, t, zd_encode_chunks(j, lo, hi, j->out + at, zd_off(j, hi) - at, &b), lo);
    at += b;
    j->bytes[t] += b;
  }
  for (int k = 1; k < n; k++) {
    int r = (t + k) % n;
    while (zd_claim_end(&j->rclaim[r], j->batch, 0, &lo, &hi)) {
      size_t from = zd_off(j, lo), b = 0;
      zd_note_error(j, t, zd_encode_chunks(j, lo, hi, j->out + from, zd_off(j, hi) - from, &b), lo);
      j->steal_hi[lo] = hi;
      j->steal_bytes[lo] = (uint32_t)b;
      atomic_fetch_add_explicit(&zd_stolen, 1, memory_order_relaxed);
    }
  }
}

/* Thread t's share of moving pieces 1.. into place: bytes [t, t+1) * total
 * / n of them back to back, going to j->moved onwards. */
static void zd_move_pieces(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  size_t lo = j->move_total * (size_t)t / (size_t)n, hi = j->move_total * (size_t)(t + 1) / (size_t)n, at = 0;
  for (int k = 1; k < j->npieces && at < hi; k++) {
    const zd_piece_t* p = &j->pieces[k];
    size_t a = lo > at ? lo : at, b = hi < at + p->bytes ? hi : at + p->bytes;
    if (a < b) memcpy(j->out + j->moved + a, j->out + p->at + (a - at), b - a);
    at += p->bytes;
  }
}

/* The fallback: thread t does chunks [c0[t], c0[t+1]), thread 0 in place,
 * the others into scratch. */
static void zd_encode_range(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  (void)n;
  uint32_t c0 = j->c0[t], c1 = j->c0[t + 1];
  uint8_t* dst = t == 0 ? j->out + j->head : j->scratch[t];
  size_t cap = t == 0 ? j->cap - j->head : j->scratch_cap[t];
  zd_note_error(j, t, zd_encode_chunks(j, c0, c1, dst, cap, &j->bytes[t]), c0);
}

static void zd_decode_batches(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  uint32_t c0, c1;
  (void)n;
  while (zd_claim(j, t, &c0, &c1))
    zd_note_error(j, t,
                  zc_decompress_chunks(j->h, c0, c1, j->h->chunks + j->at_a[c0], j->values, zd_progress_here(), NULL),
                  c0);
}

static int zd_threads(zd_pool_t* pool, int nthreads, uint32_t nchunks) {
  int n = zd_pool_size(pool);
  if (nthreads > 0 && nthreads < n) n = nthreads;
  if (n > ZD_MAX_THREADS) n = ZD_MAX_THREADS;
  if ((uint32_t)n > nchunks) n = nchunks ? (int)nchunks : 1;
  return n;
}

/* Batches small enough to even the threads out, large enough that claims
 * cost nothing; one batch of everything for one thread. */
static uint32_t zd_batch(uint32_t nchunks, int n) {
  uint32_t b = n == 1 ? nchunks : nchunks / (16u * (uint32_t)n);
  if (b < 1) b = 1;
  return n > 1 && b > ZD_BATCH_MAX ? ZD_BATCH_MAX : b;
}

static void zd_batches_init(zd_codec_job_t* j, uint32_t nchunks, int n) {
  j->nchunks = nchunks;
  j->batch = zd_batch(nchunks, n);
  atomic_store(&j->claim, (uint64_t)nchunks << 32);
}

/* Chunk offsets (from the first chunk) of a validated stream. */
static uint64_t* zd_chunk_offsets(const zc_header_t* h) {
  uint64_t* at = malloc(((size_t)h->nchunks + 1) * sizeof *at);
  if (at == NULL) return NULL;
  at[0] = 0;
  for (uint32_t c = 0; c < h->nchunks; c++) at[c + 1] = at[c] + zc_get_u32(h->index + 4 * (size_t)c);
  return at;
}

/* Runs an encoding job (compress or hop) over n threads and assembles the
 * stream: the chunks' bytes back to back after the header and index. */
static zcclResult_t zd_encode(zd_pool_t* pool, zd_codec_job_t* j, uint32_t nchunks, int n, size_t* size,
                              const char* what) {
  zcclResult_t res = zcclSuccess;
  j->dtype = j->is_hop ? j->ha->dtype : j->p->dtype;
  j->lg = j->is_hop ? j->ha->chunk_log2 : (j->p->chunk_log2 ? j->p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT);
  j->count = j->is_hop ? (size_t)j->ha->count : j->count;
  for (int t = 0; t <= n; t++) j->c0[t] = (uint32_t)((uint64_t)nchunks * (uint64_t)t / (uint64_t)n);
  if (zd_off(j, nchunks) <= j->cap) {
    /* In place, in batches with stealing (a static split finished two
     * threads up to 39% apart on a shared machine). */
    j->batch = zd_batch(nchunks, n);
    for (int t = 0; t < n; t++) atomic_store(&j->rclaim[t], (uint64_t)j->c0[t] | (uint64_t)j->c0[t + 1] << 32);
    if (n > 1) { /* one block: the pieces, then the stolen batches' ends and sizes */
      size_t np = (size_t)nchunks + (size_t)n;
      j->pieces = malloc(np * sizeof *j->pieces + 2 * (size_t)nchunks * sizeof *j->steal_hi);
      if (j->pieces == NULL) return ZU_ERROR(zcclSystemError, "%s: out of memory", what);
      j->steal_hi = (uint32_t*)(j->pieces + np);
      j->steal_bytes = j->steal_hi + nchunks;
    }
    zd_pool_run(pool, n, zd_encode_in_place, j);
    ZU_CHECK_GOTO(zd_first_error(j, n, what), res, free_in_place);
    if (n == 1) {
      *size = j->head + j->bytes[0];
      return zcclSuccess;
    }
    /* The pieces in chunk order: range t's own batches, then those stolen
     * from its back (each range's claim ended with front == back). */
    j->npieces = 0;
    for (int t = 0; t < n; t++) {
      j->pieces[j->npieces++] = (zd_piece_t){zd_off(j, j->c0[t]), j->bytes[t]};
      for (uint32_t c = (uint32_t)atomic_load(&j->rclaim[t]); c < j->c0[t + 1]; c = j->steal_hi[c])
        j->pieces[j->npieces++] = (zd_piece_t){zd_off(j, c), j->steal_bytes[c]};
    }
    j->moved = j->head + j->bytes[0];
    j->move_total = 0;
    for (int k = 1; k < j->npieces; k++) j->move_total += j->pieces[k].bytes;
    if (j->npieces > 1 && j->moved + j->move_total <= j->pieces[1].at) {
      zd_pool_run(pool, n, zd_move_pieces, j); /* no piece lands on another's bytes: all threads move */
    } else {
      size_t at = j->moved;
      for (int k = 1; k < j->npieces; k++) { /* each lands at or below where it is, past every piece still to move */
        memmove(j->out + at, j->out + j->pieces[k].at, j->pieces[k].bytes);
        at += j->pieces[k].bytes;
      }
    }
    *size = j->moved + j->move_total;
  free_in_place:
    free(j->pieces);
    return res;
  }
  for (int t = 1; t < n; t++) {
    /* A range's bound: its chunks as a stream of their own. */
    j->scratch_cap[t] = zc_compress_bound((size_t)(j->c0[t + 1] - j->c0[t]) << j->lg, j->dtype, j->lg);
    j->scratch[t] = malloc(j->scratch_cap[t]);
    if (j->scratch[t] == NULL) {
      res = ZU_ERROR(zcclSystemError, "%s: out of memory for thread scratch", what);
      goto free_scratch;
    }
  }
  zd_pool_run(pool, n, zd_encode_range, j);
  ZU_CHECK_GOTO(zd_first_error(j, n, what), res, free_scratch);
  size_t at = j->head + j->bytes[0];
  for (int t = 1; t < n; t++) {
    if (j->cap - at < j->bytes[t]) {
      res = ZU_ERROR(zcclInvalidArgument, "%s: output buffer too small (size it with zc_compress_bound)", what);
      goto free_scratch;
    }
    memcpy(j->out + at, j->scratch[t], j->bytes[t]);
    at += j->bytes[t];
  }
  *size = at;
free_scratch:
  for (int t = 1; t < n; t++) free(j->scratch[t]);
  return res;
}

zcclResult_t zd_host_compress(zd_pool_t* pool, int nthreads, const zc_params_t* p, const void* in, size_t count,
                              void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(size == NULL || (in == NULL && count > 0), zcclInvalidArgument, "zd_host_compress: NULL argument");
  size_t head;
  ZU_CHECK(zc_compress_begin(p, count, out, cap, &head));
  uint32_t nchunks = (uint32_t)((head - ZC_HEADER_BYTES) / 4);
  zd_codec_job_t* j = calloc(1, sizeof *j);
  ZU_RETURN_ERR_IF(j == NULL, zcclSystemError, "zd_host_compress: out of memory");
  j->p = p;
  j->in = in;
  j->count = count;
  j->out = out;
  j->head = head;
  j->cap = cap;
  zcclResult_t res = zd_encode(pool, j, nchunks, zd_threads(pool, nthreads, nchunks), size, "zd_host_compress");
  free(j);
  return res;
}

/* Runs a hop job (kind 1: streams ha and hb; 2: the values in, of header
 * ha, with stream hb) whose header begin has written. */
static zcclResult_t zd_hop_job(zd_pool_t* pool, int nthreads, int kind, zcclRedOp_t op, const void* in,
                               const zc_header_t* ha, const zc_header_t* hb, void* out, size_t head, size_t cap,
                               size_t* size, const char* what) {
  zcclResult_t res = zcclSuccess;
  zd_codec_job_t* j = calloc(1, sizeof *j);
  ZU_RETURN_ERR_IF(j == NULL, zcclSystemError, "%s: out of memory", what);
  j->is_hop = kind;
  j->op = op;
  j->in = in;
  j->ha = ha;
  j->hb = hb;
  j->out = out;
  j->head = head;
  j->cap = cap;
  j->at_a = kind == 1 ? zd_chunk_offsets(ha) : NULL;
  j->at_b = zd_chunk_offsets(hb);
  if ((kind == 1 && j->at_a == NULL) || j->at_b == NULL) {
    res = ZU_ERROR(zcclSystemError, "%s: out of memory", what);
    goto free_job;
  }
  res = zd_encode(pool, j, ha->nchunks, zd_threads(pool, nthreads, ha->nchunks), size, what);
free_job:
  free(j->at_b);
  free(j->at_a);
  free(j);
  return res;
}

void zd_scratch_free(zd_scratch_t* s) {
  free(s->p);
  s->p = NULL;
  s->bytes = 0;
}

/* Where a hop writes its result: out, or when out is one of its inputs
 * (in place) aside's buffer (grown when short) or, without one, *own's for
 * this call alone. NULL when out of memory. */
static void* zd_hop_dst(zd_scratch_t* aside, int in_place, void* out, size_t cap, void** own) {
  *own = NULL;
  if (!in_place) return out;
  if (aside == NULL) return *own = malloc(cap);
  if (aside->bytes < cap) {
    zd_scratch_free(aside);
    aside->p = malloc(cap);
    aside->bytes = aside->p ? cap : 0;
  }
  return aside->p;
}

/* After a hop into dst: an in-place result copied over out. */
static zcclResult_t zd_hop_done(zcclResult_t res, void* out, const void* dst, void* own, const size_t* size) {
  if (res == zcclSuccess && dst != out) memcpy(out, dst, *size);
  free(own);
  return res;
}

zcclResult_t zd_host_hop(zd_pool_t* pool, int nthreads, zd_scratch_t* aside, zcclRedOp_t op, const void* a,
                         size_t a_size, const void* b, size_t b_size, void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(size == NULL, zcclInvalidArgument, "zd_host_hop: NULL argument");
  int in_place = out != NULL && (out == a || out == b); /* build aside, copy over (as zc_hop) */
  void* own;
  void* dst = zd_hop_dst(aside, in_place, out, cap, &own);
  ZU_RETURN_ERR_IF(in_place && dst == NULL, zcclSystemError, "zd_host_hop: out of memory for the in-place result");
  zc_header_t ha, hb;
  size_t head;
  zcclResult_t res = zc_hop_begin(op, a, a_size, b, b_size, dst, cap, &ha, &hb, &head);
  if (res == zcclSuccess) res = zd_hop_job(pool, nthreads, 1, op, NULL, &ha, &hb, dst, head, cap, size, "zd_host_hop");
  return zd_hop_done(res, out, dst, own, size);
}

zcclResult_t zd_host_hop_values(zd_pool_t* pool, int nthreads, zd_scratch_t* aside, zcclRedOp_t op,
                                const zc_params_t* p, const void* in, size_t count, const void* b, size_t b_size,
                                void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(size == NULL, zcclInvalidArgument, "zd_host_hop_values: NULL argument");
  int in_place = out != NULL && out == b; /* as zd_host_hop (and zc_hop_values) */
  void* own;
  void* dst = zd_hop_dst(aside, in_place, out, cap, &own);
  ZU_RETURN_ERR_IF(in_place && dst == NULL, zcclSystemError,
                   "zd_host_hop_values: out of memory for the in-place result");
  zc_header_t h, hb;
  size_t head;
  zcclResult_t res = zc_hop_values_begin(op, p, in, count, b, b_size, dst, cap, &h, &hb, &head);
  if (res == zcclSuccess)
    res = zd_hop_job(pool, nthreads, 2, op, in, &h, &hb, dst, head, cap, size, "zd_host_hop_values");
  return zd_hop_done(res, out, dst, own, size);
}

zcclResult_t zd_host_decompress(zd_pool_t* pool, int nthreads, const void* stream, size_t size, void* out,
                                size_t cap, size_t* count) {
  zc_header_t h;
  ZU_CHECK(zc_decompress_begin(stream, size, out, cap, count, &h));
  zcclResult_t res = zcclSuccess;
  zd_codec_job_t* j = calloc(1, sizeof *j);
  ZU_RETURN_ERR_IF(j == NULL, zcclSystemError, "zd_host_decompress: out of memory");
  j->h = &h;
  j->values = out;
  j->at_a = zd_chunk_offsets(&h);
  if (j->at_a == NULL) {
    res = ZU_ERROR(zcclSystemError, "zd_host_decompress: out of memory");
    goto free_job;
  }
  int n = zd_threads(pool, nthreads, h.nchunks);
  zd_batches_init(j, h.nchunks, n);
  zd_pool_run(pool, n, zd_decode_batches, j);
  res = zd_first_error(j, n, "zd_host_decompress");
  if (res == zcclSuccess) *count = (size_t)h.count;
free_job:
  free(j->at_a);
  free(j);
  return res;
}
