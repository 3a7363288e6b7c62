/* The cuda device (zd_dev_t of kind ZD_CUDA) against the host device, bit
 * for bit: the buffer pool and copies in every direction, reduce for every
 * dtype x op (random data with NaN, +-0, subnormals and values that
 * overflow), the fill variants, divide, value range, events, a kernel's
 * error surfacing at the wait, and the stream codec with its sizes in
 * flight between kernels (a chain of 700 in place, across streams). Without a CUDA
 * device (or without a CUDA build) it reports itself skipped, never passed.
 * test/unit/test_device.c runs its reference checks on cuda too. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zd_dev_impl.h"
#include "zu_dtype.h"

/* The stream format's codec row (hz: szp's streams, reduced as they are). */
#define HZ zc_codec_info(zcclCodecHz)
static size_t hz_bound(size_t n) {
  zc_params_t p = {.dtype = zcclFloat32};
  return HZ->ops->bound(&p, n);
}

static const zcclRedOp_t ops[] = {zcclSum, zcclProd, zcclMax, zcclMin};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return test_xorshift(&rng_state); }

/* Largest finite code of each narrow format: sums and products of these
 * overflow (fp16/bf16 to inf, fp8 saturating). */
static uint64_t narrow_max(zcclDataType_t t) {
  switch (t) {
    case zcclFloat16: return 0x7bff;
    case zcclBfloat16: return 0x7f7f;
    case zcclFloat8e4m3: return 0x7e;
    case zcclFloat8e5m2: return 0x7b;
    default: return 0;
  }
}

static void set_bits(zcclDataType_t t, void* p, size_t i, uint64_t v) {
  switch (zu_dtype_size(t)) {
    case 1: ((uint8_t*)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t*)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t*)p)[i] = (uint32_t)v; break;
    default: ((uint64_t*)p)[i] = v; break;
  }
}

static void fill_random(zcclDataType_t t, void* p, size_t n) {
  size_t es = zu_dtype_size(t);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rnd();
    if (t == zcclFloat32) {
      float v = ldexpf((float)(int32_t)(r >> 40) / 8388608.0f, (int)(r % 40) - 20);
      if (r % 97 == 0) v = NAN;
      if (r % 89 == 0) v = (r & 1) ? INFINITY : -INFINITY;
      if (r % 83 == 0) v = (r & 2) ? 0.0f : -0.0f;
      if (r % 79 == 0) v = ldexpf(1.0f, -140);
      if (r % 73 == 0) v = (r & 4) ? 3.0e38f : -3.0e38f; /* overflows when added or multiplied */
      ((float*)p)[i] = v;
    } else if (t == zcclFloat64) {
      double v = ldexp((double)(int64_t)(r >> 11) / 4503599627370496.0, (int)(r % 60) - 30);
      if (r % 97 == 0) v = NAN;
      if (r % 89 == 0) v = (r & 1) ? INFINITY : -INFINITY;
      if (r % 83 == 0) v = (r & 2) ? 0.0 : -0.0;
      if (r % 79 == 0) v = ldexp(1.0, -1060);
      if (r % 73 == 0) v = (r & 4) ? 1.7e308 : -1.7e308;
      ((double*)p)[i] = v;
    } else {
      uint64_t v = r;
      /* Narrow floats: every code comes up; the largest often, to overflow. */
      if (narrow_max(t) && r % 13 == 0) v = narrow_max(t) | ((r & 0x100) ? (uint64_t)1 << (8 * es - 1) : 0);
      set_bits(t, p, i, v);
    }
  }
}

/* Equal bits, or both NaN for float32/float64 (an arithmetic NaN's payload
 * is the hardware's: x86 keeps the operand's, CUDA gives 0x7fffffff).
 * Narrow formats compare exact bits (their NaN is canonical). */
static size_t first_mismatch(zcclDataType_t t, const void* x, const void* y, size_t n) {
  size_t es = zu_dtype_size(t);
  for (size_t i = 0; i < n; i++) {
    if (memcmp((const char*)x + i * es, (const char*)y + i * es, es) == 0) continue;
    if (t == zcclFloat32 && isnan(((const float*)x)[i]) && isnan(((const float*)y)[i])) continue;
    if (t == zcclFloat64 && isnan(((const double*)x)[i]) && isnan(((const double*)y)[i])) continue;
    return i;
  }
  return SIZE_MAX;
}

static void report(const char* what, zcclDataType_t t, zcclRedOp_t op, size_t n, size_t bad, const void* got,
                   const void* want) {
  if (bad == SIZE_MAX) return;
  size_t es = zu_dtype_size(t);
  uint64_t g = 0, w = 0;
  memcpy(&g, (const char*)got + bad * es, es);
  memcpy(&w, (const char*)want + bad * es, es);
  fprintf(stderr, "%s %s %s n=%zu: element %zu: cuda %#llx, host %#llx\n", what, zu_dtype_name(t), zu_op_name(op), n,
          bad, (unsigned long long)g, (unsigned long long)w);
}

static void* piece(zd_dev_t* g, size_t bytes) {
  void* p = NULL;
  CHECK_RES(zd_buf_get(g, bytes, &p), zcclSuccess);
  return p;
}

static void to_gpu(zd_dev_t* g, void* d, const void* h, size_t bytes) {
  CHECK_RES(zd_copy(g, d, h, bytes), zcclSuccess);
}

static void from_gpu(zd_dev_t* g, void* h, const void* d, size_t bytes) {
  CHECK_RES(zd_copy(g, h, d, bytes), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclSuccess);
}

/* ---- pool and copies ---------------------------------------------------------- */

static void test_pool_copy(zd_dev_t* g) {
  const size_t n = (1u << 20) + 1;
  unsigned char* h = malloc(n);
  unsigned char* back = malloc(n);
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + 3);
  unsigned char* x = piece(g, n);
  unsigned char* y = piece(g, n);
  CHECK(x != NULL && y != NULL && x != y && (uintptr_t)x % 64 == 0 && (uintptr_t)y % 64 == 0);
  if (x == NULL || y == NULL) return;
  to_gpu(g, x, h, n);                                    /* H2D */
  CHECK_RES(zd_copy(g, y, x, n), zcclSuccess);          /* D2D */
  CHECK_RES(zd_copy(g, y + 3, h + 100, 1000), zcclSuccess); /* H2D, unaligned, after the D2D in stream order */
  memset(back, 0, n);
  from_gpu(g, back, y, n);                              /* D2H */
  long bad = 0;
  for (size_t i = 0; i < n; i++) bad += back[i] != (i >= 3 && i < 1003 ? h[i - 3 + 100] : h[i]);
  CHECK(bad == 0);
  /* An overlapping copy is refused when queued; dst == src is nothing to do. */
  CHECK_RES(zd_copy(g, x + 1, x, 64), zcclInvalidArgument);
  CHECK_RES(zd_copy(g, x, x, 64), zcclSuccess);
  size_t largest = zd_buf_largest(g);
  zd_buf_put(g, y);
  zd_buf_put(g, x);
  CHECK(zd_buf_largest(g) > largest);
  free(h);
  free(back);
}

/* ---- reduce: every dtype x op against the host device ----------------------------- */

static void test_reduce(zd_dev_t* g, zd_dev_t* host) {
  static const size_t counts[] = {1, 31, 100003, (1u << 20) + 7};
  for (int t = 0; t < zcclNumTypes; t++) {
    size_t es = zu_dtype_size(t);
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      size_t n = counts[c], bytes = n * es;
      char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes), *want_aa = malloc(bytes);
      char* got = malloc(bytes);
      fill_random(t, a, n);
      fill_random(t, b, n);
      /* Pieces one element past 64-byte alignment too: the kernels' scalar path. */
      char* pa = piece(g, bytes + 64);
      char* pb = piece(g, bytes + 64);
      char* pd = piece(g, bytes + 64);
      if (!pa || !pb || !pd) return;
      for (int shift = 0; shift < 2; shift++) {
        char *da = pa + shift * es, *db = pb + shift * es, *dd = pd + shift * es;
        for (int o = 0; o < 4; o++) {
          CHECK_RES(zd_reduce(host, want, a, b, n, t, ops[o]), zcclSuccess);
          CHECK_RES(zd_reduce(host, want_aa, a, a, n, t, ops[o]), zcclSuccess);
          /* out of place */
          to_gpu(g, da, a, bytes);
          to_gpu(g, db, b, bytes);
          CHECK_RES(zd_reduce(g, dd, da, db, n, t, ops[o]), zcclSuccess);
          from_gpu(g, got, dd, bytes);
          size_t bad = first_mismatch(t, got, want, n);
          report("out of place", t, ops[o], n, bad, got, want);
          CHECK(bad == SIZE_MAX);
          /* dst == a, then dst == b (a and b still as uploaded: dst == a wrote da) */
          CHECK_RES(zd_reduce(g, da, da, db, n, t, ops[o]), zcclSuccess);
          from_gpu(g, got, da, bytes);
          bad = first_mismatch(t, got, want, n);
          report("dst=a", t, ops[o], n, bad, got, want);
          CHECK(bad == SIZE_MAX);
          to_gpu(g, da, a, bytes);
          CHECK_RES(zd_reduce(g, db, da, db, n, t, ops[o]), zcclSuccess);
          from_gpu(g, got, db, bytes);
          bad = first_mismatch(t, got, want, n);
          report("dst=b", t, ops[o], n, bad, got, want);
          CHECK(bad == SIZE_MAX);
          /* dst == a == b */
          CHECK_RES(zd_reduce(g, da, da, da, n, t, ops[o]), zcclSuccess);
          from_gpu(g, got, da, bytes);
          bad = first_mismatch(t, got, want_aa, n);
          report("dst=a=b", t, ops[o], n, bad, got, want_aa);
          CHECK(bad == SIZE_MAX);
        }
      }
      zd_buf_put(g, pa);
      zd_buf_put(g, pb);
      zd_buf_put(g, pd);
      free(a), free(b), free(want), free(want_aa), free(got);
    }
  }
}

/* fp8: every pair of codes; fp16/bf16: every code against random codes. */
static void test_narrow_all(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = 65536;
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2), *want = malloc(n * 2), *got = malloc(n * 2);
  char *da = piece(g, n * 2), *db = piece(g, n * 2), *dd = piece(g, n * 2);
  if (!da || !db || !dd) return;
  static const zcclDataType_t types[] = {zcclFloat8e4m3, zcclFloat8e5m2, zcclFloat16, zcclBfloat16};
  for (int k = 0; k < 4; k++) {
    zcclDataType_t t = types[k];
    size_t bytes = n * zu_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
      if (zu_dtype_size(t) == 1) {
        ((uint8_t*)a)[i] = (uint8_t)(i >> 8);
        ((uint8_t*)b)[i] = (uint8_t)i;
      } else {
        a[i] = (uint16_t)i;
        b[i] = (uint16_t)rnd();
      }
    }
    to_gpu(g, da, a, bytes);
    to_gpu(g, db, b, bytes);
    for (int o = 0; o < 4; o++) {
      CHECK_RES(zd_reduce(host, want, a, b, n, t, ops[o]), zcclSuccess);
      CHECK_RES(zd_reduce(g, dd, da, db, n, t, ops[o]), zcclSuccess);
      from_gpu(g, got, dd, bytes);
      size_t bad = first_mismatch(t, got, want, n);
      report("all codes", t, ops[o], n, bad, got, want);
      CHECK(bad == SIZE_MAX);
    }
  }
  zd_buf_put(g, da), zd_buf_put(g, db), zd_buf_put(g, dd);
  free(a), free(b), free(want), free(got);
}

/* ---- fill, divide ------------------------------------------------------------------ */

static void test_fill(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = 300001;
  const double fill = -1e34;
  for (int k = 0; k < 2; k++) {
    zcclDataType_t t = k ? zcclFloat64 : zcclFloat32;
    size_t es = zu_dtype_size(t), bytes = n * es;
    char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    fill_random(t, a, n);
    fill_random(t, b, n);
    for (size_t i = 0; i < n; i++) {
      if (i % 7 == 1) (k ? (void)(((double*)a)[i] = fill) : (void)(((float*)a)[i] = (float)fill));
      if (i % 5 == 3) (k ? (void)(((double*)b)[i] = fill) : (void)(((float*)b)[i] = (float)fill));
    }
    char *da = piece(g, bytes), *db = piece(g, bytes), *dd = piece(g, bytes);
    if (!da || !db || !dd) return;
    to_gpu(g, da, a, bytes);
    to_gpu(g, db, b, bytes);
    for (int o = 0; o < 4; o++) {
      CHECK_RES(zd_reduce_fill(host, want, a, b, n, t, ops[o], 1, fill), zcclSuccess);
      CHECK_RES(zd_reduce_fill(g, dd, da, db, n, t, ops[o], 1, fill), zcclSuccess);
      from_gpu(g, got, dd, bytes);
      size_t bad = first_mismatch(t, got, want, n);
      report("reduce_fill", t, ops[o], n, bad, got, want);
      CHECK(bad == SIZE_MAX);
    }
    memcpy(want, a, bytes);
    CHECK_RES(zd_divide_fill(host, want, n, t, 3, 1, fill), zcclSuccess);
    CHECK_RES(zd_divide_fill(g, da, n, t, 3, 1, fill), zcclSuccess);
    from_gpu(g, got, da, bytes);
    size_t bad = first_mismatch(t, got, want, n);
    report("divide_fill", t, zcclSum, n, bad, got, want);
    CHECK(bad == SIZE_MAX);
    zd_buf_put(g, da), zd_buf_put(g, db), zd_buf_put(g, dd);
    free(a), free(b), free(want), free(got);
  }
}

static void test_divide(zd_dev_t* g, zd_dev_t* host) {
  static const int divs[] = {1, 2, 3, 7, 16, 200, 300, 1000003};
  const size_t n = 70001;
  for (int t = 0; t < zcclNumTypes; t++) {
    size_t bytes = n * zu_dtype_size(t);
    char *x = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    char* d = piece(g, bytes + 64);
    if (!d) return;
    fill_random(t, x, n);
    for (size_t k = 0; k < sizeof divs / sizeof *divs; k++) {
      for (int shift = 0; shift < 2; shift++) {
        char* dx = d + shift * zu_dtype_size(t);
        memcpy(want, x, bytes);
        CHECK_RES(zd_divide(host, want, n, t, divs[k]), zcclSuccess);
        to_gpu(g, dx, x, bytes);
        CHECK_RES(zd_divide(g, dx, n, t, divs[k]), zcclSuccess);
        from_gpu(g, got, dx, bytes);
        size_t bad = first_mismatch(t, got, want, n);
        if (bad != SIZE_MAX) fprintf(stderr, "divide by %d:\n", divs[k]);
        report("divide", t, zcclSum, n, bad, got, want);
        CHECK(bad == SIZE_MAX);
      }
    }
    zd_buf_put(g, d);
    free(x), free(want), free(got);
  }
}

/* ---- value range ------------------------------------------------------------------- */

static void check_range(zd_dev_t* g, zd_dev_t* host, zcclDataType_t t, const void* h, size_t n, int has_fill,
                        double fill) {
  size_t bytes = n * zu_dtype_size(t);
  char* d = piece(g, bytes ? bytes : 1);
  if (!d) return;
  if (n) to_gpu(g, d, h, bytes);
  double hmin = 12345, hmax = 12345, gmin = 12345, gmax = 12345;
  size_t hv = 7, gv = 7;
  CHECK_RES(zd_value_range(host, h, n, t, has_fill, fill, &hmin, &hmax, &hv), zcclSuccess);
  CHECK_RES(zd_value_range(g, d, n, t, has_fill, fill, &gmin, &gmax, &gv), zcclSuccess);
  /* == : a zero bound may be -0 on the host, +0 on cuda (zd_device.h) */
  if (!(gv == hv && gmin == hmin && gmax == hmax))
    fprintf(stderr, "value_range %s n=%zu fill %d: cuda %zu [%g, %g], host %zu [%g, %g]\n", zu_dtype_name(t), n,
            has_fill, gv, gmin, gmax, hv, hmin, hmax);
  CHECK(gv == hv && gmin == hmin && gmax == hmax);
  zd_buf_put(g, d);
}

static void test_value_range(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = (1u << 22) + 3;
  float* f = malloc(n * 4);
  double* x = malloc(n * 8);
  fill_random(zcclFloat32, f, n);
  fill_random(zcclFloat64, x, n);
  const double fill = 9.96921e36;
  for (size_t i = 0; i < n; i += 11) {
    f[i] = (float)fill;
    x[i] = fill;
  }
  check_range(g, host, zcclFloat32, f, n, 0, 0.0);
  check_range(g, host, zcclFloat32, f, n, 1, fill);
  check_range(g, host, zcclFloat64, x, n, 0, 0.0);
  check_range(g, host, zcclFloat64, x, n, 1, fill);
  check_range(g, host, zcclFloat64, x, 1000, 1, fill);
  check_range(g, host, zcclFloat32, f, 0, 0, 0.0); /* nothing: valid 0, min/max untouched */
  for (size_t i = 0; i < 5000; i++) f[i] = (i & 1) ? NAN : -INFINITY;
  check_range(g, host, zcclFloat32, f, 5000, 0, 0.0);
  for (size_t i = 0; i < 5000; i++) x[i] = (double)i - 2500.5;
  check_range(g, host, zcclFloat64, x, 5000, 0, 0.0);
  free(f);
  free(x);
}

/* ---- events and errors ------------------------------------------------------------- */

static void test_events(zd_dev_t* g) {
  enum { N = 1 << 22, NE = 20 };
  float* h = malloc((size_t)N * 4);
  for (size_t i = 0; i < N; i++) h[i] = 1;
  float *d = piece(g, (size_t)N * 4), *one = piece(g, (size_t)N * 4);
  if (!d || !one) return;
  to_gpu(g, one, h, (size_t)N * 4);
  CHECK_RES(zd_sync(g), zcclSuccess);
  /* Nothing queued since the last event: the same event, passed. */
  zd_event_t e0 = zd_event_record(g), e1 = zd_event_record(g);
  CHECK(e0 == e1 && zd_event_done(g, e0));
  CHECK_RES(zd_event_wait(g, e0 + 5), zcclInvalidArgument); /* never recorded: refused, not waited for */
  memset(h, 0, (size_t)N * 4);
  to_gpu(g, d, h, (size_t)N * 4);
  zd_event_t evs[NE];
  for (int e = 0; e < NE; e++) {
    CHECK_RES(zd_reduce(g, d, d, one, N, zcclFloat32, zcclSum), zcclSuccess);
    evs[e] = zd_event_record(g);
  }
  int pending = !zd_event_done(g, evs[NE - 1]);
  for (int e = 1; e < NE; e++) CHECK(evs[e] > evs[e - 1]);
  /* Ordered: once a later event has passed, every earlier one has. */
  int ordered = 1;
  while (!zd_event_done(g, evs[NE - 1])) {
    int seen_done = 0;
    for (int e = NE - 1; e >= 0; e--) {
      int done = zd_event_done(g, evs[e]);
      if (seen_done && !done) ordered = 0;
      seen_done |= done;
    }
  }
  CHECK(ordered);
  CHECK_RES(zd_event_wait(g, evs[NE / 2]), zcclSuccess);
  for (int e = 0; e <= NE / 2; e++) CHECK(zd_event_done(g, evs[e]));
  CHECK_RES(zd_event_wait(g, evs[NE - 1]), zcclSuccess);
  from_gpu(g, h, d, (size_t)N * 4);
  CHECK(h[0] == NE && h[N - 1] == NE);
  printf("events: the last of %d reductions of %d floats was %s right after queueing\n", NE, N,
         pending ? "pending" : "already done");

  /* More events than the device keeps marks for (1024 a stream) in flight. */
  int32_t acc[64] = {0}, ones[64];
  for (int i = 0; i < 64; i++) ones[i] = 1;
  int32_t *dacc = piece(g, sizeof acc), *dones = piece(g, sizeof ones);
  if (!dacc || !dones) return;
  to_gpu(g, dacc, acc, sizeof acc);
  to_gpu(g, dones, ones, sizeof ones);
  enum { NOPS = 5000 };
  zd_event_t last = 0;
  for (int k = 0; k < NOPS; k++) {
    CHECK_RES(zd_reduce(g, dacc, dacc, dones, 64, zcclInt32, zcclSum), zcclSuccess);
    last = zd_event_record(g);
  }
  CHECK_RES(zd_event_wait(g, last), zcclSuccess);
  from_gpu(g, acc, dacc, sizeof acc);
  CHECK(acc[0] == NOPS && acc[63] == NOPS);
  zd_buf_put(g, d), zd_buf_put(g, one), zd_buf_put(g, dacc), zd_buf_put(g, dones);
  free(h);
}

static void test_errors(zd_dev_t* g) {
  /* A kernel's status reaches the wait whose event follows it, once. */
  CHECK_RES(zd_cuda_post_error(g, zcclInvalidUsage), zcclSuccess);
  zd_event_t ev = zd_event_record(g);
  CHECK_RES(zd_event_wait(g, ev), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("zd_cuda_post_error");
  CHECK_RES(zd_sync(g), zcclSuccess);
  /* The first error wins; work queued after it still runs. */
  float h[256], back[256];
  for (int i = 0; i < 256; i++) h[i] = (float)i;
  float* d = piece(g, sizeof h);
  if (!d) return;
  to_gpu(g, d, h, sizeof h);
  CHECK_RES(zd_cuda_post_error(g, zcclInvalidUsage), zcclSuccess);
  CHECK_RES(zd_cuda_post_error(g, zcclSystemError), zcclSuccess);
  CHECK_RES(zd_reduce(g, d, d, d, 256, zcclFloat32, zcclSum), zcclSuccess);
  CHECK_RES(zd_copy(g, back, d, sizeof back), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclInvalidUsage);
  CHECK_RES(zd_sync(g), zcclSuccess);
  CHECK(back[0] == 0 && back[255] == 510);
  /* Errors of separate waits are each reported. */
  CHECK_RES(zd_cuda_post_error(g, zcclSystemError), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclSystemError);
  CHECK_RES(zd_cuda_post_error(g, zcclInvalidArgument), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclInvalidArgument);
  zd_buf_put(g, d);
  /* Host-only codecs are refused, never queued. */
  size_t sz = 0;
  double frac = 0;
  zc_params_t rp = {.dtype = zcclFloat32, .eb = 1e-3};
  CHECK(zd_codec_runs(g, HZ) && zd_codec_runs(g, zc_codec_info(zcclCodecSzp)));
  CHECK(!zd_codec_runs(g, zc_codec_info(zcclCodecRle)) && !zd_codec_runs(g, zc_codec_info(zcclCodecZfp)));
  CHECK_RES(zd_encode(g, zc_codec_info(zcclCodecRle), &rp, h, 4, back, sizeof back, &sz), zcclInvalidUsage);
  CHECK_RES(zd_encode(g, zc_codec_info(zcclCodecZfp), &rp, h, 4, back, sizeof back, &sz), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("no kernels for codec=zfp");
  CHECK_RES(zd_zero_fraction(g, h, 4, zcclFloat32, 4, &frac), zcclInvalidUsage);
  CHECK_RES(zd_sync(g), zcclSuccess);
}

/* ---- the stream codec: the host's bytes, sizes through slots and marks -------------- */

static void test_codec(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = 300000;
  float* x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)sin((double)i * 0.001) * 100.0f + (i % 1000 == 7 ? NAN : 0.0f);
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-2};
  size_t cap = hz_bound(n);
  char *in = piece(g, n * 4), *s1 = piece(g, cap), *s2 = piece(g, cap), *out = piece(g, n * 4);
  if (!in || !s1 || !s2 || !out) return;
  to_gpu(g, in, x, n * 4);
  size_t gsz = 0;
  zcclResult_t r = zd_encode(g, HZ, &p, in, n, s1, cap, &gsz);
  CHECK_RES(r, zcclSuccess);
  /* Compress, then decompress and hop reading the size the compress
   * writes, with no wait between: the size travels in stream order. */
  size_t hsz = 0, hopsz = 0, ghopsz = 0;
  char* hs = malloc(cap);
  char* hhop = malloc(cap);
  char* back = malloc(cap);
  float* y = malloc(n * 4);
  float* gy = malloc(n * 4);
  CHECK_RES(zd_encode(host, HZ, &p, x, n, hs, cap, &hsz), zcclSuccess);
  CHECK_RES(zd_decode(host, HZ, hs, &hsz, y, n), zcclSuccess);
  CHECK_RES(zd_reduce_encoded(host, HZ, zcclSum, hs, &hsz, hs, &hsz, hhop, cap, &hopsz), zcclSuccess);
  CHECK_RES(zd_decode(g, HZ, s1, &gsz, out, n), zcclSuccess);
  CHECK_RES(zd_reduce_encoded(g, HZ, zcclSum, s1, &gsz, s1, &gsz, s2, cap, &ghopsz), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclSuccess);
  CHECK(gsz == hsz && ghopsz == hopsz);
  if (gsz == hsz) {
    from_gpu(g, back, s1, gsz);
    CHECK(memcmp(back, hs, hsz) == 0);
  }
  if (ghopsz == hopsz) {
    from_gpu(g, back, s2, ghopsz);
    CHECK(memcmp(back, hhop, hopsz) == 0);
  }
  from_gpu(g, gy, out, n * 4);
  CHECK(first_mismatch(zcclFloat32, gy, y, n) == SIZE_MAX);
  /* Many compressions in flight: the size slots (1024) wrap. */
  size_t sizes[1500];
  for (int k = 0; k < 1500; k++) CHECK_RES(zd_encode(g, HZ, &p, in, 4096, s2, cap, &sizes[k]), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclSuccess);
  size_t one = 0;
  CHECK_RES(zd_encode(host, HZ, &p, x, 4096, hs, cap, &one), zcclSuccess);
  int same = 1;
  for (int k = 0; k < 1500; k++) same &= sizes[k] == one;
  CHECK(same);
  /* A corrupt stream: the kernel's status comes back from the wait. */
  CHECK_RES(zd_copy(g, s2, s1, gsz), zcclSuccess);
  unsigned char junk[8] = {0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef};
  CHECK_RES(zd_copy(g, s2, junk, sizeof junk), zcclSuccess);
  CHECK_RES(zd_decode(g, HZ, s2, &gsz, out, n), zcclSuccess);
  /* zcclInvalidUsage by zd_cuda_kernels.h (the host codec says
   * zcclInvalidArgument): an error either way, reported once. */
  zcclResult_t bad = zd_sync(g);
  CHECK(bad == zcclInvalidUsage || bad == zcclInvalidArgument);
  CHECK_RES(zd_sync(g), zcclSuccess);
  /* A stream of another count likewise. */
  CHECK_RES(zd_decode(g, HZ, s1, &gsz, out, n - 1), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclInvalidUsage);
  free(hs), free(hhop), free(back), free(y), free(gy);
  zd_buf_put(g, in), zd_buf_put(g, s1), zd_buf_put(g, s2), zd_buf_put(g, out);
  free(x);
}

/* The codec settings of the tests below, and n float32 values of a smooth
 * wave (malloc'd). */
static const zc_params_t kWaveParams = {.dtype = zcclFloat32, .eb = 1e-3};
static float* wave(size_t n) {
  float* x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)cos((double)i * 0.01) * 50.0f;
  return x;
}

/* The host codec's stream of x[0, n) (malloc'd, *hsz bytes), the bytes
 * the GPU's must match. */
static char* host_stream(zd_dev_t* host, const zc_params_t* p, const float* x, size_t n, size_t* hsz) {
  size_t cap = hz_bound(n);
  char* hs = malloc(cap);
  CHECK_RES(zd_encode(host, HZ, p, x, n, hs, cap, hsz), zcclSuccess);
  return hs;
}

/* Sizes in flight: a compression, then 700 homomorphic MAXes in place,
 * each reading the size the one before writes (the size slots, 1024 a
 * stream, wrap while every writer's slot is held for its reader;
 * decompressions between them shift the wrap), then a
 * decompression on another stream reading the last of those sizes, all
 * queued without a wait. The MAX of a stream with itself is that stream. */
static void test_size_chain(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = 5000;
  float* x = wave(n);
  const zc_params_t p = kWaveParams;
  size_t cap = hz_bound(n), hsz = 0;
  char* hs = host_stream(host, &p, x, n, &hsz);
  float* y = malloc(n * 4);
  CHECK_RES(zd_decode(host, HZ, hs, &hsz, y, n), zcclSuccess);
  char *in = piece(g, n * 4), *a = piece(g, cap), *b = piece(g, cap), *out = piece(g, n * 4);
  if (!in || !a || !b || !out) return;
  to_gpu(g, in, x, n * 4);
  size_t sa = 0, sb = 0;
  CHECK_RES(zd_encode(g, HZ, &p, in, n, a, cap, &sa), zcclSuccess);
  CHECK_RES(zd_encode(g, HZ, &p, in, n, b, cap, &sb), zcclSuccess);
  for (int k = 0; k < 700; k++) {
    CHECK_RES(zd_reduce_encoded(g, HZ, zcclMax, a, &sa, b, &sb, a, cap, &sa), zcclSuccess);
    /* Now and then an operation that takes another number of slots, so
     * the ring's wrap lands on every kind of slot. */
    if (k % 7 == 3) CHECK_RES(zd_decode(g, HZ, b, &sb, out, n), zcclSuccess);
  }
  zd_event_t done = zd_event_record(g);
  int prev = zd_set_lane(g, 1);
  CHECK_RES(zd_lane_wait(g, done), zcclSuccess);
  CHECK_RES(zd_decode(g, HZ, a, &sa, out, n), zcclSuccess);
  zd_set_lane(g, prev);
  CHECK_RES(zd_sync(g), zcclSuccess);
  CHECK(sa == hsz && sb == hsz);
  char* back = malloc(cap);
  float* gy = malloc(n * 4);
  if (sa == hsz) {
    from_gpu(g, back, a, sa);
    CHECK(memcmp(back, hs, hsz) == 0);
  }
  from_gpu(g, gy, out, n * 4);
  CHECK(first_mismatch(zcclFloat32, gy, y, n) == SIZE_MAX);
  zd_buf_put(g, in), zd_buf_put(g, a), zd_buf_put(g, b), zd_buf_put(g, out);
  free(x), free(hs), free(y), free(back), free(gy);
}

/* A compressed stream to pinned staging memory right behind its kernel
 * (zd_copy_sized reads the size the compression writes), on two streams,
 * queued without a wait: the host codec's bytes, aligned and not; a size
 * above the room fails the copy at the next wait, copying nothing. */
static void test_copy_sized(zd_dev_t* g, zd_dev_t* host) {
  const size_t n = 7000, cap = hz_bound(n);
  float* x = wave(n);
  size_t hsz = 0;
  char* hs = host_stream(host, &kWaveParams, x, n, &hsz);
  char *in = piece(g, n * 4), *s = piece(g, 2 * cap);
  char* st = NULL;
  CHECK_RES(zd_stage_get(g, 2 * cap + 1, (void**)&st), zcclSuccess);
  if (!in || !s || !st) return;
  to_gpu(g, in, x, n * 4);
  CHECK_RES(zd_sync(g), zcclSuccess);
  int lanes = zd_lanes(g);
  for (int l = 0; l < lanes && l < 2; l++) {
    size_t sz = 0;
    char* out = st + (l ? 1 : 0); /* the second not 16-byte aligned */
    memset(st, 0x5a, 2 * cap + 1);
    int prev = zd_set_lane(g, l);
    CHECK_RES(zd_encode(g, HZ, &kWaveParams, in, n, s, cap, &sz), zcclSuccess);
    CHECK_RES(zd_copy_sized(g, out, s, &sz, cap), zcclSuccess);
    zd_set_lane(g, prev);
    CHECK_RES(zd_sync(g), zcclSuccess);
    CHECK(sz == hsz);
    if (sz == hsz) CHECK(memcmp(out, hs, hsz) == 0);
    CHECK((unsigned char)out[hsz] == 0x5a); /* nothing past the size */
  }
  /* Room smaller than the stream: the wait fails, nothing copied. */
  size_t sz = 0;
  memset(st, 0x5a, cap);
  CHECK_RES(zd_encode(g, HZ, &kWaveParams, in, n, s, cap, &sz), zcclSuccess);
  CHECK_RES(zd_copy_sized(g, st, s, &sz, hsz - 1), zcclSuccess);
  CHECK_RES(zd_sync(g), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("zd_copy_sized");
  CHECK((unsigned char)st[0] == 0x5a);
  CHECK_RES(zd_copy_sized(g, st, NULL, &sz, cap), zcclInvalidArgument);
  CHECK_RES(zd_copy_sized(g, s + 8, s, &sz, cap), zcclInvalidArgument); /* overlap */
  CHECK_RES(zd_sync(g), zcclSuccess);
  zd_stage_put(g, st);
  zd_buf_put(g, in), zd_buf_put(g, s);
  free(x), free(hs);
}

/* Destroying a device waits for what is queued (a copy to host memory here). */
static void test_destroy_waits(void) {
  zd_dev_t* g = NULL;
  CHECK_RES(zd_dev_create(ZD_CUDA, &g), zcclSuccess);
  if (!g) return;
  enum { N = 1 << 20 };
  float* h = malloc(N * 4);
  for (int i = 0; i < N; i++) h[i] = 1;
  float* d = piece(g, N * 4);
  if (!d) return;
  to_gpu(g, d, h, N * 4);
  CHECK_RES(zd_sync(g), zcclSuccess); /* h is overwritten next */
  for (int k = 0; k < 10; k++) CHECK_RES(zd_reduce(g, d, d, d, N, zcclFloat32, zcclSum), zcclSuccess);
  memset(h, 0, N * 4);
  CHECK_RES(zd_copy(g, h, d, N * 4), zcclSuccess);
  zd_buf_put(g, d); /* not yet reused: destroy comes first */
  zd_dev_destroy(g);
  CHECK(h[0] == 1024 && h[N - 1] == 1024);
  free(h);
}

int main(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  if (!info.built || info.ndevices == 0) {
    printf("SKIP: %s\n", info.status);
    return TEST_SKIP_CODE;
  }
  printf("cuda: %s (built for %s)\n", info.status, info.archs);
  zd_dev_t *g = NULL, *host = NULL;
  CHECK_RES(zd_dev_create(ZD_CUDA, &g), zcclSuccess);
  CHECK_RES(zd_dev_create(ZD_HOST, &host), zcclSuccess);
  if (!g || !host) TEST_DONE();
  CHECK(zd_dev_kind(g) == ZD_CUDA);
  size_t whole = zd_buf_largest(g);
  test_pool_copy(g);
  test_reduce(g, host);
  test_narrow_all(g, host);
  test_fill(g, host);
  test_divide(g, host);
  test_value_range(g, host);
  test_events(g);
  test_errors(g);
  test_codec(g, host);
  test_size_chain(g, host);
  test_copy_sized(g, host);
  CHECK(zd_buf_largest(g) == whole); /* every piece back */
  zd_dev_destroy(g);
  zd_dev_destroy(host);
  test_destroy_waits();
  TEST_DONE();
}
