/* The error-bounded stream codec (docs/format.md): compress, decompress,
 * inspect and reduce streams of float32/float64. Host implementation; the
 * per-block functions it uses are shared with CUDA (zc_szp_block.h). */
#ifndef ZC_SZP_H_
#define ZC_SZP_H_

#include <stddef.h>
#include <stdint.h>

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZC_HEADER_BYTES 40
#define ZC_CHUNK_LOG2_MIN 5
#define ZC_CHUNK_LOG2_MAX 16
#define ZC_CHUNK_LOG2_DEFAULT 12 /* 4096 values */
/* Header flag bits (docs/format.md): a fill value is declared; every chunk
 * ends with a checksum. */
#define ZC_FLAG_FILL 0x01u
#define ZC_FLAG_CHECKSUM 0x02u
#define ZC_CHUNK_SUM_BYTES 4

typedef struct {
  zcclDataType_t dtype;  /* zcclFloat32 or zcclFloat64 */
  double eb;             /* absolute bound, finite and > 0 */
  int has_fill;          /* values equal to fill are kept exactly */
  double fill;
  unsigned chunk_log2;   /* 0: default */
  int checksum;          /* 1: every chunk ends with its checksum (docs/format.md) */
} zc_params_t;

/* A parsed, validated header (and where the chunks are). */
typedef struct {
  zcclDataType_t dtype;
  uint64_t count;
  double eb;
  int has_fill;
  double fill;
  unsigned chunk_log2;
  uint32_t nchunks;
  uint32_t divisor;
  int checksum;          /* every chunk ends with ZC_CHUNK_SUM_BYTES of checksum */
  uint64_t seed;         /* the chunks' checksum seed: the header's hash */
  size_t stream_bytes;   /* header + index + chunks */
  const uint8_t* index;  /* nchunks little-endian u32 chunk sizes */
  const uint8_t* chunks; /* first chunk */
} zc_header_t;

/* Called between chunks (ZCCL's overlap: drive communication while the codec
 * works); done = chunks finished so far. */
typedef void (*zc_progress_fn)(void* arg, uint32_t done, uint32_t total);

/* Largest stream compress can produce for count values. */
size_t zc_compress_bound(size_t count, zcclDataType_t dtype, unsigned chunk_log2);

/* Largest bytes chunks [c0, c1) of a stream of count values can take: their
 * share of zc_compress_bound (without header and index), so that the shares
 * of consecutive ranges add up to at most the whole bound less the header
 * and index. Also bounds a homomorphic result's chunks. */
size_t zc_chunks_bound(size_t count, zcclDataType_t dtype, unsigned chunk_log2, uint32_t c0, uint32_t c1);

/* Compresses count values into out (capacity cap); *size receives the
 * stream's bytes. zcclInvalidArgument for bad parameters or a too small out. */
zcclResult_t zc_compress(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                         size_t* size, zc_progress_fn progress, void* arg);

/* Validates the header, the index and the total size (chunk checksums are
 * verified chunk by chunk where chunks are decoded or reduced). */
zcclResult_t zc_header_read(const void* stream, size_t size, zc_header_t* h);

/* Decompresses into out (room for cap values); *count receives the values
 * written. Every corruption is zcclInvalidArgument with a message. */
zcclResult_t zc_decompress(const void* stream, size_t size, void* out, size_t cap, size_t* count,
                           zc_progress_fn progress, void* arg);

/* Homomorphic SUM, MAX or MIN of two compatible streams into out. out may
 * be a or b itself (in place; cap is then out's capacity), not any other
 * overlap. */
zcclResult_t zc_hop(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                    size_t cap, size_t* size);

/* zc_hop(op, A, b) for A = zc_compress(p, in, count), byte for byte,
 * without writing A: one pass that quantizes the values and combines them
 * with b (the homomorphic ring's step). b must be compatible with A (same
 * dtype, count, eb, chunk size, fill; divisor 1). out may be b itself (in
 * place; cap is then out's capacity), not any other overlap. */
zcclResult_t zc_hop_values(zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count, const void* b,
                           size_t b_size, void* out, size_t cap, size_t* size);

/* Chunk-range entry points, for callers that spread chunks over threads
 * (src/device/zd_host_codec.c) or pipeline them. A stream is: the header
 * and index (zc_compress_begin / zc_hop_begin write the header; the index
 * holds one u32 per chunk), then the chunks back to back. The _chunks calls
 * do chunks [c0, c1): they write the chunks' bytes at out (capacity cap),
 * their sizes at index (u32 little-endian, index[0] for chunk c0) and the
 * total at *bytes. Each chunk is independent, so ranges run in parallel. */
zcclResult_t zc_compress_begin(const zc_params_t* p, size_t count, void* out, size_t cap, size_t* head);
zcclResult_t zc_compress_chunks(const zc_params_t* p, const void* in, size_t count, uint32_t c0, uint32_t c1,
                                void* out, size_t cap, uint8_t* index, size_t* bytes, zc_progress_fn progress,
                                void* arg);
/* Validates a stream and the output's room for it (what zc_decompress
 * checks before it starts). */
zcclResult_t zc_decompress_begin(const void* stream, size_t size, const void* out, size_t cap, const size_t* count,
                                 zc_header_t* h);
/* Decompresses chunks [c0, c1) of a validated stream; chunk points at chunk
 * c0's bytes (zc_chunk_ptr), out is the whole output array. */
zcclResult_t zc_decompress_chunks(const zc_header_t* h, uint32_t c0, uint32_t c1, const uint8_t* chunk, void* out,
                                  zc_progress_fn progress, void* arg);
const uint8_t* zc_chunk_ptr(const zc_header_t* h, uint32_t c);
/* Validates a and b and their compatibility, writes out's header. */
zcclResult_t zc_hop_begin(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                          size_t cap, zc_header_t* ha, zc_header_t* hb, size_t* head);
zcclResult_t zc_hop_chunks(zcclRedOp_t op, const zc_header_t* ha, const zc_header_t* hb, uint32_t c0, uint32_t c1,
                           const uint8_t* ca, const uint8_t* cb, void* out, size_t cap, uint8_t* index,
                           size_t* bytes);

/* Validates the arguments of zc_hop_values and b's compatibility; writes
 * out's header and gives the values' header (h) and b's. */
zcclResult_t zc_hop_values_begin(zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count, const void* b,
                                 size_t b_size, void* out, size_t cap, zc_header_t* h, zc_header_t* hb,
                                 size_t* head);
/* Chunks [c0, c1): in is the whole value array, cb chunk c0's bytes in b;
 * progress as zc_compress_chunks. */
zcclResult_t zc_hop_values_chunks(zcclRedOp_t op, const zc_header_t* h, const zc_header_t* hb, uint32_t c0,
                                  uint32_t c1, const void* in, const uint8_t* cb, void* out, size_t cap,
                                  uint8_t* index, size_t* bytes, zc_progress_fn progress, void* arg);

/* Sets the divisor decoded values are divided by (AVG: a SUM of N streams,
 * divisor N), in place. The checksums cover the header: on a checksummed
 * stream every chunk's is verified, then written anew. */
zcclResult_t zc_set_divisor(void* stream, size_t size, uint32_t divisor);

/* Range of the values that are finite and not the fill value; *valid is the
 * number of those (min/max untouched when 0). For REL bounds. */
void zc_value_range(const void* in, size_t count, zcclDataType_t dtype, int has_fill, double fill,
                    double* min, double* max, size_t* valid);

/* The integer view of a stream, for tests and tools: q[i] the integer track,
 * kind[i] 0 ordinary, 1 exception (raw[i] its value), 2 fill. */
enum { ZC_KIND_ORDINARY = 0, ZC_KIND_EXCEPTION = 1, ZC_KIND_FILL = 2 };
zcclResult_t zc_decode_ints(const void* stream, size_t size, int64_t* q, uint8_t* kind, double* raw);
/* Encodes an integer view (as zc_decode_ints gives) with header fields from
 * h (dtype, count, eb, fill, chunk_log2, divisor): the canonical stream. */
zcclResult_t zc_encode_ints(const zc_header_t* h, const int64_t* q, const uint8_t* kind, const double* raw,
                            void* out, size_t cap, size_t* size);

#ifdef __cplusplus
}
#endif

#endif /* ZC_SZP_H_ */
