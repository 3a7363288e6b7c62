/* The uncompressed kernels of the cuda device: element-wise reduce and
 * divide for every dtype, the value range (for REL bounds) and the copy of
 * a stream whose size only the GPU knows yet. The element
 * arithmetic is zd_narrow.h, the very functions the host loops use
 * (zd_reduce.c), so both give the same bits: one IEEE operation in the
 * dtype (fp16/bf16/fp8 in float32), rounded to nearest even. Built with
 * -fmad=false so no multiply and add are fused into one rounding.
 *
 * Grid-stride loops over 16-byte vectors when dst, a and b are 16-byte
 * aligned (pool pieces are), the rest one element per thread. dst may be a
 * or b exactly: each element is read and written by the same thread. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "zd_cuda_kernels.h"
#include "zd_cuda_util.h"
#include "zd_narrow.h"

namespace {

const int kThreads = 256;
/* Grid-stride loops cover the rest; more blocks than this only queue. */
const size_t kMaxBlocks = 4096;

unsigned zd_blocks(size_t items) {
  size_t b = (items + kThreads - 1) / kThreads;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return b ? (unsigned)b : 1u;
}

/* ---- formats: storage type, the type ops compute in, and conversions ---- */

template <typename S>
struct fmt_id {
  typedef S st;
  typedef S ct;
  __device__ static __forceinline__ S load(S x) { return x; }
  __device__ static __forceinline__ S store(S x) { return x; }
};
struct fmt_f16 {
  typedef uint16_t st;
  typedef float ct;
  __device__ static __forceinline__ float load(uint16_t h) { return zd_f16_load(h); }
  __device__ static __forceinline__ uint16_t store(float f) { return zd_f16_store(f); }
};
struct fmt_bf16 {
  typedef uint16_t st;
  typedef float ct;
  __device__ static __forceinline__ float load(uint16_t h) { return zd_bf16_load(h); }
  __device__ static __forceinline__ uint16_t store(float f) { return zd_bf16_store(f); }
};
struct fmt_e4m3 {
  typedef uint8_t st;
  typedef float ct;
  __device__ static __forceinline__ float load(uint8_t h) { return zd_e4m3_load(h); }
  __device__ static __forceinline__ uint8_t store(float f) { return zd_e4m3_store(f); }
};
struct fmt_e5m2 {
  typedef uint8_t st;
  typedef float ct;
  __device__ static __forceinline__ float load(uint8_t h) { return zd_e5m2_load(h); }
  __device__ static __forceinline__ uint8_t store(float f) { return zd_e5m2_store(f); }
};

/* ---- ops (the macros of zd_narrow.h) ------------------------------------ */

struct op_add {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return (T)ZD_ADD(x, y); }
};
struct op_mul {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return (T)ZD_MUL(x, y); }
};
struct op_maxi {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return ZD_MAXI(x, y); }
};
struct op_mini {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return ZD_MINI(x, y); }
};
struct op_maxf {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return ZD_MAXF(x, y); }
};
struct op_minf {
  template <typename T>
  __device__ __forceinline__ T operator()(T x, T y) const { return ZD_MINF(x, y); }
};

/* ---- element functions --------------------------------------------------- */

/* dst = store(op(load(a), load(b))) */
template <class F, class OP>
struct el_reduce {
  typedef typename F::st st;
  __device__ __forceinline__ st operator()(st x, st y) const { return (st)F::store(OP()(F::load(x), F::load(y))); }
};
/* float32/float64 with a fill value that absorbs */
template <typename S, class OP>
struct el_reduce_fill {
  typedef S st;
  S f;
  __device__ __forceinline__ S operator()(S x, S y) const { return ZD_FILL_OP(OP(), x, y, f); }
};
/* Integers: the divisor in a type that holds every n >= 1 (zd_reduce.c). */
template <typename T, typename W>
struct el_div_int {
  typedef T st;
  W q;
  __device__ __forceinline__ T operator()(T x) const { return (T)(x / q); }
};
template <class F>
struct el_div_float {
  typedef typename F::st st;
  typename F::ct q;
  __device__ __forceinline__ st operator()(st x) const { return (st)F::store(F::load(x) / q); }
};
/* x * s, s read from p when set (a scalar in device memory, read as the
 * kernel runs), else v; integers as their unsigned type (wraps). */
template <class F>
struct el_scale {
  typedef typename F::st st;
  const st* p;
  st v;
  __device__ __forceinline__ st operator()(st x) const {
    st sc = p ? *p : v;
    return (st)F::store(op_mul()(F::load(x), F::load(sc)));
  }
};
template <typename S>
struct el_div_fill {
  typedef S st;
  S q, f;
  __device__ __forceinline__ S operator()(S x) const { return x == f ? f : x / q; }
};

/* ---- the two loops ------------------------------------------------------- */

template <typename S>
union vec16 {
  uint4 v;
  S e[16 / sizeof(S)];
};

/* d[i] = el(a[i], b[i]): nv 16-byte vectors first (0 when unaligned), then
 * the elements after them. */
template <class EL>
__global__ void __launch_bounds__(kThreads)
    zd_k_binary(typename EL::st* d, const typename EL::st* a, const typename EL::st* b, size_t n, size_t nv, EL el) {
  typedef typename EL::st S;
  const int V = 16 / sizeof(S);
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = t; i < nv; i += stride) {
    vec16<S> x, y, r;
    x.v = reinterpret_cast<const uint4*>(a)[i];
    y.v = reinterpret_cast<const uint4*>(b)[i];
#pragma unroll
    for (int k = 0; k < V; k++) r.e[k] = el(x.e[k], y.e[k]);
    reinterpret_cast<uint4*>(d)[i] = r.v;
  }
  for (size_t i = nv * V + t; i < n; i += stride) d[i] = el(a[i], b[i]);
}

/* d[i] = el(a[i]) (a may be d), vectors as above. */
template <class EL>
__global__ void __launch_bounds__(kThreads)
    zd_k_unary(typename EL::st* d, const typename EL::st* a, size_t n, size_t nv, EL el) {
  typedef typename EL::st S;
  const int V = 16 / sizeof(S);
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = t; i < nv; i += stride) {
    vec16<S> x;
    x.v = reinterpret_cast<const uint4*>(a)[i];
#pragma unroll
    for (int k = 0; k < V; k++) x.e[k] = el(x.e[k]);
    reinterpret_cast<uint4*>(d)[i] = x.v;
  }
  for (size_t i = nv * V + t; i < n; i += stride) d[i] = el(a[i]);
}

/* Vectors when every pointer is 16-byte aligned; threads for the longer loop. */
inline size_t zd_nvec(size_t n, size_t esize, uintptr_t ptrs, size_t* items) {
  size_t nv = (ptrs & 15) == 0 ? n / (16 / esize) : 0;
  size_t tail = n - nv * (16 / esize);
  *items = nv > tail ? nv : tail;
  return nv;
}

/* Set while zd_cuda_reduce_load walks the dispatch: the helpers below load
 * their kernel instead of launching it. Thread-local, so other threads'
 * launches go on meanwhile. */
thread_local int zd_loading;

template <class EL>
zcclResult_t zd_binary(void* d, const void* a, const void* b, size_t n, EL el, cudaStream_t s) {
  typedef typename EL::st S;
  if (zd_loading) {
    ZD_CUDA_LOAD(zd_k_binary<EL>);
    return zcclSuccess;
  }
  size_t items, nv = zd_nvec(n, sizeof(S), (uintptr_t)d | (uintptr_t)a | (uintptr_t)b, &items);
  ZD_KERNEL(zd_k_binary<EL>, zd_blocks(items), kThreads, s, (S*)d, (const S*)a, (const S*)b, n, nv, el);
  ZD_CUDA_LAUNCHED("zd_cuda_reduce");
  return zcclSuccess;
}

/* d[i] = el(a[i]); zd_unary: in place. */
template <class EL>
zcclResult_t zd_map(void* d, const void* a, size_t n, EL el, cudaStream_t s) {
  typedef typename EL::st S;
  if (zd_loading) {
    ZD_CUDA_LOAD(zd_k_unary<EL>);
    return zcclSuccess;
  }
  size_t items, nv = zd_nvec(n, sizeof(S), (uintptr_t)d | (uintptr_t)a, &items);
  ZD_KERNEL(zd_k_unary<EL>, zd_blocks(items), kThreads, s, (S*)d, (const S*)a, n, nv, el);
  ZD_CUDA_LAUNCHED("zd_cuda_divide / zd_cuda_scale");
  return zcclSuccess;
}

template <class EL>
zcclResult_t zd_unary(void* d, size_t n, EL el, cudaStream_t s) {
  return zd_map(d, d, n, el, s);
}

/* Signed integers add and multiply as their unsigned type: wraps, no UB. */
template <typename S, typename U>
zcclResult_t zd_reduce_int(void* d, const void* a, const void* b, size_t n, zcclRedOp_t op, cudaStream_t s) {
  switch (op) {
    case zcclSum: return zd_binary(d, a, b, n, el_reduce<fmt_id<U>, op_add>(), s);
    case zcclProd: return zd_binary(d, a, b, n, el_reduce<fmt_id<U>, op_mul>(), s);
    case zcclMax: return zd_binary(d, a, b, n, el_reduce<fmt_id<S>, op_maxi>(), s);
    case zcclMin: return zd_binary(d, a, b, n, el_reduce<fmt_id<S>, op_mini>(), s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_reduce: op %d invalid", (int)op);
  }
}

template <class F>
zcclResult_t zd_reduce_float(void* d, const void* a, const void* b, size_t n, zcclRedOp_t op, cudaStream_t s) {
  switch (op) {
    case zcclSum: return zd_binary(d, a, b, n, el_reduce<F, op_add>(), s);
    case zcclProd: return zd_binary(d, a, b, n, el_reduce<F, op_mul>(), s);
    case zcclMax: return zd_binary(d, a, b, n, el_reduce<F, op_maxf>(), s);
    case zcclMin: return zd_binary(d, a, b, n, el_reduce<F, op_minf>(), s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_reduce: op %d invalid", (int)op);
  }
}

template <typename S>
zcclResult_t zd_reduce_fill(void* d, const void* a, const void* b, size_t n, zcclRedOp_t op, double fill,
                            cudaStream_t s) {
  const S f = (S)fill; /* compared in the dtype, as on the host */
  switch (op) {
    case zcclSum: return zd_binary(d, a, b, n, el_reduce_fill<S, op_add>{f}, s);
    case zcclProd: return zd_binary(d, a, b, n, el_reduce_fill<S, op_mul>{f}, s);
    case zcclMax: return zd_binary(d, a, b, n, el_reduce_fill<S, op_maxf>{f}, s);
    case zcclMin: return zd_binary(d, a, b, n, el_reduce_fill<S, op_minf>{f}, s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_reduce: op %d invalid", (int)op);
  }
}

/* ---- value range ----------------------------------------------------------
 * Doubles ordered as unsigned integers (so 64-bit atomicMin/atomicMax can
 * combine blocks); out[] holds keys while the kernel runs, doubles after. */

__device__ __forceinline__ unsigned long long zd_key(double v) {
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}
__device__ __forceinline__ double zd_unkey(unsigned long long k) {
  return __longlong_as_double((long long)((k >> 63) ? k & 0x7fffffffffffffffull : ~k));
}

__global__ void zd_k_range_init(double* out, unsigned long long* valid) {
  unsigned long long* keys = reinterpret_cast<unsigned long long*>(out);
  keys[0] = zd_key(INFINITY);
  keys[1] = zd_key(-INFINITY);
  *valid = 0;
}

__global__ void zd_k_range_done(double* out) {
  unsigned long long* keys = reinterpret_cast<unsigned long long*>(out);
  out[0] = zd_unkey(keys[0]);
  out[1] = zd_unkey(keys[1]);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    zd_k_range(const T* in, size_t n, int has_fill, T fill, double* out, unsigned long long* valid) {
  double lo = INFINITY, hi = -INFINITY;
  unsigned long long cnt = 0;
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = t; i < n; i += stride) {
    T x = in[i];
    if (!isfinite(x) || (has_fill && x == fill)) continue;
    /* -0 counts as +0: which zero came first has no meaning in parallel
     * (and max - min is the same either way). */
    double v = (double)x + 0.0;
    lo = fmin(lo, v);
    hi = fmax(hi, v);
    cnt++;
  }
  for (int off = 16; off > 0; off >>= 1) {
    lo = fmin(lo, __shfl_down_sync(0xffffffffu, lo, off));
    hi = fmax(hi, __shfl_down_sync(0xffffffffu, hi, off));
    cnt += __shfl_down_sync(0xffffffffu, cnt, off);
  }
  __shared__ double slo[kThreads / 32], shi[kThreads / 32];
  __shared__ unsigned long long scnt[kThreads / 32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    slo[warp] = lo;
    shi[warp] = hi;
    scnt[warp] = cnt;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; w++) {
      lo = fmin(lo, slo[w]);
      hi = fmax(hi, shi[w]);
      cnt += scnt[w];
    }
    if (cnt) {
      unsigned long long* keys = reinterpret_cast<unsigned long long*>(out);
      atomicMin(&keys[0], zd_key(lo));
      atomicMax(&keys[1], zd_key(hi));
      atomicAdd(valid, cnt);
    }
  }
}

/* A stream's bytes, *size of them (read once a CTA, when it runs), from src
 * to dst: the staging copy right behind the kernel that made the stream. */
__global__ void __launch_bounds__(kThreads) zd_k_copy_sized(unsigned char* dst, const unsigned char* src,
                                                            const uint64_t* size, size_t cap, int* status) {
  __shared__ uint64_t sn;
  if (threadIdx.x == 0) sn = *(const volatile uint64_t*)size;
  __syncthreads();
  const size_t n = (size_t)sn;
  if (n > cap) {
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicCAS(status, (int)zcclSuccess, (int)zcclInvalidUsage);
    return;
  }
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x, head = 0;
  if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    head = n / 16 * 16;
    for (size_t i = t; i < n / 16; i += stride)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
  }
  for (size_t i = head + t; i < n; i += stride) dst[i] = src[i];
}

}  // namespace

extern "C" zcclResult_t zd_cuda_copy_sized(void* dst, const void* src, const uint64_t* size, size_t cap, int* status,
                                           zd_cuda_stream_t stream) {
  if (zd_loading) {
    ZD_CUDA_LOAD(zd_k_copy_sized);
    return zcclSuccess;
  }
  cudaStream_t s = stream;
  ZD_KERNEL(zd_k_copy_sized, zd_blocks((cap + 15) / 16), kThreads, s, (unsigned char*)dst,
            (const unsigned char*)src, size, cap, status);
  ZD_CUDA_LAUNCHED("zd_cuda_copy_sized");
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_reduce(void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                                       zcclRedOp_t op, int has_fill, double fill, zd_cuda_stream_t stream) {
  if (count == 0) return zcclSuccess;
  cudaStream_t s = stream;
  if (has_fill) {
    if (dtype == zcclFloat32) return zd_reduce_fill<float>(dst, a, b, count, op, fill, s);
    if (dtype == zcclFloat64) return zd_reduce_fill<double>(dst, a, b, count, op, fill, s);
    return ZU_ERROR(zcclInvalidArgument, "zd_cuda_reduce: a fill value needs float32 or float64, not datatype %d",
                    (int)dtype);
  }
  switch (dtype) {
    case zcclInt8: return zd_reduce_int<int8_t, uint8_t>(dst, a, b, count, op, s);
    case zcclUint8: return zd_reduce_int<uint8_t, uint8_t>(dst, a, b, count, op, s);
    case zcclInt32: return zd_reduce_int<int32_t, uint32_t>(dst, a, b, count, op, s);
    case zcclUint32: return zd_reduce_int<uint32_t, uint32_t>(dst, a, b, count, op, s);
    case zcclInt64: return zd_reduce_int<int64_t, uint64_t>(dst, a, b, count, op, s);
    case zcclUint64: return zd_reduce_int<uint64_t, uint64_t>(dst, a, b, count, op, s);
    case zcclFloat16: return zd_reduce_float<fmt_f16>(dst, a, b, count, op, s);
    case zcclFloat32: return zd_reduce_float<fmt_id<float> >(dst, a, b, count, op, s);
    case zcclFloat64: return zd_reduce_float<fmt_id<double> >(dst, a, b, count, op, s);
    case zcclBfloat16: return zd_reduce_float<fmt_bf16>(dst, a, b, count, op, s);
    case zcclFloat8e4m3: return zd_reduce_float<fmt_e4m3>(dst, a, b, count, op, s);
    case zcclFloat8e5m2: return zd_reduce_float<fmt_e5m2>(dst, a, b, count, op, s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_reduce: datatype %d invalid", (int)dtype);
  }
}

extern "C" zcclResult_t zd_cuda_divide(void* buf, size_t count, zcclDataType_t dtype, int n, int has_fill,
                                       double fill, zd_cuda_stream_t stream) {
  ZU_RETURN_ERR_IF(n < 1, zcclInvalidArgument, "zd_cuda_divide: divisor %d, expected >= 1", n);
  if (count == 0) return zcclSuccess;
  cudaStream_t s = stream;
  if (has_fill) {
    if (dtype == zcclFloat32) return zd_unary(buf, count, el_div_fill<float>{(float)n, (float)fill}, s);
    if (dtype == zcclFloat64) return zd_unary(buf, count, el_div_fill<double>{(double)n, fill}, s);
    return ZU_ERROR(zcclInvalidArgument, "zd_cuda_divide: a fill value needs float32 or float64, not datatype %d",
                    (int)dtype);
  }
  switch (dtype) {
    case zcclInt8: return zd_unary(buf, count, el_div_int<int8_t, int32_t>{n}, s);
    case zcclUint8: return zd_unary(buf, count, el_div_int<uint8_t, uint32_t>{(uint32_t)n}, s);
    case zcclInt32: return zd_unary(buf, count, el_div_int<int32_t, int32_t>{n}, s);
    case zcclUint32: return zd_unary(buf, count, el_div_int<uint32_t, uint32_t>{(uint32_t)n}, s);
    case zcclInt64: return zd_unary(buf, count, el_div_int<int64_t, int64_t>{n}, s);
    case zcclUint64: return zd_unary(buf, count, el_div_int<uint64_t, uint64_t>{(uint64_t)n}, s);
    case zcclFloat16: return zd_unary(buf, count, el_div_float<fmt_f16>{(float)n}, s);
    case zcclFloat32: return zd_unary(buf, count, el_div_float<fmt_id<float> >{(float)n}, s);
    case zcclFloat64: return zd_unary(buf, count, el_div_float<fmt_id<double> >{(double)n}, s);
    case zcclBfloat16: return zd_unary(buf, count, el_div_float<fmt_bf16>{(float)n}, s);
    case zcclFloat8e4m3: return zd_unary(buf, count, el_div_float<fmt_e4m3>{(float)n}, s);
    case zcclFloat8e5m2: return zd_unary(buf, count, el_div_float<fmt_e5m2>{(float)n}, s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_divide: datatype %d invalid", (int)dtype);
  }
}

template <class F>
zcclResult_t zd_scale_as(void* dst, const void* src, size_t count, const void* at, uint64_t bits, cudaStream_t s) {
  typedef typename F::st S;
  el_scale<F> el;
  el.p = (const S*)at;
  memcpy(&el.v, &bits, sizeof el.v);
  return zd_map(dst, src, count, el, s);
}

extern "C" zcclResult_t zd_cuda_scale(void* dst, const void* src, size_t count, zcclDataType_t dtype, const void* at,
                                      uint64_t bits, zd_cuda_stream_t stream) {
  if (count == 0) return zcclSuccess;
  cudaStream_t s = stream;
  switch (dtype) {
    case zcclInt8:
    case zcclUint8: return zd_scale_as<fmt_id<uint8_t> >(dst, src, count, at, bits, s);
    case zcclInt32:
    case zcclUint32: return zd_scale_as<fmt_id<uint32_t> >(dst, src, count, at, bits, s);
    case zcclInt64:
    case zcclUint64: return zd_scale_as<fmt_id<uint64_t> >(dst, src, count, at, bits, s);
    case zcclFloat16: return zd_scale_as<fmt_f16>(dst, src, count, at, bits, s);
    case zcclFloat32: return zd_scale_as<fmt_id<float> >(dst, src, count, at, bits, s);
    case zcclFloat64: return zd_scale_as<fmt_id<double> >(dst, src, count, at, bits, s);
    case zcclBfloat16: return zd_scale_as<fmt_bf16>(dst, src, count, at, bits, s);
    case zcclFloat8e4m3: return zd_scale_as<fmt_e4m3>(dst, src, count, at, bits, s);
    case zcclFloat8e5m2: return zd_scale_as<fmt_e5m2>(dst, src, count, at, bits, s);
    default: return ZU_ERROR(zcclInvalidArgument, "zd_cuda_scale: datatype %d invalid", (int)dtype);
  }
}

extern "C" zcclResult_t zd_cuda_value_range(const void* in, size_t count, zcclDataType_t dtype, int has_fill,
                                            double fill, double* out, unsigned long long* valid,
                                            zd_cuda_stream_t stream) {
  ZU_RETURN_ERR_IF(dtype != zcclFloat32 && dtype != zcclFloat64, zcclInvalidArgument,
                   "zd_cuda_value_range: datatype %d, expected float32 or float64", (int)dtype);
  cudaStream_t s = stream;
  if (zd_loading) {
    ZD_CUDA_LOAD(zd_k_range_init);
    ZD_CUDA_LOAD(zd_k_range<float>);
    ZD_CUDA_LOAD(zd_k_range<double>);
    ZD_CUDA_LOAD(zd_k_range_done);
    return zcclSuccess;
  }
  ZD_KERNEL(zd_k_range_init, 1, 1, s, out, valid);
  ZD_CUDA_LAUNCHED("zd_cuda_value_range");
  if (count > 0) {
    /* A few elements per thread before the block's atomics. */
    unsigned blocks = zd_blocks((count + 7) / 8);
    if (dtype == zcclFloat32)
      ZD_KERNEL(zd_k_range<float>, blocks, kThreads, s, (const float*)in, count, has_fill, (float)fill, out, valid);
    else
      ZD_KERNEL(zd_k_range<double>, blocks, kThreads, s, (const double*)in, count, has_fill, fill, out, valid);
    ZD_CUDA_LAUNCHED("zd_cuda_value_range");
  }
  ZD_KERNEL(zd_k_range_done, 1, 1, s, out);
  ZD_CUDA_LAUNCHED("zd_cuda_value_range");
  return zcclSuccess;
}

/* Every instantiation the launchers above can reach, through their own
 * dispatch (zd_loading makes them load instead of launch). */
extern "C" zcclResult_t zd_cuda_reduce_load(void) {
  static const zcclRedOp_t ops[] = {zcclSum, zcclProd, zcclMax, zcclMin};
  zcclResult_t res = zcclSuccess;
  zd_loading = 1;
  for (int t = 0; t < (int)zcclNumTypes && res == zcclSuccess; t++) {
    zcclDataType_t dt = (zcclDataType_t)t;
    int floats = dt == zcclFloat32 || dt == zcclFloat64;
    for (int o = 0; o < 4 && res == zcclSuccess; o++) {
      res = zd_cuda_reduce(NULL, NULL, NULL, 1, dt, ops[o], 0, 0.0, NULL);
      if (res == zcclSuccess && floats) res = zd_cuda_reduce(NULL, NULL, NULL, 1, dt, ops[o], 1, 0.0, NULL);
    }
    if (res == zcclSuccess) res = zd_cuda_divide(NULL, 1, dt, 1, 0, 0.0, NULL);
    if (res == zcclSuccess && floats) res = zd_cuda_divide(NULL, 1, dt, 1, 1, 0.0, NULL);
    if (res == zcclSuccess) res = zd_cuda_scale(NULL, NULL, 1, dt, NULL, 0, NULL);
  }
  if (res == zcclSuccess) res = zd_cuda_value_range(NULL, 1, zcclFloat32, 0, 0.0, NULL, NULL, NULL);
  if (res == zcclSuccess) res = zd_cuda_copy_sized(NULL, NULL, NULL, 1, NULL, NULL);
  zd_loading = 0;
  return res;
}
