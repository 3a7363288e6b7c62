/* Communicator lifecycle. Single-rank communicators are complete here; a
 * communicator of several ranks needs the bootstrap and the UCX transport. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zb_bootstrap.h"
#include "zccl_core.h"
#include "zd_device.h"
#include "zu_param.h"

zcclResult_t zccl_comm_check(const char* fn, zcclComm_t comm) {
  ZU_RETURN_ERR_IF(comm == NULL, zcclInvalidArgument, "%s: comm is NULL", fn);
  ZU_RETURN_ERR_IF(comm->magic != ZCCL_COMM_MAGIC, zcclInvalidArgument,
                   "%s: comm is not a live communicator (destroyed or never created)", fn);
  zu_log_set_rank(comm->rank);
  return zcclSuccess;
}

/* ZCCL_BOOTSTRAP_TIMEOUT in seconds. */
static zcclResult_t zccl_bootstrap_timeout(double* seconds) {
  int64_t t;
  ZU_CHECK(zu_param_int(ZU_PARAM_BOOTSTRAP_TIMEOUT, &t));
  ZU_RETURN_ERR_IF(t < 1, zcclInvalidArgument, "ZCCL_BOOTSTRAP_TIMEOUT=%lld must be >= 1 second", (long long)t);
  *seconds = (double)t;
  return zcclSuccess;
}

zcclResult_t zcclGetUniqueId(zcclUniqueId* uniqueId) {
  zccl_init_once();
  ZU_RETURN_ERR_IF(uniqueId == NULL, zcclInvalidArgument, "zcclGetUniqueId: uniqueId is NULL");
  double timeout = 0;
  ZU_CHECK(zccl_bootstrap_timeout(&timeout));
  /* The root this process starts serves the ranks of one communicator. */
  ZU_CHECK(zb_tcp_root_start(zu_param_str(ZU_PARAM_SOCKET_IFNAME), timeout, uniqueId));
  return zcclSuccess;
}

/* Checks a user's config (NULL is fine) the way NCCL does: by its header. */
static zcclResult_t zccl_config_check(const char* fn, const zcclConfig_t* config) {
  if (config == NULL) return zcclSuccess;
  ZU_RETURN_ERR_IF(config->magic != ZCCL_API_MAGIC || config->size != sizeof(zcclConfig_t),
                   zcclInvalidArgument,
                   "%s: config was not initialised with ZCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)",
                   fn, config->magic, config->size);
  ZU_RETURN_ERR_IF(config->blocking != ZCCL_CONFIG_UNDEF_INT && config->blocking != 0 &&
                       config->blocking != 1,
                   zcclInvalidArgument, "%s: config->blocking must be 0 or 1, not %d", fn,
                   config->blocking);
  if (config->compression.codec != ZCCL_CONFIG_UNDEF_INT)
    ZU_CHECK(zccl_compression_check(fn, &config->compression));
  return zcclSuccess;
}

/* Explicit config first, then ZCCL_COMPRESSION, then off. */
static zcclResult_t zccl_compression_resolve(const char* fn, const zcclConfig_t* config,
                                             const zcclCompression_t* inherited,
                                             zcclCompression_t* out) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  const char* from = "default";
  if (config != NULL && config->compression.codec != ZCCL_CONFIG_UNDEF_INT) {
    c = config->compression;
    from = "config";
  } else if (inherited != NULL) {
    c = *inherited;
    from = "parent communicator";
  } else if (zu_param_is_set(ZU_PARAM_COMPRESSION)) {
    const char* env = zu_param_str(ZU_PARAM_COMPRESSION);
    zcclResult_t res = zcclCompressionFromString(env, &c);
    if (res != zcclSuccess) {
      char why[512]; /* copied: the next error overwrites the thread's message */
      snprintf(why, sizeof why, "%s", zu_error_last());
      return ZU_ERROR(res, "%s: ZCCL_COMPRESSION is malformed: %s", fn, why);
    }
    from = "ZCCL_COMPRESSION";
  }
  char text[160];
  if (ZU_LOG_ENABLED(ZU_LOG_INFO, ZU_LOG_ENV) && zcclCompressionToString(&c, text, sizeof text) == zcclSuccess)
    ZU_INFO(ZU_LOG_ENV, "%s: compression %s (from %s)", fn, text, from);
  *out = c;
  return zcclSuccess;
}

static zcclResult_t zccl_comm_create(const char* fn, int nranks, int rank, const zcclConfig_t* config,
                                     const zcclComm_t parent, zcclComm_t* comm) {
  zcclComm_t c = calloc(1, sizeof *c);
  ZU_RETURN_ERR_IF(c == NULL, zcclSystemError, "%s: out of memory", fn);
  c->rank = rank;
  c->nranks = nranks;
  c->blocking = 1;
  snprintf(c->name, sizeof c->name, "%s", parent ? parent->name : "zccl");
  if (parent) c->blocking = parent->blocking;
  if (config && config->blocking != ZCCL_CONFIG_UNDEF_INT) c->blocking = config->blocking;
  if (config && config->commName) snprintf(c->name, sizeof c->name, "%s", config->commName);
  zcclResult_t res = zccl_compression_resolve(fn, config, parent ? &parent->compression : NULL,
                                              &c->compression);
  if (res != zcclSuccess) {
    free(c);
    return res;
  }
  c->cuda_dev = zd_cuda_current_device();
  c->async_error = zcclSuccess;
  c->magic = ZCCL_COMM_MAGIC;
  zu_log_set_rank(rank);
  ZU_INFO(ZU_LOG_INIT, "%s: comm %p '%s' rank %d nranks %d cudaDev %d", fn, (void*)c, c->name, rank,
          nranks, c->cuda_dev);
  *comm = c;
  return zcclSuccess;
}

zcclResult_t zcclCommInitRankConfig(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank,
                                    zcclConfig_t* config) {
  static const char* fn = "zcclCommInitRank";
  zccl_init_once();
  ZU_RETURN_ERR_IF(comm == NULL, zcclInvalidArgument, "%s: comm is NULL", fn);
  *comm = NULL;
  ZU_RETURN_ERR_IF(nranks < 1, zcclInvalidArgument, "%s: nranks=%d must be >= 1", fn, nranks);
  ZU_RETURN_ERR_IF(rank < 0 || rank >= nranks, zcclInvalidArgument,
                   "%s: rank=%d is outside [0, nranks=%d)", fn, rank, nranks);
  ZU_CHECK(zccl_config_check(fn, config));
  if (nranks > 1) {
    zb_id_kind_t kind;
    ZU_CHECK(zb_id_check(&commId, &kind));
    return ZU_ERROR(zcclInvalidUsage,
                    "%s: communicators of %d ranks need the bootstrap and UCX transport, which are "
                    "not built yet in zccl %d.%d.%d; only nranks=1 works",
                    fn, nranks, ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH);
  }
  return zccl_comm_create(fn, nranks, rank, config, NULL, comm);
}

zcclResult_t zcclCommInitRank(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank) {
  return zcclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                           zcclConfig_t* config) {
  static const char* fn = "zcclCommSplit";
  (void)key; /* orders ranks within a color; one rank has one order */
  ZU_CHECK(zccl_comm_check(fn, comm));
  ZU_RETURN_ERR_IF(newcomm == NULL, zcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  ZU_RETURN_ERR_IF(color < 0 && color != ZCCL_SPLIT_NOCOLOR, zcclInvalidArgument,
                   "%s: color=%d must be >= 0 or ZCCL_SPLIT_NOCOLOR", fn, color);
  ZU_RETURN_ERR_IF(comm->finalized, zcclInvalidUsage, "%s: comm is finalized", fn);
  ZU_CHECK(zccl_config_check(fn, config));
  ZU_RETURN_ERR_IF(comm->nranks > 1, zcclInvalidUsage,
                   "%s: splitting a communicator of %d ranks needs the bootstrap, not built yet", fn,
                   comm->nranks);
  if (color == ZCCL_SPLIT_NOCOLOR) return zcclSuccess;
  return zccl_comm_create(fn, 1, 0, config, comm, newcomm);
}

zcclResult_t zcclCommFinalize(zcclComm_t comm) {
  ZU_CHECK(zccl_comm_check("zcclCommFinalize", comm));
  /* Nothing can be pending: no operation is ever left queued yet. */
  comm->finalized = 1;
  return zcclSuccess;
}

static void zccl_comm_free(zcclComm_t comm) {
  ZU_INFO(ZU_LOG_INIT, "comm %p rank %d destroyed", (void*)comm, comm->rank);
  comm->magic = 0;
  free(comm);
  zu_log_set_rank(-1);
}

zcclResult_t zcclCommDestroy(zcclComm_t comm) {
  if (comm == NULL) return zcclSuccess; /* as NCCL: destroying NULL is a no-op */
  ZU_CHECK(zccl_comm_check("zcclCommDestroy", comm));
  zccl_comm_free(comm);
  return zcclSuccess;
}

zcclResult_t zcclCommAbort(zcclComm_t comm) {
  if (comm == NULL) return zcclSuccess;
  ZU_CHECK(zccl_comm_check("zcclCommAbort", comm));
  zccl_comm_free(comm);
  return zcclSuccess;
}

zcclResult_t zcclCommGetAsyncError(zcclComm_t comm, zcclResult_t* asyncError) {
  ZU_CHECK(zccl_comm_check("zcclCommGetAsyncError", comm));
  ZU_RETURN_ERR_IF(asyncError == NULL, zcclInvalidArgument, "zcclCommGetAsyncError: asyncError is NULL");
  *asyncError = comm->async_error;
  return zcclSuccess;
}

zcclResult_t zcclCommCount(const zcclComm_t comm, int* count) {
  ZU_CHECK(zccl_comm_check("zcclCommCount", comm));
  ZU_RETURN_ERR_IF(count == NULL, zcclInvalidArgument, "zcclCommCount: count is NULL");
  *count = comm->nranks;
  return zcclSuccess;
}

zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank) {
  ZU_CHECK(zccl_comm_check("zcclCommUserRank", comm));
  ZU_RETURN_ERR_IF(rank == NULL, zcclInvalidArgument, "zcclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return zcclSuccess;
}

zcclResult_t zcclCommCuDevice(const zcclComm_t comm, int* device) {
  ZU_CHECK(zccl_comm_check("zcclCommCuDevice", comm));
  ZU_RETURN_ERR_IF(device == NULL, zcclInvalidArgument, "zcclCommCuDevice: device is NULL");
  *device = comm->cuda_dev;
  return zcclSuccess;
}
