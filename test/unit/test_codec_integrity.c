/* Streams from untrusted bytes (issue 35): sizes read from a header never
 * wrap, and a count its chunks do not hold is an error. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zc_szp.h"
/* The CUDA kernels' header check. */
#include "zd_cuda_codec_blocks.h"

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

/* A count one more than the stream was made with, past a chunk boundary:
 * the chunk count no longer matches. */
static void test_count_past_data(void) {
  float x[64], y[65];
  size_t size, got;
  for (int i = 0; i < 64; i++) x[i] = sinf(0.1f * (float)i);
  zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3, .chunk_log2 = 5};
  size_t cap = zc_compress_bound(64, zcclFloat32, 5);
  uint8_t* s = malloc(cap);
  CHECK_RES(zc_compress(&p, x, 64, s, cap, &size, NULL, NULL), zcclSuccess);
  uint64_t count = 65;
  memcpy(s + 8, &count, 8);
  CHECK_RES(zc_decompress(s, size, y, 65, &got, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("chunks for");
  free(s);
}

int main(void) {
  test_count_wrap();
  test_count_past_data();
  TEST_DONE();
}
