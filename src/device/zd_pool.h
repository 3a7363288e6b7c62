/* A pool of host threads (the device layer's "host" compute). One job at a
 * time: zd_pool_run calls fn(arg, t, n) on n threads, t = 0 .. n-1, the
 * caller being thread 0, and returns when every call has. Workers sleep on
 * a condition variable between jobs. */
#ifndef ZD_POOL_H_
#define ZD_POOL_H_

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zd_pool zd_pool_t;
typedef void (*zd_pool_fn)(void* arg, int t, int n);

/* nthreads <= 0: the cores available to the process (hwloc). */
zcclResult_t zd_pool_create(int nthreads, zd_pool_t** pool);
void zd_pool_destroy(zd_pool_t* pool);
int zd_pool_size(const zd_pool_t* pool);
/* Runs fn on min(nthreads, pool size) threads (nthreads <= 0: all). Not
 * reentrant: one job per pool at a time. */
void zd_pool_run(zd_pool_t* pool, int nthreads, zd_pool_fn fn, void* arg);

#ifdef __cplusplus
}
#endif

#endif /* ZD_POOL_H_ */
