#include "zc_codec.h"

#include <stdio.h>
#include <strings.h>
#include <zfp.h>

/* "built": this library has the codec (docs/format.md for szp/hz). Whether a
 * collective uses it is the collectives' business; until they do, they
 * report that they are not built rather than sending plain data. auto
 * compresses with hz's table when it compresses. A new codec is one file
 * with its zc_codec_ops_t and one row here (and its zcclCodec_t). */
static const zc_codec_info_t zc_codecs[zcclNumCodecs] = {
    {zcclCodecNone, "none", "no compression: the lossless path", 1, 0, NULL},
    {zcclCodecAuto, "auto", "hz where the cost model says compression pays for the link, else none", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_HOMOMORPHIC, &zc_hz_ops},
    {zcclCodecSzp, "szp", "error-bounded block codec; reductions decompress, reduce, recompress", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_DOC, &zc_szp_ops},
    {zcclCodecHz, "hz", "szp's stream format with reductions on compressed data (homomorphic)", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_HOMOMORPHIC, &zc_hz_ops},
    {zcclCodecRle, "rle", "lossless run-length coding of zero runs, reduced while encoded", 1,
     ZC_CAP_LOSSLESS, &zc_rle_ops},
    {zcclCodecZfp, "zfp", "libzfp fixed-accuracy (baseline)", 1, ZC_CAP_LOSSY | ZC_CAP_FINITE, &zc_zfp_ops},
};

const zc_codec_info_t* zc_codec_info(int id) {
  return (id >= 0 && id < zcclNumCodecs) ? &zc_codecs[id] : NULL;
}

const zc_codec_info_t* zc_codec_by_name(const char* name) {
  for (int i = 0; i < zcclNumCodecs; i++)
    if (strcasecmp(name, zc_codecs[i].name) == 0) return &zc_codecs[i];
  return NULL;
}

const char* zc_codec_names(char* buf, size_t len) {
  size_t at = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < zcclNumCodecs && at < len; i++) {
    int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", zc_codecs[i].name);
    if (n < 0) break;
    at += (size_t)n;
  }
  return buf;
}

const char* zc_zfp_version(void) { return zfp_version_string; }
