/* The codecs zccl can put on the wire, as one explicit table (STYLE 2).
 * Pure computation on memory: this layer has no threads, no I/O and reads no
 * environment. */
#ifndef ZC_CODEC_H_
#define ZC_CODEC_H_

#include "zc_szp.h" /* zc_params_t */
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
  ZC_CAP_FINITE = 1u << 5       /* finite values only, no fill value: every rank's input is checked first */
};

/* What zccl does with a codec: one table, in the codec's own file. Plain
 * functions on host memory on the calling thread; the device layer runs
 * them where the data is (and has its own multi-threaded and CUDA
 * implementations of zccl's stream format, ZC_CAP_STREAM). */
typedef struct {
  /* The most bytes count values can take with p (p->eb: the bound, or
   * ZFP's tolerance; RLE reads only p->dtype). */
  size_t (*bound)(const zc_params_t* p, size_t count);
  /* count values of p->dtype at in into a stream at out (room cap); *size its bytes. */
  zcclResult_t (*encode)(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap, size_t* size);
  /* A stream of size bytes into out (room for cap values); *count the values it held. */
  zcclResult_t (*decode)(const void* stream, size_t size, void* out, size_t cap, size_t* count);
  /* op (SUM, MAX, MIN) of two streams of one count, without decoding, into
   * a stream at out (room cap); NULL: the codec is not homomorphic. */
  zcclResult_t (*reduce)(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                         size_t cap, size_t* size);
  int reduce_in_place; /* out may be a or b itself */
} zc_codec_ops_t;

typedef struct {
  zcclCodec_t id;
  const char* name; /* as written in ZCCL_COMPRESSION's codec= */
  const char* desc;
  int built;        /* 1 when this build can compress with it */
  unsigned caps;    /* ZC_CAP_*; 0 for none */
  const zc_codec_ops_t* ops; /* NULL for none */
} zc_codec_info_t;

/* The codecs' tables, each in its codec's file. */
extern const zc_codec_ops_t zc_szp_ops, zc_hz_ops, zc_rle_ops, zc_zfp_ops;

/* The entry for id, NULL when id is not a zcclCodec_t. */
const zc_codec_info_t* zc_codec_info(int id);
/* The entry whose name matches (case-insensitive), NULL when none. */
const zc_codec_info_t* zc_codec_by_name(const char* name);
/* The codecs' names, comma-separated, into buf (error messages). */
const char* zc_codec_names(char* buf, size_t len);

/* Version of libzfp this build links (the ZFP baseline codec). */
const char* zc_zfp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ZC_CODEC_H_ */
