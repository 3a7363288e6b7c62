/* ZFP (libzfp) behind zccl's codec interface: the baseline the papers
 * compare with. Fixed accuracy (an absolute tolerance) or fixed rate (bits
 * per value), 1-D, float32/float64, finite values only. */
#ifndef ZC_ZFP_H_
#define ZC_ZFP_H_

#include <stddef.h>
#include <stdint.h>

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZC_ZFP_HEADER_BYTES 40
enum { ZC_ZFP_ACCURACY = 1, ZC_ZFP_RATE = 2 };

size_t zc_zfp_bound(size_t count, zcclDataType_t dtype, int mode, double param);
/* param: the tolerance (ACCURACY, > 0) or bits per value (RATE, 1..64).
 * zcclInvalidArgument for non-finite input: ZFP cannot carry it. */
zcclResult_t zc_zfp_compress(zcclDataType_t dtype, int mode, double param, const void* in, size_t count, void* out,
                             size_t cap, size_t* size);
zcclResult_t zc_zfp_decompress(const void* stream, size_t size, void* out, size_t cap, size_t* count);

#ifdef __cplusplus
}
#endif

#endif /* ZC_ZFP_H_ */
