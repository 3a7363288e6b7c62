/* XXH3-64 (the xxHash specification's 64-bit XXH3, seeded), the chunk
 * checksum of docs/format.md, as ZC_HD functions for the CUDA kernels,
 * which cannot call libxxhash. The host codec calls libxxhash itself;
 * test/unit/test_xxh3_hd.c holds these to its results.
 *
 * The long path (more than 240 bytes) is split by accumulator lane: lane i
 * of the eight takes only words i and i^1 of each 64-byte stripe and its
 * own secret words, so eight threads can each run one lane over the whole
 * input and one thread merges (zc_xxh3_merge). The secret is kept as the
 * specification's default 24 words and seeded word by word when read: no
 * 192-byte custom secret is built. */
#ifndef ZC_XXH3_H_
#define ZC_XXH3_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_hostdev.h"

#define ZC_XXH3_MIDSIZE_MAX 240 /* longest input of the short paths */
#define ZC_XXH3_LANES 8

#define ZC_XXH3_P32_1 0x9E3779B1ull
#define ZC_XXH3_P32_2 0x85EBCA77ull
#define ZC_XXH3_P32_3 0xC2B2AE3Dull
#define ZC_XXH3_P64_1 0x9E3779B185EBCA87ull
#define ZC_XXH3_P64_2 0xC2B2AE3D27D4EB4Full
#define ZC_XXH3_P64_3 0x165667B19E3779F9ull
#define ZC_XXH3_P64_4 0x85EBCA77C2B2AE63ull
#define ZC_XXH3_P64_5 0x27D4EB2F165667C5ull
#define ZC_XXH3_MX1 0x165667919E3779F9ull
#define ZC_XXH3_MX2 0x9FB21C651E98DF25ull

/* The specification's default secret, as 24 little-endian words. */
#define ZC_XXH3_SECRET_WORDS                                                                                   \
  {0xbe4ba423396cfeb8ull, 0x1cad21f72c81017cull, 0xdb979083e96dd4deull, 0x1f67b3b7a4a44072ull,               \
   0x78e5c0cc4ee679cbull, 0x2172ffcc7dd05a82ull, 0x8e2443f7744608b8ull, 0x4c263a81e69035e0ull,               \
   0xcb00c391bb52283cull, 0xa32e531b8b65d088ull, 0x4ef90da297486471ull, 0xd8acdea946ef1938ull,               \
   0x3f349ce33f76faa8ull, 0x1d4f0bc7c7bbdcf9ull, 0x3159b4cd4be0518aull, 0x647378d9c97e9fc8ull,               \
   0xc3ebd33483acc5eaull, 0xeb6313faffa081c5ull, 0x49daf0b751dd0d17ull, 0x9e68d429265516d3ull,               \
   0xfca1477d58be162bull, 0xce31d07ad1b8f88full, 0x280416958f3acb45ull, 0x7e404bbbcafbd7afull}

#if defined(__CUDACC__)
static __constant__ const uint64_t zc_xxh3_secret_dev[24] = ZC_XXH3_SECRET_WORDS;
#endif
#if !defined(__CUDA_ARCH__)
static const uint64_t zc_xxh3_secret_host[24] = ZC_XXH3_SECRET_WORDS;
#endif

/* Word k of the secret seeded with seed (the long path's custom secret:
 * even words + seed, odd words - seed; seed 0 is the default secret). */
ZC_HD_INLINE uint64_t zc_xxh3_sword(unsigned k, uint64_t seed) {
#if defined(__CUDA_ARCH__)
  const uint64_t w = zc_xxh3_secret_dev[k];
#else
  const uint64_t w = zc_xxh3_secret_host[k];
#endif
  return (k & 1u) ? w - seed : w + seed;
}

/* The secret's 8 bytes at byte offset off (offsets 11 and 121 are not
 * word-aligned). */
ZC_HD_INLINE uint64_t zc_xxh3_s64(unsigned off, uint64_t seed) {
  const unsigned k = off >> 3, r = 8u * (off & 7u);
  const uint64_t lo = zc_xxh3_sword(k, seed);
  return r == 0 ? lo : (lo >> r) | (zc_xxh3_sword(k + 1, seed) << (64u - r));
}
ZC_HD_INLINE uint32_t zc_xxh3_s32(unsigned off) { return (uint32_t)zc_xxh3_s64(off, 0); }

/* Input bytes, little-endian, any alignment. */
ZC_HD_INLINE uint64_t zc_xxh3_r64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
ZC_HD_INLINE uint32_t zc_xxh3_r32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The 128-bit product's halves, xored. */
ZC_HD_INLINE uint64_t zc_xxh3_mulfold(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  __extension__ unsigned __int128 m = (unsigned __int128)a * b;
  return (uint64_t)m ^ (uint64_t)(m >> 64);
#endif
}

ZC_HD_INLINE uint64_t zc_xxh3_avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= ZC_XXH3_MX1;
  return h ^ (h >> 32);
}

ZC_HD_INLINE uint64_t zc_xxh64_avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= ZC_XXH3_P64_2;
  h ^= h >> 29;
  h *= ZC_XXH3_P64_3;
  return h ^ (h >> 32);
}

ZC_HD_INLINE uint64_t zc_xxh3_mix16(const uint8_t* p, unsigned soff, uint64_t seed) {
  return zc_xxh3_mulfold(zc_xxh3_r64(p) ^ (zc_xxh3_s64(soff, 0) + seed),
                         zc_xxh3_r64(p + 8) ^ (zc_xxh3_s64(soff + 8, 0) - seed));
}

/* Inputs of at most ZC_XXH3_MIDSIZE_MAX bytes. */
ZC_HD_INLINE uint64_t zc_xxh3_short(const uint8_t* p, size_t n, uint64_t seed) {
  if (n == 0) return zc_xxh64_avalanche(seed ^ zc_xxh3_s64(56, 0) ^ zc_xxh3_s64(64, 0));
  if (n <= 3) {
    const uint32_t mix = (uint32_t)p[0] << 16 | (uint32_t)p[n >> 1] << 24 | (uint32_t)p[n - 1] | (uint32_t)n << 8;
    const uint64_t flip = (uint64_t)(zc_xxh3_s32(0) ^ zc_xxh3_s32(4)) + seed;
    return zc_xxh64_avalanche((uint64_t)mix ^ flip);
  }
  if (n <= 8) {
    const uint32_t s32 = (uint32_t)seed;
    const uint64_t sd = seed ^ (uint64_t)((s32 >> 24) | ((s32 >> 8) & 0xff00u) | ((s32 << 8) & 0xff0000u) | (s32 << 24))
                                   << 32;
    const uint64_t flip = (zc_xxh3_s64(8, 0) ^ zc_xxh3_s64(16, 0)) - sd;
    uint64_t h = ((uint64_t)zc_xxh3_r32(p) << 32 | zc_xxh3_r32(p + n - 4)) ^ flip;
    h ^= ((h << 49) | (h >> 15)) ^ ((h << 24) | (h >> 40));
    h *= ZC_XXH3_MX2;
    h ^= (h >> 35) + n;
    h *= ZC_XXH3_MX2;
    return h ^ (h >> 28);
  }
  if (n <= 16) {
    const uint64_t lo = zc_xxh3_r64(p) ^ ((zc_xxh3_s64(24, 0) ^ zc_xxh3_s64(32, 0)) + seed);
    const uint64_t hi = zc_xxh3_r64(p + n - 8) ^ ((zc_xxh3_s64(40, 0) ^ zc_xxh3_s64(48, 0)) - seed);
    uint64_t sw = 0;
    for (int i = 0; i < 8; i++) sw = sw << 8 | ((lo >> (8 * i)) & 0xffu); /* lo byte-swapped */
    return zc_xxh3_avalanche(n + sw + hi + zc_xxh3_mulfold(lo, hi));
  }
  uint64_t acc = n * ZC_XXH3_P64_1;
  if (n <= 128) {
    /* pairs from both ends, 16 bytes each, as many as the length has */
    const unsigned pairs = n > 96 ? 4 : n > 64 ? 3 : n > 32 ? 2 : 1;
    for (unsigned i = 0; i < pairs; i++) {
      acc += zc_xxh3_mix16(p + 16 * i, 32 * i, seed);
      acc += zc_xxh3_mix16(p + n - 16 * (i + 1), 32 * i + 16, seed);
    }
    return zc_xxh3_avalanche(acc);
  }
  for (unsigned i = 0; i < 8; i++) acc += zc_xxh3_mix16(p + 16 * i, 16 * i, seed);
  acc = zc_xxh3_avalanche(acc);
  const unsigned rounds = (unsigned)(n / 16);
  for (unsigned i = 8; i < rounds; i++) acc += zc_xxh3_mix16(p + 16 * i, 16 * (i - 8) + 3, seed);
  acc += zc_xxh3_mix16(p + n - 16, 136 - 17, seed);
  return zc_xxh3_avalanche(acc);
}

/* One stripe's part of lane i's accumulator: the key-folded product of
 * word i and word i^1 as it is. */
ZC_HD_INLINE uint64_t zc_xxh3_stripe(const uint8_t* stripe, unsigned soff, uint64_t seed, unsigned i) {
  const uint64_t v = zc_xxh3_r64(stripe + 8 * i), k = v ^ zc_xxh3_s64(soff + 8 * i, seed);
  return zc_xxh3_r64(stripe + 8 * (i ^ 1u)) + (k & 0xffffffffull) * (k >> 32);
}

/* Lane i's accumulator over an input of n > ZC_XXH3_MIDSIZE_MAX bytes:
 * blocks of 16 stripes, each followed by a scramble, then the partial
 * block's stripes and the input's last 64 bytes. */
ZC_HD_INLINE uint64_t zc_xxh3_lane(const uint8_t* p, size_t n, uint64_t seed, unsigned i) {
  const uint64_t init[ZC_XXH3_LANES] = {ZC_XXH3_P32_3, ZC_XXH3_P64_1, ZC_XXH3_P64_2, ZC_XXH3_P64_3,
                                        ZC_XXH3_P64_4, ZC_XXH3_P32_2, ZC_XXH3_P64_5, ZC_XXH3_P32_1};
  uint64_t acc = init[i];
  const size_t blocks = (n - 1) / 1024;
  const uint64_t scr = zc_xxh3_s64(128 + 8 * i, seed);
  for (size_t b = 0; b < blocks; b++) {
    for (unsigned s = 0; s < 16; s++) acc += zc_xxh3_stripe(p + 1024 * b + 64 * s, 8 * s, seed, i);
    acc ^= acc >> 47;
    acc ^= scr;
    acc *= ZC_XXH3_P32_1;
  }
  const unsigned stripes = (unsigned)(((n - 1) - 1024 * blocks) / 64);
  for (unsigned s = 0; s < stripes; s++) acc += zc_xxh3_stripe(p + 1024 * blocks + 64 * s, 8 * s, seed, i);
  return acc + zc_xxh3_stripe(p + n - 64, 192 - 64 - 7, seed, i);
}

/* The hash of n > ZC_XXH3_MIDSIZE_MAX bytes from its eight lanes. */
ZC_HD_INLINE uint64_t zc_xxh3_merge(const uint64_t* acc, size_t n, uint64_t seed) {
  uint64_t h = n * ZC_XXH3_P64_1;
  for (unsigned j = 0; j < 4; j++)
    h += zc_xxh3_mulfold(acc[2 * j] ^ zc_xxh3_s64(11 + 16 * j, seed), acc[2 * j + 1] ^ zc_xxh3_s64(19 + 16 * j, seed));
  return zc_xxh3_avalanche(h);
}

/* XXH3_64bits_withSeed(p, n, seed), on one thread. */
ZC_HD_INLINE uint64_t zc_xxh3_64(const uint8_t* p, size_t n, uint64_t seed) {
  if (n <= ZC_XXH3_MIDSIZE_MAX) return zc_xxh3_short(p, n, seed);
  uint64_t acc[ZC_XXH3_LANES];
  for (unsigned i = 0; i < ZC_XXH3_LANES; i++) acc[i] = zc_xxh3_lane(p, n, seed, i);
  return zc_xxh3_merge(acc, n, seed);
}

#endif /* ZC_XXH3_H_ */
