/* TEMPORARY host-only device until the device branch lands. */
#include <stdlib.h>
#include <string.h>

#include "zd_device.h"
#include "zu_error.h"

struct zd_dev {
  zd_kind_t kind;
};

zcclResult_t zd_dev_create(zd_kind_t kind, zd_dev_t** dev) {
  *dev = calloc(1, sizeof **dev);
  (*dev)->kind = kind;
  return zcclSuccess;
}
void zd_dev_destroy(zd_dev_t* dev) { free(dev); }
zd_kind_t zd_dev_kind(const zd_dev_t* dev) { return dev->kind; }
const char* zd_kind_name(zd_kind_t kind) { return kind == ZD_HOST ? "host" : "sim"; }
zcclResult_t zd_kind_from_env(zd_kind_t* kind) {
  *kind = ZD_HOST;
  return zcclSuccess;
}
zcclResult_t zd_buf_get(zd_dev_t* dev, size_t bytes, void** buf) {
  (void)dev;
  *buf = malloc(bytes);
  return zcclSuccess;
}
void zd_buf_put(zd_dev_t* dev, void* buf) {
  (void)dev;
  free(buf);
}
size_t zd_buf_largest(zd_dev_t* dev) {
  (void)dev;
  return 64u << 20;
}
zcclResult_t zd_copy(zd_dev_t* dev, void* dst, const void* src, size_t bytes) {
  (void)dev;
  memmove(dst, src, bytes);
  return zcclSuccess;
}
#define RED(T)                                                                 \
  {                                                                            \
    T* d = dst;                                                                \
    const T *x = a, *y = b;                                                    \
    for (size_t i = 0; i < count; i++) {                                       \
      T u = x[i], v = y[i];                                                    \
      d[i] = op == zcclSum ? (T)(u + v) : op == zcclProd ? (T)(u * v) : op == zcclMax ? (u > v ? u : v) : (u < v ? u : v); \
    }                                                                          \
    return zcclSuccess;                                                        \
  }
zcclResult_t zd_reduce(zd_dev_t* dev, void* dst, const void* a, const void* b, size_t count, zcclDataType_t dtype,
                       zcclRedOp_t op) {
  (void)dev;
  switch (dtype) {
    case zcclInt8: RED(int8_t)
    case zcclUint8: RED(uint8_t)
    case zcclInt32: RED(int32_t)
    case zcclUint32: RED(uint32_t)
    case zcclInt64: RED(int64_t)
    case zcclUint64: RED(uint64_t)
    case zcclFloat32: RED(float)
    case zcclFloat64: RED(double)
    default: return ZU_ERROR(zcclInvalidUsage, "temporary device: dtype %d", (int)dtype);
  }
}
#define DIV(T)                                  \
  {                                             \
    T* d = buf;                                 \
    for (size_t i = 0; i < count; i++) d[i] = (T)(d[i] / n); \
    return zcclSuccess;                         \
  }
zcclResult_t zd_divide(zd_dev_t* dev, void* buf, size_t count, zcclDataType_t dtype, int n) {
  (void)dev;
  switch (dtype) {
    case zcclInt8: DIV(int8_t)
    case zcclUint8: DIV(uint8_t)
    case zcclUint32: DIV(uint32_t)
    case zcclInt64: DIV(int64_t)
    case zcclUint64: DIV(uint64_t)
    case zcclInt32: DIV(int32_t)
    case zcclFloat32: DIV(float)
    case zcclFloat64: DIV(double)
    default: return ZU_ERROR(zcclInvalidUsage, "temporary device: dtype %d", (int)dtype);
  }
}
zd_event_t zd_event_record(zd_dev_t* dev) {
  (void)dev;
  return 0;
}
int zd_event_done(zd_dev_t* dev, zd_event_t ev) {
  (void)dev, (void)ev;
  return 1;
}
zcclResult_t zd_event_wait(zd_dev_t* dev, zd_event_t ev) {
  (void)dev, (void)ev;
  return zcclSuccess;
}
zcclResult_t zd_sync(zd_dev_t* dev) {
  (void)dev;
  return zcclSuccess;
}
