/* Synthetic inputs the codec's kernel tests share (gpu_codec on a GPU,
 * cuda_codec_emu on the host): smooth, noisy, sparse, constant, non-finite
 * (with NaN payloads of both signs, quiet and signalling), huge/tiny and
 * fill-valued data from one xorshift generator. Plain C that also compiles
 * as C++. */
#ifndef TEST_CODEC_GEN_H_
#define TEST_CODEC_GEN_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t rnd(void) { return test_xorshift(&rng_state); }
static inline double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

enum { G_SMOOTH, G_NOISY, G_SPARSE, G_CONST, G_NONFINITE, G_HUGE, G_FILL, G_NUM };
static const uint32_t nan32s[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0x7f800001u};
static const uint64_t nan64s[] = {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff8000012345678ull,
                                  0x7ff0000000000001ull};

/* n values of kind into x (float64 when f64), salt shifting the smooth wave. */
static inline void gen(int kind, int f64, size_t n, double fill, void* x, size_t salt) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rnd();
    double v;
    switch (kind) {
      case G_SMOOTH: v = 20.0 * sin((double)(i + salt) * 0.001) + 3.0 * cos((double)i * 0.013); break;
      case G_NOISY: v = urand() * 200.0 - 100.0; break;
      case G_SPARSE: v = r % 20 == 0 ? urand() * 10.0 : 0.0; break;
      case G_CONST: v = 4.25; break;
      case G_NONFINITE: v = r % 9 == 0 ? INFINITY : r % 9 == 1 ? -INFINITY : sin((double)i * 0.01); break;
      case G_HUGE: v = (urand() - 0.5) * (f64 ? 1e300 : 6e37) * ((r & 1) ? 1.0 : 1e-30); break;
      default: v = r % 3 == 0 ? fill : sin((double)i * 0.01); break;
    }
    if (f64) {
      ((double*)x)[i] = v;
      if (kind == G_NONFINITE && r % 9 == 2) memcpy((double*)x + i, &nan64s[(r >> 8) % 4], 8);
    } else {
      ((float*)x)[i] = (float)v;
      if (kind == G_NONFINITE && r % 9 == 2) memcpy((float*)x + i, &nan32s[(r >> 8) % 4], 4);
    }
  }
}

#endif /* TEST_CODEC_GEN_H_ */
