/* Per-block codec functions are written once and compiled both for the host
 * and, inside CUDA kernels, for the device, so CPU and GPU produce
 * bit-identical streams. Mark such functions ZC_HD; keep them plain C: no
 * libc calls, fixed-size loops, no recursion. */
#ifndef ZC_HOSTDEV_H_
#define ZC_HOSTDEV_H_

#if defined(__CUDACC__)
#define ZC_HD __host__ __device__
#define ZC_HD_INLINE __host__ __device__ __forceinline__
#else
#define ZC_HD
#define ZC_HD_INLINE static inline
#endif

#endif /* ZC_HOSTDEV_H_ */
