/* The element arithmetic of zd_reduce / zd_divide that the host loops
 * (zd_reduce.c) and the CUDA kernels (cuda/zd_cuda_reduce.cu) share, so
 * both compute the same bits: narrow floats <-> float32 and the ops.
 * ZC_HD (zc_hostdev.h): plain C, no libc calls, branch-free.
 *
 * A narrow format has M mantissa bits, E exponent bits and bias B. Decoding
 * keeps NaN payloads; encoding rounds to nearest even, returns the canonical
 * NaN (CUDA's: 0x7fff for 16-bit, 0x7f for fp8) and on overflow either inf
 * (fp16, bf16) or, saturating, the largest finite code (fp8, __NV_SATFINITE).
 * The arithmetic assumes IEEE float32 with subnormals and round to nearest
 * even (no flush-to-zero, no fused multiply-add across these steps). */
#ifndef ZD_NARROW_H_
#define ZD_NARROW_H_

#include <stdint.h>

#include "zc_hostdev.h"

ZC_HD_INLINE uint32_t zd_f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ZC_HD_INLINE float zd_u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* ieee: the all-ones exponent is inf/NaN (fp16, e5m2); otherwise (e4m3) only
 * the all-ones code is NaN. */
ZC_HD_INLINE float zd_narrow_to_f32(uint32_t h, int M, int E, int B, int ieee) {
  const uint32_t emask = (1u << (E + M)) - 1;
  uint32_t s = (h >> (E + M)) << 31;
  uint32_t em = h & emask;
  uint32_t norm = (em << (23 - M)) + ((uint32_t)(127 - B) << 23);
  /* Subnormal m * 2^(1-B-M): put m under the exponent 1-B, subtract 2^(1-B). */
  uint32_t one = (uint32_t)(128 - B) << 23;
  uint32_t sub = zd_f2u(zd_u2f((em << (23 - M)) | one) - zd_u2f(one));
  uint32_t r = em < (1u << M) ? sub : norm;
  if (ieee)
    r = em >= (((1u << E) - 1) << M) ? ((em << (23 - M)) | 0x7f800000u) : r;
  else
    r = em == emask ? 0x7fc00000u : r;
  return zd_u2f(r | s);
}

/* top: the code overflow goes to (inf, or the largest finite when saturating). */
ZC_HD_INLINE uint32_t zd_f32_to_narrow(float f, int M, int E, int B, uint32_t top, uint32_t nan) {
  uint32_t x = zd_f2u(f);
  uint32_t s = (x >> 31) << (E + M);
  uint32_t ax = x & 0x7fffffffu;
  const int drop = 23 - M;
  /* Normal: round the mantissa at bit `drop` (a carry bumps the exponent,
   * which is right), then rebias. Monotonic in ax, so clamping at top
   * handles overflow and inf. */
  uint32_t norm = ((ax + ((1u << (drop - 1)) - 1) + ((ax >> drop) & 1)) >> drop) - ((uint32_t)(127 - B) << M);
  norm = norm > top ? top : norm;
  /* Subnormal: adding 2^(24-B-M) makes the float unit round at the
   * subnormal quantum (round to nearest even, the FPU's mode). */
  float magic = zd_u2f((uint32_t)(127 + 24 - B - M) << 23);
  uint32_t sub = zd_f2u(zd_u2f(ax) + magic) - zd_f2u(magic);
  uint32_t r = ax < ((uint32_t)(128 - B) << 23) ? sub : norm;
  return ax > 0x7f800000u ? nan : (r | s);
}

ZC_HD_INLINE float zd_f16_load(uint16_t h) { return zd_narrow_to_f32(h, 10, 5, 15, 1); }
ZC_HD_INLINE uint16_t zd_f16_store(float f) { return (uint16_t)zd_f32_to_narrow(f, 10, 5, 15, 0x7c00, 0x7fff); }
ZC_HD_INLINE float zd_bf16_load(uint16_t h) { return zd_u2f((uint32_t)h << 16); }
ZC_HD_INLINE uint16_t zd_bf16_store(float f) {
  uint32_t x = zd_f2u(f);
  uint32_t r = (x + 0x7fffu + ((x >> 16) & 1)) >> 16; /* overflow carries into inf */
  return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? 0x7fffu : r);
}
ZC_HD_INLINE float zd_e4m3_load(uint8_t h) { return zd_narrow_to_f32(h, 3, 4, 7, 0); }
ZC_HD_INLINE uint8_t zd_e4m3_store(float f) { return (uint8_t)zd_f32_to_narrow(f, 3, 4, 7, 0x7e, 0x7f); }
ZC_HD_INLINE float zd_e5m2_load(uint8_t h) { return zd_narrow_to_f32(h, 2, 5, 15, 1); }
ZC_HD_INLINE uint8_t zd_e5m2_store(float f) { return (uint8_t)zd_f32_to_narrow(f, 2, 5, 15, 0x7b, 0x7f); }

/* ---- the ops, as macros so one definition serves every element type ---- */
#define ZD_ID(x) (x)
#define ZD_ADD(x, y) ((x) + (y))
#define ZD_MUL(x, y) ((x) * (y))
#define ZD_MAXI(x, y) ((x) > (y) ? (x) : (y))
#define ZD_MINI(x, y) ((x) < (y) ? (x) : (y))
/* NaN in a: a; otherwise the comparison picks b when b is NaN. Both
 * comparisons always run (| not ||) so the loop has no branch to vectorize. */
#define ZD_MAXF(x, y) (((int)((x) > (y)) | (int)((x) != (x))) ? (x) : (y))
#define ZD_MINF(x, y) (((int)((x) < (y)) | (int)((x) != (x))) ? (x) : (y))
/* With a declared fill value f: the fill absorbs (either input the fill:
 * the fill), as in the codec's homomorphic operations. */
#define ZD_FILL_OP(OP, x, y, f) (((int)((x) == (f)) | (int)((y) == (f))) ? (f) : OP(x, y))

#endif /* ZD_NARROW_H_ */
