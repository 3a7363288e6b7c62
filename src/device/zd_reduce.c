/* Host reduction kernels: one plain loop per dtype x op over restrict
 * pointers, written so GCC -O3 vectorizes it, and the split of large
 * operations over the device's thread pool. The element arithmetic (narrow
 * floats, NaN-aware max/min) is zd_narrow.h, shared with the CUDA kernels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zd_dev_impl.h"
#include "zd_host_codec.h"
#include "zd_narrow.h"
#include "zu_dtype.h"
#include "zu_error.h"
#include "zu_log.h"

/* ---- kernels ---------------------------------------------------------------
 * Four loops per dtype x op: out of place, and dst == a, dst == b, dst == a
 * == b, so every loop has restrict pointers that really do not alias. */

typedef void (*zd_kern_fn)(void* d, const void* a, const void* b, size_t n);

#define ZD_KERNEL(name, S, LOAD, STORE, OP)                                                 \
  static void name##_3(S* restrict d, const S* restrict a, const S* restrict b, size_t n) { \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(OP(LOAD(a[i]), LOAD(b[i])));            \
  }                                                                                         \
  static void name##_a(S* restrict d, const S* restrict b, size_t n) {                      \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(OP(LOAD(d[i]), LOAD(b[i])));            \
  }                                                                                         \
  static void name##_b(S* restrict d, const S* restrict a, size_t n) {                      \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(OP(LOAD(a[i]), LOAD(d[i])));            \
  }                                                                                         \
  static void name##_ab(S* restrict d, size_t n) {                                          \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(OP(LOAD(d[i]), LOAD(d[i])));            \
  }                                                                                         \
  static void name(void* d, const void* a, const void* b, size_t n) {                       \
    if (d == a && d == b)                                                                   \
      name##_ab(d, n);                                                                      \
    else if (d == a)                                                                        \
      name##_a(d, b, n);                                                                    \
    else if (d == b)                                                                        \
      name##_b(d, a, n);                                                                    \
    else                                                                                    \
      name##_3(d, a, b, n);                                                                 \
  }

/* Signed integers add and multiply as their unsigned type: wraps, no UB. */
#define ZD_INT_KERNELS(tag, S, U)                            \
  ZD_KERNEL(zd_sum_##tag, U, ZD_ID, ZD_ID, ZD_ADD)          \
  ZD_KERNEL(zd_prod_##tag, U, ZD_ID, ZD_ID, ZD_MUL)         \
  ZD_KERNEL(zd_max_##tag, S, ZD_ID, ZD_ID, ZD_MAXI)         \
  ZD_KERNEL(zd_min_##tag, S, ZD_ID, ZD_ID, ZD_MINI)

#define ZD_FLOAT_KERNELS(tag, S, LOAD, STORE)                \
  ZD_KERNEL(zd_sum_##tag, S, LOAD, STORE, ZD_ADD)           \
  ZD_KERNEL(zd_prod_##tag, S, LOAD, STORE, ZD_MUL)          \
  ZD_KERNEL(zd_max_##tag, S, LOAD, STORE, ZD_MAXF)          \
  ZD_KERNEL(zd_min_##tag, S, LOAD, STORE, ZD_MINF)

ZD_INT_KERNELS(i8, int8_t, uint8_t)
ZD_INT_KERNELS(u8, uint8_t, uint8_t)
ZD_INT_KERNELS(i32, int32_t, uint32_t)
ZD_INT_KERNELS(u32, uint32_t, uint32_t)
ZD_INT_KERNELS(i64, int64_t, uint64_t)
ZD_INT_KERNELS(u64, uint64_t, uint64_t)
ZD_FLOAT_KERNELS(f32, float, ZD_ID, ZD_ID)
ZD_FLOAT_KERNELS(f64, double, ZD_ID, ZD_ID)
ZD_FLOAT_KERNELS(f16, uint16_t, zd_f16_load, zd_f16_store)
ZD_FLOAT_KERNELS(bf16, uint16_t, zd_bf16_load, zd_bf16_store)
ZD_FLOAT_KERNELS(e4m3, uint8_t, zd_e4m3_load, zd_e4m3_store)
ZD_FLOAT_KERNELS(e5m2, uint8_t, zd_e5m2_load, zd_e5m2_store)

#define ZD_ROW(tag) {zd_sum_##tag, zd_prod_##tag, zd_max_##tag, zd_min_##tag}
/* Indexed by dtype, then op (zcclSum..zcclMin). */
static const zd_kern_fn zd_kernels[zcclNumTypes][4] = {
    [zcclInt8] = ZD_ROW(i8),       [zcclUint8] = ZD_ROW(u8),        [zcclInt32] = ZD_ROW(i32),
    [zcclUint32] = ZD_ROW(u32),    [zcclInt64] = ZD_ROW(i64),       [zcclUint64] = ZD_ROW(u64),
    [zcclFloat16] = ZD_ROW(f16),   [zcclFloat32] = ZD_ROW(f32),     [zcclFloat64] = ZD_ROW(f64),
    [zcclBfloat16] = ZD_ROW(bf16), [zcclFloat8e4m3] = ZD_ROW(e4m3), [zcclFloat8e5m2] = ZD_ROW(e5m2),
};

void zd_reduce_kernel(void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                      zcclRedOp_t op) {
  zd_kernels[dtype][op](dst, a, b, count);
}

/* ---- divide ---------------------------------------------------------------- */

/* Integers divide by n in a type W that holds every n >= 1 (as T, int8's
 * n = 200 would be -56 and uint8's n = 256 zero). */
#define ZD_DIV_INT(tag, T, W)                                                       \
  static void zd_div_##tag(void* buf, size_t n, int by) {                          \
    T* restrict d = buf;                                                            \
    const W q = (W)by;                                                              \
    for (size_t i = 0; i < n; i++) d[i] = (T)(d[i] / q);                            \
  }
#define ZD_DIV_FLOAT(tag, S, C, LOAD, STORE)                                        \
  static void zd_div_##tag(void* buf, size_t n, int by) {                          \
    S* restrict d = buf;                                                            \
    const C q = (C)by;                                                              \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(LOAD(d[i]) / q);                 \
  }

ZD_DIV_INT(i8, int8_t, int32_t)
ZD_DIV_INT(u8, uint8_t, uint32_t)
ZD_DIV_INT(i32, int32_t, int32_t)
ZD_DIV_INT(u32, uint32_t, uint32_t)
ZD_DIV_INT(i64, int64_t, int64_t)
ZD_DIV_INT(u64, uint64_t, uint64_t)
ZD_DIV_FLOAT(f32, float, float, ZD_ID, ZD_ID)
ZD_DIV_FLOAT(f64, double, double, ZD_ID, ZD_ID)
ZD_DIV_FLOAT(f16, uint16_t, float, zd_f16_load, zd_f16_store)
ZD_DIV_FLOAT(bf16, uint16_t, float, zd_bf16_load, zd_bf16_store)
ZD_DIV_FLOAT(e4m3, uint8_t, float, zd_e4m3_load, zd_e4m3_store)
ZD_DIV_FLOAT(e5m2, uint8_t, float, zd_e5m2_load, zd_e5m2_store)

static void (*const zd_dividers[zcclNumTypes])(void*, size_t, int) = {
    [zcclInt8] = zd_div_i8,       [zcclUint8] = zd_div_u8,        [zcclInt32] = zd_div_i32,
    [zcclUint32] = zd_div_u32,    [zcclInt64] = zd_div_i64,       [zcclUint64] = zd_div_u64,
    [zcclFloat16] = zd_div_f16,   [zcclFloat32] = zd_div_f32,     [zcclFloat64] = zd_div_f64,
    [zcclBfloat16] = zd_div_bf16, [zcclFloat8e4m3] = zd_div_e4m3, [zcclFloat8e5m2] = zd_div_e5m2,
};

void zd_divide_kernel(void* buf, size_t count, zcclDataType_t dtype, int n) {
  zd_dividers[dtype](buf, count, n);
}

/* ---- scale -------------------------------------------------------------------
 * The scalar is read once per call, as the dtype's storage; signed integers
 * multiply as their unsigned type (wraps, no UB). dst may equal src. */
#define ZD_SCALE(tag, S, LOAD, STORE)                                               \
  static void zd_scale_##tag(void* dv, const void* av, size_t n, const void* sp) { \
    S* d = dv;                                                                      \
    const S* a = av;                                                                \
    S s;                                                                            \
    memcpy(&s, sp, sizeof s);                                                       \
    for (size_t i = 0; i < n; i++) d[i] = (S)STORE(ZD_MUL(LOAD(a[i]), LOAD(s)));   \
  }

ZD_SCALE(u8, uint8_t, ZD_ID, ZD_ID)
ZD_SCALE(u32, uint32_t, ZD_ID, ZD_ID)
ZD_SCALE(u64, uint64_t, ZD_ID, ZD_ID)
ZD_SCALE(f32, float, ZD_ID, ZD_ID)
ZD_SCALE(f64, double, ZD_ID, ZD_ID)
ZD_SCALE(f16, uint16_t, zd_f16_load, zd_f16_store)
ZD_SCALE(bf16, uint16_t, zd_bf16_load, zd_bf16_store)
ZD_SCALE(e4m3, uint8_t, zd_e4m3_load, zd_e4m3_store)
ZD_SCALE(e5m2, uint8_t, zd_e5m2_load, zd_e5m2_store)

static void (*const zd_scalers[zcclNumTypes])(void*, const void*, size_t, const void*) = {
    [zcclInt8] = zd_scale_u8,       [zcclUint8] = zd_scale_u8,        [zcclInt32] = zd_scale_u32,
    [zcclUint32] = zd_scale_u32,    [zcclInt64] = zd_scale_u64,       [zcclUint64] = zd_scale_u64,
    [zcclFloat16] = zd_scale_f16,   [zcclFloat32] = zd_scale_f32,     [zcclFloat64] = zd_scale_f64,
    [zcclBfloat16] = zd_scale_bf16, [zcclFloat8e4m3] = zd_scale_e4m3, [zcclFloat8e5m2] = zd_scale_e5m2,
};

void zd_scale_kernel(void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* s) {
  zd_scalers[dtype](dst, src, count, s);
}

/* ---- with a fill value ------------------------------------------------------
 * The fill absorbs: a position that is the fill in either input is the fill
 * in the result, as in the codec's homomorphic operations (docs/format.md),
 * and AVG's division leaves it alone. One loop per dtype x op; dst may equal
 * a or b (each element is read before it is written). */
#define ZD_FILL_REDUCE(tag, S, OP)                                                                  \
  static void zd_fill_##tag(S* d, const S* a, const S* b, size_t n, S f) {                         \
    for (size_t i = 0; i < n; i++) {                                                                \
      S x = a[i], y = b[i];                                                                         \
      d[i] = ZD_FILL_OP(OP, x, y, f);                                                               \
    }                                                                                               \
  }
#define ZD_FILL_KERNELS(tag, S)                                                                     \
  ZD_FILL_REDUCE(sum_##tag, S, ZD_ADD)                                                              \
  ZD_FILL_REDUCE(prod_##tag, S, ZD_MUL)                                                             \
  ZD_FILL_REDUCE(max_##tag, S, ZD_MAXF)                                                             \
  ZD_FILL_REDUCE(min_##tag, S, ZD_MINF)                                                             \
  static void zd_fill_reduce_##tag(void* d, const void* a, const void* b, size_t n, zcclRedOp_t op, double f) { \
    static void (*const k[4])(S*, const S*, const S*, size_t, S) = {zd_fill_sum_##tag, zd_fill_prod_##tag, \
                                                                     zd_fill_max_##tag, zd_fill_min_##tag}; \
    k[op](d, a, b, n, (S)f);                                                                        \
  }                                                                                                 \
  static void zd_fill_divide_##tag(void* buf, size_t n, int by, double f) {                         \
    S* d = buf;                                                                                     \
    const S q = (S)by, fs = (S)f;                                                                   \
    for (size_t i = 0; i < n; i++) d[i] = d[i] == fs ? fs : d[i] / q;                               \
  }

ZD_FILL_KERNELS(f32, float)
ZD_FILL_KERNELS(f64, double)

/* ---- one operation, split over the thread pool when large ------------------ */

typedef struct {
  const zd_op_t* op;
  size_t esize; /* bytes per element (copy: 1) */
} zd_split_t;

static void zd_op_range(const zd_op_t* op, size_t esize, size_t lo, size_t hi) {
  size_t off = lo * esize, n = hi - lo;
  char* d = (char*)op->dst + off;
  switch (op->kind) {
    case ZD_OP_COPY:
      memcpy(d, (const char*)op->a + off, n);
      break;
    case ZD_OP_REDUCE:
      /* In-place stays in place: offsets are applied to equal pointers alike. */
      if (!op->params.has_fill)
        zd_reduce_kernel(d, (const char*)op->a + off, (const char*)op->b + off, n, op->dtype, op->op);
      else if (op->dtype == zcclFloat32)
        zd_fill_reduce_f32(d, (const char*)op->a + off, (const char*)op->b + off, n, op->op, op->params.fill);
      else
        zd_fill_reduce_f64(d, (const char*)op->a + off, (const char*)op->b + off, n, op->op, op->params.fill);
      break;
    case ZD_OP_DIVIDE:
      if (!op->params.has_fill)
        zd_divide_kernel(d, n, op->dtype, op->n);
      else if (op->dtype == zcclFloat32)
        zd_fill_divide_f32(d, n, op->n, op->params.fill);
      else
        zd_fill_divide_f64(d, n, op->n, op->params.fill);
      break;
    case ZD_OP_SCALE: /* b: where the scalar is (read now), else its bytes */
      zd_scale_kernel(d, (const char*)op->a + off, n, op->dtype, op->b ? op->b : (const void*)&op->scalar);
      break;
    default: break; /* codec operations never split here */
  }
}

static void zd_split_run(void* arg, int t, int nt) {
  const zd_split_t* s = arg;
  /* Pieces are whole cache lines so threads never write the same line. */
  size_t unit = 64 / s->esize;
  size_t units = (s->op->count + unit - 1) / unit;
  size_t per = (units + (size_t)nt - 1) / (size_t)nt * unit;
  size_t lo = per * (size_t)t, hi = lo + per;
  if (hi > s->op->count) hi = s->op->count;
  if (lo < hi) zd_op_range(s->op, s->esize, lo, hi);
}

/* Ranks of the job on this host, as the launcher says (1 if none does). */
static int zd_local_ranks(void) {
  static const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char* v = getenv(vars[i]);
    int n = v ? atoi(v) : 0;
    if (n > 0) return n;
  }
  return 1;
}

/* The pool, made at first use (under run_lock). ZCCL_REDUCE_THREADS=0 means
 * the cores available to the process shared by the job's ranks on this
 * host: 4 ranks on 2 cores each spreading work over 2 threads would only
 * wait for descheduled helpers. *pool stays NULL for one thread. */
static zcclResult_t zd_pool_get(zd_dev_t* dev, zd_pool_t** pool) {
  *pool = NULL;
  if (dev->nthreads == 0) {
    int cores = zd_host_ncores(), local = zd_local_ranks(), n;
    if (dev->node_ranks > local) local = dev->node_ranks;
    n = cores / local;
    dev->nthreads = n > 1 ? n : 1;
    ZU_INFO(ZU_LOG_DEVICE, "host device: %d thread(s) for large reductions and the codec (ZCCL_REDUCE_THREADS=0: "
            "%d core(s) available, %d rank(s) on this host)", dev->nthreads, cores, local);
  }
  if (dev->nthreads == 1) return zcclSuccess;
  zcclResult_t res = zcclSuccess;
  if (dev->pool == NULL) res = zd_pool_create(dev->nthreads, &dev->pool);
  *pool = dev->pool;
  return res;
}

/* A decoding gave `got` values where the caller has room for exactly
 * op->count: the caller's mismatch (more values as well as fewer), not a
 * corrupt stream: zcclInvalidUsage. */
static zcclResult_t zd_decode_count(const zd_op_t* op, size_t got) {
  ZU_RETURN_ERR_IF(got != op->count, zcclInvalidUsage, "zd_decode: the codec=%s stream holds %zu values, expected %zu",
                   op->codec->name, got, op->count);
  return zcclSuccess;
}

/* zccl's stream format over the device's thread pool (chunks are
 * independent; the bytes do not depend on the thread count). */
static zcclResult_t zd_stream_exec(zd_dev_t* dev, zd_pool_t* pool, const zd_op_t* op) {
  switch (op->kind) {
    case ZD_OP_ENCODE:
      return zd_host_compress(pool, 0, &op->params, op->a, op->count, op->dst, op->cap, op->out_size);
    case ZD_OP_DECODE: {
      zc_header_t h;
      size_t got = 0;
      /* Checked before anything is written. */
      if (zc_header_read(op->a, *op->a_size, &h) == zcclSuccess && h.count != op->count)
        return zd_decode_count(op, (size_t)h.count);
      ZU_CHECK(zd_host_decompress(pool, 0, op->a, *op->a_size, op->dst, op->count, &got));
      return zd_decode_count(op, got);
    }
    case ZD_OP_REDUCE_ENCODED:
      return zd_host_hop(pool, 0, &dev->hop_aside, op->op, op->a, *op->a_size, op->b, *op->b_size, op->dst, op->cap,
                         op->out_size);
    case ZD_OP_HOP_VALUES:
      return zd_host_hop_values(pool, 0, &dev->hop_aside, op->op, &op->params, op->a, op->count, op->b,
                                *op->b_size, op->dst, op->cap, op->out_size);
    default:
      return ZU_ERROR(zcclInternalError, "zd_codec_exec: operation %d is not a codec's", (int)op->kind);
  }
}

/* Any other codec: its table's functions on this thread (one stream is one
 * sequential walk). */
static zcclResult_t zd_table_exec(const zd_op_t* op) {
  const zc_codec_ops_t* t = op->codec->ops;
  switch (op->kind) {
    case ZD_OP_ENCODE:
      return t->encode(&op->params, op->a, op->count, op->dst, op->cap, op->out_size);
    case ZD_OP_DECODE: {
      size_t got = 0;
      ZU_CHECK(t->decode(op->a, *op->a_size, op->dst, op->count, &got));
      return zd_decode_count(op, got);
    }
    case ZD_OP_REDUCE_ENCODED:
      return t->reduce(op->op, op->a, *op->a_size, op->b, *op->b_size, op->dst, op->cap, op->out_size);
    default:
      return ZU_ERROR(zcclInternalError, "zd_codec_exec: operation %d is not codec=%s's", (int)op->kind,
                      op->codec->name);
  }
}

/* The codecs' operations. The fused hop has no codec of its own: it is the
 * stream format's. */
static zcclResult_t zd_codec_exec(zd_dev_t* dev, const zd_op_t* op) {
  zd_pool_t* pool = NULL;
  pthread_mutex_lock(&dev->run_lock);
  zcclResult_t res = zd_pool_get(dev, &pool);
  if (res == zcclSuccess)
    res = op->kind == ZD_OP_HOP_VALUES || (op->codec->caps & ZC_CAP_STREAM) ? zd_stream_exec(dev, pool, op)
                                                                            : zd_table_exec(op);
  pthread_mutex_unlock(&dev->run_lock);
  return res;
}

zcclResult_t zd_op_exec(zd_dev_t* dev, const zd_op_t* op) {
  if (op->kind >= ZD_OP_ENCODE) return zd_codec_exec(dev, op);
  if (op->kind == ZD_OP_COPY_SIZED) {
    size_t n = *op->a_size;
    ZU_RETURN_ERR_IF(n > op->cap, zcclInvalidUsage, "zd_copy_sized: %zu bytes, room for %zu", n, op->cap);
    zd_op_t c = {.kind = ZD_OP_COPY, .dst = op->dst, .a = op->a, .count = n};
    return zd_op_exec(dev, &c);
  }
  size_t esize = op->kind == ZD_OP_COPY ? 1 : zu_dtype_size(op->dtype);
  size_t bytes = op->count * esize;
  if (bytes <= dev->split_bytes) {
    zd_op_range(op, esize, 0, op->count);
    return zcclSuccess;
  }
  pthread_mutex_lock(&dev->run_lock);
  zd_pool_t* pool = NULL;
  zcclResult_t res = zd_pool_get(dev, &pool);
  if (res == zcclSuccess && pool == NULL) zd_op_range(op, esize, 0, op->count);
  if (res == zcclSuccess && pool != NULL) {
    zd_split_t s = {op, esize};
    zd_pool_run(pool, 0, zd_split_run, &s);
  }
  pthread_mutex_unlock(&dev->run_lock);
  return res;
}
