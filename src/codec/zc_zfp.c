/* libzfp behind a small self-describing header (docs/format.md, "ZFP"). */
#include "zc_zfp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zfp.h>

#include "zc_codec.h"
#include "zu_error.h"

static const uint8_t zc_zfp_magic[4] = {'Z', 'C', 'Z', 'F'};

/* A zfp stream set up for mode/param on a 1-D field of count values. */
static int zc_zfp_setup(zcclDataType_t dtype, int mode, double param, void* data, size_t count, zfp_stream** zs,
                        zfp_field** field) {
  zfp_type type = dtype == zcclFloat32 ? zfp_type_float : zfp_type_double;
  *field = zfp_field_1d(data, type, count);
  *zs = zfp_stream_open(NULL);
  if (*field == NULL || *zs == NULL) return -1;
  if (mode == ZC_ZFP_ACCURACY) {
    zfp_stream_set_accuracy(*zs, param);
    /* Cap a block (4 values) at its raw size plus 64 bits instead of
     * ZFP_MAX_BITS: the most a block can need, and it keeps libzfp's
     * maximum stream size (what a corrupt stream may make it read) near the
     * data's size. */
    uint minbits, maxbits, maxprec;
    int minexp;
    zfp_stream_params(*zs, &minbits, &maxbits, &maxprec, &minexp);
    uint cap = 4 * (type == zfp_type_float ? 32 : 64) + 64;
    zfp_stream_set_params(*zs, minbits, maxbits < cap ? maxbits : cap, maxprec, minexp);
  } else {
    zfp_stream_set_rate(*zs, param, type, 1, zfp_false);
  }
  return 0;
}

static void zc_zfp_teardown(zfp_stream* zs, zfp_field* field, bitstream* bs) {
  if (bs) stream_close(bs);
  if (zs) zfp_stream_close(zs);
  if (field) zfp_field_free(field);
}

static int zc_zfp_params_ok(zcclDataType_t dtype, int mode, double param) {
  if (dtype != zcclFloat32 && dtype != zcclFloat64) return 0;
  if (mode == ZC_ZFP_ACCURACY) return isfinite(param) && param > 0;
  if (mode == ZC_ZFP_RATE) return isfinite(param) && param >= 1 && param <= 64;
  return 0;
}

size_t zc_zfp_bound(size_t count, zcclDataType_t dtype, int mode, double param) {
  if (!zc_zfp_params_ok(dtype, mode, param)) return 0;
  zfp_stream* zs = NULL;
  zfp_field* field = NULL;
  size_t n = 0;
  if (zc_zfp_setup(dtype, mode, param, NULL, count ? count : 1, &zs, &field) == 0)
    n = ZC_ZFP_HEADER_BYTES + zfp_stream_maximum_size(zs, field);
  zc_zfp_teardown(zs, field, NULL);
  return n;
}

zcclResult_t zc_zfp_compress(zcclDataType_t dtype, int mode, double param, const void* in, size_t count, void* out,
                             size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(!zc_zfp_params_ok(dtype, mode, param), zcclInvalidArgument,
                   "zfp: bad parameters (dtype %d, mode %d, %g)", dtype, mode, param);
  ZU_RETURN_ERR_IF(size == NULL || out == NULL || (in == NULL && count > 0), zcclInvalidArgument,
                   "zfp: NULL argument");
  for (size_t i = 0; i < count; i++) {
    double v = dtype == zcclFloat32 ? (double)((const float*)in)[i] : ((const double*)in)[i];
    ZU_RETURN_ERR_IF(!isfinite(v), zcclInvalidArgument,
                     "zfp: value %zu is not finite; the ZFP baseline cannot carry NaN or Inf", i);
  }
  ZU_RETURN_ERR_IF(cap < zc_zfp_bound(count, dtype, mode, param), zcclInvalidArgument,
                   "zfp: output buffer too small (size it with zc_zfp_bound)");
  uint8_t* o = out;
  uint64_t payload = 0;
  if (count > 0) {
    zfp_stream* zs = NULL;
    zfp_field* field = NULL;
    bitstream* bs = NULL;
    if (zc_zfp_setup(dtype, mode, param, (void*)in, count, &zs, &field) != 0 ||
        (bs = stream_open(o + ZC_ZFP_HEADER_BYTES, cap - ZC_ZFP_HEADER_BYTES)) == NULL) {
      zc_zfp_teardown(zs, field, bs);
      return ZU_ERROR(zcclSystemError, "zfp: cannot set up a stream");
    }
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    payload = zfp_compress(zs, field);
    zc_zfp_teardown(zs, field, bs);
    ZU_RETURN_ERR_IF(payload == 0, zcclInternalError, "zfp: zfp_compress failed");
  }
  memcpy(o, zc_zfp_magic, 4);
  o[4] = 1;
  o[5] = dtype == zcclFloat32 ? 1 : 2;
  o[6] = (uint8_t)mode;
  o[7] = 0;
  uint64_t c = count;
  memcpy(o + 8, &c, 8);
  memcpy(o + 16, &param, 8);
  memcpy(o + 24, &payload, 8);
  memset(o + 32, 0, 8);
  *size = ZC_ZFP_HEADER_BYTES + (size_t)payload;
  return zcclSuccess;
}

zcclResult_t zc_zfp_decompress(const void* stream, size_t size, void* out, size_t cap, size_t* count) {
  const uint8_t* s = stream;
  ZU_RETURN_ERR_IF(stream == NULL || count == NULL, zcclInvalidArgument, "zfp: NULL argument");
  ZU_RETURN_ERR_IF(size < ZC_ZFP_HEADER_BYTES || memcmp(s, zc_zfp_magic, 4) != 0 || s[4] != 1 || s[7] != 0,
                   zcclInvalidArgument, "zfp: not a zccl ZFP stream (bad header)");
  zcclDataType_t dtype = s[5] == 1 ? zcclFloat32 : s[5] == 2 ? zcclFloat64 : zcclNumTypes;
  int mode = s[6];
  uint64_t n, payload;
  double param;
  memcpy(&n, s + 8, 8);
  memcpy(&param, s + 16, 8);
  memcpy(&payload, s + 24, 8);
  ZU_RETURN_ERR_IF(!zc_zfp_params_ok(dtype, mode, param), zcclInvalidArgument, "zfp: bad parameters in the header");
  ZU_RETURN_ERR_IF(payload != size - ZC_ZFP_HEADER_BYTES, zcclInvalidArgument,
                   "zfp: %zu bytes given, the stream has %llu", size, (unsigned long long)payload + ZC_ZFP_HEADER_BYTES);
  ZU_RETURN_ERR_IF(n > cap, zcclInvalidArgument, "zfp: the stream has %llu values, room for %zu",
                   (unsigned long long)n, cap);
  ZU_RETURN_ERR_IF(out == NULL && n > 0, zcclInvalidArgument, "zfp: NULL argument");
  if (n > 0) {
    /* libzfp reads whole words and trusts its input: decode from a copy
     * padded to the most this field can take, so a corrupt payload reads
     * zeros, never past our buffer. */
    size_t max = zc_zfp_bound((size_t)n, dtype, mode, param);
    ZU_RETURN_ERR_IF(max == 0 || payload > max, zcclInvalidArgument, "zfp: payload larger than possible");
    uint8_t* copy = calloc(1, max + 64);
    ZU_RETURN_ERR_IF(copy == NULL, zcclSystemError, "zfp: out of memory");
    memcpy(copy, s + ZC_ZFP_HEADER_BYTES, (size_t)payload);
    zfp_stream* zs = NULL;
    zfp_field* field = NULL;
    bitstream* bs = NULL;
    size_t used = 0;
    if (zc_zfp_setup(dtype, mode, param, out, (size_t)n, &zs, &field) == 0 && (bs = stream_open(copy, max + 64))) {
      zfp_stream_set_bit_stream(zs, bs);
      zfp_stream_rewind(zs);
      used = zfp_decompress(zs, field);
    }
    zc_zfp_teardown(zs, field, bs);
    free(copy);
    ZU_RETURN_ERR_IF(used == 0, zcclInvalidArgument, "zfp: zfp_decompress failed");
  }
  *count = (size_t)n;
  return zcclSuccess;
}

/* ---- ZFP in the codec table (zc_codec.h): fixed accuracy, p->eb the tolerance ---- */
static size_t zc_zfp_bound_of(const zc_params_t* p, size_t count) {
  return zc_zfp_bound(count, p->dtype, ZC_ZFP_ACCURACY, p->eb);
}

static zcclResult_t zc_zfp_encode_of(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                                     size_t* size) {
  return zc_zfp_compress(p->dtype, ZC_ZFP_ACCURACY, p->eb, in, count, out, cap, size);
}

const zc_codec_ops_t zc_zfp_ops = {zc_zfp_bound_of, zc_zfp_encode_of, zc_zfp_decompress, NULL, 0};
