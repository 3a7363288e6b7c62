/* Device objects: argument checks and dispatch through the per-kind ops
 * table, and the host kind (runs everything at once). The buffer pool is
 * zd_alloc.c's, staging zd_staging.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zc_rle.h"
#include "zd_dev_impl.h"
#include "zd_host_codec.h"
#include "zu_dtype.h"
#include "zu_error.h"
#include "zu_param.h"

/* ---- host: synchronous, so every event has passed ---------------------- */

static zcclResult_t zd_host_init(zd_dev_t* dev) {
  (void)dev;
  return zcclSuccess;
}
static void zd_host_fini(zd_dev_t* dev) { (void)dev; }
static zd_event_t zd_host_record(zd_dev_t* dev) {
  (void)dev;
  return 0;
}
static int zd_host_done(zd_dev_t* dev, zd_event_t ev) {
  (void)dev;
  (void)ev;
  return 1;
}
static zcclResult_t zd_host_wait(zd_dev_t* dev, zd_event_t ev) {
  (void)dev;
  (void)ev;
  return zcclSuccess;
}

static const zd_ops_t zd_host_ops = {
    .name = "host",
    .init = zd_host_init,
    .fini = zd_host_fini,
    .submit = zd_op_exec,
    .record = zd_host_record,
    .done = zd_host_done,
    .wait = zd_host_wait,
};

/* One row per kind (cuda: the CUDA build's, or zd_cuda_none.c's). */
static const zd_ops_t* const zd_ops_table[] = {
    [ZD_HOST] = &zd_host_ops,
    [ZD_SIM] = &zd_sim_ops,
    [ZD_CUDA] = &zd_cuda_ops,
};

const char* zd_kind_name(zd_kind_t kind) {
  switch (kind) {
    case ZD_HOST: return "host";
    case ZD_SIM: return "sim";
    case ZD_CUDA: return "cuda";
  }
  return "invalid";
}

zcclResult_t zd_kind_from_env(zd_kind_t* kind) {
  ZU_RETURN_ERR_IF(kind == NULL, zcclInvalidArgument, "zd_kind_from_env: NULL kind");
  const char* v = zu_param_str(ZU_PARAM_DEVICE);
  if (strcasecmp(v, "host") == 0) {
    *kind = ZD_HOST;
  } else if (strcasecmp(v, "sim") == 0) {
    *kind = ZD_SIM;
  } else if (strcasecmp(v, "cuda") == 0) {
    *kind = ZD_CUDA; /* without CUDA or a GPU, creating the device says why */
  } else {
    return ZU_ERROR(zcclInvalidArgument, "ZCCL_DEVICE='%s': expected host, sim or cuda", v);
  }
  return zcclSuccess;
}

zcclResult_t zd_dev_create(zd_kind_t kind, zd_dev_t** out) {
  ZU_RETURN_ERR_IF(out == NULL, zcclInvalidArgument, "zd_dev_create: NULL dev");
  *out = NULL;
  ZU_RETURN_ERR_IF((int)kind < 0 || kind > ZD_CUDA, zcclInvalidArgument, "zd_dev_create: kind %d invalid",
                   (int)kind);
  int64_t threads = 0, split = 0, lanes = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_DEVICE_STREAMS, &lanes));
  ZU_RETURN_ERR_IF(lanes < 0 || lanes > ZD_LANES_MAX, zcclInvalidArgument,
                   "ZCCL_DEVICE_STREAMS=%lld: expected 0 (the device's default) .. %d", (long long)lanes,
                   ZD_LANES_MAX);
  if (lanes == 0) lanes = kind == ZD_CUDA ? 4 : 2;
  if (kind == ZD_HOST) lanes = 1; /* its work runs on the calling thread */
  ZU_CHECK(zu_param_int(ZU_PARAM_REDUCE_THREADS, &threads));
  ZU_CHECK(zu_param_int(ZU_PARAM_REDUCE_SPLIT_BYTES, &split));
  ZU_RETURN_ERR_IF(threads < 0 || threads > 1024, zcclInvalidArgument,
                   "ZCCL_REDUCE_THREADS=%lld: expected 0 (all cores) .. 1024", (long long)threads);
  ZU_RETURN_ERR_IF(split < 0, zcclInvalidArgument, "ZCCL_REDUCE_SPLIT_BYTES=%lld is negative", (long long)split);

  /* Read here, where an error can still be returned: a bad value fails
   * the device, not a later call. */
  const char* mode = zu_param_str(ZU_PARAM_STREAM_MODE);
  int blocking;
  if (strcasecmp(mode, "auto") == 0)
    blocking = kind == ZD_CUDA; /* the async hold hung on an H200 (docs/cuda.md) */
  else if (strcasecmp(mode, "blocking") == 0)
    blocking = 1;
  else if (strcasecmp(mode, "async") == 0)
    blocking = 0;
  else
    return ZU_ERROR(zcclInvalidArgument, "ZCCL_STREAM_MODE='%s': expected auto, async or blocking", mode);

  zd_dev_t* dev = calloc(1, sizeof *dev);
  ZU_RETURN_ERR_IF(dev == NULL, zcclSystemError, "zd_dev_create: out of memory");
  dev->kind = kind;
  dev->stream_blocking = blocking && kind != ZD_HOST; /* the host has no streams */
  dev->ops = zd_ops_table[kind];
  dev->nthreads = (int)threads;
  dev->nlanes = (int)lanes;
  dev->split_bytes = (size_t)split;
  zd_alloc_init(&dev->bufs);
  zd_alloc_init(&dev->stage);
  pthread_mutex_init(&dev->late_lock, NULL);
  pthread_mutex_init(&dev->run_lock, NULL);
  zcclResult_t res = dev->ops->init(dev);
  if (res != zcclSuccess) {
    pthread_mutex_destroy(&dev->run_lock);
    zd_alloc_fini(&dev->bufs);
    zd_alloc_fini(&dev->stage);
    pthread_mutex_destroy(&dev->late_lock);
    free(dev);
    return res;
  }
  /* A kind with its own allocator gets its pools now, before any call can
   * hold a stream (zd_ops_t.pool_alloc). */
  if (dev->ops->pool_alloc) {
    res = zd_bufpool_make(dev, &dev->bufs, 0);
    if (res == zcclSuccess && zd_stage_needed(dev)) res = zd_bufpool_make(dev, &dev->stage, 1);
    if (res != zcclSuccess) {
      zd_dev_destroy(dev);
      return res;
    }
  }
  ZU_INFO(ZU_LOG_DEVICE, "%s device created (split above %zu bytes, threads %d, %d stream(s)%s)", dev->ops->name,
          dev->split_bytes, dev->nthreads, dev->nlanes, dev->stream_blocking ? ", stream-ordered calls block" : "");
  *out = dev;
  return zcclSuccess;
}

void zd_dev_destroy(zd_dev_t* dev) {
  if (dev == NULL) return;
  dev->ops->fini(dev);
  zd_stage_drop_late(dev); /* nothing runs any more */
  zd_pool_destroy(dev->pool);
  zd_scratch_free(&dev->hop_aside);
  zd_bufpools_free(dev);
  pthread_mutex_destroy(&dev->run_lock);
  pthread_mutex_destroy(&dev->late_lock);
  free(dev);
}

zd_kind_t zd_dev_kind(const zd_dev_t* dev) { return dev->kind; }

void zd_set_node_ranks(zd_dev_t* dev, int n) {
  pthread_mutex_lock(&dev->run_lock); /* zd_pool_get reads it under the lock */
  dev->node_ranks = n;
  pthread_mutex_unlock(&dev->run_lock);
}

/* ---- queued operations: checked here, run by the kind ------------------ */

/* [x, x+xn) and [y, y+yn) share a byte (empty ranges never do). */
static int zd_overlap(const void* x, size_t xn, const void* y, size_t yn) {
  uintptr_t a = (uintptr_t)x, b = (uintptr_t)y;
  return xn && yn && a < b + yn && b < a + xn;
}

zcclResult_t zd_copy(zd_dev_t* dev, void* dst, const void* src, size_t bytes) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_copy: NULL device");
  if (bytes == 0 || dst == src) return zcclSuccess;
  ZU_RETURN_ERR_IF(dst == NULL || src == NULL, zcclInvalidArgument, "zd_copy: NULL buffer for %zu bytes", bytes);
  ZU_RETURN_ERR_IF(zd_overlap(dst, bytes, src, bytes), zcclInvalidArgument,
                   "zd_copy: dst %p and src %p overlap (%zu bytes)", dst, src, bytes);
  zd_op_t op = {.kind = ZD_OP_COPY, .dst = dst, .a = src, .count = bytes};
  return dev->ops->submit(dev, &op);
}

zcclResult_t zd_copy_sized(zd_dev_t* dev, void* dst, const void* src, const size_t* size, size_t cap) {
  ZU_RETURN_ERR_IF(dev == NULL || size == NULL, zcclInvalidArgument, "zd_copy_sized: NULL argument");
  ZU_RETURN_ERR_IF(dst == NULL || src == NULL, zcclInvalidArgument, "zd_copy_sized: NULL buffer");
  ZU_RETURN_ERR_IF(zd_overlap(dst, cap, src, cap), zcclInvalidArgument,
                   "zd_copy_sized: dst %p and src %p overlap (room %zu bytes)", dst, src, cap);
  zd_op_t op = {.kind = ZD_OP_COPY_SIZED, .dst = dst, .a = src, .a_size = size, .cap = cap};
  return dev->ops->submit(dev, &op);
}

zcclResult_t zd_reduce(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                       zcclRedOp_t op) {
  return zd_reduce_fill(dev, dst, a, b, count, dtype, op, 0, 0.0);
}

/* A fill value is only meaningful for the two dtypes the codec carries. */
static zcclResult_t zd_fill_check(const char* fn, zcclDataType_t dtype, int has_fill, double fill) {
  if (!has_fill) return zcclSuccess;
  ZU_RETURN_ERR_IF(dtype != zcclFloat32 && dtype != zcclFloat64, zcclInvalidArgument,
                   "%s: a fill value needs float32 or float64, not datatype %d", fn, (int)dtype);
  ZU_RETURN_ERR_IF(!isfinite(fill), zcclInvalidArgument, "%s: the fill value must be finite", fn);
  return zcclSuccess;
}

zcclResult_t zd_reduce_fill(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count,
                            zcclDataType_t dtype, zcclRedOp_t op, int has_fill, double fill) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_reduce: NULL device");
  ZU_RETURN_ERR_IF((int)dtype < 0 || dtype >= zcclNumTypes, zcclInvalidArgument, "zd_reduce: datatype %d invalid",
                   (int)dtype);
  ZU_RETURN_ERR_IF(op == zcclAvg, zcclInvalidArgument, "zd_reduce: avg is sum, then zd_divide");
  ZU_RETURN_ERR_IF((int)op < 0 || op > zcclMin, zcclInvalidArgument, "zd_reduce: op %d invalid", (int)op);
  if (count == 0) return zcclSuccess;
  size_t esize = zu_dtype_size(dtype);
  ZU_RETURN_ERR_IF(count > SIZE_MAX / esize, zcclInvalidArgument, "zd_reduce: count %zu overflows", count);
  size_t bytes = count * esize;
  ZU_RETURN_ERR_IF(dst == NULL || a == NULL || b == NULL, zcclInvalidArgument, "zd_reduce: NULL buffer");
  ZU_RETURN_ERR_IF((dst != a && zd_overlap(dst, bytes, a, bytes)) || (dst != b && zd_overlap(dst, bytes, b, bytes)),
                   zcclInvalidArgument, "zd_reduce: dst %p overlaps a %p or b %p other than exactly (%zu bytes)",
                   dst, a, b, bytes);
  ZU_CHECK(zd_fill_check("zd_reduce", dtype, has_fill, fill));
  zd_op_t o = {.kind = ZD_OP_REDUCE, .dst = dst, .a = a, .b = b, .count = count, .dtype = dtype, .op = op};
  o.params.has_fill = has_fill != 0;
  o.params.fill = fill;
  return dev->ops->submit(dev, &o);
}

zcclResult_t zd_divide(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n) {
  return zd_divide_fill(dev, buf, count, dtype, n, 0, 0.0);
}

zcclResult_t zd_divide_fill(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n, int has_fill,
                            double fill) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_divide: NULL device");
  ZU_RETURN_ERR_IF((int)dtype < 0 || dtype >= zcclNumTypes, zcclInvalidArgument, "zd_divide: datatype %d invalid",
                   (int)dtype);
  ZU_RETURN_ERR_IF(n < 1, zcclInvalidArgument, "zd_divide: divisor %d, expected >= 1", n);
  if (count == 0) return zcclSuccess;
  ZU_RETURN_ERR_IF(buf == NULL, zcclInvalidArgument, "zd_divide: NULL buffer");
  ZU_RETURN_ERR_IF(count > SIZE_MAX / zu_dtype_size(dtype), zcclInvalidArgument, "zd_divide: count %zu overflows",
                   count);
  ZU_CHECK(zd_fill_check("zd_divide", dtype, has_fill, fill));
  zd_op_t o = {.kind = ZD_OP_DIVIDE, .dst = buf, .count = count, .dtype = dtype, .n = n};
  o.params.has_fill = has_fill != 0;
  o.params.fill = fill;
  return dev->ops->submit(dev, &o);
}

zcclResult_t zd_scale(zd_dev_t* dev, void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* at,
                      uint64_t bits) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_scale: NULL device");
  ZU_RETURN_ERR_IF((int)dtype < 0 || dtype >= zcclNumTypes, zcclInvalidArgument, "zd_scale: datatype %d invalid",
                   (int)dtype);
  if (count == 0) return zcclSuccess;
  size_t esize = zu_dtype_size(dtype);
  ZU_RETURN_ERR_IF(count > SIZE_MAX / esize, zcclInvalidArgument, "zd_scale: count %zu overflows", count);
  ZU_RETURN_ERR_IF(dst == NULL || src == NULL, zcclInvalidArgument, "zd_scale: NULL buffer");
  ZU_RETURN_ERR_IF(dst != src && zd_overlap(dst, count * esize, src, count * esize), zcclInvalidArgument,
                   "zd_scale: dst %p overlaps src %p other than exactly (%zu bytes)", dst, src, count * esize);
  zd_op_t o = {.kind = ZD_OP_SCALE, .dst = dst, .a = src, .b = at, .count = count, .dtype = dtype, .scalar = bits};
  return dev->ops->submit(dev, &o);
}

zcclResult_t zd_value_range(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                            double fill, double* min, double* max, size_t* valid) {
  ZU_RETURN_ERR_IF(dev == NULL || (count && in == NULL), zcclInvalidArgument, "zd_value_range: NULL argument");
  ZU_RETURN_ERR_IF(dtype != zcclFloat32 && dtype != zcclFloat64, zcclInvalidArgument,
                   "zd_value_range: datatype %d, expected float32 or float64", (int)dtype);
  ZU_RETURN_ERR_IF(min == NULL || max == NULL || valid == NULL, zcclInvalidArgument, "zd_value_range: NULL result");
  if (dev->ops->value_range) return dev->ops->value_range(dev, in, count, dtype, has_fill, fill, min, max, valid);
  return zd_value_range_host(dev, in, count, dtype, has_fill, fill, min, max, valid);
}

zcclResult_t zd_value_range_host(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                                 double fill, double* min, double* max, size_t* valid) {
  ZU_CHECK(zd_sync(dev)); /* host and sim memory: read once what is queued has run */
  zc_value_range(in, count, dtype, has_fill, fill, min, max, valid);
  return zcclSuccess;
}

/* ---- codecs: the table's operations, queued --------------------------- */

/* The cuda device's kernels are the stream format's. */
int zd_codec_runs(const zd_dev_t* dev, const zc_codec_info_t* codec) {
  return dev != NULL && codec != NULL && codec->ops != NULL && (dev->kind != ZD_CUDA || (codec->caps & ZC_CAP_STREAM));
}

/* What every codec operation needs: a codec this device runs (said
 * plainly, never queued, for one it does not). */
static zcclResult_t zd_codec_check(const zd_dev_t* dev, const zc_codec_info_t* codec, const char* what) {
  ZU_RETURN_ERR_IF(dev == NULL || codec == NULL || codec->ops == NULL, zcclInvalidArgument,
                   "%s: NULL device or no codec", what);
  ZU_RETURN_ERR_IF(!zd_codec_runs(dev, codec), zcclInvalidUsage,
                   "%s: the %s device has no kernels for codec=%s; use codec=hz or szp there", what,
                   zd_kind_name(dev->kind), codec->name);
  return zcclSuccess;
}

static int zd_float_type(zcclDataType_t dtype) { return dtype == zcclFloat32 || dtype == zcclFloat64; }

static int zd_stream_op(zcclRedOp_t op) { return op == zcclSum || op == zcclMax || op == zcclMin; }

zcclResult_t zd_encode(zd_dev_t* dev, const zc_codec_info_t* codec, const zc_params_t* p, const void* in,
                       size_t count, void* out, size_t cap, size_t* out_size) {
  ZU_CHECK(zd_codec_check(dev, codec, "zd_encode"));
  ZU_RETURN_ERR_IF(p == NULL || out_size == NULL || out == NULL || (count && in == NULL), zcclInvalidArgument,
                   "zd_encode: NULL argument");
  ZU_RETURN_ERR_IF(!zd_float_type(p->dtype), zcclInvalidArgument,
                   "zd_encode: datatype %d, expected float32 or float64", (int)p->dtype);
  ZU_RETURN_ERR_IF((codec->caps & ZC_CAP_FINITE) && (!(p->eb > 0) || p->eb == HUGE_VAL), zcclInvalidArgument,
                   "zd_encode: codec=%s, tolerance %g", codec->name, p->eb);
  ZU_RETURN_ERR_IF(zd_overlap(in, count * zu_dtype_size(p->dtype), out, cap), zcclInvalidArgument,
                   "zd_encode: input and output overlap");
  zd_op_t o = {.kind = ZD_OP_ENCODE, .dst = out, .a = in, .count = count, .codec = codec, .params = *p, .cap = cap,
               .out_size = out_size};
  return dev->ops->submit(dev, &o);
}

zcclResult_t zd_decode(zd_dev_t* dev, const zc_codec_info_t* codec, const void* stream, const size_t* size, void* out,
                       size_t count) {
  ZU_CHECK(zd_codec_check(dev, codec, "zd_decode"));
  ZU_RETURN_ERR_IF(stream == NULL || size == NULL || (count && out == NULL), zcclInvalidArgument,
                   "zd_decode: NULL argument");
  zd_op_t o = {.kind = ZD_OP_DECODE, .dst = out, .a = stream, .a_size = size, .count = count, .codec = codec};
  return dev->ops->submit(dev, &o);
}

zcclResult_t zd_reduce_encoded(zd_dev_t* dev, const zc_codec_info_t* codec, zcclRedOp_t op, const void* a,
                               const size_t* a_size, const void* b, const size_t* b_size, void* out, size_t cap,
                               size_t* out_size) {
  ZU_CHECK(zd_codec_check(dev, codec, "zd_reduce_encoded"));
  ZU_RETURN_ERR_IF(codec->ops->reduce == NULL, zcclInvalidUsage,
                   "zd_reduce_encoded: codec=%s reduces by decoding; it has no reduction of streams", codec->name);
  ZU_RETURN_ERR_IF(a == NULL || b == NULL || a_size == NULL || b_size == NULL || out == NULL || out_size == NULL,
                   zcclInvalidArgument, "zd_reduce_encoded: NULL argument");
  ZU_RETURN_ERR_IF(!zd_stream_op(op), zcclInvalidArgument, "zd_reduce_encoded: op %d, expected sum, max or min",
                   (int)op);
  ZU_RETURN_ERR_IF(!codec->ops->reduce_in_place && (out == a || out == b), zcclInvalidArgument,
                   "zd_reduce_encoded: codec=%s writes as it reads: out may not be an input", codec->name);
  zd_op_t o = {.kind = ZD_OP_REDUCE_ENCODED, .dst = out, .a = a, .b = b, .a_size = a_size, .b_size = b_size,
               .op = op, .codec = codec, .cap = cap, .out_size = out_size};
  return dev->ops->submit(dev, &o);
}

/* Host only: sim stands in for the GPU, which has no fused kernel, so the
 * sim runs test the orchestration the cuda device takes (encode, reduce). */
int zd_has_hop_values(const zd_dev_t* dev) { return dev != NULL && dev->kind == ZD_HOST; }

zcclResult_t zd_hop_values(zd_dev_t* dev, zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count,
                           const void* b, const size_t* b_size, void* out, size_t cap, size_t* out_size) {
  ZU_RETURN_ERR_IF(dev == NULL || p == NULL || b == NULL || b_size == NULL || out == NULL || out_size == NULL ||
                       (count && in == NULL),
                   zcclInvalidArgument, "zd_hop_values: NULL argument");
  ZU_RETURN_ERR_IF(!zd_has_hop_values(dev), zcclInvalidUsage,
                   "zd_hop_values: the %s device has no fused kernel; use zd_encode and zd_reduce_encoded",
                   zd_kind_name(dev->kind));
  ZU_RETURN_ERR_IF(!zd_stream_op(op), zcclInvalidArgument, "zd_hop_values: op %d, expected sum, max or min", (int)op);
  ZU_RETURN_ERR_IF(!zd_float_type(p->dtype), zcclInvalidArgument,
                   "zd_hop_values: datatype %d, expected float32 or float64", (int)p->dtype);
  ZU_RETURN_ERR_IF(zd_overlap(in, count * zu_dtype_size(p->dtype), out, cap), zcclInvalidArgument,
                   "zd_hop_values: values and output overlap");
  zd_op_t o = {.kind = ZD_OP_HOP_VALUES, .dst = out, .a = in, .b = b, .b_size = b_size, .count = count, .op = op,
               .params = *p, .cap = cap, .out_size = out_size};
  return dev->ops->submit(dev, &o);
}

void zd_set_progress(zd_dev_t* dev, void (*fn)(void*), void* arg) {
  (void)dev; /* per thread: the codec runs on the caller's thread or a pool thread */
  zd_host_set_progress(fn, arg);
}

zcclResult_t zd_zero_fraction(zd_dev_t* dev, const void* in, size_t count, zcclDataType_t dtype, size_t samples,
                              double* frac) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_zero_fraction: NULL device");
  ZU_RETURN_ERR_IF(dev->kind == ZD_CUDA, zcclInvalidUsage, "zd_zero_fraction: host and sim memory only");
  ZU_RETURN_ERR_IF(frac == NULL || (count && in == NULL), zcclInvalidArgument, "zd_zero_fraction: NULL argument");
  ZU_RETURN_ERR_IF(!zd_float_type(dtype), zcclInvalidArgument,
                   "zd_zero_fraction: datatype %d, expected float32 or float64", (int)dtype);
  ZU_CHECK(zd_sync(dev)); /* host and sim memory: read once what is queued has run */
  *frac = count ? zc_rle_zero_fraction(in, count, dtype, samples) : 0.0;
  return zcclSuccess;
}

zd_event_t zd_event_record(zd_dev_t* dev) { return dev ? dev->ops->record(dev) : 0; }

/* An event of a stream the device does not have: done says passed (it can
 * never pass), wait and zd_lane_wait refuse it. */
int zd_event_done(zd_dev_t* dev, zd_event_t ev) {
  return dev == NULL || zd_ev_lane(ev) >= dev->nlanes || dev->ops->done(dev, ev);
}

zcclResult_t zd_event_wait(zd_dev_t* dev, zd_event_t ev) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_event_wait: NULL device");
  ZU_RETURN_ERR_IF(zd_ev_lane(ev) >= dev->nlanes, zcclInvalidArgument,
                   "zd_event_wait: event of stream %d; the device has %d", zd_ev_lane(ev), dev->nlanes);
  zcclResult_t res = dev->ops->wait(dev, ev);
  return zd_late_err_take(dev, zd_ev_lane(ev), res);
}

zcclResult_t zd_sync(zd_dev_t* dev) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_sync: NULL device");
  /* Every lane, each error reported once; the first returned. */
  zcclResult_t res = zcclSuccess;
  int cur = dev->lane;
  for (int l = 0; l < dev->nlanes; l++) {
    dev->lane = l;
    zcclResult_t r = zd_late_err_take(dev, l, dev->ops->wait(dev, dev->ops->record(dev)));
    if (res == zcclSuccess) res = r;
  }
  dev->lane = cur;
  zd_stage_reclaim(dev, 0); /* every late staging buffer's copy has passed */
  return res;
}

int zd_lanes(const zd_dev_t* dev) { return dev ? dev->nlanes : 1; }

int zd_set_lane(zd_dev_t* dev, int lane) {
  int prev = dev->lane;
  dev->lane = (lane % dev->nlanes + dev->nlanes) % dev->nlanes;
  return prev;
}

zcclResult_t zd_lane_wait(zd_dev_t* dev, zd_event_t ev) {
  ZU_RETURN_ERR_IF(dev == NULL, zcclInvalidArgument, "zd_lane_wait: NULL device");
  ZU_RETURN_ERR_IF(zd_ev_lane(ev) >= dev->nlanes, zcclInvalidArgument,
                   "zd_lane_wait: event of stream %d; the device has %d", zd_ev_lane(ev), dev->nlanes);
  if (zd_ev_lane(ev) == dev->lane || dev->ops->lane_wait == NULL) return zcclSuccess; /* in order already */
  return dev->ops->lane_wait(dev, ev);
}
