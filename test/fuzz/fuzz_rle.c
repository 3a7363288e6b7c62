/* Fuzz target: the RLE decoder and its reductions on arbitrary bytes
 * (first byte: op; then the stream). An error or a result, never a crash;
 * the merged result of a stream with itself decodes to the plain op. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zc_rle.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const zcclRedOp_t ops[4] = {zcclSum, zcclProd, zcclMax, zcclMin};
  zcclRedOp_t op = ops[data[0] % 4];
  data++;
  size--;
  zc_rle_header_t h;
  if (zc_rle_header_read(data, size, &h) != zcclSuccess || h.count > (1u << 20)) return 0;
  size_t esize = h.dtype == zcclFloat32 ? 4 : 8, n = (size_t)h.count, got = 0, rn = 0;
  uint8_t* y = malloc(n * esize + 1);
  uint8_t* z = calloc(n + 1, esize);
  size_t cap = zc_rle_bound(n, h.dtype);
  uint8_t* r = malloc(cap);
  zcclResult_t d = zc_rle_decode(data, size, y, n, &got);
  if (d != zcclSuccess && d != zcclInvalidArgument) abort();
  zcclResult_t p = zc_rle_reduce_plain(op, data, size, z, z);
  if (p != d) abort(); /* the same stream is valid for both or neither */
  zcclResult_t m = zc_rle_reduce_rle(op, data, size, data, size, r, cap, &rn);
  if (m != d || (m == zcclSuccess && rn > cap)) abort();
  if (m == zcclSuccess) { /* decode(op(s, s)) == op(x, x), x = decode(s); NaN matches any NaN */
    size_t rc = 0;
    if (zc_rle_decode(r, rn, z, n, &rc) != zcclSuccess || rc != n) abort();
    if (zc_rle_reduce_plain(op, data, size, y, y) != zcclSuccess) abort();
    for (size_t i = 0; i < n; i++) {
      double u = esize == 4 ? ((float*)y)[i] : ((double*)y)[i], v = esize == 4 ? ((float*)z)[i] : ((double*)z)[i];
      if (!(u == v || (isnan(u) && isnan(v)))) abort();
    }
  }
  free(y);
  free(z);
  free(r);
  return 0;
}
