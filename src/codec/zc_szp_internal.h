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

void zc_emit_begin(zc_emit_t* e, uint8_t* out, size_t cap, zcclDataType_t dtype, int has_fill);
/* 0; -1 when out is too small; -2 when a delta is out of range. */
int zc_emit_block(zc_emit_t* e, const zc_ivals_t* v, int nvalid);
/* Writes the base; returns the chunk's bytes. */
size_t zc_emit_end(zc_emit_t* e);
/* The error for zc_emit_block's rc, what naming the caller. */
zcclResult_t zc_emit_error(int rc, const char* what);

/* 0, or -1 when the chunk is too short for its base. */
int zc_parse_begin(zc_parse_t* p, const uint8_t* chunk, size_t size, size_t nvalues, zcclDataType_t dtype,
                   int has_fill);
/* 0 and the next block (nvalid values), or -1 when malformed. */
int zc_parse_block(zc_parse_t* p, zc_ivals_t* v, int* nvalid);

/* Decodes chunk c of a validated stream into out (the whole output array). */
zcclResult_t zc_chunk_decode_values(const zc_header_t* h, uint32_t c, const uint8_t* chunk, size_t bytes,
                                    void* out);

#endif /* ZC_SZP_INTERNAL_H_ */
