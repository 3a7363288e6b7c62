/* Framed messages: a small allreduce whose call signature travels in front
 * of its data (ctx->sig_framed; zp_coll_run), the check of zp_sig_post
 * without a message pair of its own, which costs as much as the data's.
 * Recursive doubling and the one-shot allreduce send them. */
#include <stdio.h>
#include <string.h>

#include "zp_algo.h"

/* The magic tells a framed message from a peer's plain one of the same
 * length (a call that differs). */
#define ZP_FRAME_MAGIC 0x5a52u

int zp_frames(const zp_coll_args_t* a) { return a->count * zu_dtype_size(a->datatype) <= ZP_FRAME_BYTES; }

int zp_algo_frames(const zp_algo_t* algo) {
  return algo == &zp_algo_rd_allreduce || algo == &zp_algo_oneshot_allreduce;
}

static uint64_t zp_frame_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ull;
}

zp_frame_head_t zp_frame_head(const zp_sig_t* s) {
  uint64_t eb;
  memcpy(&eb, &s->eb, sizeof eb);
  uint64_t h = zp_frame_mix(zp_frame_mix(zp_frame_mix(zp_frame_mix(0, (uint32_t)s->codec), (uint32_t)s->mode), eb),
                            s->min_bytes);
  return (zp_frame_head_t){.magic = ZP_FRAME_MAGIC, .dtype = (uint8_t)s->dtype, .op = (uint8_t)s->op,
                           .count = (uint16_t)s->count, .codec = (int8_t)s->codec, .mode = (uint8_t)s->mode,
                           .eb = (float)s->eb, .setting = (uint32_t)(h ^ (h >> 32))};
}

/* The head as a signature, for the report (minBytes unknown: 0). */
static zp_sig_t zp_frame_sig(const zp_frame_head_t* h) {
  return (zp_sig_t){.coll = ZP_COLL_ALLREDUCE, .dtype = h->dtype, .op = h->op, .root = -1, .count = h->count,
                    .codec = h->codec, .mode = h->mode, .eb = h->eb};
}

zcclResult_t zp_frame_check(const zp_ctx_t* ctx, const char* what, int src, const zp_frame_head_t* mine,
                            const zp_frame_head_t* in, size_t got, size_t bytes) {
  size_t want = sizeof(zp_frame_head_t) + bytes;
  ZU_RETURN_ERR_IF(got != want || in->magic != ZP_FRAME_MAGIC, zcclInvalidUsage,
                   "%s: rank %d's message does not belong to this call (%zu bytes, not a %zu-byte framed "
                   "message): the call differs across ranks (collective, count, datatype, compression, or "
                   "ZCCL_CHECK_CALLS)",
                   what, src, got, want);
  if (memcmp(in, mine, sizeof *mine) == 0) return zcclSuccess;
  char why[400];
  zp_sig_t m = zp_frame_sig(mine), theirs = zp_frame_sig(in);
  if (!zp_sig_differs(&m, &theirs, ctx->rank, src, what, why, sizeof why))
    snprintf(why, sizeof why, "%s: the call's compression setting (eb or minBytes) differs between rank %d and "
             "rank %d", what, ctx->rank, src);
  return ZU_ERROR(zcclInvalidUsage, "%s", why);
}
