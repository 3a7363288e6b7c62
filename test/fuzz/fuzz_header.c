/* Fuzz target: the stream header and index (issue 35's sizes from untrusted
 * bytes). Whatever the bytes, a header the host accepts has a count its
 * chunks hold (no wrap near 2^64), a size that adds up, and the CUDA
 * kernels' check (zd_header_parse) agrees on its fields; sizes derived
 * from it (zc_compress_bound) never wrap below what it needs. Small
 * accepted streams also go through decompression, the integer view and a
 * homomorphic sum with themselves: an error or a result, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zc_szp.h"
#include "zd_cuda_codec_blocks.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zc_header_t h;
  zd_hdr_t d;
  memset(&d, 0, sizeof d);
  int cuda_ok = zd_header_parse(data, size, &d) == 0;
  if (zc_header_read(data, size, &h) != zcclSuccess) return 0;
  /* The chunks hold the count: (nchunks - 1) * 2^k < count <= nchunks * 2^k. */
  uint64_t cap = (uint64_t)h.nchunks << h.chunk_log2;
  if (h.count > cap) abort();
  if (h.nchunks > 0 && h.count <= cap - ((uint64_t)1 << h.chunk_log2)) abort();
  if (h.nchunks == 0 && h.count != 0) abort();
  if (h.stream_bytes != size) abort();
  if (size < ZC_HEADER_BYTES + (uint64_t)h.nchunks * (4 + 8 + (h.checksum ? ZC_CHUNK_SUM_BYTES : 0))) abort();
  /* The kernels read the header the same way, the checksums' seed too. */
  if (!cuda_ok || d.count != h.count || d.nchunks != h.nchunks || d.chunk_log2 != h.chunk_log2 ||
      d.checksum != h.checksum || d.seed != h.seed)
    abort();
  size_t bound = zc_compress_bound((size_t)h.count, h.dtype, h.chunk_log2);
  if (bound < ZC_HEADER_BYTES + (size_t)h.nchunks * 4) abort();
  if (h.count > (1u << 16)) return 0; /* keep the allocations small */
  size_t esize = h.dtype == zcclFloat32 ? 4 : 8, n = (size_t)h.count, got = 0;
  uint8_t* y = malloc(n * esize + 1);
  zcclResult_t r = zc_decompress(data, size, y, n, &got, NULL, NULL);
  if (r != zcclSuccess && r != zcclInvalidArgument) abort();
  if (r == zcclSuccess && got != n) abort();
  int64_t* q = malloc(n * 8 + 8);
  uint8_t* kind = malloc(n + 1);
  double* raw = malloc(n * 8 + 8);
  zcclResult_t ri = zc_decode_ints(data, size, q, kind, raw);
  if (ri != r) abort(); /* the same checks decide both */
  uint8_t* o = malloc(bound);
  size_t on = 0;
  zcclResult_t rh = zc_hop(zcclMax, data, size, data, size, o, bound, &on);
  if (rh != zcclSuccess && rh != zcclInvalidArgument && rh != zcclInvalidUsage) abort();
  if (rh == zcclSuccess && r != zcclSuccess) abort(); /* a hop takes no stream decoding refuses */
  free(y);
  free(q);
  free(kind);
  free(raw);
  free(o);
  return 0;
}
