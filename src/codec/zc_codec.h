/* The codecs zccl can put on the wire, as one explicit table (STYLE 2).
 * Pure computation on memory: this layer has no threads, no I/O and reads no
 * environment. */
#ifndef ZC_CODEC_H_
#define ZC_CODEC_H_

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a codec can do: the algorithms say which of these they need. */
enum {
  ZC_CAP_LOSSY = 1u << 0,       /* error-bounded: within the call's bound */
  ZC_CAP_STREAM = 1u << 1,      /* zccl's own stream format (docs/format.md) */
  ZC_CAP_HOMOMORPHIC = 1u << 2, /* its streams are added, maxed, mined as they are */
  ZC_CAP_DOC = 1u << 3,         /* reduced by decompressing, operating, compressing per hop */
  ZC_CAP_LOSSLESS = 1u << 4,    /* exact */
  ZC_CAP_HOST_ONLY = 1u << 5    /* the host's codec only: no GPU kernels */
};

typedef struct {
  zcclCodec_t id;
  const char* name; /* as written in ZCCL_COMPRESSION's codec= */
  const char* desc;
  int built;        /* 1 when this build can compress with it */
  unsigned caps;    /* ZC_CAP_*; 0 for none */
} zc_codec_info_t;

/* The entry for id, NULL when id is not a zcclCodec_t. */
const zc_codec_info_t* zc_codec_info(int id);
/* The entry whose name matches (case-insensitive), NULL when none. */
const zc_codec_info_t* zc_codec_by_name(const char* name);

/* Version of libzfp this build links (the ZFP baseline codec). */
const char* zc_zfp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ZC_CODEC_H_ */
