/* What the codec's kernels (zd_cuda_codec.cu) and the persistent kernel's
 * host side (zd_cuda_queue.cu) share: each kernel's argument block, the
 * queue in mapped pinned memory that carries them to the persistent kernel
 * (how it runs them: the comment on "persistent mode" in
 * zd_cuda_codec.cu), and the codec's functions the queue calls. CUDA C++,
 * for those two files only. */
#ifndef ZD_CUDA_QUEUE_H_
#define ZD_CUDA_QUEUE_H_

#include <cuda_runtime.h>
#include <stdint.h>

#include "zc_szp.h"
#include "zccl.h"
#include "zu_error.h"

/* ---- the kernels' arguments ---------------------------------------------- */

/* Compression. */
typedef struct {
  const uint8_t* in;
  uint64_t count;
  uint8_t* out;
  uint64_t cap;
  uint64_t* out_size;
  int* status;
  uint8_t* scratch;
  unsigned long long epoch;
  double eb, fill;
  int has_fill, f64;
  int checksum; /* write chunk checksums */
  unsigned lg;
  uint32_t nchunks;
} zd_cargs_t;

/* Decompression. */
typedef struct {
  const uint8_t* s;
  const uint64_t* size;
  uint8_t* out;
  uint64_t count;
  int* status;
} zd_dargs_t;

/* Homomorphic operations. */
typedef struct {
  zcclRedOp_t op;
  const uint8_t* a;
  const uint64_t* a_size;
  const uint8_t* b;
  const uint64_t* b_size;
  uint8_t* out;
  uint64_t cap;
  uint64_t* out_size;
  int* status;
  uint8_t* scratch;
  uint64_t scratch_bytes;
  unsigned long long epoch;
  int inplace; /* out == a or out == b: zd_hop_stage_kernel runs first */
} zd_hargs_t;

/* ---- the persistent kernel's queue ------------------------------------------ */

#define ZD_PQ 256 /* items in the queue */
enum { ZD_P_COMPRESS = 1, ZD_P_DECOMPRESS, ZD_P_HOP_STAGE, ZD_P_HOP };

typedef struct {
  uint32_t kind;
  uint32_t gate_val;
  const uint32_t* gate; /* device word: the item waits until (int32_t)(*gate - gate_val) >= 0; NULL: no wait */
  union {
    zd_cargs_t c;
    zd_dargs_t d;
    zd_hargs_t h;
  } a;
} zd_pitem_t;

/* Pinned and mapped: the host writes items, tail and quit; the kernel
 * writes dead and done. */
typedef struct {
  uint64_t tail;  /* items published */
  uint64_t done;  /* items completed */
  uint32_t dead;  /* no CTA of the engine runs (or the last is leaving) */
  uint32_t quit;  /* the engine is being destroyed: CTAs leave */
  zd_pitem_t item[ZD_PQ];
} zd_pq_t;

/* Device memory, zeroed once. */
typedef struct {
  unsigned long long vticket; /* virtual CTAs taken, over all items */
  unsigned long long chunk;   /* the current item's chunk ticket */
  unsigned long long vdone;   /* the current item's virtual CTAs finished */
  unsigned long long done;    /* items completed */
  unsigned alive;             /* CTAs running */
  uint32_t done32;            /* done's low 32 bits, for cuStreamWaitValue32 */
} zd_pctl_t;

typedef struct {
  zd_pq_t* q; /* device address */
  zd_pctl_t* ctl;
  unsigned vg;
  unsigned long long idle_ns;
} zd_pargs_t;

/* ---- the codec's side, for the queue (zd_cuda_codec.cu) --------------------- */

/* The launchers' checks and arguments, shared by both modes. */
zcclResult_t zd_compress_args(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                              uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status, zd_cargs_t* args);
zcclResult_t zd_decompress_args(const void* stream_bytes, const uint64_t* size, void* out, size_t count, int* status,
                                zd_dargs_t* args);
zcclResult_t zd_hop_args(zcclRedOp_t op, const void* a, const uint64_t* a_size, const void* b, const uint64_t* b_size,
                         void* out, size_t cap, uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status,
                         zd_hargs_t* args);
/* The persistent kernel's CTAs an SM holds at once, and its launch on
 * stream (the launch's error). */
cudaError_t zd_cuda_pq_occupancy(int* per_sm);
cudaError_t zd_cuda_pq_launch(zd_pargs_t args, int grid, cudaStream_t stream);

static inline zcclResult_t zd_cuda_fail(cudaError_t e, const char* what) {
  return ZU_ERROR(zcclUnhandledCudaError, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#endif /* ZD_CUDA_QUEUE_H_ */
