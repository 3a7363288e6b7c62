/* The CUDA stream codec's kernels (src/device/cuda/zd_cuda_codec.cu, the
 * file itself) run on the host under cuda_emu/cuda_runtime.h: CTAs as
 * concurrent OS threads (so the decoupled look-back and the ticket order
 * really interleave; launches in turn, as a stream runs them), a CTA's 128
 * threads as
 * coroutines meeting at __syncthreads and the warp shuffles. Their streams,
 * values and hop results must be the CPU codec's bit for bit and their
 * failures the CPU's: chunk sizes 2^5 .. 2^16 (several rounds of blocks per
 * chunk), counts around block and chunk edges, misaligned values, chunks
 * too large for the shared-memory copies, in-place hops over either input,
 * tight room, corrupted streams, wrong counts, overlapping outputs. What
 * this cannot check (the GPU's memory model, real warps, occupancy, the
 * compiled code) is test/gpu/test_gpu_codec.c's, on a GPU.
 * The persistent kernel (ZCCL_PERSISTENT_KERNEL) runs here too, on threads
 * of its own while the test submits: a ring's compress/hop/decompress
 * chain submitted at once, gates, idle exits and relaunches, a queue that
 * wraps, a failing item among good ones. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The launchers under other names, in case the library has the real ones. */
#define zd_cuda_codec_scratch_bytes zemu_codec_scratch_bytes
#define zd_cuda_compress zemu_compress
#define zd_cuda_decompress zemu_decompress
#define zd_cuda_hop zemu_hop
#define zd_cuda_persist_create zemu_persist_create
#define zd_cuda_persist_destroy zemu_persist_destroy
#define zd_cuda_persist_compress zemu_persist_compress
#define zd_cuda_persist_decompress zemu_persist_decompress
#define zd_cuda_persist_hop zemu_persist_hop
#define zd_cuda_persist_wait zemu_persist_wait
#define zd_cuda_persist_done_word zemu_persist_done_word
#define zd_cuda_persist_launches zemu_persist_launches
#define zd_cuda_persist_ctas zemu_persist_ctas
#include <atomic>
#define ZD_PATH_MAX 16 /* more than the kernels' ways (ZD_PATH_NUM) */
static std::atomic<long> zemu_path[ZD_PATH_MAX]; /* the kernels' ways, counted (ZD_PATH) */
#define ZD_PATH(k) ((void)zemu_path[k]++)
#include "zd_cuda_codec.cu"
#include "zd_cuda_queue.cu" /* the persistent kernel's host queue: this test is one unit */
static_assert(ZD_PATH_NUM <= ZD_PATH_MAX, "zemu_path: room for every way");

#include "test_util.h"
#include "test_codec_gen.h"
extern "C" {
#include "zccl_data.h"
}


static long n_compress, n_decompress, n_hop;
#define GUARD 64

/* The "device" words. */
static int st_word;
static uint64_t size_words[3];

/* aligned_alloc wants the size a multiple of the alignment (C11 7.22.3.1;
 * ASan enforces it). */
static void* alloc_aligned(size_t align, size_t size) { return aligned_alloc(align, (size + align - 1) / align * align); }

/* Kernel compression of x (at an offset of mis bytes) into room cap: the
 * stream or NULL on a reported failure; nothing past cap written. */
static uint8_t* emu_compress(const zc_params_t* p, const void* x, size_t n, size_t cap, size_t mis, size_t* size) {
  size_t esize = p->dtype == zcclFloat32 ? 4 : 8;
  uint8_t* in = (uint8_t*)alloc_aligned(16, n * esize + 32);
  memcpy(in + mis, x, n * esize);
  uint8_t* out = (uint8_t*)malloc(cap + GUARD);
  memset(out, 0xa5, cap + GUARD);
  size_t sb = zemu_codec_scratch_bytes(n, p->dtype, p->chunk_log2);
  void* scratch = alloc_aligned(64, sb);
  memset(scratch, 0x5a, sb); /* stale slots from "another launch" */
  st_word = zcclSuccess;
  size_words[0] = ~0ull;
  CHECK_RES(zemu_compress(p, in + mis, n, out, cap, size_words, scratch, sb, &st_word, NULL), zcclSuccess);
  for (int k = 0; k < GUARD; k++) CHECK(out[cap + k] == 0xa5);
  uint8_t* s = NULL;
  CHECK(st_word == zcclSuccess || st_word == zcclInvalidUsage);
  if (st_word == zcclSuccess) {
    CHECK(size_words[0] <= cap);
    s = (uint8_t*)malloc(size_words[0] + 1);
    memcpy(s, out, size_words[0]);
    *size = size_words[0];
  } else {
    CHECK(size_words[0] == 0);
  }
  free(in);
  free(out);
  free(scratch);
  n_compress++;
  return s;
}

static int emu_decompress(const uint8_t* s, size_t size, size_t count, size_t esize, size_t mis, void* y) {
  uint8_t* out = (uint8_t*)alloc_aligned(16, count * esize + 16 + GUARD);
  memset(out, 0xa5, count * esize + 16 + GUARD);
  st_word = zcclSuccess;
  size_words[1] = size;
  CHECK_RES(zemu_decompress(s, &size_words[1], out + mis, count, &st_word, NULL), zcclSuccess);
  for (int k = 0; k < GUARD; k++) CHECK(out[mis + count * esize + k] == 0xa5);
  for (size_t k = 0; k < mis; k++) CHECK(out[k] == 0xa5);
  CHECK(st_word == zcclSuccess || st_word == zcclInvalidUsage);
  if (st_word == zcclSuccess) memcpy(y, out + mis, count * esize);
  free(out);
  n_decompress++;
  return st_word == zcclSuccess;
}

/* where: 0 out of place, 1 out = a, 2 out = b, 3 out = a = b (one buffer). */
static uint8_t* emu_hop(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap,
                        int where, size_t* size) {
  size_t ra = where == 1 || where == 3 ? (cap > an ? cap : an) : an, rb = where == 2 && cap > bn ? cap : bn;
  uint8_t *da = (uint8_t*)malloc(ra + GUARD), *db = (uint8_t*)malloc(rb + GUARD), *dout = NULL;
  memset(da, 0xa5, ra + GUARD);
  memset(db, 0xa5, rb + GUARD);
  memcpy(da, a, an);
  memcpy(db, b, bn);
  uint8_t* out = where == 1 || where == 3 ? da : where == 2 ? db : (dout = (uint8_t*)malloc(cap + GUARD));
  if (dout) memset(dout, 0xa5, cap + GUARD);
  const uint8_t* pb = where == 3 ? da : db;
  zc_header_t h;
  size_t sb = zc_header_read(a, an, &h) == zcclSuccess ? zemu_codec_scratch_bytes(h.count, h.dtype, h.chunk_log2)
                                                       : 64 + 16 * an + 2 * (an + bn) + 256;
  void* scratch = alloc_aligned(64, sb);
  memset(scratch, 0x5a, sb);
  st_word = zcclSuccess;
  size_words[0] = ~0ull;
  size_words[1] = an;
  size_words[2] = where == 3 ? an : bn;
  /* In place over a, the result's size goes over a's size word too (as the
   * ring's steps do): the kernels must read it before anything is written. */
  uint64_t* out_size = where == 1 ? &size_words[1] : &size_words[0];
  CHECK_RES(zemu_hop(op, da, &size_words[1], pb, &size_words[2], out, cap, out_size, scratch, sb, &st_word, NULL),
            zcclSuccess);
  if (where == 1) size_words[0] = *out_size;
  size_t room = out == da ? ra : out == db ? rb : cap;
  for (int k = 0; k < GUARD; k++) CHECK(out[room + k] == 0xa5);
  CHECK(st_word == zcclSuccess || st_word == zcclInvalidUsage);
  uint8_t* r = NULL;
  if (st_word == zcclSuccess) {
    CHECK(size_words[0] <= cap);
    r = (uint8_t*)malloc(size_words[0] + 1);
    memcpy(r, out, size_words[0]);
    *size = size_words[0];
  } else {
    CHECK(size_words[0] == 0);
  }
  free(da);
  free(db);
  free(dout);
  free(scratch);
  n_hop++;
  return r;
}

/* ---- against the CPU codec ----------------------------------------------------------- */

static uint8_t* cpu_compress(const zc_params_t* p, const void* x, size_t n, size_t* size) {
  size_t cap = zc_compress_bound(n, p->dtype, p->chunk_log2);
  uint8_t* s = (uint8_t*)malloc(cap);
  CHECK_RES(zc_compress(p, x, n, s, cap, size, NULL, NULL), zcclSuccess);
  return s;
}

static uint8_t* check_compress(const zc_params_t* p, const void* x, size_t n, size_t mis, size_t* size) {
  uint8_t* s = cpu_compress(p, x, n, size);
  size_t gn = 0;
  uint8_t* g = emu_compress(p, x, n, zc_compress_bound(n, p->dtype, p->chunk_log2), mis, &gn);
  int same = g != NULL && gn == *size && memcmp(g, s, gn) == 0;
  CHECK(same);
  if (!same) {
    size_t k = 0;
    while (g && k < gn && k < *size && g[k] == s[k]) k++;
    fprintf(stderr, "compress dtype %d n %zu eb %g lg %u mis %zu: sizes %zu/%zu, first difference %zu\n",
            (int)p->dtype, n, p->eb, p->chunk_log2, mis, g ? gn : 0, *size, k);
  }
  free(g);
  return s;
}

/* Both return whether the CPU succeeded: equal failures pass the checks
 * inside, so callers whose streams are valid CHECK it. */
static int check_decompress(const uint8_t* s, size_t size, size_t count, size_t esize, size_t mis) {
  uint8_t *y = (uint8_t*)malloc(count * esize + 8), *z = (uint8_t*)malloc(count * esize + 8);
  size_t got = 0;
  int cpu = zc_decompress(s, size, y, count, &got, NULL, NULL) == zcclSuccess && got == count;
  int emu = emu_decompress(s, size, count, esize, mis, z);
  CHECK(cpu == emu);
  if (cpu && emu) CHECK(memcmp(y, z, count * esize) == 0);
  if (cpu != emu) fprintf(stderr, "decompress of %zu bytes: cpu %d kernels %d\n", size, cpu, emu);
  free(y);
  free(z);
  return cpu;
}

static int check_hop(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap,
                     int wheres) {
  uint8_t* r = (uint8_t*)malloc(cap + 1);
  size_t rn = 0;
  int cpu = zc_hop(op, a, an, b, bn, r, cap, &rn) == zcclSuccess, all = cpu;
  for (int where = 0; where < 4; where++) {
    if (!((wheres >> where) & 1)) continue;
    size_t gn = 0;
    uint8_t* g;
    if (where == 3) { /* a op a, in place over the one buffer */
      size_t sn = 0;
      uint8_t* rr = (uint8_t*)malloc(cap + 1);
      int cpu2 = zc_hop(op, a, an, a, an, rr, cap, &sn) == zcclSuccess;
      all = all && cpu2;
      g = emu_hop(op, a, an, a, an, cap, 3, &gn);
      CHECK((g != NULL) == cpu2);
      if (g && cpu2) CHECK(gn == sn && memcmp(g, rr, sn) == 0);
      free(rr);
      free(g);
      continue;
    }
    g = emu_hop(op, a, an, b, bn, cap, where, &gn);
    CHECK((g != NULL) == cpu);
    if (g && cpu) CHECK(gn == rn && memcmp(g, r, rn) == 0);
    if ((g != NULL) != cpu || (g && (gn != rn || memcmp(g, r, rn) != 0)))
      fprintf(stderr, "hop op %d where %d: cpu %d (%zu bytes) kernels %d (%zu bytes)\n", (int)op, where, cpu, rn,
              g != NULL, gn);
    free(g);
  }
  free(r);
  return all;
}

/* ---- data -------------------------------------------------------------------------- */


/* ---- tests ---------------------------------------------------------------------------- */

static void test_matrix(void) {
  const unsigned lgs[] = {5, 8, 12, 13, 16};
  const double ebs[] = {1e-1, 1e-3, 1e-6};
  for (int f64 = 0; f64 < 2; f64++) {
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    for (size_t li = 0; li < sizeof lgs / sizeof lgs[0]; li++) {
      size_t chunk = (size_t)1 << lgs[li];
      size_t counts[] = {0, 1, 33, chunk - 1, chunk + 1, 2 * chunk + 40};
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t n = counts[ci];
        if (lgs[li] == 16 && ci != 4) continue; /* the emulation is slow: one large case */
        int kind = (int)((ci + li * 3 + (size_t)f64) % G_NUM);
        double eb = ebs[(ci + li) % 3], fill = kind == G_SPARSE ? 0.0 : -1e34;
        int has_fill = kind == G_FILL || kind == G_SPARSE;
        uint8_t *x = (uint8_t*)malloc(n * 8 + 8), *y = (uint8_t*)malloc(n * 8 + 8);
        gen(kind, f64, n, fill, x, 0);
        gen(kind == G_CONST ? G_NOISY : kind, f64, n, fill, y, 999);
        /* chunk checksums in half the cases; in some, only on one input
         * (a hop verifies each by its own header, writes them by a's) */
        const int sum = (int)((ci + li + (size_t)f64) % 2), sum_b = ci == 2 ? !sum : sum;
        zc_params_t p = {dt, eb, has_fill, fill, lgs[li], sum}, pb = {dt, eb, has_fill, fill, lgs[li], sum_b};
        /* inputs and outputs at each of the four 4-byte offsets from a
         * 16-byte boundary */
        size_t mis = 4 * ((ci + li) % 4), an, bn;
        uint8_t* a = check_compress(&p, x, n, mis, &an);
        uint8_t* b = check_compress(&pb, y, n, 12 - mis, &bn);
        CHECK(check_decompress(a, an, n, esize, mis));
        CHECK(check_decompress(b, bn, n, esize, (mis + 8) % 16));
        size_t cap = zc_compress_bound(n, dt, lgs[li]);
        CHECK(check_hop(zcclSum, a, an, b, bn, cap, ci % 2 ? 0xf : 0x1));
        CHECK(check_hop(zcclMax, a, an, b, bn, cap, ci % 3 == 0 ? 0x4 : 0x1));
        CHECK(check_hop(zcclMin, b, bn, a, an, cap, 0x1));
        /* a stream with itself: exceptions and fill at the same places,
         * the register form's case (SUM's own instance) */
        CHECK(check_hop(zcclSum, a, an, a, an, cap, ci % 2 ? 0x1 : 0x9));
        if (n && kind == G_NONFINITE) {
          zc_set_divisor(a, an, 3);
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

/* Noisy float64 chunks of 4096 values take more bytes than the shared
 * copies hold: the kernels read them from global memory. */
static void test_big_chunks(void) {
  const size_t n = 3 * 4096 + 100;
  double *x = (double*)malloc(n * 8), *y = (double*)malloc(n * 8);
  gen(G_NOISY, 1, n, 0, x, 0);
  gen(G_NONFINITE, 1, n, 0, y, 0);
  zc_params_t p = {zcclFloat64, 1e-9, 0, 0, 12, 1};
  size_t an, bn;
  uint8_t* a = check_compress(&p, x, n, 4, &an);
  uint8_t* b = check_compress(&p, y, n, 0, &bn);
  CHECK(an > 3 * 16384);
  CHECK(check_decompress(a, an, n, 8, 4));
  size_t cap = zc_compress_bound(n, zcclFloat64, 12);
  CHECK(check_hop(zcclSum, a, an, b, bn, cap, 0x7));
  CHECK(check_hop(zcclMax, b, bn, a, an, cap, 0x1));
  free(a);
  free(b);
  free(x);
  free(y);
}

static void test_room_sum(int sum) {
  const size_t n = 3000;
  float* x = (float*)malloc(n * 4);
  gen(G_NONFINITE, 0, n, 0, x, 0);
  zc_params_t p = {zcclFloat32, 1e-3, 0, 0, 8, sum};
  size_t sn, bn;
  uint8_t* s = cpu_compress(&p, x, n, &sn);
  gen(G_SMOOTH, 0, n, 0, x, 0);
  uint8_t* b = cpu_compress(&p, x, n, &bn);
  size_t caps[] = {0,      39,     40,     40 + 4 * 12, sn / 2,   sn - 5,   sn - 4,   sn - 3,
                   sn - 1, sn,     sn + 1, sn + 300,    sn + 391, sn + 392, sn + 395, sn + 800};
  uint8_t* t = (uint8_t*)malloc(sn + 1000);
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
    size_t cn = 0, gn = 0;
    int cpu = zc_compress(&p, x, n, t, caps[k], &cn, NULL, NULL) == zcclSuccess;
    uint8_t* g = emu_compress(&p, x, n, caps[k], 0, &gn);
    CHECK(cpu == (g != NULL));
    if (cpu && g) CHECK(gn == cn && memcmp(g, t, cn) == 0);
    free(g);
    check_hop(zcclSum, s, sn, b, bn, caps[k], 0x3);
  }
  free(t);
  free(s);
  free(b);
  free(x);
}

static void test_room(void) {
  test_room_sum(0);
  test_room_sum(1);
}

/* Corrupted streams per dtype: fewer in the AddressSanitizer build, where
 * the emulated kernels run about 15x slower (the CPU codec's fuzzers cover
 * corruption at length; here it is the kernels' paths that matter). The
 * persistent kernel's items are smaller there, and its racing case shorter,
 * for the same reason: the queue's wrap and the relaunches are what they
 * test, not the codec. */
#if defined(__SANITIZE_ADDRESS__) || defined(ZEMU_ASAN_RUNTIME)
enum { BAD_CASES = 16, PERSIST_VALUES = 40, RACE_CHAINS = 6 };
#else
enum { BAD_CASES = 120, PERSIST_VALUES = 300, RACE_CHAINS = 16 };
#endif

static void test_bad(void) {
  const size_t n = 1500;
  for (int v = 0; v < 4; v++) {
    const int f64 = v & 1, sum = v >> 1;
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    uint8_t *x = (uint8_t*)malloc(n * 8), *y = (uint8_t*)malloc(n * 8);
    gen(G_NONFINITE, f64, n, 0, x, 0);
    gen(G_FILL, f64, n, 0.5, y, 5);
    zc_params_t p = {dt, 1e-3, 1, 0.5, 6, sum};
    size_t an, bn;
    uint8_t* a = cpu_compress(&p, x, n, &an);
    uint8_t* b = cpu_compress(&p, y, n, &bn);
    size_t cap = zc_compress_bound(n, dt, 6);
    uint8_t* t = (uint8_t*)malloc(an);
    for (int k = 0; k < BAD_CASES; k++) {
      memcpy(t, a, an);
      size_t tn = an;
      switch (rnd() % 4) {
        case 0: tn = rnd() % an; break;
        case 1: t[rnd() % an] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 2: t[ZC_HEADER_BYTES + rnd() % (an - ZC_HEADER_BYTES)] = (uint8_t)rnd(); break;
        default:
          for (int f = 0; f < 4; f++) t[rnd() % an] ^= (uint8_t)rnd();
      }
      const int cpu = check_decompress(t, tn, n, esize, 0);
      /* with checksums, a changed chunk byte never decodes */
      const size_t head = ZC_HEADER_BYTES + 4 * zc_ceil_shift(n, 6);
      if (sum && tn == an && memcmp(t, a, head) == 0 && memcmp(t, a, an) != 0) CHECK(!cpu);
      if (k % 2 == 0) check_hop(zcclSum, t, tn, b, bn, cap, k % 6 == 0 ? 0x3 : 0x1);
    }
    uint8_t* z = (uint8_t*)malloc(n * 8 + 8);
    CHECK(!emu_decompress(a, an, n - 1, esize, 0, z));
    CHECK(!emu_decompress(a, an, n + 1, esize, 0, z));
    free(z);
    free(t);
    free(a);
    free(b);
    free(x);
    free(y);
  }
  /* Out overlapping an input without being it; out_size aliasing an input's size. */
  float x[200];
  for (int i = 0; i < 200; i++) x[i] = (float)i * 0.1f;
  zc_params_t p = {zcclFloat32, 1e-3, 0, 0, 5, 0};
  size_t an;
  uint8_t* a = cpu_compress(&p, x, 200, &an);
  size_t cap = zc_compress_bound(200, zcclFloat32, 5), sb = zemu_codec_scratch_bytes(200, zcclFloat32, 5);
  uint8_t* buf = (uint8_t*)malloc(2 * cap + 64);
  memcpy(buf, a, an);
  void* scratch = alloc_aligned(64, sb);
  st_word = zcclSuccess;
  size_words[0] = ~0ull;
  size_words[1] = size_words[2] = an;
  CHECK_RES(zemu_hop(zcclSum, buf, &size_words[1], buf, &size_words[2], buf + 8, cap, size_words, scratch, sb,
                     &st_word, NULL),
            zcclSuccess);
  CHECK(st_word == zcclInvalidUsage && size_words[0] == 0);
  CHECK_RES(zemu_hop(zcclSum, buf, &size_words[1], buf, &size_words[2], buf + cap, cap, &size_words[1], scratch, sb,
                     &st_word, NULL),
            zcclInvalidArgument);
  /* In place with out_size = a's size word: allowed. */
  uint8_t ref[4096];
  size_t rn;
  CHECK_RES(zc_hop(zcclSum, a, an, a, an, ref, sizeof ref, &rn), zcclSuccess);
  st_word = zcclSuccess;
  size_words[1] = size_words[2] = an;
  uint8_t* other = (uint8_t*)malloc(an);
  memcpy(other, a, an);
  CHECK_RES(zemu_hop(zcclSum, buf, &size_words[1], other, &size_words[2], buf, cap, &size_words[1], scratch, sb,
                     &st_word, NULL),
            zcclSuccess);
  CHECK(st_word == zcclSuccess && size_words[1] == rn && memcmp(buf, ref, rn) == 0);
  free(other);
  free(scratch);
  free(buf);
  free(a);
}

/* levitus TEMP, or 0 with a failed check. */
static int load_temp(zccl_data_t* d) {
  char err[600];
  if (zccl_data_load("levitus_climatology.cdf:TEMP", 0, d, err, sizeof err) == 0) return 1;
  fprintf(stderr, "%s\n", err);
  CHECK(0);
  return 0;
}

static void test_levitus(void) {
  zccl_data_t d;
  if (!load_temp(&d)) return;
  const size_t n = 40000;
  for (double eb = 1e-1; eb > 1e-6; eb /= 100) {
    zc_params_t p = {zcclFloat32, eb, 1, d.fill, 12, 0};
    size_t an, bn;
    uint8_t* a = check_compress(&p, (float*)d.values + 200000, n, 0, &an);
    uint8_t* b = check_compress(&p, (float*)d.values + 300001, n, 4, &bn);
    CHECK(check_decompress(a, an, n, 4, 4));
    CHECK(check_hop(zcclSum, a, an, b, bn, zc_compress_bound(n, zcclFloat32, 12), 0x3));
    free(a);
    free(b);
  }
  zccl_data_free(&d);
}

/* ---- blocks in registers, and the general way beside them ---------------------------- */

static long path_count(int k) { return zemu_path[k].load(); }

/* A one-chunk float32 stream (64 values, 2 blocks, no fill) made of given
 * deltas: x[i] set marks an exception at i (raw value 1.5f), else d[i] is
 * the delta there (0 at the first ordinary position: the base is 0). */
static uint8_t* craft_f32(const int64_t* d, const uint8_t* x, size_t* size) {
  const size_t n = 64;
  uint8_t* s = (uint8_t*)calloc(1, 4096);
  zd_header_write(s, 0, n, 1e-3, 0, 0.0, 6, 1, 0);
  size_t o = ZC_HEADER_BYTES + 4 + 8; /* index entry, base 0 */
  for (int blk = 0; blk < 2; blk++) {
    zc_block_t b;
    b.xbits = 0;
    b.fbits = 0;
    for (int i = 0; i < 32; i++) {
      b.d[i] = x[blk * 32 + i] ? 0 : d[blk * 32 + i];
      if (x[blk * 32 + i]) b.xbits |= 1u << i;
    }
    o += (size_t)zc_block_encode(&b, 0, 0, s + o);
    for (int i = 0; i < 32; i++) {
      if (!x[blk * 32 + i]) continue;
      zc_put_u32(s + o, 0x3fc00000u);
      o += 4;
    }
  }
  zc_put_u32(s + ZC_HEADER_BYTES, (uint32_t)(o - ZC_HEADER_BYTES - 4));
  *size = o;
  return s;
}

static void test_paths(void) {
  zccl_data_t d;
  if (!load_temp(&d)) return;
  /* Real data: a stream summed with itself (fill and exception positions
   * agree) goes in registers all the way; with another part of the field
   * (coast blocks whose fill differs) some blocks go the general way. The
   * same for MAX and MIN. */
  const size_t n = 20000;
  zc_params_t p = {zcclFloat32, 1e-3, 1, d.fill, 12, 0};
  size_t an, bn, cap = zc_compress_bound(n, zcclFloat32, 12);
  long c32 = path_count(ZD_PATH_C32), d32 = path_count(ZD_PATH_D32), dgen = path_count(ZD_PATH_DGEN);
  uint8_t* a = check_compress(&p, (float*)d.values + 250000, n, 0, &an);
  uint8_t* b = check_compress(&p, (float*)d.values + 150007, n, 0, &bn);
  CHECK(path_count(ZD_PATH_C32) - c32 == 2 * (long)((n + 31) / 32));
  CHECK(check_decompress(a, an, n, 4, 0));
  CHECK(path_count(ZD_PATH_D32) - d32 == (long)((n + 31) / 32) && path_count(ZD_PATH_DGEN) == dgen);
  long h32 = path_count(ZD_PATH_H32), hgen = path_count(ZD_PATH_HGEN);
  CHECK(check_hop(zcclSum, a, an, a, an, cap, 0x1));
  CHECK(path_count(ZD_PATH_H32) - h32 == (long)((n + 31) / 32) && path_count(ZD_PATH_HGEN) == hgen);
  h32 = path_count(ZD_PATH_H32);
  CHECK(check_hop(zcclSum, a, an, b, bn, cap, 0x3));
  CHECK(path_count(ZD_PATH_H32) > h32 && path_count(ZD_PATH_HGEN) > hgen);
  /* MAX and MIN the same way */
  h32 = path_count(ZD_PATH_H32);
  hgen = path_count(ZD_PATH_HGEN);
  CHECK(check_hop(zcclMax, a, an, a, an, cap, 0x1));
  CHECK(check_hop(zcclMin, b, bn, b, bn, cap, 0x8));
  CHECK(path_count(ZD_PATH_H32) - h32 == 2 * (long)((n + 31) / 32) && path_count(ZD_PATH_HGEN) == hgen);
  h32 = path_count(ZD_PATH_H32);
  CHECK(check_hop(zcclMax, a, an, b, bn, cap, 0x1));
  CHECK(check_hop(zcclMin, b, bn, a, an, cap, 0x4));
  CHECK(path_count(ZD_PATH_H32) > h32 && path_count(ZD_PATH_HGEN) > hgen);
  free(a);
  free(b);

  /* Float64: compression, decompression and the hop in registers too
   * where moves fit 32 bits (a smooth field's do). */
  double* x64 = (double*)malloc(n * 8);
  for (size_t i = 0; i < n; i++) x64[i] = ((float*)d.values)[250000 + i];
  zc_params_t p64 = {zcclFloat64, 1e-6, 1, (double)d.fill, 12, 0};
  long cgen = path_count(ZD_PATH_CGEN);
  c32 = path_count(ZD_PATH_C32);
  d32 = path_count(ZD_PATH_D32);
  h32 = path_count(ZD_PATH_H32);
  hgen = path_count(ZD_PATH_HGEN);
  a = check_compress(&p64, x64, n, 4, &an);
  CHECK(path_count(ZD_PATH_C32) - c32 == (long)((n + 31) / 32) && path_count(ZD_PATH_CGEN) == cgen);
  CHECK(check_decompress(a, an, n, 8, 4));
  CHECK(check_hop(zcclSum, a, an, a, an, zc_compress_bound(n, zcclFloat64, 12), 0x9));
  CHECK(path_count(ZD_PATH_D32) - d32 == (long)((n + 31) / 32));
  CHECK(path_count(ZD_PATH_H32) - h32 == 2 * (long)((n + 31) / 32) && path_count(ZD_PATH_HGEN) == hgen);
  free(a);
  /* Moves wider than 32 bits: within blocks (values jumping by about 2^40
   * steps: the general way from the start), and only from one block to the
   * next (each block flat at its own level: late, at the first move). */
  zc_params_t pw64 = {zcclFloat64, 1e-6, 0, 0, 8, 0};
  for (size_t i = 0; i < 256; i++) x64[i] = (i % 2 ? 1.0 : -1.0) * 1e6 * (1.0 + urand());
  for (size_t i = 256; i < 512; i++) x64[i] = ((i - 256) / 32 % 2 ? 3e6 : -2e6) + 1e-3 * urand();
  cgen = path_count(ZD_PATH_CGEN);
  long clate = path_count(ZD_PATH_CLATE);
  a = check_compress(&pw64, x64, 512, 0, &an);
  CHECK(path_count(ZD_PATH_CGEN) - cgen == 8 && path_count(ZD_PATH_CLATE) - clate >= 7);
  CHECK(check_decompress(a, an, 512, 8, 0));
  free(a);
  free(x64);
  zccl_data_free(&d);

  /* Deltas that grow past 31 bits: a chain of sums of wide noise (|q| up to
   * 2^29), compared step by step; the blocks leave the registers for the
   * general way as they widen, in the hop first, then in decompression. */
  const size_t m = 3000;
  float* x = (float*)malloc(m * 4);
  for (size_t i = 0; i < m; i++) x[i] = (float)(2.0 * urand() - 1.0);
  zc_params_t pw = {zcclFloat32, 1e-9, 0, 0, 8, 0};
  size_t sn, accn;
  uint8_t* s = check_compress(&pw, x, m, 0, &sn);
  size_t capw = zc_compress_bound(m, zcclFloat32, 8) * 2;
  uint8_t* acc = (uint8_t*)malloc(capw);
  memcpy(acc, s, sn);
  accn = sn;
  hgen = path_count(ZD_PATH_HGEN);
  dgen = path_count(ZD_PATH_DGEN);
  for (int step = 0; step < 6; step++) {
    CHECK(check_hop(zcclSum, acc, accn, s, sn, capw, step % 2 ? 0x3 : 0x5));
    uint8_t* next = (uint8_t*)malloc(capw);
    size_t nn = 0;
    CHECK_RES(zc_hop(zcclSum, acc, accn, s, sn, next, capw, &nn), zcclSuccess);
    free(acc);
    acc = next;
    accn = nn;
    CHECK(check_decompress(acc, accn, m, 4, step % 2 ? 4 : 0));
  }
  CHECK(path_count(ZD_PATH_HGEN) > hgen && path_count(ZD_PATH_DGEN) > dgen);
  free(acc);
  free(s);
  free(x);

  /* The result's first ordinary integer of a block in registers moves from
   * an integer far behind: a climbs by 2^30 a position while b has
   * exceptions there (the result has none ordinary), so the move is wider
   * than 32 bits and the block goes the general way late. */
  int64_t da[64] = {0}, db[64] = {0};
  uint8_t xa[64] = {0}, xb[64] = {0};
  for (int i = 1; i < 32; i++) {
    da[i] = (int64_t)1 << 30;
    xb[i] = 1;
  }
  da[32] = 1;
  db[33] = -5;
  size_t can, cbn;
  uint8_t* ca = craft_f32(da, xa, &can);
  uint8_t* cb = craft_f32(db, xb, &cbn);
  long late = path_count(ZD_PATH_HLATE);
  CHECK(check_decompress(ca, can, 64, 4, 0) && check_decompress(cb, cbn, 64, 4, 4));
  CHECK(check_hop(zcclSum, ca, can, cb, cbn, 4096, 0x7));
  CHECK(check_hop(zcclSum, cb, cbn, ca, can, 4096, 0x1));
  CHECK(path_count(ZD_PATH_HLATE) - late == 4);
  free(ca);
  free(cb);
}

/* ---- the persistent kernel ---------------------------------------------------------- */

static uint32_t gate_word;

/* A ring's work at one rank, submitted without waiting: R inputs
 * compressed, summed in place into the first one by R - 1 hops (its size
 * word is the result's), the sum decompressed; every stream and the values
 * must be the CPU's. */
static void persist_chain(zd_cuda_persist_t* p, int R, size_t n, unsigned lg, int f64, int gated) {
  zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
  size_t esize = f64 ? 8 : 4, cap = zc_compress_bound(n, dt, lg);
  zc_params_t prm = {dt, 1e-3, 0, 0, lg, 0};
  std::vector<uint8_t*> x(R), s(R), ref(R);
  std::vector<uint64_t> sz(R);
  std::vector<size_t> rn(R);
  size_t sb = zemu_codec_scratch_bytes(n, dt, lg);
  void* scratch = alloc_aligned(64, sb);
  int status = zcclSuccess;
  uint64_t seq = 0, first = 0;
  for (int r = 0; r < R; r++) {
    x[r] = (uint8_t*)alloc_aligned(16, n * esize + 16);
    gen(r % 2 ? G_NOISY : G_SMOOTH, f64, n, 0, x[r], 77 + r);
    s[r] = (uint8_t*)malloc(cap);
    ref[r] = cpu_compress(&prm, x[r], n, &rn[r]);
    uint32_t gv = gate_word + 1;
    CHECK_RES(zemu_persist_compress(p, &prm, x[r], n, s[r], cap, &sz[r], scratch, sb, &status,
                                    gated && r == 0 ? &gate_word : NULL, gv, &seq),
              zcclSuccess);
    if (r == 0) first = seq;
  }
  if (gated) { /* nothing may run before the gate opens */
    struct timespec nap = {0, 20000000};
    nanosleep(&nap, NULL);
    CHECK(*zemu_persist_done_word(p) == (uint32_t)(first - 1));
    __atomic_store_n(&gate_word, gate_word + 1, __ATOMIC_SEQ_CST);
  }
  size_t accn = rn[0];
  uint8_t* acc = (uint8_t*)malloc(cap);
  memcpy(acc, ref[0], rn[0]);
  uint8_t* tmp = (uint8_t*)malloc(cap);
  for (int r = 1; r < R; r++) {
    CHECK_RES(zemu_persist_hop(p, zcclSum, s[0], &sz[0], s[r], &sz[r], s[0], cap, &sz[0], scratch, sb, &status, NULL,
                               0, &seq),
              zcclSuccess);
    size_t tn = 0;
    CHECK_RES(zc_hop(zcclSum, acc, accn, ref[r], rn[r], tmp, cap, &tn), zcclSuccess);
    memcpy(acc, tmp, tn);
    accn = tn;
  }
  uint8_t *y = (uint8_t*)alloc_aligned(16, n * esize + 16), *yr = (uint8_t*)malloc(n * esize + 8);
  CHECK_RES(zemu_persist_decompress(p, s[0], &sz[0], y, n, &status, NULL, 0, &seq), zcclSuccess);
  CHECK_RES(zemu_persist_wait(p, seq), zcclSuccess);
  CHECK(*zemu_persist_done_word(p) == (uint32_t)seq);
  CHECK(status == zcclSuccess);
  for (int r = 1; r < R; r++) CHECK(sz[r] == rn[r] && memcmp(s[r], ref[r], rn[r]) == 0);
  CHECK(sz[0] == accn && memcmp(s[0], acc, accn) == 0);
  size_t got = 0;
  CHECK_RES(zc_decompress(acc, accn, yr, n, &got, NULL, NULL), zcclSuccess);
  CHECK(got == n && memcmp(y, yr, n * esize) == 0);
  for (int r = 0; r < R; r++) {
    free(x[r]);
    free(s[r]);
    free(ref[r]);
  }
  free(acc);
  free(tmp);
  free(y);
  free(yr);
  free(scratch);
}

static void test_persistent(void) {
  zd_cuda_persist_t* p = NULL;
  /* A long idle time: one launch serves everything submitted back to back. */
  CHECK_RES(zemu_persist_create(2000000, 0, &p), zcclSuccess);
  persist_chain(p, 4, 3 * 256 + 17, 8, 0, 0);
  persist_chain(p, 3, 2 * 4096 + 5, 12, 1, 1);
  CHECK(zemu_persist_launches(p) == 1);
  /* A failing item (a corrupt stream) reports on its own status word; the
   * items after it still run. */
  {
    const size_t n = 1000;
    float x[1000];
    gen(G_SMOOTH, 0, n, 0, x, 3);
    zc_params_t prm = {zcclFloat32, 1e-3, 0, 0, 6, 0};
    size_t an;
    uint8_t* a = cpu_compress(&prm, x, n, &an);
    a[ZC_HEADER_BYTES + 1] ^= 0x40; /* the index */
    uint64_t asz = an, seq = 0;
    float y[1000];
    int bad = zcclSuccess;
    CHECK_RES(zemu_persist_decompress(p, a, &asz, y, n, &bad, NULL, 0, &seq), zcclSuccess);
    CHECK_RES(zemu_persist_decompress(p, a, &asz, y, n + 1, &bad, NULL, 0, &seq), zcclSuccess);
    CHECK_RES(zemu_persist_wait(p, seq), zcclSuccess);
    CHECK(bad == zcclInvalidUsage);
    free(a);
    persist_chain(p, 2, 500, 5, 0, 0);
  }
  zemu_persist_destroy(p);
  /* A short idle time: the kernel leaves between submissions and is
   * launched again; 300 items wrap the 256-entry queue. */
  CHECK_RES(zemu_persist_create(200, 2, &p), zcclSuccess);
  {
    const size_t n = PERSIST_VALUES;
    float x[PERSIST_VALUES];
    gen(G_NOISY, 0, n, 0, x, 11);
    zc_params_t prm = {zcclFloat32, 1e-2, 0, 0, 5, 0};
    size_t rn;
    uint8_t* ref = cpu_compress(&prm, x, n, &rn);
    size_t cap = zc_compress_bound(n, zcclFloat32, 5), sb = zemu_codec_scratch_bytes(n, zcclFloat32, 5);
    void* scratch = alloc_aligned(64, sb);
    std::vector<uint8_t> outs(300 * cap);
    std::vector<uint64_t> sz(300);
    int status = zcclSuccess;
    uint64_t seq = 0;
    for (int k = 0; k < 300; k++) {
      CHECK_RES(zemu_persist_compress(p, &prm, x, n, &outs[k * cap], cap, &sz[k], scratch, sb, &status, NULL, 0, &seq),
                zcclSuccess);
      if (k % 60 == 59) {
        struct timespec nap = {0, 5000000};
        nanosleep(&nap, NULL);
      }
    }
    CHECK_RES(zemu_persist_wait(p, seq), zcclSuccess);
    CHECK(status == zcclSuccess);
    int same = 1;
    for (int k = 0; k < 300; k++) same &= sz[k] == rn && memcmp(&outs[k * cap], ref, rn) == 0;
    CHECK(same);
    free(ref);
    free(scratch);
  }
  for (int k = 0; k < 3; k++) {
    struct timespec nap = {0, 3000000};
    nanosleep(&nap, NULL);
    persist_chain(p, 3, 700, 6, k & 1, k == 1);
  }
  unsigned long long launches = zemu_persist_launches(p);
  CHECK(launches > 1);
  zemu_persist_destroy(p);
  /* 1 us: CTAs leave while items are being submitted, so the last one out
   * and the submitter race on every item (neither may lose an item). */
  CHECK_RES(zemu_persist_create(1, ZEMU_SMS, &p), zcclSuccess);
  for (int k = 0; k < RACE_CHAINS; k++) persist_chain(p, 2, 100 + 91 * k, 5, k & 1, 0);
  unsigned long long racing = zemu_persist_launches(p);
  zemu_persist_destroy(p);
  printf("persistent kernel: %llu launches with a 200 us idle time, %llu with 1 us\n", launches, racing);
}

int main(void) {
  rng_state = 0x6a09e667f3bcc909ull; /* this test's own sequence */
  test_persistent();
  test_room();
  test_bad();
  test_big_chunks();
  test_levitus();
  test_paths();
  test_matrix();
  printf("emulated kernels (CTAs of %d threads): %ld compressions, %ld decompressions, %ld hops compared with the "
         "CPU codec\n",
         ZD_T, n_compress, n_decompress, n_hop);
  TEST_DONE();
}
