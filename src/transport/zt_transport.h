/* Transport layer (zt_): moves bytes between ranks over UCX UCP. May use
 * util; never codec, device or proto.
 *
 * One UCP context per process (reference counted), one worker per
 * communicator: communicators are kept apart by their workers, so a tag only
 * has to separate the operations of one communicator. A worker is used by one
 * thread at a time (the caller serializes: zccl's worker lock), so workers
 * are created in serialized mode. Endpoints to peers are made on
 * first use. */
#ifndef ZT_TRANSPORT_H_
#define ZT_TRANSPORT_H_

#include <stddef.h>
#include <stdint.h>

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char version[32];      /* UCX library version */
  int cuda_memory;       /* 1 when UCX can send from/receive into CUDA memory */
  char memory_types[128];/* memory types UCX's context reports, e.g. "host,rdma" */
} zt_ucx_info_t;

/* Creates a throw-away UCP context to learn what this UCX build supports. */
zcclResult_t zt_ucx_query(zt_ucx_info_t* info);

/* 1 when the process's UCX context sends from and receives into CUDA
 * memory (a CUDA-aware UCX build); else device buffers need staging. */
int zt_cuda_memory(void);

/* RDMA devices libibverbs finds (0 when none or no driver). */
int zt_verbs_ndevices(void);

/* ---- tags -------------------------------------------------------------------
 * 64 bits: kind (4) | source rank (20) | 40 bits the kind lays out.
 * kind separates point-to-point, collectives and the library's own
 * messages; the source rank lets a receive name its peer (UCX matches tags,
 * not senders). Point-to-point and internal tags (zt_tag) go on with
 * sequence (24) | sub (16): the sequence numbers operations (per peer pair
 * for point-to-point, per communicator for the library's own exchanges) and
 * sub the messages of one. Collectives lay out their 40 bits in proto
 * (zp_tag.h: a shorter sequence, a wider sub), under zt_tag_head. */
#define ZT_MAX_RANKS (1 << 20)
typedef enum { ZT_TAG_P2P = 1, ZT_TAG_COLL = 2, ZT_TAG_INTERNAL = 3 } zt_tag_kind_t;
#define ZT_TAG_SRC_SHIFT 40
#define ZT_TAG_SRC_MASK ((uint64_t)0xfffff << ZT_TAG_SRC_SHIFT)
static inline uint64_t zt_tag_head(zt_tag_kind_t kind, int src) {
  return ((uint64_t)kind << 60) | ((uint64_t)(src & 0xfffff) << ZT_TAG_SRC_SHIFT);
}
static inline uint64_t zt_tag(zt_tag_kind_t kind, int src, uint32_t seq, uint32_t sub) {
  return zt_tag_head(kind, src) | ((uint64_t)(seq & 0xffffff) << 16) | (uint64_t)(sub & 0xffff);
}
#define ZT_TAG_MASK_ALL UINT64_MAX

/* ---- workers, endpoints, requests ------------------------------------------ */
typedef struct zt_worker zt_worker_t;

/* Request: owned by the caller, must stay in place until zt_test says done
 * (or zt_cancel returned). */
typedef struct {
  void* ucx;        /* UCX's request while in flight */
  int done;         /* 1 once completed (successfully or not) */
  int status;       /* ucs_status_t at completion */
  size_t length;    /* receives: bytes the sender sent (also when too many) */
  uint64_t tag;     /* receives: the matched tag */
  int peer;         /* for error reports */
  int is_recv;
  /* A message in two pieces (zt_isend_head, zt_irecv_head): UCX reads the
   * list until the request completes. */
  struct {
    void* buf;
    size_t len;
  } piece[2];
} zt_req_t;

/* Creates a worker for a communicator; the process's context is made on
 * first use. */
zcclResult_t zt_worker_create(zt_worker_t** worker);
/* The worker's address, for the bootstrap to exchange. */
void zt_worker_address(const zt_worker_t* w, const void** addr, size_t* len);
/* The communicator's nranks peers (itself included): rank r's address is at
 * table + r*stride, a uint32 length then the bytes. Copied; endpoints are
 * created on first use. Once per worker. */
zcclResult_t zt_worker_set_peers(zt_worker_t* w, int nranks, const void* table, size_t stride);
/* Closes endpoints (flushing them until deadline seconds from now; at once
 * with force), destroys the worker, drops the context reference. */
void zt_worker_destroy(zt_worker_t* w, double deadline_s, int force);

/* Drives UCX; returns nonzero when something happened. */
int zt_progress(zt_worker_t* w);
/* Sleeps until the worker has something to progress or timeout_s passes.
 * Call only after zt_progress returned 0. Returns 0 at once when it cannot
 * sleep (events pending, or transports without wake-up): poll instead. */
int zt_wait(zt_worker_t* w, double timeout_s);
/* The same, shaped as the codec's between-chunks hook (zc_progress_fn,
 * arg = the worker): messages move while a long compression runs, on the
 * thread that owns the worker (ZCCL's overlap of compression and
 * communication). */
void zt_progress_hook(void* worker, uint32_t done, uint32_t total);

/* Non-blocking tagged send/receive of len bytes (any size, 0 included).
 * memh: a registration from zt_mem_register covering buf, or NULL. A
 * receive takes a message of at most len bytes; req->length is the true
 * length sent, and a longer message completes with an error, nothing
 * written past buf+len. */
zcclResult_t zt_isend(zt_worker_t* w, int peer, uint64_t tag, const void* buf, size_t len, void* memh,
                      zt_req_t* req);
zcclResult_t zt_irecv(zt_worker_t* w, int peer, uint64_t tag, uint64_t mask, void* buf, size_t len,
                      void* memh, zt_req_t* req);
/* The same for a message that is a head and a body, sent as one message
 * from two places (no copy, no second message): the receive puts the
 * first hlen bytes into head and up to len more into buf; req->length
 * counts both. memh is not taken (a registration covers one piece). */
zcclResult_t zt_isend_head(zt_worker_t* w, int peer, uint64_t tag, const void* head, size_t hlen, const void* buf,
                           size_t len, zt_req_t* req);
zcclResult_t zt_irecv_head(zt_worker_t* w, int peer, uint64_t tag, uint64_t mask, void* head, size_t hlen, void* buf,
                           size_t len, zt_req_t* req);
/* 1 when a message matching tag under mask has arrived that no receive
 * has taken yet (it stays for one). */
int zt_probe(zt_worker_t* w, uint64_t tag, uint64_t mask);
/* Cancels an in-flight request; it completes (done=1) after progress. */
void zt_cancel(zt_worker_t* w, zt_req_t* req);
/* Forgets that peer failed and drops its endpoint (a later message makes a
 * new one): after a failed operation cancelled its messages (which closes
 * their endpoints) the live peers can be reached again, for the exchange
 * that rebuilds a communicator without the dead ones. A no-op for a peer
 * that never failed. */
void zt_revive(zt_worker_t* w, int peer);
/* 1 while a request is in flight: posted and not completed (a request
 * never posted, or completed, is not). */
int zt_req_pending(const zt_req_t* req);
/* Gives a request that did not complete after zt_cancel back to UCX: no
 * callback will touch req again (it may live on a stack that is about to
 * go), and req reads as done with UCS_ERR_CANCELED. UCX may still read a
 * send's buffer until the endpoint is gone; a receive's buffer is never
 * written after a cancel. */
void zt_abandon(zt_worker_t* w, zt_req_t* req);
/* Error text of a completed request; "" when it succeeded. */
const char* zt_req_error(const zt_req_t* req);
/* Whether a completed receive was cut short because the sender sent more. */
int zt_req_truncated(const zt_req_t* req);

/* 0 while the endpoint to peer is healthy (or not made yet); else UCX's
 * error status once UCX declared the peer failed. */
int zt_peer_failed(const zt_worker_t* w, int peer);
/* Bytes up to which sends to peer go eagerly (ZCCL_TCP_EAGER_BYTES when UCX
 * reaches it over TCP only, known once something was sent to it); 0: UCX
 * chooses. */
size_t zt_eager_bytes(const zt_worker_t* w, int peer);
/* 1 when UCX reaches peer over shared memory only (known once something
 * was sent to it); 0: a network, or not known. */
int zt_peer_shm(const zt_worker_t* w, int peer);
/* Makes the endpoint to peer now, without sending, so UCX can report the
 * peer's death while we wait for it (where UCX can tell). Best effort:
 * returns 0 when the peer cannot be reached (its worker may be gone after
 * finishing with the communicator); never an error. */
int zt_watch(zt_worker_t* w, int peer);

/* A window: bytes of this rank's memory that UCX allocates where peers on
 * the same machine can map it (ucp_mem_map, UCP_MEM_MAP_ALLOCATE), and
 * that they then write with plain stores (ucp_rkey_ptr): no message, no
 * FIFO. A worker has at most one; it goes with the worker. */
#define ZT_WINDOW_KEY_BYTES 496
typedef struct {
  uint64_t base; /* the window's address in its owner */
  uint32_t len;  /* of the packed key; 0: no window (none could be made) */
  uint32_t pad;
  uint8_t key[ZT_WINDOW_KEY_BYTES];
} zt_window_key_t;
/* Makes this rank's window of bytes (zeroed) and its key for the peers.
 * *base NULL and key->len 0 when UCX cannot make one that peers map (no
 * RMA in the context: ZCCL_MAILBOX_BYTES=0; UCX_TLS without shared
 * memory; a packed key too large). */
zcclResult_t zt_window_open(zt_worker_t* w, size_t bytes, void** base, zt_window_key_t* key);
/* Peer's window as mapped into this process, or NULL when it cannot be
 * (another machine, no shared-memory transport between the two). */
void* zt_window_peer(zt_worker_t* w, int peer, const zt_window_key_t* key);
/* Unmaps the peers' windows and frees this rank's (also done by
 * zt_worker_destroy). Peers that still store into it write memory that
 * stays mapped on their side until they close theirs. */
void zt_window_close(zt_worker_t* w);

/* Registrations (ucp_mem_map) of buffers that are reused (zcclCommRegister):
 * the same (buf, len) gives the same handle, counted; deregistered as many
 * times it is unmapped; what is left goes with the worker. zt_mem_find: the
 * handle of a registration covering [buf, buf+len), or NULL, to pass as a
 * message's memh (UCX then skips its own registration of the buffer). */
zcclResult_t zt_mem_register(zt_worker_t* w, void* buf, size_t len, void** memh);
void zt_mem_deregister(zt_worker_t* w, void* memh);
void* zt_mem_find(const zt_worker_t* w, const void* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ZT_TRANSPORT_H_ */
