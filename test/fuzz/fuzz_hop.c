/* Fuzz target: homomorphic SUM/MAX/MIN on two streams cut from the input
 * (first byte: op; next 4: length of the first stream). Any bytes: a result
 * or zcclInvalidArgument/zcclInvalidUsage, never a crash; every kernel level
 * writes the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zc_simd.h"
#include "zc_szp.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  static const zcclRedOp_t ops[3] = {zcclSum, zcclMax, zcclMin};
  zcclRedOp_t op = ops[data[0] % 3];
  uint32_t alen;
  memcpy(&alen, data + 1, 4);
  data += 5;
  size -= 5;
  if (alen > size) return 0;
  const uint8_t *a = data, *b = data + alen;
  size_t an = alen, bn = size - alen;
  zc_header_t h;
  if (zc_header_read(a, an, &h) != zcclSuccess || h.count > (1u << 20)) return 0;
  size_t cap = zc_compress_bound((size_t)h.count, h.dtype, h.chunk_log2), n1 = 0, n2 = 0;
  uint8_t* o1 = malloc(cap);
  uint8_t* o2 = malloc(cap);
  int level = zc_simd_get();
  zcclResult_t r = zc_hop(op, a, an, b, bn, o1, cap, &n1);
  if (r != zcclSuccess && r != zcclInvalidArgument && r != zcclInvalidUsage) abort();
  for (int l = 0; l < ZC_SIMD_NUM; l++) {
    if (l == level || zc_simd_set(l) != 0) continue;
    zcclResult_t r2 = zc_hop(op, a, an, b, bn, o2, cap, &n2);
    if (r2 != r || (r == zcclSuccess && (n1 != n2 || memcmp(o1, o2, n1) != 0))) abort();
  }
  zc_simd_set(level);
  free(o1);
  free(o2);
  return 0;
}
