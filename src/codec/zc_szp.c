/* The stream codec on the host: header, chunks, and the chunk emitter that
 * compression, integer encoding and homomorphic operations share, so all of
 * them write the canonical bytes of docs/format.md. */
#include "zc_szp.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

#include "zc_codec.h"
#include "zc_szp_block.h"
#include "zc_szp_internal.h"
#include "zu_error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zccl's stream codec assumes a little-endian host"
#endif

static const uint8_t zc_magic[4] = {'Z', 'C', 'C', 'S'};

size_t zc_dtype_bytes(zcclDataType_t dtype) {
  return dtype == zcclFloat32 ? 4 : dtype == zcclFloat64 ? 8 : 0;
}

size_t zc_compress_bound(size_t count, zcclDataType_t dtype, unsigned chunk_log2) {
  if (chunk_log2 == 0) chunk_log2 = ZC_CHUNK_LOG2_DEFAULT;
  size_t esize = zc_dtype_bytes(dtype), per_block = ZC_BLOCK_MAX_CODED + ZC_BLOCK * esize;
  /* count may come from a stream's header (anything up to 2^64 - 1):
   * rounding up by adding first would wrap, so round up after the shift,
   * and saturate where the bound itself does not fit. */
  size_t nchunks = zc_ceil_shift(count, chunk_log2);
  size_t nblocks = zc_ceil_shift(count, 5) + nchunks; /* partial blocks per chunk */
  size_t per_chunk = 4 + 8 + ZC_CHUNK_SUM_BYTES;
  if (nblocks > (SIZE_MAX - ZC_HEADER_BYTES) / 2 / per_block || nchunks > (SIZE_MAX - ZC_HEADER_BYTES) / 2 / per_chunk)
    return SIZE_MAX;
  return ZC_HEADER_BYTES + nchunks * per_chunk + nblocks * per_block;
}

size_t zc_chunks_bound(size_t count, zcclDataType_t dtype, unsigned chunk_log2, uint32_t c0, uint32_t c1) {
  if (chunk_log2 == 0) chunk_log2 = ZC_CHUNK_LOG2_DEFAULT;
  size_t first = (size_t)c0 << chunk_log2, end = (size_t)c1 << chunk_log2, nc = c1 - c0;
  if (end > count) end = count;
  if (first >= end) return 0;
  /* Ranges start on chunk, hence block, boundaries: only the last chunk of
   * the stream has a partial block beyond its share. */
  size_t nblocks = (end - first + ZC_BLOCK - 1) / ZC_BLOCK + nc;
  return nc * (8 + ZC_CHUNK_SUM_BYTES) + nblocks * (ZC_BLOCK_MAX_CODED + ZC_BLOCK * zc_dtype_bytes(dtype));
}

static void zc_header_write(uint8_t* o, zcclDataType_t dtype, uint64_t count, double eb, int has_fill,
                            double fill, unsigned chunk_log2, uint32_t nchunks, uint32_t divisor, int checksum) {
  memcpy(o, zc_magic, 4);
  o[4] = 1;
  o[5] = dtype == zcclFloat32 ? 1 : 2;
  o[6] = (uint8_t)((has_fill ? ZC_FLAG_FILL : 0) | (checksum ? ZC_FLAG_CHECKSUM : 0));
  o[7] = (uint8_t)chunk_log2;
  memcpy(o + 8, &count, 8);
  memcpy(o + 16, &eb, 8);
  double f = has_fill ? fill : 0.0;
  memcpy(o + 24, &f, 8);
  memcpy(o + 32, &nchunks, 4);
  memcpy(o + 36, &divisor, 4);
}

/* ---- chunk checksums ---------------------------------------------------- */

uint64_t zc_header_seed(const uint8_t* header) { return XXH3_64bits(header, ZC_HEADER_BYTES); }

uint32_t zc_chunk_sum(const uint8_t* chunk, size_t n, uint64_t seed, uint32_t c) {
  return (uint32_t)XXH3_64bits_withSeed(chunk, n, seed + c);
}

zcclResult_t zc_chunk_verify(const zc_header_t* h, uint32_t c, const uint8_t* chunk, uint32_t bytes,
                             uint32_t* payload, const char* what) {
  *payload = bytes;
  if (!h->checksum) return zcclSuccess;
  *payload = bytes - ZC_CHUNK_SUM_BYTES; /* zc_header_read saw bytes >= 12 */
  uint32_t want = zc_get_u32(chunk + *payload), got = zc_chunk_sum(chunk, *payload, h->seed, c);
  ZU_RETURN_ERR_IF(want != got, zcclInvalidArgument,
                   "%s: chunk %u fails its checksum (stored 0x%08x, computed 0x%08x): the stream is corrupt", what,
                   c, want, got);
  return zcclSuccess;
}

size_t zc_chunk_seal(uint8_t* chunk, size_t n, size_t cap, int seed_on, uint64_t seed, uint32_t c) {
  if (!seed_on) return n;
  if (cap - n < ZC_CHUNK_SUM_BYTES) return 0;
  zc_put_u32(chunk + n, zc_chunk_sum(chunk, n, seed, c));
  return n + ZC_CHUNK_SUM_BYTES;
}

/* The seed of the header compression writes for p and count. */
static uint64_t zc_params_seed(const zc_params_t* p, size_t count) {
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  uint8_t hdr[ZC_HEADER_BYTES];
  zc_header_write(hdr, p->dtype, count, p->eb, p->has_fill, p->fill, lg, (uint32_t)zc_ceil_shift(count, lg), 1,
                  p->checksum);
  return zc_header_seed(hdr);
}

zcclResult_t zc_header_read(const void* stream, size_t size, zc_header_t* h) {
  const uint8_t* s = stream;
  ZU_RETURN_ERR_IF(stream == NULL || h == NULL, zcclInvalidArgument, "stream: NULL argument");
  ZU_RETURN_ERR_IF(size < ZC_HEADER_BYTES, zcclInvalidArgument,
                   "stream: %zu bytes is shorter than the %d-byte header", size, ZC_HEADER_BYTES);
  ZU_RETURN_ERR_IF(memcmp(s, zc_magic, 4) != 0, zcclInvalidArgument, "stream: bad magic (not a zccl stream)");
  ZU_RETURN_ERR_IF(s[4] != 1, zcclInvalidArgument, "stream: format version %u, this zccl reads 1", s[4]);
  ZU_RETURN_ERR_IF(s[5] != 1 && s[5] != 2, zcclInvalidArgument, "stream: bad dtype code %u", s[5]);
  ZU_RETURN_ERR_IF(s[6] & ~(ZC_FLAG_FILL | ZC_FLAG_CHECKSUM), zcclInvalidArgument,
                   "stream: reserved flag bits set (0x%02x)", s[6]);
  ZU_RETURN_ERR_IF(s[7] < ZC_CHUNK_LOG2_MIN || s[7] > ZC_CHUNK_LOG2_MAX, zcclInvalidArgument,
                   "stream: chunk size 2^%u outside 2^%d..2^%d", s[7], ZC_CHUNK_LOG2_MIN, ZC_CHUNK_LOG2_MAX);
  memset(h, 0, sizeof *h);
  h->dtype = s[5] == 1 ? zcclFloat32 : zcclFloat64;
  h->has_fill = (s[6] & ZC_FLAG_FILL) != 0;
  h->checksum = (s[6] & ZC_FLAG_CHECKSUM) != 0;
  h->chunk_log2 = s[7];
  memcpy(&h->count, s + 8, 8);
  memcpy(&h->eb, s + 16, 8);
  memcpy(&h->fill, s + 24, 8);
  memcpy(&h->nchunks, s + 32, 4);
  memcpy(&h->divisor, s + 36, 4);
  ZU_RETURN_ERR_IF(!(isfinite(h->eb) && h->eb > 0), zcclInvalidArgument, "stream: bad error bound %g", h->eb);
  ZU_RETURN_ERR_IF(!isfinite(h->fill), zcclInvalidArgument, "stream: non-finite fill value");
  ZU_RETURN_ERR_IF(h->divisor == 0, zcclInvalidArgument, "stream: divisor 0");
  /* Not (count + 2^k - 1) >> k: that wraps for counts near 2^64 and lets a
   * header claim 2^64 - 1 values in 0 chunks. */
  uint64_t want = zc_ceil_shift(h->count, h->chunk_log2);
  ZU_RETURN_ERR_IF(want != h->nchunks, zcclInvalidArgument,
                   "stream: %u chunks for %llu values of chunk size %u (expected %llu)", h->nchunks,
                   (unsigned long long)h->count, 1u << h->chunk_log2, (unsigned long long)want);
  ZU_RETURN_ERR_IF((size - ZC_HEADER_BYTES) / 4 < h->nchunks, zcclInvalidArgument,
                   "stream: truncated chunk index (%u chunks, %zu bytes)", h->nchunks, size);
  h->index = s + ZC_HEADER_BYTES;
  h->chunks = h->index + (size_t)h->nchunks * 4;
  size_t total = ZC_HEADER_BYTES + (size_t)h->nchunks * 4;
  uint32_t least = 8 + (h->checksum ? ZC_CHUNK_SUM_BYTES : 0); /* base (and checksum) */
  for (uint32_t c = 0; c < h->nchunks; c++) {
    uint32_t n = zc_get_u32(h->index + 4 * (size_t)c);
    ZU_RETURN_ERR_IF(n < least || n > size - total, zcclInvalidArgument,
                     "stream: chunk %u claims %u bytes, %zu remain", c, n, size - total);
    total += n;
  }
  ZU_RETURN_ERR_IF(total != size, zcclInvalidArgument, "stream: %zu bytes given, the stream has %zu",
                   size, total);
  h->stream_bytes = total;
  h->seed = h->checksum ? zc_header_seed(s) : 0;
  return zcclSuccess;
}

/* ---- the chunk emitter ---------------------------------------------------- */

void zc_emit_begin(zc_emit_t* e, uint8_t* out, size_t cap, zcclDataType_t dtype, int has_fill) {
  memset(e, 0, sizeof *e);
  e->out = out;
  e->cap = cap;
  e->o = 8; /* base, written at the end */
  e->esize = zc_dtype_bytes(dtype);
  e->has_fill = has_fill;
}

int zc_emit_block(zc_emit_t* e, const zc_ivals_t* v, int nvalid) {
  zc_block_t b;
  uint32_t pad = 0;
  b.xbits = 0;
  b.fbits = 0;
  for (int i = 0; i < ZC_BLOCK; i++) {
    b.d[i] = 0;
    if (i >= nvalid) {
      pad |= 1u << i;
    } else if (v->kind[i] == ZC_KIND_FILL) {
      b.fbits |= 1u << i;
    } else if (v->kind[i] == ZC_KIND_EXCEPTION) {
      b.xbits |= 1u << i;
    } else {
      if (!e->have_prev) {
        e->base = v->q[i];
        e->prev = v->q[i];
        e->have_prev = 1;
      }
      uint64_t d = (uint64_t)v->q[i] - (uint64_t)e->prev;
      e->prev = v->q[i];
      int64_t sd = (int64_t)d;
      if (sd >= ((int64_t)1 << ZC_W_MAX) || sd <= -((int64_t)1 << ZC_W_MAX)) return ZC_RC_RANGE;
      b.d[i] = sd;
    }
  }
  if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * e->esize) return ZC_RC_SPACE;
  e->o += (size_t)zc_block_encode(&b, pad, e->has_fill, e->out + e->o);
  for (int i = 0; i < ZC_BLOCK; i++) {
    if (!((b.xbits >> i) & 1u)) continue;
    if (e->esize == 4) {
      float f = (float)v->raw[i];
      memcpy(e->out + e->o, &f, 4);
    } else {
      memcpy(e->out + e->o, &v->raw[i], 8);
    }
    e->o += e->esize;
  }
  return 0;
}

size_t zc_emit_end(zc_emit_t* e) {
  memcpy(e->out, &e->base, 8);
  return e->o;
}

zcclResult_t zc_emit_error(int rc, const char* what) {
  if (rc == ZC_RC_MALFORMED) return ZU_ERROR(zcclInvalidArgument, "%s: a chunk is malformed or truncated", what);
  if (rc == ZC_RC_RANGE)
    return ZU_ERROR(zcclInvalidUsage, "%s: a delta exceeds 2^%d (too many homomorphic sums of large values)",
                    what, ZC_W_MAX);
  return ZU_ERROR(zcclInvalidArgument, "%s: output buffer too small (size it with zc_compress_bound)", what);
}

/* ---- chunk parsing ---------------------------------------------------------- */

int zc_parse_begin(zc_parse_t* p, const uint8_t* chunk, size_t size, size_t nvalues, zcclDataType_t dtype,
                   int has_fill) {
  if (size < 8) return -1;
  memset(p, 0, sizeof *p);
  p->in = chunk;
  p->size = size;
  p->o = 8;
  p->left = nvalues;
  p->esize = zc_dtype_bytes(dtype);
  p->has_fill = has_fill;
  int64_t base;
  memcpy(&base, chunk, 8);
  p->q = base;
  return 0;
}

int zc_parse_block(zc_parse_t* p, zc_ivals_t* v, int* nvalid) {
  zc_block_t b;
  int nexc;
  if (p->left == 0) return -1;
  int n = zc_block_decode(p->in + p->o, p->size - p->o, p->has_fill, &b, &nexc);
  if (n < 0) return -1;
  p->o += (size_t)n;
  int nv = p->left < ZC_BLOCK ? (int)p->left : ZC_BLOCK;
  uint32_t valid = nv == ZC_BLOCK ? 0xffffffffu : ((1u << nv) - 1);
  /* A padding position is neither exception nor fill, and has delta 0. */
  if (((b.xbits | b.fbits) & ~valid) && b.fbits != 0xffffffffu) return -1;
  if ((size_t)nexc * p->esize > p->size - p->o) return -1;
  const uint8_t* raw = p->in + p->o;
  p->o += (size_t)nexc * p->esize;
  uint64_t q = (uint64_t)p->q;
  for (int i = 0; i < ZC_BLOCK; i++) {
    if (i >= nv) {
      if (b.d[i] != 0) return -1;
      continue;
    }
    q += (uint64_t)b.d[i];
    v->q[i] = (int64_t)q;
    if ((b.fbits >> i) & 1u) {
      v->kind[i] = ZC_KIND_FILL;
    } else if ((b.xbits >> i) & 1u) {
      v->kind[i] = ZC_KIND_EXCEPTION;
      if (p->esize == 4) {
        float f;
        memcpy(&f, raw, 4);
        v->raw[i] = f;
      } else {
        memcpy(&v->raw[i], raw, 8);
      }
      raw += p->esize;
    } else {
      v->kind[i] = ZC_KIND_ORDINARY;
    }
  }
  p->q = (int64_t)q;
  p->left -= (size_t)nv;
  *nvalid = nv;
  return 0;
}

/* ---- compression -------------------------------------------------------- */

/* Classifies one block of values into the integer view. */
static void zc_classify_f32(const float* x, int n, const zc_grid_t* g, int has_fill, float fill,
                            zc_ivals_t* v) {
  for (int i = 0; i < n; i++) {
    float f = x[i];
    if (has_fill && f == fill) {
      v->kind[i] = ZC_KIND_FILL;
    } else if (zc_quant_f32(f, g, &v->q[i])) {
      v->kind[i] = ZC_KIND_EXCEPTION;
      v->raw[i] = f;
    } else {
      v->kind[i] = ZC_KIND_ORDINARY;
    }
  }
}

static void zc_classify_f64(const double* x, int n, const zc_grid_t* g, int has_fill, double fill,
                            zc_ivals_t* v) {
  for (int i = 0; i < n; i++) {
    double f = x[i];
    if (has_fill && f == fill) {
      v->kind[i] = ZC_KIND_FILL;
    } else if (zc_quant_f64(f, g, &v->q[i])) {
      v->kind[i] = ZC_KIND_EXCEPTION;
      v->raw[i] = f;
    } else {
      v->kind[i] = ZC_KIND_ORDINARY;
    }
  }
}

void zc_classify(const void* in, int n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill, double fill,
                 zc_ivals_t* v) {
  if (dtype == zcclFloat32)
    zc_classify_f32(in, n, g, has_fill, (float)fill, v);
  else
    zc_classify_f64(in, n, g, has_fill, fill, v);
}

int zc_chunk_compress_scalar(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                             double fill, zc_emit_t* e) {
  size_t esize = zc_dtype_bytes(dtype);
  for (size_t b = 0; b < n; b += ZC_BLOCK) {
    int nv = n - b < ZC_BLOCK ? (int)(n - b) : ZC_BLOCK;
    zc_ivals_t v;
    zc_classify((const uint8_t*)in + b * esize, nv, dtype, g, has_fill, fill, &v);
    int rc = zc_emit_block(e, &v, nv);
    if (rc != 0) return rc;
  }
  return 0;
}

zcclResult_t zc_compress_begin(const zc_params_t* p, size_t count, void* out, size_t cap, size_t* head) {
  ZU_RETURN_ERR_IF(p == NULL || out == NULL || head == NULL, zcclInvalidArgument, "zc_compress: NULL argument");
  ZU_RETURN_ERR_IF(zc_dtype_bytes(p->dtype) == 0, zcclInvalidArgument,
                   "zc_compress: dtype %d is not float32/float64", p->dtype);
  ZU_RETURN_ERR_IF(!(isfinite(p->eb) && p->eb > 0), zcclInvalidArgument,
                   "zc_compress: error bound %g must be finite and > 0", p->eb);
  ZU_RETURN_ERR_IF(p->has_fill && !isfinite(p->fill), zcclInvalidArgument,
                   "zc_compress: the fill value must be finite");
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  ZU_RETURN_ERR_IF(lg < ZC_CHUNK_LOG2_MIN || lg > ZC_CHUNK_LOG2_MAX, zcclInvalidArgument,
                   "zc_compress: chunk size 2^%u outside 2^%d..2^%d", lg, ZC_CHUNK_LOG2_MIN, ZC_CHUNK_LOG2_MAX);
  uint64_t nchunks = zc_ceil_shift(count, lg);
  ZU_RETURN_ERR_IF(nchunks > UINT32_MAX, zcclInvalidArgument, "zc_compress: %zu values is too many", count);
  *head = ZC_HEADER_BYTES + (size_t)nchunks * 4;
  ZU_RETURN_ERR_IF(cap < *head, zcclInvalidArgument, "zc_compress: output buffer too small");
  zc_header_write(out, p->dtype, count, p->eb, p->has_fill, p->fill, lg, (uint32_t)nchunks, 1, p->checksum);
  return zcclSuccess;
}

zcclResult_t zc_compress_chunks(const zc_params_t* p, const void* in, size_t count, uint32_t c0, uint32_t c1,
                                void* out, size_t cap, uint8_t* index, size_t* bytes, zc_progress_fn progress,
                                void* arg) {
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  size_t esize = zc_dtype_bytes(p->dtype), chunk = (size_t)1 << lg, at = 0;
  uint32_t nchunks = (uint32_t)zc_ceil_shift(count, lg);
  zc_grid_t g;
  zc_grid_init(p->eb, &g);
  const zc_kernels_t* k = zc_kernels();
  zc_chunk_compress_fn fn = esize == 4 ? k->compress_f32 : k->compress_f64;
  uint64_t seed = p->checksum ? zc_params_seed(p, count) : 0;
  uint8_t* o = out;
  for (uint32_t c = c0; c < c1; c++) {
    size_t first = (size_t)c << lg;
    size_t n = count - first < chunk ? count - first : chunk;
    if (cap - at < 8) return zc_emit_error(ZC_RC_SPACE, "zc_compress");
    zc_emit_t e;
    zc_emit_begin(&e, o + at, cap - at, p->dtype, p->has_fill);
    int rc = fn((const uint8_t*)in + first * esize, n, p->dtype, &g, p->has_fill, p->fill, &e);
    if (rc != 0) return zc_emit_error(rc, "zc_compress");
    size_t n_bytes = zc_chunk_seal(o + at, zc_emit_end(&e), cap - at, p->checksum, seed, c);
    if (n_bytes == 0) return zc_emit_error(ZC_RC_SPACE, "zc_compress");
    zc_put_u32(index + 4 * (size_t)(c - c0), (uint32_t)n_bytes);
    at += n_bytes;
    if (progress) progress(arg, c + 1, nchunks);
  }
  *bytes = at;
  return zcclSuccess;
}

zcclResult_t zc_compress(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                         size_t* size, zc_progress_fn progress, void* arg) {
  size_t head, bytes;
  ZU_RETURN_ERR_IF(size == NULL || (in == NULL && count > 0), zcclInvalidArgument, "zc_compress: NULL argument");
  ZU_CHECK(zc_compress_begin(p, count, out, cap, &head));
  uint8_t* o = out;
  uint32_t nchunks = (uint32_t)((head - ZC_HEADER_BYTES) / 4);
  ZU_CHECK(zc_compress_chunks(p, in, count, 0, nchunks, o + head, cap - head, o + ZC_HEADER_BYTES, &bytes, progress,
                              arg));
  *size = head + bytes;
  return zcclSuccess;
}

/* ---- decompression ------------------------------------------------------ */

int zc_parse_block_values(zc_parse_t* p, const zc_header_t* h, const zc_grid_t* g, void* out) {
  zc_ivals_t v;
  int nv;
  if (zc_parse_block(p, &v, &nv) != 0) return -1;
  if (h->dtype == zcclFloat32) {
    float* y = out;
    float div = (float)h->divisor, fill = (float)h->fill;
    for (int i = 0; i < nv; i++) {
      float r = v.kind[i] == ZC_KIND_ORDINARY ? zc_dequant_f32(v.q[i], g)
                : v.kind[i] == ZC_KIND_FILL  ? fill
                                             : (float)v.raw[i];
      y[i] = (h->divisor > 1 && v.kind[i] != ZC_KIND_FILL) ? r / div : r;
    }
  } else {
    double* y = out;
    double div = (double)h->divisor;
    for (int i = 0; i < nv; i++) {
      double r = v.kind[i] == ZC_KIND_ORDINARY ? zc_dequant_f64(v.q[i], g)
                 : v.kind[i] == ZC_KIND_FILL  ? h->fill
                                              : v.raw[i];
      y[i] = (h->divisor > 1 && v.kind[i] != ZC_KIND_FILL) ? r / div : r;
    }
  }
  return nv;
}

int zc_chunk_decompress_scalar(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                               size_t n, void* out) {
  zc_parse_t p;
  if (zc_parse_begin(&p, chunk, bytes, n, h->dtype, h->has_fill) != 0) return -1;
  size_t esize = zc_dtype_bytes(h->dtype);
  uint8_t* y = out;
  while (p.left > 0) {
    int nv = zc_parse_block_values(&p, h, g, y);
    if (nv < 0) return -1;
    y += (size_t)nv * esize;
  }
  return p.o == bytes ? 0 : -1;
}

const uint8_t* zc_chunk_ptr(const zc_header_t* h, uint32_t c) {
  const uint8_t* p = h->chunks;
  for (uint32_t i = 0; i < c; i++) p += zc_get_u32(h->index + 4 * (size_t)i);
  return p;
}

zcclResult_t zc_decompress_chunks(const zc_header_t* h, uint32_t c0, uint32_t c1, const uint8_t* chunk, void* out,
                                  zc_progress_fn progress, void* arg) {
  zc_grid_t g;
  zc_grid_init(h->eb, &g);
  const zc_kernels_t* k = zc_kernels();
  size_t esize = zc_dtype_bytes(h->dtype), csize = (size_t)1 << h->chunk_log2;
  for (uint32_t c = c0; c < c1; c++) {
    uint32_t bytes = zc_get_u32(h->index + 4 * (size_t)c), payload;
    size_t first = (size_t)c << h->chunk_log2;
    size_t n = h->count - first < csize ? h->count - first : csize;
    ZU_CHECK(zc_chunk_verify(h, c, chunk, bytes, &payload, "stream"));
    if (k->decompress(h, &g, chunk, payload, n, (uint8_t*)out + first * esize) != 0)
      return ZU_ERROR(zcclInvalidArgument, "stream: chunk %u is malformed or truncated", c);
    chunk += bytes;
    if (progress) progress(arg, c + 1, h->nchunks);
  }
  return zcclSuccess;
}

zcclResult_t zc_decompress_begin(const void* stream, size_t size, const void* out, size_t cap, const size_t* count,
                                 zc_header_t* h) {
  ZU_CHECK(zc_header_read(stream, size, h));
  ZU_RETURN_ERR_IF(count == NULL || (out == NULL && h->count > 0), zcclInvalidArgument,
                   "zc_decompress: NULL argument");
  ZU_RETURN_ERR_IF(h->count > cap, zcclInvalidArgument,
                   "zc_decompress: the stream has %llu values, the output room for %zu",
                   (unsigned long long)h->count, cap);
  return zcclSuccess;
}

zcclResult_t zc_decompress(const void* stream, size_t size, void* out, size_t cap, size_t* count,
                           zc_progress_fn progress, void* arg) {
  zc_header_t h;
  ZU_CHECK(zc_decompress_begin(stream, size, out, cap, count, &h));
  ZU_CHECK(zc_decompress_chunks(&h, 0, h.nchunks, h.chunks, out, progress, arg));
  *count = (size_t)h.count;
  return zcclSuccess;
}

zcclResult_t zc_set_divisor(void* stream, size_t size, uint32_t divisor) {
  zc_header_t h;
  ZU_CHECK(zc_header_read(stream, size, &h));
  ZU_RETURN_ERR_IF(divisor == 0, zcclInvalidArgument, "zc_set_divisor: divisor 0");
  /* Verified before resealing, or a corrupt chunk would get a valid checksum. */
  const uint8_t* chunk = h.chunks;
  for (uint32_t c = 0; c < h.nchunks; c++) {
    uint32_t bytes = zc_get_u32(h.index + 4 * (size_t)c), payload;
    ZU_CHECK(zc_chunk_verify(&h, c, chunk, bytes, &payload, "zc_set_divisor"));
    chunk += bytes;
  }
  memcpy((uint8_t*)stream + 36, &divisor, 4);
  if (!h.checksum) return zcclSuccess;
  uint64_t seed = zc_header_seed(stream);
  uint8_t* w = (uint8_t*)h.chunks;
  for (uint32_t c = 0; c < h.nchunks; c++) {
    uint32_t bytes = zc_get_u32(h.index + 4 * (size_t)c);
    zc_chunk_seal(w, bytes - ZC_CHUNK_SUM_BYTES, bytes, 1, seed, c);
    w += bytes;
  }
  return zcclSuccess;
}

/* Values [i0, i1) value by value into lo/hi/n: finite and not the fill. */
static void zc_range_values(const void* in, size_t i0, size_t i1, zcclDataType_t dtype, int has_fill, double fill,
                            double* lo, double* hi, size_t* n) {
  for (size_t i = i0; i < i1; i++) {
    double v = dtype == zcclFloat32 ? (double)((const float*)in)[i] : ((const double*)in)[i];
    if (!isfinite(v) || (has_fill && v == (dtype == zcclFloat32 ? (double)(float)fill : fill))) continue;
    *lo = v < *lo ? v : *lo;
    *hi = v > *hi ? v : *hi;
    (*n)++;
  }
}

#if defined(__SSE2__)
#include <emmintrin.h>
/* The range kernel of the scalar level (zc_kernels): SSE2 is every x86-64's.
 * Value by value (the compiler does not vectorize a float min without
 * -ffast-math) the scan ran at a quarter of compression speed. */
int zc_range_f32_sse2(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]) {
  const __m128i ex = _mm_set1_epi32(0x7f800000), f1 = _mm_set1_epi32((int)fb), f2 = _mm_set1_epi32((int)fb2);
  __m128 l0 = _mm_loadu_ps(lo), l1 = _mm_loadu_ps(lo + 4), h0 = _mm_loadu_ps(hi), h1 = _mm_loadu_ps(hi + 4);
  __m128i bad = _mm_setzero_si128();
  for (int j = 0; j < ZC_RANGE_BLOCK; j += 8) {
    __m128 a = _mm_loadu_ps(x + j), b = _mm_loadu_ps(x + j + 4);
    __m128i ia = _mm_castps_si128(a), ib = _mm_castps_si128(b);
    bad = _mm_or_si128(bad, _mm_or_si128(_mm_cmpeq_epi32(_mm_and_si128(ia, ex), ex),
                                         _mm_cmpeq_epi32(_mm_and_si128(ib, ex), ex)));
    bad = _mm_or_si128(bad, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi32(ia, f1), _mm_cmpeq_epi32(ia, f2)),
                                         _mm_or_si128(_mm_cmpeq_epi32(ib, f1), _mm_cmpeq_epi32(ib, f2))));
    l0 = _mm_min_ps(l0, a);
    l1 = _mm_min_ps(l1, b);
    h0 = _mm_max_ps(h0, a);
    h1 = _mm_max_ps(h1, b);
  }
  if (_mm_movemask_epi8(bad)) return 0;
  _mm_storeu_ps(lo, l0);
  _mm_storeu_ps(lo + 4, l1);
  _mm_storeu_ps(hi, h0);
  _mm_storeu_ps(hi + 4, h1);
  return 1;
}
#endif

/* The range through the CPU's block kernel (zc_kernels); blocks it flags
 * go value by value. Returns the values done (whole blocks). The fill is
 * matched by its bits (both zeros for a zero fill); with no fill, a NaN,
 * which the finiteness test flags anyway. */
static size_t zc_range_kernel(const void* in, size_t count, zcclDataType_t dtype, int has_fill, double fill,
                              double* lo, double* hi, size_t* n) {
  const zc_kernels_t* k = zc_kernels();
  int f32 = dtype == zcclFloat32;
  if (!(f32 ? k->range_f32 != NULL : dtype == zcclFloat64 && k->range_f64 != NULL)) return 0;
  union {
    float f[8];
    double d[8];
  } l, h;
  uint64_t fb = 0, fb2 = 0;
  double fd = has_fill ? fill : NAN, nfd = fd == 0 ? -fd : fd;
  float ff = (float)fd, nff = (float)nfd;
  if (f32) {
    memcpy(&fb, &ff, 4);
    memcpy(&fb2, &nff, 4);
  } else {
    memcpy(&fb, &fd, 8);
    memcpy(&fb2, &nfd, 8);
  }
  for (int j = 0; j < 8; j++) {
    if (f32) {
      l.f[j] = INFINITY;
      h.f[j] = -INFINITY;
    } else {
      l.d[j] = INFINITY;
      h.d[j] = -INFINITY;
    }
  }
  size_t i = 0, es = f32 ? 4 : 8;
  for (; i + ZC_RANGE_BLOCK <= count; i += ZC_RANGE_BLOCK) {
    const void* x = (const char*)in + i * es;
    int clean = f32 ? k->range_f32(x, (uint32_t)fb, (uint32_t)fb2, l.f, h.f) : k->range_f64(x, fb, fb2, l.d, h.d);
    if (clean) *n += ZC_RANGE_BLOCK;
    else zc_range_values(in, i, i + ZC_RANGE_BLOCK, dtype, has_fill, fill, lo, hi, n);
  }
  for (int j = 0; j < 8; j++) {
    double a = f32 ? l.f[j] : l.d[j], b = f32 ? h.f[j] : h.d[j];
    *lo = a < *lo ? a : *lo;
    *hi = b > *hi ? b : *hi;
  }
  return i;
}

void zc_value_range(const void* in, size_t count, zcclDataType_t dtype, int has_fill, double fill,
                    double* min, double* max, size_t* valid) {
  double lo = INFINITY, hi = -INFINITY;
  size_t n = 0, i = zc_range_kernel(in, count, dtype, has_fill, fill, &lo, &hi, &n);
  zc_range_values(in, i, count, dtype, has_fill, fill, &lo, &hi, &n);
  if (n) {
    *min = lo;
    *max = hi;
  }
  *valid = n;
}

/* ---- the integer view --------------------------------------------------- */

zcclResult_t zc_decode_ints(const void* stream, size_t size, int64_t* q, uint8_t* kind, double* raw) {
  zc_header_t h;
  ZU_CHECK(zc_header_read(stream, size, &h));
  const uint8_t* chunk = h.chunks;
  size_t at = 0;
  for (uint32_t c = 0; c < h.nchunks; c++) {
    uint32_t bytes = zc_get_u32(h.index + 4 * (size_t)c), payload;
    size_t first = (size_t)c << h.chunk_log2;
    size_t n = h.count - first < ((size_t)1 << h.chunk_log2) ? h.count - first : (size_t)1 << h.chunk_log2;
    ZU_CHECK(zc_chunk_verify(&h, c, chunk, bytes, &payload, "stream"));
    zc_parse_t p;
    if (zc_parse_begin(&p, chunk, payload, n, h.dtype, h.has_fill) != 0)
      return ZU_ERROR(zcclInvalidArgument, "stream: chunk %u is truncated", c);
    while (p.left > 0) {
      zc_ivals_t v;
      int nv;
      if (zc_parse_block(&p, &v, &nv) != 0)
        return ZU_ERROR(zcclInvalidArgument, "stream: chunk %u is malformed", c);
      for (int i = 0; i < nv; i++, at++) {
        q[at] = v.q[i];
        kind[at] = v.kind[i];
        raw[at] = v.kind[i] == ZC_KIND_EXCEPTION ? v.raw[i] : 0.0;
      }
    }
    if (p.o != payload) return ZU_ERROR(zcclInvalidArgument, "stream: chunk %u has trailing bytes", c);
    chunk += bytes;
  }
  return zcclSuccess;
}

zcclResult_t zc_encode_ints(const zc_header_t* h, const int64_t* q, const uint8_t* kind, const double* raw,
                            void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(zc_dtype_bytes(h->dtype) == 0, zcclInvalidArgument, "zc_encode_ints: bad dtype");
  size_t chunk = (size_t)1 << h->chunk_log2;
  uint64_t nchunks64 = zc_ceil_shift(h->count, h->chunk_log2);
  ZU_RETURN_ERR_IF(nchunks64 > UINT32_MAX, zcclInvalidArgument, "zc_encode_ints: too many values");
  uint32_t nchunks = (uint32_t)nchunks64;
  size_t head = ZC_HEADER_BYTES + (size_t)nchunks * 4;
  ZU_RETURN_ERR_IF(cap < head, zcclInvalidArgument, "zc_encode_ints: output buffer too small");
  uint8_t* o = out;
  zc_header_write(o, h->dtype, h->count, h->eb, h->has_fill, h->fill, h->chunk_log2, nchunks, h->divisor,
                  h->checksum);
  uint64_t seed = h->checksum ? zc_header_seed(o) : 0;
  size_t at = head;
  for (uint32_t c = 0; c < nchunks; c++) {
    size_t first = (size_t)c << h->chunk_log2;
    size_t n = h->count - first < chunk ? h->count - first : chunk;
    if (cap - at < 8) return zc_emit_error(ZC_RC_SPACE, "zc_encode_ints");
    zc_emit_t e;
    zc_emit_begin(&e, o + at, cap - at, h->dtype, h->has_fill);
    for (size_t b = 0; b < n; b += ZC_BLOCK) {
      int nv = n - b < ZC_BLOCK ? (int)(n - b) : ZC_BLOCK;
      zc_ivals_t v;
      for (int i = 0; i < nv; i++) {
        v.q[i] = q[first + b + i];
        v.kind[i] = kind[first + b + i];
        v.raw[i] = raw[first + b + i];
      }
      int rc = zc_emit_block(&e, &v, nv);
      if (rc != 0) return zc_emit_error(rc, "zc_encode_ints");
    }
    size_t bytes = zc_chunk_seal(o + at, zc_emit_end(&e), cap - at, h->checksum, seed, c);
    if (bytes == 0) return zc_emit_error(ZC_RC_SPACE, "zc_encode_ints");
    zc_put_u32(o + ZC_HEADER_BYTES + 4 * (size_t)c, (uint32_t)bytes);
    at += bytes;
  }
  *size = at;
  return zcclSuccess;
}

/* ---- szp in the codec table (zc_codec.h) ---------------------------------------- */
size_t zc_szp_bound(const zc_params_t* p, size_t count) { return zc_compress_bound(count, p->dtype, 0); }

zcclResult_t zc_szp_encode(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap, size_t* size) {
  return zc_compress(p, in, count, out, cap, size, NULL, NULL);
}

zcclResult_t zc_szp_decode(const void* stream, size_t size, void* out, size_t cap, size_t* count) {
  return zc_decompress(stream, size, out, cap, count, NULL, NULL);
}

/* Reductions decompress, operate and compress again (ZC_CAP_DOC): no reduce. */
const zc_codec_ops_t zc_szp_ops = {zc_szp_bound, zc_szp_encode, zc_szp_decode, NULL, 0};
