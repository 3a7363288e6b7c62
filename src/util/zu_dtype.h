/* Sizes and names of the public data types and reduction ops. */
#ifndef ZU_DTYPE_H_
#define ZU_DTYPE_H_

#include <stddef.h>
#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes per element; 0 for a value outside zcclDataType_t. */
size_t zu_dtype_size(int datatype);
/* "float32", ...; "invalid" for a value outside the enum. */
const char* zu_dtype_name(int datatype);
/* "sum", ...; "invalid" for a value outside the enum. */
const char* zu_op_name(int op);

#ifdef __cplusplus
}
#endif

#endif /* ZU_DTYPE_H_ */
