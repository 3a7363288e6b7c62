/* Instruction-set levels of the host codec kernels. */
#ifndef ZC_SIMD_H_
#define ZC_SIMD_H_

#ifdef __cplusplus
extern "C" {
#endif

enum { ZC_SIMD_SCALAR = 0, ZC_SIMD_AVX2 = 1, ZC_SIMD_GFNI = 2, ZC_SIMD_AVX512 = 3, ZC_SIMD_NUM };

/* The best level this CPU runs. */
int zc_simd_best(void);
/* Forces a level (for tests and tools); -1 when the CPU lacks it. */
int zc_simd_set(int level);
int zc_simd_get(void);
const char* zc_simd_name(int level);

#ifdef __cplusplus
}
#endif

#endif /* ZC_SIMD_H_ */
