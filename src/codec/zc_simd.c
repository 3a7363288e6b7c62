/* Picks the codec kernels for this CPU once; zc_simd_set lets tests and
 * tools force a level. Every level writes the same bytes. */
#include "zc_simd.h"

#include <cpuid.h>
#include <stdatomic.h>

#include "zc_szp_internal.h"

#if defined(__SSE2__)
#define ZC_RANGE_F32_SSE2 zc_range_f32_sse2
#else
#define ZC_RANGE_F32_SSE2 NULL
#endif

static const zc_kernels_t zc_kernel_table[ZC_SIMD_NUM] = {
    [ZC_SIMD_SCALAR] = {"scalar", zc_chunk_compress_scalar, zc_chunk_compress_scalar,
                        zc_chunk_decompress_scalar, zc_chunk_hop_scalar, zc_chunk_hop_values_scalar, ZC_RANGE_F32_SSE2, NULL},
    [ZC_SIMD_AVX2] = {"avx2", zc_chunk_compress_avx2, zc_chunk_compress_scalar, zc_chunk_decompress_avx2,
                      zc_chunk_hop_avx2, zc_chunk_hop_values_avx2, zc_range_f32_avx2, zc_range_f64_avx2},
    [ZC_SIMD_GFNI] = {"avx2-gfni", zc_chunk_compress_gfni, zc_chunk_compress_scalar, zc_chunk_decompress_gfni,
                      zc_chunk_hop_gfni, zc_chunk_hop_values_gfni, zc_range_f32_gfni, zc_range_f64_gfni},
    [ZC_SIMD_AVX512] = {"avx512", zc_chunk_compress_avx512, zc_chunk_compress_scalar, zc_chunk_decompress_avx512,
                        zc_chunk_hop_avx512, zc_chunk_hop_values_avx512, zc_range_f32_avx512, zc_range_f64_avx512},
};

static _Atomic int zc_level = -1;

/* LZCNT (CPUID 0x80000001 ECX bit 5): not a name clang 14's
 * __builtin_cpu_supports knows. */
static int zc_has_lzcnt(void) {
  unsigned a, b, c, d;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & bit_LZCNT);
}

int zc_simd_best(void) {
  __builtin_cpu_init();
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
             zc_has_lzcnt() && __builtin_cpu_supports("popcnt");
  int gfni = avx2 && __builtin_cpu_supports("gfni");
  if (gfni && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2"))
    return ZC_SIMD_AVX512;
  if (gfni) return ZC_SIMD_GFNI;
  if (avx2) return ZC_SIMD_AVX2;
  return ZC_SIMD_SCALAR;
}

int zc_simd_set(int level) {
  if (level < 0 || level >= ZC_SIMD_NUM || level > zc_simd_best()) return -1;
  atomic_store(&zc_level, level);
  return 0;
}

int zc_simd_get(void) {
  int l = atomic_load(&zc_level);
  if (l < 0) {
    l = zc_simd_best();
    atomic_store(&zc_level, l);
  }
  return l;
}

const char* zc_simd_name(int level) {
  return level >= 0 && level < ZC_SIMD_NUM ? zc_kernel_table[level].name : "invalid";
}

const zc_kernels_t* zc_kernels(void) { return &zc_kernel_table[zc_simd_get()]; }
