/* AVX2 kernels (bit planes by scalar 8x8 transposes): see zc_szp_x86.h. */
#define ZC_X86_GFNI 0
#define ZC_X86_AVX512 0
#define ZC_X86_NAME(fn) fn##_avx2
#include "zc_szp_x86.h"
