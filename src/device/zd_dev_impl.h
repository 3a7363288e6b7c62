/* Inside the device layer: the zd_dev_t object, one queued operation
 * (zd_op_t) and the per-kind ops table. Not for other layers. */
#ifndef ZD_DEV_IMPL_H_
#define ZD_DEV_IMPL_H_

#include <pthread.h>

#include "zc_szp.h"
#include "zd_alloc.h"
#include "zd_device.h"
#include "zd_host_codec.h"
#include "zd_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Codec operations (ZD_OP_ENCODE and after) run in zd_codec_exec, each
 * for its op's codec. */
typedef enum {
  ZD_OP_COPY,
  ZD_OP_COPY_SIZED,
  ZD_OP_REDUCE,
  ZD_OP_DIVIDE,
  ZD_OP_SCALE,
  ZD_OP_ENCODE,
  ZD_OP_DECODE,
  ZD_OP_REDUCE_ENCODED,
  ZD_OP_HOP_VALUES
} zd_op_kind_t;

/* One operation, checked, as queued; copied by value into the sim queue. */
typedef struct {
  zd_op_kind_t kind;
  void* dst;
  const void* a;   /* copy: src */
  const void* b;
  size_t count;    /* copy: bytes */
  zcclDataType_t dtype;
  zcclRedOp_t op;
  int n;           /* divide */
  uint64_t scalar; /* scale: the scalar's bytes when b (where it is read) is NULL */
  /* codec: stream sizes are read and written through pointers when the
   * operation runs (a queued device learns them only then) */
  const zc_codec_info_t* codec; /* codec operations: whose */
  zc_params_t params;  /* encode, hop values */
  size_t cap;          /* encode, reductions of streams, sized copy: room at dst */
  const size_t* a_size, *b_size; /* sized copy: a_size is the bytes */
  size_t* out_size;    /* encode, reductions of streams: the stream's bytes */
} zd_op_t;

/* A device's streams ("lanes", zd_device.h): at most ZD_LANES_MAX; an event
 * is its lane in the top byte and the lane's mark number below. */
#define ZD_LANES_MAX 8
static inline zd_event_t zd_ev_make(int lane, uint64_t seq) { return (uint64_t)lane << 56 | seq; }
static inline int zd_ev_lane(zd_event_t ev) { return (int)(ev >> 56); }
static inline uint64_t zd_ev_seq(zd_event_t ev) { return ev & ((1ull << 56) - 1); }

typedef struct {
  const char* name;
  zcclResult_t (*init)(zd_dev_t* dev);
  void (*fini)(zd_dev_t* dev); /* waits for queued work */
  /* submit and record act on dev->lane; done and wait on the event's lane. */
  zcclResult_t (*submit)(zd_dev_t* dev, const zd_op_t* op);
  zd_event_t (*record)(zd_dev_t* dev);
  int (*done)(zd_dev_t* dev, zd_event_t ev);
  zcclResult_t (*wait)(zd_dev_t* dev, zd_event_t ev);
  /* dev->lane's later work waits for ev, of another lane (NULL: one lane). */
  zcclResult_t (*lane_wait)(zd_dev_t* dev, zd_event_t ev);
  /* The buffer pool's memory, freed after fini (NULL: host memory,
   * aligned_alloc / free, made at the first zd_buf_get). A kind with
   * pool_alloc gets both its pools when the device is made, in the
   * creating thread: no allocation on the hot path, and none in the
   * progress thread while a call holds a stream, which an allocation that
   * synchronises the GPU would wait for (zd_dev_create). */
  zcclResult_t (*pool_alloc)(zd_dev_t* dev, size_t bytes, void** mem);
  void (*pool_free)(zd_dev_t* dev, void* mem);
  /* zd_value_range once its arguments are checked (NULL: sync, then read
   * the values as host memory). */
  zcclResult_t (*value_range)(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                              double fill, double* min, double* max, size_t* valid);
  /* The staging pool's host memory (zd_stage_get): pinned for cuda (NULL:
   * aligned_alloc / free). */
  zcclResult_t (*host_alloc)(zd_dev_t* dev, size_t bytes, void** mem);
  void (*host_free)(zd_dev_t* dev, void* mem);
} zd_ops_t;

typedef struct zd_sim zd_sim_t;
typedef struct zd_cuda zd_cuda_t;

/* Staging buffers a queued copy still reads (zd_stage_put_after). */
#define ZD_STAGE_LATE 256

struct zd_dev {
  zd_kind_t kind;
  const zd_ops_t* ops;
  zd_alloc_t bufs;  /* the buffer pool (zd_alloc.c) */
  zd_alloc_t stage; /* host memory for messages the transport cannot send from bufs (zd_staging.c) */
  pthread_mutex_t late_lock;
  struct {
    void* buf;
    zd_event_t ev;
  } late[ZD_STAGE_LATE]; /* back to stage once ev has passed; oldest first */
  int nlate;
  /* A lane's error that a wait for a late buffer took (the lane reports
   * each error once), kept for the lane's next zd_event_wait / zd_sync. */
  zcclResult_t late_err[ZD_LANES_MAX];
  char late_msg[ZD_LANES_MAX][256];
  /* nlate plus the lanes with a late_err, changed under late_lock: every
   * sync reads it without the lock and skips both lists when it is 0
   * (small calls sync several times each). */
  zd_atomic_int late_pending;
  /* Host compute: the pool starts at the first split operation. run_lock
   * serialises zd_pool_run (one job per pool). */
  pthread_mutex_t run_lock;
  zd_pool_t* pool;
  zd_scratch_t hop_aside; /* the in-place hops' result, kept (under run_lock) */
  int nthreads;       /* ZCCL_REDUCE_THREADS, 0: hwloc cores */
  int node_ranks;     /* zd_set_node_ranks, 0: not told */
  size_t split_bytes; /* ZCCL_REDUCE_SPLIT_BYTES */
  int nlanes; /* ZCCL_DEVICE_STREAMS as this kind takes it (zd_lanes) */
  int lane;   /* where the issuer's operations go now (zd_set_lane) */
  zd_sim_t* sim;
  zd_cuda_t* cuda[ZD_LANES_MAX]; /* one per lane */
  int gpu; /* cuda: the CUDA device it was created on (the pool is freed there after fini) */
  int stream_blocking; /* ZCCL_STREAM_MODE as this kind reads it (zd_stream_blocking) */
};

/* zd_value_range of host-readable memory: once what is queued has run,
 * the host's loop (the kinds without a value_range op; sim's, after its
 * ZCCL_SIM_FAIL_RANGE check). */
zcclResult_t zd_value_range_host(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                                 double fill, double* min, double* max, size_t* valid);

/* zd_alloc.c: gives a pool of dev's (dev->bufs; dev->stage with staging)
 * its memory unless it has it; frees both pools at zd_dev_destroy. */
zcclResult_t zd_bufpool_make(zd_dev_t* dev, zd_alloc_t* a, int staging);
void zd_bufpools_free(zd_dev_t* dev);

/* zd_staging.c: takes back the late staging buffers whose events have
 * passed; with wait, waits for the oldest first (one at least, if any).
 * Returns how many. */
int zd_stage_reclaim(zd_dev_t* dev, int wait);
/* res of a wait on lane l, unless a wait for a late staging buffer took an
 * earlier error of that lane: that one, reported now. */
zcclResult_t zd_late_err_take(zd_dev_t* dev, int l, zcclResult_t res);
/* Every late buffer back at once, at zd_dev_destroy (nothing runs). */
void zd_stage_drop_late(zd_dev_t* dev);

extern const zd_ops_t zd_sim_ops;
/* Waits for the work queued now on every live sim user stream, held calls
 * included (zd_stream.c): what cudaFree and cudaFreeHost may do to a GPU's
 * streams. cudaMalloc and cudaHostAlloc returned beside a spinning kernel
 * in one run on an H200, but the sim device's allocations take the strict
 * reading and wait too, so that CI finds any pool made or freed while a
 * stream-ordered call holds its stream. */
void zd_sim_streams_drain(void);
/* cuda/zd_cuda_dev.cu; without CUDA, zd_cuda_none.c's row, whose init
 * fails naming ZCCL_CUDA=OFF. */
extern const zd_ops_t zd_cuda_ops;

/* Tests: queues on a cuda device a kernel that stores code in the device's
 * status word as a failing codec kernel would, so the next wait reports it.
 * zcclInvalidUsage on other kinds or without CUDA. */
zcclResult_t zd_cuda_post_error(zd_dev_t* dev, zcclResult_t code);

/* Runs op now on the calling thread, spreading it over dev's thread pool
 * when it is larger than dev->split_bytes (zd_reduce.c). */
zcclResult_t zd_op_exec(zd_dev_t* dev, const zd_op_t* op);

/* The element kernels without a device or threads, for benchmarks and the
 * split: dst[i] = a[i] op b[i] over count elements (arguments checked by the
 * caller; dst may equal a or b). */
void zd_reduce_kernel(void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                      zcclRedOp_t op);
void zd_divide_kernel(void* buf, size_t count, zcclDataType_t dtype, int n);
/* dst[i] = src[i] * *s (one dtype value at s); dst may equal src. */
void zd_scale_kernel(void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* s);

#ifdef __cplusplus
}
#endif

#endif /* ZD_DEV_IMPL_H_ */
