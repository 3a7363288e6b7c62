/* Every environment parameter zccl reads, in one table: name, type, default
 * and a one-line description. `zccl-info --params` prints it and
 * docs/env.md is generated from it. Read parameters only through this
 * interface (never getenv directly) so the table stays complete. Values are
 * read from the environment once and cached (a read is an atomic load), and
 * again by zu_param_reload. */
#ifndef ZU_PARAM_H_
#define ZU_PARAM_H_

#include <stdint.h>
#include <stdio.h>
#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ZU_PARAM_STR, ZU_PARAM_INT, ZU_PARAM_SIZE } zu_param_type_t;

/* X(id, type, default, description). The variable is ZCCL_<id>. */
#define ZU_PARAM_LIST(X)                                                                  \
  X(DEBUG, STR, "WARN",                                                                   \
    "Log level: NONE, VERSION, WARN, INFO or TRACE (each includes the ones before it).")  \
  X(DEBUG_SUBSYS, STR, "INIT,BOOTSTRAP,ENV",                                              \
    "Subsystems logged at INFO/TRACE, comma-separated: INIT, COLL, P2P, NET, BOOTSTRAP, " \
    "CODEC, DEVICE, TUNING, ENV or ALL; a leading ^ logs all but those.")                 \
  X(DEBUG_FILE, STR, "",                                                                  \
    "Write log lines to this file instead of stderr; %h is replaced by the host name, "   \
    "%p by the process id.")                                                              \
  X(COMPRESSION, STR, "",                                                                 \
    "Default compression of communicators whose config does not set one, e.g. "          \
    "codec=hz,mode=rel,eb=1e-3 (keys: codec, mode, eb, fill, min_bytes; see zccl.h). "    \
    "Malformed values make communicator creation fail.")                                \
  X(SOCKET_IFNAME, STR, "",                                                               \
    "Interface the unique-id bootstrap root listens on (like NCCL_SOCKET_IFNAME); unset: " \
    "the first up non-loopback IPv4 interface, else loopback.")                          \
  X(BOOTSTRAP, STR, "auto",                                                               \
    "How ranks of a new communicator meet: auto (PMIx when a PMIx launcher started the "  \
    "job and the communicator spans it, else the unique id's TCP root), pmix or tcp.")   \
  X(TIMEOUT, INT, "30",                                                                   \
    "Seconds an operation may wait for a peer before it fails with zcclRemoteError and "  \
    "the communicator reports the error (zcclCommGetAsyncError); also bounds destroy.")  \
  X(CHECK_CALLS, INT, "1",                                                                \
    "1: each collective also checks its call (collective, count, datatype, op, root, "    \
    "compression) across ranks, so a call that differs fails at once on every rank "      \
    "instead of after ZCCL_TIMEOUT: sent to the ring neighbour, or, in an uncompressed "  \
    "allreduce, allgather, reduce-scatter or alltoall of up to 1 MiB a rank on host "     \
    "memory, in front of each of its own messages (docs/runtime.md); 0: none.")           \
  X(UCX_ERR_MODE, STR, "none",                                                           \
    "UCX endpoint error handling: none (shared memory usable; a dead peer is found by "   \
    "ZCCL_TIMEOUT, at once over TCP) or peer (UCX reports a dead peer at once, but UCX "  \
    "1.13 then uses TCP even on one host).")                                              \
  X(TCP_EAGER_BYTES, SIZE, "1M",                                                          \
    "Messages up to this size to a peer that UCX reaches over TCP only are sent "         \
    "eagerly (UCX's buffered protocol; zccl sets UCX_RNDV_SEND_NBR_THRESH to match "      \
    "unless it is set) instead of by rendezvous; 0: UCX's own choice. Other transports "  \
    "are left to UCX.")                                                                   \
  X(TCP_SEG_BYTES, SIZE, "40K",                                                           \
    "UCX's TCP send segment (UCX_TCP_TX_SEG_SIZE; receive segments 4 times as large, "    \
    "UCX_TCP_RX_SEG_SIZE) unless those are set: an eager message goes in pieces of this " \
    "size, each its own system call (UCX's default is 8K; 40K leaves a 32 KiB message "   \
    "and its headers one piece); 0: UCX's own.")                                          \
  X(SHM_FIFO_BYTES, SIZE, "2048",                                                        \
    "The element of UCX's shared-memory FIFOs (UCX_POSIX_FIFO_ELEM_SIZE and "             \
    "UCX_SYSV_FIFO_ELEM_SIZE) unless either is set: a message that fits in one, less "    \
    "UCX's header, goes straight into the receiver's FIFO as a short message (UCX 1.13: " \
    "up to 2020 bytes with the default, 100 with UCX's own 128); 0: UCX's own.")          \
  X(MAILBOX_BYTES, SIZE, "4096",                                                         \
    "Largest message of a small collective (the one-shot allreduce's) that goes by "      \
    "plain stores into the peer's memory, a mailbox that UCX maps from the peer "         \
    "(ucp_rkey_ptr), when every rank of the communicator reaches every other over "       \
    "shared memory; 0: off (UCX messages, and a UCX context without RMA, whose "          \
    "protocols UCX may also use for large messages over TCP). Each rank maps 2 x (16 + " \
    "this) bytes per peer, in whole cache lines.")                                        \
  X(SPIN_US, INT, "200",                                                                  \
    "Microseconds a rank waiting for messages polls (giving its core away between "       \
    "polls when its machine has more ranks than cores) before it sleeps until UCX "       \
    "signals an event; -1: never sleep (UCX is then not asked for wake-up support, "      \
    "which leaves out transports without it).")                                           \
  X(BOOTSTRAP_TIMEOUT, INT, "60",                                                         \
    "Seconds the bootstrap waits for every rank to join (and a rank for the root) "       \
    "before failing with zcclRemoteError; also how long the root thread of an unused "    \
    "id lives.")                                                                          \
  X(ALGO, STR, "",                                                                        \
    "Algorithm rules, read when a communicator is created: [collective:]name[@lo-hi],... " \
    "separated by ';' (e.g. allreduce:ring@0-4M,rd;broadcast:tree; a name alone applies " \
    "to every collective that has it); the first named algorithm that can run a call of " \
    "lo..hi bytes runs it, else the cost model picks (zccl-info --algos lists them).")   \
  X(CODEC_THREADS, INT, "0",                                                              \
    "Threads the host codec spreads chunks over; 0: every core available to the process " \
    "(hwloc).")                                                                           \
  X(POOL_SPIN_US, INT, "100",                                                            \
    "Microseconds a thread of the host device's pool (codec, large reductions) polls "    \
    "for its next job, and the calling thread for a job's end, giving its core away "     \
    "between polls, before sleeping; 0: sleep at once.")                                  \
  X(CODEC_SIMD, STR, "auto",                                                              \
    "Instruction set of the host codec kernels: auto, scalar, avx2, avx2-gfni or avx512 " \
    "(every level writes identical bytes; a level the CPU lacks is an error).")          \
  X(CHECKSUM, INT, "1",                                                                   \
    "1: compressed collectives send streams with a checksum per chunk, which every "      \
    "decoder and homomorphic operation verifies, so a corrupted stream fails with an "    \
    "error naming the chunk; 0: none. The host codec and the CUDA kernels write the "     \
    "same checksums.")                                                                    \
  X(DEVICE, STR, "host",                                                                  \
    "Device for copies and reductions on host buffers: host (the calling thread and a "   \
    "thread pool) or sim (a simulated asynchronous GPU stream, for tests); cuda is "      \
    "host that also makes the CUDA device at creation instead of at the first call on "   \
    "device buffers, failing with zcclInvalidUsage without a usable GPU. Calls on CUDA "  \
    "buffers always run on the GPU current at creation.")                                 \
  X(BUFFER_POOL_BYTES, SIZE, "64M",                                                       \
    "Size of each device's buffer pool, allocated at its first use; an algorithm "        \
    "needing more splits its work into pieces. A compressed ring holds three "            \
    "worst-case streams (3x the raw bytes) per chunk in flight.")                         \
  X(REDUCE_THREADS, INT, "0",                                                             \
    "Threads a large host reduction, copy or codec call is spread over; 0: the cores "    \
    "available to the process (hwloc) divided by the ranks on this machine, the larger "  \
    "of the communicator's count (ranks with this kernel's boot id) and the launcher's "  \
    "(OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or SLURM_NTASKS_PER_NODE).")            \
  X(REDUCE_SPLIT_BYTES, SIZE, "4M",                                                       \
    "Host reductions and copies of more bytes than this (per operand) are split across "  \
    "ZCCL_REDUCE_THREADS threads; smaller ones run on the calling thread.")               \
  X(SIM_DELAY_US, INT, "50",                                                              \
    "sim device: each queued operation runs after a random delay of 0..this many "        \
    "microseconds, so a missing synchronization shows up as wrong data.")                 \
  X(SIM_LANE_LAG_US, INT, "0",                                                            \
    "sim device: every operation on a stream other than stream 0 waits this many "        \
    "microseconds more, so work that another stream must wait for is late (tests).")     \
  X(SIM_FAIL_RANGE, INT, "0",                                                             \
    "sim device: 1 makes every value range (what a REL error bound is worked out from) "   \
    "fail, so tests can check that the other ranks of the call fail at once with it.")    \
  X(SIM_FAIL_ENCODE, INT, "0",                                                            \
    "sim device: 1 makes every compression fail, so tests can check that a rank failing " \
    "in the middle of a compressed collective makes the others fail at once.")            \
  X(SIM_STAGE, INT, "0",                                                                  \
    "sim device: 1 treats its memory as the transport cannot reach it (a GPU's without "  \
    "CUDA-aware UCX), so every message goes through host staging buffers as on a GPU.")  \
  X(DEVICE_STREAMS, INT, "0",                                                             \
    "Streams (independent queues) of a sim or cuda device, 1..8, over which the "         \
    "compressed collectives spread independent codec work, each stream with its own "     \
    "scratch; 0: 4 on cuda, 2 on sim. The host device has one.")                          \
  X(STREAM_MODE, STR, "auto",                                                             \
    "How a call on device buffers keeps its stream's order: async (it returns at once; "  \
    "a kernel holds the stream until the progress thread has run the operation), "        \
    "blocking (the caller waits for the stream's earlier work, then for the operation) "  \
    "or auto: blocking on cuda, async on sim.")                                           \
  X(PERSISTENT_KERNEL, INT, "0",                                                          \
    "cuda device: 1 runs the codec work (compress, decompress, homomorphic reduce) in "   \
    "one long-running kernel that takes items from a queue in pinned memory; 0: a "       \
    "kernel launch per operation.")                                                       \
  X(MPI_MIN_BYTES, SIZE, "64K",                                                           \
    "libzccl-mpi.so: MPI collectives moving fewer bytes than this (a reduction's count x " \
    "its element, a gather's whole receive side) go to MPI unchanged.")                   \
  X(MPI_COMMS, STR, "all",                                                                 \
    "libzccl-mpi.so: world (only MPI_COMM_WORLD and communicators identical to it) or " \
    "all (every intra-communicator) get a zccl communicator for their calls.")            \
  X(MPI_UNCOMPRESSED, INT, "0",                                                           \
    "libzccl-mpi.so: 1 takes calls to zccl even where zccl would not compress them "      \
    "(ZCCL_COMPRESSION off, or below its min_bytes); 0 leaves those to MPI.")             \
  X(MPI_OPS, STR, "all",                                                                   \
    "libzccl-mpi.so: the MPI collectives taken to zccl, comma-separated: all, allreduce, " \
    "reduce, reduce_scatter_block, reduce_scatter, bcast, allgather, gather, scatter, "  \
    "alltoall; the others go to MPI.")                                                    \
  X(PERSISTENT_IDLE_US, INT, "2000",                                                      \
    "cuda device with ZCCL_PERSISTENT_KERNEL=1: the kernel leaves after this many "       \
    "microseconds without work and is launched again by the next item, so "               \
    "cudaDeviceSynchronize in the application waits for it at most this long.")            \
  X(PERSISTENT_CTAS, INT, "0",                                                            \
    "cuda device with ZCCL_PERSISTENT_KERNEL=1: CTAs of the kernel, one per SM at "       \
    "most; 0: half the SMs, so the others are free for the launched kernels (value "      \
    "range, reductions, the application's) its items may wait for.")

typedef enum {
#define ZU_PARAM_ENUM(id, type, def, desc) ZU_PARAM_##id,
  ZU_PARAM_LIST(ZU_PARAM_ENUM)
#undef ZU_PARAM_ENUM
  ZU_NUM_PARAMS
} zu_param_id_t;

typedef struct {
  const char* name; /* "ZCCL_DEBUG" */
  zu_param_type_t type;
  const char* def;  /* default, as it would be written in the environment */
  const char* desc;
} zu_param_def_t;

const zu_param_def_t* zu_param_def(zu_param_id_t id);

/* The value: the environment's when set and non-empty, else the default.
 * ZCCL_ALGO alone is read from the environment at each call, as before its
 * rework (once per communicator) lands. */
const char* zu_param_str(zu_param_id_t id);
/* 1 when the variable is set (to anything non-empty) in the environment. */
int zu_param_is_set(zu_param_id_t id);
/* Integer value (SIZE accepts K/M/G suffixes, powers of 1024).
 * zcclInvalidArgument with a message naming the variable when malformed. */
zcclResult_t zu_param_int(zu_param_id_t id, int64_t* value);

/* zu_param_int for a consumer that carries on: a malformed value is
 * reported once (zu_param_warn_bad) and the default's value returned. */
int64_t zu_param_int_or_default(zu_param_id_t id);

/* Reads every parameter from the environment again (the first read of any
 * does it once). The library calls it where it creates something that
 * keeps its settings: each communicator (zccl_comm_alloc), zcclGetUniqueId
 * (its root) and zcclResetDebugInit; tests after setenv. Safe beside
 * readers on other threads: strings returned stay valid for the process's
 * life. Each value that changed is logged once (INFO, ENV). */
void zu_param_reload(void);

/* The accepted values of a string parameter with a fixed set of them
 * (NULL-terminated), or NULL. */
const char* const* zu_param_values(zu_param_id_t id);
/* The index of a fixed-set parameter's value among zu_param_values(id),
 * for a consumer that carries on: a value naming none is reported once
 * (zu_param_warn_bad) and the default's index returned. */
int zu_param_choice(zu_param_id_t id);
/* Reports at WARN, once per distinct value of the parameter, that it does
 * not parse and `used` is used instead, naming the accepted values. For
 * consumers that parse a value themselves (lists) and carry on. */
void zu_param_warn_bad(zu_param_id_t id, const char* used);

/* Parses "123", "64K", "1M", "2G" (powers of 1024). 0 ok, -1 malformed. */
int zu_parse_size(const char* text, int64_t* value);

/* Prints the table: plain text, or as Markdown (docs/env.md). */
void zu_param_print(FILE* out, int markdown);

#ifdef __cplusplus
}
#endif

#endif /* ZU_PARAM_H_ */
