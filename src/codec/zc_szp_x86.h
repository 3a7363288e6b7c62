/* x86 kernels of the stream codec, generated twice from this one body:
 * zc_szp_avx2.c (ZC_X86_GFNI 0: 8x8 bit transposes by 64-bit delta swaps) and
 * zc_szp_gfni.c (ZC_X86_GFNI 1: blocks whose widths are at most 16 turn their
 * 8x8 bit matrices into planes with GF2P8AFFINE transposes) and
 * zc_szp_avx512.c (GFNI plus ZC_X86_AVX512 1: quantization and
 * reconstruction on 16-lane registers with mask compares). The includer
 * defines ZC_X86_GFNI, ZC_X86_AVX512 and ZC_X86_NAME(fn), and compiles with
 * the matching -m flags.
 *
 * A block takes the vector path when it is "clean" (every value ordinary or fill,
 * widths that fit 32-bit lanes); any other block goes through the scalar
 * functions, so the bytes are always those of zc_block_encode (tests compare
 * every level on the same data). The format's 8-value sub-groups are one
 * 8-lane register each. */
#include <immintrin.h>
#include <string.h>

#include "zc_szp_internal.h"

/* Software prefetch ZC_X86_AHEAD bytes ahead of a sequential scan. Without
 * it the kernels read an input larger than the caches at about half the
 * rate they work at from cache (docs/measurements/codec.md, "Prefetch"). */
#define ZC_X86_AHEAD 2048
static inline void zc_x86_ahead(const void* p) { _mm_prefetch((const char*)p + ZC_X86_AHEAD, _MM_HINT_T0); }
/* A block of 32 float32 values: two cache lines. */
static inline void zc_x86_ahead_block(const float* x) {
  zc_x86_ahead(x);
  zc_x86_ahead(x + 16);
}

/* The first n (<= 8) bytes at p as a little-endian integer, upper bytes 0;
 * reads no byte at or past p + avail (avail >= n). */
static inline uint64_t zc_x86_load_bytes(const uint8_t* p, size_t avail, int n) {
  uint64_t v = 0;
  if (avail >= 8) memcpy(&v, p, 8);
  else memcpy(&v, p, (size_t)n);
  return n == 8 ? v : v & ((1ull << (8 * n)) - 1);
}

/* 64-bit lane k's 8 bytes as 8 int32 lanes, into out[k]. */
static inline void zc_x86_widen_bytes(__m256i bytes, __m256i out[4]) {
  __m128i l = _mm256_castsi256_si128(bytes), h = _mm256_extracti128_si256(bytes, 1);
  out[0] = _mm256_cvtepu8_epi32(l);
  out[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(l, 8));
  out[2] = _mm256_cvtepu8_epi32(h);
  out[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(h, 8));
}

/* Within each 64-bit lane: transpose the 8x8 bit matrix (byte i bit j <->
 * byte j bit i). Turns 8 magnitudes (bytes) into 8 planes (bytes) and back.
 * With GFNI: one affine step with the byte-reversed lane as the matrix. */
#if ZC_X86_GFNI
static inline __m256i zc_x86_transpose8x8(__m256i v) {
  const __m256i rev = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
                                       1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  return _mm256_gf2p8affine_epi64_epi8(_mm256_set1_epi64x((long long)0x8040201008040201ull),
                                       _mm256_shuffle_epi8(v, rev), 0);
}
#else
/* Without GFNI: three delta swaps on every 64-bit lane at once (2x2, 4x4,
 * then 8x8 sub-blocks; byte i bit j at bit 8i+j). */
static inline __m256i zc_x86_swap(__m256i x, int shift, long long mask) {
  __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, shift)), _mm256_set1_epi64x(mask));
  return _mm256_xor_si256(_mm256_xor_si256(x, t), _mm256_slli_epi64(t, shift));
}

static inline __m256i zc_x86_transpose8x8(__m256i v) {
  v = zc_x86_swap(v, 7, 0x00aa00aa00aa00aall);
  v = zc_x86_swap(v, 14, 0x0000cccc0000ccccll);
  return zc_x86_swap(v, 28, 0x00000000f0f0f0f0ll);
}
#endif

/* A block's head: the width byte with its sign mode (and the extension
 * byte when it has fill positions); a block of width 0 ends with its fill
 * bitmap. Returns the bytes written, *smode the sign mode. */
static inline __attribute__((always_inline)) size_t zc_x86_emit_head(int W, uint32_t neg, uint32_t pos,
                                                                     uint32_t fbits, uint8_t* out, int* smode) {
  size_t o = 0;
  *smode = neg == 0 ? ZC_SMODE_POS : (pos == 0 ? ZC_SMODE_NEG : ZC_SMODE_PLANE);
  if (fbits) {
    out[o++] = (uint8_t)(W | (ZC_SMODE_EXT << 6));
    out[o++] = (uint8_t)(*smode | ZC_EXT_FILL);
  } else {
    out[o++] = (uint8_t)(W | (*smode << 6));
  }
  if (W == 0 && fbits) {
    memcpy(out + o, &fbits, 4);
    o += 4;
  }
  return o;
}

/* Writes a block whose 32 deltas (4 x 8 lanes) are all ordinary or fill
 * (fbits, delta 0): exactly zc_block_encode's bytes for such a block. */
static inline __attribute__((always_inline)) size_t zc_x86_emit_clean(const __m256i d[4], uint32_t fbits, uint8_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  if (fbits == 0xffffffffu) { /* every position fill (a sum's, from both inputs): their deltas are 0 */
    out[0] = ZC_W_ALLFILL;
    return 1;
  }
  uint32_t neg = 0, pos = 0;
  __m256i mag[4];
  int sw[4], W = 0;
  for (int k = 0; k < 4; k++) {
    neg |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(d[k])) << (8 * k);
    pos |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(d[k], zero))) << (8 * k);
    mag[k] = _mm256_abs_epi32(d[k]);
    __m256i t = _mm256_or_si256(mag[k], _mm256_permute2x128_si256(mag[k], mag[k], 1));
    t = _mm256_or_si256(t, _mm256_shuffle_epi32(t, 0x4e));
    t = _mm256_or_si256(t, _mm256_shuffle_epi32(t, 0xb1));
    uint32_t m = (uint32_t)_mm256_cvtsi256_si32(t);
    sw[k] = m ? 32 - __builtin_clz(m) : 0;
    W = sw[k] > W ? sw[k] : W;
  }
  int smode;
  size_t o = zc_x86_emit_head(W, neg, pos, fbits, out, &smode);
  if (W == 0) return o;
  int base = W > 15 ? W - 15 : 0;
  for (int k = 0; k < 4; k++) sw[k] = sw[k] < base ? base : sw[k];
  out[o++] = (uint8_t)((sw[0] - base) | (sw[1] - base) << 4);
  out[o++] = (uint8_t)((sw[2] - base) | (sw[3] - base) << 4);
  if (smode == ZC_SMODE_PLANE) {
    memcpy(out + o, &neg, 4);
    o += 4;
  }
  if (fbits) {
    memcpy(out + o, &fbits, 4);
    o += 4;
  }
  if (W <= 16) {
    /* Magnitudes to bytes (low and high), sub-group k in 64-bit lane k, then
     * planes 0-7 and 8-15. The 8-byte stores overlap: each next one
     * overwrites the previous one's unused tail (the caller guarantees
     * ZC_BLOCK_MAX_CODED of room). */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), low = _mm256_set1_epi16(0xff);
    __m256i w01 = _mm256_packus_epi32(mag[0], mag[1]), w23 = _mm256_packus_epi32(mag[2], mag[3]);
    __m256i lo = _mm256_permutevar8x32_epi32(
        _mm256_packus_epi16(_mm256_and_si256(w01, low), _mm256_and_si256(w23, low)), order);
    uint64_t plo[4], phi[4];
    _mm256_storeu_si256((__m256i*)plo, zc_x86_transpose8x8(lo));
    if (W > 8) {
      __m256i hi = _mm256_permutevar8x32_epi32(
          _mm256_packus_epi16(_mm256_srli_epi16(w01, 8), _mm256_srli_epi16(w23, 8)), order);
      _mm256_storeu_si256((__m256i*)phi, zc_x86_transpose8x8(hi));
    }
    for (int k = 0; k < 4; k++) {
      memcpy(out + o, &plo[k], 8);
      if (sw[k] > 8) memcpy(out + o + 8, &phi[k], 8);
      o += (size_t)sw[k];
    }
    return o;
  }
  for (int k = 0; k < 4; k++) {
    __m256i cur = mag[k];
    for (int p = 0; p < sw[k]; p++) {
      out[o++] = (uint8_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(cur, 31)));
      cur = _mm256_srli_epi32(cur, 1);
    }
  }
  return o;
}

#if ZC_X86_AVX512
/* Quantizes 32 floats with the same test as zc_quant_f32, lane by lane: 1
 * when every value is ordinary or (has_fill) equal to fill, *fbits then
 * marking the fill positions; else 0 and the block goes scalar. */
static inline int zc_x86_quant_held_f32(const float* x, const zc_grid_t* g, int has_fill, float fill, __m256i q[4],
                                        uint32_t* fbits) {
  const __m512 inv = _mm512_set1_ps(g->inv_step_f), step = _mm512_set1_ps(g->step_f);
  const __m512 accept = _mm512_set1_ps(g->accept_f), lim = _mm512_set1_ps(ZC_QLIMIT_F32), fv = _mm512_set1_ps(fill);
  __mmask16 good = 0xffff;
  uint32_t f = 0;
  for (int h = 0; h < 2; h++) {
    __m512 xh = _mm512_loadu_ps(x + 16 * h);
    __m512 t = _mm512_mul_ps(xh, inv);
    __mmask16 ok = _mm512_cmp_ps_mask(_mm512_abs_ps(t), lim, _CMP_LT_OQ);
    __m512i qi = _mm512_cvtps_epi32(t); /* round to nearest even, as rintf */
    __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(qi), step);
    ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(xh, r)), accept, _CMP_LE_OQ);
    __mmask16 isfill = has_fill ? _mm512_cmp_ps_mask(xh, fv, _CMP_EQ_OQ) : 0;
    good &= ok | isfill;
    f |= (uint32_t)isfill << (16 * h);
    q[2 * h] = _mm512_castsi512_si256(qi);
    q[2 * h + 1] = _mm512_extracti64x4_epi64(qi, 1);
  }
  *fbits = f;
  return good == 0xffff;
}

/* Deltas of the non-fill integers, each against the previous non-fill one
 * (fill positions hold the track: delta 0): pack the valid lanes, take
 * neighbour differences, unpack. */
static inline void zc_x86_deltas_held(const __m256i q[4], uint32_t fbits, zc_emit_t* e, __m256i d[4]) {
  for (int h = 0; h < 2; h++) {
    __mmask16 valid = (__mmask16)~(fbits >> (16 * h));
    __m512i qh = _mm512_inserti64x4(_mm512_castsi256_si512(q[2 * h]), q[2 * h + 1], 1);
    __m512i dense = _mm512_maskz_compress_epi32(valid, qh);
    int n = __builtin_popcount((unsigned)valid);
    if (n > 0 && !e->have_prev) {
      e->base = e->prev = _mm512_cvtsi512_si32(dense);
      e->have_prev = 1;
    }
    __m512i before = _mm512_alignr_epi32(dense, _mm512_set1_epi32((int32_t)e->prev), 15);
    __m512i dh = _mm512_maskz_expand_epi32(valid, _mm512_sub_epi32(dense, before));
    if (n > 0) e->prev = _mm512_cvtsi512_si32(_mm512_permutexvar_epi32(_mm512_set1_epi32(n - 1), dense));
    d[2 * h] = _mm512_castsi512_si256(dh);
    d[2 * h + 1] = _mm512_extracti64x4_epi64(dh, 1);
  }
}
#else
/* Quantizes 32 floats with the same test as zc_quant_f32, lane by lane: 1
 * when every value is ordinary or (has_fill) equal to fill, *fbits then
 * marking the fill positions; else 0 and the block goes scalar. */
static inline int zc_x86_quant_held_f32(const float* x, const zc_grid_t* g, int has_fill, float fill, __m256i q[4],
                                        uint32_t* fbits) {
  const __m256 inv = _mm256_set1_ps(g->inv_step_f), step = _mm256_set1_ps(g->step_f);
  const __m256 accept = _mm256_set1_ps(g->accept_f), lim = _mm256_set1_ps(ZC_QLIMIT_F32);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), fv = _mm256_set1_ps(fill);
  int good = 0xff;
  uint32_t f = 0;
  for (int k = 0; k < 4; k++) {
    __m256 xk = _mm256_loadu_ps(x + 8 * k);
    __m256 t = _mm256_mul_ps(xk, inv);
    __m256 ok = _mm256_cmp_ps(_mm256_and_ps(t, absmask), lim, _CMP_LT_OQ);
    q[k] = _mm256_cvtps_epi32(t); /* round to nearest even, as rintf */
    __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(q[k]), step);
    __m256 diff = _mm256_and_ps(_mm256_sub_ps(xk, r), absmask);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(diff, accept, _CMP_LE_OQ));
    if (has_fill) {
      __m256 isfill = _mm256_cmp_ps(xk, fv, _CMP_EQ_OQ);
      ok = _mm256_or_ps(ok, isfill);
      f |= (uint32_t)_mm256_movemask_ps(isfill) << (8 * k);
    }
    good &= _mm256_movemask_ps(ok);
  }
  *fbits = f;
  return good == 0xff;
}

#endif

/* 1 when all 32 values equal v. */
static inline int zc_x86_all_equal_f32(const float* x, float v) {
  const __m256 vv = _mm256_set1_ps(v);
  int eq = 0xff;
  for (int k = 0; k < 4; k++) eq &= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * k), vv, _CMP_EQ_OQ));
  return eq == 0xff;
}

/* Deltas of 32 integers, the first against prev; returns the last integer. */
static inline int32_t zc_x86_deltas_from(const __m256i q[4], int32_t prev, __m256i d[4]) {
  const __m256i rot = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6), last = _mm256_set1_epi32(7);
  __m256i carry = _mm256_set1_epi32(prev);
  for (int k = 0; k < 4; k++) {
    __m256i sh = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(q[k], rot), carry, 0x01);
    d[k] = _mm256_sub_epi32(q[k], sh);
    carry = _mm256_permutevar8x32_epi32(q[k], last);
  }
  return _mm256_cvtsi256_si32(carry);
}

/* Deltas of 32 integers against the emitter's running value. */
static inline void zc_x86_deltas(const __m256i q[4], zc_emit_t* e, __m256i d[4]) {
  if (!e->have_prev) {
    e->base = e->prev = _mm256_cvtsi256_si32(q[0]);
    e->have_prev = 1;
  }
  e->prev = zc_x86_deltas_from(q, (int32_t)e->prev, d);
}

/* Lanes j = bit j of byte (0 or 1). */
static inline __m256i zc_x86_bits(uint32_t byte) {
  return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)byte), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                          _mm256_set1_epi32(1));
}

#if !ZC_X86_AVX512
/* Deltas of the non-fill integers, each against the previous non-fill one
 * (fill positions hold the track: delta 0), as the AVX-512 version: each
 * fill position takes the integer before it (before the block's first
 * ordinary value the running one, or that first value when the chunk has
 * none yet), then plain neighbour differences. Coasts are a few blocks in
 * ten of an ocean field; without this they went scalar on AVX2. */
static inline void zc_x86_deltas_held(const __m256i q[4], uint32_t fbits, zc_emit_t* e, __m256i d[4]) {
  if (fbits == 0xffffffffu) { /* no ordinary position: the emitter keeps its state */
    for (int k = 0; k < 4; k++) d[k] = _mm256_setzero_si256();
    return;
  }
  /* Lane by lane in registers (a scalar pass through memory stalled on
   * store forwarding): each lane's source is the last ordinary lane at or
   * before it, a prefix maximum of the ordinary lanes' indices (fill lanes
   * -1); lanes with none take the carry from the register before. */
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), none = _mm256_set1_epi32(-1);
  const __m256i up1 = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6), up2 = _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5);
  const __m256i up4 = _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3);
  /* Before the chunk's first ordinary value: that value. */
  int first = __builtin_ctz(~fbits);
  __m256i carry = e->have_prev ? _mm256_set1_epi32((int32_t)e->prev)
                               : _mm256_permutevar8x32_epi32(q[first >> 3], _mm256_set1_epi32(first & 7)), h[4];
  for (int k = 0; k < 4; k++) {
    __m256i fill = _mm256_sub_epi32(_mm256_setzero_si256(), zc_x86_bits((fbits >> (8 * k)) & 0xff));
    __m256i idx = _mm256_or_si256(lane, fill);
    idx = _mm256_max_epi32(idx, _mm256_blend_epi32(_mm256_permutevar8x32_epi32(idx, up1), none, 0x01));
    idx = _mm256_max_epi32(idx, _mm256_blend_epi32(_mm256_permutevar8x32_epi32(idx, up2), none, 0x03));
    idx = _mm256_max_epi32(idx, _mm256_blend_epi32(_mm256_permutevar8x32_epi32(idx, up4), none, 0x0f));
    h[k] = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(q[k], idx), carry,
                              _mm256_cmpgt_epi32(_mm256_setzero_si256(), idx));
    carry = _mm256_permutevar8x32_epi32(h[k], _mm256_set1_epi32(7));
  }
  zc_x86_deltas(h, e, d);
}
#endif

/* Inclusive prefix sum of 8 lanes plus carry (broadcast); carry becomes the
 * last lane. */
static inline __m256i zc_x86_scan(__m256i x, __m256i* carry) {
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
  __m256i low_total = _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(3));
  x = _mm256_add_epi32(x, _mm256_blend_epi32(_mm256_setzero_si256(), low_total, 0xf0));
  x = _mm256_add_epi32(x, *carry);
  *carry = _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(7));
  return x;
}

#if !ZC_X86_AVX512
/* The running values q + prefix(d) of a block, as 4 x 8 lanes. */
static inline void zc_x86_track(const __m256i d[4], int64_t q, __m256i out[4]) {
  __m256i carry = _mm256_set1_epi32((int32_t)q);
  for (int k = 0; k < 4; k++) out[k] = zc_x86_scan(d[k], &carry);
}
#endif

/* A block's sign plane (or all-negative mode) and fill bitmap after its
 * widths, at in + *o: -1 when they run past avail or the bitmap is empty. */
static inline __attribute__((always_inline)) int zc_x86_parse_tail(const uint8_t* in, size_t avail, int* o,
                                                                   int smode, int has_f, uint32_t* neg,
                                                                   uint32_t* fbits) {
  *neg = smode == ZC_SMODE_NEG ? 0xffffffffu : 0;
  if (smode == ZC_SMODE_PLANE) {
    if (avail < (size_t)*o + 4) return -1;
    memcpy(neg, in + *o, 4);
    *o += 4;
  }
  if (has_f) {
    if (avail < (size_t)*o + 4) return -1;
    memcpy(fbits, in + *o, 4);
    *o += 4;
    if (*fbits == 0) return -1;
  }
  return 0;
}

/* A full block's head up to its planes, with zc_block_decode's checks:
 * width (at most maxW), sub-group widths, sign plane, fill bitmap (only
 * when allow_fill). Returns the offset of the planes, having checked that
 * they are all there; 0 when the block is not one the vector path takes
 * (the caller goes scalar), -1 when malformed. */
static inline __attribute__((always_inline)) int zc_x86_parse_head(const uint8_t* in, size_t avail, int allow_fill,
                                                                   int maxW, int* W_out, int sw[4], uint32_t* neg,
                                                                   uint32_t* fbits) {
  if (avail < 1) return -1;
  int W = in[0] & 63, smode = in[0] >> 6, o = 1, has_f = 0;
  *fbits = 0;
  if (W > maxW) return 0;
  if (smode == ZC_SMODE_EXT) {
    /* Blocks with a fill bitmap (and no exceptions) stay on the vector
     * path where the caller can place fill values (allow_fill); anything
     * else, including every malformed form, is the scalar decoder's to judge. */
    if (!allow_fill || avail < 2) return 0;
    int e = in[1];
    if ((e & 0xf0) || (e & 3) == ZC_SMODE_EXT || (e & (ZC_EXT_EXC | ZC_EXT_FILL)) != ZC_EXT_FILL) return 0;
    smode = e & 3;
    has_f = 1;
    o = 2;
  }
  sw[0] = sw[1] = sw[2] = sw[3] = 0;
  if (W == 0) {
    if (smode != ZC_SMODE_POS) return -1;
  } else {
    if (avail < (size_t)o + 2) return -1;
    int base = W > 15 ? W - 15 : 0, top = 0;
    for (int k = 0; k < 4; k++) {
      sw[k] = base + ((in[o + k / 2] >> (4 * (k & 1))) & 15);
      if (sw[k] > W) return -1;
      top = sw[k] > top ? sw[k] : top;
    }
    if (top != W) return -1;
    o += 2;
  }
  if (zc_x86_parse_tail(in, avail, &o, smode, has_f, neg, fbits)) return -1;
  if (avail < (size_t)(o + sw[0] + sw[1] + sw[2] + sw[3])) return -1;
  *W_out = W;
  return o;
}

/* A block's planes at in + *o (sub-group k: sw[k] <= 16 of them) as
 * magnitude bytes: *lo holds bits 0-7 of position j at byte j, *hi bits
 * 8-15 (zero when W <= 8). Moves *o past the planes. */
static inline __attribute__((always_inline)) void zc_x86_planes_to_bytes(const uint8_t* in, size_t avail, int* o,
                                                                         const int sw[4], int W, __m256i* lo,
                                                                         __m256i* hi) {
  uint64_t plo[4], phi[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; k++) {
    int nlo = sw[k] < 8 ? sw[k] : 8, nhi = sw[k] - nlo;
    plo[k] = zc_x86_load_bytes(in + *o, avail - (size_t)*o, nlo);
    if (nhi) phi[k] = zc_x86_load_bytes(in + *o + 8, avail - (size_t)*o - 8, nhi);
    *o += sw[k];
  }
  /* Built from registers: a wide load of four narrow stores would stall. */
  *lo = zc_x86_transpose8x8(_mm256_setr_epi64x((long long)plo[0], (long long)plo[1], (long long)plo[2],
                                                (long long)plo[3]));
  *hi = W > 8 ? zc_x86_transpose8x8(_mm256_setr_epi64x((long long)phi[0], (long long)phi[1], (long long)phi[2],
                                                       (long long)phi[3]))
              : _mm256_setzero_si256();
}

/* Parses one full block whose deltas fit 32-bit lanes with room to spare
 * (no exceptions or fill, W <= 24) into 4 x 8 deltas, with the same checks
 * as zc_block_decode. Returns the bytes used, 0 when the block is not one
 * the vector path takes (the caller goes scalar), -1 when malformed. */
static inline __attribute__((always_inline)) int zc_x86_parse_clean(const uint8_t* in, size_t avail, int allow_fill, __m256i d[4],
                                     uint32_t* fbits) {
  int W = 0, sw[4];
  uint32_t neg;
  int o = zc_x86_parse_head(in, avail, allow_fill, 24, &W, sw, &neg, fbits);
  if (o <= 0) return o;
  int has_f = *fbits != 0;
  const __m256i zero = _mm256_setzero_si256();
  __m256i mag[4];
  if (W <= 16) {
    __m256i lo, hi;
    zc_x86_planes_to_bytes(in, avail, &o, sw, W, &lo, &hi);
    zc_x86_widen_bytes(lo, mag);
    if (W > 8) {
      __m256i hi8[4];
      zc_x86_widen_bytes(hi, hi8);
      for (int k = 0; k < 4; k++) mag[k] = _mm256_or_si256(mag[k], _mm256_slli_epi32(hi8[k], 8));
    }
  } else {
    for (int k = 0; k < 4; k++) {
      mag[k] = zero;
      const uint8_t* planes = in + o;
      for (int p = sw[k] - 1; p >= 0; p--)
        mag[k] = _mm256_or_si256(_mm256_slli_epi32(mag[k], 1), zc_x86_bits(planes[p]));
      o += sw[k];
    }
  }
  uint32_t nonzero = 0;
  for (int k = 0; k < 4; k++) {
    __m256i m = _mm256_sub_epi32(zero, zc_x86_bits((neg >> (8 * k)) & 0xff)); /* all ones where negative */
    d[k] = _mm256_sub_epi32(_mm256_xor_si256(mag[k], m), m);
    if (has_f)
      nonzero |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(mag[k], zero))) << (8 * k);
  }
  if (nonzero & *fbits) return -1; /* fill positions hold the track: delta 0 */
  return o;
}

#if ZC_X86_AVX512
/* Inclusive prefix sum of 16 lanes plus carry (broadcast), in four shifted
 * adds; carry becomes the last lane. */
static inline __m512i zc_x86_scan16(__m512i x, __m512i* carry) {
  const __m512i zero = _mm512_setzero_si512();
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 15));
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 14));
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 12));
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 8));
  x = _mm512_add_epi32(x, *carry);
  *carry = _mm512_permutexvar_epi32(_mm512_set1_epi32(15), x);
  return x;
}

/* The running values q + prefix(d) of a block, as 4 x 8 lanes. */
static inline void zc_x86_track(const __m256i d[4], int64_t q, __m256i out[4]) {
  __m512i carry = _mm512_set1_epi32((int32_t)q);
  for (int h = 0; h < 2; h++) {
    __m512i x = zc_x86_scan16(_mm512_inserti64x4(_mm512_castsi256_si512(d[2 * h]), d[2 * h + 1], 1), &carry);
    out[2 * h] = _mm512_castsi512_si256(x);
    out[2 * h + 1] = _mm512_extracti64x4_epi64(x, 1);
  }
}

/* q (|q| < 2^30) plus the running sum of d, as float32 values: a 16-lane
 * scan in four shifted adds. */
static inline void zc_x86_values_f32(const __m256i d[4], int32_t* q, const zc_grid_t* g, float divisor,
                                     uint32_t fbits, float fill, float* y) {
  const __m512 fv = _mm512_set1_ps(fill);
  const __m512 step = _mm512_set1_ps(g->step_f), div = _mm512_set1_ps(divisor);
  __m512i carry = _mm512_set1_epi32(*q);
  for (int h = 0; h < 2; h++) {
    __m512i x = zc_x86_scan16(_mm512_inserti64x4(_mm512_castsi256_si512(d[2 * h]), d[2 * h + 1], 1), &carry);
    __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(x), step);
    if (divisor != 1.0f) r = _mm512_div_ps(r, div);
    r = _mm512_mask_blend_ps((__mmask16)(fbits >> (16 * h)), r, fv); /* fill is not divided */
    _mm512_storeu_ps(y + 16 * h, r);
  }
  *q = _mm512_cvtsi512_si32(carry);
}

/* ---- a whole block in one register: 32 x 16-bit lanes (VBMI2) ----------
 * Sub-group k is 128-bit lane k. Planes <-> magnitudes go through one
 * byte expand/compress (vpexpandb/vpcompressb: sub-group k's planes at bytes
 * 16k...), one in-lane shuffle and one GF2P8AFFINE transpose, with no
 * branch on the widths. */

/* 16 bytes repeated in every 128-bit lane. */
static inline __m512i zc_x86_lanes(const int8_t b[16]) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)b));
}

/* Parses one full block of widths at most wmax (<= 16) with no exceptions
 * (a fill bitmap only when allow_fill) into its magnitudes (32 x u16), its
 * sign plane and fill bitmap, with the checks of zc_block_decode. Returns the
 * block's bytes, 0 when the block is not one this path takes (the caller
 * takes another), -1 when malformed. */
static inline __attribute__((always_inline)) int zc_x86_parse16(const uint8_t* in, size_t avail, int allow_fill,
                                                                int wmax, __m512i* mag, uint32_t* neg,
                                                                uint32_t* fbits, int* canon) {
  static const int8_t rev[16] = {7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8};
  static const int8_t words[16] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
  if (avail < 1) return -1;
  int W = in[0] & 63, smode = in[0] >> 6, o = 1, has_f = 0;
  *fbits = 0;
  if (W > wmax) return 0;
  if (smode == ZC_SMODE_EXT) {
    if (!allow_fill || avail < 2) return 0;
    int e = in[1];
    if ((e & 0xf0) || (e & 3) == ZC_SMODE_EXT || (e & (ZC_EXT_EXC | ZC_EXT_FILL)) != ZC_EXT_FILL) return 0;
    smode = e & 3;
    has_f = 1;
    o = 2;
  }
  uint64_t m = 0;
  int total = 0;
  if (W == 0) {
    if (smode != ZC_SMODE_POS) return -1;
  } else {
    if (avail < (size_t)o + 2) return -1;
    unsigned nib = in[o] | (unsigned)in[o + 1] << 8;
    int base = W > 15 ? W - 15 : 0, top = 0;
    for (int k = 0; k < 4; k++) {
      int sw = base + (int)((nib >> (4 * k)) & 15);
      if (sw > W) return -1;
      top = sw > top ? sw : top;
      total += sw;
      m |= (uint64_t)((1u << sw) - 1) << (16 * k);
    }
    if (top != W) return -1;
    o += 2;
  }
  uint32_t ng;
  if (zc_x86_parse_tail(in, avail, &o, smode, has_f, &ng, fbits)) return -1;
  if (avail < (size_t)(o + total)) return -1;
  __m512i p = _mm512_maskz_expand_epi8(m, _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, (unsigned)total), in + o));
  if (canon) /* every sub-group's top plane non-zero (W <= 15: m's groups stop below bit 15) */
    *canon = (m & ~(m >> 1) & ~_mm512_test_epi8_mask(p, p)) == 0;
  p = _mm512_gf2p8affine_epi64_epi8(_mm512_set1_epi64((long long)0x8040201008040201ull),
                                    _mm512_shuffle_epi8(p, zc_x86_lanes(rev)), 0);
  *mag = _mm512_shuffle_epi8(p, zc_x86_lanes(words));
  if (has_f && (_mm512_test_epi16_mask(*mag, *mag) & *fbits)) return -1; /* fill holds the track */
  if (canon && smode == ZC_SMODE_PLANE) { /* signs on non-zero deltas only, both kinds present */
    uint32_t nz = _mm512_test_epi16_mask(*mag, *mag);
    *canon = *canon && (ng & ~nz) == 0 && (ng & nz) != 0 && (nz & ~ng) != 0;
  }
  *neg = ng;
  return o + total;
}

/* Writes a block whose 32 deltas (16-bit lanes, |d| < 2^15) are ordinary
 * or fill (fbits, delta 0): exactly zc_block_encode's bytes. Needs 64 bytes
 * of room past the planes (the caller's ZC_BLOCK_MAX_CODED). */
static inline __attribute__((always_inline)) size_t zc_x86_emit16(__m512i d, uint32_t fbits, uint8_t* out) {
  static const int8_t bytes[16] = {14, 12, 10, 8, 6, 4, 2, 0, 15, 13, 11, 9, 7, 5, 3, 1};
  if (fbits == 0xffffffffu) { /* every position fill: their deltas are 0 */
    out[0] = ZC_W_ALLFILL;
    return 1;
  }
  uint32_t neg = _mm512_movepi16_mask(d), pos = _mm512_cmpgt_epi16_mask(d, _mm512_setzero_si512());
  /* Low bytes then high bytes of sub-group k's magnitudes (reversed, as the
   * transpose wants) in lane k, then planes 0-7 and 8-15. */
  __m512i p = _mm512_gf2p8affine_epi64_epi8(_mm512_set1_epi64((long long)0x8040201008040201ull),
                                            _mm512_shuffle_epi8(_mm512_abs_epi16(d), zc_x86_lanes(bytes)), 0);
  /* Planes below each sub-group's highest non-zero one. */
  uint64_t m = _mm512_test_epi8_mask(p, p);
  m |= (m >> 1) & 0x7fff7fff7fff7fffull;
  m |= (m >> 2) & 0x3fff3fff3fff3fffull;
  m |= (m >> 4) & 0x0fff0fff0fff0fffull;
  m |= (m >> 8) & 0x00ff00ff00ff00ffull;
  int sw0 = __builtin_popcountll(m & 0xffff), sw1 = __builtin_popcountll(m & 0xffff0000ull);
  int sw2 = __builtin_popcountll(m & 0xffff00000000ull), sw3 = __builtin_popcountll(m >> 48);
  int W = sw0 > sw1 ? sw0 : sw1, W23 = sw2 > sw3 ? sw2 : sw3;
  W = W > W23 ? W : W23;
  int smode;
  size_t o = zc_x86_emit_head(W, neg, pos, fbits, out, &smode);
  if (W == 0) return o;
  out[o++] = (uint8_t)(sw0 | sw1 << 4);
  out[o++] = (uint8_t)(sw2 | sw3 << 4);
  if (smode == ZC_SMODE_PLANE) {
    memcpy(out + o, &neg, 4);
    o += 4;
  }
  if (fbits) {
    memcpy(out + o, &fbits, 4);
    o += 4;
  }
  _mm512_storeu_si512(out + o, _mm512_maskz_compress_epi8(m, p));
  return o + (size_t)(sw0 + sw1 + sw2 + sw3);
}

/* Deltas of 32 integers (|q| < 2^30) against the emitter's running value,
 * as 2 x 16 lanes; 1 when every one is below 2^15 in magnitude. */
static inline int zc_x86_deltas_zmm(const __m256i q[4], zc_emit_t* e, __m512i d[2]) {
  __m512i q0 = _mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1);
  __m512i q1 = _mm512_inserti64x4(_mm512_castsi256_si512(q[2]), q[3], 1);
  if (!e->have_prev) {
    e->base = e->prev = _mm512_cvtsi512_si32(q0);
    e->have_prev = 1;
  }
  d[0] = _mm512_sub_epi32(q0, _mm512_alignr_epi32(q0, _mm512_set1_epi32((int32_t)e->prev), 15));
  d[1] = _mm512_sub_epi32(q1, _mm512_alignr_epi32(q1, q0, 15));
  e->prev = _mm_extract_epi32(_mm512_extracti32x4_epi32(q1, 3), 3);
  __m512i m = _mm512_or_si512(_mm512_abs_epi32(d[0]), _mm512_abs_epi32(d[1]));
  return _mm512_test_epi32_mask(m, _mm512_set1_epi32((int32_t)0xffff8000u)) == 0;
}

/* Sum of 16 int32 lanes, in 64 bits. */
static inline int64_t zc_x86_reduce32(__m512i v) {
  return _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
                                                  _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))));
}

/* Signed deltas from magnitudes and a sign plane. */
static inline __m512i zc_x86_signed16(__m512i mag, uint32_t neg) {
  return _mm512_mask_sub_epi16(mag, neg, _mm512_setzero_si512(), mag);
}

/* Float32 values of a block parsed by zc_x86_parse16: q (|q| < 2^30) plus
 * the running sum of the deltas, as zc_x86_values_f32. */
static inline void zc_x86_values16_f32(__m512i mag, uint32_t neg, int32_t* q, const zc_grid_t* g, float divisor,
                                       uint32_t fbits, float fill, float* y) {
  const __m512 fv = _mm512_set1_ps(fill);
  const __m512 step = _mm512_set1_ps(g->step_f), div = _mm512_set1_ps(divisor);
  const __m512i zero = _mm512_setzero_si512();
  __m512i carry = _mm512_set1_epi32(*q);
  for (int h = 0; h < 2; h++) {
    __m512i m = _mm512_cvtepu16_epi32(h ? _mm512_extracti64x4_epi64(mag, 1) : _mm512_castsi512_si256(mag));
    m = _mm512_mask_sub_epi32(m, (__mmask16)(neg >> (16 * h)), zero, m);
    __m512i x = zc_x86_scan16(m, &carry);
    __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(x), step);
    if (divisor != 1.0f) r = _mm512_div_ps(r, div);
    r = _mm512_mask_blend_ps((__mmask16)(fbits >> (16 * h)), r, fv); /* fill is not divided */
    _mm512_storeu_ps(y + 16 * h, r);
  }
  *q = _mm512_cvtsi512_si32(carry);
}
#else
/* q (|q| < 2^30) plus the running sum of d, as float32 values. */
static inline void zc_x86_values_f32(const __m256i d[4], int32_t* q, const zc_grid_t* g, float divisor,
                                      uint32_t fbits, float fill, float* y) {
  __m256i carry = _mm256_set1_epi32(*q);
  const __m256 step = _mm256_set1_ps(g->step_f), div = _mm256_set1_ps(divisor), fv = _mm256_set1_ps(fill);
  for (int k = 0; k < 4; k++) {
    __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(zc_x86_scan(d[k], &carry)), step);
    if (divisor != 1.0f) r = _mm256_div_ps(r, div);
    if (fbits) /* fill is not divided */
      r = _mm256_blendv_ps(r, fv, _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_setzero_si256(),
                                                                       zc_x86_bits((fbits >> (8 * k)) & 0xff))));
    _mm256_storeu_ps(y + 8 * k, r);
  }
  *q = _mm256_cvtsi256_si32(carry);
}

#endif

/* The sum of 8 int32 lanes. */
static inline int32_t zc_x86_reduce_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
  return _mm_cvtsi128_si32(t);
}

/* Sum of 32 lanes (each below 2^24 in magnitude: no overflow). */
static inline int32_t zc_x86_sum(const __m256i d[4]) {
  return zc_x86_reduce_epi32(_mm256_add_epi32(_mm256_add_epi32(d[0], d[1]), _mm256_add_epi32(d[2], d[3])));
}

int ZC_X86_NAME(zc_chunk_compress)(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                           double fill, zc_emit_t* e) {
  if (dtype != zcclFloat32) return zc_chunk_compress_scalar(in, n, dtype, g, has_fill, fill, e);
  const float* x = in;
  size_t b = 0;
  for (; b + ZC_BLOCK <= n; b += ZC_BLOCK) {
    zc_x86_ahead_block(x + b);
    if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
    __m256i q[4], d[4];
    if (has_fill && zc_x86_all_equal_f32(x + b, (float)fill)) {
      e->out[e->o++] = ZC_W_ALLFILL; /* land, missing data: one byte */
      continue;
    }
#if ZC_X86_AVX512
    /* Blocks mixing data and fill (coasts) stay on the vector path too. */
    uint32_t fbits;
    if (zc_x86_quant_held_f32(x + b, g, has_fill, (float)fill, q, &fbits)) {
      __m512i dz[2];
      if (fbits) {
        zc_x86_deltas_held(q, fbits, e, d);
        e->o += zc_x86_emit_clean(d, fbits, e->out + e->o);
      } else if (zc_x86_deltas_zmm(q, e, dz)) { /* |d| < 2^15: the whole block in 16-bit lanes */
        e->o += zc_x86_emit16(_mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(dz[0])),
                                                 _mm512_cvtepi32_epi16(dz[1]), 1),
                              0, e->out + e->o);
      } else {
        d[0] = _mm512_castsi512_si256(dz[0]);
        d[1] = _mm512_extracti64x4_epi64(dz[0], 1);
        d[2] = _mm512_castsi512_si256(dz[1]);
        d[3] = _mm512_extracti64x4_epi64(dz[1], 1);
        e->o += zc_x86_emit_clean(d, 0, e->out + e->o);
      }
    } else {
#else
    uint32_t fbits;
    if (zc_x86_quant_held_f32(x + b, g, has_fill, (float)fill, q, &fbits)) {
      if (fbits) zc_x86_deltas_held(q, fbits, e, d);
      else zc_x86_deltas(q, e, d);
      e->o += zc_x86_emit_clean(d, fbits, e->out + e->o);
    } else {
#endif
      int rc = zc_chunk_compress_scalar(x + b, ZC_BLOCK, dtype, g, has_fill, fill, e);
      if (rc != 0) return rc;
    }
  }
  return b < n ? zc_chunk_compress_scalar(x + b, n - b, dtype, g, has_fill, fill, e) : 0;
}

#if !ZC_X86_AVX512
/* The hop's 16-bit lane blocks (W <= 14, no extension byte), parsed and
 * written without a branch that depends on the data: widths and sign modes
 * change from block to block on real fields, and the branches on them
 * (byte or 16-bit lanes, sign plane or not, planes past 8 or not) cost more
 * than the work (SALT REL 1e-3 hsum: 1.56 -> 2.55 GB/s). Positions 0-15
 * are register 0, 16-31 register 1; sub-group k's planes are 128-bit lane
 * k & 1 of register k / 2, planes 0-7 in its low 8 bytes and 8-15 in its
 * high 8 bytes. */

/* Readable bytes a block of the 16-bit form needs at its start: head (at
 * most 12, with a fill bitmap) plus the last sub-group's offset (42) and a
 * 16-byte load. */
#define ZC_X86_READ16 80

/* A block's head at p (p[0 .. ZC_X86_READ16) readable): its bytes, with
 * the sub-group widths (byte k: sw[k]), the planes' offset, the sign bits
 * and (allow_fill, a constant) the fill bitmap; 0 when the 16-bit form does
 * not take it (W > 14, exceptions, fill without allow_fill, or a head
 * zc_block_decode rejects: other paths judge those). The extension byte is
 * read without a branch: coasts and open sea alternate block by block. */
static inline __attribute__((always_inline)) int zc_x86_head16(const uint8_t* p, int allow_fill, uint32_t* sws,
                                                               int* po, uint32_t* neg, uint32_t* fb) {
  const uint32_t ones = 0x01010101u;
  uint32_t W = p[0] & 63, smode = p[0] >> 6, nb, fv, ext = allow_fill && smode == ZC_SMODE_EXT, e = p[1];
  if (ext) smode = e & 3;
  uint16_t wb;
  memcpy(&wb, p + 1 + ext, 2);
  uint32_t s = W ? _pdep_u32(wb, 0x0f0f0f0fu) : 0;
  int o = (int)(1 + ext) + (W ? 2 : 0);
  memcpy(&nb, p + o, 4);
  *neg = smode == ZC_SMODE_PLANE ? nb : (smode == ZC_SMODE_NEG ? 0xffffffffu : 0);
  o += smode == ZC_SMODE_PLANE ? 4 : 0;
  memcpy(&fv, p + o, 4);
  *fb = ext ? fv : 0;
  o += ext ? 4 : 0;
  /* zc_block_decode's checks: no sub-group wider than W (bit 7 of byte k
   * set when sw[k] > W) and one at W (a zero byte in eq); W 0 only with
   * positive signs; an extension byte that marks fill (a non-empty bitmap)
   * and nothing else. */
  uint32_t eq = s ^ (W * ones);
  int bad = W ? ((s + (127 - W) * ones) & 0x80808080u) != 0 || ((eq - ones) & ~eq & 0x80808080u) == 0
              : smode != ZC_SMODE_POS;
  bad |= ext && ((e & 0xf0) || (e & 3) == ZC_SMODE_EXT || (e & (ZC_EXT_EXC | ZC_EXT_FILL)) != ZC_EXT_FILL || fv == 0);
  if (W > 14 || smode == ZC_SMODE_EXT || bad) return 0;
  *sws = s;
  *po = o;
  return o + (int)((s * ones) >> 24);
}

/* The block's 32 magnitudes as 16-bit lanes from its planes at p + o
 * (sub-group widths in s's bytes): each sub-group's 16 plane bytes are
 * loaded whole, the ones past its width masked off, and turned. */
static inline __attribute__((always_inline)) void zc_x86_planes16(const uint8_t* p, int o, uint32_t s, __m256i x[2],
                                                                   uint32_t nzp[2]) {
  const __m256i idx = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6,
                                       7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m256i k01 = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                       1, 1, 1, 1, 1, 1, 1);
  const __m256i k23 = _mm256_add_epi8(k01, _mm256_set1_epi8(2));
  /* Byte j of the low half and byte j of the high half: value j's 16 bits. */
  const __m256i il = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0, 8, 1, 9, 2, 10, 3,
                                      11, 4, 12, 5, 13, 6, 14, 7, 15);
  const uint32_t pre = s * 0x01010100u; /* byte k: the planes before sub-group k */
  const uint8_t* q = p + o;
  __m256i sv = _mm256_set1_epi32((int)s);
  __m256i v0 = _mm256_loadu2_m128i((const __m128i*)(q + ((pre >> 8) & 0xff)), (const __m128i*)q);
  __m256i v1 = _mm256_loadu2_m128i((const __m128i*)(q + (pre >> 24)), (const __m128i*)(q + ((pre >> 16) & 0xff)));
  v0 = _mm256_and_si256(v0, _mm256_cmpgt_epi8(_mm256_shuffle_epi8(sv, k01), idx));
  v1 = _mm256_and_si256(v1, _mm256_cmpgt_epi8(_mm256_shuffle_epi8(sv, k23), idx));
  if (nzp) { /* which plane bytes are non-zero: bits 16k.. for sub-group k */
    nzp[0] = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, _mm256_setzero_si256()));
    nzp[1] = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v1, _mm256_setzero_si256()));
  }
  x[0] = _mm256_shuffle_epi8(zc_x86_transpose8x8(v0), il);
  x[1] = _mm256_shuffle_epi8(zc_x86_transpose8x8(v1), il);
}

/* 16-bit lane j all ones where bit j of bits is set. */
static inline __m256i zc_x86_signs16(uint32_t bits) {
  const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                        (short)0x8000);
  return _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16((short)bits), bit), bit);
}

/* Signed deltas from magnitudes x and sign bits neg, in place. */
static inline void zc_x86_apply_signs16(__m256i x[2], uint32_t neg) {
  __m256i m0 = zc_x86_signs16(neg), m1 = zc_x86_signs16(neg >> 16);
  x[0] = _mm256_sub_epi16(_mm256_xor_si256(x[0], m0), m0);
  x[1] = _mm256_sub_epi16(_mm256_xor_si256(x[1], m1), m1);
}

/* The width of 16 plane bytes from their non-zero bits (0 when none). */
static inline int zc_x86_width16(uint32_t nonzero) { return 63 - __builtin_clzll((uint64_t)nonzero << 1 | 1); }

/* Writes a block of 32 16-bit deltas (|d| < 2^15; fill positions f, not
 * all 32, with delta 0), positions as zc_x86_planes16 reads them: exactly
 * zc_x86_emit_clean's bytes for the same deltas. Stores 16 bytes past the
 * block's end. */
static inline __attribute__((always_inline)) size_t zc_x86_emit16(const __m256i r[2], uint32_t f, uint8_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i lohi = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12,
                                        14, 1, 3, 5, 7, 9, 11, 13, 15);
  /* Saturated to bytes (sign and zero kept), in position order. */
  __m256i p8 = _mm256_permute4x64_epi64(_mm256_packs_epi16(r[0], r[1]), 0xd8);
  uint32_t neg = (uint32_t)_mm256_movemask_epi8(p8);
  uint32_t pos = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(p8, zero)) & ~neg;
  __m256i P0 = zc_x86_transpose8x8(_mm256_shuffle_epi8(_mm256_abs_epi16(r[0]), lohi));
  __m256i P1 = zc_x86_transpose8x8(_mm256_shuffle_epi8(_mm256_abs_epi16(r[1]), lohi));
  uint32_t nz0 = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(P0, zero));
  uint32_t nz1 = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(P1, zero));
  int sw0 = zc_x86_width16(nz0 & 0xffff), sw1 = zc_x86_width16(nz0 >> 16);
  int sw2 = zc_x86_width16(nz1 & 0xffff), sw3 = zc_x86_width16(nz1 >> 16);
  int W = zc_x86_width16((nz0 | nz0 >> 16 | nz1 | nz1 >> 16) & 0xffff), smode;
  /* One byte without fill, two with (six when W is 0: the bitmap too). */
  size_t o = zc_x86_emit_head(W, neg, pos, f, out, &smode);
  out[o] = (uint8_t)(sw0 | sw1 << 4); /* W <= 15: no width base */
  out[o + 1] = (uint8_t)(sw2 | sw3 << 4);
  o += W ? 2 : 0;
  memcpy(out + o, &neg, 4);
  o += smode == ZC_SMODE_PLANE ? 4 : 0;
  memcpy(out + o, &f, 4);
  o += W && f ? 4 : 0;
  /* Overlapping stores: each overwrites the previous one's zero planes. */
  _mm_storeu_si128((__m128i*)(out + o), _mm256_castsi256_si128(P0));
  o += (size_t)sw0;
  _mm_storeu_si128((__m128i*)(out + o), _mm256_extracti128_si256(P0, 1));
  o += (size_t)sw1;
  _mm_storeu_si128((__m128i*)(out + o), _mm256_castsi256_si128(P1));
  o += (size_t)sw2;
  _mm_storeu_si128((__m128i*)(out + o), _mm256_extracti128_si256(P1, 1));
  return o + (size_t)sw3;
}

/* in + o, or a zero-padded copy of its last bytes when fewer than
 * ZC_X86_READ16 remain (the 16-bit form reads that far). */
static inline const uint8_t* zc_x86_readable16(const uint8_t* in, size_t size, size_t o, uint8_t pad[ZC_X86_READ16]) {
  if (size - o >= ZC_X86_READ16) return in + o;
  memset(pad, 0, ZC_X86_READ16);
  memcpy(pad, in + o, size - o);
  return pad;
}

/* A block's 32 16-bit deltas summed pairwise into 8 32-bit lanes (each
 * below 2^17 in magnitude): what its running value moves by, reduced later. */
static inline __m256i zc_x86_lanesum16(const __m256i d[2]) {
  return _mm256_madd_epi16(_mm256_add_epi16(d[0], d[1]), _mm256_set1_epi16(1));
}

/* At the chunk's first ordinary position (no e->prev yet): the result's
 * base is before plus the block's first delta, which becomes 0. */
static inline void zc_x86_base16(zc_emit_t* e, int64_t before, __m256i* d0) {
  if (e->have_prev) return;
  e->base = (int64_t)((uint64_t)before + (uint64_t)(int64_t)(int16_t)_mm256_extract_epi16(*d0, 0));
  e->have_prev = 1;
  *d0 = _mm256_insert_epi16(*d0, 0, 0);
}

/* Whether a block parsed by zc_x86_head16/zc_x86_planes16 (sub-group widths
 * sw, non-zero plane bytes nzp, magnitudes x, sign bits neg) is what the
 * encoder writes for its deltas: every sub-group's top plane non-zero and,
 * with a sign plane, signs on non-zero deltas only and both signs present. */
static inline int zc_x86_canon16(uint32_t sw, const uint32_t nzp[2], const __m256i x[2], int plane, uint32_t neg) {
  uint32_t widths = (uint32_t)zc_x86_width16(nzp[0] & 0xffff) | (uint32_t)zc_x86_width16(nzp[0] >> 16) << 8 |
                    (uint32_t)zc_x86_width16(nzp[1] & 0xffff) << 16 | (uint32_t)zc_x86_width16(nzp[1] >> 16) << 24;
  if (widths != sw) return 0;
  if (!plane) return 1; /* the NEG mode's W > 0: some delta is non-zero */
  __m256i p8 = _mm256_permute4x64_epi64(_mm256_packs_epi16(x[0], x[1]), 0xd8); /* magnitudes < 2^15 */
  uint32_t nz = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(p8, _mm256_setzero_si256()));
  return (neg & ~nz) == 0 && neg != 0 && (nz & ~neg) != 0;
}

/* The block at in + o (o <= size) as 32 signed 16-bit deltas (positions as
 * zc_x86_planes16 gives them) when the 16-bit form takes it and it fits
 * size: its bytes, else 0 (nothing read past size). With canon, also
 * whether the block is canonical (zc_x86_canon16). With fb (the stream
 * declares fill), blocks with a fill bitmap are taken too, *fb their fill
 * positions, provided those hold delta 0 (else 0: zc_block_decode rejects
 * the block). */
static inline __attribute__((always_inline)) int zc_x86_parse16(const uint8_t* in, size_t size, size_t o,
                                                                __m256i d[2], int* canon, uint32_t* fb) {
  uint8_t pad[ZC_X86_READ16];
  const uint8_t* p = zc_x86_readable16(in, size, o, pad);
  uint32_t sw = 0, neg = 0, f = 0, nzp[2];
  int po = 0;
  int used = zc_x86_head16(p, fb != NULL, &sw, &po, &neg, &f);
  if (used == 0 || (size_t)used > size - o) return 0;
  zc_x86_planes16(p, po, sw, d, canon ? nzp : NULL);
  if (canon) *canon = zc_x86_canon16(sw, nzp, d, p[0] >> 6 == ZC_SMODE_PLANE, neg);
  if (fb) {
    __m256i p8 = _mm256_permute4x64_epi64(_mm256_packs_epi16(d[0], d[1]), 0xd8); /* magnitudes < 2^15 */
    if (~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(p8, _mm256_setzero_si256())) & f) return 0;
    *fb = f;
  }
  zc_x86_apply_signs16(d, neg);
  return used;
}

/* A block's deltas as 4 x 8 32-bit lanes with its fill bitmap (has_fill:
 * the stream declares fill): the 16-bit form widened when it takes the
 * block, else zc_x86_parse_clean's. Returns the bytes used, 0 (scalar) or
 * -1 (malformed) as zc_x86_parse_clean. */
static inline __attribute__((always_inline)) int zc_x86_parse_wide(const uint8_t* in, size_t size, size_t o,
                                                                   int has_fill, __m256i d[4], uint32_t* fb) {
  __m256i x[2];
  *fb = 0;
  int used = has_fill ? zc_x86_parse16(in, size, o, x, NULL, fb) : zc_x86_parse16(in, size, o, x, NULL, NULL);
  if (used == 0) return zc_x86_parse_clean(in + o, size - o, has_fill, d, fb);
  d[0] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(x[0]));
  d[1] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(x[0], 1));
  d[2] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(x[1]));
  d[3] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(x[1], 1));
  return used;
}
#else
/* The AVX-512 level has its own 16-bit form (with fill) in decompression. */
static inline __attribute__((always_inline)) int zc_x86_parse_wide(const uint8_t* in, size_t size, size_t o,
                                                                   int has_fill, __m256i d[4], uint32_t* fb) {
  return zc_x86_parse_clean(in + o, size - o, has_fill, d, fb);
}
#endif

/* The hop's block that its fill-free 16-bit paths did not take: without
 * fill it is wide, has exceptions or is out of step (after one), so the
 * 32-bit parser without a 16-bit try first; with fill, zc_x86_parse_wide. */
static inline __attribute__((always_inline)) int zc_x86_parse_rest(const uint8_t* in, size_t size, size_t o,
                                                                   int has_fill, __m256i d[4], uint32_t* fb) {
  return has_fill ? zc_x86_parse_wide(in, size, o, 1, d, fb) : zc_x86_parse_clean(in + o, size - o, 0, d, fb);
}

/* A chunk's float32 values; has_fill (the stream declares fill) is a
 * constant in each of the two copies, so a stream without fill tests for
 * none. */
static inline __attribute__((always_inline)) int zc_x86_decompress_f32(const zc_header_t* h, const zc_grid_t* g,
                                                                       const uint8_t* chunk, size_t bytes, size_t n,
                                                                       float* y, const int has_fill) {
  zc_parse_t p;
  if (zc_parse_begin(&p, chunk, bytes, n, h->dtype, has_fill) != 0) return -1;
  float divisor = (float)h->divisor;
  while (p.left > 0) {
    int used = 0;
    _mm_prefetch((const char*)(p.in + p.o) + 256, _MM_HINT_T0); /* the stream (slower), and where the values go */
    zc_x86_ahead_block(y);
    /* |q| < 2^30 and 32 deltas below 2^24: the running sum fits 32 bits. */
    if (p.left >= ZC_BLOCK && has_fill && p.o < p.size && p.in[p.o] == ZC_W_ALLFILL) {
      const __m256 fv = _mm256_set1_ps((float)h->fill);
      for (int k = 0; k < 4; k++) _mm256_storeu_ps(y + 8 * k, fv);
      p.o++;
      p.left -= ZC_BLOCK;
      y += ZC_BLOCK;
      continue;
    }
    if (p.left >= ZC_BLOCK && p.o < p.size && p.in[p.o] == 0) { /* W 0, no sign plane: every value the running one */
      float r = (float)p.q * g->step_f;
      if (h->divisor > 1) r = r / divisor;
      const __m256 rv = _mm256_set1_ps(r);
      for (int k = 0; k < 4; k++) _mm256_storeu_ps(y + 8 * k, rv);
      p.o++;
      p.left -= ZC_BLOCK;
      y += ZC_BLOCK;
      continue;
    }
#if ZC_X86_AVX512
    if (p.left >= ZC_BLOCK && p.q < (1 << 30) && p.q > -(1 << 30)) {
      __m512i mag;
      uint32_t neg, fb;
      used = zc_x86_parse16(p.in + p.o, p.size - p.o, has_fill, 16, &mag, &neg, &fb, NULL);
      if (used < 0) return -1;
      if (used > 0) {
        int32_t q = (int32_t)p.q;
        zc_x86_values16_f32(mag, neg, &q, g, divisor, fb, (float)h->fill, y);
        p.o += (size_t)used;
        p.q = q;
        p.left -= ZC_BLOCK;
        y += ZC_BLOCK;
        continue;
      }
    }
#endif
    if (p.left >= ZC_BLOCK && p.q < (1 << 30) && p.q > -(1 << 30)) {
      /* AVX2: W <= 14 (fill or not) in the hop's branch-free 16-bit form. */
      __m256i d[4];
      uint32_t fb;
      used = zc_x86_parse_wide(p.in, p.size, p.o, has_fill, d, &fb);
      if (used < 0) return -1;
      if (used > 0) {
        int32_t q = (int32_t)p.q;
        zc_x86_values_f32(d, &q, g, divisor, has_fill ? fb : 0, (float)h->fill, y);
        p.o += (size_t)used;
        p.q = q;
        p.left -= ZC_BLOCK;
        y += ZC_BLOCK;
        continue;
      }
    }
    int nv = zc_parse_block_values(&p, h, g, y);
    if (nv < 0) return -1;
    y += nv;
  }
  return p.o == bytes ? 0 : -1;
}

int ZC_X86_NAME(zc_chunk_decompress)(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                             size_t n, void* out) {
  if (h->dtype != zcclFloat32) return zc_chunk_decompress_scalar(h, g, chunk, bytes, n, out);
  return h->has_fill ? zc_x86_decompress_f32(h, g, chunk, bytes, n, out, 1)
                     : zc_x86_decompress_f32(h, g, chunk, bytes, n, out, 0);
}

/* Moves a parser past a block parsed on the vector path: its running value
 * by the block's deltas, its cursor by the block's bytes. */
static inline void zc_x86_advance(zc_parse_t* p, const __m256i d[4], int used) {
  p->q += zc_x86_sum(d);
  p->o += (size_t)used;
  p->left -= ZC_BLOCK;
}

#if !ZC_X86_AVX512
/* zc_hop_values's SUM of a block of this rank's integers q (no fill) and
 * b's next block, when both are narrow: the result's deltas are q's deltas
 * plus b's (q's first one taken against e->prev - pb->q, the value q would
 * have had for the sum to be in step), on 16-bit lanes (|q's deltas| <
 * 2^14, b's W <= 14), so neither b's running values nor the sum's are
 * formed. The caller has checked that |q|, |pb->q| and |e->prev| are below
 * 2^29 (32-bit deltas) and that the output has room. Returns b's bytes
 * used, 0 when the pair is not taken (nothing moved; a malformed b is
 * judged by the caller's other path). */
static inline __attribute__((always_inline)) int zc_x86_hop_values_narrow(const __m256i q[4], zc_parse_t* pb,
                                                                          zc_emit_t* e) {
  __m256i db[2], dr[2];
  int used = zc_x86_parse16(pb->in, pb->size, pb->o, db, NULL, NULL);
  if (used == 0) return 0;
  int32_t prev = e->have_prev ? (int32_t)(e->prev - pb->q) : _mm256_cvtsi256_si32(q[0]);
  __m256i dq[4], big = _mm256_setzero_si256();
  int32_t qlast = zc_x86_deltas_from(q, prev, dq);
  for (int k = 0; k < 4; k++) big = _mm256_max_epu32(big, _mm256_abs_epi32(dq[k])); /* |INT_MIN| reads as 2^31 */
  /* Every lane below 2^14: min(lane, 2^14 - 1) is the lane. */
  __m256i lim = _mm256_set1_epi32((1 << 14) - 1);
  if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_min_epu32(big, lim), big)) != -1) return 0;
  /* In position order: packs interleave 128-bit lanes, the permutes undo it. */
  dr[0] = _mm256_add_epi16(_mm256_permute4x64_epi64(_mm256_packs_epi32(dq[0], dq[1]), 0xd8), db[0]);
  dr[1] = _mm256_add_epi16(_mm256_permute4x64_epi64(_mm256_packs_epi32(dq[2], dq[3]), 0xd8), db[1]);
  int64_t bsum = zc_x86_reduce_epi32(zc_x86_lanesum16(db));
  zc_x86_base16(e, (int64_t)((uint64_t)prev + (uint64_t)pb->q), &dr[0]);
  e->o += zc_x86_emit16(dr, 0, e->out + e->o);
  pb->q = (int64_t)((uint64_t)pb->q + (uint64_t)bsum);
  pb->o += (size_t)used;
  pb->left -= ZC_BLOCK;
  e->prev = (int64_t)((uint64_t)(int64_t)qlast + (uint64_t)pb->q);
  return used;
}

/* SUM of block pairs on 16-bit lanes while both blocks are narrow (W <= 14:
 * sums within 16 bits) and the result is in step with the inputs (its
 * running value pa->q + pb->q, so the sum's deltas are the deltas' sums; or
 * no ordinary position yet), as the AVX-512 kernel does. Stops at the first
 * pair it does not take, with the cursors and running values moved past
 * what it took; 0 or a ZC_RC_ error. */
static inline __attribute__((always_inline)) int zc_x86_hop_w16_run(zc_parse_t* pa, zc_parse_t* pb, zc_emit_t* e) {
  const size_t sa = pa->size, sb = pb->size, ecap = e->cap, need = ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4;
  size_t oa = pa->o, ob = pb->o, left = pa->left, eo = e->o;
  uint8_t* out = e->out;
  /* Deltas summed since entry, in 32-bit lanes: a chunk (<= 2^16 values)
   * adds at most 2^16 / 8 x 2 x 2^15 = 2^28 to a lane. */
  __m256i acc_a = _mm256_setzero_si256(), acc_b = acc_a;
  int rc = 0, took = 0;
  while (left >= ZC_BLOCK) {
    if (ecap - eo < need) {
      rc = ZC_RC_SPACE;
      break;
    }
    int za = oa < sa && pa->in[oa] == 0, zb = ob < sb && pb->in[ob] == 0;
    if (za && zb && e->have_prev) {
      out[eo++] = 0;
      oa++;
      ob++;
      left -= ZC_BLOCK;
      took = 1;
      continue;
    }
    __m256i da[2], db[2];
    if ((za || zb) && e->have_prev) {
      /* One block all zero deltas (land in one input, sea in the other):
       * the sum is the other block, byte for byte when that one is
       * canonical (what the encoder writes for its deltas). */
      const uint8_t* in = za ? pb->in : pa->in;
      size_t size = za ? sb : sa, o = za ? ob : oa;
      int canon = 0, u = zc_x86_parse16(in, size, o, da, &canon, NULL);
      if (u > 0 && canon) {
        if (size - o >= 64) {
          _mm256_storeu_si256((__m256i*)(out + eo), _mm256_loadu_si256((const __m256i*)(in + o)));
          _mm256_storeu_si256((__m256i*)(out + eo + 32), _mm256_loadu_si256((const __m256i*)(in + o + 32)));
        } else {
          memcpy(out + eo, in + o, (size_t)u);
        }
        __m256i t = zc_x86_lanesum16(da);
        if (za) acc_b = _mm256_add_epi32(acc_b, t);
        else acc_a = _mm256_add_epi32(acc_a, t);
        eo += (size_t)u;
        oa += za ? 1 : (size_t)u;
        ob += za ? (size_t)u : 1;
        left -= ZC_BLOCK;
        took = 1;
        continue;
      }
    }
    int ua = zc_x86_parse16(pa->in, sa, oa, da, NULL, NULL);
    int ub = ua ? zc_x86_parse16(pb->in, sb, ob, db, NULL, NULL) : 0;
    if (ua == 0 || ub == 0) break;
    __m256i dr[2] = {_mm256_add_epi16(da[0], db[0]), _mm256_add_epi16(da[1], db[1])};
    acc_a = _mm256_add_epi32(acc_a, zc_x86_lanesum16(da));
    acc_b = _mm256_add_epi32(acc_b, zc_x86_lanesum16(db));
    zc_x86_base16(e, (int64_t)((uint64_t)pa->q + (uint64_t)pb->q), &dr[0]);
    eo += zc_x86_emit16(dr, 0, out + eo);
    oa += (size_t)ua;
    ob += (size_t)ub;
    left -= ZC_BLOCK;
    took = 1;
  }
  pa->q = (int64_t)((uint64_t)pa->q + (uint64_t)zc_x86_reduce_epi32(acc_a));
  pb->q = (int64_t)((uint64_t)pb->q + (uint64_t)zc_x86_reduce_epi32(acc_b));
  if (took) e->prev = (int64_t)((uint64_t)pa->q + (uint64_t)pb->q);
  pa->o = oa;
  pb->o = ob;
  pa->left = pb->left = left;
  e->o = eo;
  return rc;
}

/* Lanes of the 32-lane vector (cur: lanes 16k .. 16k+15) moved up by K (1,
 * 2, 4 or 8, a constant), the lanes below K taking prev's top lanes (the
 * register before, or what enters below lane 0). */
#define ZC_X86_UP16(cur, prev, K)                                                         \
  ((K) == 8 ? _mm256_permute2x128_si256((prev), (cur), 0x21)                               \
            : _mm256_alignr_epi8((cur), _mm256_permute2x128_si256((prev), (cur), 0x21), 16 - 2 * (K)))

/* One step of the last-ordinary scan: where a lane holds no ordinary value
 * yet (m 0), it takes the one K lanes below. */
#define ZC_X86_LAST16(v, m, vin, K)                                                        \
  do {                                                                                    \
    __m256i s1_ = ZC_X86_UP16(v[1], v[0], K), s0_ = ZC_X86_UP16(v[0], vin, K);              \
    __m256i n1_ = ZC_X86_UP16(m[1], m[0], K), n0_ = ZC_X86_UP16(m[0], ones, K);             \
    v[1] = _mm256_blendv_epi8(s1_, v[1], m[1]);                                           \
    v[0] = _mm256_blendv_epi8(s0_, v[0], m[0]);                                           \
    m[1] = _mm256_or_si256(m[1], n1_);                                                    \
    m[0] = _mm256_or_si256(m[0], n0_);                                                    \
  } while (0)

/* Inclusive prefix sums of 32 16-bit lanes (wrapping). */
static inline void zc_x86_prefix16(__m256i x[2]) {
  const __m256i top = _mm256_set1_epi16(0x0f0e); /* word 7 of each half */
  for (int k = 0; k < 2; k++) {
    x[k] = _mm256_add_epi16(x[k], _mm256_slli_si256(x[k], 2));
    x[k] = _mm256_add_epi16(x[k], _mm256_slli_si256(x[k], 4));
    x[k] = _mm256_add_epi16(x[k], _mm256_slli_si256(x[k], 8));
    __m256i t = _mm256_shuffle_epi8(x[k], top); /* each half's total */
    x[k] = _mm256_add_epi16(x[k], _mm256_permute2x128_si256(t, t, 0x08));
  }
  __m256i t = _mm256_shuffle_epi8(x[0], top);
  x[1] = _mm256_add_epi16(x[1], _mm256_permute2x128_si256(t, t, 0x11)); /* lanes 0-15's total */
}

/* SUM of a block pair where fill positions break the track (coasts: fill in
 * either input is fill in the result) or the result lags its inputs (after
 * a block ending in fill), on 16-bit lanes: both blocks in the 16-bit form
 * (fill bitmaps allowed), the chunk's base set (e->have_prev), not every
 * position fill. With lag = pa->q + pb->q - e->prev and s = the deltas'
 * sums, an ordinary position i's delta is lag + s[0..i] less the same at
 * the ordinary position before it (P[-1] = -lag): a prefix sum and a scan
 * for the last ordinary lane, exact in 16 bits while sum|s| + |lag| <
 * 2^15. Returns 1 when taken, 0 when not (nothing moved) or ZC_RC_SPACE.
 * Not inlined: inside zc_chunk_hop it slowed the 16-bit run of streams
 * without fill by 4% (levitus TEMP REL 1e-4 hsum 4.05 -> 3.87 GB/s). */
static __attribute__((noinline)) int zc_x86_hop_coast16(zc_parse_t* pa, zc_parse_t* pb, zc_emit_t* e) {
  const int64_t before = (int64_t)((uint64_t)pa->q + (uint64_t)pb->q);
  const int64_t lag = (int64_t)((uint64_t)before - (uint64_t)e->prev);
  if (lag >= (1 << 14) || lag <= -(1 << 14)) return 0;
  __m256i da[2], db[2];
  uint32_t fa = 0, fb = 0;
  int ua = zc_x86_parse16(pa->in, pa->size, pa->o, da, NULL, &fa);
  int ub = ua ? zc_x86_parse16(pb->in, pb->size, pb->o, db, NULL, &fb) : 0;
  uint32_t f = fa | fb;
  if (ub == 0 || f == 0xffffffffu) return 0; /* not 16-bit; or all fill (the 32-bit path's byte) */
  if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
  const __m256i one16 = _mm256_set1_epi16(1), ones = _mm256_set1_epi32(-1);
  __m256i p[2] = {_mm256_add_epi16(da[0], db[0]), _mm256_add_epi16(da[1], db[1])}; /* |s| < 2^15 */
  /* sum |s| over the block, in 32-bit lanes: every segment sum below it. */
  int32_t tot = zc_x86_reduce_epi32(_mm256_madd_epi16(
      _mm256_add_epi16(_mm256_abs_epi16(_mm256_srai_epi16(p[0], 1)), _mm256_abs_epi16(_mm256_srai_epi16(p[1], 1))),
      one16));
  if (2 * (int64_t)tot + 64 + (lag < 0 ? -lag : lag) >= (1 << 15)) return 0;
  __m256i m[2] = {_mm256_andnot_si256(zc_x86_signs16(f), ones), _mm256_andnot_si256(zc_x86_signs16(f >> 16), ones)};
  zc_x86_prefix16(p);
  /* v: P at ordinary lanes, then each lane the last ordinary P at or below
   * it (-lag below lane 0). */
  const __m256i vin = _mm256_set1_epi16((short)-lag);
  __m256i v[2] = {p[0], p[1]};
  ZC_X86_LAST16(v, m, vin, 1);
  ZC_X86_LAST16(v, m, vin, 2);
  ZC_X86_LAST16(v, m, vin, 4);
  ZC_X86_LAST16(v, m, vin, 8);
  /* Lanes with no ordinary lane in the 16 at or below them: the lane 16
   * below's (below lane 0: -lag). */
  v[0] = _mm256_blendv_epi8(vin, v[0], m[0]);
  v[1] = _mm256_blendv_epi8(v[0], v[1], m[1]);
  /* The delta at an ordinary lane: its P less the last ordinary P below it. */
  __m256i fm0 = zc_x86_signs16(f), fm1 = zc_x86_signs16(f >> 16);
  __m256i dr[2] = {_mm256_andnot_si256(fm0, _mm256_sub_epi16(p[0], ZC_X86_UP16(v[0], vin, 1))),
                   _mm256_andnot_si256(fm1, _mm256_sub_epi16(p[1], ZC_X86_UP16(v[1], v[0], 1)))};
  int16_t last = (int16_t)_mm256_extract_epi16(v[1], 15); /* P at the block's last ordinary lane */
  e->o += zc_x86_emit16(dr, f, e->out + e->o);
  e->prev = (int64_t)((uint64_t)before + (uint64_t)(int64_t)last);
  pa->q = (int64_t)((uint64_t)pa->q + (uint64_t)(int64_t)zc_x86_reduce_epi32(zc_x86_lanesum16(da)));
  pb->q = (int64_t)((uint64_t)pb->q + (uint64_t)(int64_t)zc_x86_reduce_epi32(zc_x86_lanesum16(db)));
  pa->o += (size_t)ua;
  pb->o += (size_t)ub;
  pa->left -= ZC_BLOCK;
  pb->left -= ZC_BLOCK;
  return 1;
}
#undef ZC_X86_LAST16
#undef ZC_X86_UP16
#endif

#if ZC_X86_AVX512
/* SUM of block pairs on 16-bit lanes while both blocks are narrow (W <= 14:
 * sums below 2^15) and the result is in step with the inputs (*sync; or no
 * ordinary position yet): see zc_chunk_hop. Works on local copies of the
 * cursors (stores of output bytes may alias anything), stops at the first
 * pair it does not take; 0 or a ZC_RC_ error. */
static inline __attribute__((always_inline)) int zc_x86_hop16_run(zc_parse_t* pa, zc_parse_t* pb, zc_emit_t* e,
                                                                  __m512i* acc_a, __m512i* acc_b, int* sync) {
  const __m512i zero = _mm512_setzero_si512(), ones = _mm512_set1_epi16(1);
  const uint8_t *ia = pa->in, *ib = pb->in;
  const size_t sa = pa->size, sb = pb->size, ecap = e->cap, need = ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4;
  size_t oa = pa->o, ob = pb->o, left = pa->left, eo = e->o;
  uint8_t* out = e->out;
  __m512i aa = *acc_a, ab = *acc_b;
  int rc = 0;
  while (left >= ZC_BLOCK) {
    if (oa < sa && ob < sb && ia[oa] == 0 && ib[ob] == 0) {
      /* Both blocks all zero deltas (land, calm): so is the sum. */
      if (ecap - eo < need) {
        rc = ZC_RC_SPACE;
        break;
      }
      if (!e->have_prev) {
        e->base = (int64_t)((uint64_t)pa->q + (uint64_t)pb->q);
        e->have_prev = 1;
        *sync = 1;
      }
      out[eo++] = 0;
      oa++;
      ob++;
      left -= ZC_BLOCK;
      continue;
    }
    int za = oa < sa && ia[oa] == 0, zb = ob < sb && ib[ob] == 0;
    if ((za || zb) && e->have_prev) {
      /* One block all zero deltas: the sum is the other block, byte for
       * byte when that one is canonical (what the encoder writes). */
      __m512i m;
      uint32_t ng, f;
      int canon = 0;
      int u = za ? zc_x86_parse16(ib + ob, sb - ob, 0, 14, &m, &ng, &f, &canon)
                 : zc_x86_parse16(ia + oa, sa - oa, 0, 14, &m, &ng, &f, &canon);
      if (u < 0) {
        rc = ZC_RC_MALFORMED;
        break;
      }
      if (u > 0 && canon) {
        if (ecap - eo < need) {
          rc = ZC_RC_SPACE;
          break;
        }
        __m512i t = _mm512_madd_epi16(zc_x86_signed16(m, ng), ones);
        if (za) ab = _mm512_add_epi32(ab, t);
        else aa = _mm512_add_epi32(aa, t);
        _mm512_storeu_si512(out + eo, _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, (unsigned)u), za ? ib + ob : ia + oa));
        eo += (size_t)u;
        oa += za ? 1 : (size_t)u;
        ob += za ? (size_t)u : 1;
        left -= ZC_BLOCK;
        continue;
      }
    }
    __m512i ma, mb = zero;
    uint32_t na, nb = 0, fa, fb;
    int ua = zc_x86_parse16(ia + oa, sa - oa, 0, 14, &ma, &na, &fa, NULL);
    int ub = ua > 0 ? zc_x86_parse16(ib + ob, sb - ob, 0, 14, &mb, &nb, &fb, NULL) : 0;
    if (ua < 0 || ub < 0) {
      rc = ZC_RC_MALFORMED;
      break;
    }
    if (ua == 0 || ub == 0) break;
    if (ecap - eo < need) {
      rc = ZC_RC_SPACE;
      break;
    }
    __m512i da = zc_x86_signed16(ma, na), db = zc_x86_signed16(mb, nb), dr = _mm512_add_epi16(da, db);
    aa = _mm512_add_epi32(aa, _mm512_madd_epi16(da, ones));
    ab = _mm512_add_epi32(ab, _mm512_madd_epi16(db, ones));
    if (!e->have_prev) { /* the chunk's first ordinary position: base, delta 0 */
      int16_t first = (int16_t)_mm_extract_epi16(_mm512_castsi512_si128(dr), 0);
      e->base = (int64_t)((uint64_t)pa->q + (uint64_t)pb->q + (uint64_t)(int64_t)first);
      e->have_prev = 1;
      dr = _mm512_mask_mov_epi16(dr, 1, zero);
      *sync = 1;
    }
    eo += zc_x86_emit16(dr, 0, out + eo);
    oa += (size_t)ua;
    ob += (size_t)ub;
    left -= ZC_BLOCK;
  }
  pa->o = oa;
  pb->o = ob;
  pa->left = pb->left = left;
  e->o = eo;
  *acc_a = aa;
  *acc_b = ab;
  return rc;
}
#endif

int ZC_X86_NAME(zc_chunk_hop)(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                      zc_emit_t* e) {
  if (op != zcclSum || h->dtype != zcclFloat32) return zc_chunk_hop_scalar(op, h, g, pa, pb, e);
#if ZC_X86_AVX512
  /* In step (sync): the result's running value is pa->q + pb->q plus the
   * deltas summed into acc_a/acc_b since the last flush, so blocks of both
   * inputs narrow enough for 16-bit lanes (W <= 14: sums below 2^15) add
   * lane by lane with no lag to correct, and the running values are only
   * reduced when another path needs them. */
  int sync = 0;
  const __m512i zero = _mm512_setzero_si512();
  __m512i acc_a = zero, acc_b = zero;
#define ZC_X86_HOP_FLUSH()                                                                 \
  do {                                                                                     \
    if (sync) {                                                                            \
      pa->q = (int64_t)((uint64_t)pa->q + (uint64_t)zc_x86_reduce32(acc_a));               \
      pb->q = (int64_t)((uint64_t)pb->q + (uint64_t)zc_x86_reduce32(acc_b));               \
      e->prev = (int64_t)((uint64_t)pa->q + (uint64_t)pb->q);                              \
      acc_a = acc_b = zero;                                                                \
      sync = 0;                                                                            \
    }                                                                                      \
  } while (0)
#endif
  while (pa->left > 0) {
#if !ZC_X86_AVX512
    /* In step and both blocks narrow: 16-bit lanes, as long as that lasts. */
    if (pa->left >= ZC_BLOCK && pa->o < pa->size && pb->o < pb->size && (pa->in[pa->o] & 63) <= 14 &&
        (pb->in[pb->o] & 63) <= 14 && (pa->in[pa->o] >> 6) != ZC_SMODE_EXT && (pb->in[pb->o] >> 6) != ZC_SMODE_EXT &&
        (!e->have_prev || (uint64_t)e->prev == (uint64_t)pa->q + (uint64_t)pb->q)) {
      size_t before = pa->left;
      int rc = zc_x86_hop_w16_run(pa, pb, e);
      if (rc != 0) return rc;
      if (pa->left != before) continue;
    }
#else
    if (pa->left >= ZC_BLOCK) {
      if (!sync && e->have_prev && (uint64_t)e->prev == (uint64_t)pa->q + (uint64_t)pb->q) sync = 1;
      if (sync || !e->have_prev) {
        int rc = zc_x86_hop16_run(pa, pb, e, &acc_a, &acc_b, &sync);
        if (rc != 0) return rc;
        if (pa->left == 0) break;
      }
    }
    ZC_X86_HOP_FLUSH();
#endif
    if (pa->left >= ZC_BLOCK && h->has_fill &&
        pa->o < pa->size && pb->o < pb->size &&
        (pa->in[pa->o] == ZC_W_ALLFILL || pb->in[pb->o] == ZC_W_ALLFILL)) {
      /* Fill in either input is fill in the result; the other input's
       * integer track still moves by its deltas. */
      zc_parse_t* other = pa->in[pa->o] == ZC_W_ALLFILL ? pb : pa;
      __m256i d[4];
      uint32_t fb = 0;
      int used = other->in[other->o] == ZC_W_ALLFILL ? 1 : zc_x86_parse_wide(other->in, other->size, other->o, 1, d, &fb);
      if (used < 0) return ZC_RC_MALFORMED;
      if (used > 0) {
        if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
        if (other->in[other->o] != ZC_W_ALLFILL) other->q += zc_x86_sum(d);
        zc_parse_t* fillp = other == pa ? pb : pa;
        other->o += (size_t)used;
        fillp->o += 1;
        pa->left -= ZC_BLOCK;
        pb->left -= ZC_BLOCK;
        e->out[e->o++] = ZC_W_ALLFILL;
        continue;
      }
    }
#if !ZC_X86_AVX512
    /* Coasts (fill in either input) and blocks after them, 16-bit too. */
    if (h->has_fill && pa->left >= ZC_BLOCK && e->have_prev) {
      int rc = zc_x86_hop_coast16(pa, pb, e);
      if (rc < 0) return rc;
      if (rc > 0) continue;
    }
#endif
    if (pa->left >= ZC_BLOCK) {
      __m256i da[4], db[4];
      /* Read only when parsed (set so the compiler need not prove it). */
      da[0] = da[1] = da[2] = da[3] = db[0] = db[1] = db[2] = db[3] = _mm256_setzero_si256();
      uint32_t fa = 0, fb = 0;
      int ua = zc_x86_parse_rest(pa->in, pa->size, pa->o, h->has_fill, da, &fa);
      int ub = ua > 0 ? zc_x86_parse_rest(pb->in, pb->size, pb->o, h->has_fill, db, &fb) : 0;
      if (ua < 0 || ub < 0) return ZC_RC_MALFORMED;
      const int64_t lim = (int64_t)1 << 29;
      if (ua > 0 && ub > 0 && (fa | fb) && pa->q < lim && pa->q > -lim && pb->q < lim && pb->q > -lim &&
          e->prev < 2 * lim && e->prev > -2 * lim) {
        /* Fill in either input: sum the running values, then deltas that
         * hold across the result's fill positions. */
        if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
        __m256i qa[4], qb[4], qr[4], dr[4];
        zc_x86_track(da, pa->q, qa);
        zc_x86_track(db, pb->q, qb);
        for (int k = 0; k < 4; k++) qr[k] = _mm256_add_epi32(qa[k], qb[k]);
        zc_x86_deltas_held(qr, fa | fb, e, dr);
        zc_x86_advance(pa, da, ua);
        zc_x86_advance(pb, db, ub);
        e->o += zc_x86_emit_clean(dr, fa | fb, e->out + e->o);
        continue;
      }
      if (fa | fb) ua = 0; /* fill with running values past 2^29: scalar */
      /* Both blocks all ordinary: the sum's deltas are the deltas' sums, the
       * first one corrected by how far the result's running value lags. */
      int64_t lag = e->have_prev ? pa->q + pb->q - e->prev : 0;
      if (ua > 0 && ub > 0 && lag < (1 << 24) && lag > -(1 << 24)) {
        if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
        __m256i dr[4];
        for (int k = 0; k < 4; k++) dr[k] = _mm256_add_epi32(da[k], db[k]);
        int32_t first = _mm256_cvtsi256_si32(dr[0]);
        if (!e->have_prev) {
          e->base = pa->q + pb->q + first;
          e->have_prev = 1;
          lag = -first;
        }
        dr[0] = _mm256_add_epi32(dr[0], _mm256_setr_epi32((int32_t)lag, 0, 0, 0, 0, 0, 0, 0));
        zc_x86_advance(pa, da, ua);
        zc_x86_advance(pb, db, ub);
        e->prev = pa->q + pb->q;
        e->o += zc_x86_emit_clean(dr, 0, e->out + e->o);
        continue;
      }
    }
    int rc = zc_hop_block_scalar(op, h, g, pa, pb, e);
    if (rc != 0) return rc;
  }
#if ZC_X86_AVX512
  ZC_X86_HOP_FLUSH();
#undef ZC_X86_HOP_FLUSH
#endif
  return 0;
}

/* zc_hop_values's chunk: a block of float32 values quantized on the vector
 * path (every value ordinary or fill) meets a block of b parsed on it
 * (zc_x86_parse_clean: W <= 24, no exceptions), and the result is encoded
 * from the combined integers: the bytes the scalar path writes for them.
 * 32-bit lanes hold everything when the values' integers and b's running
 * value stay below 2^29 and the result's running value too (b's track then
 * stays below 2^30, a sum below 1.5 x 2^30 and a delta below 2^31); fill
 * lanes are masked out of the result, whatever their integers. Any other
 * block goes scalar. */
int ZC_X86_NAME(zc_chunk_hop_values)(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in,
                                     size_t n, zc_parse_t* pb, zc_emit_t* e) {
  if (h->dtype != zcclFloat32) return zc_chunk_hop_values_scalar(op, h, g, in, n, pb, e);
  const float* x = in;
  const int hf = h->has_fill;
  const float fill = (float)h->fill;
  const int64_t lim = (int64_t)1 << 29;
  const __m256i vlim = _mm256_set1_epi32((int32_t)lim);
  size_t b = 0;
  for (; b + ZC_BLOCK <= n; b += ZC_BLOCK) {
    zc_x86_ahead_block(x + b);
    if (e->cap - e->o < ZC_BLOCK_MAX_CODED + ZC_BLOCK * 4) return ZC_RC_SPACE;
    const uint8_t* ib = pb->in + pb->o;
    size_t avail = pb->size - pb->o;
    __m256i q[4], db[4];
    uint32_t fa = 0, fb = 0;
    if (hf && avail > 0 && (ib[0] == ZC_W_ALLFILL || zc_x86_all_equal_f32(x + b, fill))) {
      /* Fill in either input is fill in the result; b's track still moves
       * by its deltas. */
      int used = ib[0] == ZC_W_ALLFILL ? 1 : zc_x86_parse_wide(pb->in, pb->size, pb->o, 1, db, &fb);
      if (used < 0) return ZC_RC_MALFORMED;
      if (used > 0) {
        if (ib[0] != ZC_W_ALLFILL) pb->q += zc_x86_sum(db);
        pb->o += (size_t)used;
        pb->left -= ZC_BLOCK;
        e->out[e->o++] = ZC_W_ALLFILL;
        continue;
      }
    } else if (pb->q < lim && pb->q > -lim && (!e->have_prev || (e->prev < lim && e->prev > -lim)) &&
               zc_x86_quant_held_f32(x + b, g, hf, fill, q, &fa)) {
      int small = 0xff;
      for (int k = 0; k < 4; k++) /* |INT_MIN| (a fill lane's) reads as small: masked anyway */
        small &= _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(vlim, _mm256_abs_epi32(q[k]))));
#if !ZC_X86_AVX512
      if (op == zcclSum && small == 0xff && fa == 0) {
        if (zc_x86_hop_values_narrow(q, pb, e) > 0) continue;
      }
#endif
      int used = small == 0xff ? zc_x86_parse_rest(pb->in, pb->size, pb->o, hf, db, &fb) : 0;
      if (used < 0) return ZC_RC_MALFORMED;
      if (used > 0) {
        __m256i qb[4], qr[4], dr[4];
        zc_x86_track(db, pb->q, qb);
        for (int k = 0; k < 4; k++)
          qr[k] = op == zcclSum   ? _mm256_add_epi32(q[k], qb[k])
                  : op == zcclMax ? _mm256_max_epi32(q[k], qb[k])
                                  : _mm256_min_epi32(q[k], qb[k]);
        uint32_t f = fa | fb;
        if (f) zc_x86_deltas_held(qr, f, e, dr);
        else zc_x86_deltas(qr, e, dr);
        pb->q += zc_x86_sum(db);
        pb->o += (size_t)used;
        pb->left -= ZC_BLOCK;
        e->o += zc_x86_emit_clean(dr, f, e->out + e->o);
        continue;
      }
    }
    int rc = zc_hop_values_block_scalar(op, h, g, x + b, ZC_BLOCK, pb, e);
    if (rc != 0) return rc;
  }
  return b < n ? zc_hop_values_block_scalar(op, h, g, x + b, (int)(n - b), pb, e) : 0;
}

/* ---- value range (REL mode's scan of every input) ---------------------------
 * Eight lanes, two accumulators per bound; the flags of non-finite and
 * fill values are or-ed over the block and tested once. */
int ZC_X86_NAME(zc_range_f32)(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]) {
  const __m256i ex = _mm256_set1_epi32(0x7f800000), f1 = _mm256_set1_epi32((int)fb), f2 = _mm256_set1_epi32((int)fb2);
  __m256 l0 = _mm256_loadu_ps(lo), l1 = l0, h0 = _mm256_loadu_ps(hi), h1 = h0;
  __m256i bad = _mm256_setzero_si256();
  for (int j = 0; j < ZC_RANGE_BLOCK; j += 16) {
    zc_x86_ahead(x + j);
    __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
    __m256i ia = _mm256_castps_si256(a), ib = _mm256_castps_si256(b);
    bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(ia, ex), ex),
                                               _mm256_cmpeq_epi32(_mm256_and_si256(ib, ex), ex)));
    bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi32(ia, f1), _mm256_cmpeq_epi32(ia, f2)),
                                               _mm256_or_si256(_mm256_cmpeq_epi32(ib, f1), _mm256_cmpeq_epi32(ib, f2))));
    l0 = _mm256_min_ps(l0, a);
    l1 = _mm256_min_ps(l1, b);
    h0 = _mm256_max_ps(h0, a);
    h1 = _mm256_max_ps(h1, b);
  }
  if (!_mm256_testz_si256(bad, bad)) return 0;
  _mm256_storeu_ps(lo, _mm256_min_ps(l0, l1));
  _mm256_storeu_ps(hi, _mm256_max_ps(h0, h1));
  return 1;
}

int ZC_X86_NAME(zc_range_f64)(const double* x, uint64_t fb, uint64_t fb2, double lo[8], double hi[8]) {
  const __m256i ex = _mm256_set1_epi64x(0x7ff0000000000000ll), f1 = _mm256_set1_epi64x((long long)fb),
                f2 = _mm256_set1_epi64x((long long)fb2);
  __m256d l0 = _mm256_loadu_pd(lo), l1 = _mm256_loadu_pd(lo + 4), h0 = _mm256_loadu_pd(hi), h1 = _mm256_loadu_pd(hi + 4);
  __m256i bad = _mm256_setzero_si256();
  for (int j = 0; j < ZC_RANGE_BLOCK; j += 8) {
    zc_x86_ahead(x + j);
    __m256d a = _mm256_loadu_pd(x + j), b = _mm256_loadu_pd(x + j + 4);
    __m256i ia = _mm256_castpd_si256(a), ib = _mm256_castpd_si256(b);
    bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpeq_epi64(_mm256_and_si256(ia, ex), ex),
                                               _mm256_cmpeq_epi64(_mm256_and_si256(ib, ex), ex)));
    bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi64(ia, f1), _mm256_cmpeq_epi64(ia, f2)),
                                               _mm256_or_si256(_mm256_cmpeq_epi64(ib, f1), _mm256_cmpeq_epi64(ib, f2))));
    l0 = _mm256_min_pd(l0, a);
    l1 = _mm256_min_pd(l1, b);
    h0 = _mm256_max_pd(h0, a);
    h1 = _mm256_max_pd(h1, b);
  }
  if (!_mm256_testz_si256(bad, bad)) return 0;
  _mm256_storeu_pd(lo, l0);
  _mm256_storeu_pd(lo + 4, l1);
  _mm256_storeu_pd(hi, h0);
  _mm256_storeu_pd(hi + 4, h1);
  return 1;
}
