/* Core (public API) internals: the communicator and the helpers every API
 * file uses. Core may include every layer below it. */
#ifndef ZCCL_CORE_H_
#define ZCCL_CORE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "zccl.h"
#include "zd_device.h"
#include "zp_coll.h"
#include "zt_transport.h"
#include "zu_error.h"

#define ZCCL_COMM_MAGIC 0x636f6d6du /* "comm" */

/* A queued operation. The progress thread runs operations one at a time in
 * the order they were queued; the messages of one operation are all in
 * flight together (that is what makes a group's pairwise exchange free of
 * deadlock). */
typedef struct zccl_op {
  const char* what;        /* "zcclSend", "zcclGroupEnd", "zcclCommSplit", ... */
  zp_xfer_t* xfers;        /* point-to-point: messages to run together */
  int nxfers;
  int ncolls;              /* collectives: run in order, after the messages */
  zp_coll_args_t* colls;
  int calibrate;           /* measure the link for the cost model (seq: coll_seq) */
  uint32_t seq;
  zd_dev_t* dev;           /* where it computes; NULL: the communicator's device */
  /* Stream-ordered (device buffers, zccl.h): it starts once every ticket's
   * stream has passed the call, releases them when it ends, and nobody
   * waits for it: the progress thread frees it (detached). */
  zd_ticket_t** tickets;
  int ntickets;
  int detached;
  /* Runs on a broken or revoked communicator too (the exchange of a split
   * or shrink that rebuilds from it), given up only by an abort. */
  int despite_error;
  zcclResult_t result;
  char msg[400];           /* why, when result is an error */
  atomic_int done;
  struct zccl_op* next;
} zccl_op_t;

struct zcclComm {
  uint32_t magic;          /* ZCCL_COMM_MAGIC while alive; catches garbage handles */
  int rank, nranks;
  int cuda_dev;            /* -1: host only */
  int blocking;
  int finalized;
  char name[64];
  zcclCompression_t compression;
  zcclResult_t async_error;
  char async_msg[400];

  /* Runtime (zccl_progress.c). */
  int runtime;             /* lock, conditions and worker exist */
  zt_worker_t* worker;
  double timeout;          /* ZCCL_TIMEOUT, seconds */
  double spin;             /* ZCCL_SPIN_US, seconds; < 0: waits never sleep */
  int check_calls;         /* ZCCL_CHECK_CALLS */
  int checksum;            /* ZCCL_CHECKSUM */
  pthread_t thread;
  int thread_started;
  pthread_mutex_t lock;    /* guards the queue, stop/abort and async_error */
  pthread_mutex_t worker_lock; /* whoever drives the worker holds it: the progress
                                  thread, or a caller running its operation inline */
  pthread_cond_t wake;     /* work was queued, or stop */
  pthread_cond_t done_cv;  /* an operation finished */
  zccl_op_t *head, *tail;
  /* Written under lock beside what they mirror, read without it by every
   * call (zccl_op_inline, zccl_comm_check_usable): a lock taken twice a
   * call was a tenth of a 2-rank small allreduce's time. */
  atomic_int queued;       /* head != NULL */
  atomic_int troubled;     /* async_error set or revoked: the calls look under lock */
  int stop;                /* drain the queue, then exit */
  atomic_int abort;        /* fail what is queued or running, then exit */
  atomic_int cancel;       /* running operations give up (abort, zcclCommRevoke) */
  int revoked;             /* zcclCommRevoke: queued work fails, new calls are refused (under lock) */
  uint32_t shrink_seq;     /* zcclCommShrink's exchanges, among the ranks kept */
  uint32_t* send_seq;      /* per peer: point-to-point sequence numbers */
  uint32_t* recv_seq;
  uint32_t internal_seq;   /* the library's own exchanges (split) */
  uint32_t coll_seq;       /* collectives, numbered alike on every rank */
  zd_dev_t* dev;           /* where the algorithms compute (ZCCL_DEVICE) */
  zd_dev_t* gpu;           /* cuda device for calls on device buffers, made at the first */
  zp_link_t link;          /* the cost model's view of the network */
  zp_algo_rules_t algo_rules; /* ZCCL_ALGO, parsed at creation */
  zp_choice_memo_t algo_memo;  /* the last uncompressed choice (under worker_lock) */
  zp_mbox_t mbox;              /* small exchanges by stores, one machine (under worker_lock) */
  zp_stats_t stats;        /* compressed bytes sent (under worker_lock) */
  zp_notice_t notice;      /* peers' failures, and this rank's (under worker_lock) */
  struct zccl_redop* redops; /* zcclRedOpCreatePreMulSum's ops (ZCCL_MAX_REDOPS, made at the first) */
  /* Under the live list's lock (zccl_init.c): API calls inside the
   * communicator now, and whether a destroy or abort has begun. */
  int users;
  int closing;
};

/* ---- runtime (zccl_progress.c) ---- */
/* Creates the lock, conditions and worker; the caller sets nranks and the
 * peers (zccl_connect), then starts the thread. */
zcclResult_t zccl_runtime_create(zcclComm_t comm);
zcclResult_t zccl_runtime_start(zcclComm_t comm);
/* Waits for queued operations (bounded by ZCCL_TIMEOUT each), stops the
 * thread, closes the endpoints. abort: cancel instead of waiting. */
void zccl_runtime_stop(zcclComm_t comm, int abort);
/* What runs gives up and what is queued fails (abort and cancel set, the
 * thread woken); the thread then exits at zccl_runtime_stop. */
void zccl_runtime_abort(zcclComm_t comm);
/* Queues op, waits for it, and returns its result (the message re-raised
 * on this thread). The op's memory belongs to the caller. */
zcclResult_t zccl_op_run(zcclComm_t comm, zccl_op_t* op);
/* Runs op on this thread when nothing is queued before it and the
 * communicator takes work: 1 and its result in *res; else 0, and op is
 * untouched (op may then live on the caller's stack). */
int zccl_op_inline(zcclComm_t comm, zccl_op_t* op, zcclResult_t* res);
/* Queues op without waiting (groups queue one op per communicator). */
zcclResult_t zccl_op_submit(zcclComm_t comm, zccl_op_t* op);
zcclResult_t zccl_op_wait(zcclComm_t comm, zccl_op_t* op);
/* An operation with room for nxfers messages, in one allocation. */
zccl_op_t* zccl_op_new(const char* what, int nxfers, int ncolls);
/* The same in memory the caller provides: zccl_op_t, then room for the
 * messages and collectives, zeroed. */
zccl_op_t* zccl_op_init(void* mem, const char* what, int nxfers, int ncolls);
void zccl_op_free(zccl_op_t* op);
/* The communicator's asynchronous error (and its message into msg). */
zcclResult_t zccl_comm_error(zcclComm_t comm, char* msg, size_t len);
/* zcclCommRevoke: refuses new work, makes what is queued fail and what
 * runs give up, and returns once nothing is left (bounded like a wait). */
zcclResult_t zccl_comm_revoke(zcclComm_t comm);
int zccl_comm_revoked(zcclComm_t comm);
/* zcclInvalidUsage when comm was revoked, its pending error when it has
 * one (fn's message says which), else zcclSuccess: one look under the lock. */
zcclResult_t zccl_comm_check_usable(zcclComm_t comm, const char* fn);
/* Records the communicator's first asynchronous error. */
void zccl_comm_set_error(zcclComm_t comm, zcclResult_t res, const char* msg);

/* How a call runs (zccl.h, "Buffers and streams"): on which device, and
 * whether stream-ordered on `stream`. */
typedef struct {
  zd_dev_t* dev;
  int ordered;
  zcclStream_t stream;
} zccl_call_t;
/* From the buffers this rank uses (NULL: none) and the stream. Device
 * buffers on a communicator without a CUDA device, or host and device
 * buffers in one call: zcclInvalidArgument / zcclInvalidUsage. */
zcclResult_t zccl_call_how(zcclComm_t comm, const char* fn, const void* sb, const void* rb, zcclStream_t stream,
                           zccl_call_t* how);
/* Queues a stream-ordered operation. Async (tickets on the given streams):
 * the progress thread runs and frees it; *wait 0. Where the device blocks
 * (ZCCL_STREAM_MODE): the streams' earlier work is waited for here, the
 * operation is submitted, and *wait is 1: the caller waits for it with
 * zccl_op_wait and frees it. On an error nothing was queued. */
zcclResult_t zccl_op_order(zcclComm_t comm, zccl_op_t* op, const zcclStream_t* streams, int nstreams, int* wait);

/* ---- point-to-point and groups (zccl_p2p.c, zccl_group.c) ---- */
/* Numbers a send or receive in its peer pair's order and fills its tag. */
void zccl_p2p_tag(zcclComm_t comm, zp_xfer_t* x);
/* Inside a group: adds the message (x) or the collective (c) to the
 * group; returns 1. Else 0. */
int zccl_group_add(zcclComm_t comm, const zp_xfer_t* x, const zp_coll_args_t* c, const zccl_call_t* how,
                   zcclResult_t* res);
/* 1 inside zcclGroupStart/End on this thread. */
int zccl_group_active(void);
/* Records a failed call inside a group: zcclGroupEnd will fail with it. */
void zccl_group_error(zcclResult_t res);
/* Forgets a communicator's pending group entries (it is being destroyed). */
void zccl_group_forget(zcclComm_t comm);

/* ---- meeting peers (zccl_connect.c) ---- */
/* Exchanges worker addresses among the ranks of a new communicator through
 * the bootstrap the id and ZCCL_BOOTSTRAP choose; fills the worker's peers. */
zcclResult_t zccl_connect(zcclComm_t comm, const zcclUniqueId* id);
/* Every rank of comm (among NULL), or the ranks among marks (nonzero
 * bytes, nranks of them; this rank one), contributes len bytes; table
 * receives their entries at their ranks' offsets (nranks*len, others left
 * as they are). Runs over comm's own transport (split, shrink), on a
 * revoked communicator too, and with among on a broken one. */
zcclResult_t zccl_comm_allgather(zcclComm_t comm, const uint8_t* among, const void* blob, size_t len, void* table);
/* Address slot of the exchanged tables: uint32 length then the bytes; its
 * last 12 bytes carry the node id and core count (zccl_addr_pack). */
#define ZCCL_ADDR_SLOT 2048
zcclResult_t zccl_addr_pack(zcclComm_t comm, uint8_t slot[ZCCL_ADDR_SLOT]);
/* From a table of every rank's packed slot: the most ranks per core on any
 * machine (at least 1), the same on every rank (zp_link_t.cpu_share). */
double zccl_cpu_share(const uint8_t* table, int nranks);
/* Ranks of the table on rank r's machine (r included). */
int zccl_node_ranks(const uint8_t* table, int nranks, int r);
/* Sets both from the table: the link's cpu_share and how many ranks share
 * this rank's cores, for the host device's threads (zd_set_node_ranks). */
void zccl_set_sharing(zcclComm_t comm, const uint8_t* table);

/* Logs the library banner once (ZCCL_DEBUG=VERSION and above). */
void zccl_init_once(void);

/* An API call's hold on comm, so that a destroy or abort from another
 * thread (c10d's watchdog aborts while a collective waits) waits for the
 * call to leave instead of freeing the communicator under it: enter checks
 * comm as zccl_comm_check does, refuses one being closed, and sets *held;
 * release lets go (a NULL *held: nothing). ZCCL_HOLD does both, the
 * release at every return of the calling function (GCC/Clang cleanup). */
zcclResult_t zccl_comm_enter(const char* fn, zcclComm_t comm, zcclComm_t* held);
void zccl_comm_release(zcclComm_t* held);
#define ZCCL_HOLD(fn, comm)                                                          \
  zcclComm_t zccl_held_ __attribute__((cleanup(zccl_comm_release))) = NULL;         \
  ZU_CHECK(zccl_comm_enter((fn), (comm), &zccl_held_))
/* Destroy and abort: marks comm closing (once: a second is refused), then
 * waits until no call holds it. */
zcclResult_t zccl_comm_claim(const char* fn, zcclComm_t comm);
void zccl_comm_wait_users(zcclComm_t comm);
/* 1 while comm is a communicator not yet destroyed or aborted (reads
 * nothing through comm; zccl_init.c). */
int zccl_comm_live(zcclComm_t comm);
/* Into and out of that list: at allocation (0: out of memory) and free. */
int zccl_live_add(zcclComm_t comm);
void zccl_live_remove(zcclComm_t comm);

/* ---- custom reduction ops (zccl_redop.c) ---- */
#define ZCCL_MAX_REDOPS 1024
/* Checks a reducing collective's op: a built-in one, or one of comm's
 * pre-multiplied sums, which becomes zcclSum with a->premul and its scalar
 * (a->datatype must be the op's). */
zcclResult_t zccl_redop_resolve(zcclComm_t comm, const char* fn, zp_coll_args_t* a);
void zccl_redops_free(zcclComm_t comm);

/* Checks a compression setting; fn names the caller in the message. */
zcclResult_t zccl_compression_check(const char* fn, const zcclCompression_t* c);

#endif /* ZCCL_CORE_H_ */
