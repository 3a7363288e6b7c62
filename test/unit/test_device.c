/* The device interface (zd_dev_t) on host, sim and, where a GPU is present,
 * cuda: every dtype x op against a scalar reference computed here (narrow
 * floats through this file's own conversion, done in double with nearbyint,
 * independent of the library's bit tricks), in place, divide, the buffer
 * pool, and the sim device's asynchronous semantics (results visible only
 * after a sync). Without a GPU the cuda part is skipped (it says so); the
 * GPU-only checks are test/gpu/test_gpu_device.c. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "zd_device.h"
#include "zu_dtype.h"
#include "zu_param.h"

/* The library reads its settings again where a communicator is made; these
 * tests make devices without one, so they read them again themselves. */
static void env_set(const char* name, const char* value, int overwrite) {
  setenv(name, value, overwrite);
  zu_param_reload();
}

static void env_unset(const char* name) {
  unsetenv(name);
  zu_param_reload();
}

static const zd_kind_t kinds[] = {ZD_HOST, ZD_SIM, ZD_CUDA};
static const zcclRedOp_t ops[] = {zcclSum, zcclProd, zcclMax, zcclMin};

/* The stream format's codec row (hz: szp's streams, reduced as they are). */
#define HZ zc_codec_info(zcclCodecHz)
static size_t hz_bound(size_t n) {
  zc_params_t p = {.dtype = zcclFloat32};
  return HZ->ops->bound(&p, n);
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) { return test_xorshift(&rng_state); }

/* ---- reference narrow floats --------------------------------------------- */

typedef struct {
  int M, E, bias;
  int ieee;        /* all-ones exponent is inf/NaN (else only all-ones code is NaN) */
  int sat;         /* overflow saturates to max finite (fp8) instead of inf */
  unsigned nan;    /* canonical NaN code */
} fmt_t;

static const fmt_t F16 = {10, 5, 15, 1, 0, 0x7fff};
static const fmt_t BF16 = {7, 8, 127, 1, 0, 0x7fff};
static const fmt_t E4M3 = {3, 4, 7, 0, 1, 0x7f};
static const fmt_t E5M2 = {2, 5, 15, 1, 1, 0x7f};

static const fmt_t* fmt_of(zcclDataType_t t) {
  switch (t) {
    case zcclFloat16: return &F16;
    case zcclBfloat16: return &BF16;
    case zcclFloat8e4m3: return &E4M3;
    case zcclFloat8e5m2: return &E5M2;
    default: return NULL;
  }
}

static double fmt_decode(const fmt_t* f, unsigned h) {
  unsigned mmask = (1u << f->M) - 1, emax = (1u << f->E) - 1;
  unsigned m = h & mmask, e = (h >> f->M) & emax, s = (h >> (f->M + f->E)) & 1;
  double v;
  if (f->ieee && e == emax)
    v = m ? NAN : INFINITY;
  else if (!f->ieee && e == emax && m == mmask)
    v = NAN;
  else if (e == 0)
    v = ldexp((double)m, 1 - f->bias - f->M);
  else
    v = ldexp((double)(m | (1u << f->M)), (int)e - f->bias - f->M);
  return s ? -v : v;
}

static double fmt_max(const fmt_t* f) {
  unsigned top = f->ieee ? (((1u << f->E) - 2) << f->M) | ((1u << f->M) - 1)
                         : (((1u << f->E) - 1) << f->M) | ((1u << f->M) - 2);
  return fmt_decode(f, top);
}

/* Round to nearest even in double arithmetic (exact: scaling by powers of
 * two), then build the fields. */
static unsigned fmt_encode(const fmt_t* f, double v) {
  if (isnan(v)) return f->nan;
  unsigned s = signbit(v) ? 1u << (f->M + f->E) : 0;
  double a = fabs(v), mx = fmt_max(f);
  unsigned inf = ((1u << f->E) - 1) << f->M;
  if (a == 0) return s;
  if (!isinf(a)) {
    int e = ilogb(a);
    if (e < 1 - f->bias) e = 1 - f->bias;
    double q = ldexp(1.0, e - f->M);
    a = nearbyint(a / q) * q;
  }
  if (a > mx) {
    if (f->sat) a = mx;
    else return s | inf;
  }
  if (a == 0) return s;
  int e = ilogb(a);
  if (e < 1 - f->bias) return s | (unsigned)(a / ldexp(1.0, 1 - f->bias - f->M));
  unsigned m = (unsigned)(a / ldexp(1.0, e - f->M)) - (1u << f->M);
  return s | ((unsigned)(e + f->bias) << f->M) | m;
}

/* ---- element access and the scalar reference ----------------------------- */

static void get_elem(zcclDataType_t t, const void* p, size_t i, int64_t* si, uint64_t* ui, double* d) {
  switch (t) {
    case zcclInt8: *si = ((const int8_t*)p)[i]; break;
    case zcclUint8: *ui = ((const uint8_t*)p)[i]; break;
    case zcclInt32: *si = ((const int32_t*)p)[i]; break;
    case zcclUint32: *ui = ((const uint32_t*)p)[i]; break;
    case zcclInt64: *si = ((const int64_t*)p)[i]; break;
    case zcclUint64: *ui = ((const uint64_t*)p)[i]; break;
    case zcclFloat32: *d = ((const float*)p)[i]; break;
    case zcclFloat64: *d = ((const double*)p)[i]; break;
    case zcclFloat16: case zcclBfloat16: *ui = ((const uint16_t*)p)[i]; break;
    default: *ui = ((const uint8_t*)p)[i]; break;
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

#define REF_INT(T, U, x, y, op)                                                       \
  ((op) == zcclSum ? (T)(U)((U)(x) + (U)(y)) : (op) == zcclProd ? (T)(U)((U)(x) * (U)(y)) \
   : (op) == zcclMax ? ((x) > (y) ? (x) : (y)) : ((x) < (y) ? (x) : (y)))
#define REF_FLT(x, y, op)                                                          \
  ((op) == zcclSum ? (x) + (y) : (op) == zcclProd ? (x) * (y)                      \
   : (op) == zcclMax ? (((x) > (y) || isnan(x)) ? (x) : (y)) : (((x) < (y) || isnan(x)) ? (x) : (y)))

/* out[i] = a[i] op b[i], computed independently of the library. */
static void reference(zcclDataType_t t, zcclRedOp_t op, void* out, const void* a, const void* b, size_t n) {
  const fmt_t* f = fmt_of(t);
  for (size_t i = 0; i < n; i++) {
    int64_t sa = 0, sb = 0;
    uint64_t ua = 0, ub = 0;
    double da = 0, db = 0;
    get_elem(t, a, i, &sa, &ua, &da);
    get_elem(t, b, i, &sb, &ub, &db);
    switch (t) {
      case zcclInt8: ((int8_t*)out)[i] = (int8_t)REF_INT(int8_t, uint8_t, (int8_t)sa, (int8_t)sb, op); break;
      case zcclUint8: ((uint8_t*)out)[i] = (uint8_t)REF_INT(uint8_t, uint8_t, (uint8_t)ua, (uint8_t)ub, op); break;
      case zcclInt32: ((int32_t*)out)[i] = REF_INT(int32_t, uint32_t, (int32_t)sa, (int32_t)sb, op); break;
      case zcclUint32: ((uint32_t*)out)[i] = REF_INT(uint32_t, uint32_t, (uint32_t)ua, (uint32_t)ub, op); break;
      case zcclInt64: ((int64_t*)out)[i] = REF_INT(int64_t, uint64_t, sa, sb, op); break;
      case zcclUint64: ((uint64_t*)out)[i] = REF_INT(uint64_t, uint64_t, ua, ub, op); break;
      case zcclFloat32: {
        float x = (float)da, y = (float)db;
        ((float*)out)[i] = REF_FLT(x, y, op);
        break;
      }
      case zcclFloat64: ((double*)out)[i] = REF_FLT(da, db, op); break;
      default: {
        double x = fmt_decode(f, (unsigned)ua), y = fmt_decode(f, (unsigned)ub);
        double r = (isnan(x) || isnan(y)) ? NAN : REF_FLT(x, y, op);
        set_bits(t, out, i, fmt_encode(f, r));
        break;
      }
    }
  }
}

/* Equal bits, or both NaN for float32/float64 (whose NaN payload through an
 * add is the hardware's choice). Narrow formats compare exact bits. */
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

static void fill_random(zcclDataType_t t, void* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rnd();
    if (t == zcclFloat32) {
      /* Mostly finite values across magnitudes, some specials and equal pairs. */
      float v = ldexpf((float)(int32_t)(r >> 40) / 8388608.0f, (int)(r % 40) - 20);
      if (r % 97 == 0) v = NAN;
      if (r % 89 == 0) v = (r & 1) ? INFINITY : -INFINITY;
      if (r % 83 == 0) v = (r & 2) ? 0.0f : -0.0f;
      if (r % 79 == 0) v = ldexpf(1.0f, -140);
      ((float*)p)[i] = v;
    } else if (t == zcclFloat64) {
      double v = ldexp((double)(int64_t)(r >> 11) / 4503599627370496.0, (int)(r % 60) - 30);
      if (r % 97 == 0) v = NAN;
      if (r % 89 == 0) v = (r & 1) ? INFINITY : -INFINITY;
      if (r % 83 == 0) v = (r & 2) ? 0.0 : -0.0;
      if (r % 79 == 0) v = ldexp(1.0, -1060);
      ((double*)p)[i] = v;
    } else {
      set_bits(t, p, i, r);
    }
  }
}

/* ---- running the checks on the cuda device -----------------------------------
 * Its buffers are GPU memory, the checks' are host memory. On cuda the t_*
 * calls stage an operation through pool pieces (copy in, run, copy out,
 * sync) with the call's aliasing (dst == a, dst == b, a == b); on host and
 * sim they are the call itself. */

static int on_gpu(zd_dev_t* dev) { return zd_dev_kind(dev) == ZD_CUDA; }

/* A pool piece holding a copy of host[0, bytes) (host NULL: left as is). */
static void* stage_in(zd_dev_t* dev, const void* host, size_t bytes) {
  void* p = NULL;
  CHECK_RES(zd_buf_get(dev, bytes, &p), zcclSuccess);
  if (p != NULL && host != NULL) CHECK_RES(zd_copy(dev, p, host, bytes), zcclSuccess);
  return p;
}

/* Copies piece back to host, waits, and returns the first error. */
static zcclResult_t stage_out(zd_dev_t* dev, zcclResult_t res, void* host, const void* piece, size_t bytes) {
  if (res == zcclSuccess) res = zd_copy(dev, host, piece, bytes);
  zcclResult_t w = zd_sync(dev);
  return res == zcclSuccess ? w : res;
}

static zcclResult_t t_reduce_fill(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t n,
                                  zcclDataType_t t, zcclRedOp_t op, int has_fill, double fill) {
  if (!on_gpu(dev) || n == 0) return zd_reduce_fill(dev, dst, a, b, n, t, op, has_fill, fill);
  size_t bytes = n * zu_dtype_size(t);
  void* da = stage_in(dev, a, bytes);
  void* db = b == a ? da : stage_in(dev, b, bytes);
  void* dd = dst == a ? da : dst == b ? db : stage_in(dev, NULL, bytes);
  zcclResult_t res = zcclInternalError;
  if (da && db && dd)
    res = stage_out(dev, zd_reduce_fill(dev, dd, da, db, n, t, op, has_fill, fill), dst, dd, bytes);
  if (dd != da && dd != db) zd_buf_put(dev, dd);
  if (db != da) zd_buf_put(dev, db);
  zd_buf_put(dev, da);
  return res;
}

static zcclResult_t t_reduce(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t n, zcclDataType_t t,
                             zcclRedOp_t op) {
  return t_reduce_fill(dev, dst, a, b, n, t, op, 0, 0.0);
}

static zcclResult_t t_divide_fill(zd_dev_t* dev, void* buf, size_t n, zcclDataType_t t, int q, int has_fill,
                                  double fill) {
  if (!on_gpu(dev) || n == 0) return zd_divide_fill(dev, buf, n, t, q, has_fill, fill);
  size_t bytes = n * zu_dtype_size(t);
  void* d = stage_in(dev, buf, bytes);
  zcclResult_t res = zcclInternalError;
  if (d) res = stage_out(dev, zd_divide_fill(dev, d, n, t, q, has_fill, fill), buf, d, bytes);
  zd_buf_put(dev, d);
  return res;
}

static zcclResult_t t_divide(zd_dev_t* dev, void* buf, size_t n, zcclDataType_t t, int q) {
  return t_divide_fill(dev, buf, n, t, q, 0, 0.0);
}

/* memset of a pool piece, and one of its bytes. */
static void t_memset(zd_dev_t* dev, void* piece, int v, size_t bytes) {
  if (!on_gpu(dev)) {
    memset(piece, v, bytes);
    return;
  }
  unsigned char* h = malloc(bytes);
  memset(h, v, bytes);
  CHECK_RES(zd_copy(dev, piece, h, bytes), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  free(h);
}

static int t_byte_at(zd_dev_t* dev, const void* piece, size_t off) {
  if (!on_gpu(dev)) return ((const unsigned char*)piece)[off];
  unsigned char v = 0;
  CHECK_RES(zd_copy(dev, &v, (const char*)piece + off, 1), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  return v;
}

/* A stream copied by the size its compression writes (zd_copy_sized),
 * queued behind it without a wait (host and sim; the GPU test covers
 * cuda): the stream's bytes and nothing past them; a size above the room
 * fails (at the call on the host, at the next wait on sim), copying
 * nothing; bad arguments are refused. */
static void test_copy_sized(zd_dev_t* dev) {
  if (on_gpu(dev)) return;
  const size_t n = 3000;
  float* x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)(i % 37) * 0.25f;
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3};
  size_t cap = hz_bound(n), sz = 0, want = 0;
  char *s = NULL, *d = NULL, *ref = malloc(cap);
  CHECK_RES(zd_buf_get(dev, cap, (void**)&s), zcclSuccess);
  CHECK_RES(zd_buf_get(dev, cap + 1, (void**)&d), zcclSuccess);
  CHECK_RES(zc_compress(&p, x, n, ref, cap, &want, NULL, NULL), zcclSuccess);
  if (s && d) {
    memset(d, 0x5a, cap + 1);
    CHECK_RES(zd_encode(dev, HZ, &p, x, n, s, cap, &sz), zcclSuccess);
    CHECK_RES(zd_copy_sized(dev, d, s, &sz, cap), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    CHECK(sz == want && memcmp(d, ref, want) == 0 && (unsigned char)d[want] == 0x5a);
    memset(d, 0x5a, cap + 1);
    zcclResult_t res = zd_copy_sized(dev, d, s, &sz, want - 1);
    if (res == zcclSuccess) res = zd_sync(dev);
    CHECK(res == zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("zd_copy_sized");
    CHECK((unsigned char)d[0] == 0x5a);
    CHECK_RES(zd_copy_sized(dev, d, s, NULL, cap), zcclInvalidArgument);
    CHECK_RES(zd_copy_sized(dev, s + 1, s, &sz, 100), zcclInvalidArgument);
    CHECK_RES(zd_sync(dev), zcclSuccess);
  }
  zd_buf_put(dev, s), zd_buf_put(dev, d);
  free(x), free(ref);
}

/* ---- every dtype x op x count, out of place and in place ------------------ */

static void check_reduce(zd_dev_t* dev, zcclDataType_t t, zcclRedOp_t op, const void* a, const void* b, size_t n,
                         const void* want, const char* what) {
  size_t bytes = n * zu_dtype_size(t);
  char* a2 = malloc(bytes + 1);
  char* b2 = malloc(bytes + 1);
  char* d = malloc(bytes + 1);
  memcpy(a2, a, bytes);
  memcpy(b2, b, bytes);
  memset(d, 0x5a, bytes);
  void* dst = d;
  const void *x = a2, *y = b2;
  if (strcmp(what, "dst=a") == 0) dst = a2;
  if (strcmp(what, "dst=b") == 0) dst = b2;
  CHECK_RES(t_reduce(dev, dst, x, y, n, t, op), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  size_t bad = first_mismatch(t, dst, want, n);
  if (bad != SIZE_MAX) {
    uint64_t g = 0, w = 0;
    memcpy(&g, (char*)dst + bad * zu_dtype_size(t), zu_dtype_size(t));
    memcpy(&w, (const char*)want + bad * zu_dtype_size(t), zu_dtype_size(t));
    uint64_t av = 0, bv = 0;
    memcpy(&av, (const char*)a + bad * zu_dtype_size(t), zu_dtype_size(t));
    memcpy(&bv, (const char*)b + bad * zu_dtype_size(t), zu_dtype_size(t));
    fprintf(stderr, "%s %s %s n=%zu %s: element %zu: a=%#llx b=%#llx got %#llx want %#llx\n",
            zd_kind_name(zd_dev_kind(dev)), zu_dtype_name(t), zu_op_name(op), n, what, bad, (unsigned long long)av,
            (unsigned long long)bv, (unsigned long long)g, (unsigned long long)w);
  }
  CHECK(bad == SIZE_MAX);
  free(a2);
  free(b2);
  free(d);
}

/* The sweep's largest count: above the split (ZCCL_REDUCE_SPLIT_BYTES=64K
 * here) for every dtype, so the pool's threads run it. ThreadSanitizer,
 * which checks those threads, gets an eighth of the elements: its
 * instrumented loops took 99 of the test's 109 s at the full count. */
#if defined(__SANITIZE_THREAD__)
#define SWEEP_BIG ((1u << 17) + 5)
#else
#define SWEEP_BIG ((1u << 20) + 5)
#endif

static void test_sweep(zd_dev_t* const* devs, int ndevs) {
  static const size_t counts[] = {0, 1, 7, 4096 + 3, SWEEP_BIG};
  for (int t = 0; t < zcclNumTypes; t++) {
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      size_t n = counts[c], bytes = n * zu_dtype_size(t) + 1;
      char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes), *want_aa = malloc(bytes);
      fill_random(t, a, n);
      fill_random(t, b, n);
      for (int o = 0; o < 4; o++) {
        reference(t, ops[o], want, a, b, n);
        if (n < 100000) reference(t, ops[o], want_aa, a, a, n);
        for (int k = 0; k < ndevs; k++) {
          check_reduce(devs[k], t, ops[o], a, b, n, want, "out of place");
          check_reduce(devs[k], t, ops[o], a, b, n, want, "dst=a");
          check_reduce(devs[k], t, ops[o], a, b, n, want, "dst=b");
          if (n < 100000) {
            /* dst == a == b */
            size_t sz = n * zu_dtype_size(t);
            char* d = malloc(sz + 1);
            memcpy(d, a, sz);
            CHECK_RES(t_reduce(devs[k], d, d, d, n, t, ops[o]), zcclSuccess);
            CHECK_RES(zd_sync(devs[k]), zcclSuccess);
            CHECK(first_mismatch(t, d, want_aa, n) == SIZE_MAX);
            free(d);
          }
        }
      }
      free(a);
      free(b);
      free(want);
      free(want_aa);
    }
  }
}

/* zd_scale against the reference product with a vector of the scalar,
 * every dtype, out of place and in place, the scalar as bytes and (host
 * and sim) read through a pointer; a GPU reads it from a pool piece. */
static void test_scale(zd_dev_t* dev) {
  const size_t n = 4096 + 7;
  for (int t = 0; t < zcclNumTypes; t++) {
    size_t es = zu_dtype_size(t), bytes = n * es;
    char *a = malloc(bytes), *sv = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    for (int rep = 0; rep < 4; rep++) {
      fill_random(t, a, n);
      fill_random(t, sv, 1);
      for (size_t i = 1; i < n; i++) memcpy(sv + i * es, sv, es);
      reference(t, zcclProd, want, a, sv, n);
      uint64_t bits = 0;
      memcpy(&bits, sv, es);
      for (int how = 0; how < 3; how++) { /* bits out of place, bits in place, through a pointer */
        void* da = stage_in(dev, a, bytes);
        void* dd = how == 1 ? da : stage_in(dev, NULL, bytes);
        void* ds = how == 2 ? stage_in(dev, sv, es) : NULL;
        zcclResult_t res = zd_scale(dev, dd, da, n, (zcclDataType_t)t, ds, how == 2 ? 0 : bits);
        CHECK_RES(stage_out(dev, res, got, dd, bytes), zcclSuccess);
        size_t bad = first_mismatch(t, got, want, n);
        if (bad != SIZE_MAX)
          fprintf(stderr, "%s zd_scale %s how %d: element %zu wrong\n", zd_kind_name(zd_dev_kind(dev)),
                  zu_dtype_name(t), how, bad);
        CHECK(bad == SIZE_MAX);
        if (ds) zd_buf_put(dev, ds);
        if (dd != da) zd_buf_put(dev, dd);
        zd_buf_put(dev, da);
      }
    }
    free(a);
    free(sv);
    free(want);
    free(got);
  }
  float x[4] = {1, 2, 3, 4};
  CHECK_RES(zd_scale(dev, x, NULL, 4, zcclFloat32, NULL, 0), zcclInvalidArgument);
  CHECK_RES(zd_scale(dev, x, x, 4, zcclNumTypes, NULL, 0), zcclInvalidArgument);
  CHECK_RES(zd_scale(dev, x + 1, x, 3, zcclFloat32, NULL, 0), zcclInvalidArgument); /* overlap */
  CHECK_RES(zd_scale(dev, NULL, NULL, 0, zcclFloat32, NULL, 0), zcclSuccess);
}

/* Narrow formats: fp8 every pair of codes; fp16/bf16 every code against
 * special values (NaN, inf, -0, subnormals, ties) and random codes. */
static void test_narrow_exhaustive(zd_dev_t* dev) {
  const size_t n = 65536;
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2), *want = malloc(n * 2);
  uint8_t *a8 = malloc(n), *b8 = malloc(n), *want8 = malloc(n);
  for (size_t i = 0; i < n; i++) {
    a8[i] = (uint8_t)(i >> 8);
    b8[i] = (uint8_t)i;
  }
  zcclDataType_t t8[] = {zcclFloat8e4m3, zcclFloat8e5m2};
  for (int k = 0; k < 2; k++)
    for (int o = 0; o < 4; o++) {
      reference(t8[k], ops[o], want8, a8, b8, n);
      check_reduce(dev, t8[k], ops[o], a8, b8, n, want8, "out of place");
    }
  /* fp16: 1, 3 (2048+1, 2048+3 tie), 2^-11 (1+ulp/2 tie), 2^-24, 2^-14 - 2^-24, -0, 0, inf, -inf, NaN,
   * 65504 (overflow), -1.5, 0x3c01; bf16 analogues. */
  static const uint16_t sp16[] = {0x3c00, 0x4200, 0x1000, 0x0001, 0x03ff, 0x8000, 0x0000, 0x7c00,
                                  0xfc00, 0x7e00, 0x7bff, 0xbe00, 0x3c01, 0x0200};
  static const uint16_t spbf[] = {0x3f80, 0x4040, 0x3b80, 0x0001, 0x007f, 0x8000, 0x0000, 0x7f80,
                                  0xff80, 0x7fc0, 0x7f7f, 0xbfc0, 0x3f81, 0x0080};
  zcclDataType_t t16[] = {zcclFloat16, zcclBfloat16};
  for (int k = 0; k < 2; k++) {
    const uint16_t* sp = k ? spbf : sp16;
    for (size_t i = 0; i < n; i++) a[i] = (uint16_t)i;
    for (int pass = 0; pass <= 14; pass++) {
      for (size_t i = 0; i < n; i++) b[i] = pass < 14 ? sp[pass] : (uint16_t)rnd();
      for (int o = 0; o < 4; o++) {
        reference(t16[k], ops[o], want, a, b, n);
        check_reduce(dev, t16[k], ops[o], a, b, n, want, "out of place");
      }
    }
  }
  free(a);
  free(b);
  free(want);
  free(a8);
  free(b8);
  free(want8);
}

/* ---- divide ---------------------------------------------------------------- */

static void test_divide(zd_dev_t* dev) {
  /* 200 and 300: more than int8 / uint8 hold (the divisor is not narrowed). */
  static const int divs[] = {1, 2, 3, 4, 7, 16, 200, 300};
  for (size_t k = 0; k < sizeof divs / sizeof *divs; k++) {
    int q = divs[k];
    int8_t i8[] = {-128, -7, -1, 0, 1, 7, 127, -3};
    int32_t i32[] = {INT32_MIN, -7, -1, 0, 5, INT32_MAX, -100, 99};
    int64_t i64[] = {INT64_MIN, -7, -1, 0, 5, INT64_MAX, -100, 99};
    uint8_t u8[] = {255, 7, 1, 0, 5, 100, 3, 200};
    uint32_t u32[] = {UINT32_MAX, 7, 1, 0, 5, 100, 3, 8};
    float f32[] = {1.0f, -1.0f, 3.0f, 1e-45f, -0.0f, INFINITY, 1e38f, 0.1f};
    double f64[] = {1.0, -1.0, 3.0, 5e-324, -0.0, -INFINITY, 1e308, 0.1};
    int8_t w8[8];
    uint8_t wu8[8];
    int32_t w32[8];
    int64_t w64[8];
    uint32_t wu[8];
    float wf[8];
    double wd[8];
    for (int i = 0; i < 8; i++) {
      w8[i] = (int8_t)(i8[i] / q);
      wu8[i] = (uint8_t)(u8[i] / q);
      w32[i] = i32[i] / q;
      w64[i] = i64[i] / q;
      wu[i] = u32[i] / (uint32_t)q;
      wf[i] = f32[i] / (float)q;
      wd[i] = f64[i] / (double)q;
    }
    CHECK_RES(t_divide(dev, i8, 8, zcclInt8, q), zcclSuccess);
    CHECK_RES(t_divide(dev, u8, 8, zcclUint8, q), zcclSuccess);
    CHECK_RES(t_divide(dev, i32, 8, zcclInt32, q), zcclSuccess);
    CHECK_RES(t_divide(dev, i64, 8, zcclInt64, q), zcclSuccess);
    CHECK_RES(t_divide(dev, u32, 8, zcclUint32, q), zcclSuccess);
    CHECK_RES(t_divide(dev, f32, 8, zcclFloat32, q), zcclSuccess);
    CHECK_RES(t_divide(dev, f64, 8, zcclFloat64, q), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    CHECK(memcmp(i8, w8, sizeof w8) == 0);
    CHECK(memcmp(u8, wu8, sizeof wu8) == 0);
    CHECK(memcmp(i32, w32, sizeof w32) == 0);
    CHECK(memcmp(i64, w64, sizeof w64) == 0);
    CHECK(memcmp(u32, wu, sizeof wu) == 0);
    CHECK(memcmp(f32, wf, sizeof wf) == 0);
    CHECK(memcmp(f64, wd, sizeof wd) == 0);
    /* Narrow formats: every code. */
    zcclDataType_t nt[] = {zcclFloat16, zcclBfloat16, zcclFloat8e4m3, zcclFloat8e5m2};
    for (int j = 0; j < 4; j++) {
      const fmt_t* f = fmt_of(nt[j]);
      size_t n = zu_dtype_size(nt[j]) == 2 ? 65536 : 256;
      uint16_t* buf = malloc(n * 2);
      uint16_t* want = malloc(n * 2);
      for (size_t i = 0; i < n; i++) {
        set_bits(nt[j], buf, i, i);
        set_bits(nt[j], want, i, fmt_encode(f, fmt_decode(f, (unsigned)i) / q));
      }
      CHECK_RES(t_divide(dev, buf, n, nt[j], q), zcclSuccess);
      CHECK_RES(zd_sync(dev), zcclSuccess);
      size_t bad = first_mismatch(nt[j], buf, want, n);
      if (bad != SIZE_MAX) fprintf(stderr, "divide %s by %d: code %zu wrong\n", zu_dtype_name(nt[j]), q, bad);
      CHECK(bad == SIZE_MAX);
      free(buf);
      free(want);
    }
  }
  int32_t x = 5;
  CHECK_RES(zd_divide(dev, &x, 1, zcclInt32, 0), zcclInvalidArgument);
  CHECK_RES(zd_divide(dev, &x, 1, zcclInt32, -2), zcclInvalidArgument);
}

/* ---- argument checks ------------------------------------------------------- */

static void test_args(zd_dev_t* dev) {
  float v[16] = {0};
  CHECK_RES(zd_reduce(dev, v, v, v, 4, zcclFloat32, zcclAvg), zcclInvalidArgument);
  CHECK_RES(zd_reduce(dev, v, v, v, 4, (zcclDataType_t)99, zcclSum), zcclInvalidArgument);
  CHECK_RES(zd_reduce(dev, v, v, v, 4, zcclFloat32, (zcclRedOp_t)9), zcclInvalidArgument);
  CHECK_RES(zd_reduce(dev, v + 1, v, v + 8, 4, zcclFloat32, zcclSum), zcclInvalidArgument); /* partial overlap */
  CHECK_RES(zd_reduce(dev, NULL, v, v, 4, zcclFloat32, zcclSum), zcclInvalidArgument);
  CHECK_RES(zd_reduce(dev, NULL, NULL, NULL, 0, zcclFloat32, zcclSum), zcclSuccess);
  CHECK_RES(zd_copy(dev, v + 1, v, 8), zcclInvalidArgument);
  CHECK_RES(zd_copy(dev, v, v, 8), zcclSuccess);
  /* copy, then reduce on the copy, then divide: ordered like a stream */
  float src[4] = {2, 4, 6, 8}, tmp[4], out[4];
  CHECK_RES(zd_copy(dev, tmp, src, sizeof src), zcclSuccess);
  if (on_gpu(dev)) CHECK_RES(zd_sync(dev), zcclSuccess); /* a host-to-host copy there: done before tmp is staged */
  CHECK_RES(t_reduce(dev, out, tmp, src, 4, zcclFloat32, zcclSum), zcclSuccess);
  CHECK_RES(t_divide(dev, out, 4, zcclFloat32, 2), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8);
}

/* ---- a fill value that absorbs (the DOC ring's reduction) ------------------ */

/* Where a or b is the fill, the result is the fill (as the codec's
 * homomorphic ops); elsewhere the plain op, NaN included; AVG's division
 * leaves the fill. Large enough to take the thread-pool split. */
static void test_fill(zd_dev_t* dev) {
  const double fill = -1e34;
  const size_t n = 50000;
  double* a = malloc(n * 8);
  double* b = malloc(n * 8);
  double* d = malloc(n * 8);
  float* af = malloc(n * 4);
  float* bf = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    a[i] = i % 7 == 1 ? fill : i % 11 == 2 ? NAN : (double)i * 0.5;
    b[i] = i % 5 == 3 ? fill : -(double)(i % 13);
    af[i] = (float)a[i], bf[i] = (float)b[i];
  }
  for (int op = zcclSum; op <= zcclMin; op++) {
    CHECK_RES(t_reduce_fill(dev, d, a, b, n, zcclFloat64, (zcclRedOp_t)op, 1, fill), zcclSuccess);
    CHECK_RES(t_reduce_fill(dev, bf, af, bf, n, zcclFloat32, (zcclRedOp_t)op, 1, fill), zcclSuccess); /* dst == b */
    CHECK_RES(zd_sync(dev), zcclSuccess);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
      int isfill = i % 7 == 1 || i % 5 == 3;
      double want = isfill ? fill
                    : op == zcclSum ? a[i] + b[i]
                    : op == zcclProd ? a[i] * b[i]
                    : isnan(a[i]) ? a[i]
                    : op == zcclMax ? (a[i] > b[i] ? a[i] : b[i])
                                    : (a[i] < b[i] ? a[i] : b[i]);
      float wantf = isfill ? (float)fill : (float)want;
      bad += !(d[i] == want || (isnan(want) && isnan(d[i])));
      bad += !(bf[i] == wantf || (isnan(wantf) && isnan(bf[i])));
      bf[i] = (float)b[i];
    }
    if (bad) fprintf(stderr, "reduce_fill op %d: %ld wrong\n", op, bad);
    CHECK(bad == 0);
  }
  CHECK_RES(t_divide_fill(dev, a, n, zcclFloat64, 4, 1, fill), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  long bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += i % 7 == 1 ? a[i] != fill : i % 11 == 2 ? !isnan(a[i]) : a[i] != (double)i * 0.5 / 4;
  CHECK(bad == 0);
  /* Without a fill: the plain operations; a fill on other dtypes, or not finite: refused. */
  float one[2] = {1, 2}, two[2] = {3, 4};
  CHECK_RES(t_reduce_fill(dev, one, one, two, 2, zcclFloat32, zcclSum, 0, 1.0), zcclSuccess);
  CHECK_RES(t_divide_fill(dev, one, 2, zcclFloat32, 2, 0, 2.0), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(one[0] == 2 && one[1] == 3);
  int32_t iv[2] = {1, 2};
  CHECK_RES(zd_reduce_fill(dev, iv, iv, iv, 2, zcclInt32, zcclSum, 1, 1.0), zcclInvalidArgument);
  CHECK_RES(zd_divide_fill(dev, iv, 2, zcclInt32, 2, 1, 1.0), zcclInvalidArgument);
  CHECK_RES(zd_reduce_fill(dev, one, one, two, 2, zcclFloat32, zcclSum, 1, NAN), zcclInvalidArgument);
  free(a), free(b), free(d), free(af), free(bf);
}

/* ---- buffer pool ----------------------------------------------------------- */

static void test_pool(zd_kind_t kind) {
  env_set("ZCCL_BUFFER_POOL_BYTES", "1M", 1);
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(kind, &dev), zcclSuccess);
  CHECK(zd_buf_largest(dev) == (1u << 20));
  void *p[4], *q = NULL, *z = NULL;
  CHECK_RES(zd_buf_get(dev, 0, &z), zcclSuccess);
  CHECK(z != NULL && (uintptr_t)z % 64 == 0);
  CHECK(zd_buf_largest(dev) == (1u << 20) - 64);
  zd_buf_put(dev, z);
  CHECK(zd_buf_largest(dev) == (1u << 20));
  for (int i = 0; i < 4; i++) {
    CHECK_RES(zd_buf_get(dev, (256u << 10) - (i ? 0 : 10), &p[i]), zcclSuccess);
    CHECK(p[i] != NULL && (uintptr_t)p[i] % 64 == 0);
    if (p[i]) t_memset(dev, p[i], i + 1, 256u << 10);
  }
  CHECK(zd_buf_largest(dev) == 0);
  CHECK_RES(zd_buf_get(dev, 1, &q), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("ZCCL_BUFFER_POOL_BYTES");
  CHECK(q == NULL);
  /* Pieces did not overlap: each still holds its own pattern. */
  for (int i = 0; i < 4; i++)
    if (p[i]) CHECK(t_byte_at(dev, p[i], 0) == i + 1 && t_byte_at(dev, p[i], (256u << 10) - 1) == i + 1);
  /* Holes at 0 and 2: 256K is the most, 512K does not fit. */
  zd_buf_put(dev, p[0]);
  zd_buf_put(dev, p[2]);
  CHECK(zd_buf_largest(dev) == (256u << 10));
  CHECK_RES(zd_buf_get(dev, 512u << 10, &q), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("ZCCL_BUFFER_POOL_BYTES");
  /* First fit: a small piece comes from the first hole. */
  CHECK_RES(zd_buf_get(dev, 100, &q), zcclSuccess);
  CHECK(q == p[0]);
  zd_buf_put(dev, q);
  /* Freeing 1 merges 0..2 into one 768K hole. */
  zd_buf_put(dev, p[1]);
  CHECK(zd_buf_largest(dev) == (768u << 10));
  CHECK_RES(zd_buf_get(dev, 700u << 10, &q), zcclSuccess);
  CHECK(q == p[0]);
  zd_buf_put(dev, q);
  zd_buf_put(dev, p[3]);
  CHECK(zd_buf_largest(dev) == (1u << 20));
  /* Larger than the whole pool, and a pointer that is not a piece. */
  CHECK_RES(zd_buf_get(dev, 2u << 20, &q), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("ZCCL_BUFFER_POOL_BYTES");
  CHECK_RES(zd_buf_get(dev, SIZE_MAX, &q), zcclInvalidUsage);
  int not_a_piece;
  zd_buf_put(dev, &not_a_piece);
  zd_buf_put(dev, p[3]); /* twice */
  CHECK(zd_buf_largest(dev) == (1u << 20));
  /* Many small pieces (the bookkeeping grows), freed in a scrambled order. */
  enum { NP = 1000 };
  void* many[NP];
  for (int i = 0; i < NP; i++) CHECK_RES(zd_buf_get(dev, 1 + (size_t)i % 200, &many[i]), zcclSuccess);
  for (int i = 0; i < NP; i++) zd_buf_put(dev, many[(i * 7919) % NP]);
  CHECK(zd_buf_largest(dev) == (1u << 20));
  zd_dev_destroy(dev);
  env_unset("ZCCL_BUFFER_POOL_BYTES");
}

/* ---- sim: asynchronous semantics ------------------------------------------- */

/* Looks at dst while the worker may be writing it: deliberately a race
 * (that is what is being shown), so kept out of TSan's view. */
__attribute__((no_sanitize_thread, noinline)) static int peek_all(const volatile float* p, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

static void test_sim_async(void) {
  env_set("ZCCL_SIM_DELAY_US", "2000", 1);
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  enum { N = 4096 };
  float *a = malloc(N * 4), *b = malloc(N * 4), *d = malloc(N * 4);
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 1;
  }
  int stale = 0, pending = 0;
  for (int trial = 0; trial < 10; trial++) {
    for (int i = 0; i < N; i++) d[i] = -1;
    CHECK_RES(zd_reduce(dev, d, a, b, N, zcclFloat32, zcclSum), zcclSuccess);
    zd_event_t ev = zd_event_record(dev);
    stale += peek_all(d, N, -1);
    pending += !zd_event_done(dev, ev);
    CHECK_RES(zd_event_wait(dev, ev), zcclSuccess);
    CHECK(zd_event_done(dev, ev));
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= d[i] == (float)i + 1;
    CHECK(ok);
  }
  printf("sim, delay 2000 us: result not yet visible right after zd_reduce in %d/10 runs, event pending in %d/10\n",
         stale, pending);
  CHECK(stale > 0);
  CHECK(pending > 0);

  /* Events are ordered: when a later one has passed, every earlier one has. */
  env_set("ZCCL_SIM_DELAY_US", "300", 1);
  zd_dev_destroy(dev);
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  enum { NE = 20 };
  zd_event_t evs[NE];
  for (int i = 0; i < N; i++) d[i] = 0;
  for (int e = 0; e < NE; e++) {
    CHECK_RES(zd_reduce(dev, d, d, b, N, zcclFloat32, zcclSum), zcclSuccess);
    evs[e] = zd_event_record(dev);
  }
  for (int e = 1; e < NE; e++) CHECK(evs[e] > evs[e - 1]);
  int ordered = 1;
  while (!zd_event_done(dev, evs[NE - 1])) {
    int seen_done = 0;
    for (int e = NE - 1; e >= 0; e--) {
      int done = zd_event_done(dev, evs[e]);
      if (seen_done && !done) ordered = 0;
      seen_done |= done;
    }
  }
  CHECK(ordered);
  CHECK_RES(zd_event_wait(dev, evs[NE / 2]), zcclSuccess);
  for (int e = 0; e <= NE / 2; e++) CHECK(zd_event_done(dev, evs[e]));
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(d[0] == NE && d[N - 1] == NE);
  zd_dev_destroy(dev);

  /* Many queued operations: more than the queue holds, so issuing blocks. */
  env_set("ZCCL_SIM_DELAY_US", "2", 1);
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  enum { NOPS = 5000 };
  int32_t acc[64] = {0}, one[64];
  for (int i = 0; i < 64; i++) one[i] = 1;
  for (int k = 0; k < NOPS; k++) CHECK_RES(zd_reduce(dev, acc, acc, one, 64, zcclInt32, zcclSum), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(acc[0] == NOPS && acc[63] == NOPS);
  zd_dev_destroy(dev);

  /* Destroy with work queued waits for it. */
  env_set("ZCCL_SIM_DELAY_US", "2000", 1);
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  for (int i = 0; i < N; i++) d[i] = 0;
  for (int k = 0; k < 10; k++) CHECK_RES(zd_reduce(dev, d, d, b, N, zcclFloat32, zcclSum), zcclSuccess);
  CHECK_RES(zd_copy(dev, a, d, N * 4), zcclSuccess);
  zd_dev_destroy(dev);
  CHECK(d[0] == 10 && d[N - 1] == 10 && a[0] == 10 && a[N - 1] == 10);
  env_unset("ZCCL_SIM_DELAY_US");
  free(a);
  free(b);
  free(d);
}

/* Creating a cuda device: refused, saying why, without CUDA or a GPU. */
static void test_kinds(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  zd_dev_t* dev = (zd_dev_t*)&dev;
  if (!info.built) {
    CHECK_RES(zd_dev_create(ZD_CUDA, &dev), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("ZCCL_CUDA=OFF");
    CHECK(dev == NULL);
  } else if (info.ndevices == 0) {
    CHECK_RES(zd_dev_create(ZD_CUDA, &dev), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("no usable CUDA device");
    CHECK(dev == NULL);
  } else {
    CHECK_RES(zd_dev_create(ZD_CUDA, &dev), zcclSuccess);
    if (dev != NULL) CHECK(zd_dev_kind(dev) == ZD_CUDA);
    zd_dev_destroy(dev);
  }
  CHECK(strcmp(zd_kind_name(ZD_HOST), "host") == 0 && strcmp(zd_kind_name(ZD_SIM), "sim") == 0 &&
        strcmp(zd_kind_name(ZD_CUDA), "cuda") == 0);
  zd_kind_t k = ZD_CUDA;
  env_unset("ZCCL_DEVICE");
  CHECK_RES(zd_kind_from_env(&k), zcclSuccess);
  CHECK(k == ZD_HOST);
  env_set("ZCCL_DEVICE", "sim", 1);
  CHECK_RES(zd_kind_from_env(&k), zcclSuccess);
  CHECK(k == ZD_SIM);
  env_set("ZCCL_DEVICE", "CUDA", 1);
  CHECK_RES(zd_kind_from_env(&k), zcclSuccess);
  CHECK(k == ZD_CUDA);
  env_set("ZCCL_DEVICE", "gpu", 1);
  CHECK_RES(zd_kind_from_env(&k), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_DEVICE");
  env_unset("ZCCL_DEVICE");
}

/* The progress hook: called on this thread while a host codec operation
 * runs here (between chunks), never once cleared; the streams are the same. */
static int hook_calls;
static void count_hook(void* arg) { (*(int*)arg)++; }

static void test_progress_hook(zd_dev_t* dev) {
  size_t n = 1 << 18; /* 64 chunks of the codec */
  float* x = malloc(n * sizeof *x);
  float* y = malloc(n * sizeof *y);
  for (size_t i = 0; i < n; i++) x[i] = (float)sin((double)i * 0.01);
  size_t cap = hz_bound(n), sz1 = 0, sz2 = 0;
  uint8_t* s1 = malloc(cap);
  uint8_t* s2 = malloc(cap);
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3};
  hook_calls = 0;
  zd_set_progress(dev, count_hook, &hook_calls);
  CHECK_RES(zd_encode(dev, HZ, &p, x, n, s1, cap, &sz1), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK_RES(zd_decode(dev, HZ, s1, &sz1, y, n), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  zd_set_progress(dev, NULL, NULL);
  /* host: the calling thread runs the ops (thread 0 of the pool's split);
   * sim: its worker does, and never calls this thread's hook. */
  if (zd_dev_kind(dev) == ZD_HOST) CHECK(hook_calls > 0);
  else CHECK(hook_calls == 0);
  int after = hook_calls;
  CHECK_RES(zd_encode(dev, HZ, &p, x, n, s2, cap, &sz2), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(hook_calls == after);
  CHECK(sz1 == sz2 && memcmp(s1, s2, sz1) == 0);
  long bad = 0;
  for (size_t i = 0; i < n; i++) bad += !(fabsf(y[i] - x[i]) <= 1e-3f * 1.0001f);
  CHECK(bad == 0);
  /* The fused op (host only; in place over the stream, the hook called as
   * by compression) writes compression-then-hop's bytes. */
  CHECK(zd_has_hop_values(dev) == (zd_dev_kind(dev) == ZD_HOST));
  if (zd_dev_kind(dev) != ZD_HOST) { /* said plainly, never queued */
    CHECK_RES(zd_hop_values(dev, zcclSum, &p, x, n, s1, &sz1, s2, cap, &sz2), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("no fused kernel");
    free(x), free(y), free(s1), free(s2);
    return;
  }
  uint8_t* want = malloc(cap);
  size_t wn = 0;
  for (size_t i = 0; i < n; i++) y[i] = (float)cos((double)i * 0.002) + (i % 5000 == 7 ? NAN : 0.0f);
  CHECK_RES(zc_compress(&p, y, n, s2, cap, &sz2, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_hop(zcclSum, s2, sz2, s1, sz1, want, cap, &wn), zcclSuccess);
  hook_calls = 0;
  zd_set_progress(dev, count_hook, &hook_calls);
  CHECK_RES(zd_hop_values(dev, zcclSum, &p, y, n, s1, &sz1, s1, cap, &sz1), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  zd_set_progress(dev, NULL, NULL);
  CHECK(hook_calls > 0);
  CHECK(sz1 == wn && memcmp(s1, want, wn) == 0);
  CHECK_RES(zd_hop_values(dev, zcclProd, &p, y, n, s1, &sz1, s2, cap, &sz2), zcclInvalidArgument);
  CHECK_RES(zd_hop_values(dev, zcclSum, &p, y, n, s1, &sz1, y, cap, &sz2), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("overlap");
  sz1 = 100; /* not the stream's size */
  CHECK_RES(zd_hop_values(dev, zcclSum, &p, y, n, s1, &sz1, s2, cap, &sz2), zcclInvalidArgument);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  free(want);
  free(x), free(y), free(s1), free(s2);
}

/* Sim user streams and tickets (zd_stream.c), as a stream-ordered call
 * uses them: the ticket's wait passes only after the stream's earlier work,
 * the stream's later work runs only after the release, a stop function
 * ends a wait, and the staging pool hands out host memory (pieces, and
 * memory of its own for what does not fit). */
static atomic_int stream_steps;
static void stream_step(void* arg) {
  struct timespec ts = {0, 20 * 1000000L};
  if (arg) nanosleep(&ts, NULL);
  atomic_fetch_add(&stream_steps, 1);
}
static int stop_now(void* arg) { return *(int*)arg; }

/* A device's memory while a call holds a stream: a GPU allocation or free
 * may wait for every stream, the held one too, so memory the progress
 * thread takes for that call must exist already. The sim device's
 * allocations wait (zd_sim_streams_drain), and it makes its pools when
 * created: the pieces, and a message's own memory beyond the staging pool,
 * come at once with the stream held (a helper thread takes them; 10 s and
 * it is stuck). */
typedef struct {
  zd_dev_t* dev;
  atomic_int done;
} pool_user_t;
static void* take_pieces(void* arg) {
  pool_user_t* u = arg;
  void *a = NULL, *b = NULL, *c = NULL;
  CHECK_RES(zd_buf_get(u->dev, 4096, &a), zcclSuccess);
  CHECK_RES(zd_stage_get(u->dev, 4096, &b), zcclSuccess);
  CHECK_RES(zd_stage_get(u->dev, zd_buf_largest(u->dev) + (1u << 20), &c), zcclSuccess);
  zd_stage_put(u->dev, c);
  zd_stage_put(u->dev, b);
  zd_buf_put(u->dev, a);
  atomic_store(&u->done, 1);
  return NULL;
}
static void test_pools_under_hold(void) {
  env_set("ZCCL_SIM_STAGE", "1", 1);
  pool_user_t u = {NULL, 0};
  CHECK_RES(zd_dev_create(ZD_SIM, &u.dev), zcclSuccess);
  zcclStream_t s = NULL;
  CHECK_RES(zd_sim_stream_create(&s), zcclSuccess);
  zd_ticket_t* t = NULL;
  CHECK_RES(zd_stream_enter(u.dev, s, &t), zcclSuccess);
  CHECK_RES(zd_ticket_wait(t, NULL, NULL), zcclSuccess); /* the stream is held now */
  pthread_t th;
  CHECK(pthread_create(&th, NULL, take_pieces, &u) == 0);
  struct timespec tick = {0, 10 * 1000000L};
  for (int ms = 0; ms < 10000 && !atomic_load(&u.done); ms += 10) nanosleep(&tick, NULL);
  CHECK(atomic_load(&u.done) == 1);
  zd_ticket_release(t); /* lets a stuck helper go, so the test ends either way */
  pthread_join(th, NULL);
  zd_sim_stream_destroy(s);
  zd_dev_destroy(u.dev);
  env_unset("ZCCL_SIM_STAGE");
}

static void test_sim_streams(void) {
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  zcclStream_t s = NULL;
  CHECK_RES(zd_sim_stream_create(&s), zcclSuccess);
  CHECK(zd_sim_stream_valid(s) && !zd_sim_stream_valid(NULL));
  int go = 1;
  CHECK_RES(zd_sim_stream_launch(s, stream_step, &go), zcclSuccess); /* slow */
  zd_ticket_t* t = NULL;
  CHECK_RES(zd_stream_enter(dev, s, &t), zcclSuccess);
  CHECK_RES(zd_sim_stream_launch(s, stream_step, NULL), zcclSuccess); /* held */
  CHECK_RES(zd_ticket_wait(t, NULL, NULL), zcclSuccess);
  CHECK(atomic_load(&stream_steps) == 1); /* the earlier step ran, the later is held */
  struct timespec ts = {0, 30 * 1000000L};
  nanosleep(&ts, NULL);
  CHECK(atomic_load(&stream_steps) == 1);
  zd_ticket_release(t);
  CHECK_RES(zd_sim_stream_sync(s), zcclSuccess);
  CHECK(atomic_load(&stream_steps) == 2);
  /* A wait behind a held stream gives up when told to. */
  zd_ticket_t *t1 = NULL, *t2 = NULL;
  CHECK_RES(zd_stream_enter(dev, s, &t1), zcclSuccess);
  CHECK_RES(zd_stream_enter(dev, s, &t2), zcclSuccess);
  CHECK_RES(zd_ticket_wait(t1, NULL, NULL), zcclSuccess);
  int stop = 1;
  CHECK_RES(zd_ticket_wait(t2, stop_now, &stop), zcclRemoteError);
  zd_ticket_release(t1);
  CHECK_RES(zd_ticket_wait(t2, NULL, NULL), zcclSuccess);
  zd_ticket_release(t2);
  /* Not a sim stream: refused, nothing queued. */
  CHECK_RES(zd_stream_enter(dev, NULL, &t), zcclInvalidArgument);
  CHECK(t == NULL);
  zd_sim_stream_destroy(s);
  /* Staging memory: host-writable pieces; one larger than the pool's free
   * room gets memory of its own; every piece goes back. */
  env_set("ZCCL_SIM_STAGE", "1", 1);
  CHECK(zd_stage_needed(dev));
  env_unset("ZCCL_SIM_STAGE");
  void *a = NULL, *b = NULL;
  CHECK_RES(zd_stage_get(dev, 1000, &a), zcclSuccess);
  memset(a, 1, 1000);
  size_t big = zd_buf_largest(dev) + (1u << 20);
  CHECK_RES(zd_stage_get(dev, big, &b), zcclSuccess);
  memset(b, 2, big);
  zd_stage_put(dev, b);
  zd_stage_put(dev, a);
  zd_dev_destroy(dev);
  test_pools_under_hold();
}

/* Staging buffers given back after a queued copy (zd_stage_put_after), on
 * sim with staging and a 1 MiB staging pool, the copies on a stream that
 * lags 50 ms: a buffer is handed out again only once its copy has passed
 * (the copy still reads the first contents), a get that finds the pool
 * full of late buffers waits for the oldest and gets it (not memory of
 * its own), zd_sync takes every late buffer back, a lane's error that such
 * a wait meets stays for the lane's next wait, and a device destroyed
 * with late buffers frees them. */
static void test_stage_late(void) {
  env_set("ZCCL_SIM_STAGE", "1", 1);
  env_set("ZCCL_BUFFER_POOL_BYTES", "1M", 1);
  env_set("ZCCL_SIM_LANE_LAG_US", "50000", 1);
  env_set("ZCCL_DEVICE_STREAMS", "2", 1);
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  env_unset("ZCCL_SIM_STAGE");
  env_unset("ZCCL_BUFFER_POOL_BYTES");
  env_unset("ZCCL_SIM_LANE_LAG_US");
  env_unset("ZCCL_DEVICE_STREAMS");
  if (dev == NULL) return;
  const size_t q = 256u << 10;
  void *s[4] = {NULL}, *p = NULL, *t = NULL;
  CHECK_RES(zd_buf_get(dev, q, &p), zcclSuccess);
  zd_set_lane(dev, 1); /* the lagging stream */
  for (int i = 0; i < 4; i++) {
    CHECK_RES(zd_stage_get(dev, q, &s[i]), zcclSuccess);
    memset(s[i], 0x10 + i, q);
  }
  /* s[0] read by a queued copy, then given back late. */
  CHECK_RES(zd_copy(dev, p, s[0], q), zcclSuccess);
  zd_event_t ev = zd_event_record(dev);
  zd_stage_put_after(dev, s[0], ev);
  CHECK_RES(zd_stage_get(dev, q, &t), zcclSuccess);
  CHECK(t != s[0] || zd_event_done(dev, ev)); /* handed out again only once passed */
  memset(t, 0x7f, q);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(((unsigned char*)p)[0] == 0x10 && ((unsigned char*)p)[q - 1] == 0x10);
  zd_stage_put(dev, t);
  /* The pool full of late buffers: the next get waits for the oldest. */
  for (int i = 1; i < 4; i++) zd_stage_put(dev, s[i]);
  for (int i = 0; i < 4; i++) CHECK_RES(zd_stage_get(dev, q, &s[i]), zcclSuccess);
  for (int i = 0; i < 4; i++) {
    CHECK_RES(zd_copy(dev, p, s[i], q), zcclSuccess);
    zd_stage_put_after(dev, s[i], zd_event_record(dev));
  }
  CHECK_RES(zd_stage_get(dev, q, &t), zcclSuccess);
  CHECK(t == s[0]);
  zd_stage_put(dev, t);
  /* After a sync every late buffer is back: the whole pool in one piece. */
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK_RES(zd_stage_get(dev, 4 * q, &t), zcclSuccess);
  CHECK(t == s[0]);
  zd_stage_put(dev, t);
  /* An error of the lane that a wait for a late buffer meets (a corrupt
   * stream's decompression queued before the copies) is still reported
   * by the lane's next wait, once. */
  size_t bad = 64;
  memset(p, 0xff, bad);
  CHECK_RES(zd_decode(dev, HZ, p, &bad, (char*)p + q / 2, 100), zcclSuccess);
  for (int i = 0; i < 4; i++) CHECK_RES(zd_stage_get(dev, q, &s[i]), zcclSuccess);
  for (int i = 0; i < 4; i++) {
    CHECK_RES(zd_copy(dev, (char*)p + q / 2 + 4096, s[i], 64), zcclSuccess);
    zd_stage_put_after(dev, s[i], zd_event_record(dev));
  }
  CHECK_RES(zd_stage_get(dev, q, &t), zcclSuccess); /* waits for the oldest copy, after the failure */
  zd_stage_put(dev, t);
  CHECK_RES(zd_sync(dev), zcclInvalidArgument); /* the host codec's "bad magic" */
  CHECK_LAST_ERROR_HAS("bad magic");
  CHECK_RES(zd_sync(dev), zcclSuccess);
  /* Late buffers at the device's end. */
  CHECK_RES(zd_stage_get(dev, q, &t), zcclSuccess);
  CHECK_RES(zd_copy(dev, p, t, q), zcclSuccess);
  zd_stage_put_after(dev, t, zd_event_record(dev));
  zd_set_lane(dev, 0);
  zd_buf_put(dev, p);
  zd_dev_destroy(dev);
}

/* Streams of one device (lanes), on kind (sim with delays; cuda where a GPU
 * is): ZCCL_DEVICE_STREAMS=3 gives three; work on each lane runs in order
 * (a chain of adds on one buffer per lane); a lane that waits for another's
 * event sees that lane's result (a copy behind 6 adds); zd_sync waits for
 * every lane; an error on one lane comes back from a wait on that lane's
 * event and not from the others'; bad events and values are refused. */
static void test_lanes(zd_kind_t kind) {
  env_set("ZCCL_SIM_DELAY_US", "300", 1);
  env_set("ZCCL_DEVICE_STREAMS", "3", 1);
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(kind, &dev), zcclSuccess);
  if (dev == NULL) return;
  CHECK(zd_lanes(dev) == (kind == ZD_HOST ? 1 : 3));
  int L = zd_lanes(dev);
  enum { N = 1000, ADDS = 6 };
  float host[N], one[N], got[N];
  for (int i = 0; i < N; i++) host[i] = (float)i, one[i] = 1;
  float *buf[3], *ones, *copy;
  for (int l = 0; l < 3; l++) CHECK_RES(zd_buf_get(dev, N * 4, (void**)&buf[l]), zcclSuccess);
  CHECK_RES(zd_buf_get(dev, N * 4, (void**)&ones), zcclSuccess);
  CHECK_RES(zd_buf_get(dev, N * 4, (void**)&copy), zcclSuccess);
  CHECK_RES(zd_copy(dev, ones, one, N * 4), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  zd_event_t ev[3];
  for (int l = 0; l < L; l++) {
    CHECK(zd_set_lane(dev, l) == (l ? l - 1 : 0));
    CHECK_RES(zd_copy(dev, buf[l], host, N * 4), zcclSuccess);
    for (int k = 0; k < ADDS + l; k++) CHECK_RES(zd_reduce(dev, buf[l], buf[l], ones, N, zcclFloat32, zcclSum), zcclSuccess);
    ev[l] = zd_event_record(dev);
  }
  /* Lane 0's copy of lane L-1's buffer, ordered on the device. */
  zd_set_lane(dev, 0);
  CHECK_RES(zd_lane_wait(dev, ev[L - 1]), zcclSuccess);
  CHECK_RES(zd_copy(dev, copy, buf[L - 1], N * 4), zcclSuccess);
  for (int l = L - 1; l >= 0; l--) {
    CHECK_RES(zd_event_wait(dev, ev[l]), zcclSuccess);
    CHECK(zd_event_done(dev, ev[l]));
    CHECK_RES(zd_copy(dev, got, buf[l], N * 4), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= got[i] == (float)(i + ADDS + l);
    CHECK(ok);
  }
  CHECK_RES(zd_copy(dev, got, copy, N * 4), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= got[i] == (float)(i + ADDS + L - 1);
  CHECK(ok);
  /* zd_sync covers every lane. */
  for (int l = 0; l < L; l++) {
    zd_set_lane(dev, l);
    CHECK_RES(zd_reduce(dev, buf[l], buf[l], ones, N, zcclFloat32, zcclSum), zcclSuccess);
  }
  zd_set_lane(dev, 0);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  for (int l = 0; l < L; l++) {
    CHECK_RES(zd_copy(dev, got, buf[l], N * 4), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    CHECK(got[0] == (float)(ADDS + l + 1) && got[N - 1] == (float)(N - 1 + ADDS + l + 1));
  }
  if (L > 1) {
    /* A corrupt stream on lane 1: its wait reports it, lane 0's does not. */
    size_t bad = 64;
    memset(got, 0x5a, sizeof got);
    CHECK_RES(zd_copy(dev, copy, got, N * 4), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    zd_set_lane(dev, 1);
    CHECK_RES(zd_decode(dev, HZ, copy, &bad, buf[1], N), zcclSuccess);
    zd_event_t e1 = zd_event_record(dev);
    zd_set_lane(dev, 0);
    CHECK_RES(zd_copy(dev, buf[0], host, N * 4), zcclSuccess);
    zd_event_t e0 = zd_event_record(dev);
    CHECK_RES(zd_event_wait(dev, e0), zcclSuccess);
    CHECK(zd_event_wait(dev, e1) != zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess); /* reported once */
    CHECK_RES(zd_lane_wait(dev, (zd_event_t)7 << 56), zcclInvalidArgument);
  }
  CHECK(zd_set_lane(dev, -1) == 0 && zd_set_lane(dev, 0) == L - 1);
  for (int l = 0; l < 3; l++) zd_buf_put(dev, buf[l]);
  zd_buf_put(dev, ones);
  zd_buf_put(dev, copy);
  zd_dev_destroy(dev);
  env_set("ZCCL_DEVICE_STREAMS", "9", 1);
  dev = NULL;
  CHECK_RES(zd_dev_create(kind, &dev), zcclInvalidArgument);
  CHECK(dev == NULL);
  env_unset("ZCCL_DEVICE_STREAMS");
  env_unset("ZCCL_SIM_DELAY_US");
}

/* ZCCL_STREAM_MODE: sim is async unless told; blocking makes it block and
 * zd_stream_sync waits for the stream's work; host never blocks; anything
 * else fails the device, naming the variable. */
static void test_stream_mode(void) {
  zd_dev_t *sim = NULL, *host = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &sim), zcclSuccess);
  CHECK(zd_stream_blocking(sim) == 0);
  zd_dev_destroy(sim);
  env_set("ZCCL_STREAM_MODE", "blocking", 1);
  CHECK_RES(zd_dev_create(ZD_SIM, &sim), zcclSuccess);
  CHECK_RES(zd_dev_create(ZD_HOST, &host), zcclSuccess);
  CHECK(zd_stream_blocking(sim) == 1 && zd_stream_blocking(host) == 0);
  zcclStream_t s = NULL;
  CHECK_RES(zd_sim_stream_create(&s), zcclSuccess);
  atomic_store(&stream_steps, 0);
  int go = 1;
  CHECK_RES(zd_sim_stream_launch(s, stream_step, &go), zcclSuccess); /* slow */
  CHECK_RES(zd_stream_sync(sim, s), zcclSuccess);
  CHECK(atomic_load(&stream_steps) == 1);
  CHECK_RES(zd_stream_sync(sim, NULL), zcclInvalidArgument); /* not a sim stream */
  CHECK_RES(zd_stream_sync(host, s), zcclInternalError);
  zd_sim_stream_destroy(s);
  zd_dev_destroy(host);
  zd_dev_destroy(sim);
  env_set("ZCCL_STREAM_MODE", "async", 1);
  CHECK_RES(zd_dev_create(ZD_SIM, &sim), zcclSuccess);
  CHECK(zd_stream_blocking(sim) == 0);
  zd_dev_destroy(sim);
  env_set("ZCCL_STREAM_MODE", "sometimes", 1);
  sim = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &sim), zcclInvalidArgument);
  CHECK(sim == NULL && strstr(zcclGetLastError(NULL), "ZCCL_STREAM_MODE") != NULL);
  env_unset("ZCCL_STREAM_MODE");
}

/* An operation's result: its error at the call (host runs it there), else
 * the wait's. */
static zcclResult_t queued(zd_dev_t* dev, zcclResult_t at_call) {
  return at_call != zcclSuccess ? at_call : zd_sync(dev);
}

/* Every codec of the table through the device (host and sim): encode,
 * decode, and the reduction of streams where the codec has one, give the
 * codec's own bytes and values; what a codec cannot do is refused before
 * anything is queued, and a stream of another count is the caller's
 * mismatch. */
static void test_codec_table(zd_dev_t* dev) {
  enum { N = 5000 };
  float x[N], y[N], got[N + 1];
  for (int i = 0; i < N; i++) { /* runs of zeros for RLE, values for the lossy codecs */
    x[i] = i % 100 < 60 ? 0.0f : (float)sin(i * 0.01);
    y[i] = i % 70 < 30 ? 0.0f : (float)cos(i * 0.003);
  }
  int tried = 0;
  for (int id = 0; id < zcclNumCodecs; id++) {
    const zc_codec_info_t* c = zc_codec_info(id);
    if (c->ops == NULL) {
      CHECK(id == zcclCodecNone && !zd_codec_runs(dev, c));
      continue;
    }
    CHECK(zd_codec_runs(dev, c)); /* host and sim run every codec */
    tried++;
    zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3};
    size_t cap = c->ops->bound(&p, N), sa = 0, sb = 0, so = 0, want = 0, wn = 0;
    CHECK(cap > 0);
    uint8_t *a = malloc(cap), *b = malloc(cap), *o = malloc(cap), *w = malloc(cap);
    CHECK_RES(zd_encode(dev, c, &p, x, N, a, cap, &sa), zcclSuccess);
    CHECK_RES(zd_encode(dev, c, &p, y, N, b, cap, &sb), zcclSuccess);
    CHECK_RES(zd_decode(dev, c, a, &sa, got, N), zcclSuccess);
    CHECK_RES(zd_sync(dev), zcclSuccess);
    CHECK_RES(c->ops->encode(&p, x, N, w, cap, &want), zcclSuccess);
    CHECK(sa == want && memcmp(a, w, sa) == 0);
    double tol = (c->caps & ZC_CAP_LOSSLESS) ? 0.0 : 1e-3 * 1.0001;
    long bad = 0;
    for (int i = 0; i < N; i++) bad += !(fabs((double)got[i] - x[i]) <= tol);
    CHECK(bad == 0);
    /* Room for one value more: the caller's mismatch (host: at once;
     * sim: from the wait). */
    CHECK(queued(dev, zd_decode(dev, c, a, &sa, got, N + 1)) == zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("values, expected");
    if (c->ops->reduce) {
      CHECK_RES(zd_reduce_encoded(dev, c, zcclSum, a, &sa, b, &sb, o, cap, &so), zcclSuccess);
      CHECK_RES(zd_decode(dev, c, o, &so, got, N), zcclSuccess);
      CHECK_RES(zd_sync(dev), zcclSuccess);
      CHECK_RES(c->ops->reduce(zcclSum, a, sa, b, sb, w, cap, &wn), zcclSuccess);
      CHECK(so == wn && memcmp(o, w, so) == 0);
      bad = 0;
      for (int i = 0; i < N; i++) bad += !(fabs((double)got[i] - ((double)x[i] + y[i])) <= 2 * tol + 1e-6);
      CHECK(bad == 0);
      CHECK_RES(zd_reduce_encoded(dev, c, zcclProd, a, &sa, b, &sb, o, cap, &so), zcclInvalidArgument);
      if (!c->ops->reduce_in_place) {
        CHECK_RES(zd_reduce_encoded(dev, c, zcclSum, a, &sa, b, &sb, a, cap, &so), zcclInvalidArgument);
        CHECK_LAST_ERROR_HAS("may not be an input");
      }
    } else {
      CHECK_RES(zd_reduce_encoded(dev, c, zcclSum, a, &sa, b, &sb, o, cap, &so), zcclInvalidUsage);
      CHECK_LAST_ERROR_HAS("no reduction of streams");
    }
    if (c->caps & ZC_CAP_FINITE) { /* ZFP: a tolerance, and finite values */
      zc_params_t q = p;
      q.eb = 0;
      CHECK_RES(zd_encode(dev, c, &q, x, N, a, cap, &sa), zcclInvalidArgument);
      float inf[4] = {1, INFINITY, 2, 3};
      CHECK(queued(dev, zd_encode(dev, c, &p, inf, 4, a, cap, &sa)) == zcclInvalidArgument);
      CHECK_LAST_ERROR_HAS("not finite");
    }
    zc_params_t ints = {.dtype = zcclInt32, .eb = 1e-3};
    CHECK_RES(zd_encode(dev, c, &ints, x, N, a, cap, &sa), zcclInvalidArgument);
    CHECK_RES(zd_encode(dev, c, &p, x, N, (uint8_t*)x + 8, cap, &sa), zcclInvalidArgument);
    CHECK_LAST_ERROR_HAS("overlap");
    CHECK_RES(zd_sync(dev), zcclSuccess);
    free(a), free(b), free(o), free(w);
  }
  CHECK(tried == zcclNumCodecs - 1);
  CHECK_RES(zd_encode(dev, NULL, NULL, x, N, got, sizeof got, NULL), zcclInvalidArgument);
}

int main(void) {
  /* The sweep's largest counts then take the thread-pool split for every dtype. */
  env_set("ZCCL_REDUCE_SPLIT_BYTES", "64K", 0);
  test_kinds();
  /* cuda where a GPU is: the same checks (its codec and progress hook are
   * not the host's; the GPU test covers what only it has). */
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  int ndevs = info.ndevices > 0 ? 3 : 2;
  if (ndevs == 2) printf("cuda device part skipped: %s\n", info.status);
  zd_dev_t* devs[3] = {NULL, NULL, NULL};
  for (int k = 0; k < ndevs; k++) CHECK_RES(zd_dev_create(kinds[k], &devs[k]), zcclSuccess);
  for (int k = 0; k < ndevs; k++)
    if (!devs[k]) TEST_DONE();
  for (int k = 0; k < ndevs; k++) {
    CHECK(zd_dev_kind(devs[k]) == kinds[k]);
    test_args(devs[k]);
    test_divide(devs[k]);
    test_scale(devs[k]);
    test_fill(devs[k]);
    test_narrow_exhaustive(devs[k]);
    test_pool(kinds[k]);
    test_copy_sized(devs[k]);
    if (kinds[k] != ZD_CUDA) test_progress_hook(devs[k]);
    if (kinds[k] != ZD_CUDA) test_codec_table(devs[k]);
  }
  test_sweep(devs, ndevs);
  for (int k = 0; k < ndevs; k++) zd_dev_destroy(devs[k]);
  test_sim_async();
  test_sim_streams();
  test_stage_late();
  test_stream_mode();
  for (int k = 0; k < ndevs; k++) test_lanes(kinds[k]);
  TEST_DONE();
}
