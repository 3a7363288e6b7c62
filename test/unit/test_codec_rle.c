/* RLE of zero runs: exact round trips (but -0.0 -> +0.0), never larger than
 * the input plus the header, reductions on encoded data equal to the plain
 * reductions, corrupted streams rejected. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "zc_rle.h"

static uint64_t rs = 12345;
static uint64_t rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}

/* kind: 0 sparse runs, 1 dense, 2 all zero, 3 isolated zeros, 4 alternating, 5 specials */
static double gen(int kind, size_t i) {
  switch (kind) {
    case 0: return (i / 50) % 4 == 0 ? (double)(rnd() % 100) - 50.0 : 0.0;
    case 1: return (double)(rnd() % 1000) + 0.5;
    case 2: return 0.0;
    case 3: return i % 2 ? 0.0 : 1.0 + (double)(i % 7);
    case 4: return i % 3 == 0 ? -0.0 : (i % 3 == 1 ? 0.0 : 2.5);
    default: {
      uint64_t r = rnd() % 8;
      return r == 0 ? NAN : r == 1 ? -INFINITY : r == 2 ? 0.0 : r == 3 ? -0.0 : r == 4 ? 1e-310 : 3.0;
    }
  }
}

static int same_bits(const void* a, const void* b, size_t esize) { return memcmp(a, b, esize) == 0; }

static void test_round_trips(void) {
  const size_t counts[] = {0, 1, 2, 3, 31, 100, 4097, 100000};
  for (int dt = 0; dt < 2; dt++) {
    zcclDataType_t type = dt ? zcclFloat64 : zcclFloat32;
    size_t esize = dt ? 8 : 4;
    for (int kind = 0; kind < 6; kind++) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        uint8_t* x = malloc(n * esize + 8);
        uint8_t* y = malloc(n * esize + 8);
        for (size_t i = 0; i < n; i++) {
          double v = gen(kind, i);
          if (dt) ((double*)x)[i] = v;
          else ((float*)x)[i] = (float)v;
        }
        size_t cap = zc_rle_bound(n, type), size = 0, got = 0;
        uint8_t* s = malloc(cap);
        CHECK_RES(zc_rle_encode(type, x, n, s, cap, &size), zcclSuccess);
        CHECK(size <= ZC_RLE_HEADER_BYTES + n * esize); /* zero growth */
        if (kind == 2 && n >= 2) CHECK(size == ZC_RLE_HEADER_BYTES + 2 * esize);
        CHECK_RES(zc_rle_decode(s, size, y, n, &got), zcclSuccess);
        CHECK(got == n);
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
          double a = dt ? ((double*)x)[i] : ((float*)x)[i];
          if (a == 0.0) bad += (dt ? ((double*)y)[i] : ((float*)y)[i]) != 0.0 || signbit(dt ? ((double*)y)[i] : ((float*)y)[i]);
          else bad += !same_bits(x + i * esize, y + i * esize, esize);
        }
        CHECK(bad == 0);
        free(x);
        free(y);
        free(s);
      }
    }
  }
}

static void test_reductions(void) {
  const size_t n = 20000;
  const zcclRedOp_t ops[4] = {zcclSum, zcclProd, zcclMax, zcclMin};
  for (int dt = 0; dt < 2; dt++) {
    zcclDataType_t type = dt ? zcclFloat64 : zcclFloat32;
    size_t esize = dt ? 8 : 4;
    for (int ka = 0; ka < 6; ka++) {
      int kb = (ka * 5 + 1) % 6;
      uint8_t *a = malloc(n * esize), *b = malloc(n * esize), *want = malloc(n * esize), *got = malloc(n * esize);
      for (size_t i = 0; i < n; i++) {
        double u = gen(ka, i), v = gen(kb, i + 13);
        if (ka == 1 && i % 5 == 0) v = -u; /* cancellations create zeros */
        if (dt) ((double*)a)[i] = u, ((double*)b)[i] = v;
        else ((float*)a)[i] = (float)u, ((float*)b)[i] = (float)v;
      }
      size_t cap = zc_rle_bound(n, type), an, bn, rn, cnt;
      uint8_t *sa = malloc(cap), *sb = malloc(cap), *sr = malloc(cap);
      CHECK_RES(zc_rle_encode(type, a, n, sa, cap, &an), zcclSuccess);
      CHECK_RES(zc_rle_encode(type, b, n, sb, cap, &bn), zcclSuccess);
      for (int o = 0; o < 4; o++) {
        zcclRedOp_t op = ops[o];
        for (size_t i = 0; i < n; i++) { /* the plain reduction, zeros made +0 as RLE does */
          double u = dt ? ((double*)a)[i] : ((float*)a)[i], v = dt ? ((double*)b)[i] : ((float*)b)[i];
          if (u == 0.0) u = 0.0;
          if (v == 0.0) v = 0.0;
          double r = op == zcclSum ? u + v : op == zcclProd ? u * v
                     : (isnan(u) || isnan(v)) ? NAN : op == zcclMax ? fmax(u, v) : fmin(u, v);
          if (!dt) { /* float32 arithmetic */
            float fu = (float)u, fv = (float)v;
            r = op == zcclSum ? (double)(fu + fv) : op == zcclProd ? (double)(fu * fv) : r;
          }
          if (dt) ((double*)want)[i] = r;
          else ((float*)want)[i] = (float)r;
        }
        /* encoded b into plain a */
        CHECK_RES(zc_rle_reduce_plain(op, sb, bn, a, got), zcclSuccess);
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
          double w = dt ? ((double*)want)[i] : ((float*)want)[i], g = dt ? ((double*)got)[i] : ((float*)got)[i];
          bad += !(w == g || (isnan(w) && isnan(g)));
        }
        CHECK(bad == 0);
        /* in place (out == plain): the same result */
        memcpy(got, a, n * esize);
        CHECK_RES(zc_rle_reduce_plain(op, sb, bn, got, got), zcclSuccess);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
          double w = dt ? ((double*)want)[i] : ((float*)want)[i], g = dt ? ((double*)got)[i] : ((float*)got)[i];
          bad += !(w == g || (isnan(w) && isnan(g)));
        }
        CHECK(bad == 0);
        /* encoded a with encoded b, without decoding */
        CHECK_RES(zc_rle_reduce_rle(op, sa, an, sb, bn, sr, cap, &rn), zcclSuccess);
        CHECK(rn <= ZC_RLE_HEADER_BYTES + n * esize);
        CHECK_RES(zc_rle_decode(sr, rn, got, n, &cnt), zcclSuccess);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
          double w = dt ? ((double*)want)[i] : ((float*)want)[i], g = dt ? ((double*)got)[i] : ((float*)got)[i];
          bad += !(w == g || (isnan(w) && isnan(g)));
        }
        CHECK(bad == 0);
      }
      free(a); free(b); free(want); free(got); free(sa); free(sb); free(sr);
    }
  }
}

static void test_bad_streams(void) {
  float x[300];
  for (int i = 0; i < 300; i++) x[i] = i % 10 < 6 ? 0.0f : (float)i;
  uint8_t s[2000], t[2000];
  float y[300];
  size_t size, got;
  CHECK_RES(zc_rle_encode(zcclFloat32, x, 300, s, sizeof s, &size), zcclSuccess);
  for (size_t k = 0; k < size; k++) {
    zcclResult_t r = zc_rle_decode(s, k, y, 300, &got);
    CHECK(r == zcclInvalidArgument);
  }
  for (int k = 0; k < 3000; k++) {
    memcpy(t, s, size);
    t[rnd() % size] ^= (uint8_t)(1u << (rnd() % 8));
    zcclResult_t r = zc_rle_decode(t, size, y, 300, &got);
    CHECK(r == zcclSuccess || r == zcclInvalidArgument);
    r = zc_rle_reduce_plain(zcclSum, t, size, x, y);
    CHECK(r == zcclSuccess || r == zcclInvalidArgument);
  }
  CHECK_RES(zc_rle_decode(s, size, y, 299, &got), zcclInvalidArgument);
  CHECK_RES(zc_rle_encode(zcclInt32, x, 300, s, sizeof s, &size), zcclInvalidArgument);
  CHECK_RES(zc_rle_encode(zcclFloat32, x, 300, s, 100, &size), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("too small");
  CHECK_RES(zc_rle_reduce_plain(zcclAvg, s, size, x, y), zcclInvalidArgument);
  /* A header count whose bound overflows size_t: refused, not wrapped. */
  CHECK(zc_rle_bound(SIZE_MAX / 4, zcclFloat32) == SIZE_MAX);
  CHECK_RES(zc_rle_encode(zcclFloat32, x, 300, s, sizeof s, &size), zcclSuccess);
  uint64_t huge = (uint64_t)1 << 62;
  memcpy(s + 8, &huge, 8);
  CHECK_RES(zc_rle_reduce_rle(zcclSum, s, size, s, size, t, sizeof t, &got), zcclInvalidArgument);
  CHECK(fabs(zc_rle_zero_fraction(x, 300, zcclFloat32, 0) - 0.6) < 1e-9);
  CHECK(zc_rle_zero_fraction(x, 300, zcclFloat32, 30) > 0.3);
}

int main(void) {
  test_round_trips();
  test_reductions();
  test_bad_streams();
  TEST_DONE();
}
