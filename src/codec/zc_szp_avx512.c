/* AVX-512 (F/BW/VL/DQ/VBMI/VBMI2) + GFNI kernels: 16-lane quantization and
 * reconstruction, whole blocks in 32 x 16-bit lanes, GFNI planes; see
 * zc_szp_x86.h. */
#define ZC_X86_GFNI 1
#define ZC_X86_AVX512 1
#define ZC_X86_NAME(fn) fn##_avx512
#include "zc_szp_x86.h"
