/* Device layer (zd_): where buffers live and where computation on them runs
 * (host CPU, CUDA GPU, or the `sim` device that gives host memory a GPU's
 * asynchronous semantics). May use util and codec; never transport or proto.
 * The algorithms in src/proto reach buffers and computation only through the
 * zd_dev_t interface below; each kind is one zd_ops_t row (zd_dev_impl.h). */
#ifndef ZD_DEVICE_H_
#define ZD_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_codec.h"
#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int built;            /* 1: this library was compiled with CUDA */
  int ndevices;         /* usable CUDA devices (0 when none or no driver) */
  int runtime_version;  /* CUDART_VERSION linked, e.g. 13000 */
  int driver_version;   /* 0 when no driver */
  char archs[64];       /* architectures compiled, e.g. "80;90" */
  char status[192];     /* one line: devices found, or why there are none */
} zd_cuda_info_t;

/* Fills info. Absence of a GPU or driver is not an error (status says why);
 * returns an error only for an unexpected CUDA failure. */
zcclResult_t zd_cuda_query(zd_cuda_info_t* info);
/* What zd_cuda_query says without asking CUDA: built, archs and the
 * runtime's version, status naming them (driver_version stays 0). A CUDA
 * call can initialise CUDA in the process (counting devices does; on an
 * H200 even cudaDriverGetVersion did), and a process that forks after that
 * (a launcher that makes the unique id, then forks its ranks) leaves its
 * children unable to use CUDA; the version banner uses this instead. */
void zd_cuda_versions(zd_cuda_info_t* info);

/* The calling thread's current CUDA device, -1 when CUDA is not built or no
 * device is usable. Never fails. */
int zd_cuda_current_device(void);

/* Runs a small kernel on the current device and checks its output.
 * zcclInvalidUsage when CUDA is not built or no device is present. */
zcclResult_t zd_cuda_selftest(void);

/* Cores (not hardware threads) the calling process may run on, from hwloc;
 * at least 1. */
int zd_host_ncores(void);

/* ---- devices: buffers and computation for the algorithms ----------------
 *
 * host: operations run synchronously on the calling thread (reductions and
 * copies of more than ZCCL_REDUCE_SPLIT_BYTES spread over a thread pool of
 * ZCCL_REDUCE_THREADS threads, default the hwloc cores).
 * sim: the same API with a GPU stream's asynchronous semantics: every
 * operation is queued to one worker thread and runs later, in order, after a
 * random delay of 0..ZCCL_SIM_DELAY_US microseconds, so its results are
 * visible only after zd_sync / zd_event_wait (a missing sync in an algorithm
 * shows up as wrong data in tests). Enqueueing blocks while 1024 operations
 * are pending, as a full GPU launch queue does.
 * cuda: the GPU current on the creating thread, non-blocking streams (with
 * the same asynchronous semantics as sim; enqueueing blocks while 1024
 * marks, CUDA events, are pending on one); buffers must be GPU-visible (pool pieces,
 * cudaMalloc'd or managed memory; zd_copy also takes host memory). Without
 * a usable GPU, or in a build without CUDA, creating one is zcclInvalidUsage
 * saying why.
 * Queued operations of one device are issued from one thread at a time (it is
 * a stream); the buffer pool may be used from any thread. */
typedef enum { ZD_HOST = 0, ZD_SIM = 1, ZD_CUDA = 2 } zd_kind_t;
typedef struct zd_dev zd_dev_t;
typedef uint64_t zd_event_t;

zcclResult_t zd_dev_create(zd_kind_t kind, zd_dev_t** dev);
void zd_dev_destroy(zd_dev_t* dev); /* waits for queued work */
zd_kind_t zd_dev_kind(const zd_dev_t* dev);
/* Ranks known to share this process's cores (a communicator's count of its
 * ranks on this machine), before the device's first large operation: with
 * ZCCL_REDUCE_THREADS=0 the host device divides the cores by the larger of
 * this and the launcher's local size, which sees one rank per host where
 * hosts are network namespaces of one machine (scripts/netlab). */
void zd_set_node_ranks(zd_dev_t* dev, int n);
const char* zd_kind_name(zd_kind_t kind); /* "host", "sim", "cuda" ("invalid") */
/* ZCCL_DEVICE=host|sim|cuda (default host); zcclInvalidArgument naming the
 * variable for anything else (cuda without CUDA or a GPU fails at
 * zd_dev_create, which says why). */
zcclResult_t zd_kind_from_env(zd_kind_t* kind);

/* Buffer pool: ZCCL_BUFFER_POOL_BYTES allocated once (64-byte aligned): on
 * host at the first zd_buf_get, on sim and cuda when the device is made
 * (an allocation or free there may wait for the whole GPU, so none is made
 * while a call holds a stream), handed out first fit in pieces whose start and
 * size are multiples of 64 bytes (a request of 0 bytes gets 64). A request
 * larger than the largest free piece returns zcclInvalidUsage naming
 * ZCCL_BUFFER_POOL_BYTES: the caller splits its work (zd_buf_largest says how
 * much fits). Pieces are host memory for host and sim, GPU memory (one
 * cudaMalloc) for cuda. get/put are immediate,
 * not queued: put a piece only after the operations using it have completed
 * (zd_sync / zd_event_wait). Thread-safe. */
zcclResult_t zd_buf_get(zd_dev_t* dev, size_t bytes, void** buf);
void zd_buf_put(zd_dev_t* dev, void* buf);
/* Bytes of the largest free piece (the whole pool before the first get). */
size_t zd_buf_largest(zd_dev_t* dev);

/* Staging: whether the transport cannot send from this device's memory
 * (cuda, unless UCX is CUDA-aware, which the caller checks; sim with
 * ZCCL_SIM_STAGE=1, to run that path without a GPU), and host memory
 * (pinned for cuda) for a message's bytes: a piece of a staging pool of
 * ZCCL_BUFFER_POOL_BYTES (made with a cuda or sim device, else at the first
 * get), or, for a message larger than its free room, pageable memory of the
 * message's own. Thread-safe. */
int zd_stage_needed(const zd_dev_t* dev);
zcclResult_t zd_stage_get(zd_dev_t* dev, size_t bytes, void** buf);
/* A piece of the staging pool only (pinned for cuda, so kernels may write
 * it: zd_copy_sized), *buf NULL when none is free. */
zcclResult_t zd_stage_try(zd_dev_t* dev, size_t bytes, void** buf);
void zd_stage_put(zd_dev_t* dev, void* buf);
/* zd_stage_put once event ev (after a queued copy out of buf) has passed,
 * without waiting for it now: a later zd_stage_get, zd_sync or the
 * device's end takes it back (a get that finds the pool full waits for the
 * oldest). */
void zd_stage_put_after(zd_dev_t* dev, void* buf, zd_event_t ev);

/* Queued operations, run in order. Arguments are checked when the operation
 * is queued (the error is returned then). dst may equal a or b exactly (in
 * place); any other overlap is zcclInvalidArgument. */
zcclResult_t zd_copy(zd_dev_t* dev, void* dst, const void* src, size_t bytes);
/* Copies *size bytes from src to dst, *size read when the copy runs (as
 * zd_decompress reads its stream's size: one an operation queued before it
 * writes, such as a compression's, needs no host round trip), so a stream
 * goes to a staging buffer right behind the kernel that made it. More than
 * cap bytes fails the copy (zcclInvalidUsage, reported by the next wait)
 * and copies nothing. dst and src must not overlap. */
zcclResult_t zd_copy_sized(zd_dev_t* dev, void* dst, const void* src, const size_t* size, size_t cap);
/* dst[i] = a[i] op b[i] for op zcclSum, zcclProd, zcclMax or zcclMin (zcclAvg
 * is rejected: the algorithm sums, then calls zd_divide), every dtype.
 * - Integers wrap (two's complement).
 * - float32/float64: one IEEE operation. max(a, b) = a if a is NaN, else
 *   (a > b ? a : b); min likewise with <. So a NaN in either input gives NaN,
 *   and for equal values (+0, -0) the result is b.
 * - float16, bfloat16, float8e4m3, float8e5m2: computed in float32 and
 *   rounded to nearest even, which is the correctly rounded result (float32
 *   has more than 2p+2 bits for each). NaN gives the canonical NaN of CUDA's
 *   conversions: 0x7fff (fp16, bf16), 0x7f (fp8). fp16/bf16 overflow to inf.
 *   Both fp8 formats saturate like CUDA's __NV_SATFINITE (which NCCL's fp8
 *   reductions use): overflow and +-inf become +-max finite (448, 57344). */
zcclResult_t zd_reduce(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count,
                       zcclDataType_t dtype, zcclRedOp_t op);
/* zd_reduce for float32/float64 data with a declared fill value (NetCDF
 * _FillValue, has_fill): the fill passes through as in the codec's
 * homomorphic operations: dst[i] is the fill where a[i] or b[i] equals it
 * (compared in the dtype), a[i] op b[i] otherwise. has_fill 0: zd_reduce. */
zcclResult_t zd_reduce_fill(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count,
                            zcclDataType_t dtype, zcclRedOp_t op, int has_fill, double fill);
/* buf[i] /= n, n >= 1 (zcclAvg's last step): floats divide (fp16/bf16/fp8 in
 * float32, rounded as above), integers truncate toward zero as C does. */
zcclResult_t zd_divide(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n);
/* zd_divide leaving values equal to a declared fill value as they are
 * (float32/float64; has_fill 0: zd_divide). */
zcclResult_t zd_divide_fill(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n, int has_fill,
                            double fill);
/* dst[i] = src[i] * s, every dtype (a pre-multiplied sum's first step,
 * zcclRedOpCreatePreMulSum), in zd_reduce's PROD arithmetic: integers
 * wrap, narrow floats in float32 rounded once. s is the dtype's value at
 * `at`, read when the operation runs (memory the device reads: host memory
 * for host and sim, GPU-visible memory for cuda), or with at NULL the
 * first bytes of `bits` (the value taken at the call). dst may equal src. */
zcclResult_t zd_scale(zd_dev_t* dev, void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* at,
                      uint64_t bits);

/* Range of the finite, non-fill values of in (for REL bounds), after
 * everything queued so far; *valid counts them (min/max untouched at 0).
 * Blocks until it is known (cuda: a kernel, then a wait). A zero bound may
 * come back as -0.0 on the host (the first zero seen), +0.0 on cuda. */
zcclResult_t zd_value_range(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                            double fill, double* min, double* max, size_t* valid);

/* Codecs (a row of zc_codec.h's table; docs/format.md), queued like the
 * rest. The device decides where a codec's work runs, not which codec:
 * host runs the codec's table on the calling thread, and zccl's stream
 * format (ZC_CAP_STREAM) over the device's threads; sim the same on its
 * workers; cuda has kernels for the stream format only (zd_codec_runs;
 * the algorithm choice never gives it another codec). Stream sizes travel
 * through pointers read and written when the operation runs: a queued
 * device knows them only then, and the caller reads *out_size after
 * zd_sync / zd_event_wait. Errors (a corrupt stream, too small an output)
 * come back from the wait.
 * - zd_encode: count values of p->dtype (float32, float64) at in into a
 *   stream at out (capacity cap; codec->ops->bound gives enough). A
 *   ZC_CAP_FINITE codec (ZFP) needs a finite tolerance p->eb > 0, and
 *   refuses non-finite input (zcclInvalidArgument, from the wait).
 * - zd_decode: the stream (*size bytes) into out, which has room for
 *   exactly count values; a stream of another count is zcclInvalidUsage.
 *   RLE gives -0.0 back as +0.0.
 * - zd_reduce_encoded: SUM, MAX or MIN of two streams of one count,
 *   without decoding them (a codec with ops->reduce: hz's homomorphic
 *   operations, RLE's merge, each value op(a's, b's) in the dtype's
 *   arithmetic), into out, which may be a or b itself only when
 *   ops->reduce_in_place.
 * - zd_hop_values: zd_reduce_encoded(op, A, b) of the stream format for A
 *   the compression of count values at in with p, byte for byte, in one
 *   pass without A (zc_hop_values; out may be b itself). Host only
 *   (zd_has_hop_values): the cuda device, and sim in its place, encode and
 *   reduce. */
int zd_codec_runs(const zd_dev_t* dev, const zc_codec_info_t* codec);
zcclResult_t zd_encode(zd_dev_t* dev, const zc_codec_info_t* codec, const zc_params_t* p, const void* in,
                       size_t count, void* out, size_t cap, size_t* out_size);
zcclResult_t zd_decode(zd_dev_t* dev, const zc_codec_info_t* codec, const void* stream, const size_t* size, void* out,
                       size_t count);
zcclResult_t zd_reduce_encoded(zd_dev_t* dev, const zc_codec_info_t* codec, zcclRedOp_t op, const void* a,
                               const size_t* a_size, const void* b, const size_t* b_size, void* out, size_t cap,
                               size_t* out_size);
zcclResult_t zd_hop_values(zd_dev_t* dev, zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count,
                           const void* b, const size_t* b_size, void* out, size_t cap, size_t* out_size);
int zd_has_hop_values(const zd_dev_t* dev);

/* Fraction of zeros among about `samples` evenly spaced values of in,
 * after everything queued so far (host and sim memory only): how
 * codec=auto tells sparse data. */
zcclResult_t zd_zero_fraction(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, size_t samples,
                              double* frac);
/* fn(arg) is called now and then, on this thread, while a host or sim
 * codec operation (compress, decompress) runs on it: between chunks, so
 * messages posted before it keep moving (the DOC ring passes the
 * transport's progress). NULL clears it. Pool threads and the sim device's
 * worker never call it. */
void zd_set_progress(zd_dev_t* dev, void (*fn)(void*), void* arg);

/* Ordering and completion. zd_event_record returns a marker after everything
 * queued so far; zd_event_done says whether it has passed (non-blocking);
 * zd_event_wait blocks until it has; zd_sync waits for everything. wait and
 * sync return the first error a queued operation hit since the last report
 * (and clear it). host: every event has passed. */
zd_event_t zd_event_record(zd_dev_t* dev);
int zd_event_done(zd_dev_t* dev, zd_event_t ev);
zcclResult_t zd_event_wait(zd_dev_t* dev, zd_event_t ev);
zcclResult_t zd_sync(zd_dev_t* dev);

/* Streams of one device ("lanes"): ZCCL_DEVICE_STREAMS independent queues
 * (cuda: CUDA streams, each with its own codec scratch and size slots; sim:
 * a worker thread each; host: one, the calling thread). Each lane runs its
 * work in order; work on different lanes may run at once and in any order,
 * so an algorithm puts there only work that shares no buffer it writes
 * (the per-rank compressions of a scatter) or orders it by zd_lane_wait.
 * zd_set_lane picks the lane (taken modulo zd_lanes) that the issuer's next
 * operations and zd_event_record go to, and returns the previous one; lane
 * 0 is where a device starts. An event names its lane: zd_event_done and
 * zd_event_wait take any lane's (wait reports that lane's errors); zd_sync
 * waits for every lane and reports every lane's errors. zd_lane_wait makes
 * the current lane's later work wait for ev, of another lane, without
 * blocking the caller. */
int zd_lanes(const zd_dev_t* dev);
int zd_set_lane(zd_dev_t* dev, int lane);
zcclResult_t zd_lane_wait(zd_dev_t* dev, zd_event_t ev);

/* ---- the caller's stream: stream-ordered calls -----------------------------
 * A call on device buffers is ordered on the caller's stream, as in NCCL: it
 * returns once queued; the operation starts after the work the stream held
 * at the call, and work queued on the stream afterwards waits for the
 * operation's end.
 * - cuda: calls whose buffers are device memory, on `stream` (NULL: the
 *   legacy default stream). Host and device buffers mixed in one call:
 *   zd_stream_ordered says -1.
 * - sim: calls with a non-NULL stream from zd_sim_stream_create, whatever
 *   the buffers (host memory standing for device memory): how CI runs this
 *   orchestration without a GPU.
 * - host: never (the call blocks; stream is ignored).
 * zd_cuda_buffers tells which buffers a call has; the caller (core) picks the
 * device and whether the call is ordered.
 * zd_stream_enter (caller's thread) marks the stream's current end and holds
 * the work queued on it after the call; zd_ticket_wait (progress thread)
 * blocks until the mark has passed, or stop(arg) says to give up
 * (zcclRemoteError; polled every millisecond); zd_ticket_release (progress thread, always, after
 * success or failure, so the stream never hangs) lets the held work go and
 * frees the ticket. */
typedef struct zd_ticket zd_ticket_t;
/* 1: CUDA device (or managed) memory; 0: host memory (also whenever no CUDA
 * device is usable, without asking CUDA again); -1: one of each. NULL
 * buffers are ignored. */
int zd_cuda_buffers(const void* a, const void* b);
/* Makes the calling thread's current CUDA device dev (the progress thread,
 * before it runs an operation on a cuda device); no-op without CUDA. */
void zd_cuda_use_device(int dev);
zcclResult_t zd_stream_enter(zd_dev_t* dev, zcclStream_t stream, zd_ticket_t** t);
/* ZCCL_STREAM_MODE: 1 when dev's stream-ordered calls block instead (the
 * caller's thread runs zd_stream_sync on each stream, then waits for the
 * operation; no ticket holds the stream, so no thread waits on a held
 * stream while the progress thread drives the GPU). Always 0 for host. */
int zd_stream_blocking(const zd_dev_t* dev);
/* Waits for the work queued on stream so far (cuda: cudaStreamSynchronize;
 * sim: zd_sim_stream_sync); an error the stream's work hit comes back. */
zcclResult_t zd_stream_sync(zd_dev_t* dev, zcclStream_t stream);
zcclResult_t zd_ticket_wait(zd_ticket_t* t, int (*stop)(void*), void* arg);
void zd_ticket_release(zd_ticket_t* t);

/* sim user streams (tests): host functions run in order on the stream's own
 * thread, as kernels on a GPU stream; a stream-ordered call's hold is an
 * item that blocks the stream until released. Destroying a stream waits for
 * its work. */
zcclResult_t zd_sim_stream_create(zcclStream_t* s);
zcclResult_t zd_sim_stream_launch(zcclStream_t s, void (*fn)(void*), void* arg);
zcclResult_t zd_sim_stream_sync(zcclStream_t s);
/* Nonzero when s is a live sim stream. */
int zd_sim_stream_valid(zcclStream_t s);
void zd_sim_stream_destroy(zcclStream_t s);

/* The CUDA side of the above (zd_cuda_stream.cu; zd_cuda_none.c without
 * CUDA): whether p is device (or managed) memory, and the ticket's mark
 * (an event on the stream) and hold (a kernel on the stream waiting for a
 * flag in mapped host memory). */
int zd_cuda_is_device_ptr(const void* p);
/* zcclMemAlloc / zcclMemFree on the current device. */
zcclResult_t zd_cuda_mem_alloc(void** ptr, size_t size);
zcclResult_t zd_cuda_mem_free(void* ptr);
zcclResult_t zd_cuda_ticket_enter(zcclStream_t stream, void** state);
int zd_cuda_ticket_passed(void* state); /* 1 passed, 0 not yet, -1 error */
zcclResult_t zd_cuda_stream_sync(zcclStream_t stream);
void zd_cuda_ticket_release(void* state);

#ifdef __cplusplus
}
#endif

#endif /* ZD_DEVICE_H_ */
