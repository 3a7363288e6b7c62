/* UCX UCP: the process's context, a worker per communicator, endpoints
 * made on first use, tagged non-blocking send/receive, registrations. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "zt_transport.h"
#include "zu_error.h"
#include "zu_log.h"
#include "zu_param.h"
#include "zu_time.h"

zcclResult_t zt_ucx_query(zt_ucx_info_t* info) {
  memset(info, 0, sizeof *info);
  snprintf(info->version, sizeof info->version, "%s", ucp_get_version_string());

  ucp_config_t* config = NULL;
  ucs_status_t st = ucp_config_read(NULL, NULL, &config);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_config_read: %s", ucs_status_string(st));
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
  ucp_context_h ctx = NULL;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_init: %s", ucs_status_string(st));

  ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
  st = ucp_context_query(ctx, &attr);
  if (st == UCS_OK) {
    size_t o = 0;
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST; t++) {
      if (!(attr.memory_types & UCS_BIT(t))) continue;
      int n = snprintf(info->memory_types + o, sizeof info->memory_types - o, "%s%s", o ? "," : "",
                       ucs_memory_type_names[t]);
      if (n > 0 && (size_t)n < sizeof info->memory_types - o) o += (size_t)n;
    }
    info->cuda_memory = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  }
  ucp_cleanup(ctx);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_context_query: %s", ucs_status_string(st));
  return zcclSuccess;
}

/* ---- the process's context ------------------------------------------------- */
static pthread_mutex_t zt_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static ucp_context_h zt_ctx;
static int zt_ctx_refs;
static int zt_ctx_wakeup; /* the context has UCP_FEATURE_WAKEUP */
static int zt_ctx_rma;    /* the context has UCP_FEATURE_RMA (windows: ZCCL_MAILBOX_BYTES > 0) */
static int64_t zt_tcp_eager; /* ZCCL_TCP_EAGER_BYTES, read with the context */

/* Whether UCX_TLS lets UCX use a transport of the family: TCP (tcp) or
 * shared memory (posix, sysv; sm, shm and mm name both). A setting that
 * no transport takes makes UCX warn at every worker's creation. */
static int zt_tls_allows(int shm) {
  const char* tls = getenv("UCX_TLS");
  if (tls == NULL || *tls == '\0') return 1;
  int exclude = tls[0] == '^', named = 0, whole = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", tls + exclude);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int family = shm ? strcmp(t, "sm") == 0 || strcmp(t, "shm") == 0 || strcmp(t, "mm") == 0 : strcmp(t, "tcp") == 0;
    whole |= family;
    named |= family || strcmp(t, "all") == 0 || (shm && (strcmp(t, "posix") == 0 || strcmp(t, "sysv") == 0));
  }
  return exclude ? !whole : named; /* "^posix" leaves sysv */
}

/* Whether zccl sets a UCX size of its own: not when value <= 0, when the
 * user set either of UCX's variables for it, or when UCX_TLS leaves its
 * transport out. */
static int zt_sets(int64_t value, const char* var1, const char* var2, int shm) {
  return value > 0 && getenv(var1) == NULL && getenv(var2) == NULL && zt_tls_allows(shm);
}

static ucs_status_t zt_config_size(ucp_config_t* config, const char* key, int64_t value) {
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)value);
  return ucp_config_modify(config, key, v);
}

/* UCX's TCP segments from ZCCL_TCP_SEG_BYTES, where the user set neither.
 * A 64 KiB message went in 8 segments of 8 KiB, each a send of its own,
 * which the kernel's TCP path prices per call: docs/measurements/collectives.md
 * ("UCX's TCP segments"). */
static ucs_status_t zt_tcp_segments(ucp_config_t* config, int64_t seg) {
  if (!zt_sets(seg, "UCX_TCP_TX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE", 0)) return UCS_OK;
  ucs_status_t st = zt_config_size(config, "TX_SEG_SIZE", seg);
  return st == UCS_OK ? zt_config_size(config, "RX_SEG_SIZE", seg * 4) : st;
}

/* UCX's shared-memory FIFO elements from ZCCL_SHM_FIFO_BYTES, where the
 * user set neither. A message that fits goes inline in the receiver's
 * FIFO as a short message; with UCX's 128-byte elements only up to 100
 * bytes did, so a small allreduce's 128 B-2 KiB messages took the slower
 * buffered path. Larger elements (4352) slowed 64 KiB collectives:
 * docs/measurements/latency.md ("UCX's shared-memory FIFO"). */
static ucs_status_t zt_shm_fifo(ucp_config_t* config, int64_t elem) {
  if (!zt_sets(elem, "UCX_POSIX_FIFO_ELEM_SIZE", "UCX_SYSV_FIFO_ELEM_SIZE", 1)) return UCS_OK;
  return zt_config_size(config, "MM_FIFO_ELEM_SIZE", elem); /* both inherit UCX_MM_FIFO_ELEM_SIZE */
}

static zcclResult_t zt_ctx_get(ucp_context_h* ctx) {
  zcclResult_t res = zcclSuccess;
  pthread_mutex_lock(&zt_ctx_lock);
  if (zt_ctx_refs == 0) {
    ucp_config_t* config = NULL;
    ucs_status_t st = UCS_ERR_INVALID_PARAM;
    int64_t seg = 0, fifo = 0, mailbox = 0;
    res = zu_param_int(ZU_PARAM_TCP_EAGER_BYTES, &zt_tcp_eager);
    if (res == zcclSuccess) res = zu_param_int(ZU_PARAM_TCP_SEG_BYTES, &seg);
    if (res == zcclSuccess) res = zu_param_int(ZU_PARAM_SHM_FIFO_BYTES, &fifo);
    if (res == zcclSuccess) res = zu_param_int(ZU_PARAM_MAILBOX_BYTES, &mailbox);
    if (res == zcclSuccess) st = ucp_config_read(NULL, NULL, &config);
    if (res == zcclSuccess && st == UCS_OK) {
      ucs_status_t seg_st = zt_tcp_segments(config, seg);
      if (seg_st != UCS_OK) /* an older UCX: its own segments */
        ZU_WARN("UCX did not take ZCCL_TCP_SEG_BYTES=%lld: %s (set UCX_TCP_TX_SEG_SIZE instead)", (long long)seg,
                ucs_status_string(seg_st));
      ucs_status_t fifo_st = zt_shm_fifo(config, fifo);
      if (fifo_st != UCS_OK)
        ZU_WARN("UCX did not take ZCCL_SHM_FIFO_BYTES=%lld: %s (set UCX_POSIX_FIFO_ELEM_SIZE instead)",
                (long long)fifo, ucs_status_string(fifo_st));
    }
    /* FAST_CMPL sends (zt_send) stay eager up to UCX's threshold for them. */
    if (res == zcclSuccess && st == UCS_OK && zt_tcp_eager > 0 && getenv("UCX_RNDV_SEND_NBR_THRESH") == NULL) {
      char v[32];
      snprintf(v, sizeof v, "%lld", (long long)zt_tcp_eager + 1);
      st = ucp_config_modify(config, "RNDV_SEND_NBR_THRESH", v);
      if (st != UCS_OK) ucp_config_release(config);
    }
    if (res == zcclSuccess && st == UCS_OK) {
      /* Workers of different communicators progress on different threads.
       * WAKEUP: a rank that has waited a while sleeps on the worker's event
       * fd instead of taking turns on the core (zt_wait); UCX then leaves
       * out transports that cannot wake a sleeper, so ZCCL_SPIN_US=-1
       * (never sleep) does not ask for it. */
      int64_t spin = 0;
      int sleeps = zu_param_int(ZU_PARAM_SPIN_US, &spin) != zcclSuccess || spin >= 0;
      ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                             .features = UCP_FEATURE_TAG | (sleeps ? UCP_FEATURE_WAKEUP : 0) |
                                         (mailbox > 0 ? UCP_FEATURE_RMA : 0),
                             .mt_workers_shared = 1};
      zt_ctx_wakeup = sleeps;
      zt_ctx_rma = mailbox > 0;
      st = ucp_init(&params, config, &zt_ctx);
      ucp_config_release(config);
    }
    if (res == zcclSuccess && st != UCS_OK)
      res = ZU_ERROR(zcclSystemError, "UCX: cannot create a context: %s (check UCX_TLS, UCX_NET_DEVICES)",
                     ucs_status_string(st));
  }
  if (res == zcclSuccess) {
    zt_ctx_refs++;
    *ctx = zt_ctx;
  }
  pthread_mutex_unlock(&zt_ctx_lock);
  return res;
}

static void zt_ctx_put(void);

int zt_cuda_memory(void) {
  static atomic_int known = -1; /* asked once: progress threads of several communicators */
  int k = atomic_load(&known);
  if (k >= 0) return k;
  ucp_context_h ctx;
  if (zt_ctx_get(&ctx) != zcclSuccess) return 0;
  ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
  int cuda = ucp_context_query(ctx, &attr) == UCS_OK && (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  zt_ctx_put();
  atomic_store(&known, cuda);
  return cuda;
}

static void zt_ctx_put(void) {
  pthread_mutex_lock(&zt_ctx_lock);
  if (--zt_ctx_refs == 0) {
    ucp_cleanup(zt_ctx);
    zt_ctx = NULL;
  }
  pthread_mutex_unlock(&zt_ctx_lock);
}

/* ---- workers ----------------------------------------------------------------- */
typedef struct {
  void* buf;
  size_t len;
  ucp_mem_h memh;
  int refs; /* registrations of this (buf, len) not deregistered yet */
} zt_reg_t;

typedef struct zt_ep_arg {
  struct zt_worker* w;
  int peer;
} zt_ep_arg_t;

struct zt_worker {
  ucp_context_h ctx;
  ucp_worker_h worker;
  ucp_address_t* addr;
  size_t addr_len;
  int nranks;
  ucp_err_handling_mode_t err_mode; /* ZCCL_UCX_ERR_MODE */
  ucp_ep_h* eps;         /* NULL until first use */
  ucs_status_t* failed;  /* per peer: UCS_OK or the error UCX reported */
  void** closing;        /* per peer: UCX's close request of a force-closed endpoint */
  uint8_t* unwatchable;  /* per peer: zt_watch could not reach it */
  uint8_t* lanes;        /* per peer, what UCX reaches it over (ZT_LANES_*; 0 not known yet) */
  struct zt_ep_arg* ep_args; /* per peer: what the error callback is told */
  uint8_t** peer_addr;   /* copies of the peers' addresses */
  size_t* peer_len;
  zt_reg_t* regs;
  int nregs, capregs;
  ucp_mem_h win;        /* this rank's window (zt_window_open); NULL: none */
  ucp_rkey_h* win_keys; /* per peer: its window's key, unpacked (NULL: not mapped) */
  int tearing_down; /* zt_worker_destroy runs: peers closing first is normal */
  int efd;          /* the worker's event fd; -1: the transports cannot wake a sleeper */
};

/* The worker's own allocations (not UCX's). */
static void zt_worker_free(zt_worker_t* w) {
  for (int r = 0; w->peer_addr && r < w->nranks; r++) free(w->peer_addr[r]);
  free(w->peer_addr);
  free(w->peer_len);
  free(w->eps);
  free(w->failed);
  free(w->closing);
  free(w->ep_args);
  free(w->unwatchable);
  free(w->lanes);
  free(w->regs);
  free(w->win_keys);
  free(w);
}

zcclResult_t zt_worker_create(zt_worker_t** out) {
  *out = NULL;
  const char* mode = zu_param_str(ZU_PARAM_UCX_ERR_MODE);
  ZU_RETURN_ERR_IF(strcmp(mode, "none") != 0 && strcmp(mode, "peer") != 0, zcclInvalidArgument,
                   "ZCCL_UCX_ERR_MODE=%s: expected none or peer", mode);
  zt_worker_t* w = calloc(1, sizeof *w);
  ZU_RETURN_ERR_IF(w == NULL, zcclSystemError, "transport: out of memory");
  /* UCX 1.13's shared-memory transports have no peer failure handler: in
   * peer mode UCX leaves them out and sends over TCP even on one host. */
  w->err_mode = strcmp(mode, "peer") == 0 ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  zcclResult_t res = zt_ctx_get(&w->ctx);
  if (res != zcclSuccess) {
    zt_worker_free(w);
    return res;
  }
  /* Driven by one thread at a time (zccl's worker lock), not always the same. */
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                            .thread_mode = UCS_THREAD_MODE_SERIALIZED};
  ucs_status_t st = ucp_worker_create(w->ctx, &wp, &w->worker);
  if (st == UCS_OK) {
    st = ucp_worker_get_address(w->worker, &w->addr, &w->addr_len);
    if (st != UCS_OK) ucp_worker_destroy(w->worker);
  }
  w->efd = -1;
  if (st == UCS_OK && zt_ctx_wakeup && ucp_worker_get_efd(w->worker, &w->efd) != UCS_OK) {
    ZU_INFO(ZU_LOG_NET, "transport: the worker has no event fd; waits poll");
    w->efd = -1;
  }
  if (st != UCS_OK) {
    zt_ctx_put();
    zt_worker_free(w);
    return ZU_ERROR(zcclSystemError, "UCX: cannot create a worker: %s", ucs_status_string(st));
  }
  ZU_INFO(ZU_LOG_NET, "transport: worker %p, address %zu bytes", (void*)w, w->addr_len);
  *out = w;
  return zcclSuccess;
}

void zt_worker_address(const zt_worker_t* w, const void** addr, size_t* len) {
  *addr = w->addr;
  *len = w->addr_len;
}

zcclResult_t zt_worker_set_peers(zt_worker_t* w, int nranks, const void* table, size_t stride) {
  ZU_RETURN_ERR_IF(w->nranks != 0, zcclInternalError, "transport: the worker's peers are already set");
  ZU_RETURN_ERR_IF(nranks < 1 || nranks > ZT_MAX_RANKS, zcclInvalidArgument,
                   "transport: %d ranks is outside [1, %d]", nranks, ZT_MAX_RANKS);
  size_t n = (size_t)nranks;
  w->eps = calloc(n, sizeof *w->eps);
  w->failed = calloc(n, sizeof *w->failed);
  w->peer_addr = calloc(n, sizeof *w->peer_addr);
  w->peer_len = calloc(n, sizeof *w->peer_len);
  w->closing = calloc(n, sizeof *w->closing);
  w->ep_args = calloc(n, sizeof *w->ep_args);
  w->unwatchable = calloc(n, 1);
  w->lanes = calloc(n, 1);
  ZU_RETURN_ERR_IF(!w->eps || !w->failed || !w->peer_addr || !w->peer_len || !w->closing || !w->ep_args ||
                       !w->unwatchable || !w->lanes,
                   zcclSystemError, "transport: out of memory for %d peers", nranks);
  w->nranks = nranks;
  const uint8_t* t = table;
  for (int r = 0; r < nranks; r++) {
    uint32_t len;
    memcpy(&len, t + (size_t)r * stride, sizeof len);
    ZU_RETURN_ERR_IF(len == 0 || len > stride - sizeof len, zcclInternalError,
                     "transport: rank %d's address has a bad length %u", r, len);
    w->peer_addr[r] = malloc(len);
    ZU_RETURN_ERR_IF(w->peer_addr[r] == NULL, zcclSystemError, "transport: out of memory");
    memcpy(w->peer_addr[r], t + (size_t)r * stride + sizeof len, len);
    w->peer_len[r] = len;
  }
  return zcclSuccess;
}

/* UCX calls this (during progress) when a peer is unreachable: a killed
 * process, a dropped link. Requests on that endpoint complete with errors;
 * receives are worker-wide, so the caller checks zt_peer_failed. */
static void zt_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  zt_worker_t* w = ((zt_ep_arg_t*)arg)->w;
  int peer = ((zt_ep_arg_t*)arg)->peer;
  if (ep != w->eps[peer]) return; /* an endpoint given up already (zt_cancel, zt_revive) */
  if (w->failed[peer] == UCS_OK) {
    w->failed[peer] = status;
    /* Not a warning: a peer that finished first and closed its side is
     * seen here too (at teardown, or by an idle progress thread), and an
     * operation that needs a lost peer fails with an error naming it. */
    if (w->tearing_down)
      ZU_INFO(ZU_LOG_NET, "transport: rank %d closed before this rank's close finished: %s", peer,
              ucs_status_string(status));
    else
      ZU_INFO(ZU_LOG_NET, "transport: lost rank %d: %s", peer, ucs_status_string(status));
  }
}

static zcclResult_t zt_ep(zt_worker_t* w, int peer, ucp_ep_h* ep) {
  if (w->eps[peer]) {
    *ep = w->eps[peer];
    return zcclSuccess;
  }
  ZU_RETURN_ERR_IF(w->peer_addr[peer] == NULL, zcclInternalError,
                   "transport: no address for rank %d (worker not connected)", peer);
  zt_ep_arg_t* arg = &w->ep_args[peer];
  arg->w = w;
  arg->peer = peer;
  ucp_ep_params_t ep_params = {
      .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA,
      .address = (const ucp_address_t*)w->peer_addr[peer],
      .err_mode = w->err_mode,
      .err_handler = {.cb = zt_ep_error, .arg = arg},
      .user_data = arg};
  ucs_status_t st = ucp_ep_create(w->worker, &ep_params, &w->eps[peer]);
  if (st != UCS_OK) {
    w->eps[peer] = NULL;
    return ZU_ERROR(zcclSystemError, "UCX: cannot reach rank %d: %s", peer, ucs_status_string(st));
  }
  ZU_TRACE(ZU_LOG_NET, "transport: endpoint to rank %d", peer);
  *ep = w->eps[peer];
  return zcclSuccess;
}

/* What every lane of ep is (ZT_LANES_*). UCP has no query for an
 * endpoint's transports, so this reads its configuration as UCX prints it
 * ("lane[0]:  1:tcp/eth0.0 md[1] -> ..."); a format it does not recognise
 * reads as a network other than TCP, which leaves the protocol choice to
 * UCX and the cost model's network prices as they are. */
#define ZT_LANES_TCP 1   /* every lane TCP */
#define ZT_LANES_SHM 2   /* every lane shared memory (or this process) */
#define ZT_LANES_OTHER 3 /* anything else: verbs, a mix, not understood */
static int zt_shm_lane(const char* c) {
  static const char* const shm[] = {":posix/", ":sysv/", ":xpmem/", ":cma/", ":knem/", ":self/"};
  for (size_t i = 0; i < sizeof shm / sizeof shm[0]; i++)
    if (strncmp(c, shm[i], strlen(shm[i])) == 0) return 1;
  return 0;
}

static int zt_ep_lanes(ucp_ep_h ep) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (f == NULL) return ZT_LANES_OTHER;
  ucp_ep_print_info(ep, f);
  int lanes = 0, tcp = 0, shm = 0;
  if (fclose(f) == 0 && text) {
    for (const char* l = strstr(text, "lane["); l; l = strstr(l + 1, "lane[")) {
      const char* c = strstr(l, "]:");
      if (c == NULL) break;
      c += 2;
      while (*c == ' ') c++;
      while (*c >= '0' && *c <= '9') c++; /* the resource index */
      lanes++;
      tcp += strncmp(c, ":tcp/", 5) == 0;
      shm += zt_shm_lane(c);
    }
  }
  free(text);
  return lanes > 0 && tcp == lanes ? ZT_LANES_TCP : lanes > 0 && shm == lanes ? ZT_LANES_SHM : ZT_LANES_OTHER;
}

size_t zt_eager_bytes(const zt_worker_t* w, int peer) {
  return zt_tcp_eager > 0 && w->lanes[peer] == ZT_LANES_TCP ? (size_t)zt_tcp_eager : 0;
}

int zt_peer_shm(const zt_worker_t* w, int peer) { return w->lanes[peer] == ZT_LANES_SHM; }

/* zt_eager_bytes for peer, learning on its first send what UCX reaches it
 * over. */
static size_t zt_peer_eager(zt_worker_t* w, int peer, ucp_ep_h ep) {
  if (w->lanes[peer] == 0) {
    w->lanes[peer] = (uint8_t)zt_ep_lanes(ep);
    if (w->lanes[peer] == ZT_LANES_TCP && zt_tcp_eager > 0)
      ZU_INFO(ZU_LOG_NET, "transport: rank %d is reached over TCP: messages up to %lld bytes go eagerly", peer,
              (long long)zt_tcp_eager);
  }
  return zt_eager_bytes(w, peer);
}

int zt_watch(zt_worker_t* w, int peer) {
  if (w->eps[peer] || w->unwatchable[peer]) return w->eps[peer] != NULL;
  /* A peer that already destroyed its worker (it finished with this
   * communicator before we posted our last receive) cannot be reached: not
   * an error, and not tried again. */
  ucp_ep_params_t ep_params = {
      .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER,
      .address = (const ucp_address_t*)w->peer_addr[peer],
      .err_mode = w->err_mode,
      .err_handler = {.cb = zt_ep_error, .arg = &w->ep_args[peer]}};
  w->ep_args[peer].w = w;
  w->ep_args[peer].peer = peer;
  if (ucp_ep_create(w->worker, &ep_params, &w->eps[peer]) != UCS_OK) {
    w->eps[peer] = NULL;
    w->unwatchable[peer] = 1;
    ZU_INFO(ZU_LOG_NET, "transport: rank %d is not reachable to watch (gone already?)", peer);
  }
  return w->eps[peer] != NULL;
}

int zt_peer_failed(const zt_worker_t* w, int peer) { return (int)w->failed[peer]; }

int zt_progress(zt_worker_t* w) { return (int)ucp_worker_progress(w->worker); }

int zt_wait(zt_worker_t* w, double timeout_s) {
  if (w->efd < 0) return 0;
  /* BUSY: events came after the last progress call; the caller polls again. */
  if (ucp_worker_arm(w->worker) != UCS_OK) return 0;
  int ms = (int)(timeout_s * 1e3);
  struct pollfd p = {.fd = w->efd, .events = POLLIN};
  return poll(&p, 1, ms > 0 ? ms : 1) >= 0;
}

void zt_progress_hook(void* worker, uint32_t done, uint32_t total) {
  (void)done, (void)total;
  /* Until UCX has nothing more to do now: a chunk takes long enough that
   * several messages may have become ready. */
  while (ucp_worker_progress(((zt_worker_t*)worker)->worker)) {
  }
}

/* ---- send / receive ------------------------------------------------------------ */
static void zt_send_done(void* request, ucs_status_t status, void* user_data) {
  zt_req_t* req = user_data;
  req->status = status;
  req->ucx = NULL;
  req->done = 1;
  ucp_request_free(request);
}

static void zt_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user_data) {
  zt_req_t* req = user_data;
  req->status = status;
  if (info) {
    req->length = info->length;
    req->tag = info->sender_tag;
  }
  req->ucx = NULL;
  req->done = 1;
  ucp_request_free(request);
}

static void zt_req_start(zt_req_t* req, int peer, int is_recv) {
  memset(req, 0, sizeof *req);
  req->peer = peer;
  req->is_recv = is_recv;
}

/* Done with status: a request that failed to start is done, failed, so
 * whoever waits on it does not wait for ZCCL_TIMEOUT. */
static void zt_req_end(zt_req_t* req, ucs_status_t status) {
  req->done = 1;
  req->status = status;
}

/* What nbx returned: done now, in flight, or failed to start. */
static zcclResult_t zt_req_started(zt_req_t* req, ucs_status_ptr_t p, const char* what) {
  if (p == NULL) {
    zt_req_end(req, UCS_OK);
  } else if (UCS_PTR_IS_ERR(p)) {
    zt_req_end(req, UCS_PTR_STATUS(p));
    return ZU_ERROR(zcclRemoteError, "UCX: %s rank %d failed: %s", what, req->peer,
                    ucs_status_string(req->status));
  } else {
    req->ucx = p;
  }
  return zcclSuccess;
}

/* A message from buf, or (head not NULL) from head and buf as UCX's iov
 * list in req->piece. */
static void zt_pieces(zt_req_t* req, const void* head, size_t hlen, const void* buf, size_t len,
                      ucp_request_param_t* p, void** buffer, size_t* count) {
  if (head == NULL) {
    *buffer = (void*)buf;
    *count = len;
    return;
  }
  req->piece[0].buf = (void*)head;
  req->piece[0].len = hlen;
  req->piece[1].buf = (void*)buf;
  req->piece[1].len = len;
  p->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p->datatype = ucp_dt_make_iov();
  *buffer = req->piece;
  *count = 2;
}

static zcclResult_t zt_send(zt_worker_t* w, int peer, uint64_t tag, const void* head, size_t hlen, const void* buf,
                            size_t len, void* memh, zt_req_t* req) {
  zt_req_start(req, peer, 0);
  req->length = hlen + len;
  req->tag = tag;
  if (peer < 0 || peer >= w->nranks) {
    zt_req_end(req, UCS_ERR_INVALID_PARAM);
    return ZU_ERROR(zcclInternalError, "transport: send to rank %d of %d", peer, w->nranks);
  }
  if (w->failed[peer] != UCS_OK) {
    zt_req_end(req, w->failed[peer]);
    return ZU_ERROR(zcclRemoteError, "UCX: rank %d is unreachable: %s", peer,
                    ucs_status_string(w->failed[peer]));
  }
  ucp_ep_h ep = NULL;
  zcclResult_t res = zt_ep(w, peer, &ep);
  if (res != zcclSuccess) {
    zt_req_end(req, UCS_ERR_UNREACHABLE);
    return res;
  }
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                           .cb.send = zt_send_done,
                           .user_data = req};
  if (memh) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  void* buffer;
  size_t count;
  zt_pieces(req, head, hlen, buf, len, &p, &buffer, &count);
  size_t eager = zt_peer_eager(w, peer, ep);
  if (eager && hlen + len <= eager) p.op_attr_mask |= UCP_OP_ATTR_FLAG_FAST_CMPL;
  return zt_req_started(req, ucp_tag_send_nbx(ep, buffer, count, tag, &p), "send to");
}

static zcclResult_t zt_recv(zt_worker_t* w, int peer, uint64_t tag, uint64_t mask, void* head, size_t hlen,
                            void* buf, size_t len, void* memh, zt_req_t* req) {
  zt_req_start(req, peer, 1);
  /* Completion always through the callback, which carries the length. */
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                                           UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                           .cb.recv = zt_recv_done,
                           .user_data = req};
  if (memh) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  void* buffer;
  size_t count;
  zt_pieces(req, head, hlen, buf, len, &p, &buffer, &count);
  return zt_req_started(req, ucp_tag_recv_nbx(w->worker, buffer, count, tag, mask, &p), "receive from");
}

zcclResult_t zt_isend(zt_worker_t* w, int peer, uint64_t tag, const void* buf, size_t len, void* memh,
                      zt_req_t* req) {
  return zt_send(w, peer, tag, NULL, 0, buf, len, memh, req);
}

zcclResult_t zt_irecv(zt_worker_t* w, int peer, uint64_t tag, uint64_t mask, void* buf, size_t len,
                      void* memh, zt_req_t* req) {
  return zt_recv(w, peer, tag, mask, NULL, 0, buf, len, memh, req);
}

zcclResult_t zt_isend_head(zt_worker_t* w, int peer, uint64_t tag, const void* head, size_t hlen, const void* buf,
                           size_t len, zt_req_t* req) {
  return zt_send(w, peer, tag, head, hlen, buf, len, NULL, req);
}

zcclResult_t zt_irecv_head(zt_worker_t* w, int peer, uint64_t tag, uint64_t mask, void* head, size_t hlen, void* buf,
                           size_t len, zt_req_t* req) {
  return zt_recv(w, peer, tag, mask, head, hlen, buf, len, NULL, req);
}

int zt_probe(zt_worker_t* w, uint64_t tag, uint64_t mask) {
  ucp_tag_recv_info_t info;
  return ucp_tag_probe_nb(w->worker, tag, mask, 0, &info) != NULL;
}

/* Closes peer's endpoint by force: every request on it completes with an
 * error. The close request is kept for the teardown to wait for (one per
 * peer; a later one is handed back to UCX, which completes it alone). */
static void zt_ep_force_close(zt_worker_t* w, int peer) {
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
  ucs_status_ptr_t s = ucp_ep_close_nbx(w->eps[peer], &p);
  w->eps[peer] = NULL;
  if (!UCS_PTR_IS_PTR(s)) return;
  if (w->closing[peer] == NULL)
    w->closing[peer] = s;
  else
    ucp_request_free(s);
}

void zt_cancel(zt_worker_t* w, zt_req_t* req) {
  if (req->done || req->ucx == NULL) return;
  if (req->is_recv) {
    ucp_request_cancel(w->worker, req->ucx);
    return;
  }
  /* UCX cannot cancel one send; closing the endpoint by force completes
   * every send on it with an error, and the peer counts as failed. */
  int peer = req->peer;
  if (w->eps[peer] == NULL) return;
  if (w->failed[peer] == UCS_OK) w->failed[peer] = UCS_ERR_CANCELED;
  zt_ep_force_close(w, peer);
}

void zt_revive(zt_worker_t* w, int peer) {
  if (peer < 0 || peer >= w->nranks || w->failed[peer] == UCS_OK) return;
  if (w->eps[peer]) zt_ep_force_close(w, peer); /* failed by UCX: closed as zt_cancel closes it */
  w->failed[peer] = UCS_OK;
  ZU_INFO(ZU_LOG_NET, "transport: rank %d reachable again through a new endpoint", peer);
}

int zt_req_pending(const zt_req_t* req) { return !req->done && req->ucx != NULL; }

void zt_abandon(zt_worker_t* w, zt_req_t* req) {
  (void)w;
  if (!zt_req_pending(req)) return;
  /* ucp_request_free on a request in flight: UCX finishes it internally
   * and calls no callback for it. */
  ucp_request_free(req->ucx);
  req->ucx = NULL;
  zt_req_end(req, UCS_ERR_CANCELED);
}

int zt_req_truncated(const zt_req_t* req) { return req->status == UCS_ERR_MESSAGE_TRUNCATED; }

const char* zt_req_error(const zt_req_t* req) {
  return req->status == UCS_OK ? "" : ucs_status_string((ucs_status_t)req->status);
}

/* ---- registrations ------------------------------------------------------------- */
zcclResult_t zt_mem_register(zt_worker_t* w, void* buf, size_t len, void** memh) {
  for (int i = 0; i < w->nregs; i++)
    if (w->regs[i].buf == buf && w->regs[i].len == len) {
      w->regs[i].refs++;
      *memh = w->regs[i].memh;
      return zcclSuccess;
    }
  if (w->nregs == w->capregs) {
    int cap = w->capregs ? 2 * w->capregs : 8;
    zt_reg_t* r = realloc(w->regs, sizeof *r * (size_t)cap);
    ZU_RETURN_ERR_IF(r == NULL, zcclSystemError, "transport: out of memory");
    w->regs = r;
    w->capregs = cap;
  }
  ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                             .address = buf,
                             .length = len};
  ucp_mem_h h;
  ucs_status_t st = ucp_mem_map(w->ctx, &mp, &h);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "UCX: cannot register %zu bytes at %p: %s", len, buf,
                   ucs_status_string(st));
  w->regs[w->nregs++] = (zt_reg_t){buf, len, h, 1};
  *memh = h;
  return zcclSuccess;
}

void zt_mem_deregister(zt_worker_t* w, void* memh) {
  for (int i = 0; i < w->nregs; i++) {
    if (w->regs[i].memh != memh) continue;
    if (--w->regs[i].refs == 0) {
      ucp_mem_unmap(w->ctx, w->regs[i].memh);
      w->regs[i] = w->regs[--w->nregs];
    }
    return;
  }
}

void* zt_mem_find(const zt_worker_t* w, const void* buf, size_t len) {
  const char* b = buf;
  for (int i = 0; i < w->nregs; i++) {
    const char* r = w->regs[i].buf;
    if (b >= r && len <= w->regs[i].len && (size_t)(b - r) <= w->regs[i].len - len) return w->regs[i].memh;
  }
  return NULL;
}

/* ---- windows ------------------------------------------------------------------------ */
zcclResult_t zt_window_open(zt_worker_t* w, size_t bytes, void** base, zt_window_key_t* key) {
  *base = NULL;
  memset(key, 0, sizeof *key);
  ZU_RETURN_ERR_IF(w->win != NULL, zcclInternalError, "transport: the worker has a window already");
  if (!zt_ctx_rma || bytes == 0 || !zt_tls_allows(1)) return zcclSuccess; /* peers map it over shared memory only */
  w->win_keys = calloc((size_t)w->nranks, sizeof *w->win_keys);
  ZU_RETURN_ERR_IF(w->win_keys == NULL, zcclSystemError, "transport: out of memory for %d peers", w->nranks);
  ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                             .length = bytes,
                             .flags = UCP_MEM_MAP_ALLOCATE};
  ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH};
  void* packed = NULL;
  size_t len = 0;
  ucs_status_t st = ucp_mem_map(w->ctx, &mp, &w->win);
  if (st == UCS_OK) st = ucp_mem_query(w->win, &attr);
  if (st == UCS_OK) st = ucp_rkey_pack(w->ctx, w->win, &packed, &len);
  if (st != UCS_OK || len > sizeof key->key || attr.length < bytes) {
    ZU_INFO(ZU_LOG_NET, "transport: no window of %zu bytes: %s", bytes,
            st != UCS_OK ? ucs_status_string(st) : "its key or size does not fit");
    if (packed) ucp_rkey_buffer_release(packed);
    zt_window_close(w);
    return zcclSuccess;
  }
  memcpy(key->key, packed, len);
  ucp_rkey_buffer_release(packed);
  key->len = (uint32_t)len;
  key->base = (uint64_t)(uintptr_t)attr.address;
  memset(attr.address, 0, bytes);
  *base = attr.address;
  return zcclSuccess;
}

void* zt_window_peer(zt_worker_t* w, int peer, const zt_window_key_t* key) {
  ucp_ep_h ep;
  void* ptr = NULL;
  if (w->win == NULL || key->len == 0 || key->len > sizeof key->key || peer < 0 || peer >= w->nranks ||
      w->win_keys[peer] != NULL || zt_ep(w, peer, &ep) != zcclSuccess)
    return NULL;
  if (ucp_ep_rkey_unpack(ep, key->key, &w->win_keys[peer]) != UCS_OK) {
    w->win_keys[peer] = NULL;
    return NULL;
  }
  /* UCS_ERR_UNREACHABLE: no transport between the two maps memory. */
  ucs_status_t st = ucp_rkey_ptr(w->win_keys[peer], key->base, &ptr);
  if (st != UCS_OK) {
    ZU_INFO(ZU_LOG_NET, "transport: rank %d's window is not mapped here: %s", peer, ucs_status_string(st));
    ucp_rkey_destroy(w->win_keys[peer]);
    w->win_keys[peer] = NULL;
    return NULL;
  }
  return ptr;
}

void zt_window_close(zt_worker_t* w) {
  for (int r = 0; w->win_keys && r < w->nranks; r++)
    if (w->win_keys[r]) ucp_rkey_destroy(w->win_keys[r]);
  free(w->win_keys);
  w->win_keys = NULL;
  if (w->win) ucp_mem_unmap(w->ctx, w->win);
  w->win = NULL;
}

/* ---- teardown ---------------------------------------------------------------------- */
void zt_worker_destroy(zt_worker_t* w, double deadline_s, int force) {
  if (w == NULL) return;
  w->tearing_down = 1;
  zt_window_close(w); /* the keys before their endpoints */
  double deadline = zu_now() + deadline_s;
  /* Close every endpoint together (flushing, unless forced or the peer is
   * gone: a dead peer can't acknowledge a flush), then progress until all
   * are closed or the deadline passes. */
  for (int r = 0; r < w->nranks; r++) {
    if (!w->eps[r]) continue;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = (force || w->failed[r] != UCS_OK) ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    ucs_status_ptr_t s = ucp_ep_close_nbx(w->eps[r], &p);
    w->eps[r] = NULL;
    if (UCS_PTR_IS_PTR(s)) w->closing[r] = s;
  }
  for (int pending = 1; pending;) {
    pending = 0;
    ucp_worker_progress(w->worker);
    int late = zu_now() > deadline;
    for (int r = 0; r < w->nranks; r++) {
      if (!w->closing[r]) continue;
      if (ucp_request_check_status(w->closing[r]) != UCS_INPROGRESS || late) {
        if (late) ZU_WARN("transport: rank %d did not acknowledge the close in time", r);
        /* Released now; a close still in progress ends with the worker. */
        ucp_request_free(w->closing[r]);
        w->closing[r] = NULL;
      } else {
        pending = 1;
      }
    }
  }
  for (int i = 0; i < w->nregs; i++) ucp_mem_unmap(w->ctx, w->regs[i].memh);
  ucp_worker_release_address(w->worker, w->addr);
  ucp_worker_destroy(w->worker);
  zt_ctx_put();
  zt_worker_free(w);
}
