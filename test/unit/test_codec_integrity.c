/* Streams from untrusted bytes (issue 35): sizes read from a header never
 * wrap, a count its chunks do not hold is an error, and with chunk checksums
 * (docs/format.md) a flipped bit is rejected or changes nothing, never a
 * silently different value.
 *   test_codec_integrity              the checks (CTest, label unit)
 *   test_codec_integrity --flips N    N random single-bit flips in a levitus
 *                                     TEMP stream, with and without
 *                                     checksums: how many decode silently */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zc_simd.h"
#include "zc_szp.h"
#include "zccl_data.h"
/* The CUDA kernels' header check: a reader that knows only flag bit 0,
 * exactly as version-1 zccl readers before chunk checksums. */
#include "zd_cuda_codec_blocks.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) { return test_xorshift(&rng_state); }

/* A bare 40-byte header. */
static void header(uint8_t* s, uint64_t count, unsigned lg, uint32_t nchunks) {
  double eb = 1e-3, fill = 0;
  uint32_t divisor = 1;
  memset(s, 0, ZC_HEADER_BYTES);
  memcpy(s, "ZCCS", 4);
  s[4] = 1;
  s[5] = 1;
  s[7] = (uint8_t)lg;
  memcpy(s + 8, &count, 8);
  memcpy(s + 16, &eb, 8);
  memcpy(s + 24, &fill, 8);
  memcpy(s + 32, &nchunks, 4);
  memcpy(s + 36, &divisor, 4);
}

/* count + 2^k - 1 wrapped: 2^64 - 1 values "in 0 chunks" passed the
 * header check, decoded to nothing and hsum wrote a bogus stream. */
static void test_count_wrap(void) {
  uint8_t s[ZC_HEADER_BYTES], o[256];
  float y[4];
  size_t got, on;
  zc_header_t h;
  for (unsigned lg = ZC_CHUNK_LOG2_MIN; lg <= ZC_CHUNK_LOG2_MAX; lg++) {
    uint64_t counts[] = {UINT64_MAX, UINT64_MAX - ((1ull << lg) - 2)}; /* both wrapped to 0 chunks */
    for (int k = 0; k < 2; k++) {
      header(s, counts[k], lg, 0);
      CHECK_RES(zc_header_read(s, sizeof s, &h), zcclInvalidArgument);
      CHECK_LAST_ERROR_HAS("0 chunks for");
      CHECK_RES(zc_decompress(s, sizeof s, y, 4, &got, NULL, NULL), zcclInvalidArgument);
      CHECK_RES(zc_hop(zcclSum, s, sizeof s, s, sizeof s, o, sizeof o, &on), zcclInvalidArgument);
      CHECK(zd_header_parse(s, sizeof s, &(zd_hdr_t){0}) != 0); /* the CUDA kernels' check too */
    }
  }
  /* The bound of a count from such a header saturates instead of wrapping
   * to a small buffer. */
  CHECK(zc_compress_bound(SIZE_MAX, zcclFloat32, 5) == SIZE_MAX);
  CHECK(zc_compress_bound(SIZE_MAX - 30, zcclFloat64, 16) == SIZE_MAX);
  CHECK(zc_compress_bound(SIZE_MAX / 8, zcclFloat64, 12) == SIZE_MAX);
  CHECK(zc_compress_bound(0, zcclFloat32, 0) == ZC_HEADER_BYTES);
  CHECK(zc_compress_bound(4096, zcclFloat32, 12) > 4096 * 4);
}

static uint8_t* compress_new(const float* x, size_t n, unsigned lg, int checksum, size_t* size) {
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3, .chunk_log2 = lg, .checksum = checksum};
  size_t cap = zc_compress_bound(n, zcclFloat32, lg);
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(&p, x, n, s, cap, size, NULL, NULL), zcclSuccess);
  return s;
}

static void set_count(uint8_t* s, uint64_t count) { memcpy(s + 8, &count, 8); }

/* A count one more than the stream was made with: past a chunk boundary
 * the chunk count no longer matches; inside the last block the new value
 * comes from padding, which only the checksum (covering the header) tells
 * from a real value. */
static void test_count_past_data(void) {
  float x[100], y[101];
  size_t size, got;
  for (int i = 0; i < 100; i++) x[i] = sinf(0.1f * (float)i);
  uint8_t* s = compress_new(x, 64, 5, 1, &size); /* two full chunks of 32 */
  set_count(s, 65);
  CHECK_RES(zc_decompress(s, size, y, 101, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("chunks for");
  free(s);
  s = compress_new(x, 95, 5, 1, &size); /* last block: 31 values and 1 padding */
  CHECK_RES(zc_decompress(s, size, y, 101, &got, NULL, NULL), zcclSuccess);
  set_count(s, 96);
  CHECK_RES(zc_decompress(s, size, y, 101, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("fails its checksum");
  set_count(s, 94); /* one fewer: the dropped value's delta would have to be 0 */
  CHECK_RES(zc_decompress(s, size, y, 101, &got, NULL, NULL), zcclInvalidArgument);
  free(s);
}

/* Flips bit `bit` of s and decodes: 0 rejected, 1 same values, 2 silently
 * different values. */
static int flip_outcome(const uint8_t* s, size_t size, uint8_t* t, size_t bit, const float* ref, float* y,
                        size_t n) {
  memcpy(t, s, size);
  t[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  size_t got = 0;
  if (zc_decompress(t, size, y, n, &got, NULL, NULL) != zcclSuccess) return 0;
  return got == n && memcmp(y, ref, n * sizeof *y) == 0 ? 1 : 2;
}

/* nflips random single-bit flips of a checksummed and an unchecksummed
 * stream of TEMP (its first `limit` values from a third in, 0: all of
 * it); silent[k]: flips that decoded to changed values. */
static int flips(int nflips, size_t limit, size_t silent[2], size_t rejected[2]) {
  zccl_data_t d;
  char err[512];
  if (zccl_data_load("levitus_climatology.cdf:TEMP", 0, &d, err, sizeof err) != 0) {
    fprintf(stderr, "skip flips: %s\n", err);
    return -1;
  }
  size_t n = d.count, at = 0;
  if (limit && limit < n) at = n / 3, n = limit;
  const float* in = (const float*)d.values + at;
  float *ref = malloc(n * 4), *y = malloc(n * 4);
  for (int k = 0; k < 2; k++) {
    zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-2, .has_fill = d.has_fill, .fill = d.fill, .checksum = k};
    size_t cap = zc_compress_bound(n, zcclFloat32, 0), size, got;
    uint8_t *s = malloc(cap), *t = malloc(cap);
    CHECK_RES(zc_compress(&p, in, n, s, cap, &size, NULL, NULL), zcclSuccess);
    CHECK_RES(zc_decompress(s, size, ref, n, &got, NULL, NULL), zcclSuccess);
    silent[k] = rejected[k] = 0;
    for (int f = 0; f < nflips; f++) {
      int r = flip_outcome(s, size, t, (size_t)(rnd() % (size * 8)), ref, y, n);
      silent[k] += r == 2;
      rejected[k] += r == 0;
    }
    free(s);
    free(t);
  }
  free(ref);
  free(y);
  zccl_data_free(&d);
  return 0;
}

static void test_checksum_flips(void) {
  size_t silent[2], rejected[2];
  /* 64 Ki values keep it fast under the sanitizers; --flips takes all. */
  if (flips(2000, 1 << 16, silent, rejected) != 0) return;
  CHECK(silent[1] == 0);
  CHECK(silent[0] > 0); /* what the checksum is for: without, some decode silently */
}

/* Every flip of every bit of a small checksummed stream (header, index,
 * chunks, checksums) is an error or leaves the values as they were. */
static void test_checksum_every_bit(void) {
  float x[300], ref[300], y[300];
  size_t size, got;
  for (int i = 0; i < 300; i++) x[i] = i % 37 == 0 ? NAN : 3.0f * sinf(0.05f * (float)i);
  uint8_t* s = compress_new(x, 300, 7, 1, &size);
  uint8_t* t = malloc(size);
  CHECK_RES(zc_decompress(s, size, ref, 300, &got, NULL, NULL), zcclSuccess);
  size_t silent = 0;
  for (size_t b = 0; b < size * 8; b++) silent += flip_outcome(s, size, t, b, ref, y, 300) == 2;
  CHECK(silent == 0);
  /* The error names the chunk. */
  memcpy(t, s, size);
  t[size - 1] ^= 1; /* the last chunk's checksum */
  CHECK_RES(zc_decompress(t, size, y, 300, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("chunk 2 fails its checksum");
  free(s);
  free(t);
}

/* Readers that know only flag bit 0 (every zccl before checksums, and
 * today's CUDA kernels) refuse a checksummed stream by the format's rule
 * that reserved flag bits are 0; without checksums the bytes are those of
 * version 1 unchanged. */
static void test_old_readers(void) {
  float x[200];
  size_t on, off;
  for (int i = 0; i < 200; i++) x[i] = cosf(0.03f * (float)i);
  uint8_t* s = compress_new(x, 200, 6, 1, &on);
  uint8_t* u = compress_new(x, 200, 6, 0, &off);
  CHECK(s[4] == 1 && (s[6] & ~1u) != 0); /* an old reader's `flags & ~1` test fails */
  CHECK(u[4] == 1 && u[6] == 0);
  /* The CUDA kernels' header check reads both, the seed as the CPU's. */
  zd_hdr_t ds = {0}, du = {0};
  CHECK(zd_header_parse(s, on, &ds) == 0 && ds.checksum == 1);
  CHECK(zd_header_parse(u, off, &du) == 0 && du.checksum == 0);
  CHECK(on == off + 4 * 4); /* four chunks, four bytes each */
  /* Same chunk bodies: the checksum is appended, nothing else changes. */
  zc_header_t hs, hu;
  CHECK_RES(zc_header_read(s, on, &hs), zcclSuccess);
  CHECK_RES(zc_header_read(u, off, &hu), zcclSuccess);
  CHECK(hs.checksum == 1 && hu.checksum == 0);
  CHECK(memcmp(hs.chunks, hu.chunks, zc_get_u32(hu.index)) == 0);
  free(s);
  free(u);
}

/* Homomorphic operations verify their inputs and seal their output; every
 * kernel level writes the scalar bytes; zc_set_divisor reseals. */
static void test_checksum_ops(void) {
  const size_t n = 20000;
  float *x = malloc(n * 4), *x2 = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    x[i] = i % 501 == 0 ? INFINITY : 2.0f * sinf(0.002f * (float)i);
    x2[i] = 0.5f * cosf(0.003f * (float)i);
  }
  size_t an, bn, rn, vn, got, cap = zc_compress_bound(n, zcclFloat32, 0);
  uint8_t* a = compress_new(x, n, 0, 1, &an);
  uint8_t* b = compress_new(x2, n, 0, 1, &bn);
  uint8_t *r = malloc(cap), *v = malloc(cap), *t = malloc(cap);
  int level = zc_simd_get();
  zc_simd_set(ZC_SIMD_SCALAR);
  uint8_t* ref = compress_new(x, n, 0, 1, &rn);
  for (int l = ZC_SIMD_SCALAR + 1; l < ZC_SIMD_NUM; l++) {
    if (zc_simd_set(l) != 0) continue;
    uint8_t* c = compress_new(x, n, 0, 1, &got);
    CHECK(got == rn && memcmp(c, ref, rn) == 0);
    free(c);
  }
  zc_simd_set(level);
  CHECK_RES(zc_hop(zcclSum, a, an, b, bn, r, cap, &rn), zcclSuccess);
  zc_header_t h;
  CHECK_RES(zc_header_read(r, rn, &h), zcclSuccess);
  CHECK(h.checksum == 1);
  CHECK_RES(zc_decompress(r, rn, y, n, &got, NULL, NULL), zcclSuccess);
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3, .checksum = 1};
  CHECK_RES(zc_hop_values(zcclSum, &p, x, n, b, bn, v, cap, &vn), zcclSuccess);
  CHECK(vn == rn && memcmp(v, r, rn) == 0); /* the fused step writes the same sealed bytes */
  /* A corrupt input of either kind is refused, not laundered into a
   * result with a valid checksum. */
  memcpy(t, b, bn);
  t[bn / 2] ^= 0x10;
  CHECK_RES(zc_hop(zcclSum, a, an, t, bn, r, cap, &rn), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("fails its checksum");
  CHECK_RES(zc_hop_values(zcclMax, &p, x, n, t, bn, v, cap, &vn), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("fails its checksum");
  CHECK_RES(zc_set_divisor(t, bn, 2), zcclInvalidArgument);
  /* The divisor is in the header the checksums cover: set through the
   * API it reseals, flipped in the bytes it is caught. */
  CHECK_RES(zc_set_divisor(a, an, 4), zcclSuccess);
  CHECK_RES(zc_decompress(a, an, z, n, &got, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_set_divisor(a, an, 1), zcclSuccess);
  CHECK_RES(zc_decompress(a, an, y, n, &got, NULL, NULL), zcclSuccess);
  size_t same = 0;
  for (size_t i = 0; i < n; i++) same += z[i] == y[i] / 4.0f;
  CHECK(same == n);
  a[36] ^= 0x02;
  CHECK_RES(zc_decompress(a, an, z, n, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("chunk 0 fails its checksum");
  free(x); free(x2); free(y); free(z); free(a); free(b); free(r); free(v); free(t); free(ref);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--flips") == 0) {
    size_t silent[2], rejected[2];
    int nf = atoi(argv[2]);
    if (flips(nf, 0, silent, rejected) != 0) return 1;
    for (int k = 0; k < 2; k++)
      printf("checksum %s: %d flips, %zu rejected, %zu same values, %zu silently changed values\n",
             k ? "on " : "off", nf, rejected[k], (size_t)nf - rejected[k] - silent[k], silent[k]);
    return 0;
  }
  test_count_wrap();
  test_count_past_data();
  test_old_readers();
  test_checksum_every_bit();
  test_checksum_ops();
  test_checksum_flips();
  TEST_DONE();
}
