/* Per-block functions of the stream format (docs/format.md): quantization,
 * block encode and block decode. Written once for the host encoders and the
 * CUDA kernels (ZC_HD): plain C, no libc calls, fixed-size loops, so every
 * implementation writes the same bytes. */
#ifndef ZC_SZP_BLOCK_H_
#define ZC_SZP_BLOCK_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_hostdev.h"
#include "zccl.h"

#define ZC_BLOCK 32       /* values per block */
#define ZC_SUB 8          /* values per sub-group (one width) */
#define ZC_NSUB 4         /* sub-groups per block */
#define ZC_W_MAX 62       /* largest delta width */
#define ZC_W_ALLFILL 63   /* byte 0 of an all-fill block */
#define ZC_SMODE_POS 0
#define ZC_SMODE_NEG 1
#define ZC_SMODE_PLANE 2
#define ZC_SMODE_EXT 3
#define ZC_EXT_EXC 0x4
#define ZC_EXT_FILL 0x8
/* Header bytes + bitmaps + planes of one block, at most (no raw values). */
#define ZC_BLOCK_MAX_CODED (2 + 2 + 4 + 4 + 4 + ZC_NSUB * ZC_W_MAX)

#define ZC_QLIMIT_F32 1073741824.0f     /* 2^30 */
#define ZC_QLIMIT_F64 1125899906842624.0 /* 2^50 */

#if defined(__CUDA_ARCH__)
#define ZC_RINTF(x) rintf(x)
#define ZC_RINT(x) rint(x)
#define ZC_FABSF(x) fabsf(x)
#define ZC_FABS(x) fabs(x)
#define ZC_CLZ64(x) __clzll((long long)(x))
#define ZC_POPC32(x) __popc(x)
#else
#define ZC_RINTF(x) __builtin_rintf(x)
#define ZC_RINT(x) __builtin_rint(x)
#define ZC_FABSF(x) __builtin_fabsf(x)
#define ZC_FABS(x) __builtin_fabs(x)
#define ZC_CLZ64(x) __builtin_clzll(x)
#define ZC_POPC32(x) __builtin_popcount(x)
#endif

/* Quantities derived from the header's eb (docs/format.md, "Derived"). */
typedef struct {
  float step_f, inv_step_f, accept_f;
  double step_d, inv_step_d, accept_d;
} zc_grid_t;

/* One block in the integer domain: the deltas, and which positions are
 * exceptions (raw) or fill. Positions in xbits/fbits have delta 0. */
typedef struct {
  int64_t d[ZC_BLOCK];
  uint32_t xbits, fbits;
} zc_block_t;

/* The grid of a stream whose header says eb (> 0, finite). */
ZC_HD_INLINE void zc_grid_init(double eb, zc_grid_t* g) {
  union {
    float f;
    uint32_t u;
  } lo;
  union {
    double f;
    uint64_t u;
  } lod;
  g->step_f = (float)(2.0 * eb);
  g->inv_step_f = 1.0f / g->step_f;
  lo.f = (float)eb;
  if ((double)lo.f > eb && lo.u > 0) lo.u--; /* largest float not above eb */
  if (lo.u > 0) lo.u--;                       /* then one step towards zero */
  g->accept_f = lo.f;
  g->step_d = 2.0 * eb;
  g->inv_step_d = 1.0 / g->step_d;
  lod.f = eb;
  if (lod.u > 0) lod.u--;
  g->accept_d = lod.f;
}

ZC_HD_INLINE int zc_width64(uint64_t m) { return m ? 64 - ZC_CLZ64(m) : 0; }

/* 0 and *q when x quantizes within the bound; 1 when x is an exception. */
ZC_HD_INLINE int zc_quant_f32(float x, const zc_grid_t* g, int64_t* q) {
  float t = x * g->inv_step_f;
  if (!(ZC_FABSF(t) < ZC_QLIMIT_F32)) return 1; /* also NaN, Inf */
  int32_t qi = (int32_t)ZC_RINTF(t);
  float r = (float)qi * g->step_f;
  if (!(ZC_FABSF(x - r) <= g->accept_f)) return 1;
  *q = qi;
  return 0;
}

ZC_HD_INLINE int zc_quant_f64(double x, const zc_grid_t* g, int64_t* q) {
  double t = x * g->inv_step_d;
  if (!(ZC_FABS(t) < ZC_QLIMIT_F64)) return 1;
  int64_t qi = (int64_t)ZC_RINT(t);
  double r = (double)qi * g->step_d;
  if (!(ZC_FABS(x - r) <= g->accept_d)) return 1;
  *q = qi;
  return 0;
}

ZC_HD_INLINE float zc_dequant_f32(int64_t q, const zc_grid_t* g) { return (float)q * g->step_f; }
ZC_HD_INLINE double zc_dequant_f64(int64_t q, const zc_grid_t* g) { return (double)q * g->step_d; }

ZC_HD_INLINE void zc_put_u32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

ZC_HD_INLINE uint32_t zc_get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ceil(n / 2^k) without forming n + 2^k - 1, which wraps for n near 2^64
 * (a count read from a stream's header can be anything). */
ZC_HD_INLINE uint64_t zc_ceil_shift(uint64_t n, unsigned k) {
  return (n >> k) + ((n & (((uint64_t)1 << k) - 1)) != 0);
}

/* Writes a block's head: width W, the sign mode that neg (negative) and
 * pos (positive positions) call for, the extension byte, the sub-groups'
 * stored widths sw (none below W - 15), the bitmaps. Returns its bytes;
 * the planes follow. */
ZC_HD_INLINE int zc_block_put_head(uint8_t* out, int W, const int* sw, uint32_t neg, uint32_t pos, uint32_t xbits,
                                   uint32_t fbits) {
  int smode = neg == 0 ? ZC_SMODE_POS : (pos == 0 ? ZC_SMODE_NEG : ZC_SMODE_PLANE);
  int o = 0;
  if (xbits | fbits) {
    out[o++] = (uint8_t)(W | (ZC_SMODE_EXT << 6));
    out[o++] = (uint8_t)(smode | (xbits ? ZC_EXT_EXC : 0) | (fbits ? ZC_EXT_FILL : 0));
  } else {
    out[o++] = (uint8_t)(W | (smode << 6));
  }
  if (W > 0) {
    int base = W > 15 ? W - 15 : 0;
    out[o++] = (uint8_t)((sw[0] - base) | (sw[1] - base) << 4);
    out[o++] = (uint8_t)((sw[2] - base) | (sw[3] - base) << 4);
  }
  if (smode == ZC_SMODE_PLANE) {
    zc_put_u32(out + o, neg);
    o += 4;
  }
  if (xbits) {
    zc_put_u32(out + o, xbits);
    o += 4;
  }
  if (fbits) {
    zc_put_u32(out + o, fbits);
    o += 4;
  }
  return o;
}

/* Writes the block's header, bitmaps and planes (not the raw exception
 * values: the caller appends popcount(xbits) of them). `pad` marks positions
 * past the end of the data (delta 0, not exceptions). `fill` is 1 when the
 * stream declares a fill value. Returns the bytes written
 * (<= ZC_BLOCK_MAX_CODED). */
ZC_HD_INLINE int zc_block_encode(const zc_block_t* b, uint32_t pad, int fill, uint8_t* out) {
  uint64_t mag[ZC_BLOCK];
  uint32_t neg = 0, pos = 0;
  uint64_t sub_or[ZC_NSUB] = {0, 0, 0, 0};
  for (int i = 0; i < ZC_BLOCK; i++) {
    int64_t v = b->d[i];
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    mag[i] = m;
    neg |= (uint32_t)(v < 0) << i;
    pos |= (uint32_t)(v > 0) << i;
    sub_or[i / ZC_SUB] |= m;
  }
  int sw[ZC_NSUB], W = 0;
  for (int k = 0; k < ZC_NSUB; k++) {
    sw[k] = zc_width64(sub_or[k]);
    if (sw[k] > W) W = sw[k];
  }
  if (W == 0 && fill && b->xbits == 0 && (b->fbits | pad) == 0xffffffffu && b->fbits != 0) {
    out[0] = ZC_W_ALLFILL;
    return 1;
  }
  if (W > 0) {
    int base = W > 15 ? W - 15 : 0;
    for (int k = 0; k < ZC_NSUB; k++)
      if (sw[k] < base) sw[k] = base; /* a narrow sub-group below base is stored at base */
  }
  int o = zc_block_put_head(out, W, sw, neg, pos, b->xbits, b->fbits);
  for (int k = 0; k < ZC_NSUB; k++) {
    for (int p = 0; p < ZC_W_MAX; p++) {
      if (p >= sw[k]) break;
      uint32_t byte = 0;
      for (int j = 0; j < ZC_SUB; j++) byte |= (uint32_t)((mag[k * ZC_SUB + j] >> p) & 1u) << j;
      out[o++] = (uint8_t)byte;
    }
  }
  return o;
}

/* A block's head (all but the all-fill form, which the caller tells by
 * byte 0): its width, which bitmaps it has and their words, the
 * sub-groups' stored widths. */
typedef struct {
  int W, sw[ZC_NSUB];
  uint32_t neg, xbits, fbits;
} zc_head_t;

/* Parses the head of the block at in[0 .. avail) with every check of the
 * format, down to its planes fitting; returns where the planes start, or
 * -1. `fill`: the stream declares a fill value. */
ZC_HD_INLINE int zc_block_head(const uint8_t* in, size_t avail, int fill, zc_head_t* h) {
  if (avail < 1) return -1;
  int W = in[0] & 63, smode = in[0] >> 6, o = 1;
  int has_x = 0, has_f = 0;
  if (smode == ZC_SMODE_EXT) {
    if (avail < 2) return -1;
    int e = in[1];
    o = 2;
    if ((e & 0xf0) || (e & 3) == ZC_SMODE_EXT || !(e & (ZC_EXT_EXC | ZC_EXT_FILL))) return -1;
    smode = e & 3;
    has_x = (e & ZC_EXT_EXC) != 0;
    has_f = (e & ZC_EXT_FILL) != 0;
    if (has_f && !fill) return -1;
  }
  h->W = W;
  if (W == 0) {
    if (smode != ZC_SMODE_POS) return -1;
    for (int k = 0; k < ZC_NSUB; k++) h->sw[k] = 0;
  } else {
    if (avail < (size_t)o + 2) return -1;
    int base = W > 15 ? W - 15 : 0, top = 0;
    for (int k = 0; k < ZC_NSUB; k++) {
      h->sw[k] = base + ((in[o + k / 2] >> (4 * (k & 1))) & 15);
      if (h->sw[k] > top) top = h->sw[k];
    }
    if (top != W) return -1; /* also when a sub-group is wider than W */
    o += 2;
  }
  h->neg = smode == ZC_SMODE_NEG ? 0xffffffffu : 0;
  h->xbits = 0;
  h->fbits = 0;
  if (smode == ZC_SMODE_PLANE) {
    if (avail < (size_t)o + 4) return -1;
    h->neg = zc_get_u32(in + o);
    o += 4;
  }
  if (has_x) {
    if (avail < (size_t)o + 4) return -1;
    h->xbits = zc_get_u32(in + o);
    o += 4;
  }
  if (has_f) {
    if (avail < (size_t)o + 4) return -1;
    h->fbits = zc_get_u32(in + o);
    o += 4;
  }
  if ((has_x && h->xbits == 0) || (has_f && h->fbits == 0) || (h->xbits & h->fbits)) return -1;
  if (avail < (size_t)o + (size_t)(h->sw[0] + h->sw[1] + h->sw[2] + h->sw[3])) return -1;
  return o;
}

/* Parses one block from in[0 .. avail). Fills b, *nexc (raw values that
 * follow, in position order) and returns the bytes of header, bitmaps and
 * planes (the raw values start there), or -1 when the block is malformed or
 * does not fit. `fill`: the stream declares a fill value. */
ZC_HD_INLINE int zc_block_decode(const uint8_t* in, size_t avail, int fill, zc_block_t* b, int* nexc) {
  b->xbits = 0;
  b->fbits = 0;
  *nexc = 0;
  if (avail < 1) return -1;
  if ((in[0] & 63) == ZC_W_ALLFILL) {
    if ((in[0] >> 6) != 0 || !fill) return -1;
    for (int i = 0; i < ZC_BLOCK; i++) b->d[i] = 0;
    b->fbits = 0xffffffffu;
    return 1;
  }
  zc_head_t h;
  int o = zc_block_head(in, avail, fill, &h);
  if (o < 0) return -1;
  b->xbits = h.xbits;
  b->fbits = h.fbits;
  uint64_t mag[ZC_BLOCK];
  for (int i = 0; i < ZC_BLOCK; i++) mag[i] = 0;
  for (int k = 0; k < ZC_NSUB; k++) {
    for (int p = 0; p < ZC_W_MAX; p++) {
      if (p >= h.sw[k]) break;
      uint32_t byte = in[o++];
      for (int j = 0; j < ZC_SUB; j++) mag[k * ZC_SUB + j] |= (uint64_t)((byte >> j) & 1u) << p;
    }
  }
  uint32_t held = b->xbits | b->fbits;
  for (int i = 0; i < ZC_BLOCK; i++) {
    if (((held >> i) & 1u) && mag[i] != 0) return -1; /* held positions have delta 0 */
    b->d[i] = ((h.neg >> i) & 1u) ? (int64_t)((uint64_t)0 - mag[i]) : (int64_t)mag[i];
  }
  *nexc = ZC_POPC32(b->xbits);
  return o;
}

/* zc_block_span of the block whose first 12 bytes are w0, w1, w2 (little
 * endian; bytes at or past avail may hold anything): a head needs no
 * more, so the CUDA walk of a chunk in shared memory loads them at once,
 * as aligned words, instead of byte after dependent byte. */
ZC_HD_INLINE int zc_block_span_window(uint32_t w0, uint32_t w1, uint32_t w2, size_t avail, int esize) {
  if (avail < 1) return -1;
  const int W = (int)(w0 & 63u);
  int smode = (int)((w0 >> 6) & 3u), o = 1, has_x = 0, has_f = 0;
  if (W == ZC_W_ALLFILL) return 1;
  if (smode == ZC_SMODE_EXT) {
    if (avail < 2) return -1;
    const uint32_t e = (w0 >> 8) & 0xffu;
    smode = (int)(e & 3u);
    has_x = (e & ZC_EXT_EXC) != 0;
    has_f = (e & ZC_EXT_FILL) != 0;
    o = 2;
  }
  int planes = 0;
  if (W > 0) {
    if (avail < (size_t)o + 2) return -1;
    const uint32_t sw = w0 >> (8 * o); /* o is 1 or 2: both bytes in w0 */
    const int base = W > 15 ? W - 15 : 0;
    planes = 4 * base + (int)((sw & 15u) + ((sw >> 4) & 15u) + ((sw >> 8) & 15u) + ((sw >> 12) & 15u));
    o += 2;
  }
  if (smode == ZC_SMODE_PLANE) o += 4;
  uint32_t xbits = 0;
  if (has_x) {
    if (avail < (size_t)o + 4) return -1;
    /* o is 2 .. 8: the word from w0:w1 or w1:w2 */
    const uint64_t two = o < 4 ? ((uint64_t)w1 << 32 | w0) : ((uint64_t)w2 << 32 | w1);
    xbits = (uint32_t)(two >> (8 * (o & 3) + (o == 8 ? 32 : 0)));
    o += 4;
  }
  if (has_f) o += 4;
  size_t span = (size_t)o + (size_t)planes + (size_t)ZC_POPC32(xbits) * (size_t)esize;
  return span <= avail ? (int)span : -1;
}

/* Bytes the block at in[0 .. avail) takes with its raw values (esize bytes
 * each), read from its head alone: what a decoder needs to find the next
 * block without decoding this one (the CUDA decoder walks a chunk's block
 * heads with it, then decodes the blocks in parallel). -1 when the head or
 * the span does not fit. For every block zc_block_decode accepts whose raw
 * values fit, this is its return plus nexc * esize; for a malformed block it
 * may be anything, so it never replaces zc_block_decode's checks. */
ZC_HD_INLINE int zc_block_span(const uint8_t* in, size_t avail, int esize) {
  uint32_t w0 = 0, w1 = 0, w2 = 0; /* the head's first 12 bytes, 0 past avail */
  for (int k = 0; k < 4; k++) {
    if ((size_t)k < avail) w0 |= (uint32_t)in[k] << (8 * k);
    if ((size_t)k + 4 < avail) w1 |= (uint32_t)in[k + 4] << (8 * k);
    if ((size_t)k + 8 < avail) w2 |= (uint32_t)in[k + 8] << (8 * k);
  }
  return zc_block_span_window(w0, w1, w2, avail, esize);
}

/* ---- bits ------------------------------------------------------------------ */

ZC_HD_INLINE uint32_t zc_f32_bits(float f) {
  union {
    float f;
    uint32_t u;
  } x;
  x.f = f;
  return x.u;
}
ZC_HD_INLINE float zc_bits_f32(uint32_t u) {
  union {
    float f;
    uint32_t u;
  } x;
  x.u = u;
  return x.f;
}
ZC_HD_INLINE uint64_t zc_f64_bits(double f) {
  union {
    double f;
    uint64_t u;
  } x;
  x.f = f;
  return x.u;
}
ZC_HD_INLINE double zc_bits_f64(uint64_t u) {
  union {
    double f;
    uint64_t u;
  } x;
  x.u = u;
  return x.f;
}
ZC_HD_INLINE int zc_isnan32(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }
ZC_HD_INLINE int zc_isnan64(uint64_t u) { return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
/* x86 quiets a signalling NaN wherever it converts or computes with it. */
ZC_HD_INLINE uint32_t zc_quiet32(uint32_t u) { return zc_isnan32(u) ? u | 0x00400000u : u; }
ZC_HD_INLINE uint64_t zc_quiet64(uint64_t u) { return zc_isnan64(u) ? u | 0x0008000000000000ull : u; }
#define ZC_NAN32 0x7fc00000u           /* C's NAN */
#define ZC_NAN64 0x7ff8000000000000ull /* (double)NAN */
#define ZC_INDEF32 0xffc00000u         /* x86's result of an invalid operation */
#define ZC_INDEF64 0xfff8000000000000ull

/* SUM, MAX and MIN of a homomorphic op's exception positions (host hop and
 * CUDA blocks alike; docs/format.md): MAX/MIN give NAN when either is NaN;
 * SUM gives b's NaN, else a's NaN, quieted, else the sum, whose own NaN
 * (Inf - Inf) is x86's indefinite NaN. Spelled out in bits: C leaves which
 * operand's NaN an addition returns to the compiler, which may swap them. */
ZC_HD_INLINE uint32_t zc_exc_op_f32(zcclRedOp_t op, float a, float b) {
  uint32_t ua = zc_f32_bits(a), ub = zc_f32_bits(b);
  if (op == zcclMax || op == zcclMin) {
    if (zc_isnan32(ua) || zc_isnan32(ub)) return ZC_NAN32;
    return zc_f32_bits(op == zcclMax ? (a > b ? a : b) : (a < b ? a : b));
  }
  if (zc_isnan32(ub)) return zc_quiet32(ub);
  if (zc_isnan32(ua)) return zc_quiet32(ua);
  uint32_t s = zc_f32_bits(a + b);
  return zc_isnan32(s) ? ZC_INDEF32 : s;
}

ZC_HD_INLINE uint64_t zc_exc_op_f64(zcclRedOp_t op, double a, double b) {
  uint64_t ua = zc_f64_bits(a), ub = zc_f64_bits(b);
  if (op == zcclMax || op == zcclMin) {
    if (zc_isnan64(ua) || zc_isnan64(ub)) return ZC_NAN64;
    return zc_f64_bits(op == zcclMax ? (a > b ? a : b) : (a < b ? a : b));
  }
  if (zc_isnan64(ub)) return zc_quiet64(ub);
  if (zc_isnan64(ua)) return zc_quiet64(ua);
  uint64_t s = zc_f64_bits(a + b);
  return zc_isnan64(s) ? ZC_INDEF64 : s;
}

#endif /* ZC_SZP_BLOCK_H_ */
