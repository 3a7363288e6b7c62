/* Fuzz target: homomorphic SUM/MAX/MIN on two streams cut from the input
 * (first byte: op; next 4: length of the first stream). Any bytes: a result
 * or zcclInvalidArgument/zcclInvalidUsage, never a crash; every kernel level
 * writes the same bytes. The fused op on a's values and b gives exactly
 * what compressing them and the hop give. */
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
  /* The fused op on a's values and b: compression then hop's result and
   * bytes, at every level. */
  size_t got = 0, an2 = 0;
  void* v = malloc((size_t)h.count * 8 + 8);
  uint8_t* a2 = malloc(cap);
  zc_params_t p = {h.dtype, h.eb, h.has_fill, h.fill, h.chunk_log2, h.checksum};
  if (zc_decompress(a, an, v, (size_t)h.count, &got, NULL, NULL) == zcclSuccess &&
      zc_compress(&p, v, got, a2, cap, &an2, NULL, NULL) == zcclSuccess) {
    r = zc_hop(op, a2, an2, b, bn, o1, cap, &n1);
    for (int l = 0; l < ZC_SIMD_NUM; l++) {
      if (zc_simd_set(l) != 0) continue;
      zcclResult_t r2 = zc_hop_values(op, &p, v, got, b, bn, o2, cap, &n2);
      if (r2 != r || (r == zcclSuccess && (n1 != n2 || memcmp(o1, o2, n1) != 0))) abort();
    }
    zc_simd_set(level);
  }
  free(v);
  free(a2);
  free(o1);
  free(o2);
  return 0;
}
