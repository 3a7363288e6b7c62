/* Pieces every compressed algorithm shares (proto-internal; zp_stream.c). */
#ifndef ZP_STREAM_H_
#define ZP_STREAM_H_

#include "zp_algo.h"

/* What a compressed algorithm works with: the codec's parameters, slices
 * of `slice` elements, and stream buffers of `cap` bytes from the pool. */
typedef struct {
  zc_params_t p;
  size_t slice, cap;
  uint8_t* s;     /* nbuf streams: stream b at s + b * cap */
  uint8_t* spare; /* one more, or NULL */
  const zc_codec_info_t* codec; /* the call's (auto: hz's table) */
} zp_streams_t;

/* Where the bound comes from: nowhere (the rank only receives), this
 * rank's values, or every rank's (one small allreduce). */
enum { ZP_EB_NONE, ZP_EB_LOCAL, ZP_EB_GLOBAL };

/* The range a REL bound multiplies, from the valid values' lo and hi
 * (-inf, -inf when none): hi - lo, or for constant or no data |hi| (1 if 0). */
double zp_rel_span(double lo, double hi);
/* The absolute bound for this call from in[0, n): ABS as given; REL times
 * the range of the valid values (over every rank when global); target
 * modes divide a SUM's bound by the number of contributions. */
zcclResult_t zp_eb_abs(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t n, int global,
                       double* eb);
zc_params_t zp_params(const zp_ctx_t* ctx, const zp_coll_args_t* a, double eb);
/* The model's price of zp_eb_abs and zp_eb_agreed for a compressed call:
 * under a REL bound the scan of the input a rank holds (the root's for a
 * rooted call) and the rounds that agree on the range, and for a
 * finite-only codec (ZFP) its check of every value likewise; 0 for ABS
 * with any other codec, or a lossless one. Every compressed algorithm of
 * a call pays it once, before its first compression, so it moves no
 * choice among them, only against sending uncompressed (codec=auto) and
 * the time the model reports. */
double zp_eb_cost(const zp_ctx_t* ctx, const zp_coll_args_t* a);
/* zp_eb_abs agreed: every rank's values (root < 0) or the root's, which
 * it then sends to every rank (the others pass in_n 0). With codec=zfp
 * also the check, agreed likewise, that those values are finite and that
 * no fill value is declared (ZFP can keep neither): zcclInvalidArgument on
 * every rank before anything moves. Every rank returns the same result. */
zcclResult_t zp_eb_agreed(const zp_ctx_t* ctx, const zp_coll_args_t* a, const void* in, size_t in_n, int root,
                          double* eb);

/* The bound from a->sendbuff[0, in_n) (eb_from), slices of a block of
 * `block` elements small enough that `fit` streams fit the pool (the same
 * on every rank, so slices pair up across ranks), nbuf streams and maybe
 * a spare. zp_streams_put waits for the device, then frees them. */
zcclResult_t zp_streams_get(const zp_ctx_t* ctx, const zp_coll_args_t* a, int eb_from, size_t in_n, size_t block,
                            int fit, int nbuf, int spare, zp_streams_t* z);
void zp_streams_put(const zp_ctx_t* ctx, zp_streams_t* z);
static inline uint8_t* zp_stream(const zp_streams_t* z, int b) { return z->s + (size_t)b * z->cap; }

/* A stream of z's codec: n values at in
 * into out (room cap; *size, read after zd_sync), and back into exactly n
 * values; zp_bound: the most n values can take. */
size_t zp_bound(const zp_streams_t* z, size_t n);
zcclResult_t zp_encode(const zp_ctx_t* ctx, const zp_streams_t* z, const void* in, size_t n, void* out, size_t cap,
                       size_t* size);
/* The same on device stream `lane` (zd_set_lane): independent work of one
 * call, one piece per stream; the issuer's stream is restored after. */
zcclResult_t zp_encode_on(const zp_ctx_t* ctx, int lane, const zp_streams_t* z, const void* in, size_t n, void* out,
                          size_t cap, size_t* size);
zcclResult_t zp_decode_on(const zp_ctx_t* ctx, int lane, const zp_streams_t* z, const void* stream,
                          const size_t* size, void* out, size_t n);
zcclResult_t zp_decode(const zp_ctx_t* ctx, const zp_streams_t* z, const void* stream, const size_t* size, void* out,
                       size_t n);

/* After a reduction's result is decompressed: AVG divides by the number of
 * ranks, leaving a declared fill value as it is; other ops nothing. */
zcclResult_t zp_avg_divide(const zp_ctx_t* ctx, const zp_coll_args_t* a, void* buf, size_t n);

/* A small vector of doubles made the same on every rank through a pool
 * temporary: its max over ranks (root < 0) or the root's values. On a
 * GPU's call it runs on ctx->host (host memory, no GPU round trip). sub:
 * zp_sub of the agreement's own part (zp_tag.h). */
zcclResult_t zp_agree(const zp_ctx_t* ctx, double* v, int nv, int root, uint32_t sub);

/* Elements per block slice so that `streams` compressed slices of the
 * codec's (with parameters p) fit the pool. */
size_t zp_stream_slice(const zp_ctx_t* ctx, const zc_codec_info_t* codec, const zc_params_t* p, size_t block,
                       int streams);

/* Slice [lo, lo + *m) of n elements, for (lo = 0; zp_slice(...); lo +=
 * slice). n = 0 makes one empty slice: its (empty) streams still travel,
 * so every rank takes part the same way. */
static inline int zp_slice(size_t n, size_t slice, size_t lo, size_t* m) {
  if (lo > 0 && lo >= n) return 0;
  *m = n - lo < slice ? n - lo : slice;
  return 1;
}

/* Columns [lo, hi) of the N blocks boff/blen, clipped to each block. */
void zp_slice_of(int N, const size_t* boff, const size_t* blen, size_t lo, size_t hi, size_t* soff, size_t* slen);

/* raw bytes went out as wire bytes (zcclCommCompressionStats). */
void zp_count(const zp_ctx_t* ctx, size_t raw, size_t wire);

/* The messages of zp_stream_sendrecv, not posted: x[0..return) with the
 * receive (of variable length) at *ri, -1: none. */
int zp_stream_xfers(const zp_ctx_t* ctx, int dst, const void* sbuf, size_t sbytes, int src, void* rbuf, size_t cap,
                    uint32_t sub, zp_xfer_t x[2], int* ri);
/* A stream (sbuf, sbytes; standing for sraw bytes) to dst and one of up to
 * cap bytes from src into rbuf, *rbytes its length; either peer may be -1. */
zcclResult_t zp_stream_sendrecv(const zp_ctx_t* ctx, const char* what, int dst, const void* sbuf, size_t sbytes,
                                size_t sraw, int src, void* rbuf, size_t cap, size_t* rbytes, uint32_t sub);
/* One ring step of streams: to the right neighbour, from the left. */
zcclResult_t zp_stream_xchg(const zp_ctx_t* ctx, const char* what, const void* sbuf, size_t sbytes, size_t sraw,
                            void* rbuf, size_t cap, size_t* rbytes, uint32_t sub);

/* The transport's progress from inside the codec: set zp_poll as the
 * device's progress hook (zd_set_progress) with a zp_poll_t while messages
 * are in flight, so they keep moving while this rank computes (the
 * transport progresses only when called). */
typedef struct {
  zt_worker_t* w;
  double polled; /* when the codec last drove the transport */
} zp_poll_t;
void zp_poll(void* arg);

#endif /* ZP_STREAM_H_ */
