/* Fuzz target: the stream decoder. Any bytes must give values or
 * zcclInvalidArgument, never a crash or an access out of bounds; decoded
 * streams must decode the same at every kernel level. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zc_simd.h"
#include "zc_szp.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zc_header_t h;
  if (zc_header_read(data, size, &h) != zcclSuccess) return 0;
  if (h.count > (1u << 20)) return 0; /* keep the output allocation small */
  size_t esize = h.dtype == zcclFloat32 ? 4 : 8, n = (size_t)h.count, got = 0;
  uint8_t* y = malloc(n * esize + 1);
  uint8_t* z = malloc(n * esize + 1);
  int level = zc_simd_get();
  zcclResult_t r = zc_decompress(data, size, y, n, &got, NULL, NULL);
  if (r != zcclSuccess && r != zcclInvalidArgument) abort();
  for (int l = 0; l < ZC_SIMD_NUM; l++) {
    if (l == level || zc_simd_set(l) != 0) continue;
    zcclResult_t r2 = zc_decompress(data, size, z, n, &got, NULL, NULL);
    if (r2 != r || (r == zcclSuccess && memcmp(y, z, n * esize) != 0)) abort();
  }
  zc_simd_set(level);
  free(y);
  free(z);
  return 0;
}
