/* The stream codec on the host's threads: chunks are independent, so ranges
 * of them go to the pool's threads. The streams are byte for byte those of
 * the single-threaded zc_compress / zc_hop, whatever the thread count. */
#ifndef ZD_HOST_CODEC_H_
#define ZD_HOST_CODEC_H_

#include "zc_szp.h"
#include "zd_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nthreads <= 0: every thread of the pool; pool NULL: the calling thread. */
zcclResult_t zd_host_compress(zd_pool_t* pool, int nthreads, const zc_params_t* p, const void* in, size_t count,
                              void* out, size_t cap, size_t* size);
zcclResult_t zd_host_decompress(zd_pool_t* pool, int nthreads, const void* stream, size_t size, void* out,
                                size_t cap, size_t* count);
/* A buffer kept across calls: the in-place hops build their result there
 * and copy it over the input, so a hop in place does not map and fault
 * fresh pages on every call (a ring step's is megabytes). Grown to what a
 * call needs; one call at a time; zd_scratch_free releases it. */
typedef struct {
  void* p;
  size_t bytes;
} zd_scratch_t;
void zd_scratch_free(zd_scratch_t* s);

/* zc_hop over the pool's threads; in place (out == a or b) through aside
 * (NULL: a buffer of cap bytes for this call alone). */
zcclResult_t zd_host_hop(zd_pool_t* pool, int nthreads, zd_scratch_t* aside, zcclRedOp_t op, const void* a,
                         size_t a_size, const void* b, size_t b_size, void* out, size_t cap, size_t* size);

/* zc_hop_values over the pool's threads; in place (out == b) as zd_host_hop. */
zcclResult_t zd_host_hop_values(zd_pool_t* pool, int nthreads, zd_scratch_t* aside, zcclRedOp_t op,
                                const zc_params_t* p, const void* in, size_t count, const void* b, size_t b_size,
                                void* out, size_t cap, size_t* size);
/* This thread's hook, called between chunks while a compression or
 * decompression runs on this thread (NULL: none). */
void zd_host_set_progress(void (*fn)(void*), void* arg);

/* Batches one thread took from another's range in encodings so far, all
 * threads together (tests check that stealing is exercised). */
unsigned long zd_host_stolen_batches(void);

#ifdef __cplusplus
}
#endif

#endif /* ZD_HOST_CODEC_H_ */
