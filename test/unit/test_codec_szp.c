/* The stream codec (docs/format.md): every finite element within eb on
 * synthetic and real data, exceptions and fill values exact, canonical bytes,
 * homomorphic SUM/MAX/MIN identical to the integer-exact reference, and
 * corrupted input rejected without crashing. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "zc_szp.h"
#include "zc_simd.h"
#include "zc_szp_block.h"
#include "zccl_data.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return test_xorshift(&rng_state); }
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- per-block functions ---------------------------------------------------- */

static void test_block_round_trip(void) {
  uint8_t buf[ZC_BLOCK_MAX_CODED];
  for (int t = 0; t < 20000; t++) {
    zc_block_t b, d;
    int fill = (int)(rnd() & 1);
    int wmax = (int)(rnd() % (ZC_W_MAX + 1));
    int nvalid = (rnd() & 3) ? ZC_BLOCK : 1 + (int)(rnd() % ZC_BLOCK);
    uint32_t valid = nvalid == ZC_BLOCK ? 0xffffffffu : ((1u << nvalid) - 1);
    b.xbits = (rnd() % 4 == 0) ? (uint32_t)rnd() & valid : 0;
    b.fbits = (fill && rnd() % 4 == 0) ? (uint32_t)rnd() & valid & ~b.xbits : 0;
    if (fill && rnd() % 16 == 0) {
      b.xbits = 0;
      b.fbits = valid;
    }
    int signs = (int)(rnd() % 3);
    for (int i = 0; i < ZC_BLOCK; i++) {
      uint64_t m = wmax ? rnd() & ((1ull << wmax) - 1) : 0;
      if (rnd() % 3 == 0) m >>= rnd() % 64; /* vary sub-group widths */
      int64_t v = (int64_t)m;
      if (signs == 1 || (signs == 2 && (rnd() & 1))) v = -v;
      int held = (int)(((b.xbits | b.fbits) >> i) & 1u) || i >= nvalid;
      b.d[i] = held ? 0 : v;
    }
    int n = zc_block_encode(&b, ~valid, fill, buf);
    CHECK(n >= 1 && n <= ZC_BLOCK_MAX_CODED);
    int nexc = -1;
    int m = zc_block_decode(buf, (size_t)n, fill, &d, &nexc);
    CHECK(m == n);
    if (m != n) continue;
    CHECK(nexc == __builtin_popcount(d.xbits));
    int same = 1;
    for (int i = 0; i < nvalid; i++) same &= d.d[i] == b.d[i];
    CHECK(same);
    CHECK(d.xbits == b.xbits);
    CHECK(d.fbits == b.fbits || (d.fbits == 0xffffffffu && (b.fbits | ~valid) == 0xffffffffu));
    /* Every shorter input is rejected, never over-read (ASan watches). */
    uint8_t* exact = malloc((size_t)n);
    memcpy(exact, buf, (size_t)n);
    for (int k = 0; k < n; k++) CHECK(zc_block_decode(exact, (size_t)k, fill, &d, &nexc) == -1);
    free(exact);
  }
}

static void test_grid_edges(void) {
  /* Values at the edges of the float grid never break the bound. */
  const double ebs[] = {1e-1, 1e-3, 3e-5, 1e-6, 0.3, 7.0};
  for (size_t e = 0; e < sizeof ebs / sizeof ebs[0]; e++) {
    zc_grid_t g;
    zc_grid_init(ebs[e], &g);
    CHECK(g.accept_f < ebs[e] && g.accept_d < ebs[e]);
    for (int k = -2000; k <= 2000; k++) {
      double half = (k + 0.5) * g.step_f; /* on a rounding edge */
      float xs[3] = {(float)half, nextafterf((float)half, INFINITY), nextafterf((float)half, -INFINITY)};
      for (int j = 0; j < 3; j++) {
        int64_t q;
        if (zc_quant_f32(xs[j], &g, &q) == 0) CHECK(fabs((double)xs[j] - (double)zc_dequant_f32(q, &g)) <= ebs[e]);
      }
      double hd = (k + 0.5) * g.step_d;
      double ds[3] = {hd, nextafter(hd, INFINITY), nextafter(hd, -INFINITY)};
      for (int j = 0; j < 3; j++) {
        int64_t q;
        if (zc_quant_f64(ds[j], &g, &q) == 0) CHECK(fabs(ds[j] - zc_dequant_f64(q, &g)) <= ebs[e]);
      }
    }
  }
}

/* ---- round trips ---------------------------------------------------------------- */

static long checked_values;

/* Compresses and decompresses x; checks every element, the canonical form
 * and the size bound. Returns the compressed size (0 on failure). */
static size_t round_trip(const void* x, size_t n, zcclDataType_t dt, double eb, int has_fill, double fill,
                         unsigned lg) {
  size_t esize = dt == zcclFloat32 ? 4 : 8;
  zc_params_t p = {dt, eb, has_fill, fill, lg, 0};
  size_t cap = zc_compress_bound(n, dt, lg);
  uint8_t* s = malloc(cap);
  void* y = malloc(n * esize + 1);
  size_t size = 0, got = 0;
  CHECK_RES(zc_compress(&p, x, n, s, cap, &size, NULL, NULL), zcclSuccess);
  CHECK(size <= cap);
  /* Every instruction-set level writes the same bytes. */
  int level = zc_simd_get();
  for (int l = 0; l < ZC_SIMD_NUM; l++) {
    if (l == level || zc_simd_set(l) != 0) continue;
    uint8_t* other = malloc(cap);
    size_t osize = 0;
    CHECK_RES(zc_compress(&p, x, n, other, cap, &osize, NULL, NULL), zcclSuccess);
    CHECK(osize == size && memcmp(other, s, size) == 0);
    void* y2 = malloc(n * esize + 1);
    void* y1 = malloc(n * esize + 1);
    size_t got2 = 0;
    CHECK_RES(zc_decompress(s, size, y2, n, &got2, NULL, NULL), zcclSuccess);
    zc_simd_set(level);
    CHECK_RES(zc_decompress(s, size, y1, n, &got2, NULL, NULL), zcclSuccess);
    CHECK(memcmp(y1, y2, n * esize) == 0);
    free(y1);
    free(y2);
    if (osize != size || memcmp(other, s, size) != 0)
      fprintf(stderr, "level %s differs from %s (dtype %d, n %zu, eb %g)\n", zc_simd_name(l),
              zc_simd_name(level), dt, n, eb);
    free(other);
  }
  zc_simd_set(level);
  CHECK_RES(zc_decompress(s, size, y, n, &got, NULL, NULL), zcclSuccess);
  CHECK(got == n);
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double a = dt == zcclFloat32 ? ((const float*)x)[i] : ((const double*)x)[i];
    double b = dt == zcclFloat32 ? ((float*)y)[i] : ((double*)y)[i];
    double fv = dt == zcclFloat32 ? (double)(float)fill : fill;
    if (has_fill && a == fv) bad += b != fv;
    else if (isnan(a)) bad += !isnan(b);
    else if (isinf(a)) bad += a != b;
    else bad += !(fabs(a - b) <= eb);
  }
  checked_values += (long)n;
  if (bad) fprintf(stderr, "round_trip: %ld of %zu values outside eb=%g (dtype %d)\n", bad, n, eb, dt);
  CHECK(bad == 0);
  /* Canonical: re-encoding the integer view gives the same bytes. */
  zc_header_t h;
  CHECK_RES(zc_header_read(s, size, &h), zcclSuccess);
  int64_t* q = malloc((n + 1) * sizeof *q);
  uint8_t* kind = malloc(n + 1);
  double* raw = malloc((n + 1) * sizeof *raw);
  uint8_t* s2 = malloc(cap);
  size_t size2 = 0;
  CHECK_RES(zc_decode_ints(s, size, q, kind, raw), zcclSuccess);
  CHECK_RES(zc_encode_ints(&h, q, kind, raw, s2, cap, &size2), zcclSuccess);
  CHECK(size2 == size && memcmp(s, s2, size) == 0);
  free(q);
  free(kind);
  free(raw);
  free(s2);
  free(s);
  free(y);
  return bad ? 0 : size;
}

enum { GEN_SMOOTH, GEN_NOISY, GEN_SPARSE, GEN_CONST, GEN_ALTSIGN, GEN_DENORMAL, GEN_HUGE, GEN_TINY,
       GEN_NONFINITE, GEN_FILLMIX, NUM_GEN };

static double gen_value(int kind, size_t i, double fill) {
  switch (kind) {
    case GEN_SMOOTH: return 20.0 * sin((double)i * 0.001) + 3.0 * cos((double)i * 0.013);
    case GEN_NOISY: return urand() * 200.0 - 100.0;
    case GEN_SPARSE: return rnd() % 20 == 0 ? urand() * 10.0 : 0.0;
    case GEN_CONST: return 4.25;
    case GEN_ALTSIGN: return (i & 1 ? -1.0 : 1.0) * (1.0 + urand());
    case GEN_DENORMAL: return (urand() - 0.5) * 1e-40;
    case GEN_HUGE: return (urand() - 0.5) * 6e37 * ((rnd() & 1) ? 1.0 : 1e-30);
    case GEN_TINY: return (urand() - 0.5) * 1e-12;
    case GEN_NONFINITE: {
      uint64_t r = rnd() % 10;
      return r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : urand();
    }
    default: return rnd() % 3 == 0 ? fill : sin((double)i * 0.01);
  }
}

static void test_round_trips_synthetic(void) {
  const size_t counts[] = {0, 1, 31, 32, 33, 4095, 4096, 4097, 100000};
  const double rels[] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
  for (int dt = 0; dt < 2; dt++) {
    zcclDataType_t type = dt ? zcclFloat64 : zcclFloat32;
    for (int kind = 0; kind < NUM_GEN; kind++) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        double fill = -1e34;
        int has_fill = kind == GEN_FILLMIX;
        void* x = malloc(n * 8 + 8);
        for (size_t i = 0; i < n; i++) {
          double v = gen_value(kind, i, fill);
          if (dt) ((double*)x)[i] = v;
          else ((float*)x)[i] = (float)v;
        }
        double lo = 0, hi = 0;
        size_t valid = 0;
        zc_value_range(x, n, type, has_fill, fill, &lo, &hi, &valid);
        for (size_t r = 0; r < sizeof rels / sizeof rels[0]; r++) {
          double range = valid && hi > lo ? hi - lo : 1.0;
          double eb = rels[r] * range; /* REL */
          round_trip(x, n, type, eb, has_fill, fill, 0);
          if (r == 2) round_trip(x, n, type, rels[r], has_fill, fill, 5); /* ABS, small chunks */
        }
        free(x);
      }
    }
  }
}

static void test_round_trips_real(void) {
  static const char* vars[] = {"coads_climatology.cdf:SST", "coads_climatology.cdf:AIRT",
                               "coads_climatology.cdf:SPEH", "coads_climatology.cdf:WSPD",
                               "coads_climatology.cdf:UWND", "coads_climatology.cdf:VWND",
                               "coads_climatology.cdf:SLP", "levitus_climatology.cdf:TEMP",
                               "levitus_climatology.cdf:SALT"};
  for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
    for (int dt = 0; dt < 2; dt++) {
      zccl_data_t d;
      char err[600];
      if (zccl_data_load(vars[v], dt, &d, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        continue;
      }
      CHECK(d.has_fill);
      zcclDataType_t type = dt ? zcclFloat64 : zcclFloat32;
      double lo, hi;
      size_t valid;
      zc_value_range(d.values, d.count, type, d.has_fill, d.fill, &lo, &hi, &valid);
      CHECK(valid > 0 && valid < d.count);
      for (double rel = 1e-1; rel > 1e-6; rel /= 10) {
        size_t sz = round_trip(d.values, d.count, type, rel * (hi - lo), 1, d.fill, 0);
        if (dt == 0 && rel < 2e-3 && rel > 5e-4)
          printf("  %-32s f32 REL 1e-3 ratio %.2f (fill kept)\n", vars[v],
                 sz ? (double)d.count * 4 / (double)sz : 0.0);
      }
      zccl_data_free(&d);
    }
  }
}

/* ---- homomorphic operations -------------------------------------------------- */

static uint8_t* compress_new(const void* x, size_t n, zcclDataType_t dt, double eb, int has_fill, double fill,
                             size_t* size) {
  zc_params_t p = {dt, eb, has_fill, fill, 0, 0};
  size_t cap = zc_compress_bound(n, dt, 0);
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(&p, x, n, s, cap, size, NULL, NULL), zcclSuccess);
  return s;
}

/* The documented SUM at exception positions (docs/format.md): b's NaN,
 * else a's, quieted; a NaN from the sum itself is x86's default NaN. (Plain
 * x + y leaves the choice between two NaNs to the compiler.) */
static double ref_sum_f32(float x, float y) {
  float r = isnan(y) ? y : isnan(x) ? x : x + y;
  uint32_t u;
  memcpy(&u, &r, 4);
  u = !isnan(r) ? u : (isnan(x) || isnan(y)) ? u | 0x00400000u : 0xffc00000u;
  memcpy(&r, &u, 4);
  return r;
}
static double ref_sum_f64(double x, double y) {
  double r = isnan(y) ? y : isnan(x) ? x : x + y;
  uint64_t u;
  memcpy(&u, &r, 8);
  u = !isnan(r) ? u : (isnan(x) || isnan(y)) ? u | 0x0008000000000000ull : 0xfff8000000000000ull;
  memcpy(&r, &u, 8);
  return r;
}

/* zc_hop(op, a, b) equals the canonical encoding of the integer-exact result. */
static void check_hop_exact(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn) {
  zc_header_t h;
  CHECK_RES(zc_header_read(a, an, &h), zcclSuccess);
  size_t n = (size_t)h.count, cap = zc_compress_bound(n, h.dtype, h.chunk_log2);
  int64_t *qa = malloc((n + 1) * 8), *qb = malloc((n + 1) * 8), *qr = malloc((n + 1) * 8);
  uint8_t *ka = malloc(n + 1), *kb = malloc(n + 1), *kr = malloc(n + 1);
  double *ra = malloc((n + 1) * 8), *rb = malloc((n + 1) * 8), *rr = malloc((n + 1) * 8);
  CHECK_RES(zc_decode_ints(a, an, qa, ka, ra), zcclSuccess);
  CHECK_RES(zc_decode_ints(b, bn, qb, kb, rb), zcclSuccess);
  zc_grid_t g;
  zc_grid_init(h.eb, &g);
  for (size_t i = 0; i < n; i++) {
    rr[i] = 0;
    qr[i] = 0;
    if (ka[i] == ZC_KIND_FILL || kb[i] == ZC_KIND_FILL) {
      kr[i] = ZC_KIND_FILL;
    } else if (ka[i] == ZC_KIND_EXCEPTION || kb[i] == ZC_KIND_EXCEPTION) {
      double x = ka[i] ? ra[i] : (h.dtype == zcclFloat32 ? zc_dequant_f32(qa[i], &g) : zc_dequant_f64(qa[i], &g));
      double y = kb[i] ? rb[i] : (h.dtype == zcclFloat32 ? zc_dequant_f32(qb[i], &g) : zc_dequant_f64(qb[i], &g));
      if (h.dtype == zcclFloat32) {
        float fx = (float)x, fy = (float)y;
        x = fx;
        y = fy;
        rr[i] = op == zcclSum ? ref_sum_f32(fx, fy) : (isnan(fx) || isnan(fy)) ? NAN : op == zcclMax ? fmax(x, y) : fmin(x, y);
      } else {
        rr[i] = op == zcclSum ? ref_sum_f64(x, y) : (isnan(x) || isnan(y)) ? NAN : op == zcclMax ? fmax(x, y) : fmin(x, y);
      }
      kr[i] = ZC_KIND_EXCEPTION;
    } else {
      kr[i] = ZC_KIND_ORDINARY;
      qr[i] = op == zcclSum ? qa[i] + qb[i] : op == zcclMax ? (qa[i] > qb[i] ? qa[i] : qb[i]) : (qa[i] < qb[i] ? qa[i] : qb[i]);
    }
  }
  uint8_t *want = malloc(cap), *got = malloc(cap);
  size_t wn = 0, gn = 0;
  CHECK_RES(zc_encode_ints(&h, qr, kr, rr, want, cap, &wn), zcclSuccess);
  int level = zc_simd_get();
  for (int l = 0; l < ZC_SIMD_NUM; l++) { /* every kernel level */
    if (zc_simd_set(l) != 0) continue;
    CHECK_RES(zc_hop(op, a, an, b, bn, got, cap, &gn), zcclSuccess);
    CHECK(wn == gn && memcmp(want, got, wn) == 0);
  }
  zc_simd_set(level);
  free(qa); free(qb); free(qr); free(ka); free(kb); free(kr); free(ra); free(rb); free(rr);
  free(want); free(got);
}

/* zc_hop_values(op, p, x, b) writes zc_hop(op, zc_compress(p, x), b)'s
 * bytes, at every kernel level, out of place and in place over b. */
static void check_hop_values(zcclRedOp_t op, zcclDataType_t dt, double eb, int has_fill, double fill, const void* x,
                             size_t n, const uint8_t* b, size_t bn) {
  zc_params_t p = {dt, eb, has_fill, fill, 0, 0};
  size_t cap = zc_compress_bound(n, dt, 0), an, wn, gn;
  uint8_t *a = malloc(cap), *want = malloc(cap), *got = malloc(cap);
  int level = zc_simd_get();
  zc_simd_set(ZC_SIMD_SCALAR);
  CHECK_RES(zc_compress(&p, x, n, a, cap, &an, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_hop(op, a, an, b, bn, want, cap, &wn), zcclSuccess);
  for (int l = 0; l < ZC_SIMD_NUM; l++) {
    if (zc_simd_set(l) != 0) continue;
    gn = 0;
    CHECK_RES(zc_hop_values(op, &p, x, n, b, bn, got, cap, &gn), zcclSuccess);
    CHECK(gn == wn && memcmp(want, got, wn) == 0);
    memcpy(got, b, bn);
    CHECK_RES(zc_hop_values(op, &p, x, n, got, bn, got, cap, &gn), zcclSuccess);
    CHECK(gn == wn && memcmp(want, got, wn) == 0);
  }
  zc_simd_set(level);
  free(a);
  free(want);
  free(got);
}

static void test_hops(void) {
  const size_t n = 20000;
  float* x = malloc(n * 4);
  float* y = malloc(n * 4);
  for (int kind = 0; kind < NUM_GEN; kind++) {
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)gen_value(kind, i, -1e34);
      y[i] = (float)gen_value((kind + 3) % NUM_GEN, i * 7, -1e34);
      if (i / 1000 % 3 == 1) x[i] = 0; /* zero blocks meeting non-zero ones */
      if (i / 1000 % 5 == 0) x[i] = y[i] = 0; /* zero blocks meeting zero blocks, at a chunk's start too */
    }
    for (int fill = 0; fill < 2; fill++) {
      size_t an, bn;
      uint8_t* a = compress_new(x, n, zcclFloat32, 1e-3, fill, -1e34, &an);
      uint8_t* b = compress_new(y, n, zcclFloat32, 1e-3, fill, -1e34, &bn);
      check_hop_exact(zcclSum, a, an, b, bn);
      check_hop_exact(zcclMax, a, an, b, bn);
      check_hop_exact(zcclMin, a, an, b, bn);
      check_hop_values(zcclSum, zcclFloat32, 1e-3, fill, -1e34, x, n, b, bn);
      check_hop_values(zcclMax, zcclFloat32, 1e-3, fill, -1e34, x, n, b, bn);
      check_hop_values(zcclMin, zcclFloat32, 1e-3, fill, -1e34, y, n, a, an);
      free(a);
      free(b);
    }
  }
  /* Narrow blocks from a chunk's first value on (the vector hop takes them
   * on 16-bit lanes while both are W <= 14),
   * with a stretch where both inputs' deltas are near +-amp / eb so the
   * sums outgrow the lanes (in phase) or cancel (opposite phase): amp 0.12
   * (deltas ~120, W 7), 8 (~8000, W 13) and 20 (~20000, W 15: not for 16-bit
   * lanes). An all-NaN first block in b makes a's delta at the result's
   * first ordinary value non-zero. */
  const float amps[3] = {0.12f, 8.0f, 20.0f};
  for (int v = 0; v < 3; v++) {
    float amp = amps[v];
    for (size_t i = 0; i < n; i++) {
      x[i] = 0.05f * sinf(0.003f * (float)i) + 0.02f;
      y[i] = 0.04f * cosf(0.005f * (float)i) - 0.01f;
      float alt = i % 2 ? amp : -amp;
      if (i >= 8000 && i < 9000) x[i] = alt;
      if (i >= 8000 && i < 8500) y[i] = alt;
      if (i >= 8500 && i < 9000) y[i] = -alt;
      if (i < ZC_BLOCK) y[i] = NAN;
      if (i < 2 * ZC_BLOCK) x[i] = alt / 2;
    }
    for (int k = 0; k < 2; k++) {
      size_t an, bn;
      uint8_t* a = compress_new(x, n, zcclFloat32, 1e-3, 0, 0, &an);
      uint8_t* b = compress_new(y, n, zcclFloat32, 1e-3, 0, 0, &bn);
      check_hop_exact(zcclSum, k ? b : a, k ? bn : an, k ? a : b, k ? an : bn);
      check_hop_values(zcclSum, zcclFloat32, 1e-3, 0, 0, k ? y : x, n, k ? a : b, k ? an : bn);
      free(a);
      free(b);
    }
  }
  /* Fill in one half of every block of a, the other half of b: every block
   * of the result is all fill (one byte), on every level. */
  for (size_t i = 0; i < n; i++) {
    x[i] = i % 32 < 16 ? -1e34f : 1.0f + 0.001f * (float)i;
    y[i] = i % 32 >= 16 ? -1e34f : 2.0f - 0.001f * (float)i;
  }
  size_t an, bn;
  uint8_t* a = compress_new(x, n, zcclFloat32, 1e-3, 1, -1e34, &an);
  uint8_t* b = compress_new(y, n, zcclFloat32, 1e-3, 1, -1e34, &bn);
  check_hop_exact(zcclSum, a, an, b, bn);
  check_hop_values(zcclSum, zcclFloat32, 1e-3, 1, -1e34, x, n, b, bn);
  check_hop_values(zcclMin, zcclFloat32, 1e-3, 1, -1e34, y, n, a, an);
  free(a);
  free(b);
  free(x);
  free(y);
}

/* Real fields with their fill values kept: TEMP + SALT of levitus share
 * the land mask, so coasts (blocks mixing values and fill) meet coasts, at
 * every kernel level, against the integer-exact reference. */
static void test_hops_real(void) {
  zccl_data_t t, sa;
  char err[600];
  if (zccl_data_load("levitus_climatology.cdf:TEMP", 0, &t, err, sizeof err) != 0 ||
      zccl_data_load("levitus_climatology.cdf:SALT", 0, &sa, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    CHECK(0);
    return;
  }
  CHECK(t.count == sa.count && t.has_fill && sa.has_fill && t.fill == sa.fill);
  size_t an, bn;
  uint8_t* a = compress_new(t.values, t.count, zcclFloat32, 1e-2, 1, t.fill, &an);
  uint8_t* b = compress_new(sa.values, sa.count, zcclFloat32, 1e-2, 1, sa.fill, &bn);
  check_hop_exact(zcclSum, a, an, b, bn);
  check_hop_exact(zcclMax, a, an, b, bn);
  check_hop_values(zcclSum, zcclFloat32, 1e-2, 1, t.fill, t.values, t.count, b, bn);
  check_hop_values(zcclMax, zcclFloat32, 1e-2, 1, t.fill, sa.values, sa.count, a, an);
  free(b);
  /* TEMP against itself a third of the field on (as zccl-codec stats pairs
   * them): coasts meet open sea and land elsewhere, fill runs cross blocks,
   * and the result lags its inputs after them. */
  float* r = malloc(t.count * 4);
  size_t sh = t.count / 3;
  for (size_t i = 0; i < t.count; i++) r[i] = ((const float*)t.values)[(i + sh) % t.count];
  for (int k = 0; k < 2; k++) {
    double eb = k ? 1e-4 : 1e-2; /* wider blocks at 1e-4 */
    uint8_t* c = compress_new(t.values, t.count, zcclFloat32, eb, 1, t.fill, &an);
    b = compress_new(r, t.count, zcclFloat32, eb, 1, t.fill, &bn);
    check_hop_exact(zcclSum, c, an, b, bn);
    check_hop_exact(zcclSum, b, bn, c, an);
    free(c);
    free(b);
  }
  free(r);
  free(a);
  zccl_data_free(&t);
  zccl_data_free(&sa);
}

/* A chain of N-1 sums: bit growth, the N*eb bound, AVG through the divisor. */
static void test_hsum_chain(zcclDataType_t dt, double eb) {
  const size_t n = 30000;
  const int N = 64;
  size_t esize = dt == zcclFloat32 ? 4 : 8;
  double ulp = dt == zcclFloat32 ? 6e-8 : 1.2e-16; /* the output type's rounding, relative */
  double* exact = calloc(n, sizeof(double));
  double* mag = calloc(n, sizeof(double)); /* sum of |inputs|: scale of rounding */
  void* x = malloc(n * 8);
  uint8_t* acc = NULL;
  size_t acc_n = 0, cap = zc_compress_bound(n, dt, 0);
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < n; i++) {
      double v = 1000.0 * sin((double)(i + 37 * r) * 0.002) + (r % 5 == 0 ? urand() : 0.0);
      if (dt == zcclFloat32) v = (float)v;
      exact[i] += v;
      mag[i] += fabs(v);
      if (dt == zcclFloat32) ((float*)x)[i] = (float)v;
      else ((double*)x)[i] = v;
    }
    size_t sn;
    uint8_t* s = compress_new(x, n, dt, eb, 0, 0, &sn);
    if (acc == NULL) {
      acc = s;
      acc_n = sn;
      continue;
    }
    if (r == 1 || r == 17 || r == N - 1) {
      check_hop_exact(zcclSum, acc, acc_n, s, sn);
      check_hop_values(zcclSum, dt, eb, 0, 0, x, n, acc, acc_n); /* partial sums past 2^29 at 1e-6 */
    }
    uint8_t* next = malloc(cap);
    size_t next_n;
    CHECK_RES(zc_hop(zcclSum, acc, acc_n, s, sn, next, cap, &next_n), zcclSuccess);
    free(acc);
    free(s);
    acc = next;
    acc_n = next_n;
    if (r == 1 || r == N - 1) {
      void* y = malloc(n * esize);
      size_t got;
      for (int avg = 0; avg < (r == N - 1 ? 2 : 1); avg++) {
        if (avg) CHECK_RES(zc_set_divisor(acc, acc_n, (uint32_t)N), zcclSuccess); /* AVG */
        CHECK_RES(zc_decompress(acc, acc_n, y, n, &got, NULL, NULL), zcclSuccess);
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
          double want = avg ? exact[i] / N : exact[i];
          double have = dt == zcclFloat32 ? ((float*)y)[i] : ((double*)y)[i];
          /* N*eb, plus the dtype's rounding: each input's reconstruction and
           * each float addition of exception values (of partial sums up to
           * mag) may round by half an ulp (docs/format.md). */
          double bound = (avg ? 1.0 / N : 1.0) * ((r + 1) * eb + (r + 2) * mag[i] * ulp) + 2 * fabs(want) * ulp;
          if (!(fabs(have - want) <= bound) && bad++ == 0)
            fprintf(stderr, "chain dt %d eb %g r %d avg %d: [%zu] %.9g vs %.9g\n", dt, eb, r, avg, i, have, want);
        }
        CHECK(bad == 0);
      }
      free(y);
    }
  }
  free(acc);
  free(x);
  free(exact);
  free(mag);
}

/* ---- bad input ------------------------------------------------------------------ */

static void test_bad_streams(void) {
  const size_t n = 3000;
  float* x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)gen_value(i % 7 ? GEN_SMOOTH : GEN_NONFINITE, i, 0);
  zc_params_t p = {zcclFloat32, 1e-3, 1, 0.5, 8, 0};
  size_t cap = zc_compress_bound(n, zcclFloat32, 8), size;
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(&p, x, n, s, cap, &size, NULL, NULL), zcclSuccess);
  float* y = malloc(n * 4);
  size_t got;
  /* Every truncation is an error, read within bounds (ASan). */
  for (size_t k = 0; k < size; k++) {
    uint8_t* t = malloc(k + 1);
    memcpy(t, s, k);
    CHECK(zc_decompress(t, k, y, n, &got, NULL, NULL) == zcclInvalidArgument);
    free(t);
  }
  CHECK_RES(zc_decompress(s, size, y, n - 1, &got, NULL, NULL), zcclInvalidArgument); /* too small */
  CHECK_LAST_ERROR_HAS("output room for");
  /* Flipped bits anywhere: an error or some values, never a crash. */
  uint8_t* t = malloc(size);
  for (int k = 0; k < 4000; k++) {
    memcpy(t, s, size);
    t[rnd() % size] ^= (uint8_t)(1u << (rnd() % 8));
    zcclResult_t r = zc_decompress(t, size, y, n, &got, NULL, NULL);
    CHECK(r == zcclSuccess || r == zcclInvalidArgument);
  }
  /* Header fields. */
  memcpy(t, s, size);
  t[0] = 'X';
  CHECK_RES(zc_decompress(t, size, y, n, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("bad magic");
  memcpy(t, s, size);
  t[4] = 2;
  CHECK_RES(zc_decompress(t, size, y, n, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("version");
  memcpy(t, s, size);
  t[6] |= 0x80;
  CHECK_RES(zc_decompress(t, size, y, n, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("reserved");
  memcpy(t, s, size);
  double bad_eb = -1;
  memcpy(t + 16, &bad_eb, 8);
  CHECK_RES(zc_decompress(t, size, y, n, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_RES(zc_decompress(s, size + 0, y, n, &got, NULL, NULL), zcclSuccess);
  /* Hops on streams of different bounds, counts or dtypes. */
  zc_params_t p2 = p;
  p2.eb = 2e-3;
  uint8_t* s2 = malloc(cap);
  size_t size2;
  CHECK_RES(zc_compress(&p2, x, n, s2, cap, &size2, NULL, NULL), zcclSuccess);
  uint8_t* o = malloc(cap);
  size_t on;
  CHECK_RES(zc_hop(zcclSum, s, size, s2, size2, o, cap, &on), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("streams differ");
  CHECK_RES(zc_compress(&p, x, n - 1, s2, cap, &size2, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_hop(zcclSum, s, size, s2, size2, o, cap, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop(zcclProd, s, size, s, size, o, cap, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop(zcclSum, s, size, s, size, o, 10, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop(zcclSum, s, size, s, size, s + 1, size, &on), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("overlaps");
  /* Values with a stream their compression does not match. */
  CHECK_RES(zc_hop_values(zcclSum, &p2, x, n, s, size, o, cap, &on), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("differs");
  CHECK_RES(zc_hop_values(zcclSum, &p, x, n - 1, s, size, o, cap, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop_values(zcclProd, &p, x, n, s, size, o, cap, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop_values(zcclSum, &p, x, n, s, size, o, 10, &on), zcclInvalidArgument);
  CHECK_RES(zc_hop_values(zcclSum, &p, x, n, s, size, s + 1, size, &on), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("overlaps");
  CHECK_RES(zc_hop_values(zcclSum, &p, x, n, s, size - 1, o, cap, &on), zcclInvalidArgument);
  for (int k = 0; k < 2000; k++) { /* a corrupt stream: an error or a result, never a crash */
    memcpy(t, s, size);
    t[rnd() % size] ^= (uint8_t)(1u << (rnd() % 8));
    zcclResult_t r = zc_hop_values(k % 2 ? zcclMax : zcclSum, &p, x, n, t, size, o, cap, &on);
    CHECK(r == zcclSuccess || r == zcclInvalidArgument || r == zcclInvalidUsage);
  }
  { /* in place over either input gives the out-of-place bytes */
    uint8_t *a = malloc(cap), *b = malloc(cap), *ref = malloc(cap);
    size_t an, bn, rn, in_n;
    CHECK_RES(zc_compress(&p, x, n, a, cap, &an, NULL, NULL), zcclSuccess);
    for (size_t i = 0; i < n; i++) x[i] = x[i] * 0.5f + 1.0f;
    CHECK_RES(zc_compress(&p, x, n, b, cap, &bn, NULL, NULL), zcclSuccess);
    CHECK_RES(zc_hop(zcclSum, a, an, b, bn, ref, cap, &rn), zcclSuccess);
    CHECK_RES(zc_hop(zcclSum, a, an, b, bn, a, cap, &in_n), zcclSuccess);
    CHECK(in_n == rn && memcmp(a, ref, rn) == 0);
    CHECK_RES(zc_compress(&p, x, n, a, cap, &an, NULL, NULL), zcclSuccess);
    CHECK_RES(zc_hop(zcclMax, a, an, b, bn, ref, cap, &rn), zcclSuccess);
    CHECK_RES(zc_hop(zcclMax, a, an, b, bn, b, cap, &in_n), zcclSuccess);
    CHECK(in_n == rn && memcmp(b, ref, rn) == 0);
    free(a);
    free(b);
    free(ref);
  }
  /* Compression parameters. */
  zc_params_t bad = p;
  bad.eb = 0;
  CHECK_RES(zc_compress(&bad, x, n, o, cap, &on, NULL, NULL), zcclInvalidArgument);
  bad = p;
  bad.dtype = zcclInt32;
  CHECK_RES(zc_compress(&bad, x, n, o, cap, &on, NULL, NULL), zcclInvalidArgument);
  bad = p;
  bad.chunk_log2 = 17;
  CHECK_RES(zc_compress(&bad, x, n, o, cap, &on, NULL, NULL), zcclInvalidArgument);
  CHECK_RES(zc_compress(&p, x, n, o, 100, &on, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("too small");
  free(x); free(y); free(s); free(s2); free(t); free(o);
}

/* Corrupt narrow streams (widths, sign modes, planes, fill bitmaps,
 * index): every kernel level's hop and decompression give the same result
 * and bytes as the scalar one, so the branch-free 16-bit blocks of the
 * vector kernels leave every block they do not take to the checked paths
 * (and read within bounds: ASan). With fill declared, runs of fill values
 * make all-fill and part-fill blocks (coasts), which the 16-bit form takes
 * too. */
static void test_corrupt_levels(void) {
  const size_t n = 6000;
  const float fv = -1e34f;
  float* x = malloc(n * 4);
  float* y = malloc(n * 4);
  size_t cap = zc_compress_bound(n, zcclFloat32, 0);
  uint8_t *ref = malloc(cap), *got = malloc(cap);
  float *v0 = malloc(n * 4), *v1 = malloc(n * 4);
  int level = zc_simd_get();
  for (int fill = 0; fill < 2; fill++) {
    /* Stretches of zeros (whole zero blocks) at other places in each input:
     * a corrupted block meets a zero block too (the hop copies a canonical
     * block opposite a zero one, and must judge a non-canonical one). */
    for (size_t i = 0; i < n; i++) {
      x[i] = (i / 448) % 3 == 0 ? 0.0f : 0.5f * sinf(0.01f * (float)i) + (i % 97 == 0 ? 0.3f : 0.0f);
      y[i] = (i / 640) % 2 ? 0.0f : 0.4f * cosf(0.013f * (float)i);
      if (fill && (i / 40) % 5 == 1) x[i] = fv;
      if (fill && (i / 72) % 4 == 2) y[i] = fv;
    }
    size_t an, bn, rn, gn;
    uint8_t* a = compress_new(x, n, zcclFloat32, 1e-4, fill, fv, &an);
    uint8_t* b = compress_new(y, n, zcclFloat32, 1e-4, fill, fv, &bn);
    uint8_t* t = malloc(an);
    int taken = 0;
    for (int k = 0; k < 1500; k++) {
      memcpy(t, a, an);
      size_t at = ZC_HEADER_BYTES + rnd() % (an - ZC_HEADER_BYTES);
      t[at] ^= (uint8_t)(1u << (rnd() % 8));
      if (k % 3 == 0) t[(at + 1) % an] ^= 0x40; /* a sign mode or a width nibble too */
      zc_simd_set(ZC_SIMD_SCALAR);
      zcclResult_t r0 = zc_hop(zcclSum, t, an, b, bn, ref, cap, &rn);
      taken += r0 == zcclSuccess;
      size_t c0 = 0, c1 = 0;
      zcclResult_t d0 = zc_decompress(t, an, v0, n, &c0, NULL, NULL);
      for (int l = ZC_SIMD_SCALAR + 1; l < ZC_SIMD_NUM; l++) {
        if (zc_simd_set(l) != 0) continue;
        zcclResult_t d1 = zc_decompress(t, an, v1, n, &c1, NULL, NULL);
        CHECK(d1 == d0 && (d0 != zcclSuccess || (c1 == c0 && memcmp(v0, v1, c0 * 4) == 0)));
        zcclResult_t r = zc_hop(zcclSum, k % 2 ? b : t, k % 2 ? bn : an, k % 2 ? t : b, k % 2 ? an : bn, got, cap, &gn);
        zcclResult_t rs = r0;
        if (k % 2) { /* the same pair the other way round: compare with scalar's */
          zc_simd_set(ZC_SIMD_SCALAR);
          rs = zc_hop(zcclSum, b, bn, t, an, ref, cap, &rn);
        }
        CHECK(r == rs && (r != zcclSuccess || (gn == rn && memcmp(got, ref, rn) == 0)));
      }
    }
    CHECK(taken > 0 && taken < 1500); /* both outcomes met */
    free(a); free(b); free(t);
  }
  zc_simd_set(level);
  free(x); free(y); free(ref); free(got); free(v0); free(v1);
}

static int progress_calls;
static void on_progress(void* arg, uint32_t done, uint32_t total) {
  (void)arg;
  progress_calls++;
  CHECK(done >= 1 && done <= total);
}

static void test_progress(void) {
  const size_t n = 10 * 4096 + 5;
  float* x = calloc(n, 4);
  zc_params_t p = {zcclFloat32, 1e-2, 0, 0, 12, 0};
  size_t cap = zc_compress_bound(n, zcclFloat32, 12), size, got;
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(&p, x, n, s, cap, &size, on_progress, NULL), zcclSuccess);
  CHECK(progress_calls == 11);
  CHECK_RES(zc_decompress(s, size, x, n, &got, on_progress, NULL), zcclSuccess);
  CHECK(progress_calls == 22);
  /* All-zero data: one byte per block plus chunk overhead. */
  CHECK(size < 40 + 11 * 12 + n / 32 + 11);
  free(x);
  free(s);
}

/* zc_value_range against a value-by-value reference: valid = finite and
 * not the fill (a zero fill matches -0.0 too), on blocks the vector scan
 * takes whole and blocks it must rescan, for both dtypes (at the level
 * zc_simd_set chose). */
static void test_value_range(void) {
  static const size_t counts[] = {0, 1, 7, 1023, 1024, 1025, 5000, 100003};
  static const double fills[] = {-1e34, 0.0, 3.5};
  uint64_t seed = 12345;
  for (int dt = 0; dt < 2; dt++) {
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      for (int fi = -1; fi < 3; fi++) { /* -1: no fill */
        for (int special = 0; special < 2; special++) {
          size_t n = counts[c];
          int has_fill = fi >= 0;
          double fill = has_fill ? fills[fi] : 0.0;
          void* x = malloc(n * 8 + 8);
          double lo = INFINITY, hi = -INFINITY;
          size_t want = 0;
          for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            double v = (double)(int64_t)(seed >> 20) * 1e-9;
            unsigned r = (unsigned)(seed >> 8) % 4096;
            if (special && r < 3) v = r == 0 ? NAN : r == 1 ? INFINITY : -INFINITY;
            else if (special && r < 6) v = fill;
            else if (special && r < 8) v = -0.0;
            if (dt) ((double*)x)[i] = v;
            else ((float*)x)[i] = (float)v;
            double s = dt ? v : (double)(float)v, fs = dt ? fill : (double)(float)fill;
            if (!isfinite(s) || (has_fill && s == fs)) continue;
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
            want++;
          }
          double glo = 7, ghi = 7;
          size_t got = 99;
          zc_value_range(x, n, dt ? zcclFloat64 : zcclFloat32, has_fill, fill, &glo, &ghi, &got);
          CHECK(got == want);
          if (want) CHECK(glo == lo && ghi == hi);
          else CHECK(glo == 7 && ghi == 7);
          free(x);
        }
      }
    }
  }
}

int main(void) {
  /* Every instruction-set level's block kernel (the scalar level's is SSE2). */
  int best = zc_simd_get();
  for (int l = 0; l < ZC_SIMD_NUM; l++)
    if (zc_simd_set(l) == 0) test_value_range();
  zc_simd_set(best);
  test_block_round_trip();
  test_grid_edges();
  test_round_trips_synthetic();
  test_round_trips_real();
  test_hops();
  test_hops_real();
  test_hsum_chain(zcclFloat64, 1e-3);
  test_hsum_chain(zcclFloat32, 1e-2);
  test_hsum_chain(zcclFloat32, 1e-6); /* widths past the vector path */
  test_bad_streams();
  test_corrupt_levels();
  test_progress();
  printf("%ld values checked against their bound; kernels: %s (best %s)\n", checked_values,
         zc_simd_name(zc_simd_get()), zc_simd_name(zc_simd_best()));
  TEST_DONE();
}
