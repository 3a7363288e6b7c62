/* The PMIx bootstrap: under a PMIx launcher (mpirun, srun --mpi=pmix) ranks
 * learn who they are from PMIx and exchange addresses through the launcher's
 * key-value store (put, commit, fence with data collection, get). Without a
 * launcher the process is a singleton and never touches PMIx. */
#include <limits.h>
#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zb_bootstrap.h"
#include "zu_error.h"
#include "zu_time.h"

const char* zb_pmix_version(void) { return PMIx_Get_version(); }

int zb_pmix_launched(const char** nspace, int* rank) {
  /* PMIx servers export these to the processes they start. */
  const char* ns = getenv("PMIX_NAMESPACE");
  const char* rk = getenv("PMIX_RANK");
  if (ns == NULL || rk == NULL) return 0;
  if (nspace) *nspace = ns;
  if (rank) *rank = atoi(rk);
  return 1;
}

/* One PMIx client per process, shared by every communicator; the lock keeps
 * the count and the identity consistent across threads. */
static pthread_mutex_t zb_pmix_lock = PTHREAD_MUTEX_INITIALIZER;
static int zb_pmix_refs;
static int zb_pmix_single; /* no launcher: PMIx was not initialised */
static int zb_pmix_rank, zb_pmix_size;
static pmix_proc_t zb_pmix_me;

/* Called with the lock held, when no reference is left. */
static zcclResult_t zb_pmix_start(void) {
  zb_pmix_single = 1;
  zb_pmix_rank = 0;
  zb_pmix_size = 1;
  /* PMIx_Init without a launcher fails in ~15 ms with PMIX_ERR_UNREACH but
   * leaves PMIx initialised; a later singleton MPI_Init then hangs. Asking
   * the environment first avoids both the plug-in loading and that state. */
  if (!zb_pmix_launched(NULL, NULL)) {
    ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx: not started by a PMIx launcher, running as a singleton");
    return zcclSuccess;
  }
  pmix_status_t rc = PMIx_Init(&zb_pmix_me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    /* E.g. a launcher's environment inherited by a process it did not
     * start, its server gone: a singleton, with PMIx put back as it was. */
    if (PMIx_Initialized()) PMIx_Finalize(NULL, 0);
    ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx_Init: %s; running as a singleton", PMIx_Error_string(rc));
    return zcclSuccess;
  }
  /* Job-level data reaches the client at init: a local look-up, no server
   * round trip that could wait. */
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, zb_pmix_me.nspace, PMIX_RANK_WILDCARD);
  bool local = true;
  pmix_info_t info;
  PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &local, PMIX_BOOL);
  pmix_value_t* v = NULL;
  rc = PMIx_Get(&job, PMIX_JOB_SIZE, &info, 1, &v);
  PMIX_INFO_DESTRUCT(&info);
  uint64_t n = 0;
  if (rc == PMIX_SUCCESS) PMIX_VALUE_GET_NUMBER(rc, v, n, uint64_t);
  if (v) PMIX_VALUE_RELEASE(v);
  if (rc != PMIX_SUCCESS || n < 1 || n > INT_MAX || zb_pmix_me.rank >= n) {
    PMIx_Finalize(NULL, 0);
    return ZU_ERROR(zcclSystemError, "PMIx: no usable job size for namespace %s, rank %u (%s, size %llu)",
                    zb_pmix_me.nspace, zb_pmix_me.rank, PMIx_Error_string(rc), (unsigned long long)n);
  }
  zb_pmix_single = 0;
  zb_pmix_rank = (int)zb_pmix_me.rank;
  zb_pmix_size = (int)n;
  ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx %s: rank %d of %d in namespace %s", PMIx_Get_version(), zb_pmix_rank,
          zb_pmix_size, zb_pmix_me.nspace);
  return zcclSuccess;
}

zcclResult_t zb_pmix_init(int* rank, int* size, int* singleton) {
  ZU_RETURN_ERR_IF(!rank || !size || !singleton, zcclInternalError, "zb_pmix_init: NULL output");
  pthread_mutex_lock(&zb_pmix_lock);
  zcclResult_t res = zb_pmix_refs > 0 ? zcclSuccess : zb_pmix_start();
  if (res == zcclSuccess) {
    zb_pmix_refs++;
    *rank = zb_pmix_rank;
    *size = zb_pmix_size;
    *singleton = zb_pmix_single;
  }
  pthread_mutex_unlock(&zb_pmix_lock);
  return res;
}

/* OpenMPI 4.1's server does not take a process back after its PMIx_Finalize:
 * PMIx_Init succeeds again but fences then fail (PARTIAL-SUCCESS, time-out).
 * A process that bootstraps again later should keep a reference meanwhile. */
void zb_pmix_finalize(void) {
  pthread_mutex_lock(&zb_pmix_lock);
  if (zb_pmix_refs > 0 && --zb_pmix_refs == 0 && !zb_pmix_single) {
    pmix_status_t rc = PMIx_Finalize(NULL, 0);
    if (rc != PMIX_SUCCESS) ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx_Finalize: %s", PMIx_Error_string(rc));
  }
  pthread_mutex_unlock(&zb_pmix_lock);
}

/* PMIX_TIMEOUT takes whole seconds and 0 means "wait forever": round up. */
static int zb_pmix_seconds(double timeout) {
  if (timeout >= INT_MAX) return INT_MAX;
  int s = (int)timeout;
  if (s < timeout) s++;
  return s < 1 ? 1 : s;
}

zcclResult_t zb_pmix_allgather(const char* key, const void* blob, size_t len, void* table, double timeout) {
  ZU_RETURN_ERR_IF(key == NULL || key[0] == '\0' || strlen(key) > PMIX_MAX_KEYLEN, zcclInternalError,
                   "PMIx bootstrap: the key must have 1 to %d characters", PMIX_MAX_KEYLEN);
  ZU_RETURN_ERR_IF(len > 0 && (blob == NULL || table == NULL), zcclInternalError,
                   "PMIx bootstrap: NULL buffer for %zu bytes", len);
  ZU_RETURN_ERR_IF(!(timeout > 0), zcclInvalidArgument, "PMIx bootstrap: the timeout (%g s) must be positive",
                   timeout);
  pthread_mutex_lock(&zb_pmix_lock);
  int refs = zb_pmix_refs, single = zb_pmix_single, rank = zb_pmix_rank, size = zb_pmix_size;
  pmix_proc_t me = zb_pmix_me;
  pthread_mutex_unlock(&zb_pmix_lock);
  ZU_RETURN_ERR_IF(refs == 0, zcclInternalError, "zb_pmix_allgather before zb_pmix_init");
  uint8_t* out = table;
  if (single) {
    if (len) memmove(out, blob, len);
    return zcclSuccess;
  }

  double start = zu_now();
  /* PMIx_Put copies the value; the cast only fits pmix_byte_object_t. */
  pmix_value_t val;
  PMIX_VALUE_CONSTRUCT(&val);
  val.type = PMIX_BYTE_OBJECT;
  val.data.bo.bytes = (char*)blob;
  val.data.bo.size = len;
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val);
  if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
  ZU_RETURN_ERR_IF(rc != PMIX_SUCCESS, zcclSystemError, "PMIx bootstrap: rank %d cannot publish '%s': %s", rank,
                   key, PMIx_Error_string(rc));

  /* Data collection leaves every rank's key in this process's store, so the
   * gets below are local. The fence does not depend on the key: ranks that
   * passed different ids still meet here and fail at the get, promptly. */
  bool collect = true;
  int seconds = zb_pmix_seconds(timeout);
  pmix_info_t finfo[2];
  PMIX_INFO_LOAD(&finfo[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&finfo[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  rc = PMIx_Fence(&job, 1, finfo, 2);
  PMIX_INFO_DESTRUCT(&finfo[0]);
  PMIX_INFO_DESTRUCT(&finfo[1]);
  /* After a timed-out fence the ranks' fences no longer pair up (a late
   * rank's fence completes against the others' next one): fatal to the job. */
  ZU_RETURN_ERR_IF(rc == PMIX_ERR_TIMEOUT, zcclRemoteError,
                   "PMIx bootstrap: rank %d of %d: not every rank reached the fence for '%s' within %d s", rank,
                   size, key, seconds);
  ZU_RETURN_ERR_IF(rc != PMIX_SUCCESS, zcclRemoteError, "PMIx bootstrap: rank %d of %d: fence for '%s': %s", rank,
                   size, key, PMIx_Error_string(rc));

  /* PMIX_OPTIONAL: look only in the local store. Everything published before
   * the fence is there; a miss is a rank that published under another key,
   * reported now rather than after a server round trip that waits for data
   * which will never come. */
  bool local = true;
  pmix_info_t ginfo;
  PMIX_INFO_LOAD(&ginfo, PMIX_OPTIONAL, &local, PMIX_BOOL);
  zcclResult_t res = zcclSuccess;
  for (int r = 0; r < size && res == zcclSuccess; r++) {
    uint8_t* dst = out + (size_t)r * len;
    if (r == rank) {
      if (len) memmove(dst, blob, len); /* blob may already be this slot */
      continue;
    }
    pmix_proc_t peer;
    PMIX_LOAD_PROCID(&peer, me.nspace, (pmix_rank_t)r);
    pmix_value_t* v = NULL;
    rc = PMIx_Get(&peer, key, &ginfo, 1, &v);
    if (rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_DATA_VALUE_NOT_FOUND) {
      /* Seen once in 4-host netlab runs (one namespace, one PMIx server
       * per host): the collected data had not reached this client's store
       * yet. Ask the server, for 2 s at most (a rank that really published
       * under another key is still reported promptly). */
      int wait = seconds < 2 ? seconds : 2;
      pmix_info_t sinfo;
      PMIX_INFO_LOAD(&sinfo, PMIX_TIMEOUT, &wait, PMIX_INT);
      rc = PMIx_Get(&peer, key, &sinfo, 1, &v);
      PMIX_INFO_DESTRUCT(&sinfo);
      if (rc == PMIX_SUCCESS) ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx bootstrap: rank %d's data came from the server", r);
    }
    if (rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_DATA_VALUE_NOT_FOUND || rc == PMIX_ERR_TIMEOUT)
      res = ZU_ERROR(zcclInvalidUsage,
                     "PMIx bootstrap: rank %d of %d published nothing under '%s' (did every rank pass the same "
                     "unique id?)",
                     r, size, key);
    else if (rc != PMIX_SUCCESS)
      res = ZU_ERROR(zcclSystemError, "PMIx bootstrap: rank %d: get of '%s' from rank %d: %s", rank, key, r,
                     PMIx_Error_string(rc));
    else if (v == NULL || v->type != PMIX_BYTE_OBJECT || v->data.bo.size != len)
      res = ZU_ERROR(zcclInvalidUsage,
                     "PMIx bootstrap: rank %d of %d published %zu bytes under '%s' where rank %d published %zu (did "
                     "every rank pass the same unique id?)",
                     r, size, v && v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : (size_t)0, key, rank, len);
    else if (len)
      memcpy(dst, v->data.bo.bytes, len);
    if (v) PMIX_VALUE_RELEASE(v);
  }
  PMIX_INFO_DESTRUCT(&ginfo);
  if (res == zcclSuccess)
    ZU_INFO(ZU_LOG_BOOTSTRAP, "PMIx bootstrap '%s': %zu bytes from each of %d ranks in %.3f s", key, len, size,
            zu_now() - start);
  return res;
}
