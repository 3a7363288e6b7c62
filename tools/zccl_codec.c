/*
 * zccl-codec: zccl's error-bounded codec on files.
 *
 *   zccl-codec compress IN OUT --dtype f32|f64 --mode abs|rel --eb X [--fill V] [--no-checksum]
 *   zccl-codec decompress IN OUT
 *   zccl-codec hsum A B OUT            (homomorphic sum of two streams)
 *   zccl-codec stats IN --dtype ... --mode ... --eb ... [--fill V|--fill-zero]
 *                       [--tile BYTES] [--reps N] [--threads N] [--simd LEVEL] [--json]
 *
 * --threads (default ZCCL_CODEC_THREADS, 0: all cores) and --simd (default
 * ZCCL_CODEC_SIMD) apply to every command; the bytes do not depend on them.
 * compress and stats write a checksum per chunk (docs/format.md) unless
 * --no-checksum; decompress and hsum verify the ones a stream has.
 *
 * IN is a raw little-endian file.f32 / file.f64 or a NetCDF variable
 * file.nc:VAR (its _FillValue is kept exactly unless --fill-zero). REL bounds
 * are relative to the range of the values that are finite and not fill.
 * Exit code 0 on success, 1 with a message on any error, 2 on bad usage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zc_simd.h"
#include "zc_szp.h"
#include "zc_zfp.h"
#include "zd_host_codec.h"
#include "zd_pool.h"
#include "zu_param.h"
#include "zu_time.h"
#include "zccl_data.h"

typedef struct {
  const char* cmd;
  const char* in;
  const char* in2;
  const char* out;
  int dtype_set, is_double;
  int rel;
  double eb;
  int fill_set, fill_zero;
  double fill;
  double tile_bytes;
  int reps, threads, json, no_checksum;
  const char* simd;
  const char* codec; /* stats: szp (default), zfp-acc, zfp-rate */
  double rate;
} args_t;

static void usage(FILE* f) {
  fprintf(f,
          "usage: zccl-codec compress IN OUT --dtype f32|f64 --mode abs|rel --eb X [--fill V] [--no-checksum]\n"
          "       zccl-codec decompress IN OUT\n"
          "       zccl-codec hsum A B OUT\n"
          "       zccl-codec stats IN --dtype f32|f64 --mode abs|rel --eb X [--fill V | --fill-zero]\n"
          "                        [--tile BYTES] [--reps N] [--threads N (0: all cores)]\n"
          "                        [--simd scalar|avx2|avx2-gfni|avx512] [--json]\n"
          "                        [--codec szp|zfp-acc|zfp-rate [--rate BITS]]  (ZFP: the baseline)\n"
          "                        [--no-checksum]\n"
          "IN: file.f32, file.f64 or file.nc:VARIABLE (NetCDF; _FillValue kept exactly)\n");
}

static int die(const char* fmt, const char* a, const char* b) {
  fprintf(stderr, "zccl-codec: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  return 1;
}

static int parse(int argc, char** argv, args_t* a) {
  memset(a, 0, sizeof *a);
  a->reps = 5;
  a->threads = -1; /* ZCCL_CODEC_THREADS unless --threads */
  a->eb = -1;
  if (argc < 2) return -1;
  a->cmd = argv[1];
  int pos = 0;
  for (int i = 2; i < argc; i++) {
    const char* s = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--json") == 0) a->json = 1;
    else if (strcmp(s, "--fill-zero") == 0) a->fill_zero = 1;
    else if (strcmp(s, "--no-checksum") == 0) a->no_checksum = 1;
    else if (s[0] == '-' && s[1] == '-') {
      if (v == NULL) return fprintf(stderr, "zccl-codec: %s needs a value\n", s), -1;
      i++;
      char* end = NULL;
      if (strcmp(s, "--dtype") == 0) {
        a->dtype_set = 1;
        if (strcmp(v, "f32") == 0) a->is_double = 0;
        else if (strcmp(v, "f64") == 0) a->is_double = 1;
        else return fprintf(stderr, "zccl-codec: --dtype f32|f64\n"), -1;
      } else if (strcmp(s, "--mode") == 0) {
        if (strcmp(v, "abs") == 0) a->rel = 0;
        else if (strcmp(v, "rel") == 0) a->rel = 1;
        else return fprintf(stderr, "zccl-codec: --mode abs|rel\n"), -1;
      } else if (strcmp(s, "--eb") == 0) {
        a->eb = strtod(v, &end);
        if (*end || !(a->eb > 0) || !isfinite(a->eb)) return fprintf(stderr, "zccl-codec: --eb must be > 0\n"), -1;
      } else if (strcmp(s, "--fill") == 0) {
        a->fill = strtod(v, &end);
        a->fill_set = 1;
        if (*end || !isfinite(a->fill)) return fprintf(stderr, "zccl-codec: --fill must be a finite number\n"), -1;
      } else if (strcmp(s, "--tile") == 0) {
        a->tile_bytes = strtod(v, &end);
        if (*end == 'M') a->tile_bytes *= 1 << 20;
        else if (*end == 'G') a->tile_bytes *= 1 << 30;
        else if (*end == 'K') a->tile_bytes *= 1 << 10;
      } else if (strcmp(s, "--reps") == 0) a->reps = atoi(v);
      else if (strcmp(s, "--threads") == 0) a->threads = atoi(v);
      else if (strcmp(s, "--simd") == 0) a->simd = v;
      else if (strcmp(s, "--codec") == 0) a->codec = v;
      else if (strcmp(s, "--rate") == 0) a->rate = atof(v);
      else return fprintf(stderr, "zccl-codec: unknown option %s\n", s), -1;
    } else {
      const char** slot = pos == 0 ? &a->in : pos == 1 ? &a->in2 : pos == 2 ? &a->out : NULL;
      if (slot == NULL) return fprintf(stderr, "zccl-codec: unexpected argument %s\n", s), -1;
      *slot = s;
      pos++;
    }
  }
  if (a->threads < 0) {
    int64_t t;
    if (zu_param_int(ZU_PARAM_CODEC_THREADS, &t) != zcclSuccess) return fprintf(stderr, "zccl-codec: %s\n", zcclGetLastError(NULL)), -1;
    a->threads = (int)t;
  }
  if (a->simd == NULL && strcmp(zu_param_str(ZU_PARAM_CODEC_SIMD), "auto") != 0) a->simd = zu_param_str(ZU_PARAM_CODEC_SIMD);
  if (strcmp(a->cmd, "compress") == 0 || strcmp(a->cmd, "decompress") == 0) {
    a->out = a->in2;
    a->in2 = NULL;
  }
  if (a->reps < 1) a->reps = 1;
  return 0;
}

static int read_file(const char* path, uint8_t** buf, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *buf = malloc(n > 0 ? (size_t)n : 1);
  if (*buf == NULL) return fclose(f), -1;
  *size = n > 0 ? (size_t)fread(*buf, 1, (size_t)n, f) : 0;
  fclose(f);
  return 0;
}

static int write_file(const char* path, const void* buf, size_t size) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t w = fwrite(buf, 1, size, f);
  return fclose(f) == 0 && w == size ? 0 : -1;
}

/* Loads IN and works out the absolute bound and fill to use. */
static int load_input(const args_t* a, zccl_data_t* d, zc_params_t* p) {
  char err[700];
  if (!a->dtype_set) return die("%s%s: --dtype f32|f64 is required", a->cmd, "");
  if (a->eb < 0) return die("%s%s: --eb is required", a->cmd, "");
  if (zccl_data_load(a->in, a->is_double, d, err, sizeof err) != 0) return die("%s%s", err, "");
  if (a->fill_set) {
    d->has_fill = 1;
    d->fill = a->is_double ? a->fill : (double)(float)a->fill;
  }
  if (a->fill_zero) {
    zccl_data_replace_fill(d, 0.0);
    d->has_fill = 0;
  }
  memset(p, 0, sizeof *p);
  p->dtype = a->is_double ? zcclFloat64 : zcclFloat32;
  p->has_fill = d->has_fill;
  p->fill = d->fill;
  p->eb = a->eb;
  p->checksum = !a->no_checksum;
  if (a->rel) {
    double lo = 0, hi = 0;
    size_t valid = 0;
    zc_value_range(d->values, d->count, p->dtype, d->has_fill, d->fill, &lo, &hi, &valid);
    p->eb = a->eb * (valid && hi > lo ? hi - lo : 1.0);
  }
  return 0;
}

static int cmd_compress(const args_t* a) {
  zccl_data_t d;
  zc_params_t p;
  if (!a->in || !a->out) return die("compress: IN and OUT are required%s%s", "", "");
  if (load_input(a, &d, &p)) return 1;
  size_t cap = zc_compress_bound(d.count, p.dtype, 0), size;
  uint8_t* s = malloc(cap);
  if (s == NULL) return die("compress: out of memory%s%s", "", "");
  zd_pool_t* pool = NULL;
  if (zd_pool_create(a->threads, &pool) != zcclSuccess ||
      zd_host_compress(pool, 0, &p, d.values, d.count, s, cap, &size) != zcclSuccess)
    return die("compress: %s%s", zcclGetLastError(NULL), "");
  zd_pool_destroy(pool);
  if (write_file(a->out, s, size) != 0) return die("cannot write %s%s", a->out, "");
  fprintf(stderr, "%s: %zu values -> %zu bytes, ratio %.3f, eb_abs %.6g\n", d.source, d.count, size,
          (double)d.count * (a->is_double ? 8 : 4) / (double)size, p.eb);
  free(s);
  zccl_data_free(&d);
  return 0;
}

static int cmd_decompress(const args_t* a) {
  uint8_t* s;
  size_t size;
  if (!a->in || !a->out) return die("decompress: IN and OUT are required%s%s", "", "");
  if (read_file(a->in, &s, &size) != 0) return die("cannot read %s%s", a->in, "");
  zc_header_t h;
  if (zc_header_read(s, size, &h) != zcclSuccess) return die("%s: %s", a->in, zcclGetLastError(NULL));
  size_t esize = h.dtype == zcclFloat32 ? 4 : 8, n;
  /* zc_header_read bounds count by the chunks (at most 2^16 values each,
   * each at least 8 bytes of the file), so this cannot wrap. */
  void* y = malloc((size_t)h.count * esize + 1);
  if (y == NULL) return die("out of memory%s%s", "", "");
  zd_pool_t* pool = NULL;
  if (zd_pool_create(a->threads, &pool) != zcclSuccess ||
      zd_host_decompress(pool, 0, s, size, y, (size_t)h.count, &n) != zcclSuccess)
    return die("%s: %s", a->in, zcclGetLastError(NULL));
  zd_pool_destroy(pool);
  if (write_file(a->out, y, n * esize) != 0) return die("cannot write %s%s", a->out, "");
  free(s);
  free(y);
  return 0;
}

static int cmd_hsum(const args_t* a) {
  uint8_t *x, *y;
  size_t xn, yn;
  if (!a->in || !a->in2 || !a->out) return die("hsum: A B OUT are required%s%s", "", "");
  if (read_file(a->in, &x, &xn) != 0) return die("cannot read %s%s", a->in, "");
  if (read_file(a->in2, &y, &yn) != 0) return die("cannot read %s%s", a->in2, "");
  zc_header_t h, hb;
  if (zc_header_read(x, xn, &h) != zcclSuccess) return die("%s: %s", a->in, zcclGetLastError(NULL));
  if (zc_header_read(y, yn, &hb) != zcclSuccess) return die("%s: %s", a->in2, zcclGetLastError(NULL));
  size_t cap = zc_compress_bound((size_t)h.count, h.dtype, h.chunk_log2), n;
  uint8_t* o = malloc(cap);
  if (o == NULL) return die("hsum: out of memory%s%s", "", "");
  zd_pool_t* pool = NULL;
  if (zd_pool_create(a->threads, &pool) != zcclSuccess || zd_host_hop(pool, 0, NULL, zcclSum, x, xn, y, yn, o, cap, &n) != zcclSuccess)
    return die("hsum: %s%s", zcclGetLastError(NULL), "");
  zd_pool_destroy(pool);
  if (write_file(a->out, o, n) != 0) return die("cannot write %s%s", a->out, "");
  free(x);
  free(y);
  free(o);
  return 0;
}

/* The codec stats measures: szp (threaded through the pool) or the ZFP
 * baseline (single-threaded; no homomorphic op). */
typedef struct {
  int zfp_mode; /* 0: szp */
  double zfp_param;
  zd_pool_t* pool;
  const zc_params_t* p;
} stats_codec_t;

/* nthreads: 0 for the whole pool. */
static zcclResult_t stats_compress(const stats_codec_t* c, int nthreads, const void* x, size_t n, uint8_t* s,
                                   size_t cap, size_t* size) {
  if (c->zfp_mode) return zc_zfp_compress(c->p->dtype, c->zfp_mode, c->zfp_param, x, n, s, cap, size);
  return zd_host_compress(c->pool, nthreads, c->p, x, n, s, cap, size);
}

static zcclResult_t stats_decompress(const stats_codec_t* c, int nthreads, const uint8_t* s, size_t size, void* y,
                                     size_t n, size_t* got) {
  if (c->zfp_mode) return zc_zfp_decompress(s, size, y, n, got);
  return zd_host_decompress(c->pool, nthreads, s, size, y, n, got);
}

static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return t[n / 2];
}

/* A JSON number in b (32 bytes), or null when there is none. */
static void json_num(char* b, int have, const char* fmt, double v) {
  if (have) snprintf(b, 32, fmt, v);
  else strcpy(b, "null");
}

/* FNV-1a of a buffer: compares two results without keeping both. */
static uint64_t stats_hash(const uint8_t* b, size_t n) {
  uint64_t v = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) v = (v ^ b[i]) * 0x100000001b3ull;
  return v;
}

static int cmd_stats(const args_t* a) {
  zccl_data_t d;
  zc_params_t p;
  if (!a->in) return die("stats: IN is required%s%s", "", "");
  zd_pool_t* pool = NULL;
  if (zd_pool_create(a->threads, &pool) != zcclSuccess) return die("stats: %s%s", zcclGetLastError(NULL), "");
  int threads = zd_pool_size(pool);
  if (load_input(a, &d, &p)) return 1;
  size_t esize = a->is_double ? 8 : 4;
  /* Tile to the requested size (default: the field once) so memcpy is not
   * served from cache; a second copy at an offset gives the hsum partner. */
  size_t n = d.count;
  if (a->tile_bytes > 0 && (size_t)(a->tile_bytes / (double)esize) > n) n = (size_t)(a->tile_bytes / (double)esize);
  void* x = malloc(n * esize);
  void* x2 = malloc(n * esize);
  void* y = malloc(n * esize);
  void* y2 = malloc(n * esize);
  zccl_data_tile(&d, 0, x, n);
  zccl_data_tile(&d, d.count / 3, x2, n);
  stats_codec_t sc = {0, 0, pool, &p};
  const char* codec = a->codec ? a->codec : "szp";
  if (strcmp(codec, "zfp-acc") == 0) sc = (stats_codec_t){ZC_ZFP_ACCURACY, p.eb, pool, &p};
  else if (strcmp(codec, "zfp-rate") == 0) sc = (stats_codec_t){ZC_ZFP_RATE, a->rate, pool, &p};
  else if (strcmp(codec, "szp") != 0) return die("stats: --codec %s: use szp, zfp-acc or zfp-rate%s", codec, "");
  if (sc.zfp_mode == ZC_ZFP_RATE && !(a->rate >= 1 && a->rate <= 64)) return die("stats: --rate BITS (1..64)%s%s", "", "");
  size_t cap = sc.zfp_mode ? zc_zfp_bound(n, p.dtype, sc.zfp_mode, sc.zfp_param) : zc_compress_bound(n, p.dtype, 0);
  size_t size = 0, size2 = 0, hs = 0, got = 0;
  if (sc.zfp_mode) threads = 1;
  uint8_t *s = malloc(cap), *s2 = malloc(cap), *h = malloc(cap);
  if (!x || !x2 || !y || !y2 || !s || !s2 || !h) return die("stats: out of memory%s%s", "", "");
  /* Every round times each phase once, in turn, so that every phase (and
   * memcpy, the reference) samples the same moments of a shared, noisy
   * machine; figures are medians over rounds. With more than one thread, the
   * same round also times compression, decompression and hsum on one thread:
   * the speedups are medians of the rounds' ratios. */
  enum { MEMCPY, COMP, DECOMP, HSUM, FUSED, DOC, COMP1, DECOMP1, HSUM1, NPHASE };
  int reps = a->reps, one = threads > 1 && !sc.zfp_mode;
  double* t = malloc(sizeof(double) * (size_t)reps * NPHASE);
  double* sp = malloc(sizeof(double) * (size_t)reps * 3);
  double med[NPHASE] = {0}, speedup[3] = {0, 0, 0};
  uint64_t hsum_hash = 0;
  size_t hsum_size = 0;
  if (!t || !sp) return die("stats: out of memory%s%s", "", "");
  int on[NPHASE];
  for (int ph = 0; ph < NPHASE; ph++) on[ph] = !((ph == HSUM || ph == FUSED) && sc.zfp_mode) && (ph < COMP1 || one);
  memcpy(y, x, n * esize); /* fault the pages in */
  if (stats_compress(&sc, 0, x, n, s, cap, &size) != zcclSuccess || stats_compress(&sc, 0, x2, n, s2, cap, &size2) != zcclSuccess)
    return die("stats: %s%s", zcclGetLastError(NULL), "");
  if (!sc.zfp_mode) {
    if (zd_host_hop(pool, 0, NULL, zcclSum, s, size, s2, size2, h, cap, &hs) != zcclSuccess)
      return die("stats: %s%s", zcclGetLastError(NULL), "");
    hsum_hash = stats_hash(h, hs);
    hsum_size = hs;
  }
  for (int r = 0; r < reps; r++) {
    for (int ph = 0; ph < NPHASE; ph++) {
      if (!on[ph]) continue;
      int nt = ph >= COMP1 ? 1 : 0;
      zcclResult_t rc = zcclSuccess;
      double t0 = zu_now();
      switch (ph) {
        case MEMCPY: memcpy(y, x, n * esize); break;
        case COMP: case COMP1: rc = stats_compress(&sc, nt, x, n, s, cap, &size); break;
        case DECOMP: case DECOMP1: rc = stats_decompress(&sc, nt, s, size, y, n, &got); break;
        case HSUM: case HSUM1: rc = zd_host_hop(pool, nt, NULL, zcclSum, s, size, s2, size2, h, cap, &hs); break;
        case FUSED: /* the homomorphic ring's step: compress x and add it to s2 */
          rc = zd_host_hop_values(pool, 0, NULL, zcclSum, &p, x, n, s2, size2, h, cap, &hs);
          break;
        case DOC: /* decompress-operate-compress of the same pair, the baseline hsum beats */
          rc = stats_decompress(&sc, 0, s, size, y, n, &got);
          if (rc == zcclSuccess) rc = stats_decompress(&sc, 0, s2, size2, y2, n, &got);
          /* Fill in either input stays fill, as in the homomorphic sum. */
          if (a->is_double) {
            double* u = y;
            const double* w = y2;
            for (size_t i = 0; i < n; i++) u[i] = (d.has_fill && (u[i] == d.fill || w[i] == d.fill)) ? d.fill : u[i] + w[i];
          } else {
            float* u = y;
            const float* w = y2;
            float f = (float)d.fill;
            for (size_t i = 0; i < n; i++) u[i] = (d.has_fill && (u[i] == f || w[i] == f)) ? f : u[i] + w[i];
          }
          if (rc == zcclSuccess) rc = stats_compress(&sc, 0, y, n, h, cap, &hs);
          break;
      }
      t[(size_t)ph * reps + r] = zu_now() - t0;
      if (rc != zcclSuccess) return die("stats: %s%s", zcclGetLastError(NULL), "");
      /* The kernels under measure are the ones under test: the fused step
       * and the one-thread hsum write the hsum's bytes. */
      if (r == 0 && (ph == FUSED || ph == HSUM1) && (hs != hsum_size || stats_hash(h, hs) != hsum_hash))
        return die("stats: %s wrote other bytes than the hsum (a codec bug)%s",
                   ph == FUSED ? "the fused compress+hsum" : "the one-thread hsum", "");
    }
    for (int k = 0; one && k < 3; k++) sp[(size_t)k * reps + r] = t[(size_t)(COMP1 + k) * reps + r] / t[(size_t)(COMP + k) * reps + r];
  }
  for (int ph = 0; ph < NPHASE; ph++)
    if (on[ph]) med[ph] = median(t + (size_t)ph * reps, reps);
  for (int k = 0; one && k < 3; k++) speedup[k] = median(sp + (size_t)k * reps, reps);
  double tm = med[MEMCPY], tc = med[COMP], td = med[DECOMP], th = med[HSUM], tf = med[FUSED], tdoc = med[DOC];
  /* Errors on the field itself (every element of the first tile). */
  stats_decompress(&sc, 0, s, size, y, n, &got);
  int bounded = sc.zfp_mode != ZC_ZFP_RATE; /* fixed rate promises no error bound */
  size_t m = d.count < n ? d.count : n, valid = 0, outside = 0;
  double max_err = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < m; i++) {
    double u = a->is_double ? ((double*)x)[i] : ((float*)x)[i];
    double v = a->is_double ? ((double*)y)[i] : ((float*)y)[i];
    if (!isfinite(u) || (d.has_fill && u == d.fill)) {
      if (!(u == v || (isnan(u) && isnan(v)))) outside++;
      continue;
    }
    double e = fabs(u - v);
    if (bounded && !(e <= p.eb)) outside++;
    max_err = e > max_err ? e : max_err;
    sq += e * e;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
    valid++;
  }
  double rmse = valid ? sqrt(sq / (double)valid) : 0;
  double psnr = rmse > 0 ? 20 * log10((hi - lo) / rmse) : INFINITY;
  double gb = (double)(n * esize) / 1e9, ratio = (double)(n * esize) / (double)size;
  double bits = 8.0 * (double)size / (double)n;
  /* A uniform quantizer of step 2*eb has rmse 2*eb/sqrt(12). */
  double psnr_uniform = 20 * log10((hi - lo) / (2 * p.eb / sqrt(12.0)));
  if (a->json) {
    char hsum[32], over[32], fused[32], sc_c[32], sc_d[32], sc_h[32];
    json_num(hsum, th > 0, "%.4f", gb / th);
    json_num(fused, tf > 0, "%.4f", gb / tf);
    json_num(over, bounded, "%.6f", max_err / p.eb);
    json_num(sc_c, one, "%.4f", speedup[0]);
    json_num(sc_d, one, "%.4f", speedup[1]);
    json_num(sc_h, one, "%.4f", speedup[2]);
    printf("{\"codec\": \"%s\", \"rate\": %g, \"source\": \"%s\", \"dtype\": \"%s\", \"mode\": \"%s\", \"eb\": %.6g, \"eb_abs\": %.6g, "
           "\"fill\": %s, \"count\": %zu, \"bytes\": %zu, \"ratio\": %.4f, \"bits_per_value\": %.4f, "
           "\"max_abs_err\": %.6g, \"max_err_over_eb\": %s, \"outside_bound\": %zu, \"rmse\": %.6g, "
           "\"psnr\": %.4f, \"psnr_uniform\": %.4f, \"memcpy_gbps\": %.4f, \"comp_gbps\": %.4f, "
           "\"decomp_gbps\": %.4f, \"hsum_gbps\": %s, \"compress_hsum_gbps\": %s, \"doc_gbps\": %.4f, "
           "\"threads\": %d, \"comp_speedup\": %s, \"decomp_speedup\": %s, \"hsum_speedup\": %s, "
           "\"simd\": \"%s\"}\n",
           codec, sc.zfp_mode == ZC_ZFP_RATE ? a->rate : 0.0, d.source, a->is_double ? "f64" : "f32",
           a->rel ? "rel" : "abs", a->eb, p.eb, d.has_fill ? "true" : "false", n, size, ratio, bits, max_err, over,
           outside, rmse, psnr, psnr_uniform, gb / tm, gb / tc, gb / td, hsum, fused, gb / tdoc, threads,
           sc_c, sc_d, sc_h, zc_simd_name(zc_simd_get()));
  } else {
    printf("[%s] %s (%s, %s %g -> eb_abs %.6g, %s), %zu values (%.1f MiB), kernels %s, %d thread(s)\n", codec,
           d.source,
           a->is_double ? "f64" : "f32", a->rel ? "REL" : "ABS", a->eb, p.eb,
           d.has_fill ? "fill kept exactly" : "no fill", n, (double)(n * esize) / 1048576.0,
           zc_simd_name(zc_simd_get()), threads);
    printf("  ratio %.3f (%.3f bits/value), max err %.4g = %.4f eb, %zu outside the bound, PSNR %.2f dB "
           "(uniform quantizer %.2f)\n", ratio, bits, max_err, max_err / p.eb, outside, psnr, psnr_uniform);
    printf("  memcpy %.2f GB/s | compress %.2f GB/s (%.2fx) | decompress %.2f GB/s (%.2fx) | ", gb / tm, gb / tc,
           tm / tc, gb / td, tm / td);
    if (th > 0) {
      printf("hsum %.2f GB/s (%.2fx, %.2fx DOC %.2f GB/s)\n", gb / th, tm / th, tdoc / th, gb / tdoc);
      printf("  compress+hsum fused %.2f GB/s (%.2fx compress then hsum)\n", gb / tf, (tc + th) / tf);
    } else {
      printf("no hsum (DOC %.2f GB/s)\n", gb / tdoc);
    }
    if (one)
      printf("  %d threads over 1 (same rounds): compress %.2fx, decompress %.2fx, hsum %.2fx\n", threads, speedup[0],
             speedup[1], speedup[2]);
  }
  free(x); free(x2); free(y); free(y2); free(s); free(s2); free(h); free(t); free(sp);
  zd_pool_destroy(pool);
  zccl_data_free(&d);
  return outside ? 1 : 0;
}

int main(int argc, char** argv) {
  args_t a;
  if (parse(argc, argv, &a) != 0) {
    usage(stderr);
    return 2;
  }
  if (a.simd) { /* --simd or ZCCL_CODEC_SIMD */
    int level = -1;
    for (int l = 0; l < ZC_SIMD_NUM; l++)
      if (strcmp(a.simd, zc_simd_name(l)) == 0) level = l;
    if (level < 0 || zc_simd_set(level) != 0) return die("kernels '%s' are not available on this CPU%s", a.simd, "");
  }
  if (strcmp(a.cmd, "compress") == 0) return cmd_compress(&a);
  if (strcmp(a.cmd, "decompress") == 0) return cmd_decompress(&a);
  if (strcmp(a.cmd, "hsum") == 0) return cmd_hsum(&a);
  if (strcmp(a.cmd, "stats") == 0) return cmd_stats(&a);
  if (strcmp(a.cmd, "--help") == 0 || strcmp(a.cmd, "-h") == 0) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "zccl-codec: unknown command '%s'\n", a.cmd);
  usage(stderr);
  return 2;
}
