/* Run-length coding of zero runs for sparse float vectors (after Hofmann &
 * Rünger's sparse MPI_Reduce), with zero worst-case growth and reductions
 * that consume encoded data directly. Format in docs/format.md ("RLE"). */
#include "zc_rle.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "zc_codec.h"
#include "zc_ops.h"
#include "zu_error.h"

static const uint8_t zc_rle_magic[4] = {'Z', 'C', 'R', 'L'};

/* The sign bit of a float32 (4-byte) or float64 (8-byte) word: -0.0. */
static inline uint64_t zc_rle_sign(size_t esize) { return esize == 4 ? 0x80000000u : 0x8000000000000000ull; }

static inline uint64_t zc_rle_get(const uint8_t* p, size_t esize) {
  if (esize == 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline void zc_rle_put(uint8_t* p, size_t esize, uint64_t v) {
  if (esize == 4) {
    uint32_t u = (uint32_t)v;
    memcpy(p, &u, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

/* Appends the words of a run of k zeros at word nw: one word for a lone
 * zero, +0 and the length for longer runs (split where a word cannot count
 * them), so never more words than zeros. */
static size_t zc_rle_put_zeros(uint8_t* o, size_t nw, size_t esize, uint64_t k) {
  while (k > 0) {
    uint64_t n = k;
    if (esize == 4 && n > 0xffffffffu) n = 0xffffffffu;
    if (n == 1) {
      zc_rle_put(o + nw++ * esize, esize, zc_rle_sign(esize));
    } else {
      zc_rle_put(o + nw++ * esize, esize, 0);
      zc_rle_put(o + nw++ * esize, esize, n);
    }
    k -= n;
  }
  return nw;
}

size_t zc_rle_bound(size_t count, zcclDataType_t dtype) {
  size_t esize = dtype == zcclFloat64 ? 8 : 4;
  /* A count from a stream's header can be anything: saturate, never wrap. */
  if (count > (SIZE_MAX - ZC_RLE_HEADER_BYTES) / esize) return SIZE_MAX;
  return ZC_RLE_HEADER_BYTES + count * esize;
}

static void zc_rle_header_write(uint8_t* o, zcclDataType_t dtype, uint64_t count, uint64_t words) {
  memcpy(o, zc_rle_magic, 4);
  o[4] = 1;
  o[5] = dtype == zcclFloat32 ? 1 : 2;
  o[6] = 0;
  o[7] = 0;
  memcpy(o + 8, &count, 8);
  memcpy(o + 16, &words, 8);
}

zcclResult_t zc_rle_header_read(const void* stream, size_t size, zc_rle_header_t* h) {
  const uint8_t* s = stream;
  ZU_RETURN_ERR_IF(stream == NULL || h == NULL, zcclInvalidArgument, "rle: NULL argument");
  ZU_RETURN_ERR_IF(size < ZC_RLE_HEADER_BYTES, zcclInvalidArgument, "rle: %zu bytes is shorter than the header",
                   size);
  ZU_RETURN_ERR_IF(memcmp(s, zc_rle_magic, 4) != 0, zcclInvalidArgument, "rle: bad magic (not an RLE stream)");
  ZU_RETURN_ERR_IF(s[4] != 1, zcclInvalidArgument, "rle: format version %u, this zccl reads 1", s[4]);
  ZU_RETURN_ERR_IF((s[5] != 1 && s[5] != 2) || s[6] || s[7], zcclInvalidArgument,
                   "rle: bad dtype or reserved bytes");
  h->dtype = s[5] == 1 ? zcclFloat32 : zcclFloat64;
  memcpy(&h->count, s + 8, 8);
  memcpy(&h->words, s + 16, 8);
  size_t esize = h->dtype == zcclFloat32 ? 4 : 8;
  ZU_RETURN_ERR_IF(h->words > h->count, zcclInvalidArgument, "rle: %llu words for %llu values",
                   (unsigned long long)h->words, (unsigned long long)h->count);
  ZU_RETURN_ERR_IF((size - ZC_RLE_HEADER_BYTES) / esize != h->words || (size - ZC_RLE_HEADER_BYTES) % esize,
                   zcclInvalidArgument, "rle: %zu bytes given, the stream has %llu words", size,
                   (unsigned long long)h->words);
  return zcclSuccess;
}

zcclResult_t zc_rle_encode(zcclDataType_t dtype, const void* in, size_t count, void* out, size_t cap,
                           size_t* size) {
  ZU_RETURN_ERR_IF(dtype != zcclFloat32 && dtype != zcclFloat64, zcclInvalidArgument,
                   "zc_rle_encode: dtype %d is not float32/64", dtype);
  ZU_RETURN_ERR_IF(size == NULL || out == NULL || (in == NULL && count > 0), zcclInvalidArgument,
                   "zc_rle_encode: NULL argument");
  ZU_RETURN_ERR_IF(cap < zc_rle_bound(count, dtype), zcclInvalidArgument,
                   "zc_rle_encode: output buffer too small (size it with zc_rle_bound)");
  const uint8_t* x = in;
  uint8_t* o = (uint8_t*)out + ZC_RLE_HEADER_BYTES;
  size_t esize = dtype == zcclFloat32 ? 4 : 8, nw = 0, i = 0;
  uint64_t sign = zc_rle_sign(esize);
  while (i < count) {
    uint64_t v = zc_rle_get(x + i * esize, esize);
    if ((v & ~sign) != 0) { /* not a zero of either sign */
      zc_rle_put(o + nw++ * esize, esize, v);
      i++;
      continue;
    }
    size_t j = i + 1;
    while (j < count && (zc_rle_get(x + j * esize, esize) & ~sign) == 0) j++;
    nw = zc_rle_put_zeros(o, nw, esize, j - i);
    i = j;
  }
  zc_rle_header_write(out, dtype, count, nw);
  *size = ZC_RLE_HEADER_BYTES + nw * esize;
  return zcclSuccess;
}

/* Walks an encoded stream as runs: calls back for each literal value and
 * each run of zeros. Validates as it goes. */
typedef struct {
  const uint8_t* w;
  size_t esize, nwords, at; /* word cursor */
  uint64_t left;            /* values still to produce */
  uint64_t zeros;           /* zeros pending in the current run */
} zc_rle_reader_t;

static zcclResult_t zc_rle_reader_init(zc_rle_reader_t* r, const void* stream, size_t size, zc_rle_header_t* h) {
  ZU_CHECK(zc_rle_header_read(stream, size, h));
  r->w = (const uint8_t*)stream + ZC_RLE_HEADER_BYTES;
  r->esize = h->dtype == zcclFloat32 ? 4 : 8;
  r->nwords = (size_t)h->words;
  r->at = 0;
  r->left = h->count;
  r->zeros = 0;
  return zcclSuccess;
}

/* Next item: 0 and *run > 0 zeros (up to max), or *run == 0 and *bits a
 * literal value; -1 when the stream is malformed. */
static int zc_rle_next(zc_rle_reader_t* r, uint64_t max, uint64_t* run, uint64_t* bits) {
  if (r->zeros == 0) {
    if (r->at >= r->nwords) return -1;
    uint64_t v = zc_rle_get(r->w + r->at++ * r->esize, r->esize);
    uint64_t sign = zc_rle_sign(r->esize);
    if (v == 0) {
      if (r->at >= r->nwords) return -1;
      uint64_t k = zc_rle_get(r->w + r->at++ * r->esize, r->esize);
      if (k < 2 || k > r->left) return -1;
      r->zeros = k;
    } else if (v == sign) {
      r->zeros = 1;
    } else {
      if (r->left == 0) return -1;
      r->left--;
      *run = 0;
      *bits = v;
      return 0;
    }
  }
  uint64_t n = r->zeros < max ? r->zeros : max;
  r->zeros -= n;
  r->left -= n;
  *run = n;
  return 0;
}

zcclResult_t zc_rle_decode(const void* stream, size_t size, void* out, size_t cap, size_t* count) {
  zc_rle_reader_t r;
  zc_rle_header_t h;
  ZU_CHECK(zc_rle_reader_init(&r, stream, size, &h));
  ZU_RETURN_ERR_IF(count == NULL || (out == NULL && h.count > 0), zcclInvalidArgument, "zc_rle_decode: NULL argument");
  ZU_RETURN_ERR_IF(h.count > cap, zcclInvalidArgument, "zc_rle_decode: the stream has %llu values, room for %zu",
                   (unsigned long long)h.count, cap);
  uint8_t* o = out;
  size_t i = 0;
  while (r.left > 0) {
    uint64_t run, bits;
    if (zc_rle_next(&r, r.left, &run, &bits) != 0)
      return ZU_ERROR(zcclInvalidArgument, "rle: malformed stream at word %zu", r.at);
    if (run) {
      memset(o + i * r.esize, 0, (size_t)run * r.esize);
      i += (size_t)run;
    } else {
      zc_rle_put(o + i++ * r.esize, r.esize, bits);
    }
  }
  ZU_RETURN_ERR_IF(r.at != r.nwords, zcclInvalidArgument, "rle: %zu trailing words", r.nwords - r.at);
  *count = (size_t)h.count;
  return zcclSuccess;
}

static inline double zc_rle_value(uint64_t bits, size_t esize) {
  if (esize == 4) {
    uint32_t u = (uint32_t)bits;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &bits, 8);
  return d;
}

/* out[i] = op(plain[i], x[i]) in the dtype, where x is 0 in runs. */
zcclResult_t zc_rle_reduce_plain(zcclRedOp_t op, const void* stream, size_t size, const void* plain, void* out) {
  ZU_RETURN_ERR_IF(op < 0 || op > zcclMin, zcclInvalidArgument, "zc_rle_reduce_plain: op %d is not sum, prod, max, min",
                   (int)op);
  zc_rle_reader_t r;
  zc_rle_header_t h;
  ZU_CHECK(zc_rle_reader_init(&r, stream, size, &h));
  ZU_RETURN_ERR_IF((plain == NULL || out == NULL) && h.count > 0, zcclInvalidArgument,
                   "zc_rle_reduce_plain: NULL argument");
  size_t i = 0;
  int f32 = r.esize == 4;
  while (r.left > 0) {
    uint64_t run, bits;
    if (zc_rle_next(&r, r.left, &run, &bits) != 0)
      return ZU_ERROR(zcclInvalidArgument, "rle: malformed stream at word %zu", r.at);
    uint64_t n = run ? run : 1;
    double x = run ? 0.0 : zc_rle_value(bits, r.esize);
    for (uint64_t k = 0; k < n; k++, i++) {
      /* x + 0 = x for SUM: a run only copies (or, in place, skips). */
      if (run && op == zcclSum) {
        if (out != plain) memcpy((uint8_t*)out + i * r.esize, (const uint8_t*)plain + i * r.esize, r.esize);
        continue;
      }
      if (f32) ((float*)out)[i] = zc_op_f32(op, ((const float*)plain)[i], (float)x);
      else ((double*)out)[i] = zc_op_f64(op, ((const double*)plain)[i], x);
    }
  }
  ZU_RETURN_ERR_IF(r.at != r.nwords, zcclInvalidArgument, "rle: %zu trailing words", r.nwords - r.at);
  return zcclSuccess;
}

zcclResult_t zc_rle_reduce_rle(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                               size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(op < 0 || op > zcclMin, zcclInvalidArgument, "zc_rle_reduce_rle: op %d is not sum, prod, max, min",
                   (int)op);
  zc_rle_reader_t ra, rb;
  zc_rle_header_t ha, hb;
  ZU_CHECK(zc_rle_reader_init(&ra, a, a_size, &ha));
  ZU_CHECK(zc_rle_reader_init(&rb, b, b_size, &hb));
  ZU_RETURN_ERR_IF(ha.dtype != hb.dtype || ha.count != hb.count, zcclInvalidArgument,
                   "zc_rle_reduce_rle: streams differ in dtype or count");
  ZU_RETURN_ERR_IF(out == NULL || size == NULL, zcclInvalidArgument, "zc_rle_reduce_rle: NULL argument");
  size_t esize = ra.esize;
  ZU_RETURN_ERR_IF(cap < zc_rle_bound((size_t)ha.count, ha.dtype), zcclInvalidArgument,
                   "zc_rle_reduce_rle: output buffer too small (size it with zc_rle_bound)");
  uint8_t* o = (uint8_t*)out + ZC_RLE_HEADER_BYTES;
  size_t nw = 0;
  uint64_t zrun = 0; /* zeros of the result not yet written */
  uint64_t run_a = 0, run_b = 0, bits_a = 0, bits_b = 0;
  int have_a = 0, have_b = 0;
  uint64_t left = ha.count;
  while (left > 0) {
    if (!have_a) {
      if (zc_rle_next(&ra, left, &run_a, &bits_a) != 0) return ZU_ERROR(zcclInvalidArgument, "rle: a is malformed");
      have_a = 1;
    }
    if (!have_b) {
      if (zc_rle_next(&rb, left, &run_b, &bits_b) != 0) return ZU_ERROR(zcclInvalidArgument, "rle: b is malformed");
      have_b = 1;
    }
    uint64_t z;
    if (run_a && run_b) { /* both in a zero run: op(0, 0) = 0 for all four ops */
      z = run_a < run_b ? run_a : run_b;
      zrun += z;
    } else {
      double x = run_a ? 0.0 : zc_rle_value(bits_a, esize), y = run_b ? 0.0 : zc_rle_value(bits_b, esize);
      uint64_t vb;
      if (esize == 4) {
        float f = zc_op_f32(op, (float)x, (float)y);
        uint32_t u;
        memcpy(&u, &f, 4);
        vb = u;
      } else {
        double v = zc_op_f64(op, x, y);
        memcpy(&vb, &v, 8);
      }
      z = 1;
      if ((vb & ~zc_rle_sign(esize)) == 0) {
        zrun++;
      } else {
        /* Flush the pending zeros, then the value. Never more words than
         * values: a run of k >= 2 zeros takes 2 words. */
        nw = zc_rle_put_zeros(o, nw, esize, zrun);
        zrun = 0;
        zc_rle_put(o + nw++ * esize, esize, vb);
      }
    }
    /* Consume z values from both. */
    if (run_a) run_a -= z;
    if (run_b) run_b -= z;
    have_a = run_a > 0;
    have_b = run_b > 0;
    left -= z;
  }
  nw = zc_rle_put_zeros(o, nw, esize, zrun);
  ZU_RETURN_ERR_IF(ra.at != ra.nwords || rb.at != rb.nwords, zcclInvalidArgument, "rle: trailing words");
  zc_rle_header_write(out, ha.dtype, ha.count, nw);
  *size = ZC_RLE_HEADER_BYTES + nw * esize;
  return zcclSuccess;
}

double zc_rle_zero_fraction(const void* in, size_t count, zcclDataType_t dtype, size_t samples) {
  if (count == 0) return 0.0;
  size_t step = samples && count > samples ? count / samples : 1, seen = 0, zeros = 0;
  for (size_t i = 0; i < count; i += step, seen++) {
    double v = dtype == zcclFloat32 ? (double)((const float*)in)[i] : ((const double*)in)[i];
    zeros += v == 0.0;
  }
  return (double)zeros / (double)seen;
}

/* ---- RLE in the codec table (zc_codec.h) ---------------------------------------- */
static size_t zc_rle_bound_of(const zc_params_t* p, size_t count) { return zc_rle_bound(count, p->dtype); }

static zcclResult_t zc_rle_encode_of(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                                     size_t* size) {
  return zc_rle_encode(p->dtype, in, count, out, cap, size);
}

/* The merge writes as it reads: no reduction in place. */
const zc_codec_ops_t zc_rle_ops = {zc_rle_bound_of, zc_rle_encode_of, zc_rle_decode, zc_rle_reduce_rle, 0};
