/* The CUDA stream codec's steps for one block (zd_cuda_codec.cu), written
 * once for the kernels and for a host test that runs the same steps block
 * after block (test/unit/test_cuda_codec_blocks.c). A kernel splits the CPU
 * codec's sequential chunk loop into per-block steps joined by CTA-wide
 * scans; whatever a scan carries from the blocks before (the last ordinary
 * integer, a track's entering integer) is an argument here, so that the
 * split itself can be checked against zc_compress, zc_decompress and zc_hop
 * on a machine without a GPU. Plain C and ZC_HD, like zc_szp_block.h.
 *
 * Floating point: where the CPU codec converts exceptions' raw values
 * float -> double -> float or adds, divides or compares them, it runs x86
 * SSE arithmetic, whose NaN results (quieted operands, the "indefinite" NaN
 * of Inf - Inf) a GPU does not reproduce (it returns a canonical NaN). These
 * steps therefore handle raw values as bits and spell the x86 results out. */
#ifndef ZD_CUDA_CODEC_BLOCKS_H_
#define ZD_CUDA_CODEC_BLOCKS_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_szp.h"
#include "zc_szp_block.h"
#include "zc_xxh3.h"
#include "zccl.h"

#define ZD_RC_RANGE (-2)
/* Bytes of one block with its raw values, at most. */
#define ZD_EMIT_MAX(esize) (ZC_BLOCK_MAX_CODED + ZC_BLOCK * (esize))

/* One block's integer view. */
typedef struct {
  int64_t q[ZC_BLOCK];    /* the integers of ordinary positions (0 elsewhere) */
  uint64_t raw[ZC_BLOCK]; /* exceptions' raw bits in the dtype's width (float32: low 32 bits) */
  uint32_t xbits, fbits;  /* exception and fill positions */
  uint32_t valid;         /* positions holding values (the others are padding) */
} zd_bview_t;

/* Little-endian u64 fields and a block's valid-position mask (the device's
 * own: the CPU codec reads them elsewhere). */
ZC_HD_INLINE uint64_t zd_get_u64(const uint8_t* p) {
  return (uint64_t)zc_get_u32(p) | (uint64_t)zc_get_u32(p + 4) << 32;
}
ZC_HD_INLINE void zd_put_u64(uint8_t* p, uint64_t v) {
  zc_put_u32(p, (uint32_t)v);
  zc_put_u32(p + 4, (uint32_t)(v >> 32));
}
ZC_HD_INLINE uint32_t zd_valid_mask(int nv) { return nv >= ZC_BLOCK ? 0xffffffffu : ((1u << nv) - 1u); }

/* ---- the header (docs/format.md) ------------------------------------------ */

typedef struct {
  int f64, has_fill;
  unsigned chunk_log2;
  uint64_t count, eb_bits, fill_bits;
  uint32_t nchunks, divisor;
  int checksum;  /* flag bit 1: every chunk ends with its checksum */
  uint64_t seed; /* then the chunks' checksum seed: the header's XXH3-64 */
} zd_hdr_t;

ZC_HD_INLINE int zd_finite64(uint64_t u) { return (u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }

/* zc_header_read's checks of the header fields, and that the index fits;
 * the index entries themselves are checked where a kernel reads them. 0 or
 * -1. */
ZC_HD_INLINE int zd_header_parse(const uint8_t* s, uint64_t size, zd_hdr_t* h) {
  if (size < ZC_HEADER_BYTES) return -1;
  if (s[0] != 'Z' || s[1] != 'C' || s[2] != 'C' || s[3] != 'S' || s[4] != 1) return -1;
  if ((s[5] != 1 && s[5] != 2) || (s[6] & ~(ZC_FLAG_FILL | ZC_FLAG_CHECKSUM)) || s[7] < ZC_CHUNK_LOG2_MIN ||
      s[7] > ZC_CHUNK_LOG2_MAX)
    return -1;
  h->f64 = s[5] == 2;
  h->has_fill = (s[6] & ZC_FLAG_FILL) != 0;
  h->checksum = (s[6] & ZC_FLAG_CHECKSUM) != 0;
  h->seed = h->checksum ? zc_xxh3_64(s, ZC_HEADER_BYTES, 0) : 0;
  h->chunk_log2 = s[7];
  h->count = zd_get_u64(s + 8);
  h->eb_bits = zd_get_u64(s + 16);
  h->fill_bits = zd_get_u64(s + 24);
  h->nchunks = zc_get_u32(s + 32);
  h->divisor = zc_get_u32(s + 36);
  if (!(zd_finite64(h->eb_bits) && zc_bits_f64(h->eb_bits) > 0) || !zd_finite64(h->fill_bits) || h->divisor == 0)
    return -1;
  uint64_t want = zc_ceil_shift(h->count, h->chunk_log2); /* no wrap near 2^64 */
  if (want != h->nchunks || (size - ZC_HEADER_BYTES) / 4 < h->nchunks) return -1;
  return 0;
}

/* zc_hop's compatibility of two streams. */
ZC_HD_INLINE int zd_header_compatible(const zd_hdr_t* a, const zd_hdr_t* b) {
  return a->f64 == b->f64 && a->count == b->count && a->eb_bits == b->eb_bits && a->chunk_log2 == b->chunk_log2 &&
         a->has_fill == b->has_fill && (!a->has_fill || a->fill_bits == b->fill_bits) && a->divisor == b->divisor;
}

/* The header zc_compress writes. */
ZC_HD_INLINE void zd_header_write(uint8_t* o, int f64, uint64_t count, double eb, int has_fill, double fill,
                                  unsigned chunk_log2, uint32_t nchunks, int checksum) {
  o[0] = 'Z';
  o[1] = 'C';
  o[2] = 'C';
  o[3] = 'S';
  o[4] = 1;
  o[5] = f64 ? 2 : 1;
  o[6] = (uint8_t)((has_fill ? ZC_FLAG_FILL : 0) | (checksum ? ZC_FLAG_CHECKSUM : 0));
  o[7] = (uint8_t)chunk_log2;
  zd_put_u64(o + 8, count);
  zd_put_u64(o + 16, zc_f64_bits(eb));
  zd_put_u64(o + 24, has_fill ? zc_f64_bits(fill) : 0);
  zc_put_u32(o + 32, nchunks);
  zc_put_u32(o + 36, 1);
}

/* ---- compression ---------------------------------------------------------- */

/* zc_classify_f32/f64 of one block's nv values. */
ZC_HD_INLINE void zd_quant_f32(const float* x, int nv, const zc_grid_t* g, int has_fill, float fill,
                               zd_bview_t* v) {
  v->xbits = 0;
  v->fbits = 0;
  v->valid = zd_valid_mask(nv);
  for (int i = 0; i < ZC_BLOCK; i++) {
    v->q[i] = 0;
    v->raw[i] = 0;
    if (i >= nv) continue;
    float f = x[i];
    if (has_fill && f == fill) {
      v->fbits |= 1u << i;
    } else if (zc_quant_f32(f, g, &v->q[i])) {
      v->xbits |= 1u << i;
      v->raw[i] = zc_quiet32(zc_f32_bits(f)); /* the CPU keeps it as a double */
    }
  }
}

ZC_HD_INLINE void zd_quant_f64(const double* x, int nv, const zc_grid_t* g, int has_fill, double fill,
                               zd_bview_t* v) {
  v->xbits = 0;
  v->fbits = 0;
  v->valid = zd_valid_mask(nv);
  for (int i = 0; i < ZC_BLOCK; i++) {
    v->q[i] = 0;
    v->raw[i] = 0;
    if (i >= nv) continue;
    double f = x[i];
    if (has_fill && f == fill) {
      v->fbits |= 1u << i;
    } else if (zc_quant_f64(f, g, &v->q[i])) {
      v->xbits |= 1u << i;
      v->raw[i] = zc_f64_bits(f);
    }
  }
}

/* 1 with the block's first and last ordinary integers, 0 when it has no
 * ordinary position. The chunk's predictor entering a block is the last
 * ordinary integer of the blocks before it (a "last valid" scan). */
ZC_HD_INLINE int zd_block_ends(const zd_bview_t* v, int64_t* first, int64_t* last) {
  uint32_t ord = v->valid & ~(v->xbits | v->fbits);
  if (ord == 0) return 0;
  int lo = -1, hi = 0;
  for (int i = 0; i < ZC_BLOCK; i++) {
    if (!((ord >> i) & 1u)) continue;
    if (lo < 0) lo = i;
    hi = i;
  }
  *first = v->q[lo];
  *last = v->q[hi];
  return 1;
}

/* The block's deltas as zc_emit_block makes them: from prev, the last
 * ordinary integer before the block in its chunk; without one (have_prev
 * 0) the block's first ordinary integer starts the track (it is the chunk's
 * base) with delta 0. 0, or ZD_RC_RANGE when a delta needs more than
 * ZC_W_MAX bits. */
ZC_HD_INLINE int zd_block_deltas(const zd_bview_t* v, int have_prev, int64_t prev, zc_block_t* b, uint32_t* pad) {
  int rc = 0;
  b->xbits = v->xbits;
  b->fbits = v->fbits;
  *pad = ~v->valid;
  for (int i = 0; i < ZC_BLOCK; i++) {
    b->d[i] = 0;
    if (!((v->valid >> i) & 1u) || (((v->xbits | v->fbits) >> i) & 1u)) continue;
    if (!have_prev) {
      prev = v->q[i];
      have_prev = 1;
    }
    int64_t sd = (int64_t)((uint64_t)v->q[i] - (uint64_t)prev);
    prev = v->q[i];
    if (sd >= ((int64_t)1 << ZC_W_MAX) || sd <= -((int64_t)1 << ZC_W_MAX)) rc = ZD_RC_RANGE;
    b->d[i] = sd;
  }
  return rc;
}

/* zc_emit_block's bytes: the coded block, then the exceptions' raw values
 * (little-endian, esize bytes each, in position order). Returns the bytes
 * (<= ZD_EMIT_MAX(esize)). */
ZC_HD_INLINE int zd_block_emit(const zc_block_t* b, uint32_t pad, int fill, const zd_bview_t* v, int esize,
                               uint8_t* out) {
  int o = zc_block_encode(b, pad, fill, out);
  for (int i = 0; i < ZC_BLOCK; i++) {
    if (!((b->xbits >> i) & 1u)) continue;
    if (esize == 4) {
      zc_put_u32(out + o, (uint32_t)v->raw[i]);
    } else {
      zd_put_u64(out + o, v->raw[i]);
    }
    o += esize;
  }
  return o;
}

/* ---- decompression -------------------------------------------------------- */

/* One thread finds the offsets of a round's nb block heads in a chunk, the
 * first at o (off[nb]: where the round's blocks end, the next round's
 * first); 0, or -1 when a head does not fit or, in the chunk's last round
 * (last), the blocks do not end at the chunk's end. A round at a time,
 * so that the table has a round's entries, not a chunk's. */
ZC_HD_INLINE int zd_walk(const uint8_t* chunk, uint32_t bytes, uint32_t o, uint32_t nb, int last, int esize,
                         uint32_t* off) {
  for (uint32_t k = 0; k < nb; k++) {
    off[k] = o;
    int sp = zc_block_span(chunk + o, bytes - o, esize);
    if (sp < 0) return -1;
    o += (uint32_t)sp;
  }
  off[nb] = o;
  return !last || o == bytes ? 0 : -1;
}

/* Parses the block at in[0 .. avail) holding nv values (1..32) with
 * zc_parse_block's checks: its deltas in b, its raw values at *raw. Returns
 * the bytes the block takes with its raw values, or -1 when it is malformed
 * or does not fit. */
ZC_HD_INLINE int zd_block_parse(const uint8_t* in, size_t avail, int nv, int fill, int esize, zc_block_t* b,
                                const uint8_t** raw) {
  int nexc;
  int n = zc_block_decode(in, avail, fill, b, &nexc);
  if (n < 0) return -1;
  uint32_t valid = zd_valid_mask(nv);
  /* A padding position is neither exception nor fill, and has delta 0. */
  if (((b->xbits | b->fbits) & ~valid) && b->fbits != 0xffffffffu) return -1;
  if ((size_t)nexc * (size_t)esize > avail - (size_t)n) return -1;
  for (int i = nv; i < ZC_BLOCK; i++)
    if (b->d[i] != 0) return -1;
  *raw = in + n;
  return n + nexc * esize;
}

/* The sum of a parsed block's deltas (wrapping): how far it moves the
 * track. A scan of these gives every block its entering integer. */
ZC_HD_INLINE uint64_t zd_block_dsum(const zc_block_t* b) {
  uint64_t s = 0;
  for (int i = 0; i < ZC_BLOCK; i++) s += (uint64_t)b->d[i];
  return s;
}

/* An exception's raw value as the views hold it (esize bytes at raw):
 * float32 quieted, as the CPU's conversion to double does; float64 as it
 * is, a signalling NaN too. */
ZC_HD_INLINE uint64_t zd_raw_get(const uint8_t* raw, int esize) {
  return esize == 4 ? zc_quiet32(zc_get_u32(raw)) : zd_get_u64(raw);
}

/* The integer view of a parsed block whose track enters at q (the integer
 * before its first position). Float32 raw values are quieted, as the CPU's
 * conversion to double does. */
ZC_HD_INLINE void zd_block_track(const zc_block_t* b, const uint8_t* raw, int nv, int esize, int64_t q,
                                 zd_bview_t* v) {
  uint64_t t = (uint64_t)q;
  v->valid = zd_valid_mask(nv);
  v->xbits = b->xbits & v->valid;
  v->fbits = b->fbits & v->valid;
  for (int i = 0; i < ZC_BLOCK; i++) {
    t += (uint64_t)b->d[i];
    v->q[i] = (int64_t)t;
    v->raw[i] = 0;
    if (!((v->xbits >> i) & 1u)) continue;
    v->raw[i] = zd_raw_get(raw, esize);
    raw += esize;
  }
}

/* zc_parse_block_values: the decoded values' bits (float32 in the low 32
 * bits), nv of them. */
ZC_HD_INLINE void zd_block_values(const zd_bview_t* v, int nv, int f64, const zc_grid_t* g, uint32_t divisor,
                                  uint64_t fill_bits, uint64_t* y) {
  if (!f64) {
    float div = (float)divisor, fill = (float)zc_bits_f64(fill_bits);
    for (int i = 0; i < nv; i++) {
      uint32_t r;
      if ((v->fbits >> i) & 1u) {
        r = zc_f32_bits(fill);
      } else if ((v->xbits >> i) & 1u) {
        r = (uint32_t)v->raw[i]; /* quiet already; x86 divides a NaN into itself */
        if (divisor > 1 && !zc_isnan32(r)) r = zc_f32_bits(zc_bits_f32(r) / div);
      } else {
        float f = zc_dequant_f32(v->q[i], g); /* finite or infinite, never NaN */
        r = zc_f32_bits(divisor > 1 ? f / div : f);
      }
      y[i] = r;
    }
  } else {
    double div = (double)divisor;
    for (int i = 0; i < nv; i++) {
      uint64_t r;
      if ((v->fbits >> i) & 1u) {
        r = fill_bits;
      } else if ((v->xbits >> i) & 1u) {
        r = v->raw[i]; /* copied exactly, a signalling NaN too, unless divided */
        if (divisor > 1) r = zc_isnan64(r) ? zc_quiet64(r) : zc_f64_bits(zc_bits_f64(r) / div);
      } else {
        double f = zc_dequant_f64(v->q[i], g);
        r = zc_f64_bits(divisor > 1 ? f / div : f);
      }
      y[i] = r;
    }
  }
}

/* ---- homomorphic operations ----------------------------------------------- */

/* The op of two integers (SUM wraps). */
ZC_HD_INLINE int64_t zd_int_op(zcclRedOp_t op, int64_t x, int64_t y) {
  return op == zcclSum ? (int64_t)((uint64_t)x + (uint64_t)y) : op == zcclMax ? (x > y ? x : y) : (x < y ? x : y);
}

/* zc_hop_block_scalar's result view of two blocks' views (same positions):
 * fill where either is fill, else an exception where either is one (its
 * value the op of the two decoded values), else the op of the integers. */
ZC_HD_INLINE void zd_block_hop(zcclRedOp_t op, int f64, const zc_grid_t* g, const zd_bview_t* a, const zd_bview_t* b,
                               zd_bview_t* r) {
  r->valid = a->valid;
  r->fbits = (a->fbits | b->fbits) & r->valid;
  r->xbits = (a->xbits | b->xbits) & r->valid & ~r->fbits;
  for (int i = 0; i < ZC_BLOCK; i++) {
    r->q[i] = 0;
    r->raw[i] = 0;
    if (!((r->valid >> i) & 1u) || ((r->fbits >> i) & 1u)) continue;
    int xa = (a->xbits >> i) & 1u, xb = (b->xbits >> i) & 1u;
    if (xa | xb) {
      if (!f64) {
        float x = xa ? zc_bits_f32((uint32_t)a->raw[i]) : zc_dequant_f32(a->q[i], g);
        float y = xb ? zc_bits_f32((uint32_t)b->raw[i]) : zc_dequant_f32(b->q[i], g);
        r->raw[i] = zc_exc_op_f32(op, x, y);
      } else {
        double x = xa ? zc_bits_f64(a->raw[i]) : zc_dequant_f64(a->q[i], g);
        double y = xb ? zc_bits_f64(b->raw[i]) : zc_dequant_f64(b->q[i], g);
        r->raw[i] = zc_exc_op_f64(op, x, y);
      }
    } else {
      r->q[i] = zd_int_op(op, a->q[i], b->q[i]);
    }
  }
}

/* ---- blocks in 32-bit registers ------------------------------------------
 * The functions above hold a block as 32 64-bit integers (and raw values)
 * per view, which a GPU thread can only keep in local memory: the kernels
 * spent most of their time there. A block whose deltas are at most 32 bits
 * wide (every float32 compression's: |q| <= 2^30; most hops' and float64
 * streams') is held instead as 32 magnitudes and sign bitmaps, which stay
 * in registers when every index into them is a constant after unrolling
 * (so: no loop over a runtime count indexes them). These write and accept
 * exactly the bytes of zc_block_encode / zc_block_decode; whatever they do
 * not take (wider deltas, malformed blocks) goes to the functions above,
 * which decide. */

#if defined(__CUDA_ARCH__)
#define ZD_UNROLL _Pragma("unroll")
#else
#define ZD_UNROLL
#endif

/* A block's coded form: signs, bitmaps, stored sub-group widths. */
typedef struct {
  uint32_t neg, pos, xbits, fbits;
  int sw[ZC_NSUB], W, allfill;
  int bytes; /* header, bitmaps and planes (raw values not included) */
} zd_lay32_t;

/* zc_block_encode's layout of deltas with magnitudes mag (< 2^32) and signs
 * neg (negative) / pos (positive). */
ZC_HD_INLINE void zd_lay32(const uint32_t* mag, uint32_t neg, uint32_t pos, uint32_t xbits, uint32_t fbits,
                           uint32_t pad, int fill, zd_lay32_t* L) {
  uint32_t so[ZC_NSUB] = {0, 0, 0, 0};
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) so[i / ZC_SUB] |= mag[i];
  int W = 0;
  ZD_UNROLL for (int k = 0; k < ZC_NSUB; k++) {
    L->sw[k] = zc_width64(so[k]);
    if (L->sw[k] > W) W = L->sw[k];
  }
  L->neg = neg;
  L->pos = pos;
  L->xbits = xbits;
  L->fbits = fbits;
  L->W = W;
  L->allfill = W == 0 && fill && xbits == 0 && (fbits | pad) == 0xffffffffu && fbits != 0;
  if (L->allfill) {
    L->bytes = 1;
    return;
  }
  int o = (xbits | fbits) ? 2 : 1;
  if (W > 0) {
    int base = W > 15 ? W - 15 : 0;
    ZD_UNROLL for (int k = 0; k < ZC_NSUB; k++) if (L->sw[k] < base) L->sw[k] = base;
    o += 2 + L->sw[0] + L->sw[1] + L->sw[2] + L->sw[3];
  }
  if (neg != 0 && pos != 0) o += 4;
  if (xbits) o += 4;
  if (fbits) o += 4;
  L->bytes = o;
}

/* Writes the layout's bytes (L->bytes of them); the caller appends the raw
 * values. */
ZC_HD_INLINE void zd_write32(const uint32_t* mag, const zd_lay32_t* L, uint8_t* out) {
  if (L->allfill) {
    out[0] = ZC_W_ALLFILL;
    return;
  }
  int o = zc_block_put_head(out, L->W, L->sw, L->neg, L->pos, L->xbits, L->fbits);
  ZD_UNROLL for (int k = 0; k < ZC_NSUB; k++) {
    for (int p = 0; p < L->sw[k]; p++) {
      uint32_t byte = 0;
      ZD_UNROLL for (int j = 0; j < ZC_SUB; j++) byte |= ((mag[k * ZC_SUB + j] >> p) & 1u) << j;
      out[o++] = (uint8_t)byte;
    }
  }
}

/* zd_block_parse for a block whose deltas are at most 32 bits wide: the
 * magnitudes in mag, the signs in *neg (a set bit with magnitude 0 is delta
 * 0), the bitmaps, the raw values (esize bytes each) at *raw; the bytes
 * with raw values. -1 when the block is wider or malformed: zd_block_parse
 * decides then. */
ZC_HD_INLINE int zd_parse32(const uint8_t* in, size_t avail, int nv, int fill, int esize, uint32_t* mag,
                            uint32_t* neg, uint32_t* xbits, uint32_t* fbits, const uint8_t** raw) {
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) mag[i] = 0;
  *neg = 0;
  *xbits = 0;
  *fbits = 0;
  if (avail < 1) return -1;
  if ((in[0] & 63) == ZC_W_ALLFILL) {
    if ((in[0] >> 6) != 0 || !fill) return -1;
    *fbits = 0xffffffffu;
    *raw = in + 1;
    return 1;
  }
  zc_head_t hd;
  int o = zc_block_head(in, avail, fill, &hd);
  if (o < 0 || hd.W > 32) return -1;
  const int* sw = hd.sw;
  const uint32_t ng = hd.neg, xb = hd.xbits, fb = hd.fbits;
  ZD_UNROLL for (int k = 0; k < ZC_NSUB; k++) {
    for (int p = 0; p < sw[k]; p++) {
      uint32_t byte = in[o++];
      ZD_UNROLL for (int j = 0; j < ZC_SUB; j++) mag[k * ZC_SUB + j] |= ((byte >> j) & 1u) << p;
    }
  }
  uint32_t nz = 0; /* positions with a non-zero delta */
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) nz |= (uint32_t)(mag[i] != 0) << i;
  uint32_t valid = zd_valid_mask(nv);
  int nexc = ZC_POPC32(xb);
  /* held and padding positions have delta 0; padding is neither exception
   * nor fill (an all-fill block has its own form); the raw values fit */
  if ((nz & (xb | fb | ~valid)) || ((xb | fb) & ~valid) || (size_t)nexc * (size_t)esize > avail - (size_t)o)
    return -1;
  *neg = ng;
  *xbits = xb;
  *fbits = fb;
  *raw = in + o;
  return o + nexc * esize;
}

/* The sum of a parsed block's deltas (wrapping), as zd_block_dsum. */
ZC_HD_INLINE uint64_t zd_dsum32(const uint32_t* mag, uint32_t neg) {
  uint64_t s = 0;
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) s += ((neg >> i) & 1u) ? (uint64_t)0 - mag[i] : (uint64_t)mag[i];
  return s;
}

/* zd_block_track and zd_block_values (float32) of a block parsed by
 * zd_parse32 whose track enters at q: the values' bits in y[0 .. nv). */
ZC_HD_INLINE void zd_values32(const uint32_t* mag, uint32_t neg, uint32_t xbits, uint32_t fbits, const uint8_t* raw,
                              int nv, const zc_grid_t* g, uint32_t divisor, uint64_t fill_bits, int64_t q,
                              uint32_t* y) {
  uint32_t valid = zd_valid_mask(nv);
  xbits &= valid;
  fbits &= valid;
  uint64_t t = (uint64_t)q;
  const float div = (float)divisor;
  const uint32_t fill = zc_f32_bits((float)zc_bits_f64(fill_bits));
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
    t += ((neg >> i) & 1u) ? (uint64_t)0 - mag[i] : (uint64_t)mag[i];
    uint32_t r = 0;
    if ((fbits >> i) & 1u) {
      r = fill;
    } else if ((xbits >> i) & 1u) {
      r = (uint32_t)zd_raw_get(raw, 4);
      raw += 4;
      if (divisor > 1 && !zc_isnan32(r)) r = zc_f32_bits(zc_bits_f32(r) / div);
    } else if ((valid >> i) & 1u) {
      float f = zc_dequant_f32((int64_t)t, g);
      r = zc_f32_bits(divisor > 1 ? f / div : f);
    }
    y[i] = r;
  }
}

/* The same for float64: the values' low and high words in lo and hi (lo
 * may be mag itself). */
ZC_HD_INLINE void zd_values64(const uint32_t* mag, uint32_t neg, uint32_t xbits, uint32_t fbits, const uint8_t* raw,
                              int nv, const zc_grid_t* g, uint32_t divisor, uint64_t fill_bits, int64_t q,
                              uint32_t* lo, uint32_t* hi) {
  uint32_t valid = zd_valid_mask(nv);
  xbits &= valid;
  fbits &= valid;
  uint64_t t = (uint64_t)q;
  const double div = (double)divisor;
  ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
    t += ((neg >> i) & 1u) ? (uint64_t)0 - mag[i] : (uint64_t)mag[i];
    uint64_t r = 0;
    if ((fbits >> i) & 1u) {
      r = fill_bits;
    } else if ((xbits >> i) & 1u) {
      r = zd_raw_get(raw, 8); /* unless divided */
      raw += 8;
      if (divisor > 1) r = zc_isnan64(r) ? zc_quiet64(r) : zc_f64_bits(zc_bits_f64(r) / div);
    } else if ((valid >> i) & 1u) {
      double f = zc_dequant_f64((int64_t)t, g);
      r = zc_f64_bits(divisor > 1 ? f / div : f);
    }
    lo[i] = (uint32_t)r;
    hi[i] = (uint32_t)(r >> 32);
  }
}

#endif /* ZD_CUDA_CODEC_BLOCKS_H_ */
