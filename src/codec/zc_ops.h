/* Reduction of two values in the dtype's own arithmetic, as the codecs apply
 * it where values are not on a grid (exceptions, RLE): SUM, PROD, MAX, MIN;
 * MAX/MIN give NaN if either input is NaN. */
#ifndef ZC_OPS_H_
#define ZC_OPS_H_

#include <math.h>

#include "zccl.h"

static inline float zc_op_f32(zcclRedOp_t op, float a, float b) {
  switch (op) {
    case zcclProd: return a * b;
    case zcclMax: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case zcclMin: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    default: return a + b;
  }
}

static inline double zc_op_f64(zcclRedOp_t op, double a, double b) {
  switch (op) {
    case zcclProd: return a * b;
    case zcclMax: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case zcclMin: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    default: return a + b;
  }
}

#endif /* ZC_OPS_H_ */
