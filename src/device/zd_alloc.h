/* First-fit allocator over one memory range, in pieces whose start and
 * size are multiples of ZD_ALIGN. The bookkeeping is host memory kept
 * outside the range (a CUDA pool's memory is not host-addressable), so the
 * allocator never touches the range itself: it knows nothing of devices,
 * and a test can give it any address range. The device's buffer and
 * staging pools (zd_buf_*, zd_stage_*) are two of these. Thread-safe. */
#ifndef ZD_ALLOC_H_
#define ZD_ALLOC_H_

#include <pthread.h>
#include <stddef.h>

#include "zccl.h"

/* A C11 atomic int in the device structs; the CUDA sources (C++) include
 * them too and never touch these fields: same size and alignment. */
#ifdef __cplusplus
#include <atomic>
typedef std::atomic<int> zd_atomic_int;
#else
#include <stdatomic.h>
typedef atomic_int zd_atomic_int;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ZD_ALIGN 64

typedef struct {
  size_t off, len;
  int used;
} zd_seg_t;

/* Segments sorted by offset, free neighbours always merged. */
typedef struct {
  pthread_mutex_t lock;
  char* base;       /* NULL until zd_alloc_provide */
  zd_atomic_int ready; /* base is set: zd_alloc_provide returns without the lock */
  size_t size;
  zd_seg_t* segs;
  int nsegs, cap;
} zd_alloc_t;

/* An allocator without memory (every get finds no room). */
void zd_alloc_init(zd_alloc_t* a);
/* Frees the bookkeeping; the range stays its owner's to free. */
void zd_alloc_fini(zd_alloc_t* a);

/* Makes the range of an allocator that has none: *mem, and *size (a
 * multiple of ZD_ALIGN, at least ZD_ALIGN), or an error. */
typedef zcclResult_t (*zd_alloc_mem_fn)(void* ctx, void** mem, size_t* size);
/* Gives a its range from mem(ctx), unless it has one: mem runs under a's
 * lock, so once however many threads ask at the same time. */
zcclResult_t zd_alloc_provide(zd_alloc_t* a, zd_alloc_mem_fn mem, void* ctx);

/* First fit for bytes (0 gets ZD_ALIGN): *buf the piece, or NULL, without
 * an error, when no free piece is large enough. Fails only when the
 * bookkeeping cannot grow. */
zcclResult_t zd_alloc_get(zd_alloc_t* a, size_t bytes, void** buf);
/* Returns buf's piece; 0 when buf is not a piece of a that is out (a
 * double put, or memory from elsewhere), a unchanged. */
int zd_alloc_put(zd_alloc_t* a, void* buf);
/* The largest free piece in *largest; 0 (and *largest untouched) when a
 * has no range yet. */
int zd_alloc_largest(zd_alloc_t* a, size_t* largest);
/* Pieces out now. */
int zd_alloc_outstanding(zd_alloc_t* a);

#ifdef __cplusplus
}
#endif

#endif /* ZD_ALLOC_H_ */
