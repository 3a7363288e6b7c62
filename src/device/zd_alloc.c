/* The first-fit allocator (zd_alloc.h), and the device's buffer pool on
 * it: ZCCL_BUFFER_POOL_BYTES of the kind's memory, made once (zd_buf_*),
 * and the staging pool's memory (zd_staging.c). */
#include "zd_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zd_dev_impl.h"
#include "zu_error.h"
#include "zu_param.h"

/* ---- the allocator over a plain range ------------------------------------ */

void zd_alloc_init(zd_alloc_t* a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->lock, NULL);
}

void zd_alloc_fini(zd_alloc_t* a) {
  free(a->segs);
  a->segs = NULL;
  a->nsegs = a->cap = 0;
  pthread_mutex_destroy(&a->lock);
}

/* Lock held: the bookkeeping first, so that a range made is never lost. */
static zcclResult_t zd_alloc_provide_locked(zd_alloc_t* a, zd_alloc_mem_fn mem, void* ctx) {
  a->cap = 64;
  a->segs = malloc((size_t)a->cap * sizeof *a->segs);
  ZU_RETURN_ERR_IF(a->segs == NULL, zcclSystemError, "cannot allocate the buffer pool's bookkeeping");
  void* base = NULL;
  size_t size = 0;
  zcclResult_t res = mem(ctx, &base, &size);
  if (res != zcclSuccess) {
    free(a->segs);
    a->segs = NULL;
    return res;
  }
  a->base = base;
  a->size = size;
  a->segs[0] = (zd_seg_t){0, size, 0};
  a->nsegs = 1;
  return zcclSuccess;
}

zcclResult_t zd_alloc_provide(zd_alloc_t* a, zd_alloc_mem_fn mem, void* ctx) {
  if (atomic_load(&a->ready)) return zcclSuccess;
  pthread_mutex_lock(&a->lock);
  zcclResult_t res = a->base == NULL ? zd_alloc_provide_locked(a, mem, ctx) : zcclSuccess;
  if (res == zcclSuccess) atomic_store(&a->ready, 1);
  pthread_mutex_unlock(&a->lock);
  return res;
}

static size_t zd_alloc_largest_locked(const zd_alloc_t* a) {
  size_t best = 0;
  for (int i = 0; i < a->nsegs; i++)
    if (!a->segs[i].used && a->segs[i].len > best) best = a->segs[i].len;
  return best;
}

/* Lock held: cuts need bytes off the front of free segment i, the rest
 * staying free right after. The segment array grows only when more pieces
 * are out than ever before. */
static zcclResult_t zd_alloc_split(zd_alloc_t* a, int i, size_t need) {
  if (a->nsegs == a->cap) {
    zd_seg_t* grown = realloc(a->segs, (size_t)a->cap * 2 * sizeof *grown);
    ZU_RETURN_ERR_IF(grown == NULL, zcclSystemError, "zd_buf_get: out of memory for pool bookkeeping");
    a->segs = grown;
    a->cap *= 2;
  }
  memmove(&a->segs[i + 2], &a->segs[i + 1], (size_t)(a->nsegs - i - 1) * sizeof *a->segs);
  a->segs[i + 1] = (zd_seg_t){a->segs[i].off + need, a->segs[i].len - need, 0};
  a->segs[i].len = need;
  a->nsegs++;
  return zcclSuccess;
}

zcclResult_t zd_alloc_get(zd_alloc_t* a, size_t bytes, void** buf) {
  *buf = NULL;
  size_t need = bytes == 0 ? ZD_ALIGN : (bytes + ZD_ALIGN - 1) & ~(size_t)(ZD_ALIGN - 1);
  if (need < bytes) need = SIZE_MAX; /* rounding overflowed: too large for any range */
  zcclResult_t res = zcclSuccess;
  pthread_mutex_lock(&a->lock);
  int i = 0;
  while (i < a->nsegs && (a->segs[i].used || a->segs[i].len < need)) i++;
  if (i < a->nsegs && a->segs[i].len > need) res = zd_alloc_split(a, i, need);
  if (i < a->nsegs && res == zcclSuccess) {
    a->segs[i].used = 1;
    *buf = a->base + a->segs[i].off;
  }
  pthread_mutex_unlock(&a->lock);
  return res;
}

/* Lock held: the segment that starts at buf, or -1. Binary search by
 * offset; addresses compared as integers, since buf may not point into the
 * range at all. */
static int zd_alloc_find(const zd_alloc_t* a, const void* buf) {
  uintptr_t at = (uintptr_t)buf, base = (uintptr_t)a->base;
  if (a->base == NULL || at < base || at >= base + a->size) return -1;
  size_t off = at - base;
  int lo = 0, hi = a->nsegs - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (a->segs[mid].off == off) return mid;
    if (a->segs[mid].off < off)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* Lock held: segment i into segment i - 1 (both free). */
static void zd_alloc_merge(zd_alloc_t* a, int i) {
  a->segs[i - 1].len += a->segs[i].len;
  memmove(&a->segs[i], &a->segs[i + 1], (size_t)(a->nsegs - i - 1) * sizeof *a->segs);
  a->nsegs--;
}

int zd_alloc_put(zd_alloc_t* a, void* buf) {
  pthread_mutex_lock(&a->lock);
  int i = zd_alloc_find(a, buf);
  if (i < 0 || !a->segs[i].used) {
    pthread_mutex_unlock(&a->lock);
    return 0;
  }
  a->segs[i].used = 0;
  /* Merge with free neighbours so first fit sees whole holes. */
  if (i + 1 < a->nsegs && !a->segs[i + 1].used) zd_alloc_merge(a, i + 1);
  if (i > 0 && !a->segs[i - 1].used) zd_alloc_merge(a, i);
  pthread_mutex_unlock(&a->lock);
  return 1;
}

int zd_alloc_largest(zd_alloc_t* a, size_t* largest) {
  pthread_mutex_lock(&a->lock);
  int has = a->base != NULL;
  if (has) *largest = zd_alloc_largest_locked(a);
  pthread_mutex_unlock(&a->lock);
  return has;
}

int zd_alloc_outstanding(zd_alloc_t* a) {
  pthread_mutex_lock(&a->lock);
  int n = 0;
  for (int i = 0; i < a->nsegs; i++) n += a->segs[i].used;
  pthread_mutex_unlock(&a->lock);
  return n;
}

/* ---- the device's pools ---------------------------------------------------- */

typedef struct {
  zd_dev_t* dev;
  int staging;
} zd_bufpool_mem_t;

/* zd_alloc_mem_fn of a device's pool: ZCCL_BUFFER_POOL_BYTES of the kind's
 * memory (device memory for cuda) or, for the staging pool, host memory
 * the transport can reach (pinned for cuda); aligned_alloc without an
 * allocator of the kind's. */
static zcclResult_t zd_bufpool_mem(void* ctx, void** mem, size_t* size) {
  const zd_bufpool_mem_t* m = ctx;
  int64_t bytes = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_BUFFER_POOL_BYTES, &bytes));
  ZU_RETURN_ERR_IF(bytes < ZD_ALIGN, zcclInvalidArgument, "ZCCL_BUFFER_POOL_BYTES=%lld: at least %d bytes",
                   (long long)bytes, ZD_ALIGN);
  *size = (size_t)bytes & ~(size_t)(ZD_ALIGN - 1);
  const zd_ops_t* ops = m->dev->ops;
  zcclResult_t (*alloc)(zd_dev_t*, size_t, void**) = m->staging ? ops->host_alloc : ops->pool_alloc;
  if (alloc) {
    ZU_CHECK(alloc(m->dev, *size, mem));
  } else {
    *mem = aligned_alloc(ZD_ALIGN, *size);
    ZU_RETURN_ERR_IF(*mem == NULL, zcclSystemError, "cannot allocate the buffer pool (ZCCL_BUFFER_POOL_BYTES=%zu)",
                     *size);
  }
  ZU_INFO(ZU_LOG_DEVICE, "%s of %zu bytes", m->staging ? "staging pool" : "buffer pool", *size);
  return zcclSuccess;
}

zcclResult_t zd_bufpool_make(zd_dev_t* dev, zd_alloc_t* a, int staging) {
  zd_bufpool_mem_t m = {dev, staging};
  return zd_alloc_provide(a, zd_bufpool_mem, &m);
}

/* One pool's memory to its allocator (the kind's, or free). */
static void zd_bufpool_free(zd_dev_t* dev, zd_alloc_t* a, void (*release)(zd_dev_t*, void*)) {
  if (a->base != NULL) {
    if (release)
      release(dev, a->base);
    else
      free(a->base);
  }
  zd_alloc_fini(a);
}

void zd_bufpools_free(zd_dev_t* dev) {
  int outstanding = zd_alloc_outstanding(&dev->bufs);
  if (outstanding)
    ZU_WARN("zd_dev_destroy: %d buffer pool piece(s) still out; freeing the pool anyway", outstanding);
  zd_bufpool_free(dev, &dev->bufs, dev->ops->pool_free);
  zd_bufpool_free(dev, &dev->stage, dev->ops->host_free);
}

zcclResult_t zd_buf_get(zd_dev_t* dev, size_t bytes, void** buf) {
  ZU_RETURN_ERR_IF(dev == NULL || buf == NULL, zcclInvalidArgument, "zd_buf_get: NULL argument");
  *buf = NULL;
  ZU_CHECK(zd_bufpool_make(dev, &dev->bufs, 0));
  ZU_CHECK(zd_alloc_get(&dev->bufs, bytes, buf));
  if (*buf != NULL) return zcclSuccess;
  size_t largest = 0;
  zd_alloc_largest(&dev->bufs, &largest);
  return ZU_ERROR(zcclInvalidUsage,
                  "zd_buf_get: %zu bytes requested, the largest free piece is %zu of ZCCL_BUFFER_POOL_BYTES=%zu; "
                  "split the work or raise ZCCL_BUFFER_POOL_BYTES",
                  bytes, largest, dev->bufs.size);
}

void zd_buf_put(zd_dev_t* dev, void* buf) {
  if (dev == NULL || buf == NULL) return;
  if (!zd_alloc_put(&dev->bufs, buf))
    ZU_ERROR(zcclInvalidUsage, "zd_buf_put: %p is not a piece of this device's buffer pool that is out", buf);
}

size_t zd_buf_largest(zd_dev_t* dev) {
  if (dev == NULL) return 0;
  size_t largest = 0;
  if (zd_alloc_largest(&dev->bufs, &largest)) return largest;
  /* Before the first get: the whole pool it will make. */
  int64_t bytes = 0;
  if (zu_param_int(ZU_PARAM_BUFFER_POOL_BYTES, &bytes) == zcclSuccess && bytes >= ZD_ALIGN)
    largest = (size_t)bytes & ~(size_t)(ZD_ALIGN - 1);
  return largest;
}
