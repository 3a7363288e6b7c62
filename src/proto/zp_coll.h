/* Proto layer (zp_): the algorithms, one file per family, written only
 * against zt_ (transport) and zd_ (device). This header describes one
 * collective call as the core hands it down. */
#ifndef ZP_COLL_H_
#define ZP_COLL_H_

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "zccl.h"
#include "zd_device.h"
#include "zt_transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ZP_COLL_ALLREDUCE,
  ZP_COLL_BROADCAST,
  ZP_COLL_REDUCE,
  ZP_COLL_ALLGATHER,
  ZP_COLL_REDUCESCATTER,
  ZP_COLL_ALLTOALL,
  ZP_COLL_GATHER,
  ZP_COLL_SCATTER,
  ZP_COLL_SEND,
  ZP_COLL_RECV,
  ZP_NUM_COLLS
} zp_coll_id_t;

typedef struct {
  zp_coll_id_t coll;
  const void* sendbuff;
  void* recvbuff;
  size_t count;        /* as the API call names it (per-rank for allgather, ...) */
  zcclDataType_t datatype;
  zcclRedOp_t op;      /* reductions only */
  int root;            /* rooted collectives; the peer for send/recv */
  int rank, nranks;    /* of the communicator */
  zcclStream_t stream;
  zcclCompression_t compression; /* in force for this call */
  uint32_t seq;        /* the communicator's collective sequence number */
  /* A pre-multiplied sum (zcclRedOpCreatePreMulSum; op is zcclSum): this
   * rank's input is multiplied by its scalar first (zd_scale's at, bits). */
  int premul;
  const void* scalar_at;
  uint64_t scalar_bits;
} zp_coll_args_t;

/* The codec figures the cost model prices compressed algorithms with:
 * bytes of raw values per second on one core (or one GPU), and the
 * compression ratio. A field left 0 takes the model's default (zp_algo.h,
 * ZP_AUTO_*; decompress_bps: compress_bps). A communicator leaves them 0;
 * tools that model another machine or codec fill them (perf/zccl_scale.c). */
typedef struct {
  double compress_bps;
  double decompress_bps;
  double hop_bps;        /* homomorphic sum of two streams */
  double hop_values_bps; /* compress and add to a stream in one pass (zd_hop_values) */
  double reduce_bps;     /* uncompressed sum of two buffers (every algorithm's) */
  double ratio;          /* raw bytes / stream bytes */
  double range_bps;      /* a REL bound's scan of the input for its value range (zp_eb_abs) */
} zp_speeds_t;

/* The link as the cost model sees it: latency alpha (s) and bandwidth
 * (bytes/s), measured when the communicator is created (zp_calibrate),
 * identical on every rank so that every rank picks the same algorithm. */
typedef struct {
  double alpha;
  double bandwidth;
  double fanout; /* time of one message to all N-1 peers at once / to one (1 .. N-1) */
  double incast; /* a direct round (all to all at once) / a ring exchange of the same bytes (1 .. N-1) */
  /* Ranks per core on the busiest machine of the communicator (>= 1, from
   * the bootstrap): a host codec shared by that many ranks runs that much
   * slower per rank, which is what decides codec=auto on crowded nodes. */
  double cpu_share;
  /* Messages up to this size go eagerly to some rank's ring neighbour (the
   * largest such limit; 0: none): pipelines keep their pieces within it,
   * a larger piece goes by rendezvous, which over TCP idles the link. */
  double eager_bytes;
  /* 1: every rank reaches its ring neighbour over shared memory only (one
   * machine, UCX's shared-memory transports); 0: a network, or not
   * measured. Decides whether the fan-out and all-to-all factors, which
   * price messages queueing on one link, apply (zp_direct.c). */
  int shm;
  /* 1: every rank runs on this machine (the same kernel boot id; set at
   * creation): the mailbox (zp_mailbox.c) may work. */
  int one_machine;
  /* A small exchange by the mailbox among all ranks (s; the worst rank's
   * median, measured with the latency); 0: no mailbox. */
  double mbox_alpha;
  zp_speeds_t speeds; /* the codec's rates and ratio (zeros: the model's defaults) */
} zp_link_t;

/* What the compressed collectives moved (zcclCommCompressionStats): per
 * stream this rank sent, the bytes it stands for and its own bytes. */
typedef struct {
  uint64_t raw_bytes, wire_bytes;
} zp_stats_t;

/* What a rank calls a collective with, checked against its left
 * neighbour's in every collective (so any difference across ranks is seen
 * by some rank, which then tells all: zp_notice_send). */
typedef struct {
  uint32_t coll, dtype, op;
  int32_t root;
  uint64_t count;
  int32_t codec, mode;
  double eb;
  uint64_t min_bytes;
} zp_sig_t;

/* A call signature sent by a call that stalls while carrying its
 * signature in its messages (zp_xfers_wait): its sequence number says
 * which call. */
typedef struct {
  uint32_t seq;
  int32_t rank;
  zp_sig_t sig;
  char algo[24]; /* the algorithm the call runs: calls alike but for ZCCL_ALGO differ here */
} zp_stall_sig_t;

/* A rank's word that its communicator broke: sent to every peer when an
 * operation fails there (zp_notice_send), so that ranks that do not wait
 * on it directly fail at once, naming it, instead of at ZCCL_TIMEOUT. */
typedef struct {
  int32_t rank;
  int32_t code; /* zcclResult_t */
  char why[248];
} zp_notice_msg_t;

typedef struct {
  zt_req_t rx;          /* posted for any peer's notice while the communicator lives */
  zp_notice_msg_t in;
  int listening;
  zt_req_t* tx;         /* one per peer, sent once */
  int ntx;
  zp_notice_msg_t out;
  /* A stalled call's signature (zp_stall_sig_send), sent to the peers the
   * call waits on, and the receive for peers' (posted with rx). */
  zt_req_t stall_rx;
  int stall_listening;
  zp_stall_sig_t stall_in;
  zt_req_t* stall_tx;   /* one per peer (nstall) */
  int nstall;
  zp_stall_sig_t stall_out;
} zp_notice_t;

/* Posts the receive for peers' notices (once; a no-op after), and for
 * stalled calls' signatures. */
zcclResult_t zp_notice_listen(zt_worker_t* w, zp_notice_t* n);
/* Tells every peer once that this rank's communicator broke, and why. */
void zp_notice_send(zt_worker_t* w, zp_notice_t* n, int rank, int nranks, zcclResult_t code, const char* why);
/* Cancels the receive and gives back sends not done (before the worker goes). */
void zp_notice_close(zt_worker_t* w, zp_notice_t* n);

/* A communicator's last uncompressed choice of algorithm (zp_algo_select):
 * a small call's selection costs about as much as its exchange, and calls
 * repeat. It holds while everything the choice reads is unchanged: the
 * call's fields, the link model, the device, the rules and the pool's
 * free room. Used under the communicator's worker lock. */
typedef struct {
  int valid;
  zp_coll_args_t a; /* buffers, stream and sequence not compared */
  zp_link_t link;
  const void *dev, *rules;
  size_t room;
  const struct zp_algo* algo;
  double t;
  int by_rule;
} zp_choice_memo_t;

/* ZCCL_ALGO as rules, parsed once when a communicator is created:
 * `[coll:]name[@lo-hi][,name[@lo-hi]]...[;...]` (docs/collectives.md).
 * An entry names an algorithm for one collective (coll, -1: every
 * collective that has the name) and calls of lo..hi bytes (both ends
 * included). */
typedef struct {
  int coll;          /* a zp_coll_id_t, or -1 */
  const char* name;  /* the table's own string */
  uint64_t lo, hi;
} zp_algo_rule_t;
#define ZP_ALGO_RULES_MAX 32
typedef struct {
  int n;
  zp_algo_rule_t rule[ZP_ALGO_RULES_MAX]; /* a collective's own first, then the others, each in order */
} zp_algo_rules_t;

/* Parses text into rules; what does not parse, or names no algorithm or
 * collective, is left out and reported once at WARN with what is known. */
void zp_algo_rules_parse(const char* text, zp_algo_rules_t* rules);

/* The communicator's mailbox (zp_mailbox.c): this rank's window, holding
 * two slots of stride bytes per peer, and every peer's as mapped here.
 * Used under the worker lock only. */
typedef struct {
  int on;          /* every rank mapped every peer's window (they agreed) */
  size_t cap;      /* a message's bytes at most (ZCCL_MAILBOX_BYTES) */
  size_t stride;   /* a slot: head and cap, in whole cache lines */
  uint8_t* mine;   /* this rank's window */
  uint8_t** peers; /* per peer, its window (NULL for this rank) */
  uint64_t calls;  /* exchanges so far: alike on every rank */
} zp_mbox_t;

/* What an algorithm runs with: the communicator's worker, device and
 * ranks, this operation's sequence number (in every tag), and the limits
 * every wait obeys. */
typedef struct {
  zt_worker_t* w;
  zd_dev_t* dev;
  zd_dev_t* host;           /* a host device for the few values ranks agree on (zp_agree) when dev
                             * is a GPU's, so they cost no GPU round trip; NULL: dev */
  zp_link_t* link;          /* the communicator's model (updated here) */
  zp_stats_t* stats;        /* the communicator's counters (may be NULL) */
  int rank, nranks;
  uint32_t seq;
  double timeout;           /* ZCCL_TIMEOUT, seconds without progress */
  double spin;              /* ZCCL_SPIN_US, in seconds; < 0: never sleep */
  int checksum;             /* ZCCL_CHECKSUM: compressed streams carry chunk checksums */
  const atomic_int* abort;  /* nonzero: give up */
  /* The operation's cancel deadline (zp_xfers_cancel_what): 0 until its
   * first cancel sets it; every later cancel, and every wait after it, ends
   * by then, so an operation's clean-up costs one grace period however many
   * of its messages are stuck. NULL: each cancel has its own. */
  double* cancel_by;
  zp_notice_t* notice;       /* peers' failures (NULL: not watched) */
  const zp_algo_rules_t* rules; /* ZCCL_ALGO at the communicator's creation (NULL: none) */
  int check_calls;           /* send and check call signatures (ZCCL_CHECK_CALLS) */
  /* The collective's call signature: this rank's, its left neighbour's and
   * the receive bringing it (NULL outside a collective or with one rank).
   * Every wait compares them once the receive is done. */
  const zp_sig_t* sig_mine;
  const zp_sig_t* sig_left;
  const zt_req_t* sig_rx;
  /* Instead: a small allreduce's recursive doubling or one-shot carries
   * this rank's signature in front of each of its messages and checks each
   * peer's (zp_frame.c), without messages of its own. NULL otherwise. */
  const zp_sig_t* sig_framed;
  /* Or: every collective message of the call carries this rank's signature
   * as a head in front of its bytes (one UCX message from two places, no
   * copy), and every receive checks its sender's (zp_coll_run: a medium
   * uncompressed call on host memory). NULL otherwise. */
  const zp_sig_t* sig_carried;
  const char* sig_algo; /* a framed or carried call's algorithm (its stalled signature says it) */
  zp_choice_memo_t* memo; /* the communicator's (NULL: none) */
  zp_mbox_t* mbox;         /* the communicator's mailbox (NULL: none) */
} zp_ctx_t;

/* One message: a send or a receive of bytes with a peer. */
typedef struct {
  int is_send;
  int peer;
  void* buf;
  size_t bytes;
  size_t count;             /* for messages: count elements of dtype */
  zcclDataType_t dtype;
  uint64_t tag;
  zt_req_t req;
  int checked;
  int coll;                 /* part of a collective (messages name bytes, not elements) */
  int var;                  /* receive: up to bytes (req.length says how many came) */
  void* stage;              /* host copy the transport uses instead of buf (zd_stage_needed) */
  int stage_async;          /* receive: the copy from stage into buf is queued on the current device
                             * stream and not waited for (work after it on that stream is ordered
                             * after it; other streams must zd_lane_wait); stage goes back when it passes */
  int prestaged;            /* send: stage (a staging piece the caller set) already holds the bytes */
  int stage_keep;           /* stage_async receive: the caller takes stage once its copy in is queued
                             * (stage_late then set: it goes back only after stage_ev) */
  int stage_late;           /* stage goes back with zd_stage_put_after(stage_ev), not at once */
  zd_event_t stage_ev;
  int carried;              /* sent with ctx->sig_carried in front; a receive's head lands in head_in */
  zp_sig_t head_in;
  /* A mailbox receive (zp_mailbox.c), never posted to UCX: done once the
   * flag reads want; the length follows the flag. NULL: a message. */
  const uint64_t* flag;
  uint64_t want;
} zp_xfer_t;

/* Whether messages of ctx's device go through host staging buffers. */
int zp_xfers_staged(const zp_ctx_t* ctx);

/* Posts every message (zp_net.c). */
zcclResult_t zp_xfers_post(const zp_ctx_t* ctx, zp_xfer_t* x, int n);
/* Waits for all of them: a dead peer, ZCCL_TIMEOUT without progress or an
 * abort cancels the rest and returns zcclRemoteError; a receive of the
 * wrong size is zcclInvalidUsage naming both sizes, after the others
 * completed. what names the operation in messages. */
zcclResult_t zp_xfers_wait(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n);
zcclResult_t zp_xfers_run(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n);
/* Cancels posted messages not done yet (never-posted and completed ones
 * are skipped) and waits until UCX has let go of them, at most until the
 * operation's cancel deadline (ctx->cancel_by); those still in flight then
 * are abandoned (zt_abandon). An algorithm leaving early on an error calls
 * this once over all its messages. */
void zp_xfers_cancel(const zp_ctx_t* ctx, zp_xfer_t* x, int n);
void zp_xfers_cancel_what(const zp_ctx_t* ctx, const char* what, zp_xfer_t* x, int n);
/* A collective's message: tag (collective, sender, ctx->seq, sub), sub
 * made by zp_sub (zp_tag.h). */
void zp_send_at(const zp_ctx_t* ctx, zp_xfer_t* x, int peer, uint32_t sub, const void* buf, size_t bytes);
void zp_recv_at(const zp_ctx_t* ctx, zp_xfer_t* x, int peer, uint32_t sub, void* buf, size_t bytes);
/* Send to dst and receive from src together (either may be -1: none). */
zcclResult_t zp_sendrecv(const zp_ctx_t* ctx, const char* what, int dst, const void* sbuf, size_t sbytes, int src,
                         void* rbuf, size_t rbytes, uint32_t sub);

/* Fills why and returns 1 when peer's signature l differs from this
 * rank's m. */
int zp_sig_differs(const zp_sig_t* m, const zp_sig_t* l, int rank, int peer, const char* what, char* why,
                   size_t len);

/* zcclInvalidUsage (why says so) when a peer's stalled call signature
 * for this operation (ctx->seq) has come in and differs from mine; the
 * ones of other operations are dropped. */
zcclResult_t zp_stall_sig_check(const zp_ctx_t* ctx, const zp_sig_t* mine, const char* what, char* why, size_t len);

/* Posts the call signature's messages (x[0] to the right neighbour, x[1]
 * from the left into *left). */
zcclResult_t zp_sig_post(const zp_ctx_t* ctx, const zp_sig_t* mine, zp_sig_t* left, zp_xfer_t x[2]);

/* Measures the link (latency, bandwidth) with the ring neighbours; every
 * rank ends with the same model (the worst rank's). A collective call. */
zcclResult_t zp_calibrate(const zp_ctx_t* ctx, zp_link_t* link);
/* Frees what the calibration's mailbox setup made (zp_mailbox.c): the
 * window too, with w (NULL: the worker is gone). */
void zp_mbox_close(zt_worker_t* w, zp_mbox_t* mb);

/* The cost model's time for a collective (seconds), as ctx's link stands,
 * without running it: the algorithm the call would take, compressed where
 * it would be (codec=auto: whichever the model prices lower; the sparse
 * choice, which samples the data, is not made). zcclGroupSimulateEnd. */
double zp_coll_estimate(const zp_ctx_t* ctx, const zp_coll_args_t* a);

/* The API function's name: "zcclAllReduce", ... */
const char* zp_coll_name(zp_coll_id_t coll);
/* 1 for collectives that take a reduction op. */
int zp_coll_reduces(zp_coll_id_t coll);
/* 1 for collectives and p2p calls that take a root (or peer). */
int zp_coll_rooted(zp_coll_id_t coll);

/* Runs one (already validated) collective to completion, on the progress
 * thread. */
zcclResult_t zp_coll_run(const zp_ctx_t* ctx, const zp_coll_args_t* args);

#ifdef __cplusplus
}
#endif

#endif /* ZP_COLL_H_ */
