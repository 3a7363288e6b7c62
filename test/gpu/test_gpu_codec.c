/* The CUDA stream codec (zd_cuda_codec.cu) against the CPU codec: GPU
 * compression writes zc_compress's bytes, GPU decompression of a CPU stream
 * gives zc_decompress's values bit for bit, GPU hops (out of place and in
 * place over either input) write zc_hop's bytes; tight output room, wrong
 * counts, incompatible or corrupted streams fail exactly where the CPU
 * fails, and nothing is written past the output's room. Float32 and
 * float64, counts around the block and chunk sizes and a few million,
 * chunk sizes 2^5, 2^12 and 2^16, misaligned pointers, smooth, noisy,
 * sparse, constant, non-finite (NaN payloads included), huge and fill data,
 * and levitus TEMP with its land points. Without a GPU (or a CUDA build) it
 * reports itself skipped. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_codec_gen.h"
#include "zc_szp.h"
#include "zccl_data.h"
#include "zd_device.h"

#ifndef ZCCL_TEST_CUDA
int main(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  printf("SKIP: zccl was built without CUDA (%s)\n", info.status);
  return test_failures ? 1 : TEST_SKIP_CODE;
}
#else
#include <cuda_runtime_api.h>

#include "zd_cuda_kernels.h"

#define CU(call)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));         \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

#define GUARD 256 /* bytes past every output that must stay untouched */
#define GUARD_BYTE 0xa5

static cudaStream_t gst;
static int* d_status;
static uint64_t* d_sizes; /* [0] out, [1] a, [2] b */


static long n_compress, n_decompress, n_hop, n_bad;

static void* dalloc(size_t n) {
  void* p = NULL;
  CU(cudaMalloc(&p, n + 16));
  return p;
}

/* A device buffer of room bytes (+ guard) at offset mis, holding src's n bytes. */
static uint8_t* dput(const void* src, size_t n, size_t room, size_t mis, uint8_t** base) {
  *base = dalloc(room + GUARD + mis);
  CU(cudaMemset(*base, GUARD_BYTE, room + GUARD + mis));
  if (n) CU(cudaMemcpy(*base + mis, src, n, cudaMemcpyHostToDevice));
  return *base + mis;
}

static int guard_ok(const uint8_t* d, size_t room) {
  uint8_t g[GUARD];
  CU(cudaMemcpy(g, d + room, GUARD, cudaMemcpyDeviceToHost));
  for (int k = 0; k < GUARD; k++)
    if (g[k] != GUARD_BYTE) return 0;
  return 1;
}

static void reset_words(void) {
  CU(cudaMemset(d_status, 0, sizeof(int)));
  CU(cudaMemset(d_sizes, 0xff, sizeof(uint64_t)));
}

static int read_status(uint64_t* size) {
  int st;
  CU(cudaStreamSynchronize(gst));
  CU(cudaMemcpy(&st, d_status, sizeof st, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(size, d_sizes, sizeof *size, cudaMemcpyDeviceToHost));
  CHECK(st == zcclSuccess || st == zcclInvalidUsage);
  return st;
}

/* GPU compression of x (input misaligned by mis bytes) into room cap: the
 * stream (malloc'd) or NULL when the kernel reported failure. */
static uint8_t* gpu_compress(const zc_params_t* p, const void* x, size_t n, size_t cap, size_t mis, size_t* size) {
  size_t esize = p->dtype == zcclFloat32 ? 4 : 8;
  uint8_t *bx, *bo;
  const uint8_t* dx = dput(x, n * esize, n * esize, mis, &bx);
  uint8_t* dout = dput(NULL, 0, cap, 0, &bo);
  size_t sb = zd_cuda_codec_scratch_bytes(n, p->dtype, p->chunk_log2);
  void* scratch = dalloc(sb);
  reset_words();
  CHECK_RES(zd_cuda_compress(p, dx, n, dout, cap, d_sizes, scratch, sb, d_status, (zd_cuda_stream_t)gst),
            zcclSuccess);
  uint64_t got;
  int st = read_status(&got);
  CHECK(guard_ok(dout, cap));
  uint8_t* s = NULL;
  if (st == zcclSuccess) {
    CHECK(got <= cap);
    s = malloc(got + 1);
    CU(cudaMemcpy(s, dout, got, cudaMemcpyDeviceToHost));
    *size = got;
  } else {
    CHECK(got == 0);
  }
  CU(cudaFree(bx));
  CU(cudaFree(bo));
  CU(cudaFree(scratch));
  n_compress++;
  return s;
}

/* GPU decompression of s (size bytes) into count values: 1 and the values
 * in y, or 0 when the kernel reported failure. */
static int gpu_decompress(const uint8_t* s, size_t size, size_t count, size_t esize, size_t mis, void* y) {
  uint8_t *bs, *bo;
  const uint8_t* ds = dput(s, size, size, 0, &bs);
  uint8_t* dout = dput(NULL, 0, count * esize, mis, &bo);
  uint64_t sz = size;
  reset_words();
  CU(cudaMemcpy(d_sizes + 1, &sz, 8, cudaMemcpyHostToDevice));
  CHECK_RES(zd_cuda_decompress(ds, d_sizes + 1, dout, count, d_status, (zd_cuda_stream_t)gst), zcclSuccess);
  uint64_t ignored;
  int st = read_status(&ignored);
  CHECK(guard_ok(dout, count * esize));
  if (st == zcclSuccess && count) CU(cudaMemcpy(y, dout, count * esize, cudaMemcpyDeviceToHost));
  CU(cudaFree(bs));
  CU(cudaFree(bo));
  n_decompress++;
  return st == zcclSuccess;
}

/* GPU hop; where: 0 out of place, 1 out = a, 2 out = b (in place, room cap
 * for the result). The result (malloc'd) or NULL on failure. */
static uint8_t* gpu_hop(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap,
                        int where, size_t* size) {
  uint8_t *ba, *bb, *bo = NULL;
  size_t ra = where == 1 && cap > an ? cap : an, rb = where == 2 && cap > bn ? cap : bn;
  uint8_t* da = dput(a, an, ra, 0, &ba);
  uint8_t* db = dput(b, bn, rb, 0, &bb);
  uint8_t* dout = where == 1 ? da : where == 2 ? db : dput(NULL, 0, cap, 0, &bo);
  uint64_t sz[2] = {an, bn};
  /* The scratch a caller sizes for a valid stream; for a corrupt one, room
   * for as many chunks as its index could name and copies of both inputs. */
  zc_header_t h;
  size_t sb = zc_header_read(a, an, &h) == zcclSuccess ? zd_cuda_codec_scratch_bytes(h.count, h.dtype, h.chunk_log2)
                                                       : 64 + 16 * an + 2 * (an + bn) + 256;
  void* scratch = dalloc(sb);
  reset_words();
  CU(cudaMemcpy(d_sizes + 1, sz, 16, cudaMemcpyHostToDevice));
  CHECK_RES(zd_cuda_hop(op, da, d_sizes + 1, db, d_sizes + 2, dout, cap, d_sizes, scratch, sb, d_status,
                        (zd_cuda_stream_t)gst),
            zcclSuccess);
  uint64_t got;
  int st = read_status(&got);
  CHECK(guard_ok(dout, where == 1 ? ra : where == 2 ? rb : cap));
  uint8_t* r = NULL;
  if (st == zcclSuccess) {
    CHECK(got <= cap);
    r = malloc(got + 1);
    CU(cudaMemcpy(r, dout, got, cudaMemcpyDeviceToHost));
    *size = got;
  } else {
    CHECK(got == 0);
  }
  CU(cudaFree(ba));
  CU(cudaFree(bb));
  if (bo) CU(cudaFree(bo));
  CU(cudaFree(scratch));
  n_hop++;
  return r;
}

/* ---- comparisons with the CPU codec ---------------------------------------------------- */

static uint8_t* cpu_compress(const zc_params_t* p, const void* x, size_t n, size_t* size) {
  size_t cap = zc_compress_bound(n, p->dtype, p->chunk_log2);
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(p, x, n, s, cap, size, NULL, NULL), zcclSuccess);
  return s;
}

/* GPU compression equals the CPU's; returns the CPU stream. */
static uint8_t* check_compress(const zc_params_t* p, const void* x, size_t n, size_t mis, size_t* size) {
  uint8_t* s = cpu_compress(p, x, n, size);
  size_t gn = 0;
  uint8_t* g = gpu_compress(p, x, n, zc_compress_bound(n, p->dtype, p->chunk_log2), mis, &gn);
  CHECK(g != NULL && gn == *size && memcmp(g, s, gn) == 0);
  if (g == NULL || gn != *size || memcmp(g, s, gn) != 0) {
    size_t k = 0;
    while (g && k < gn && k < *size && g[k] == s[k]) k++;
    fprintf(stderr, "compress dtype %d n %zu eb %g lg %u mis %zu: sizes gpu %zu cpu %zu, first difference %zu\n",
            p->dtype, n, p->eb, p->chunk_log2, mis, g ? gn : 0, *size, k);
  }
  free(g);
  return s;
}

/* GPU decompression of s equals the CPU's, or both fail. Returns whether the
 * CPU succeeded (both failing passes here): callers whose stream is valid
 * CHECK it. */
static int check_decompress(const uint8_t* s, size_t size, size_t count, size_t esize, size_t mis) {
  uint8_t *y = malloc(count * esize + 8), *z = malloc(count * esize + 8);
  size_t got = 0;
  int cpu = zc_decompress(s, size, y, count, &got, NULL, NULL) == zcclSuccess && got == count;
  int gpu = gpu_decompress(s, size, count, esize, mis, z);
  CHECK(cpu == gpu);
  if (cpu && gpu) {
    CHECK(memcmp(y, z, count * esize) == 0);
    if (memcmp(y, z, count * esize) != 0) {
      size_t k = 0;
      while (memcmp(y + k * esize, z + k * esize, esize) == 0) k++;
      fprintf(stderr, "decompress: value %zu of %zu differs\n", k, count);
    }
  }
  if (cpu != gpu) fprintf(stderr, "decompress of %zu bytes: cpu %d gpu %d\n", size, cpu, gpu);
  free(y);
  free(z);
  return cpu;
}

/* GPU hop equals the CPU's (out of place, and in place over a or b), or
 * all fail; returns whether the CPU succeeded, as check_decompress. */
static int check_hop(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap,
                      int wheres) {
  uint8_t* r = malloc(cap + 1);
  size_t rn = 0;
  int cpu = zc_hop(op, a, an, b, bn, r, cap, &rn) == zcclSuccess;
  for (int where = 0; where < 3; where++) {
    if (!((wheres >> where) & 1)) continue;
    size_t gn = 0;
    uint8_t* g = gpu_hop(op, a, an, b, bn, cap, where, &gn);
    CHECK((g != NULL) == cpu);
    if (g && cpu) CHECK(gn == rn && memcmp(g, r, rn) == 0);
    if ((g != NULL) != cpu || (g && (gn != rn || memcmp(g, r, rn) != 0)))
      fprintf(stderr, "hop op %d where %d: cpu %d (%zu bytes) gpu %d (%zu bytes)\n", (int)op, where, cpu, rn,
              g != NULL, gn);
    free(g);
  }
  free(r);
  return cpu;
}

/* ---- data ------------------------------------------------------------------------------- */


/* ---- tests ------------------------------------------------------------------------------- */

static void test_synthetic(void) {
  const unsigned lgs[] = {5, 12, 16};
  const double ebs[] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
  for (int f64 = 0; f64 < 2; f64++) {
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    for (size_t li = 0; li < 3; li++) {
      size_t chunk = (size_t)1 << lgs[li];
      size_t counts[] = {0, 1, 31, 32, 33, chunk - 1, chunk, chunk + 1, 5 * chunk + 77};
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        for (int kind = 0; kind < G_NUM; kind++) {
          size_t n = counts[ci];
          double eb = ebs[(ci + (size_t)kind + li) % 6], fill = kind == G_SPARSE ? 0.0 : -1e34;
          int has_fill = kind == G_FILL || (kind == G_SPARSE && (ci & 1));
          void *x = malloc(n * 8 + 8), *y = malloc(n * 8 + 8);
          gen(kind, f64, n, fill, x, 0);
          gen(kind == G_CONST ? G_SMOOTH : kind, f64, n, fill, y, 1000);
          zc_params_t p = {dt, eb, has_fill, fill, lgs[li], 0};
          size_t mis = (ci + (size_t)kind) % 2 ? 4 : 0;
          size_t an, bn;
          uint8_t* a = check_compress(&p, x, n, mis, &an);
          uint8_t* b = check_compress(&p, y, n, 0, &bn);
          CHECK(check_decompress(a, an, n, esize, mis));
          size_t cap = zc_compress_bound(n, dt, lgs[li]);
          int wheres = (ci + (size_t)kind) % 3 == 0 ? 7 : 1;
          CHECK(check_hop(zcclSum, a, an, b, bn, cap, wheres));
          CHECK(check_hop(zcclMax, a, an, b, bn, cap, (ci & 1) ? 4 : 1));
          CHECK(check_hop(zcclMin, b, bn, a, an, cap, (ci & 1) ? 1 : 2));
          if (n && kind == G_NONFINITE) { /* AVG's divisor */
            zc_set_divisor(a, an, 5);
            CHECK(check_decompress(a, an, n, esize, 0));
          }
          free(a);
          free(b);
          free(x);
          free(y);
        }
      }
    }
  }
}

/* A few million values, default and largest chunks (several rounds of
 * blocks per chunk), both alignments. */
static void test_large(void) {
  const size_t n = 3000017;
  for (int f64 = 0; f64 < 2; f64++) {
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    void *x = malloc(n * 8), *y = malloc(n * 8);
    gen(G_SMOOTH, f64, n, 0, x, 0);
    gen(G_NONFINITE, f64, n, 0, y, 0);
    for (int k = 0; k < 2; k++) {
      zc_params_t p = {dt, k ? 1e-4 : 1e-2, 0, 0, k ? 16 : 12, 0};
      size_t an, bn;
      uint8_t* a = check_compress(&p, x, n, k ? 4 : 0, &an);
      uint8_t* b = check_compress(&p, y, n, k ? 0 : 4, &bn);
      CHECK(check_decompress(a, an, n, esize, k ? 0 : 4));
      CHECK(check_decompress(b, bn, n, esize, 0));
      size_t cap = zc_compress_bound(n, dt, p.chunk_log2);
      CHECK(check_hop(zcclSum, a, an, b, bn, cap, k ? 3 : 5));
      CHECK(check_hop(zcclMax, a, an, b, bn, cap, 1));
      free(a);
      free(b);
    }
    free(x);
    free(y);
  }
}

/* levitus TEMP with its _FillValue land points, ABS bounds 1e-1 .. 1e-6. */
static void test_levitus(void) {
  for (int f64 = 0; f64 < 2; f64++) {
    zccl_data_t d;
    char err[600];
    if (zccl_data_load("levitus_climatology.cdf:TEMP", f64, &d, err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      CHECK(0);
      return;
    }
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4, n = d.count - 4096;
    for (double eb = 1e-1; eb > 5e-7; eb /= 10) {
      zc_params_t p = {dt, eb, 1, d.fill, 12, 0};
      size_t an, bn;
      uint8_t* a = check_compress(&p, d.values, n, 0, &an);
      uint8_t* b = check_compress(&p, (uint8_t*)d.values + 4096 * esize, n, 4, &bn);
      CHECK(check_decompress(a, an, n, esize, 0));
      size_t cap = zc_compress_bound(n, dt, 12);
      CHECK(check_hop(zcclSum, a, an, b, bn, cap, eb > 1e-3 ? 7 : 1));
      CHECK(check_hop(zcclMin, a, an, b, bn, cap, 1));
      free(a);
      free(b);
    }
    zccl_data_free(&d);
  }
}

/* Room around the stream's size: success exactly where the CPU succeeds,
 * nothing written past the room. */
static void test_room(void) {
  const size_t n = 10000;
  float* x = malloc(n * 4);
  gen(G_NONFINITE, 0, n, 0, x, 0);
  zc_params_t p = {zcclFloat32, 1e-3, 0, 0, 8, 0};
  size_t sn;
  uint8_t* s = cpu_compress(&p, x, n, &sn);
  size_t caps[] = {0, 39, 40, 40 + 4 * 40, sn / 2, sn - 1, sn, sn + 1, sn + 200, sn + 391, sn + 392, sn + 1000};
  uint8_t* t = malloc(sn + 2000);
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
    size_t cn = 0, gn = 0;
    int cpu = zc_compress(&p, x, n, t, caps[k], &cn, NULL, NULL) == zcclSuccess;
    uint8_t* g = gpu_compress(&p, x, n, caps[k], 0, &gn);
    CHECK(cpu == (g != NULL));
    if (cpu && g) CHECK(gn == cn && memcmp(g, t, cn) == 0);
    if (cpu != (g != NULL)) fprintf(stderr, "room %zu (stream %zu): cpu %d gpu %d\n", caps[k], sn, cpu, g != NULL);
    free(g);
  }
  /* A hop's room, too. */
  size_t bn;
  uint8_t* b = cpu_compress(&p, x, n, &bn);
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) check_hop(zcclSum, s, sn, b, bn, caps[k], 1);
  free(b);
  free(t);
  free(s);
  free(x);
}

/* Integer views the quantizer does not make: full-width deltas, bases from
 * later blocks, chunks without an ordinary value, and a chain of sums that
 * ends in the CPU's range error. */
static void test_integer_views(void) {
  const size_t n = 5 * 4096 + 300;
  int64_t* q = malloc(n * 8);
  uint8_t* kind = malloc(n);
  double* raw = malloc(n * 8);
  for (int variant = 0; variant < 4; variant++) {
    for (size_t i = 0; i < n; i++) {
      size_t j = i % 4096;
      q[i] = (int64_t)(rnd() % 1000);
      kind[i] = ZC_KIND_ORDINARY;
      raw[i] = 0;
      if (variant == 0) q[i] = (i & 1) ? ((int64_t)1 << 61) - 1 : -((int64_t)1 << 61);
      if (variant == 1 && j < 700) kind[i] = j % 3 ? ZC_KIND_FILL : ZC_KIND_EXCEPTION;
      if (variant == 2 && i / 4096 == 2) kind[i] = j % 2 ? ZC_KIND_FILL : ZC_KIND_EXCEPTION;
      if (variant == 3) q[i] = (i & 1) ? ((int64_t)1 << 60) : -((int64_t)1 << 60);
      if (kind[i] == ZC_KIND_EXCEPTION) raw[i] = urand();
    }
    zc_header_t h = {zcclFloat64, n, 1e-3, 1, 9.5, 12, 0, 1, 0, 0, 0, NULL, NULL};
    size_t cap = zc_compress_bound(n, zcclFloat64, 12) * 2, an, tn;
    uint8_t *a = malloc(cap), *t = malloc(cap);
    CHECK_RES(zc_encode_ints(&h, q, kind, raw, a, cap, &an), zcclSuccess);
    check_decompress(a, an, n, 8, 0);
    for (int k = 0; k < 4; k++) { /* sums of a with itself: widths grow, then the range error */
      check_hop(zcclSum, a, an, a, an, cap, k == 1 ? 7 : 1);
      check_hop(zcclMax, a, an, a, an, cap, 1);
      if (zc_hop(zcclSum, a, an, a, an, t, cap, &tn) != zcclSuccess) break;
      memcpy(a, t, tn);
      an = tn;
    }
    free(a);
    free(t);
  }
  free(q);
  free(kind);
  free(raw);
}

/* Corrupted and truncated streams, wrong counts, incompatible streams,
 * overlapping output: failures where the CPU fails, the CPU's values where
 * it does not, no crash, nothing written out of bounds. */
static void test_bad(void) {
  for (int f64 = 0; f64 < 2; f64++) {
    const size_t n = 3000;
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    void *x = malloc(n * 8), *y = malloc(n * 8);
    gen(G_NONFINITE, f64, n, 0, x, 0);
    gen(G_FILL, f64, n, 0.5, y, 5);
    zc_params_t p = {dt, 1e-3, 1, 0.5, 7, 0};
    size_t an, bn;
    uint8_t* a = cpu_compress(&p, x, n, &an);
    uint8_t* b = cpu_compress(&p, y, n, &bn);
    size_t cap = zc_compress_bound(n, dt, 7);
    uint8_t* t = malloc(an);
    for (int k = 0; k < 300; k++) {
      memcpy(t, a, an);
      size_t tn = an;
      switch (rnd() % 4) {
        case 0: tn = rnd() % an; break;
        case 1: t[rnd() % an] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 2: t[ZC_HEADER_BYTES + rnd() % (an - ZC_HEADER_BYTES)] = (uint8_t)rnd(); break;
        default:
          for (int f = 0; f < 4; f++) t[rnd() % an] ^= (uint8_t)rnd();
      }
      check_decompress(t, tn, n, esize, 0);
      if (k % 2 == 0) check_hop(zcclSum, t, tn, b, bn, cap, k % 6 == 0 ? 3 : 1);
      n_bad++;
    }
    /* The wrong count. */
    void* z = malloc(n * 8);
    CHECK(!gpu_decompress(a, an, n - 1, esize, 0, z));
    CHECK(!gpu_decompress(a, an, n + 1, esize, 0, z));
    /* Streams of another bound, count or dtype. */
    zc_params_t p2 = p;
    p2.eb = 2e-3;
    size_t cn;
    uint8_t* c = cpu_compress(&p2, x, n, &cn);
    check_hop(zcclSum, a, an, c, cn, cap, 1);
    free(c);
    c = cpu_compress(&p, x, n - 1, &cn);
    check_hop(zcclSum, a, an, c, cn, cap, 1);
    free(c);
    free(z);
    free(t);
    free(a);
    free(b);
    free(x);
    free(y);
  }
  /* An output overlapping an input without being it. */
  const size_t n = 1000;
  float* x = malloc(n * 4);
  gen(G_SMOOTH, 0, n, 0, x, 0);
  zc_params_t p = {zcclFloat32, 1e-3, 0, 0, 6, 0};
  size_t an;
  uint8_t* a = cpu_compress(&p, x, n, &an);
  size_t cap = zc_compress_bound(n, zcclFloat32, 6), sb = zd_cuda_codec_scratch_bytes(n, zcclFloat32, 6);
  uint8_t* d = dalloc(2 * cap + 64);
  CU(cudaMemcpy(d, a, an, cudaMemcpyHostToDevice));
  uint64_t sz[2] = {an, an};
  void* scratch = dalloc(sb);
  reset_words();
  CU(cudaMemcpy(d_sizes + 1, sz, 16, cudaMemcpyHostToDevice));
  CHECK_RES(zd_cuda_hop(zcclSum, d, d_sizes + 1, d, d_sizes + 2, d + 8, cap, d_sizes, scratch, sb, d_status,
                        (zd_cuda_stream_t)gst),
            zcclSuccess);
  uint64_t got;
  CHECK(read_status(&got) == zcclInvalidUsage && got == 0);
  /* Launch-time argument errors. */
  CHECK_RES(zd_cuda_hop(zcclProd, d, d_sizes + 1, d, d_sizes + 2, d + cap, cap, d_sizes, scratch, sb, d_status,
                        (zd_cuda_stream_t)gst),
            zcclInvalidArgument);
  zc_params_t bad = p;
  bad.eb = 0;
  CHECK_RES(zd_cuda_compress(&bad, d, 10, d + cap, cap, d_sizes, scratch, sb, d_status, (zd_cuda_stream_t)gst),
            zcclInvalidArgument);
  CU(cudaFree(d));
  CU(cudaFree(scratch));
  free(a);
  free(x);
}

int main(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  if (!info.built || info.ndevices == 0) {
    printf("SKIP: %s\n", info.status);
    return TEST_SKIP_CODE;
  }
  printf("cuda: %s (built for %s)\n", info.status, info.archs);
  CU(cudaStreamCreate(&gst));
  CU(cudaMalloc((void**)&d_status, sizeof(int)));
  CU(cudaMalloc((void**)&d_sizes, 4 * sizeof(uint64_t)));
  test_room();
  test_bad();
  test_integer_views();
  test_synthetic();
  test_large();
  test_levitus();
  printf("%ld compressions, %ld decompressions, %ld hops on the GPU (%ld corrupted streams)\n", n_compress,
         n_decompress, n_hop, n_bad);
  CU(cudaFree(d_status));
  CU(cudaFree(d_sizes));
  CU(cudaStreamDestroy(gst));
  TEST_DONE();
}
#endif
