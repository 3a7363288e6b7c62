/* How the ranks of a new communicator meet: each packs its worker address
 * into a fixed slot and the bootstrap (PMIx or the unique id's TCP root)
 * gives every rank every slot. Split communicators meet over their parent's
 * transport instead. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zb_bootstrap.h"
#include "zccl_core.h"
#include "zu_param.h"

typedef enum { ZCCL_BOOT_AUTO, ZCCL_BOOT_PMIX, ZCCL_BOOT_TCP } zccl_boot_mode_t;

static zcclResult_t zccl_boot_mode(int* mode) {
  const char* m = zu_param_str(ZU_PARAM_BOOTSTRAP);
  if (strcmp(m, "auto") == 0)
    *mode = ZCCL_BOOT_AUTO;
  else if (strcmp(m, "pmix") == 0)
    *mode = ZCCL_BOOT_PMIX;
  else if (strcmp(m, "tcp") == 0)
    *mode = ZCCL_BOOT_TCP;
  else
    return ZU_ERROR(zcclInvalidArgument, "ZCCL_BOOTSTRAP=%s: expected auto, pmix or tcp", m);
  return zcclSuccess;
}

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
  zu_param_reload(); /* the root it may start keeps the settings of now */
  int mode = ZCCL_BOOT_AUTO;
  double timeout = 0;
  ZU_CHECK(zccl_boot_mode(&mode));
  ZU_CHECK(zccl_bootstrap_timeout(&timeout));
  if (mode == ZCCL_BOOT_PMIX) { /* no root: the ranks meet through PMIx */
    ZU_CHECK(zb_id_create(uniqueId));
    zb_id_set_kind(uniqueId, ZB_ID_KIND_PMIX);
    return zcclSuccess;
  }
  /* The root this process starts serves the ranks of one communicator. */
  ZU_CHECK(zb_tcp_root_start(zu_param_str(ZU_PARAM_SOCKET_IFNAME), timeout, uniqueId));
  if (mode == ZCCL_BOOT_AUTO && zb_pmix_launched(NULL, NULL)) zb_id_set_flags(uniqueId, ZB_ID_FLAG_PMIX_JOB);
  return zcclSuccess;
}

/* Which machine this process runs on, as far as sharing cores goes: the
 * kernel's boot id (network namespaces, and so the emulated cluster's
 * hosts, share one kernel and its cores), else the host name. */
static uint64_t zccl_node_id(void) {
  char buf[128] = {0};
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f == NULL || fgets(buf, sizeof buf, f) == NULL) gethostname(buf, sizeof buf - 1);
  if (f) fclose(f);
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char* c = buf; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  return h;
}

/* The slot: the worker address's length (u32) and bytes, and at its end the
 * node's id (u64) and its cores (u32) for zccl_cpu_share. */
#define ZCCL_NODE_AT (ZCCL_ADDR_SLOT - 12)

zcclResult_t zccl_addr_pack(zcclComm_t comm, uint8_t slot[ZCCL_ADDR_SLOT]) {
  const void* addr;
  size_t len;
  zt_worker_address(comm->worker, &addr, &len);
  ZU_RETURN_ERR_IF(len > ZCCL_NODE_AT - sizeof(uint32_t), zcclInternalError,
                   "UCX worker address of %zu bytes exceeds the %d-byte slot (too many devices? set "
                   "UCX_NET_DEVICES)",
                   len, ZCCL_NODE_AT - (int)sizeof(uint32_t));
  uint32_t l = (uint32_t)len, cores = (uint32_t)zd_host_ncores();
  uint64_t node = zccl_node_id();
  memset(slot, 0, ZCCL_ADDR_SLOT);
  memcpy(slot, &l, sizeof l);
  memcpy(slot + sizeof l, addr, len);
  memcpy(slot + ZCCL_NODE_AT, &node, sizeof node);
  memcpy(slot + ZCCL_NODE_AT + sizeof node, &cores, sizeof cores);
  return zcclSuccess;
}

int zccl_node_ranks(const uint8_t* table, int nranks, int r) {
  uint64_t node, other;
  memcpy(&node, table + (size_t)r * ZCCL_ADDR_SLOT + ZCCL_NODE_AT, sizeof node);
  int on_node = 0;
  for (int q = 0; q < nranks; q++) {
    memcpy(&other, table + (size_t)q * ZCCL_ADDR_SLOT + ZCCL_NODE_AT, sizeof other);
    on_node += other == node;
  }
  return on_node;
}

double zccl_cpu_share(const uint8_t* table, int nranks) {
  double share = 1;
  for (int r = 0; r < nranks; r++) {
    uint32_t cores;
    memcpy(&cores, table + (size_t)r * ZCCL_ADDR_SLOT + ZCCL_NODE_AT + sizeof(uint64_t), sizeof cores);
    double s = (double)zccl_node_ranks(table, nranks, r) / (cores > 0 ? cores : 1);
    if (s > share) share = s;
  }
  return share;
}

void zccl_set_sharing(zcclComm_t comm, const uint8_t* table) {
  int here = zccl_node_ranks(table, comm->nranks, comm->rank);
  comm->link.cpu_share = zccl_cpu_share(table, comm->nranks);
  comm->link.one_machine = here == comm->nranks;
  zd_set_node_ranks(comm->dev, here);
}

/* What each process publishes through PMIx: ranks of the communicator need
 * not be the job's ranks, so each says which it is; seq and tag say which
 * communicator the entry is for (see zccl_connect_pmix). */
typedef struct {
  int32_t rank, nranks;
  uint32_t seq;
  uint8_t tag[16];
  uint8_t slot[ZCCL_ADDR_SLOT];
} zccl_pmix_entry_t;

/* The n-th communicator a process brings up through PMIx is the n-th of
 * every process: PMIx_Fence over the namespace pairs the n-th fences, so
 * communicators over the whole job are created in the same order
 * everywhere, as collective calls must be. With ZCCL_BOOTSTRAP=pmix this is
 * how ranks that share no id meet. */
static atomic_uint zccl_pmix_comms;

/* PMIx keeps every key a process puts, and every key the fences bring from
 * the other processes, until PMIx_Finalize: a key per communicator grew the
 * heap by ~7 kB and RSS by ~17 kB a communicator on 2 ranks. All of them
 * use this one key instead: a put replaces the process's value and the
 * fence replaces the others'. */
#define ZCCL_PMIX_KEY "zccl.boot"

static pthread_mutex_t zccl_pmix_lock = PTHREAD_MUTEX_INITIALIZER;
static int zccl_pmix_ready, zccl_pmix_rank, zccl_pmix_size, zccl_pmix_singleton;

static zcclResult_t zccl_pmix(int* rank, int* size, int* singleton) {
  zcclResult_t res = zcclSuccess;
  pthread_mutex_lock(&zccl_pmix_lock);
  if (!zccl_pmix_ready) {
    res = zb_pmix_init(&zccl_pmix_rank, &zccl_pmix_size, &zccl_pmix_singleton);
    zccl_pmix_ready = res == zcclSuccess;
    if (zccl_pmix_ready) atexit(zb_pmix_finalize);
  }
  *rank = zccl_pmix_rank, *size = zccl_pmix_size, *singleton = zccl_pmix_singleton;
  pthread_mutex_unlock(&zccl_pmix_lock);
  return res;
}

static zcclResult_t zccl_connect_pmix(zcclComm_t comm, const zcclUniqueId* id, int by_env, double timeout,
                                      uint8_t* table) {
  int prank, psize, singleton;
  ZU_CHECK(zccl_pmix(&prank, &psize, &singleton));
  ZU_RETURN_ERR_IF(singleton || psize != comm->nranks, zcclInvalidUsage,
                   "PMIx bootstrap: the communicator has %d ranks but the job has %d processes%s; "
                   "PMIx brings up communicators over the whole job only (use ZCCL_BOOTSTRAP=tcp)",
                   comm->nranks, psize, singleton ? " (no PMIx launcher)" : "");
  /* The one key is reused: an entry says which communicator it is for
   * (this process's count of PMIx communicators, and the id's secret when
   * there is an id), so a value left from an earlier communicator, or one
   * from a process that passed another id, is an error, never an address. */
  uint32_t seq = atomic_fetch_add(&zccl_pmix_comms, 1);
  uint8_t tag[16] = {0};
  if (!by_env) zb_id_secret(id, tag);
  zccl_pmix_entry_t* all = malloc(sizeof *all * (size_t)psize);
  zccl_pmix_entry_t* mine = calloc(1, sizeof *mine);
  zcclResult_t res = zcclSuccess;
  if (!all || !mine) {
    res = ZU_ERROR(zcclSystemError, "PMIx bootstrap: out of memory");
    goto out;
  }
  mine->rank = comm->rank;
  mine->nranks = comm->nranks;
  mine->seq = seq;
  memcpy(mine->tag, tag, sizeof tag);
  ZU_CHECK_GOTO(zccl_addr_pack(comm, mine->slot), res, out);
  ZU_CHECK_GOTO(zb_pmix_allgather(ZCCL_PMIX_KEY, mine, sizeof *mine, all, timeout), res, out);
  for (int p = 0; p < psize; p++) {
    int r = all[p].rank;
    if (all[p].seq != seq) {
      res = ZU_ERROR(zcclInvalidUsage,
                     "PMIx bootstrap: process %d is at its PMIx communicator #%u, this one at #%u (create "
                     "communicators over the whole job in the same order in every process)",
                     p, all[p].seq, seq);
      goto out;
    }
    if (memcmp(all[p].tag, tag, sizeof tag) != 0) {
      res = ZU_ERROR(zcclInvalidUsage,
                     "PMIx bootstrap: process %d passed another unique id than this one (did every rank pass "
                     "the same unique id?)",
                     p);
      goto out;
    }
    if (all[p].nranks != comm->nranks || r < 0 || r >= comm->nranks) {
      res = ZU_ERROR(zcclInvalidUsage, "PMIx bootstrap: process %d joined as rank %d of %d, this one as %d of %d",
                     p, r, all[p].nranks, comm->rank, comm->nranks);
      goto out;
    }
    uint32_t seen;
    memcpy(&seen, table + (size_t)r * ZCCL_ADDR_SLOT, sizeof seen);
    if (seen != 0) {
      res = ZU_ERROR(zcclInvalidUsage, "PMIx bootstrap: rank %d was claimed by two processes", r);
      goto out;
    }
    memcpy(table + (size_t)r * ZCCL_ADDR_SLOT, all[p].slot, ZCCL_ADDR_SLOT);
  }
  /* Rank 0's process may have started a TCP root for this id: not needed. */
  zb_tcp_root_stop(id);
out:
  free(all);
  free(mine);
  return res;
}

zcclResult_t zccl_connect(zcclComm_t comm, const zcclUniqueId* id) {
  size_t n = (size_t)comm->nranks;
  uint8_t* table = calloc(n, ZCCL_ADDR_SLOT);
  ZU_RETURN_ERR_IF(table == NULL, zcclSystemError, "bootstrap: out of memory for %d ranks", comm->nranks);
  zcclResult_t res = zcclSuccess;
  if (comm->nranks == 1) {
    ZU_CHECK_GOTO(zccl_addr_pack(comm, table), res, out);
  } else {
    zb_id_kind_t kind;
    int mode = ZCCL_BOOT_AUTO;
    double timeout;
    ZU_CHECK_GOTO(zccl_boot_mode(&mode), res, out);
    if (mode == ZCCL_BOOT_PMIX)
      kind = ZB_ID_KIND_PMIX; /* the id's contents don't matter then */
    else
      ZU_CHECK_GOTO(zb_id_check(id, &kind), res, out);
    ZU_CHECK_GOTO(zccl_bootstrap_timeout(&timeout), res, out);
    int use_pmix = mode == ZCCL_BOOT_PMIX || kind == ZB_ID_KIND_PMIX;
    if (!use_pmix && mode == ZCCL_BOOT_AUTO && (zb_id_flags(id) & ZB_ID_FLAG_PMIX_JOB)) {
      /* Every rank decides alike: same id, same nranks, same job. */
      int prank, psize, singleton;
      ZU_CHECK_GOTO(zccl_pmix(&prank, &psize, &singleton), res, out);
      use_pmix = !singleton && psize == comm->nranks;
    }
    if (use_pmix) {
      ZU_INFO(ZU_LOG_BOOTSTRAP, "rank %d of %d meets its peers through PMIx", comm->rank, comm->nranks);
      ZU_CHECK_GOTO(zccl_connect_pmix(comm, id, mode == ZCCL_BOOT_PMIX, timeout, table), res, out);
    } else {
      if (kind != ZB_ID_KIND_TCP) {
        res = ZU_ERROR(zcclInvalidArgument,
                       "the unique id has no TCP root (kind %d): was it made by zcclGetUniqueId?", (int)kind);
        goto out;
      }
      ZU_INFO(ZU_LOG_BOOTSTRAP, "rank %d of %d meets its peers through the unique id's TCP root",
              comm->rank, comm->nranks);
      uint8_t mine[ZCCL_ADDR_SLOT];
      ZU_CHECK_GOTO(zccl_addr_pack(comm, mine), res, out);
      ZU_CHECK_GOTO(zb_tcp_allgather(id, comm->rank, comm->nranks, mine, ZCCL_ADDR_SLOT, table, timeout), res,
                    out);
      /* The job formed: if this process runs the root, it finishes answering
       * the other ranks and is joined here rather than left to the next id.
       * (After a failure it is left alone: it may still serve the others.) */
      zb_tcp_root_stop(id);
    }
  }
  ZU_CHECK_GOTO(zt_worker_set_peers(comm->worker, comm->nranks, table, ZCCL_ADDR_SLOT), res, out);
  zccl_set_sharing(comm, table);
out:
  free(table);
  return res;
}

/* Tags: sub 0 the split's exchanges (internal_seq, every rank), sub 2 the
 * shrink's (shrink_seq, the ranks kept); ZP_SIG_SUB is 1. */
#define ZCCL_SHRINK_SUB 2u

zcclResult_t zccl_comm_allgather(zcclComm_t comm, const uint8_t* among, const void* blob, size_t len, void* table) {
  int n = comm->nranks, peers = 0;
  memcpy((uint8_t*)table + (size_t)comm->rank * len, blob, len);
  for (int p = 0; p < n; p++) peers += p != comm->rank && (among == NULL || among[p]);
  if (peers == 0) return zcclSuccess;
  const char* what = among ? "zcclCommShrink" : "zcclCommSplit";
  zccl_op_t* op = zccl_op_new(what, 2 * peers, 0);
  ZU_RETURN_ERR_IF(op == NULL, zcclSystemError, "%s: out of memory", what);
  uint32_t seq = among ? comm->shrink_seq++ : comm->internal_seq++, sub = among ? ZCCL_SHRINK_SUB : 0;
  int k = 0;
  for (int p = 0; p < n; p++) {
    if (p == comm->rank || (among && !among[p])) continue;
    op->xfers[k++] = (zp_xfer_t){.is_send = 1, .peer = p, .buf = (void*)blob, .bytes = len, .count = len,
                                   .dtype = zcclUint8, .tag = zt_tag(ZT_TAG_INTERNAL, comm->rank, seq, sub)};
    op->xfers[k++] = (zp_xfer_t){.is_send = 0, .peer = p, .buf = (uint8_t*)table + (size_t)p * len,
                                   .bytes = len, .count = len, .dtype = zcclUint8,
                                   .tag = zt_tag(ZT_TAG_INTERNAL, p, seq, sub)};
  }
  pthread_mutex_lock(&comm->lock);
  op->despite_error = among != NULL || comm->revoked;
  pthread_mutex_unlock(&comm->lock);
  zcclResult_t res = zccl_op_run(comm, op);
  zccl_op_free(op);
  return res;
}
