/* The compression setting: its text form (ZCCL_COMPRESSION, tools' flags),
 * its validation, and the per-communicator default. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zc_codec.h"
#include "zc_szp.h"
#include "zccl_core.h"
#include "zp_stream.h"
#include "zu_dtype.h"
#include "zu_param.h"

static const char* zccl_mode_names[zcclNumErrorModes] = {
    [zcclErrorAbs] = "abs",
    [zcclErrorRel] = "rel",
    [zcclErrorTargetAbs] = "target",
    [zcclErrorTargetRel] = "target-rel",
};

zcclResult_t zccl_compression_check(const char* fn, const zcclCompression_t* c) {
  ZU_RETURN_ERR_IF(zc_codec_info(c->codec) == NULL, zcclInvalidArgument, "%s: invalid codec %d", fn,
                   c->codec);
  ZU_RETURN_ERR_IF(c->mode < 0 || c->mode >= zcclNumErrorModes, zcclInvalidArgument,
                   "%s: invalid error mode %d", fn, c->mode);
  ZU_RETURN_ERR_IF(c->codec != zcclCodecNone && !(isfinite(c->eb) && c->eb > 0.0),
                   zcclInvalidArgument, "%s: error bound eb=%g must be finite and > 0", fn, c->eb);
  ZU_RETURN_ERR_IF(c->hasFill != 0 && c->hasFill != 1, zcclInvalidArgument,
                   "%s: hasFill must be 0 or 1, not %d", fn, c->hasFill);
  ZU_RETURN_ERR_IF(c->hasFill && !isfinite(c->fillValue), zcclInvalidArgument,
                   "%s: the fill value must be finite (non-finite values are always kept exactly)",
                   fn);
  return zcclSuccess;
}

/* Trims blanks at both ends of s in place. */
static char* zccl_trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

static int zccl_parse_double(const char* s, double* v) {
  char* end = NULL;
  errno = 0;
  double d = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE) return -1;
  *v = d;
  return 0;
}

zcclResult_t zcclCompressionFromString(const char* text, zcclCompression_t* compression) {
  static const char* fn = "zcclCompressionFromString";
  ZU_RETURN_ERR_IF(text == NULL || compression == NULL, zcclInvalidArgument, "%s: NULL argument", fn);
  char buf[512];
  ZU_RETURN_ERR_IF(strlen(text) >= sizeof buf, zcclInvalidArgument, "%s: text longer than %zu bytes",
                   fn, sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", text);
  zcclCompression_t c = *compression;
  /* A config's "not set" codec becomes none unless the text names one. */
  if (c.codec == ZCCL_CONFIG_UNDEF_INT) c.codec = zcclCodecNone;
  char* all = zccl_trim(buf);
  if (all[0] == '\0' || strcasecmp(all, "off") == 0 || strcasecmp(all, "none") == 0) {
    compression->codec = zcclCodecNone;
    return zcclSuccess;
  }
  int first = 1;
  char* rest = all;
  /* strsep, unlike strtok, yields empty fields: "a,,b" is an error. */
  for (char* tok = strsep(&rest, ","); tok; tok = strsep(&rest, ","), first = 0) {
    char* eq = strchr(tok, '=');
    if (eq == NULL) {
      /* A bare codec name first is short for codec=NAME ("hz,eb=1e-4"). */
      const zc_codec_info_t* ci = zc_codec_by_name(zccl_trim(tok));
      ZU_RETURN_ERR_IF(!first || ci == NULL, zcclInvalidArgument,
                       "%s('%s'): '%s' is not key=value (keys: codec, mode, eb, fill, min_bytes)",
                       fn, text, zccl_trim(tok));
      c.codec = ci->id;
      continue;
    }
    *eq = '\0';
    char* key = zccl_trim(tok);
    char* val = zccl_trim(eq + 1);
    ZU_RETURN_ERR_IF(val[0] == '\0', zcclInvalidArgument, "%s('%s'): %s has no value", fn, text, key);
    if (strcasecmp(key, "codec") == 0) {
      const zc_codec_info_t* ci = zc_codec_by_name(val);
      char names[128];
      ZU_RETURN_ERR_IF(ci == NULL, zcclInvalidArgument, "%s('%s'): unknown codec '%s' (%s)", fn, text, val,
                       zc_codec_names(names, sizeof names));
      c.codec = ci->id;
    } else if (strcasecmp(key, "mode") == 0) {
      int m;
      for (m = 0; m < zcclNumErrorModes; m++)
        if (strcasecmp(val, zccl_mode_names[m]) == 0) break;
      if (m == zcclNumErrorModes && strcasecmp(val, "target-abs") == 0) m = zcclErrorTargetAbs;
      ZU_RETURN_ERR_IF(m == zcclNumErrorModes, zcclInvalidArgument,
                       "%s('%s'): unknown mode '%s' (abs, rel, target, target-rel)", fn, text, val);
      c.mode = m;
    } else if (strcasecmp(key, "eb") == 0) {
      ZU_RETURN_ERR_IF(zccl_parse_double(val, &c.eb) != 0, zcclInvalidArgument,
                       "%s('%s'): eb='%s' is not a number", fn, text, val);
    } else if (strcasecmp(key, "fill") == 0) {
      if (strcasecmp(val, "none") == 0) {
        c.hasFill = 0;
      } else {
        ZU_RETURN_ERR_IF(zccl_parse_double(val, &c.fillValue) != 0, zcclInvalidArgument,
                         "%s('%s'): fill='%s' is not a number or none", fn, text, val);
        c.hasFill = 1;
      }
    } else if (strcasecmp(key, "min_bytes") == 0) {
      int64_t v;
      ZU_RETURN_ERR_IF(zu_parse_size(val, &v) != 0 || v < 0, zcclInvalidArgument,
                       "%s('%s'): min_bytes='%s' is not a size (e.g. 65536, 64K, 1M)", fn, text, val);
      c.minBytes = (size_t)v;
    } else {
      return ZU_ERROR(zcclInvalidArgument,
                      "%s('%s'): unknown key '%s' (keys: codec, mode, eb, fill, min_bytes)", fn, text,
                      key);
    }
  }
  ZU_CHECK(zccl_compression_check(fn, &c));
  *compression = c;
  return zcclSuccess;
}

zcclResult_t zcclCompressionToString(const zcclCompression_t* c, char* buf, size_t len) {
  static const char* fn = "zcclCompressionToString";
  ZU_RETURN_ERR_IF(c == NULL || buf == NULL, zcclInvalidArgument, "%s: NULL argument", fn);
  ZU_CHECK(zccl_compression_check(fn, c));
  char fill[40] = "none";
  if (c->hasFill) snprintf(fill, sizeof fill, "%.17g", c->fillValue);
  int n = snprintf(buf, len, "codec=%s,mode=%s,eb=%.17g,fill=%s,min_bytes=%zu",
                   zc_codec_info(c->codec)->name, zccl_mode_names[c->mode], c->eb, fill, c->minBytes);
  ZU_RETURN_ERR_IF(n < 0 || (size_t)n >= len, zcclInvalidArgument, "%s: buffer of %zu bytes too small",
                   fn, len);
  return zcclSuccess;
}

zcclResult_t zcclCommSetCompression(zcclComm_t comm, const zcclCompression_t* compression) {
  static const char* fn = "zcclCommSetCompression";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(compression == NULL, zcclInvalidArgument, "%s: compression is NULL", fn);
  ZU_CHECK(zccl_compression_check(fn, compression));
  comm->compression = *compression;
  return zcclSuccess;
}

zcclResult_t zcclCommGetCompression(const zcclComm_t comm, zcclCompression_t* compression) {
  static const char* fn = "zcclCommGetCompression";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(compression == NULL, zcclInvalidArgument, "%s: compression is NULL", fn);
  *compression = comm->compression;
  return zcclSuccess;
}

zcclResult_t zcclCommCompressionStats(zcclComm_t comm, uint64_t* rawBytes, uint64_t* wireBytes) {
  static const char* fn = "zcclCommCompressionStats";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(rawBytes == NULL || wireBytes == NULL, zcclInvalidArgument, "%s: NULL output", fn);
  /* Operations update the counters holding the worker lock. */
  if (comm->runtime) pthread_mutex_lock(&comm->worker_lock);
  *rawBytes = comm->stats.raw_bytes;
  *wireBytes = comm->stats.wire_bytes;
  if (comm->runtime) pthread_mutex_unlock(&comm->worker_lock);
  return zcclSuccess;
}

/* The absolute bound zcclCompressRoundtrip applies: as zp_eb_abs does for
 * one rank (rel: the range of this buffer). */
static double zccl_roundtrip_eb(const zcclCompression_t* c, const void* in, size_t count, zcclDataType_t dt) {
  if (c->mode == zcclErrorAbs) return c->eb;
  double mn = 0, mx = 0;
  size_t valid = 0;
  zc_value_range(in, count, dt, c->hasFill, c->fillValue, &mn, &mx, &valid);
  return c->eb * (valid ? zp_rel_span(mn, mx) : zp_rel_span(-INFINITY, -INFINITY));
}

/* Compresses in into a scratch stream with the codec's table and decodes
 * it into out. */
static zcclResult_t zccl_roundtrip_codec(const zcclCompression_t* c, double eb, const void* in, void* out,
                                         size_t count, zcclDataType_t dt) {
  const zc_codec_ops_t* ops = zc_codec_info(c->codec)->ops;
  zc_params_t p = {.dtype = dt, .eb = eb, .has_fill = c->hasFill, .fill = c->fillValue};
  size_t cap = ops->bound(&p, count);
  void* stream = malloc(cap ? cap : 1);
  ZU_RETURN_ERR_IF(stream == NULL, zcclSystemError, "zcclCompressRoundtrip: out of memory (%zu bytes)", cap);
  size_t size = 0, got = 0;
  zcclResult_t res = ops->encode(&p, in, count, stream, cap, &size);
  if (res == zcclSuccess) res = ops->decode(stream, size, out, count, &got);
  free(stream);
  if (res == zcclSuccess && got != count) res = zcclInternalError;
  return res;
}

zcclResult_t zcclCompressRoundtrip(const zcclCompression_t* compression, const void* sendbuff, void* recvbuff,
                                   size_t count, zcclDataType_t datatype, double* ebAbs) {
  static const char* fn = "zcclCompressRoundtrip";
  const zcclCompression_t* c = compression;
  ZU_RETURN_ERR_IF(c == NULL, zcclInvalidArgument, "%s: compression is NULL", fn);
  ZU_CHECK(zccl_compression_check(fn, c));
  ZU_RETURN_ERR_IF(count > 0 && (sendbuff == NULL || recvbuff == NULL), zcclInvalidArgument,
                   "%s: NULL buffer for %zu values", fn, count);
  ZU_RETURN_ERR_IF(c->codec == zcclCodecAuto, zcclInvalidArgument,
                   "%s: codec=auto decides per call whether to compress; name the codec", fn);
  ZU_RETURN_ERR_IF(c->mode != zcclErrorAbs && c->mode != zcclErrorRel, zcclInvalidArgument,
                   "%s: mode %s divides the bound among a collective's ranks; give abs or rel", fn,
                   zccl_mode_names[c->mode]);
  int lossy = (zc_codec_info(c->codec)->caps & ZC_CAP_LOSSY) != 0;
  ZU_RETURN_ERR_IF(lossy && datatype != zcclFloat32 && datatype != zcclFloat64, zcclInvalidArgument,
                   "%s: codec %s compresses float32 and float64 only, not datatype %d", fn,
                   zc_codec_info(c->codec)->name, (int)datatype);
  size_t esize = zu_dtype_size(datatype);
  ZU_RETURN_ERR_IF(esize == 0, zcclInvalidArgument, "%s: invalid datatype %d", fn, (int)datatype);
  double eb = lossy ? zccl_roundtrip_eb(c, sendbuff, count, datatype) : 0.0;
  if (ebAbs) *ebAbs = eb;
  if (!lossy || count == 0) { /* lossless: what the peers get is the input */
    if (count && recvbuff != sendbuff) memmove(recvbuff, sendbuff, count * esize);
    return zcclSuccess;
  }
  zcclResult_t res = zccl_roundtrip_codec(c, eb, sendbuff, recvbuff, count, datatype);
  ZU_RETURN_ERR_IF(res != zcclSuccess, res, "%s: the codec failed on %zu values (%s)", fn, count,
                   zcclGetErrorString(res));
  return zcclSuccess;
}
