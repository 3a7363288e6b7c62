/* libnccl.so.2: NCCL 2.28's C ABI (nccl/include/nccl.h) forwarding to zccl.
 * Each function is defined once as its pnccl* name, and the nccl* name is a
 * weak alias of it, as in NVIDIA's library: a profiler that defines nccl*
 * calls through to pnccl*. An ncclComm_t is the zcclComm_t pointer itself;
 * the enums have zccl's values. Only ncclConfig_t differs in layout: it is
 * read as NCCL reads it (size, magic, version) and translated. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"
#include "zccl.h"
#include "zu_error.h"
#include "zu_log.h"

/* The enums are zccl's values: checked here, once. */
_Static_assert(sizeof(ncclUniqueId) == sizeof(zcclUniqueId), "ncclUniqueId is zcclUniqueId's 128 bytes");
_Static_assert((int)ncclInProgress == (int)zcclInProgress && (int)ncclNumResults == (int)zcclNumResults,
               "result codes");
_Static_assert((int)ncclFloat8e5m2 == (int)zcclFloat8e5m2 && (int)ncclBfloat16 == (int)zcclBfloat16 &&
                   (int)ncclFloat16 == (int)zcclFloat16 && (int)ncclUint64 == (int)zcclUint64,
               "datatypes");
_Static_assert((int)ncclAvg == (int)zcclAvg && (int)ncclNumOps == (int)zcclNumOps, "reduction ops");

#define Z(comm) ((zcclComm_t)(comm))
#define R(call) ((ncclResult_t)(call))
#define S(stream) ((zcclStream_t)(stream))
/* nccl* as a weak alias of the pnccl* definition that follows it. */
#define NCCL_TWIN(ret, name, params) ret name params __attribute__((weak, alias("p" #name)));

/* ---- configuration ----------------------------------------------------------- */

/* The fields of ncclConfig_t that have no meaning here (NVLink, CTA and
 * network tuning) are accepted; the first communicator that sets one says
 * so once at INFO. */
static atomic_int nccl_said_ignored;

static void nccl_note_ignored(const ncclConfig_t* c) {
  static const struct {
    const char* name;
    size_t off;
  } ints[] = {
      {"cgaClusterSize", offsetof(ncclConfig_t, cgaClusterSize)}, {"minCTAs", offsetof(ncclConfig_t, minCTAs)},
      {"maxCTAs", offsetof(ncclConfig_t, maxCTAs)},              {"trafficClass", offsetof(ncclConfig_t, trafficClass)},
      {"collnetEnable", offsetof(ncclConfig_t, collnetEnable)},  {"CTAPolicy", offsetof(ncclConfig_t, CTAPolicy)},
      {"shrinkShare", offsetof(ncclConfig_t, shrinkShare)},      {"nvlsCTAs", offsetof(ncclConfig_t, nvlsCTAs)},
      {"nChannelsPerNetPeer", offsetof(ncclConfig_t, nChannelsPerNetPeer)},
      {"nvlinkCentricSched", offsetof(ncclConfig_t, nvlinkCentricSched)},
  };
  char set[256] = "";
  size_t at = 0;
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    int v;
    memcpy(&v, (const char*)c + ints[i].off, sizeof v);
    if (v != NCCL_CONFIG_UNDEF_INT && at < sizeof set)
      at += (size_t)snprintf(set + at, sizeof set - at, "%s%s=%d", at ? ", " : "", ints[i].name, v);
  }
  if (c->netName != NCCL_CONFIG_UNDEF_PTR && at < sizeof set)
    at += (size_t)snprintf(set + at, sizeof set - at, "%snetName=%s", at ? ", " : "", c->netName);
  if (at > 0 && atomic_exchange(&nccl_said_ignored, 1) == 0)
    ZU_INFO(ZU_LOG_INIT, "ncclConfig_t: %s accepted; they have no meaning in zccl (docs/nccl.md)", set);
}

/* A caller's ncclConfig_t (NULL: defaults) as zccl's configuration. Read
 * as NCCL reads it: the magic must be NCCL's, and only the caller's size
 * of it is read, so a program built against an older nccl.h works. */
static ncclResult_t nccl_config(const ncclConfig_t* in, zcclConfig_t* out, const char* fn) {
  zcclConfig_t z = ZCCL_CONFIG_INITIALIZER;
  *out = z;
  if (in == NULL) return ncclSuccess;
  const size_t least = offsetof(ncclConfig_t, blocking) + sizeof(int);
  if (in->magic != NCCL_CONFIG_MAGIC || in->size < least)
    return R(ZU_ERROR(zcclInvalidArgument,
                      "%s: the ncclConfig_t was not set from NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)", fn,
                      in->magic, in->size));
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  memcpy(&c, in, in->size < sizeof c ? in->size : sizeof c);
  out->blocking = c.blocking;
  out->commName = c.commName;
  out->splitShare = c.splitShare;
  nccl_note_ignored(&c);
  return ncclSuccess;
}

/* ---- version, errors, ids, memory --------------------------------------------- */

ncclResult_t pncclGetVersion(int* version) {
  if (version == NULL) return R(ZU_ERROR(zcclInvalidArgument, "ncclGetVersion: NULL version"));
  *version = NCCL_VERSION_CODE; /* the NCCL API implemented; zccl's own: zcclGetVersion */
  return ncclSuccess;
}
NCCL_TWIN(ncclResult_t, ncclGetVersion, (int* version))

const char* pncclGetErrorString(ncclResult_t result) { return zcclGetErrorString((zcclResult_t)result); }
NCCL_TWIN(const char*, ncclGetErrorString, (ncclResult_t result))

const char* pncclGetLastError(ncclComm_t comm) { return zcclGetLastError(Z(comm)); }
NCCL_TWIN(const char*, ncclGetLastError, (ncclComm_t comm))

/* NCCL's logging settings are zccl's (ZCCL_DEBUG, _FILE, _SUBSYS). */
void pncclResetDebugInit(void) { zcclResetDebugInit(); }
NCCL_TWIN(void, ncclResetDebugInit, (void))

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) { return R(zcclGetUniqueId((zcclUniqueId*)uniqueId)); }
NCCL_TWIN(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))

ncclResult_t pncclMemAlloc(void** ptr, size_t size) { return R(zcclMemAlloc(ptr, size)); }
NCCL_TWIN(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))

ncclResult_t pncclMemFree(void* ptr) { return R(zcclMemFree(ptr)); }
NCCL_TWIN(ncclResult_t, ncclMemFree, (void* ptr))

/* ---- communicators ----------------------------------------------------------------- */

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  zcclConfig_t z;
  zcclUniqueId id;
  ncclResult_t r = nccl_config(config, &z, "ncclCommInitRankConfig");
  if (r != ncclSuccess) return r;
  memcpy(&id, &commId, sizeof id);
  return R(zcclCommInitRankConfig((zcclComm_t*)comm, nranks, id, rank, &z));
}
NCCL_TWIN(ncclResult_t, ncclCommInitRankConfig,
          (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return pncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}
NCCL_TWIN(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))

/* Every rank holds the same nId ids; the job meets at the first one's root
 * (zccl's root serves any number of ranks; the others' roots go unused and
 * end with their ids). */
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config) {
  if (nId < 1 || commIds == NULL)
    return R(ZU_ERROR(zcclInvalidArgument, "ncclCommInitRankScalable: %d unique ids at %p (at least 1 needed)", nId,
                      (void*)commIds));
  return pncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}
NCCL_TWIN(ncclResult_t, ncclCommInitRankScalable,
          (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config))

typedef struct {
  ncclComm_t* comm;
  zcclUniqueId id;
  int ndev, rank;
  zcclResult_t res;
} nccl_init_all_t;

static void* nccl_init_one(void* arg) {
  nccl_init_all_t* a = arg;
  a->res = zcclCommInitRank((zcclComm_t*)&a->comm[a->rank], a->ndev, a->id, a->rank);
  return NULL;
}

/* ndev ranks of one job in this process: each joins from a thread of its
 * own, as ranks of separate processes would. On a cuda device each rank
 * uses the device current at init (zccl picks it per communicator); devlist
 * is checked, its order is the ranks'. */
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == NULL || ndev < 1)
    return R(ZU_ERROR(zcclInvalidArgument, "ncclCommInitAll: %d devices into %p", ndev, (void*)comm));
  for (int i = 0; devlist && i < ndev; i++) {
    int seen = devlist[i] < 0;
    for (int j = 0; j < i && !seen; j++) seen = devlist[i] == devlist[j];
    if (seen)
      return R(ZU_ERROR(zcclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is negative or repeated", i,
                        devlist[i]));
  }
  nccl_init_all_t* a = calloc((size_t)ndev, sizeof *a);
  pthread_t* t = calloc((size_t)ndev, sizeof *t);
  zcclUniqueId id;
  zcclResult_t res = (a && t) ? zcclGetUniqueId(&id) : ZU_ERROR(zcclSystemError, "ncclCommInitAll: out of memory");
  int started = 0;
  for (int i = 0; res == zcclSuccess && i < ndev; i++) {
    a[i] = (nccl_init_all_t){comm, id, ndev, i, zcclSuccess};
    if (pthread_create(&t[i], NULL, nccl_init_one, &a[i]) != 0)
      res = ZU_ERROR(zcclSystemError, "ncclCommInitAll: cannot start thread %d", i);
    else
      started++;
  }
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < started && res == zcclSuccess; i++)
    if (a[i].res != zcclSuccess) res = a[i].res;
  if (res != zcclSuccess) /* all or none */
    for (int i = 0; i < started; i++)
      if (a[i].res == zcclSuccess && comm[i] != NULL) zcclCommAbort(Z(comm[i])), comm[i] = NULL;
  free(a);
  free(t);
  return R(res);
}
NCCL_TWIN(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist))

ncclResult_t pncclCommFinalize(ncclComm_t comm) { return R(zcclCommFinalize(Z(comm))); }
NCCL_TWIN(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))

ncclResult_t pncclCommDestroy(ncclComm_t comm) { return R(zcclCommDestroy(Z(comm))); }
NCCL_TWIN(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))

ncclResult_t pncclCommAbort(ncclComm_t comm) { return R(zcclCommAbort(Z(comm))); }
NCCL_TWIN(ncclResult_t, ncclCommAbort, (ncclComm_t comm))

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  zcclConfig_t z;
  ncclResult_t r = nccl_config(config, &z, "ncclCommSplit");
  if (r != ncclSuccess) return r;
  return R(zcclCommSplit(Z(comm), color, key, (zcclComm_t*)newcomm, config ? &z : NULL));
}
NCCL_TWIN(ncclResult_t, ncclCommSplit,
          (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))

_Static_assert(NCCL_SHRINK_ABORT == ZCCL_SHRINK_ABORT && NCCL_SHRINK_DEFAULT == ZCCL_SHRINK_DEFAULT &&
                   NCCL_REVOKE_DEFAULT == ZCCL_REVOKE_DEFAULT,
               "shrink and revoke flags");

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) {
  zcclConfig_t z;
  ncclResult_t r = nccl_config(config, &z, "ncclCommShrink");
  if (r != ncclSuccess) return r;
  return R(zcclCommShrink(Z(comm), excludeRanksList, excludeRanksCount, (zcclComm_t*)newcomm, config ? &z : NULL,
                          shrinkFlags));
}
NCCL_TWIN(ncclResult_t, ncclCommShrink,
          (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,
           int shrinkFlags))

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) { return R(zcclCommRevoke(Z(comm), revokeFlags)); }
NCCL_TWIN(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return R(zcclCommGetAsyncError(Z(comm), (zcclResult_t*)asyncError));
}
NCCL_TWIN(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError))

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) { return R(zcclCommCount(Z(comm), count)); }
NCCL_TWIN(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) { return R(zcclCommCuDevice(Z(comm), device)); }
NCCL_TWIN(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) { return R(zcclCommUserRank(Z(comm), rank)); }
NCCL_TWIN(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))

/* ---- registration ------------------------------------------------------------------- */

ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return R(zcclCommRegister(Z(comm), buff, size, handle));
}
NCCL_TWIN(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle))

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  return R(zcclCommDeregister(Z(comm), handle));
}
NCCL_TWIN(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))

/* A window is a registration (zccl has no symmetric-memory kernels to give
 * it to; NCCL_WIN_COLL_SYMMETRIC is accepted and changes nothing). */
typedef struct {
  uint64_t magic;
  ncclComm_t comm;
  void* reg;
  int flags;
} nccl_win_t;
#define NCCL_WIN_MAGIC 0x7a6363c177696e2bull

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  if (win == NULL) return R(ZU_ERROR(zcclInvalidArgument, "ncclCommWindowRegister: NULL window"));
  *win = NULL;
  if (winFlags & ~NCCL_WIN_COLL_SYMMETRIC)
    return R(ZU_ERROR(zcclInvalidArgument, "ncclCommWindowRegister: unknown flags 0x%x", (unsigned)winFlags));
  nccl_win_t* w = malloc(sizeof *w);
  if (w == NULL) return R(ZU_ERROR(zcclSystemError, "ncclCommWindowRegister: out of memory"));
  *w = (nccl_win_t){NCCL_WIN_MAGIC, comm, NULL, winFlags};
  ncclResult_t r = R(zcclCommRegister(Z(comm), buff, size, &w->reg));
  if (r != ncclSuccess) {
    free(w);
    return r;
  }
  *win = (ncclWindow_t)w;
  return ncclSuccess;
}
NCCL_TWIN(ncclResult_t, ncclCommWindowRegister,
          (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  nccl_win_t* w = (nccl_win_t*)win;
  if (w == NULL || w->magic != NCCL_WIN_MAGIC || w->comm != comm)
    return R(ZU_ERROR(zcclInvalidArgument, "ncclCommWindowDeregister: %p is not a window of this communicator",
                      (void*)win));
  ncclResult_t r = R(zcclCommDeregister(Z(comm), w->reg));
  if (r != ncclSuccess) return r;
  w->magic = 0;
  free(w);
  return ncclSuccess;
}
NCCL_TWIN(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))

/* ---- custom reduction ops -------------------------------------------------------------- */

_Static_assert((int)ncclScalarDevice == (int)zcclScalarDevice &&
                   (int)ncclScalarHostImmediate == (int)zcclScalarHostImmediate,
               "scalar residences");

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  return R(zcclRedOpCreatePreMulSum((zcclRedOp_t*)op, scalar, (zcclDataType_t)datatype,
                                    (zcclScalarResidence_t)residence, Z(comm)));
}
NCCL_TWIN(ncclResult_t, ncclRedOpCreatePreMulSum,
          (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
           ncclComm_t comm))

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return R(zcclRedOpDestroy((zcclRedOp_t)op, Z(comm)));
}
NCCL_TWIN(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))

/* ---- collectives, point to point, groups ---------------------------------------------- */

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return R(zcclAllReduce(sendbuff, recvbuff, count, (zcclDataType_t)datatype, (zcclRedOp_t)op, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclAllReduce,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  return R(zcclBroadcast(sendbuff, recvbuff, count, (zcclDataType_t)datatype, root, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclBroadcast,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return R(zcclBroadcast(buff, buff, count, (zcclDataType_t)datatype, root, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclBcast,
          (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream))

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return R(zcclReduce(sendbuff, recvbuff, count, (zcclDataType_t)datatype, (zcclRedOp_t)op, root, Z(comm),
                      S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclReduce,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
           ncclComm_t comm, cudaStream_t stream))

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  return R(zcclAllGather(sendbuff, recvbuff, sendcount, (zcclDataType_t)datatype, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclAllGather,
          (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return R(zcclReduceScatter(sendbuff, recvbuff, recvcount, (zcclDataType_t)datatype, (zcclRedOp_t)op, Z(comm),
                             S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclReduceScatter,
          (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return R(zcclAlltoAll(sendbuff, recvbuff, count, (zcclDataType_t)datatype, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclAlltoAll,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return R(zcclGather(sendbuff, recvbuff, count, (zcclDataType_t)datatype, root, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclGather,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  return R(zcclScatter(sendbuff, recvbuff, count, (zcclDataType_t)datatype, root, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclScatter,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return R(zcclSend(sendbuff, count, (zcclDataType_t)datatype, peer, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclSend,
          (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream))

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return R(zcclRecv(recvbuff, count, (zcclDataType_t)datatype, peer, Z(comm), S(stream)));
}
NCCL_TWIN(ncclResult_t, ncclRecv,
          (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream))

ncclResult_t pncclGroupStart(void) { return R(zcclGroupStart()); }
NCCL_TWIN(ncclResult_t, ncclGroupStart, (void))

ncclResult_t pncclGroupEnd(void) { return R(zcclGroupEnd()); }
NCCL_TWIN(ncclResult_t, ncclGroupEnd, (void))

/* The cost model's estimate, in microseconds as NCCL's: the struct read as
 * NCCL reads it (magic, size). */
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  const size_t least = offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float);
  if (simInfo == NULL || simInfo->magic != NCCL_SIM_INFO_MAGIC || simInfo->size < least) /* the group stays open */
    return R(ZU_ERROR(zcclInvalidArgument, "ncclGroupSimulateEnd: the ncclSimInfo_t at %p was not set from "
                      "NCCL_SIM_INFO_INITIALIZER", (void*)simInfo));
  double s = 0;
  ncclResult_t r = R(zcclGroupSimulateEnd(&s));
  if (r == ncclSuccess) simInfo->estimatedTime = (float)(s * 1e6);
  return r;
}
NCCL_TWIN(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))
