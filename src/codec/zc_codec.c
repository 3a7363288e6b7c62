#include "zc_codec.h"

#include <strings.h>
#include <zfp.h>

/* "built": this library has the codec (docs/format.md for szp/hz). Whether a
 * collective uses it is the collectives' business; until they do, they
 * report that they are not built rather than sending plain data. */
static const zc_codec_info_t zc_codecs[zcclNumCodecs] = {
    {zcclCodecNone, "none", "no compression: the lossless path", 1, 0},
    {zcclCodecAuto, "auto", "hz where the cost model says compression pays for the link, else none", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_HOMOMORPHIC},
    {zcclCodecSzp, "szp", "error-bounded block codec; reductions decompress, reduce, recompress", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_DOC},
    {zcclCodecHz, "hz", "szp's stream format with reductions on compressed data (homomorphic)", 1,
     ZC_CAP_LOSSY | ZC_CAP_STREAM | ZC_CAP_HOMOMORPHIC},
    {zcclCodecRle, "rle", "lossless run-length coding of zero runs, reduced while encoded", 1,
     ZC_CAP_LOSSLESS | ZC_CAP_HOST_ONLY},
    {zcclCodecZfp, "zfp", "libzfp fixed-accuracy (baseline)", 1, ZC_CAP_LOSSY | ZC_CAP_HOST_ONLY},
};

const zc_codec_info_t* zc_codec_info(int id) {
  return (id >= 0 && id < zcclNumCodecs) ? &zc_codecs[id] : NULL;
}

const zc_codec_info_t* zc_codec_by_name(const char* name) {
  for (int i = 0; i < zcclNumCodecs; i++)
    if (strcasecmp(name, zc_codecs[i].name) == 0) return &zc_codecs[i];
  return NULL;
}

const char* zc_zfp_version(void) { return zfp_version_string; }
