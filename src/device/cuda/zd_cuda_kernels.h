/* The CUDA kernels' launchers, as the cuda device (zd_cuda_dev.cu) and the
 * GPU tests call them. Plain C declarations: no CUDA header needed to read
 * them; a stream is a cudaStream_t passed as zd_cuda_stream_t.
 *
 * Every launcher only enqueues work on `stream` and returns the launch's
 * error (zcclUnhandledCudaError with the CUDA message); it never
 * synchronises, never allocates, never copies to the host. Errors the
 * kernels find while they run (a corrupt stream, too small an output, a
 * stream of the wrong count) are written as a zcclResult_t into the
 * device-visible `*status` word, which the caller set to zcclSuccess and
 * reads after the stream has passed the work (the first error wins: the
 * kernels write it with atomicCAS from zcclSuccess).
 *
 * Stream sizes live in device-visible memory (device memory or mapped
 * pinned host memory) as uint64_t, written and read by the kernels, so a
 * compress followed by a hop followed by a send needs no host round trip
 * until the host must post the send. */
#ifndef ZD_CUDA_KERNELS_H_
#define ZD_CUDA_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include "zc_szp.h"
#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* zd_cuda_stream_t;

/* ---- uncompressed path (zd_cuda_reduce.cu) ------------------------------ */
/* dst[i] = a[i] op b[i] with zd_reduce's semantics (zd_device.h) for every
 * dtype and op SUM/PROD/MAX/MIN; with has_fill (float32/float64 only), the
 * fill passes through as zd_reduce_fill says. */
zcclResult_t zd_cuda_reduce(void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                            zcclRedOp_t op, int has_fill, double fill, zd_cuda_stream_t stream);
/* buf[i] /= n with zd_divide's semantics (fill values left as they are). */
zcclResult_t zd_cuda_divide(void* buf, size_t count, zcclDataType_t dtype, int n, int has_fill, double fill,
                            zd_cuda_stream_t stream);
/* dst[i] = src[i] * scalar with zd_scale's semantics: the scalar read from
 * at (device-visible) as the kernel runs, or with at NULL from bits. */
zcclResult_t zd_cuda_scale(void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* at,
                           uint64_t bits, zd_cuda_stream_t stream);
/* Range of the finite, non-fill values (float32/float64): out[0] = min,
 * out[1] = max (as doubles), *valid the count; out and valid are
 * device-visible. */
zcclResult_t zd_cuda_value_range(const void* in, size_t count, zcclDataType_t dtype, int has_fill, double fill,
                                 double* out, unsigned long long* valid, zd_cuda_stream_t stream);
/* *size bytes (device-visible, read when it runs) from src to dst, which
 * may be mapped pinned host memory; more than cap sets *status
 * (zcclInvalidUsage) and copies nothing. */
zcclResult_t zd_cuda_copy_sized(void* dst, const void* src, const uint64_t* size, size_t cap, int* status,
                                zd_cuda_stream_t stream);

/* ---- the stream codec (zd_cuda_codec.cu), docs/format.md -----------------
 * Bit-identical to zc_compress / zc_decompress / zc_hop: the same per-block
 * functions (zc_szp_block.h, zd_cuda_codec_blocks.h) compiled for the
 * device. Each is a single kernel launch (plus a 64-byte reset of its
 * scratch): one CUDA block per chunk at a time (CTAs take chunks in order),
 * one thread per 32-value block, chunks placed in the output by a decoupled
 * look-back scan over the chunk sizes. Failures the CPU codec reports as
 * zcclInvalidArgument or zcclInvalidUsage are zcclInvalidUsage in *status,
 * exactly where the CPU fails (output room included).
 * scratch: device memory of zd_cuda_codec_scratch_bytes(count, dtype,
 * chunk_log2) bytes, 8-byte aligned, not shared between launches in flight
 * together. Values (in, out) must be 4-byte aligned. */
size_t zd_cuda_codec_scratch_bytes(size_t count, zcclDataType_t dtype, unsigned chunk_log2);
/* Scratch enough for any hop whose output has room cap (the host knows no
 * count or chunk size for a hop: they are in the streams, on the GPU). */
size_t zd_cuda_hop_scratch_bytes(size_t cap);
/* count values at in into a stream at out (room cap); *out_size its bytes
 * (0 and zcclInvalidUsage in *status when cap is too small). */
zcclResult_t zd_cuda_compress(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                              uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status,
                              zd_cuda_stream_t stream);
/* The stream (*size bytes) into exactly count values at out; a stream that
 * fails validation or holds another count sets *status (zcclInvalidUsage)
 * and writes nothing past out[count). */
zcclResult_t zd_cuda_decompress(const void* stream_bytes, const uint64_t* size, void* out, size_t count,
                                int* status, zd_cuda_stream_t stream);
/* Homomorphic op (SUM, MAX, MIN) of two compatible streams into out (room
 * cap; out may be a or b: see zd_cuda_codec.cu for why that is safe; only
 * then may out_size be a_size or b_size). */
zcclResult_t zd_cuda_hop(zcclRedOp_t op, const void* a, const uint64_t* a_size, const void* b,
                         const uint64_t* b_size, void* out, size_t cap, uint64_t* out_size, void* scratch,
                         size_t scratch_bytes, int* status, zd_cuda_stream_t stream);

/* ---- persistent mode (zd_cuda_codec.cu; ZCCL_PERSISTENT_KERNEL=1) ----------
 * One kernel that stays on the GPU and takes the three codec operations as
 * items from a queue in mapped pinned memory, in the order they are
 * submitted, instead of a launch each. An item first waits until the
 * device word *gate has reached gate_val (wrapping compare; gate NULL: no
 * wait): a stream writes the word (cuStreamWriteValue32) after the work
 * the item must follow. *seq gets the item's number: it has completed when
 * the done word (device memory, zd_cuda_persist_done_word) has reached it,
 * which a stream waits for with cuStreamWaitValue32 (GEQ) and the host
 * with zd_cuda_persist_wait. The arguments, checks and results are those
 * of the launchers above; scratch and status are the item's own as there.
 * ctas: real CTAs (0: half the SMs; at most one per SM).
 * The kernel leaves after idle_us without items (so that device-wide
 * synchronisation does not wait for it for ever) and is launched again by
 * the next submission; submitting waits while ZD_PQ (256) items are in
 * flight. Not thread-safe against destroy; submissions may come from
 * several threads. */
typedef struct zd_cuda_persist zd_cuda_persist_t;
zcclResult_t zd_cuda_persist_create(unsigned long long idle_us, int ctas, zd_cuda_persist_t** out);
/* Waits for every item submitted, lets the kernel leave, frees. */
void zd_cuda_persist_destroy(zd_cuda_persist_t* p);
zcclResult_t zd_cuda_persist_compress(zd_cuda_persist_t* p, const zc_params_t* prm, const void* in, size_t count,
                                      void* out, size_t cap, uint64_t* out_size, void* scratch, size_t scratch_bytes,
                                      int* status, const uint32_t* gate, uint32_t gate_val, uint64_t* seq);
zcclResult_t zd_cuda_persist_decompress(zd_cuda_persist_t* p, const void* stream_bytes, const uint64_t* size,
                                        void* out, size_t count, int* status, const uint32_t* gate,
                                        uint32_t gate_val, uint64_t* seq);
zcclResult_t zd_cuda_persist_hop(zd_cuda_persist_t* p, zcclRedOp_t op, const void* a, const uint64_t* a_size,
                                 const void* b, const uint64_t* b_size, void* out, size_t cap, uint64_t* out_size,
                                 void* scratch, size_t scratch_bytes, int* status, const uint32_t* gate,
                                 uint32_t gate_val, uint64_t* seq);
/* The host waits until item seq has completed (fails if the GPU failed). */
zcclResult_t zd_cuda_persist_wait(zd_cuda_persist_t* p, uint64_t seq);
const uint32_t* zd_cuda_persist_done_word(const zd_cuda_persist_t* p);
/* How many times the kernel was launched (tests: idle exits happened). */
unsigned long long zd_cuda_persist_launches(zd_cuda_persist_t* p);
/* Its CTAs. */
int zd_cuda_persist_ctas(const zd_cuda_persist_t* p);

/* ---- loading ------------------------------------------------------------
 * CUDA loads a kernel at its first launch by default (lazy loading, since
 * CUDA 12.2), and loading may wait until the GPU is idle. A stream-ordered
 * call holds the caller's stream with a kernel that spins until the
 * progress thread has run the operation, so a first launch by that thread
 * would wait for the spin that waits for it. On an H200 a kernel never
 * launched before did not run beside a spinning kernel (a trivial kernel
 * on another stream, 3 s). The cuda device therefore loads every kernel
 * of the library when it is made, before any hold: zd_cuda_kernels_load
 * (zd_cuda_dev.cu) calls the per-file loaders below, which walk the same
 * dispatch as the launchers so that no instantiation is missed. */
zcclResult_t zd_cuda_kernels_load(void);
zcclResult_t zd_cuda_reduce_load(void); /* zd_cuda_reduce.cu */
zcclResult_t zd_cuda_codec_load(void);  /* zd_cuda_codec.cu */
zcclResult_t zd_cuda_stream_load(void); /* zd_cuda_stream.cu: the hold kernel */

#ifdef __cplusplus
}
#endif

#endif /* ZD_CUDA_KERNELS_H_ */
