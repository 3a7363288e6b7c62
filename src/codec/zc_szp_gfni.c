/* AVX2 + GFNI kernels (planes of narrow blocks by bit-matrix transpose):
 * see zc_szp_x86.h. */
#define ZC_X86_GFNI 1
#define ZC_X86_AVX512 0
#define ZC_X86_NAME(fn) fn##_gfni
#include "zc_szp_x86.h"
