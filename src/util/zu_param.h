/* Every environment parameter zccl reads, in one table: name, type, default
 * and a one-line description. `zccl-info --params` prints it and
 * docs/env.md is generated from it. Read parameters only through this
 * interface (never getenv directly) so the table stays complete. Values are
 * read from the environment at each call: call at init points, not in
 * loops. */
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
    "1: every collective sends its call (collective, count, datatype, op, root, "        \
    "compression) to its ring neighbour beside its data, so a call that differs across " \
    "ranks fails at once on every rank instead of after ZCCL_TIMEOUT; 0: not sent (one " \
    "small message less per call).")                                                     \
  X(UCX_ERR_MODE, STR, "none",                                                           \
    "UCX endpoint error handling: none (shared memory usable; a dead peer is found by "   \
    "ZCCL_TIMEOUT, at once over TCP) or peer (UCX reports a dead peer at once, but "      \
    "UCX 1.13 then has no shared-memory transport and uses TCP even on one host).")      \
  X(TCP_EAGER_BYTES, SIZE, "1M",                                                          \
    "Messages up to this size to a peer UCX reaches over TCP only go eagerly (UCX's "     \
    "buffered protocol, UCP_OP_ATTR_FLAG_FAST_CMPL; zccl sets UCX_RNDV_SEND_NBR_THRESH "  \
    "to match unless it is set) instead of by rendezvous, whose handshake waits behind "  \
    "the data already queued on the socket and idles the link between the pieces of a "  \
    "pipeline; 0: UCX's own choice. Other transports are left to UCX.")                  \
  X(SPIN_US, INT, "200",                                                                  \
    "Microseconds a rank waiting for messages polls (giving its core away between polls) " \
    "before it sleeps until UCX signals an event; -1: never sleep (poll until done; UCX " \
    "is then not asked for wake-up support, which leaves out transports without it).")  \
  X(BOOTSTRAP_TIMEOUT, INT, "60",                                                         \
    "Seconds the bootstrap waits for every rank to join (and a rank for the root) before " \
    "failing with zcclRemoteError; also how long the root thread of an id that is never " \
    "used lives.")                                                                        \
  X(ALGO, STR, "",                                                                        \
    "Force a collective algorithm where the collective has it and can run it: ring, "  \
    "rd (recursive doubling), rabenseifner, direct, bruck, tree, chain, "                \
    "scatter_allgather, linear or pairwise; a compressed call looks the name up among "  \
    "its codec's compressed algorithms (docs/compressed.md: also cprp2p, the "            \
    "recompress-every-hop baseline, and sparse, the RLE chain); unset: a cost model picks " \
    "by size, ranks and the link measured at creation (ZCCL_DEBUG_SUBSYS=TUNING logs "    \
    "the choice).")                                                                       \
  X(CODEC_THREADS, INT, "0",                                                              \
    "Threads the host codec spreads chunks over; 0: every core available to the process " \
    "(hwloc).")                                                                           \
  X(POOL_SPIN_US, INT, "100",                                                            \
    "Microseconds a thread of the host device's pool (codec, large reductions) polls for " \
    "its next job, and the calling thread for a job's end, giving its core away between " \
    "polls, before sleeping (a wake-up costs as much as a 1 MiB compression on a VM); 0: " \
    "sleep at once.")                                                                      \
  X(CODEC_SIMD, STR, "auto",                                                              \
    "Instruction set of the host codec kernels: auto, scalar, avx2, avx2-gfni or avx512 " \
    "(every level writes identical bytes; a level the CPU lacks is an error).")          \
  X(CHECKSUM, INT, "1",                                                                   \
    "1: compressed collectives send streams with a checksum per chunk, which every "     \
    "decoder and homomorphic operation verifies (a corrupted stream fails with an "      \
    "error naming the chunk instead of decoding to wrong values); 0: none. The host "   \
    "codec and the CUDA kernels write and verify the same checksums.")                   \
  X(DEVICE, STR, "host",                                                                  \
    "Device that runs a communicator's copies and reductions on host buffers: host (the " \
    "calling thread and a thread pool) or sim (a simulated GPU stream: asynchronous, for " \
    "tests; its sim streams make calls stream-ordered). Calls on CUDA device buffers "   \
    "always run on the GPU current at the communicator's creation, whose device is made " \
    "at the first such call; cuda makes it at creation (host buffers still use host), "  \
    "so a build without CUDA or a machine without a usable GPU fails communicator "     \
    "creation with zcclInvalidUsage saying why.")                                         \
  X(BUFFER_POOL_BYTES, SIZE, "64M",                                                       \
    "Size of each device's buffer pool, allocated at its first use; an algorithm needing " \
    "more splits its work into pieces. The compressed rings hold three worst-case "      \
    "streams (3x the raw bytes) per chunk in flight; a 128 MiB homomorphic allreduce on " \
    "4 ranks ran as fast with 64M (3 chunks in flight) as with 128M or 256M.")           \
  X(REDUCE_THREADS, INT, "0",                                                             \
    "Threads a large host reduction, copy or codec call is spread over; 0: the cores "  \
    "available to the process (hwloc) divided by the ranks on this machine: the larger "  \
    "of the communicator's count (ranks with this kernel's boot id, so the network "      \
    "namespaces of scripts/netlab are one machine) and the launcher's "                   \
    "(OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or SLURM_NTASKS_PER_NODE). 4 netlab "   \
    "hosts on 2 cores, 128 MiB hz allreduce: 450-530 ms with 1 thread a rank, 500-605 "   \
    "with 2.")                                                                            \
  X(REDUCE_SPLIT_BYTES, SIZE, "4M",                                                       \
    "Host reductions and copies of more bytes than this (per operand) are split across "  \
    "ZCCL_REDUCE_THREADS threads; smaller ones run on the calling thread (waking the "   \
    "pool costs ~10 us; on a 2-core VM splitting first broke even at 4 MiB).")          \
  X(SIM_DELAY_US, INT, "50",                                                              \
    "sim device: each queued operation runs after a random delay of 0..this many "        \
    "microseconds, so a missing synchronization shows up as wrong data.")                 \
  X(SIM_LANE_LAG_US, INT, "0",                                                            \
    "sim device: every operation on a stream other than stream 0 waits this many "        \
    "microseconds more, so work that another stream must wait for is late (tests).")     \
  X(SIM_FAIL_RANGE, INT, "0",                                                             \
    "sim device: 1 makes every value range (what a REL error bound is worked out from) "   \
    "fail, so tests can check that the other ranks of the call fail at once with it.")    \
  X(SIM_STAGE, INT, "0",                                                                  \
    "sim device: 1 treats its memory as the transport cannot reach it (a GPU's without "  \
    "CUDA-aware UCX), so every message goes through host staging buffers as on a GPU.")  \
  X(DEVICE_STREAMS, INT, "0",                                                             \
    "Streams (independent queues) of a sim or cuda device, 1..8, over which the "          \
    "compressed collectives spread independent codec work (the per-rank compressions of " \
    "scatter and alltoall, the decompressions of gather and allgather, a ring's first "   \
    "chunk compressions), each with its own scratch; 0: 4 on cuda, 2 on sim. The host "   \
    "device runs its work on the calling thread and has one.")                            \
  X(STREAM_MODE, STR, "auto",                                                             \
    "How a call on device buffers keeps its stream's order: async (it returns at once; "  \
    "a kernel holds the stream until the progress thread has run the operation), "       \
    "blocking (the caller waits for the stream's earlier work, then for the operation, " \
    "so nothing holds the stream) or auto: blocking on cuda (async hangs on an H200 "     \
    "when the caller then makes a pageable copy on the stream), async on sim.")           \
  X(PERSISTENT_KERNEL, INT, "0",                                                          \
    "cuda device: 1 runs the codec work (compress, decompress, homomorphic reduce) in "   \
    "one long-running kernel that takes items from a queue in pinned memory, instead of " \
    "a launch each; streams and the kernel order each other with stream memory "          \
    "operations. Off (per-launch): on an H200 with 2 ranks sharing it, collectives ran "  \
    "4-10x slower with it (docs/cuda.md).")                                               \
  X(MPI_MIN_BYTES, SIZE, "64K",                                                           \
    "libzccl-mpi.so: MPI collectives moving fewer bytes than this (a reduction's count x " \
    "its element, a gather's whole receive side) go to MPI unchanged.")                   \
  X(MPI_COMMS, STR, "all",                                                                 \
    "libzccl-mpi.so: world (only MPI_COMM_WORLD and communicators identical to it) or " \
    "all (every intra-communicator) get a zccl communicator for their calls.")            \
  X(MPI_UNCOMPRESSED, INT, "0",                                                           \
    "libzccl-mpi.so: 1 takes calls to zccl even where zccl would not compress them "     \
    "(ZCCL_COMPRESSION off, or below its min_bytes); 0 leaves those to MPI, which moves " \
    "the same bytes with algorithms tuned for the machine.")                               \
  X(MPI_OPS, STR, "all",                                                                   \
    "libzccl-mpi.so: the MPI collectives taken to zccl, comma-separated: all, allreduce, " \
    "reduce, reduce_scatter_block, reduce_scatter, bcast, allgather, gather, scatter, "  \
    "alltoall; the others go to MPI.")                                                    \
  X(PERSISTENT_IDLE_US, INT, "2000",                                                      \
    "cuda device with ZCCL_PERSISTENT_KERNEL=1: the kernel leaves after this many "       \
    "microseconds without work and is launched again by the next item, so "               \
    "cudaDeviceSynchronize in the application waits for it at most this long.")            \
  X(PERSISTENT_CTAS, INT, "0",                                                            \
    "cuda device with ZCCL_PERSISTENT_KERNEL=1: CTAs of the kernel (one per SM at most; " \
    "0: half the SMs). The kernel fills the registers of an SM, so the SMs it leaves "   \
    "free run the launched kernels (value range, reductions, the application's) that "   \
    "its items may wait for.")

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

/* The value: the environment's when set and non-empty, else the default. */
const char* zu_param_str(zu_param_id_t id);
/* 1 when the variable is set (to anything non-empty) in the environment. */
int zu_param_is_set(zu_param_id_t id);
/* Integer value (SIZE accepts K/M/G suffixes, powers of 1024).
 * zcclInvalidArgument with a message naming the variable when malformed. */
zcclResult_t zu_param_int(zu_param_id_t id, int64_t* value);

/* Parses "123", "64K", "1M", "2G" (powers of 1024). 0 ok, -1 malformed. */
int zu_parse_size(const char* text, int64_t* value);

/* Prints the table: plain text, or as Markdown (docs/env.md). */
void zu_param_print(FILE* out, int markdown);

#ifdef __cplusplus
}
#endif

#endif /* ZU_PARAM_H_ */
