/* Run-length coding of zero runs (docs/format.md, "RLE"): lossless except
 * that -0.0 decodes as +0.0, never larger than the input plus a 24-byte
 * header, and reductions on encoded data (the sparse Reduce chain). */
#ifndef ZC_RLE_H_
#define ZC_RLE_H_

#include <stddef.h>
#include <stdint.h>

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZC_RLE_HEADER_BYTES 24

typedef struct {
  zcclDataType_t dtype;
  uint64_t count; /* values */
  uint64_t words; /* encoded words after the header */
} zc_rle_header_t;

/* Header + count values: the most an encoding can take. */
size_t zc_rle_bound(size_t count, zcclDataType_t dtype);
zcclResult_t zc_rle_header_read(const void* stream, size_t size, zc_rle_header_t* h);
zcclResult_t zc_rle_encode(zcclDataType_t dtype, const void* in, size_t count, void* out, size_t cap, size_t* size);
zcclResult_t zc_rle_decode(const void* stream, size_t size, void* out, size_t cap, size_t* count);
/* out[i] = op(plain[i], decoded[i]) for SUM, PROD, MAX, MIN; out may be
 * plain (in place: zero runs are skipped for SUM). */
zcclResult_t zc_rle_reduce_plain(zcclRedOp_t op, const void* stream, size_t size, const void* plain, void* out);
/* The encoded op(a, b) of two encoded vectors, without decoding them. */
zcclResult_t zc_rle_reduce_rle(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                               size_t cap, size_t* size);
/* Fraction of zeros in about `samples` evenly spaced values (0: all): how
 * the cost model decides whether RLE pays. */
double zc_rle_zero_fraction(const void* in, size_t count, zcclDataType_t dtype, size_t samples);

#ifdef __cplusplus
}
#endif

#endif /* ZC_RLE_H_ */
