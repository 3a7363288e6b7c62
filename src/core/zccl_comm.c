/* Communicator lifecycle: creation (bootstrap, worker, progress thread),
 * split over the parent's transport, finalize, destroy and abort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zb_bootstrap.h"
#include "zccl_core.h"
#include "zd_device.h"
#include "zu_param.h"

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

/* The communicator without its runtime. */
static zcclResult_t zccl_comm_alloc(const char* fn, int nranks, int rank, const zcclConfig_t* config,
                                    const zcclComm_t parent, zcclComm_t* comm) {
  /* A communicator keeps the settings of its creation: the environment's now. */
  zu_param_reload();
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
  if (!zccl_live_add(c)) {
    free(c);
    return ZU_ERROR(zcclSystemError, "%s: out of memory", fn);
  }
  *comm = c;
  return zcclSuccess;
}

static void zccl_comm_free(zcclComm_t comm, int abort) {
  zccl_group_forget(comm);
  zccl_runtime_stop(comm, abort);
  ZU_INFO(ZU_LOG_INIT, "comm %p rank %d %s", (void*)comm, comm->rank, abort ? "aborted" : "destroyed");
  comm->magic = 0;
  zccl_live_remove(comm);
  zccl_redops_free(comm);
  free(comm);
  zu_log_set_rank(-1);
}

static void zccl_comm_ready(const char* fn, zcclComm_t c) {
  zu_log_set_rank(c->rank);
  ZU_INFO(ZU_LOG_INIT, "%s: comm %p '%s' rank %d nranks %d cudaDev %d", fn, (void*)c, c->name, c->rank,
          c->nranks, c->cuda_dev);
}

zcclResult_t zcclCommInitRankConfig(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank,
                                    zcclConfig_t* config) {
  static const char* fn = "zcclCommInitRank";
  zccl_init_once();
  /* One rank meets nobody: the root this process may run for the id has
   * no one to serve, whether this init succeeds or not. */
  if (nranks == 1) zb_tcp_root_stop(&commId);
  ZU_RETURN_ERR_IF(comm == NULL, zcclInvalidArgument, "%s: comm is NULL", fn);
  *comm = NULL;
  ZU_RETURN_ERR_IF(nranks < 1, zcclInvalidArgument, "%s: nranks=%d must be >= 1", fn, nranks);
  ZU_RETURN_ERR_IF(rank < 0 || rank >= nranks, zcclInvalidArgument,
                   "%s: rank=%d is outside [0, nranks=%d)", fn, rank, nranks);
  ZU_CHECK(zccl_config_check(fn, config));
  zcclComm_t c;
  ZU_CHECK(zccl_comm_alloc(fn, nranks, rank, config, NULL, &c));
  zcclResult_t res;
  ZU_CHECK_GOTO(zccl_runtime_create(c), res, fail);
  ZU_CHECK_GOTO(zccl_connect(c, &commId), res, fail);
  ZU_CHECK_GOTO(zccl_runtime_start(c), res, fail);
  zccl_comm_ready(fn, c);
  *comm = c;
  return zcclSuccess;
fail:
  zccl_comm_free(c, 1);
  return res;
}

zcclResult_t zcclCommInitRank(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank) {
  return zcclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

/* What each rank tells the others when splitting or shrinking. */
typedef struct {
  int32_t color, key;
  int32_t failed; /* this rank could not set up its part (its error code): the color's ranks all fail */
  int32_t pad;
  uint64_t check; /* what must be equal across the new communicator's ranks (shrink: the exclude list) */
  uint8_t slot[ZCCL_ADDR_SLOT]; /* the new communicator's worker address */
} zccl_split_entry_t;

/* A new communicator from comm's ranks of one color, ordered by key (ties
 * by rank in comm, MPI_Comm_split's rule), after an exchange among every
 * rank (among NULL) or among the ranks marked. */
static zcclResult_t zccl_comm_derive(const char* fn, zcclComm_t comm, int color, int key, const uint8_t* among,
                                     uint64_t check, zcclComm_t* newcomm, zcclConfig_t* config) {
  zcclComm_t c = NULL;
  zcclResult_t res = zcclSuccess;
  size_t n = (size_t)comm->nranks;
  zccl_split_entry_t* all = calloc(n, sizeof *all);
  zccl_split_entry_t* mine = calloc(1, sizeof *mine);
  uint8_t* table = calloc(n, ZCCL_ADDR_SLOT);
  if (!all || !mine || !table) {
    res = ZU_ERROR(zcclSystemError, "%s: out of memory", fn);
    goto out;
  }
  for (size_t p = 0; p < n; p++) all[p].color = ZCCL_SPLIT_NOCOLOR; /* ranks left out of the exchange */
  mine->color = color;
  mine->key = key;
  mine->check = check;
  if (color != ZCCL_SPLIT_NOCOLOR) {
    /* A failure here still takes part in the exchange (the others would
     * wait for this rank's entry until their timeout) and says so. */
    res = zccl_comm_alloc(fn, 0, 0, config, comm, &c);
    if (res == zcclSuccess) res = zccl_runtime_create(c);
    if (res == zcclSuccess) res = zccl_addr_pack(c, mine->slot);
    mine->failed = (int32_t)res;
  }
  char why[400] = ""; /* copied: the exchange may overwrite it */
  if (res != zcclSuccess) snprintf(why, sizeof why, "%s", zu_error_last());
  zcclResult_t ex = zccl_comm_allgather(comm, among, mine, sizeof *mine, all);
  if (res != zcclSuccess) {
    res = ZU_ERROR(res, "%s: could not set up this rank's part: %s", fn, why);
    goto out;
  }
  ZU_CHECK_GOTO(ex, res, out);
  if (c == NULL) goto out;
  for (size_t p = 0; p < n; p++) {
    if (all[p].color != color) continue;
    if (all[p].failed != zcclSuccess) {
      res = ZU_ERROR((zcclResult_t)all[p].failed, "%s: rank %zu of the parent could not set up its part of the new "
                     "communicator (its own error says why)", fn, p);
      goto out;
    }
    if (all[p].check != check) {
      res = ZU_ERROR(zcclInvalidUsage, "%s: rank %zu of the parent passed other arguments (another exclude list)",
                     fn, p);
      goto out;
    }
  }
  int nr = 0, me = 0;
  for (size_t p = 0; p < n; p++) {
    if (all[p].color != color) continue;
    int before = 0;
    for (size_t q = 0; q < n; q++)
      if (all[q].color == color && (all[q].key < all[p].key || (all[q].key == all[p].key && q < p))) before++;
    memcpy(table + (size_t)before * ZCCL_ADDR_SLOT, all[p].slot, ZCCL_ADDR_SLOT);
    if ((int)p == comm->rank) me = before;
    nr++;
  }
  c->rank = me;
  c->nranks = nr;
  ZU_CHECK_GOTO(zt_worker_set_peers(c->worker, nr, table, ZCCL_ADDR_SLOT), res, out);
  zccl_set_sharing(c, table);
  ZU_CHECK_GOTO(zccl_runtime_start(c), res, out);
  zccl_comm_ready(fn, c);
  *newcomm = c;
  c = NULL;
out:
  if (c) zccl_comm_free(c, 1);
  zu_log_set_rank(comm->rank);
  free(all);
  free(mine);
  free(table);
  return res;
}

zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                           zcclConfig_t* config) {
  static const char* fn = "zcclCommSplit";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(newcomm == NULL, zcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  ZU_RETURN_ERR_IF(color < 0 && color != ZCCL_SPLIT_NOCOLOR, zcclInvalidArgument,
                   "%s: color=%d must be >= 0 or ZCCL_SPLIT_NOCOLOR", fn, color);
  ZU_RETURN_ERR_IF(comm->finalized, zcclInvalidUsage, "%s: comm is finalized", fn);
  ZU_CHECK(zccl_config_check(fn, config));
  /* Every rank takes part in the exchange, with or without a color. */
  return zccl_comm_derive(fn, comm, color, key, NULL, 0, newcomm, config);
}

zcclResult_t zcclCommShrink(zcclComm_t comm, int* excludeRanksList, int excludeRanksCount, zcclComm_t* newcomm,
                            zcclConfig_t* config, int shrinkFlags) {
  static const char* fn = "zcclCommShrink";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(newcomm == NULL, zcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  ZU_RETURN_ERR_IF(shrinkFlags != ZCCL_SHRINK_DEFAULT && shrinkFlags != ZCCL_SHRINK_ABORT, zcclInvalidArgument,
                   "%s: shrinkFlags 0x%x, expected ZCCL_SHRINK_DEFAULT or ZCCL_SHRINK_ABORT", fn,
                   (unsigned)shrinkFlags);
  ZU_RETURN_ERR_IF(excludeRanksCount < 0 || excludeRanksCount >= comm->nranks ||
                       (excludeRanksCount > 0 && excludeRanksList == NULL),
                   zcclInvalidArgument, "%s: %d excluded ranks at %p of %d (at least one rank must stay)", fn,
                   excludeRanksCount, (void*)excludeRanksList, comm->nranks);
  ZU_CHECK(zccl_config_check(fn, config));
  uint8_t* kept = malloc((size_t)comm->nranks);
  ZU_RETURN_ERR_IF(kept == NULL, zcclSystemError, "%s: out of memory", fn);
  memset(kept, 1, (size_t)comm->nranks);
  zcclResult_t res = zcclSuccess;
  for (int i = 0; i < excludeRanksCount && res == zcclSuccess; i++) {
    int r = excludeRanksList[i];
    if (r < 0 || r >= comm->nranks || !kept[r])
      res = ZU_ERROR(zcclInvalidArgument, "%s: excludeRanksList[%d] = %d is outside [0, %d) or repeated", fn, i, r,
                     comm->nranks);
    else if (r == comm->rank)
      res = ZU_ERROR(zcclInvalidArgument, "%s: this rank (%d) is in excludeRanksList: excluded ranks do not call "
                     "it", fn, r);
    else
      kept[r] = 0;
  }
  /* The kept ranks must agree on who is out: a hash of the set, checked. */
  uint64_t check = 1469598103934665603ull;
  for (int p = 0; p < comm->nranks; p++) check = (check ^ kept[p]) * 1099511628211ull;
  char why[400];
  if (res == zcclSuccess && shrinkFlags == ZCCL_SHRINK_DEFAULT && !zccl_comm_revoked(comm) &&
      zccl_comm_error(comm, why, sizeof why) != zcclSuccess)
    res = ZU_ERROR(zccl_comm_error(comm, NULL, 0), "%s: the communicator has an error (%s): shrink it with "
                   "ZCCL_SHRINK_ABORT, or revoke it first", fn, why);
  /* ABORT: what the parent still runs is given up first. */
  if (res == zcclSuccess && shrinkFlags == ZCCL_SHRINK_ABORT) res = zccl_comm_revoke(comm);
  if (res == zcclSuccess) res = zccl_comm_derive(fn, comm, 0, comm->rank, kept, check, newcomm, config);
  free(kept);
  return res;
}

zcclResult_t zcclCommRevoke(zcclComm_t comm, int revokeFlags) {
  ZCCL_HOLD("zcclCommRevoke", comm);
  ZU_RETURN_ERR_IF(revokeFlags != ZCCL_REVOKE_DEFAULT, zcclInvalidArgument,
                   "zcclCommRevoke: revokeFlags 0x%x, expected ZCCL_REVOKE_DEFAULT (0)", (unsigned)revokeFlags);
  return zccl_comm_revoke(comm);
}

zcclResult_t zcclCommFinalize(zcclComm_t comm) {
  ZCCL_HOLD("zcclCommFinalize", comm);
  ZU_RETURN_ERR_IF(zccl_comm_revoked(comm), zcclInvalidUsage,
                   "zcclCommFinalize: comm was revoked: destroy or abort it (or split or shrink it first)");
  /* Host calls return complete, so nothing this thread issued is pending. */
  comm->finalized = 1;
  return zcclSuccess;
}

zcclResult_t zcclCommDestroy(zcclComm_t comm) {
  if (comm == NULL) return zcclSuccess; /* as NCCL: destroying NULL is a no-op */
  ZU_CHECK(zccl_comm_claim("zcclCommDestroy", comm));
  /* Other threads' calls, and the operations still queued, finish first
   * (each within ZCCL_TIMEOUT). */
  zccl_comm_wait_users(comm);
  zccl_comm_free(comm, 0);
  return zcclSuccess;
}

zcclResult_t zcclCommAbort(zcclComm_t comm) {
  if (comm == NULL) return zcclSuccess;
  ZU_CHECK(zccl_comm_claim("zcclCommAbort", comm));
  /* Calls other threads have inside it give up at once (what runs sees
   * cancel, what is queued fails), and are waited out before the free. */
  zccl_runtime_abort(comm);
  zccl_comm_wait_users(comm);
  zccl_comm_free(comm, 1);
  return zcclSuccess;
}

zcclResult_t zcclCommGetAsyncError(zcclComm_t comm, zcclResult_t* asyncError) {
  ZCCL_HOLD("zcclCommGetAsyncError", comm);
  ZU_RETURN_ERR_IF(asyncError == NULL, zcclInvalidArgument, "zcclCommGetAsyncError: asyncError is NULL");
  /* Revoked: quiescent once zcclCommRevoke returned; its errors are what
   * the revocation cut short. */
  *asyncError = zccl_comm_revoked(comm) ? zcclSuccess : zccl_comm_error(comm, NULL, 0);
  return zcclSuccess;
}

zcclResult_t zcclCommCount(const zcclComm_t comm, int* count) {
  ZCCL_HOLD("zcclCommCount", comm);
  ZU_RETURN_ERR_IF(count == NULL, zcclInvalidArgument, "zcclCommCount: count is NULL");
  *count = comm->nranks;
  return zcclSuccess;
}

zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank) {
  ZCCL_HOLD("zcclCommUserRank", comm);
  ZU_RETURN_ERR_IF(rank == NULL, zcclInvalidArgument, "zcclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return zcclSuccess;
}

zcclResult_t zcclCommCuDevice(const zcclComm_t comm, int* device) {
  ZCCL_HOLD("zcclCommCuDevice", comm);
  ZU_RETURN_ERR_IF(device == NULL, zcclInvalidArgument, "zcclCommCuDevice: device is NULL");
  *device = comm->cuda_dev;
  return zcclSuccess;
}

zcclResult_t zcclMemAlloc(void** ptr, size_t size) {
  ZU_RETURN_ERR_IF(ptr == NULL, zcclInvalidArgument, "zcclMemAlloc: ptr is NULL");
  *ptr = NULL;
  ZU_RETURN_ERR_IF(size == 0, zcclInvalidArgument, "zcclMemAlloc: size is 0");
  return zd_cuda_mem_alloc(ptr, size);
}

zcclResult_t zcclMemFree(void* ptr) { return zd_cuda_mem_free(ptr); }
