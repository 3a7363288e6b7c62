#include "zu_dtype.h"

static const struct {
  const char* name;
  size_t size;
} zu_dtypes[zcclNumTypes] = {
    [zcclInt8] = {"int8", 1},         [zcclUint8] = {"uint8", 1},
    [zcclInt32] = {"int32", 4},       [zcclUint32] = {"uint32", 4},
    [zcclInt64] = {"int64", 8},       [zcclUint64] = {"uint64", 8},
    [zcclFloat16] = {"float16", 2},   [zcclFloat32] = {"float32", 4},
    [zcclFloat64] = {"float64", 8},   [zcclBfloat16] = {"bfloat16", 2},
    [zcclFloat8e4m3] = {"float8e4m3", 1}, [zcclFloat8e5m2] = {"float8e5m2", 1},
};

static const char* zu_ops[zcclNumOps] = {
    [zcclSum] = "sum", [zcclProd] = "prod", [zcclMax] = "max", [zcclMin] = "min", [zcclAvg] = "avg",
};

size_t zu_dtype_size(int datatype) {
  return (datatype >= 0 && datatype < zcclNumTypes) ? zu_dtypes[datatype].size : 0;
}

const char* zu_dtype_name(int datatype) {
  return (datatype >= 0 && datatype < zcclNumTypes) ? zu_dtypes[datatype].name : "invalid";
}

const char* zu_op_name(int op) {
  return (op >= 0 && op < zcclNumOps) ? zu_ops[op] : "invalid";
}
