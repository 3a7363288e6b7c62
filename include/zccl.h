/*
 * zccl: NCCL-shaped collectives that move error-bounded lossy-compressed data.
 *
 * Every name here has an NCCL twin: replace the `zccl` prefix with `nccl`
 * (ZCCL_ with NCCL_) and the semantics are NCCL 2.28's, except where a comment
 * says otherwise. The compression extension (zcclCompression_t and friends) is
 * zccl's own. For programs written against nccl.h, see zccl_nccl.h.
 *
 * Buffers and streams
 *   A collective's buffers are either all host memory or all CUDA device
 *   memory of the communicator's device.
 *   - Host buffers: the call is blocking. When it returns zcclSuccess the
 *     operation is complete on this rank and the buffers may be reused;
 *     `stream` is ignored and may be NULL.
 *   - Device buffers (CUDA builds): the call is stream-ordered, as in NCCL. It
 *     returns once the operation is enqueued; the operation starts after the
 *     work already queued on `stream` and work queued on `stream` afterwards
 *     waits for it. Errors detected later are reported by
 *     zcclCommGetAsyncError. With ZCCL_STREAM_MODE=blocking (the default
 *     on a GPU until the asynchronous mode has run on one: it hung on an
 *     H200, docs/cuda.md) the call instead waits for the work queued on
 *     `stream`, runs the operation and returns when it is complete, with
 *     its error: the stream order is the same, the caller's thread waits.
 *   Between zcclGroupStart and zcclGroupEnd calls are only recorded; they run
 *   (and, for host buffers, complete) in zcclGroupEnd.
 *
 * Errors
 *   Every function returns a zcclResult_t. On failure a one-line explanation
 *   is available from zcclGetLastError and is logged at ZCCL_DEBUG=WARN.
 *   Argument errors are zcclInvalidArgument; calls that are valid but not
 *   possible in the current state (or not built in this version) are
 *   zcclInvalidUsage.
 *
 * Thread safety
 *   As NCCL: a communicator may be used by one thread at a time; different
 *   communicators may be used concurrently from different threads.
 */
#ifndef ZCCL_H_
#define ZCCL_H_

#include <limits.h>
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZCCL_MAJOR 0
#define ZCCL_MINOR 1
#define ZCCL_PATCH 0
#define ZCCL_SUFFIX ""
/* Same encoding as NCCL_VERSION_CODE for versions >= 2.9. */
#define ZCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define ZCCL_VERSION_CODE ZCCL_VERSION(ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH)

/* A CUDA stream. Identical to cudaStream_t (struct CUstream_st*), declared
 * here so that host-only programs need no CUDA headers. */
struct CUstream_st;
typedef struct CUstream_st* zcclStream_t;

/* Opaque communicator. */
typedef struct zcclComm* zcclComm_t;
#define ZCCL_COMM_NULL NULL

#define ZCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[ZCCL_UNIQUE_ID_BYTES];
} zcclUniqueId;

/* Result codes: the values of ncclResult_t. */
typedef enum {
  zcclSuccess = 0,
  zcclUnhandledCudaError = 1,
  zcclSystemError = 2,
  zcclInternalError = 3,
  zcclInvalidArgument = 4,
  zcclInvalidUsage = 5,
  zcclRemoteError = 6,
  zcclInProgress = 7,
  zcclNumResults = 8
} zcclResult_t;

/* Data types: the values of ncclDataType_t. */
typedef enum {
  zcclInt8 = 0,
  zcclChar = 0,
  zcclUint8 = 1,
  zcclInt32 = 2,
  zcclInt = 2,
  zcclUint32 = 3,
  zcclInt64 = 4,
  zcclUint64 = 5,
  zcclFloat16 = 6,
  zcclHalf = 6,
  zcclFloat32 = 7,
  zcclFloat = 7,
  zcclFloat64 = 8,
  zcclDouble = 8,
  zcclBfloat16 = 9,
  zcclFloat8e4m3 = 10,
  zcclFloat8e5m2 = 11,
  zcclNumTypes = 12
} zcclDataType_t;

/* Reduction operations: the values of ncclRedOp_t. */
typedef enum {
  zcclSum = 0,
  zcclProd = 1,
  zcclMax = 2,
  zcclMin = 3,
  zcclAvg = 4,
  zcclNumOps = 5,
  zcclMaxRedOp = 0x7fffffff
} zcclRedOp_t;

/* ---------------------------------------------------------------------------
 * Compression (zccl's extension)
 *
 * Compression applies to float32/float64 data: data movement (AllGather,
 * Broadcast, Gather, Scatter, AlltoAll, Send/Recv) and SUM/AVG/MAX/MIN
 * reductions. Every other type or op, and messages smaller than minBytes,
 * take the uncompressed (lossless) path.
 *
 * Error bound of one compress/decompress: |x - x'| <= eb_abs for every finite
 * element, where eb_abs is
 *   zcclErrorAbs        eb
 *   zcclErrorRel        eb * (max - min) of the data of all ranks taking part
 *                       (fill and non-finite values excluded)
 *   zcclErrorTargetAbs  eb is the bound on the collective's *output*; the
 *                       library divides it among the contributions
 *   zcclErrorTargetRel  as TargetAbs, with eb relative to the global range
 * Non-finite values and the fill value (when hasFill) are carried exactly.
 * ------------------------------------------------------------------------- */
typedef enum {
  zcclCodecNone = 0, /* never compress */
  zcclCodecAuto = 1, /* let the cost model choose, including not compressing */
  zcclCodecSzp = 2,  /* fZ-light/SZp-style block codec (decompress-op-compress) */
  zcclCodecHz = 3,   /* same stream format, reductions done on compressed data */
  zcclCodecRle = 4,  /* lossless run-length coding of zero runs (sparse data) */
  zcclCodecZfp = 5,  /* libzfp fixed accuracy (the baseline codec) */
  zcclNumCodecs = 6
} zcclCodec_t;

typedef enum {
  zcclErrorAbs = 0,
  zcclErrorRel = 1,
  zcclErrorTargetAbs = 2,
  zcclErrorTargetRel = 3,
  zcclNumErrorModes = 4
} zcclErrorMode_t;

typedef struct {
  int codec;           /* a zcclCodec_t, or ZCCL_CONFIG_UNDEF_INT in a config:
                          "use ZCCL_COMPRESSION or the built-in default" */
  int mode;            /* a zcclErrorMode_t */
  double eb;           /* error bound, > 0, interpreted by mode */
  int hasFill;         /* 1: values equal to fillValue are carried exactly */
  double fillValue;    /* e.g. a NetCDF _FillValue */
  size_t minBytes;     /* messages smaller than this go uncompressed */
} zcclCompression_t;

/* Off, REL 1e-3 when turned on, no fill value, 64 KiB threshold. */
#define ZCCL_COMPRESSION_INITIALIZER \
  { zcclCodecNone, zcclErrorRel, 1e-3, 0, 0.0, (size_t)64 << 10 }

/* ---------------------------------------------------------------------------
 * Communicator configuration (NCCL's ncclConfig_t, plus compression)
 * ------------------------------------------------------------------------- */
#define ZCCL_CONFIG_UNDEF_INT INT_MIN
#define ZCCL_CONFIG_UNDEF_PTR NULL
#define ZCCL_SPLIT_NOCOLOR -1
#define ZCCL_API_MAGIC 0x7a63636cu /* "zccl" */

typedef struct zcclConfig_v1 {
  /* Filled by ZCCL_CONFIG_INITIALIZER; identify the struct's layout. */
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* 1 (default): calls block as documented above. 0: zcclCommInitRank and
   * collectives may return zcclInProgress; poll zcclCommGetAsyncError. */
  int blocking;
  /* Shown in log lines; default "zccl". */
  const char* commName;
  /* Reserved for NCCL compatibility (resource sharing on split); ignored. */
  int splitShare;
  /* The communicator's default compression. Left at its initializer
   * (codec == ZCCL_CONFIG_UNDEF_INT), the ZCCL_COMPRESSION environment
   * variable or, without it, "off" applies. */
  zcclCompression_t compression;
} zcclConfig_t;

#define ZCCL_CONFIG_INITIALIZER                                              \
  {                                                                          \
    sizeof(zcclConfig_t), ZCCL_API_MAGIC, ZCCL_VERSION_CODE,                 \
        ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_PTR, ZCCL_CONFIG_UNDEF_INT, \
    {                                                                        \
      ZCCL_CONFIG_UNDEF_INT, zcclErrorRel, 1e-3, 0, 0.0, (size_t)64 << 10    \
    }                                                                        \
  }

/* ---------------------------------------------------------------------------
 * Library
 * ------------------------------------------------------------------------- */

/* Writes ZCCL_VERSION_CODE of the library (not of the header) to *version. */
zcclResult_t zcclGetVersion(int* version);

/* A static string naming a result code ("invalid argument", ...). */
const char* zcclGetErrorString(zcclResult_t result);

/* The last error message of the calling thread (file:line and the reason),
 * or "" when none. With a non-NULL comm whose asynchronous error is set and
 * no newer message in this thread, that error's message. */
const char* zcclGetLastError(zcclComm_t comm);

/* Reads the logging settings (ZCCL_DEBUG, ZCCL_DEBUG_FILE,
 * ZCCL_DEBUG_SUBSYS) from the environment again; safe while other threads
 * log. A debug file opened before stays open. */
void zcclResetDebugInit(void);

/* ---------------------------------------------------------------------------
 * Communicators
 * ------------------------------------------------------------------------- */

/* Creates an id for zcclCommInitRank; called on one rank, then distributed
 * to all ranks by the application (MPI_Bcast, a file, ...). */
zcclResult_t zcclGetUniqueId(zcclUniqueId* uniqueId);

/* Creates a communicator of nranks ranks, this process being `rank`
 * (0 <= rank < nranks). Collective over all nranks processes; blocking.
 * nranks == 1 needs no id. */
zcclResult_t zcclCommInitRank(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank);
zcclResult_t zcclCommInitRankConfig(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank,
                                    zcclConfig_t* config);

/* Completes every operation issued on comm; collective. Then destroy it. */
zcclResult_t zcclCommFinalize(zcclComm_t comm);
/* Frees comm's resources (after Finalize, or waiting for pending work). */
zcclResult_t zcclCommDestroy(zcclComm_t comm);
/* Cancels pending operations and frees everything; never blocks on peers. */
zcclResult_t zcclCommAbort(zcclComm_t comm);

/* Splits comm into sub-communicators, one per color, ranks ordered by key
 * (then by rank in comm). color ZCCL_SPLIT_NOCOLOR gives *newcomm = NULL.
 * Collective over comm. config NULL: inherit comm's configuration. */
zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                           zcclConfig_t* config);

/* zcclSuccess, zcclInProgress (non-blocking communicator still working), or
 * the error that stopped an asynchronous operation (a dead peer, ...). */
/* A new communicator of comm's ranks but those listed (in comm's order,
 * the gaps closed), made by the ranks kept (an excluded rank does not call
 * it; each kept rank passes the same list). config NULL: comm's settings.
 * ZCCL_SHRINK_DEFAULT: comm must be healthy (or revoked). ZCCL_SHRINK_ABORT:
 * comm's own work is given up first (it is revoked), so it may have failed,
 * e.g. for a dead rank that is then excluded. */
#define ZCCL_SHRINK_DEFAULT 0x00
#define ZCCL_SHRINK_ABORT 0x01
zcclResult_t zcclCommShrink(zcclComm_t comm, int* excludeRanksList, int excludeRanksCount, zcclComm_t* newcomm,
                            zcclConfig_t* config, int shrinkFlags);
/* Stops comm's work on this rank: what runs gives up, what is queued fails,
 * new calls and zcclCommFinalize are refused; it returns once nothing is
 * left, and then zcclCommGetAsyncError says zcclSuccess. Destroy, abort,
 * split and shrink remain. revokeFlags must be ZCCL_REVOKE_DEFAULT. */
#define ZCCL_REVOKE_DEFAULT 0x00
zcclResult_t zcclCommRevoke(zcclComm_t comm, int revokeFlags);

/* Registers buff (size bytes) with comm's transport for the calls that
 * will use it (NCCL's ncclCommRegister): mapped once now instead of at each
 * transfer where the transport maps memory (UCX over InfiniBand; shared
 * memory and TCP take any memory). *handle stays valid until
 * zcclCommDeregister whatever the transport made of it: memory it cannot
 * map (device memory without a CUDA-aware UCX) is kept as a record.
 * Deregister only once the calls using the buffer have completed. */
zcclResult_t zcclCommRegister(const zcclComm_t comm, void* buff, size_t size, void** handle);
zcclResult_t zcclCommDeregister(const zcclComm_t comm, void* handle);

zcclResult_t zcclCommGetAsyncError(zcclComm_t comm, zcclResult_t* asyncError);

zcclResult_t zcclCommCount(const zcclComm_t comm, int* count);
/* The CUDA device the communicator was created on, -1 when it has none
 * (built without CUDA or no device present). */
zcclResult_t zcclCommCuDevice(const zcclComm_t comm, int* device);
/* Device memory for collective buffers on the calling thread's current CUDA
 * device (cudaMalloc; NCCL's versions may also register it for NVLink/IB,
 * which zccl does not need). Without CUDA or a device: zcclInvalidUsage.
 * zcclMemFree(NULL) does nothing. */
zcclResult_t zcclMemAlloc(void** ptr, size_t size);
zcclResult_t zcclMemFree(void* ptr);
zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank);

/* The communicator's default compression for later calls (local, not
 * collective: set the same value on every rank). */
zcclResult_t zcclCommSetCompression(zcclComm_t comm, const zcclCompression_t* compression);
zcclResult_t zcclCommGetCompression(const zcclComm_t comm, zcclCompression_t* compression);
/* Bytes this rank's compressed collectives have sent on comm so far:
 * rawBytes, what the streams stand for uncompressed; wireBytes, the streams'
 * own bytes. rawBytes / wireBytes is the compression ratio achieved; read it
 * before and after a call for that call's. Both 0 until a collective runs
 * compressed. */
zcclResult_t zcclCommCompressionStats(zcclComm_t comm, uint64_t* rawBytes, uint64_t* wireBytes);

/* Parses the ZCCL_COMPRESSION syntax: comma-separated key=value pairs
 *   codec=none|auto|szp|hz|rle|zfp  mode=abs|rel|target|target-rel
 *   eb=<float>  fill=<float>|none  min_bytes=<size, K/M/G suffixes>
 * Keys not given keep the value *compression already has (a codec of
 * ZCCL_CONFIG_UNDEF_INT counts as none).
 * "off"/"none"/"" mean codec=none. zcclInvalidArgument on any error. */
zcclResult_t zcclCompressionFromString(const char* text, zcclCompression_t* compression);
/* Formats a compression setting in the syntax above (always parseable). */
zcclResult_t zcclCompressionToString(const zcclCompression_t* compression, char* buf, size_t len);

/* What compression does to one rank's contribution: compresses count values
 * of sendbuff (host memory) as a collective compresses this rank's input and
 * writes what the peers decompress to recvbuff (may be sendbuff). recvbuff
 * minus sendbuff is this rank's compression error, e.g. for error feedback
 * (the residual added to the next step's input). In a homomorphic (hz)
 * AllReduce or Reduce, the output's error is exactly the sum of these over
 * the ranks. Modes abs and rel only: rel takes the range of this buffer (a
 * collective takes all ranks'; give it as abs for the same quantization).
 * Codec none and rle (lossless) copy; auto is refused (it decides per
 * call). *ebAbs (may be NULL) receives the absolute bound applied. */
zcclResult_t zcclCompressRoundtrip(const zcclCompression_t* compression, const void* sendbuff, void* recvbuff,
                                   size_t count, zcclDataType_t datatype, double* ebAbs);

/* ---------------------------------------------------------------------------
 * Custom reduction ops (NCCL's ncclRedOpCreatePreMulSum)
 *
 * A pre-multiplied sum: each rank multiplies its own input by its own scalar
 * (of the op's datatype), then the products are summed, so an average with
 * weights, or a sum divided by something other than nranks, costs one call.
 * The multiplication is exact to the dtype: one IEEE product (fp16, bf16 and
 * fp8 in float32, rounded once), integers wrap. A compressed call compresses
 * the products, so its error bound applies to them.
 * - zcclScalarHostImmediate: *scalar is read now; the memory may be reused.
 * - zcclScalarDevice: *scalar is read each time a collective using the op
 *   runs (on a call on device buffers, from GPU-visible memory, after the
 *   stream's earlier work; on host buffers, from host memory), so it may be
 *   written between calls.
 * The op belongs to comm, is used with datatype only, and stays valid until
 * zcclRedOpDestroy or the communicator's end. Ops are values from zcclNumOps
 * up; a communicator holds at most 1024 at once.
 * ------------------------------------------------------------------------- */
typedef enum { zcclScalarDevice = 0, zcclScalarHostImmediate = 1 } zcclScalarResidence_t;

zcclResult_t zcclRedOpCreatePreMulSum(zcclRedOp_t* op, void* scalar, zcclDataType_t datatype,
                                      zcclScalarResidence_t residence, zcclComm_t comm);
zcclResult_t zcclRedOpDestroy(zcclRedOp_t op, zcclComm_t comm);

/* ---------------------------------------------------------------------------
 * Collectives. counts are elements of datatype. In-place forms as NCCL.
 * ------------------------------------------------------------------------- */

/* recvbuff[i] = op over ranks of sendbuff[i]; in place if sendbuff == recvbuff. */
zcclResult_t zcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                           zcclStream_t stream);

/* root's sendbuff to every rank's recvbuff; in place if sendbuff == recvbuff. */
zcclResult_t zcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, int root, zcclComm_t comm,
                           zcclStream_t stream);

/* Reduction to root's recvbuff (recvbuff unused elsewhere). */
zcclResult_t zcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        zcclDataType_t datatype, zcclRedOp_t op, int root, zcclComm_t comm,
                        zcclStream_t stream);

/* Rank i's sendcount elements land at recvbuff + i*sendcount on every rank;
 * in place if sendbuff == recvbuff + rank*sendcount. */
zcclResult_t zcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream);

/* Reduce nranks*recvcount elements, rank i keeps block i; in place if
 * recvbuff == sendbuff + rank*recvcount. */
zcclResult_t zcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                               zcclStream_t stream);

/* Block j of sendbuff (count elements) goes to rank j, block i of recvbuff
 * comes from rank i. Out of place only. */
zcclResult_t zcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream);

/* Rank i's count elements land at root's recvbuff + i*count; in place if
 * sendbuff == recvbuff + root*count on root. */
zcclResult_t zcclGather(const void* sendbuff, void* recvbuff, size_t count,
                        zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream);

/* root's sendbuff + i*count goes to rank i's recvbuff; in place if
 * recvbuff == sendbuff + root*count on root. */
zcclResult_t zcclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream);

/* Point to point. The peer posts the matching call with the same count and
 * datatype. Several sends/recvs that depend on each other go in a group. */
zcclResult_t zcclSend(const void* sendbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream);
zcclResult_t zcclRecv(void* recvbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream);

/* Groups nest; the outermost zcclGroupEnd issues everything recorded since
 * the outermost zcclGroupStart, as one deadlock-free operation per comm. */
zcclResult_t zcclGroupStart(void);
zcclResult_t zcclGroupEnd(void);
/* Ends the group as zcclGroupEnd would but runs none of its calls: *seconds
 * is the cost model's estimate of their time on this rank (each
 * communicator's calls one after another, communicators at once), for the
 * algorithms and compression the calls would take as the links stand now
 * (docs/collectives.md, "Choosing: the cost model"). The calls' sequence
 * numbers are not used: every rank must simulate the same group, or none. */
zcclResult_t zcclGroupSimulateEnd(double* seconds);

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_H_ */
