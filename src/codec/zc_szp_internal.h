/* Internals shared by the host codec's files (zc_szp.c, zc_hz.c). */
#ifndef ZC_SZP_INTERNAL_H_
#define ZC_SZP_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_szp.h"
#include "zc_szp_block.h"

/* One block's integer view: integer track, kind, raw value of exceptions. */
typedef struct {
  int64_t q[ZC_BLOCK];
  uint8_t kind[ZC_BLOCK];
  double raw[ZC_BLOCK];
} zc_ivals_t;

/* Writes one chunk block by block from integer views (canonical deltas). */
typedef struct {
  uint8_t* out;
  size_t cap, o, esize;
  int has_fill, have_prev;
  int64_t prev, base;
} zc_emit_t;

/* Reads one chunk block by block into integer views. */
typedef struct {
  const uint8_t* in;
  size_t size, o, left, esize;
  int has_fill;
  int64_t q;
} zc_parse_t;

size_t zc_dtype_bytes(zcclDataType_t dtype);

/* Return codes of the chunk and block kernels. */
enum { ZC_RC_OK = 0, ZC_RC_SPACE = -1, ZC_RC_RANGE = -2, ZC_RC_MALFORMED = -3 };

void zc_emit_begin(zc_emit_t* e, uint8_t* out, size_t cap, zcclDataType_t dtype, int has_fill);
/* ZC_RC_OK, ZC_RC_SPACE (out too small) or ZC_RC_RANGE (a delta too wide). */
int zc_emit_block(zc_emit_t* e, const zc_ivals_t* v, int nvalid);
/* Writes the base; returns the chunk's bytes. */
size_t zc_emit_end(zc_emit_t* e);
/* The error for zc_emit_block's rc, what naming the caller. */
zcclResult_t zc_emit_error(int rc, const char* what);

/* Chunk checksums (docs/format.md, header flag ZC_FLAG_CHECKSUM): the seed
 * is the hash of the 40 header bytes, so a changed header field fails
 * every chunk; chunk c's checksum is XXH3-64 of its bytes before the
 * checksum, seeded with seed + c, low 32 bits. */
uint64_t zc_header_seed(const uint8_t* header);
uint32_t zc_chunk_sum(const uint8_t* chunk, size_t n, uint64_t seed, uint32_t c);
/* Chunk c of a validated stream (bytes from its index entry): the bytes
 * before its checksum into *payload, and whether its checksum matches
 * (always on a stream without). Error names the chunk and what. */
zcclResult_t zc_chunk_verify(const zc_header_t* h, uint32_t c, const uint8_t* chunk, uint32_t bytes,
                             uint32_t* payload, const char* what);
/* Appends chunk c's checksum after its n bytes at chunk when seed_on;
 * returns the bytes with it, 0 when cap (room from chunk) is too small. */
size_t zc_chunk_seal(uint8_t* chunk, size_t n, size_t cap, int seed_on, uint64_t seed, uint32_t c);

/* 0, or -1 when the chunk is too short for its base. */
int zc_parse_begin(zc_parse_t* p, const uint8_t* chunk, size_t size, size_t nvalues, zcclDataType_t dtype,
                   int has_fill);
/* 0 and the next block (nvalid values), or -1 when malformed. */
int zc_parse_block(zc_parse_t* p, zc_ivals_t* v, int* nvalid);

/* One block's n values (n <= ZC_BLOCK) as compression sees them: fill,
 * exception (raw kept) or ordinary (quantized). */
void zc_classify(const void* in, int n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill, double fill,
                 zc_ivals_t* v);

/* Chunk kernels: compress n values into an emitter (0 or an emit rc). */
typedef int (*zc_chunk_compress_fn)(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g,
                                    int has_fill, double fill, zc_emit_t* e);
int zc_chunk_compress_scalar(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                             double fill, zc_emit_t* e);
int zc_chunk_compress_avx2(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                           double fill, zc_emit_t* e);
int zc_chunk_compress_gfni(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                           double fill, zc_emit_t* e);
int zc_chunk_compress_avx512(const void* in, size_t n, zcclDataType_t dtype, const zc_grid_t* g, int has_fill,
                           double fill, zc_emit_t* e);

/* Chunk kernels: decompress a chunk of n values into out; 0, or -1 when
 * malformed. */
typedef int (*zc_chunk_decompress_fn)(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk,
                                      size_t bytes, size_t n, void* out);
int zc_chunk_decompress_scalar(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                               size_t n, void* out);
int zc_chunk_decompress_avx2(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                             size_t n, void* out);
int zc_chunk_decompress_gfni(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                             size_t n, void* out);
int zc_chunk_decompress_avx512(const zc_header_t* h, const zc_grid_t* g, const uint8_t* chunk, size_t bytes,
                             size_t n, void* out);
/* Parses the next block and writes its values at out; the values written,
 * or -1. */
int zc_parse_block_values(zc_parse_t* p, const zc_header_t* h, const zc_grid_t* g, void* out);

/* Homomorphic op of two chunks (parsers positioned after their bases) into
 * an emitter; a ZC_RC_ code. The block version does one block pair. */
typedef int (*zc_chunk_hop_fn)(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa,
                               zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa,
                        zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_avx2(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                      zc_emit_t* e);
int zc_chunk_hop_gfni(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                      zc_emit_t* e);
int zc_chunk_hop_avx512(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                      zc_emit_t* e);
/* Homomorphic op of n values (compressed as h says: dtype, grid, fill) and
 * a chunk (parser positioned after its base) into an emitter: the bytes the
 * chunk hop writes for the values' compressed chunk and that one, without
 * encoding the values (zc_hop_values). A ZC_RC_ code. */
typedef int (*zc_chunk_hop_values_fn)(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in,
                                      size_t n, zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_values_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, size_t n,
                               zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_values_avx2(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, size_t n,
                             zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_values_gfni(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, size_t n,
                             zc_parse_t* pb, zc_emit_t* e);
int zc_chunk_hop_values_avx512(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, size_t n,
                               zc_parse_t* pb, zc_emit_t* e);
/* One block of it (nv values), on the scalar path. */
int zc_hop_values_block_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, int nv,
                               zc_parse_t* pb, zc_emit_t* e);
int zc_hop_block_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                        zc_emit_t* e);

/* Range kernels: min and max of ZC_RANGE_BLOCK values at x folded into
 * lo[8] and hi[8] (lanes), or 0, leaving them, when any value is
 * non-finite or has the bits fb or fb2 (the fill, both signs of a zero
 * fill); the caller then takes that block value by value. */
#define ZC_RANGE_BLOCK 1024
typedef int (*zc_range_f32_fn)(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]);
typedef int (*zc_range_f64_fn)(const double* x, uint64_t fb, uint64_t fb2, double lo[8], double hi[8]);
int zc_range_f32_sse2(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]);
int zc_range_f32_avx2(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]);
int zc_range_f32_gfni(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]);
int zc_range_f32_avx512(const float* x, uint32_t fb, uint32_t fb2, float lo[8], float hi[8]);
int zc_range_f64_avx2(const double* x, uint64_t fb, uint64_t fb2, double lo[8], double hi[8]);
int zc_range_f64_gfni(const double* x, uint64_t fb, uint64_t fb2, double lo[8], double hi[8]);
int zc_range_f64_avx512(const double* x, uint64_t fb, uint64_t fb2, double lo[8], double hi[8]);

/* The kernels in use, one table per instruction set (STYLE: one table per
 * plug-in point); all write identical bytes. */
typedef struct {
  const char* name;
  zc_chunk_compress_fn compress_f32, compress_f64;
  zc_chunk_decompress_fn decompress;
  zc_chunk_hop_fn hop;
  zc_chunk_hop_values_fn hop_values;
  zc_range_f32_fn range_f32; /* NULL: value by value */
  zc_range_f64_fn range_f64;
} zc_kernels_t;

const zc_kernels_t* zc_kernels(void);

/* The stream format's zc_codec_ops_t entries (zc_szp.c), which hz's
 * table shares (zc_hz.c). */
size_t zc_szp_bound(const zc_params_t* p, size_t count);
zcclResult_t zc_szp_encode(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap, size_t* size);
zcclResult_t zc_szp_decode(const void* stream, size_t size, void* out, size_t cap, size_t* count);

#endif /* ZC_SZP_INTERNAL_H_ */
