/* The ZFP baseline behind zccl's interface: fixed accuracy keeps every error
 * within the tolerance on smooth and real data, fixed rate gives its size,
 * non-finite input and corrupt streams are errors. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"
#include "zc_zfp.h"
#include "zccl_data.h"

static size_t check_accuracy(const void* x, size_t n, zcclDataType_t dt, double tol, double* max_err) {
  size_t esize = dt == zcclFloat32 ? 4 : 8, cap = zc_zfp_bound(n, dt, ZC_ZFP_ACCURACY, tol), size = 0, got = 0;
  uint8_t* s = malloc(cap);
  void* y = malloc(n * esize + 8);
  CHECK_RES(zc_zfp_compress(dt, ZC_ZFP_ACCURACY, tol, x, n, s, cap, &size), zcclSuccess);
  CHECK_RES(zc_zfp_decompress(s, size, y, n, &got), zcclSuccess);
  CHECK(got == n);
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double a = dt == zcclFloat32 ? ((const float*)x)[i] : ((const double*)x)[i];
    double b = dt == zcclFloat32 ? ((float*)y)[i] : ((double*)y)[i];
    double err = isfinite(b) ? fabs(a - b) : INFINITY; /* a NaN output must not leave m at 0 */
    m = err > m ? err : m;
  }
  *max_err = m;
  free(s);
  free(y);
  return size;
}

int main(void) {
  const size_t n = 100000;
  double* xd = malloc(n * 8);
  float* xf = malloc(n * 4);
  for (size_t i = 0; i < n; i++) xd[i] = 30.0 * sin((double)i * 0.002) + 2.0 * cos((double)i * 0.05), xf[i] = (float)xd[i];
  for (double tol = 1e-1; tol >= 1e-4; tol /= 10) {
    double e;
    check_accuracy(xf, n, zcclFloat32, tol, &e);
    CHECK(e <= tol);
    check_accuracy(xd, n, zcclFloat64, tol, &e);
    CHECK(e <= tol);
  }
  /* A real field, fill points zeroed (ZFP has no fill handling). */
  zccl_data_t d;
  char err[600];
  CHECK(zccl_data_load("levitus_climatology.cdf:TEMP", 0, &d, err, sizeof err) == 0);
  zccl_data_replace_fill(&d, 0.0);
  double e;
  size_t sz = check_accuracy(d.values, d.count, zcclFloat32, 0.0318, &e);
  CHECK(e <= 0.0318);
  printf("zfp accuracy 0.0318 on levitus TEMP: ratio %.2f, max err %.4g\n", (double)d.count * 4 / (double)sz, e);
  zccl_data_free(&d);
  /* Fixed rate: the size follows the rate. */
  size_t cap = zc_zfp_bound(n, zcclFloat32, ZC_ZFP_RATE, 8), size, got;
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_zfp_compress(zcclFloat32, ZC_ZFP_RATE, 8, xf, n, s, cap, &size), zcclSuccess);
  CHECK(size >= n && size <= n + 64 + ZC_ZFP_HEADER_BYTES);
  float* y = malloc(n * 4);
  CHECK_RES(zc_zfp_decompress(s, size, y, n, &got), zcclSuccess);
  CHECK(got == n);
  /* Fixed rate bounds no error: loosely, all finite and within 2% of the
   * data's range (8 bits/value here gives about 0.33%). */
  double lo = xf[0], hi = xf[0], me = 0;
  for (size_t i = 0; i < n; i++) {
    lo = xf[i] < lo ? xf[i] : lo;
    hi = xf[i] > hi ? xf[i] : hi;
    double ei = isfinite(y[i]) ? fabs((double)y[i] - xf[i]) : INFINITY;
    me = ei > me ? ei : me;
  }
  printf("zfp rate 8: max err %.4g of range %.4g\n", me, hi - lo);
  CHECK(me <= 0.02 * (hi - lo));
  /* Bad input. */
  xf[7] = NAN;
  CHECK_RES(zc_zfp_compress(zcclFloat32, ZC_ZFP_RATE, 8, xf, n, s, cap, &size), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("not finite");
  CHECK_RES(zc_zfp_compress(zcclFloat32, ZC_ZFP_RATE, 0.5, xf, n, s, cap, &size), zcclInvalidArgument);
  CHECK_RES(zc_zfp_compress(zcclInt32, ZC_ZFP_ACCURACY, 1e-3, xf, n, s, cap, &size), zcclInvalidArgument);
  xf[7] = 1;
  CHECK_RES(zc_zfp_compress(zcclFloat32, ZC_ZFP_RATE, 8, xf, n, s, cap, &size), zcclSuccess);
  CHECK_RES(zc_zfp_decompress(s, size - 1, y, n, &got), zcclInvalidArgument);
  CHECK_RES(zc_zfp_decompress(s, size, y, n - 1, &got), zcclInvalidArgument);
  s[0] = 'X';
  CHECK_RES(zc_zfp_decompress(s, size, y, n, &got), zcclInvalidArgument);
  s[0] = 'Z';
  uint64_t rnd = 1;
  for (int k = 0; k < 200; k++) { /* flipped payload bits: values change, nothing breaks */
    rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
    size_t at = ZC_ZFP_HEADER_BYTES + (size_t)(rnd >> 33) % (size - ZC_ZFP_HEADER_BYTES);
    s[at] ^= 0x10;
    zcclResult_t r = zc_zfp_decompress(s, size, y, n, &got);
    CHECK(r == zcclSuccess || r == zcclInvalidArgument);
  }
  free(s);
  free(y);
  free(xd);
  free(xf);
  TEST_DONE();
}
