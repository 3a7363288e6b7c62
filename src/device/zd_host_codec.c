#include "zd_host_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zu_error.h"

#define ZD_MAX_THREADS 256

/* One parallel codec job: thread t does chunks [c0[t], c0[t+1]). Thread 0
 * writes in place. The others write where their range would start if every
 * range before took its bound (off[t], when out has room for the whole
 * stream's bound), or else into scratch of their own; either way the bytes
 * move into place afterwards (compressed sizes are known only once
 * compressed). */
typedef struct {
  int is_hop;
  /* compress */
  const zc_params_t* p;
  const void* in;
  size_t count;
  /* decompress */
  const zc_header_t* h;
  /* hop */
  zcclRedOp_t op;
  const zc_header_t *ha, *hb;
  /* output */
  uint8_t* out; /* the stream */
  size_t head, cap;
  void* values; /* decompress output */
  uint32_t c0[ZD_MAX_THREADS + 1];
  int in_place;                       /* ranges written at off[t] in out itself */
  int nranges;
  size_t moved, move_total;           /* where ranges 1.. go, and their bytes */
  size_t off[ZD_MAX_THREADS + 1];
  uint8_t* scratch[ZD_MAX_THREADS];
  size_t scratch_cap[ZD_MAX_THREADS];
  size_t bytes[ZD_MAX_THREADS];
  zcclResult_t res[ZD_MAX_THREADS];
  char why[ZD_MAX_THREADS][160];
} zd_codec_job_t;

static void zd_split(zd_codec_job_t* j, uint32_t nchunks, int n) {
  for (int t = 0; t <= n; t++) j->c0[t] = (uint32_t)((uint64_t)nchunks * (uint64_t)t / (uint64_t)n);
}

static void zd_note_error(zd_codec_job_t* j, int t) {
  if (j->res[t] != zcclSuccess) snprintf(j->why[t], sizeof j->why[t], "%s", zcclGetLastError(NULL));
}

static void zd_encode_range(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  (void)n;
  uint32_t c0 = j->c0[t], c1 = j->c0[t + 1];
  uint8_t* dst = j->in_place ? j->out + j->off[t] : t == 0 ? j->out + j->head : j->scratch[t];
  size_t cap = j->in_place ? j->off[t + 1] - j->off[t] : t == 0 ? j->cap - j->head : j->scratch_cap[t];
  uint8_t* index = j->out + ZC_HEADER_BYTES + 4 * (size_t)c0;
  if (j->is_hop)
    j->res[t] = zc_hop_chunks(j->op, j->ha, j->hb, c0, c1, zc_chunk_ptr(j->ha, c0), zc_chunk_ptr(j->hb, c0), dst,
                              cap, index, &j->bytes[t]);
  else
    j->res[t] = zc_compress_chunks(j->p, j->in, j->count, c0, c1, dst, cap, index, &j->bytes[t], NULL, NULL);
  zd_note_error(j, t);
}

static void zd_decode_range(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  (void)n;
  uint32_t c0 = j->c0[t], c1 = j->c0[t + 1];
  j->res[t] = zc_decompress_chunks(j->h, c0, c1, zc_chunk_ptr(j->h, c0), j->values, NULL, NULL);
  zd_note_error(j, t);
}

/* Thread t's share of the moves into place: bytes [t, t+1) * total / n of
 * ranges 1.. back to back, each going to j->moved onwards. */
static void zd_move_range(void* arg, int t, int n) {
  zd_codec_job_t* j = arg;
  size_t lo = j->move_total * (size_t)t / (size_t)n, hi = j->move_total * (size_t)(t + 1) / (size_t)n, at = 0;
  for (int r = 1; r < j->nranges && at < hi; r++) {
    size_t a = lo > at ? lo : at, b = hi < at + j->bytes[r] ? hi : at + j->bytes[r];
    if (a < b) memcpy(j->out + j->moved + a, j->out + j->off[r] + (a - at), b - a);
    at += j->bytes[r];
  }
}

static int zd_threads(zd_pool_t* pool, int nthreads, uint32_t nchunks) {
  int n = zd_pool_size(pool);
  if (nthreads > 0 && nthreads < n) n = nthreads;
  if (n > ZD_MAX_THREADS) n = ZD_MAX_THREADS;
  if ((uint32_t)n > nchunks) n = nchunks ? (int)nchunks : 1;
  return n;
}

static zcclResult_t zd_first_error(const zd_codec_job_t* j, int n, const char* what) {
  for (int t = 0; t < n; t++)
    if (j->res[t] != zcclSuccess) return ZU_ERROR(j->res[t], "%s (thread %d): %s", what, t, j->why[t]);
  return zcclSuccess;
}

/* Runs an encoding job (compress or hop) over n threads and assembles the
 * stream: the ranges' bytes back to back after the header and index. */
static zcclResult_t zd_encode(zd_pool_t* pool, zd_codec_job_t* j, uint32_t nchunks, int n, size_t* size,
                              const char* what) {
  zcclResult_t res = zcclSuccess;
  zcclDataType_t dtype = j->is_hop ? j->ha->dtype : j->p->dtype;
  unsigned lg = j->is_hop ? j->ha->chunk_log2 : (j->p->chunk_log2 ? j->p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT);
  zd_split(j, nchunks, n);
  j->nranges = n;
  size_t count = j->is_hop ? (size_t)j->ha->count : j->count;
  j->off[0] = j->head;
  for (int t = 0; t < n; t++) j->off[t + 1] = j->off[t] + zc_chunks_bound(count, dtype, lg, j->c0[t], j->c0[t + 1]);
  j->in_place = n > 1 && j->off[n] <= j->cap;
  for (int t = 1; t < n && !j->in_place; t++) {
    /* A range's bound: its chunks as a stream of their own. */
    j->scratch_cap[t] = zc_compress_bound((size_t)(j->c0[t + 1] - j->c0[t]) << lg, dtype, lg);
    j->scratch[t] = malloc(j->scratch_cap[t]);
    if (j->scratch[t] == NULL) {
      res = ZU_ERROR(zcclSystemError, "%s: out of memory for thread scratch", what);
      goto free_scratch;
    }
  }
  zd_pool_run(pool, n, zd_encode_range, j);
  ZU_CHECK_GOTO(zd_first_error(j, n, what), res, free_scratch);
  size_t at = j->head + j->bytes[0];
  if (j->in_place) {
    size_t end = at;
    for (int t = 1; t < n; t++) end += j->bytes[t];
    if (end <= j->off[1]) { /* no range lands on another's bytes: move them all at once, on every thread */
      j->moved = at;
      j->move_total = end - at;
      zd_pool_run(pool, n, zd_move_range, j);
      *size = end;
      goto free_scratch;
    }
  }
  for (int t = 1; t < n; t++) {
    if (j->cap - at < j->bytes[t]) {
      res = ZU_ERROR(zcclInvalidArgument, "%s: output buffer too small (size it with zc_compress_bound)", what);
      goto free_scratch;
    }
    memmove(j->out + at, j->in_place ? j->out + j->off[t] : j->scratch[t], j->bytes[t]);
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

zcclResult_t zd_host_hop(zd_pool_t* pool, int nthreads, zcclRedOp_t op, const void* a, size_t a_size,
                         const void* b, size_t b_size, void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(size == NULL, zcclInvalidArgument, "zd_host_hop: NULL argument");
  if (out != NULL && (out == a || out == b)) { /* in place: build aside, copy over (as zc_hop) */
    void* aside = malloc(cap);
    ZU_RETURN_ERR_IF(aside == NULL, zcclSystemError, "zd_host_hop: out of memory for the in-place result");
    zcclResult_t res = zd_host_hop(pool, nthreads, op, a, a_size, b, b_size, aside, cap, size);
    if (res == zcclSuccess) memcpy(out, aside, *size);
    free(aside);
    return res;
  }
  zc_header_t ha, hb;
  size_t head;
  ZU_CHECK(zc_hop_begin(op, a, a_size, b, b_size, out, cap, &ha, &hb, &head));
  zd_codec_job_t* j = calloc(1, sizeof *j);
  ZU_RETURN_ERR_IF(j == NULL, zcclSystemError, "zd_host_hop: out of memory");
  j->is_hop = 1;
  j->op = op;
  j->ha = &ha;
  j->hb = &hb;
  j->out = out;
  j->head = head;
  j->cap = cap;
  zcclResult_t res = zd_encode(pool, j, ha.nchunks, zd_threads(pool, nthreads, ha.nchunks), size, "zd_host_hop");
  free(j);
  return res;
}

zcclResult_t zd_host_decompress(zd_pool_t* pool, int nthreads, const void* stream, size_t size, void* out,
                                size_t cap, size_t* count) {
  zc_header_t h;
  ZU_CHECK(zc_decompress_begin(stream, size, out, cap, count, &h));
  zd_codec_job_t* j = calloc(1, sizeof *j);
  ZU_RETURN_ERR_IF(j == NULL, zcclSystemError, "zd_host_decompress: out of memory");
  j->h = &h;
  j->values = out;
  int n = zd_threads(pool, nthreads, h.nchunks);
  zd_split(j, h.nchunks, n);
  zd_pool_run(pool, n, zd_decode_range, j);
  zcclResult_t res = zd_first_error(j, n, "zd_host_decompress");
  free(j);
  if (res == zcclSuccess) *count = (size_t)h.count;
  return res;
}
