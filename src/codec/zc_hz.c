/* Homomorphic operations (hZCCL): SUM, MAX and MIN of two streams on their
 * integer tracks, chunk by chunk, without reconstructing ordinary values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zc_codec.h"
#include "zc_szp_internal.h"
#include "zu_error.h"

static int zc_compatible(const zc_header_t* a, const zc_header_t* b) {
  return a->dtype == b->dtype && a->count == b->count && memcmp(&a->eb, &b->eb, 8) == 0 &&
         a->chunk_log2 == b->chunk_log2 && a->has_fill == b->has_fill &&
         (!a->has_fill || memcmp(&a->fill, &b->fill, 8) == 0) && a->divisor == b->divisor;
}

/* The dtype's a op b for exception positions (zc_exc_op_f32/_f64, shared
 * with the CUDA blocks: the same bytes from every compiler and device). */
static double zc_value_op(zcclRedOp_t op, zcclDataType_t dtype, double a, double b) {
  return dtype == zcclFloat32 ? (double)zc_bits_f32(zc_exc_op_f32(op, (float)a, (float)b))
                              : zc_bits_f64(zc_exc_op_f64(op, a, b));
}

/* The result's integer view at n positions: fill in either input is fill,
 * an exception in either is the dtype's value op (IEEE), else the integer
 * op (SUM wraps as the format's 64-bit track does). */
static void zc_hop_combine(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const zc_ivals_t* va,
                           const zc_ivals_t* vb, int n, zc_ivals_t* vr) {
  for (int i = 0; i < n; i++) {
    int ka = va->kind[i], kb = vb->kind[i];
    if (ka == ZC_KIND_FILL || kb == ZC_KIND_FILL) {
      vr->kind[i] = ZC_KIND_FILL;
    } else if (ka == ZC_KIND_EXCEPTION || kb == ZC_KIND_EXCEPTION) {
      double x = ka == ZC_KIND_EXCEPTION ? va->raw[i]
                 : h->dtype == zcclFloat32 ? (double)zc_dequant_f32(va->q[i], g)
                                           : zc_dequant_f64(va->q[i], g);
      double y = kb == ZC_KIND_EXCEPTION ? vb->raw[i]
                 : h->dtype == zcclFloat32 ? (double)zc_dequant_f32(vb->q[i], g)
                                           : zc_dequant_f64(vb->q[i], g);
      vr->kind[i] = ZC_KIND_EXCEPTION;
      vr->raw[i] = zc_value_op(op, h->dtype, x, y);
    } else {
      int64_t x = va->q[i], y = vb->q[i];
      vr->kind[i] = ZC_KIND_ORDINARY;
      vr->q[i] = op == zcclSum ? (int64_t)((uint64_t)x + (uint64_t)y)
                 : op == zcclMax ? (x > y ? x : y)
                                 : (x < y ? x : y);
    }
  }
}

int zc_hop_block_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa, zc_parse_t* pb,
                        zc_emit_t* e) {
  zc_ivals_t va, vb, vr;
  int nva, nvb;
  if (zc_parse_block(pa, &va, &nva) != 0 || zc_parse_block(pb, &vb, &nvb) != 0) return ZC_RC_MALFORMED;
  zc_hop_combine(op, h, g, &va, &vb, nva, &vr);
  return zc_emit_block(e, &vr, nva);
}

int zc_chunk_hop_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, zc_parse_t* pa,
                        zc_parse_t* pb, zc_emit_t* e) {
  while (pa->left > 0) {
    int rc = zc_hop_block_scalar(op, h, g, pa, pb, e);
    if (rc != 0) return rc;
  }
  return ZC_RC_OK;
}

zcclResult_t zc_hop_begin(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                          size_t cap, zc_header_t* ha, zc_header_t* hb, size_t* head) {
  ZU_RETURN_ERR_IF(op != zcclSum && op != zcclMax && op != zcclMin, zcclInvalidArgument,
                   "zc_hop: op %d is not sum, max or min", (int)op);
  ZU_RETURN_ERR_IF(out == NULL || head == NULL, zcclInvalidArgument, "zc_hop: NULL argument");
  ZU_CHECK(zc_header_read(a, a_size, ha));
  ZU_CHECK(zc_header_read(b, b_size, hb));
  ZU_RETURN_ERR_IF(!zc_compatible(ha, hb), zcclInvalidArgument,
                   "zc_hop: streams differ in dtype, count, error bound, chunk size, fill or divisor");
  *head = ZC_HEADER_BYTES + (size_t)ha->nchunks * 4;
  ZU_RETURN_ERR_IF(cap < *head, zcclInvalidArgument, "zc_hop: output buffer too small");
  ZU_RETURN_ERR_IF((const uint8_t*)out < (const uint8_t*)a + a_size && (const uint8_t*)a < (uint8_t*)out + cap,
                   zcclInvalidArgument, "zc_hop: out overlaps input a");
  ZU_RETURN_ERR_IF((const uint8_t*)out < (const uint8_t*)b + b_size && (const uint8_t*)b < (uint8_t*)out + cap,
                   zcclInvalidArgument, "zc_hop: out overlaps input b");
  memcpy(out, a, ZC_HEADER_BYTES);
  return zcclSuccess;
}

zcclResult_t zc_hop_chunks(zcclRedOp_t op, const zc_header_t* ha, const zc_header_t* hb, uint32_t c0, uint32_t c1,
                           const uint8_t* ca, const uint8_t* cb, void* out, size_t cap, uint8_t* index,
                           size_t* bytes) {
  zc_grid_t g;
  zc_grid_init(ha->eb, &g);
  uint8_t* o = out;
  size_t at = 0, chunk = (size_t)1 << ha->chunk_log2;
  for (uint32_t c = c0; c < c1; c++) {
    uint32_t sa = zc_get_u32(ha->index + 4 * (size_t)c), sb = zc_get_u32(hb->index + 4 * (size_t)c), na, nb;
    size_t first = (size_t)c << ha->chunk_log2;
    size_t n = ha->count - first < chunk ? ha->count - first : chunk;
    /* Inputs verified first: a corrupt chunk must not pass into a result
     * that carries a valid checksum. */
    ZU_CHECK(zc_chunk_verify(ha, c, ca, sa, &na, "zc_hop: input a"));
    ZU_CHECK(zc_chunk_verify(hb, c, cb, sb, &nb, "zc_hop: input b"));
    zc_parse_t pa, pb;
    if (zc_parse_begin(&pa, ca, na, n, ha->dtype, ha->has_fill) != 0 ||
        zc_parse_begin(&pb, cb, nb, n, hb->dtype, hb->has_fill) != 0)
      return ZU_ERROR(zcclInvalidArgument, "zc_hop: chunk %u is truncated", c);
    if (cap - at < 8) return zc_emit_error(ZC_RC_SPACE, "zc_hop");
    zc_emit_t e;
    zc_emit_begin(&e, o + at, cap - at, ha->dtype, ha->has_fill);
    int rc = zc_kernels()->hop(op, ha, &g, &pa, &pb, &e);
    if (rc != 0) return zc_emit_error(rc, "zc_hop");
    if (pa.o != na || pb.o != nb) return ZU_ERROR(zcclInvalidArgument, "zc_hop: chunk %u has trailing bytes", c);
    /* The result's header is a's (zc_hop_begin), so is its seed. */
    size_t n_bytes = zc_chunk_seal(o + at, zc_emit_end(&e), cap - at, ha->checksum, ha->seed, c);
    if (n_bytes == 0) return zc_emit_error(ZC_RC_SPACE, "zc_hop");
    zc_put_u32(index + 4 * (size_t)(c - c0), (uint32_t)n_bytes);
    at += n_bytes;
    ca += sa;
    cb += sb;
  }
  *bytes = at;
  return zcclSuccess;
}

zcclResult_t zc_hop(zcclRedOp_t op, const void* a, size_t a_size, const void* b, size_t b_size, void* out,
                    size_t cap, size_t* size) {
  zc_header_t ha, hb;
  size_t head, bytes;
  ZU_RETURN_ERR_IF(size == NULL, zcclInvalidArgument, "zc_hop: NULL argument");
  if (out != NULL && (out == a || out == b)) {
    /* In place: a result chunk may be larger than the input chunk it
     * replaces (sums grow a bit) and would overtake unread input, so the
     * result is built aside and copied over. */
    void* aside = malloc(cap);
    ZU_RETURN_ERR_IF(aside == NULL, zcclSystemError, "zc_hop: out of memory for the in-place result");
    zcclResult_t res = zc_hop(op, a, a_size, b, b_size, aside, cap, size);
    if (res == zcclSuccess) memcpy(out, aside, *size);
    free(aside);
    return res;
  }
  ZU_CHECK(zc_hop_begin(op, a, a_size, b, b_size, out, cap, &ha, &hb, &head));
  uint8_t* o = out;
  ZU_CHECK(zc_hop_chunks(op, &ha, &hb, 0, ha.nchunks, ha.chunks, hb.chunks, o + head, cap - head,
                         o + ZC_HEADER_BYTES, &bytes));
  *size = head + bytes;
  return zcclSuccess;
}

/* ---- values with a stream ----------------------------------------------------
 * zc_hop(op, zc_compress(p, in), b) in one pass: each block of values is
 * classified as compression would (zc_classify) and combined with b's block
 * in the integer view, so the values' own stream is never encoded nor
 * parsed again. The homomorphic ring's step (compress this rank's piece,
 * add it to the arriving partial result) is exactly this. */

int zc_hop_values_block_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, int nv,
                               zc_parse_t* pb, zc_emit_t* e) {
  zc_ivals_t va, vb, vr;
  int nvb;
  if (zc_parse_block(pb, &vb, &nvb) != 0 || nvb != nv) return ZC_RC_MALFORMED;
  zc_classify(in, nv, h->dtype, g, h->has_fill, h->fill, &va);
  zc_hop_combine(op, h, g, &va, &vb, nv, &vr);
  return zc_emit_block(e, &vr, nv);
}

int zc_chunk_hop_values_scalar(zcclRedOp_t op, const zc_header_t* h, const zc_grid_t* g, const void* in, size_t n,
                               zc_parse_t* pb, zc_emit_t* e) {
  size_t esize = zc_dtype_bytes(h->dtype);
  for (size_t b = 0; b < n; b += ZC_BLOCK) {
    int nv = n - b < ZC_BLOCK ? (int)(n - b) : ZC_BLOCK;
    int rc = zc_hop_values_block_scalar(op, h, g, (const uint8_t*)in + b * esize, nv, pb, e);
    if (rc != 0) return rc;
  }
  return ZC_RC_OK;
}

zcclResult_t zc_hop_values_begin(zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count, const void* b,
                                 size_t b_size, void* out, size_t cap, zc_header_t* h, zc_header_t* hb,
                                 size_t* head) {
  ZU_RETURN_ERR_IF(op != zcclSum && op != zcclMax && op != zcclMin, zcclInvalidArgument,
                   "zc_hop_values: op %d is not sum, max or min", (int)op);
  ZU_RETURN_ERR_IF(p == NULL || out == NULL || head == NULL || (in == NULL && count > 0), zcclInvalidArgument,
                   "zc_hop_values: NULL argument");
  ZU_CHECK(zc_header_read(b, b_size, hb));
  size_t vbytes = count * zc_dtype_bytes(p->dtype);
  ZU_RETURN_ERR_IF((const uint8_t*)out < (const uint8_t*)b + b_size && (const uint8_t*)b < (uint8_t*)out + cap,
                   zcclInvalidArgument, "zc_hop_values: out overlaps the stream");
  ZU_RETURN_ERR_IF(count && (const uint8_t*)out < (const uint8_t*)in + vbytes && (const uint8_t*)in < (uint8_t*)out + cap,
                   zcclInvalidArgument, "zc_hop_values: out overlaps the values");
  /* The header compression writes; its fields are what the hop compares. */
  ZU_CHECK(zc_compress_begin(p, count, out, cap, head));
  memset(h, 0, sizeof *h);
  h->dtype = p->dtype;
  h->count = count;
  h->eb = p->eb;
  h->has_fill = p->has_fill != 0;
  h->fill = p->has_fill ? p->fill : 0.0;
  h->chunk_log2 = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  h->nchunks = (uint32_t)((*head - ZC_HEADER_BYTES) / 4);
  h->divisor = 1;
  h->checksum = p->checksum != 0;
  h->seed = h->checksum ? zc_header_seed(out) : 0; /* of the header just written */
  ZU_RETURN_ERR_IF(!zc_compatible(h, hb), zcclInvalidArgument,
                   "zc_hop_values: the stream differs from the values' compression in dtype, count, error bound, "
                   "chunk size, fill or divisor");
  return zcclSuccess;
}

zcclResult_t zc_hop_values_chunks(zcclRedOp_t op, const zc_header_t* h, const zc_header_t* hb, uint32_t c0,
                                  uint32_t c1, const void* in, const uint8_t* cb, void* out, size_t cap,
                                  uint8_t* index, size_t* bytes, zc_progress_fn progress, void* arg) {
  zc_grid_t g;
  zc_grid_init(h->eb, &g);
  const zc_kernels_t* k = zc_kernels();
  uint8_t* o = out;
  size_t at = 0, chunk = (size_t)1 << h->chunk_log2, esize = zc_dtype_bytes(h->dtype);
  for (uint32_t c = c0; c < c1; c++) {
    uint32_t sb = zc_get_u32(hb->index + 4 * (size_t)c), nb;
    size_t first = (size_t)c << h->chunk_log2;
    size_t n = h->count - first < chunk ? h->count - first : chunk;
    ZU_CHECK(zc_chunk_verify(hb, c, cb, sb, &nb, "zc_hop_values: the stream"));
    zc_parse_t pb;
    if (zc_parse_begin(&pb, cb, nb, n, hb->dtype, hb->has_fill) != 0)
      return ZU_ERROR(zcclInvalidArgument, "zc_hop_values: chunk %u is truncated", c);
    if (cap - at < 8) return zc_emit_error(ZC_RC_SPACE, "zc_hop_values");
    zc_emit_t e;
    zc_emit_begin(&e, o + at, cap - at, h->dtype, h->has_fill);
    int rc = k->hop_values(op, h, &g, (const uint8_t*)in + first * esize, n, &pb, &e);
    if (rc != 0) return zc_emit_error(rc, "zc_hop_values");
    if (pb.o != nb) return ZU_ERROR(zcclInvalidArgument, "zc_hop_values: chunk %u has trailing bytes", c);
    size_t n_bytes = zc_chunk_seal(o + at, zc_emit_end(&e), cap - at, h->checksum, h->seed, c);
    if (n_bytes == 0) return zc_emit_error(ZC_RC_SPACE, "zc_hop_values");
    zc_put_u32(index + 4 * (size_t)(c - c0), (uint32_t)n_bytes);
    at += n_bytes;
    cb += sb;
    if (progress) progress(arg, c + 1, h->nchunks);
  }
  *bytes = at;
  return zcclSuccess;
}

zcclResult_t zc_hop_values(zcclRedOp_t op, const zc_params_t* p, const void* in, size_t count, const void* b,
                           size_t b_size, void* out, size_t cap, size_t* size) {
  ZU_RETURN_ERR_IF(size == NULL, zcclInvalidArgument, "zc_hop_values: NULL argument");
  if (out != NULL && out == b) { /* in place: aside, then over b (as zc_hop) */
    void* aside = malloc(cap);
    ZU_RETURN_ERR_IF(aside == NULL, zcclSystemError, "zc_hop_values: out of memory for the in-place result");
    zcclResult_t res = zc_hop_values(op, p, in, count, b, b_size, aside, cap, size);
    if (res == zcclSuccess) memcpy(out, aside, *size);
    free(aside);
    return res;
  }
  zc_header_t h, hb;
  size_t head, bytes;
  ZU_CHECK(zc_hop_values_begin(op, p, in, count, b, b_size, out, cap, &h, &hb, &head));
  uint8_t* o = out;
  ZU_CHECK(zc_hop_values_chunks(op, &h, &hb, 0, h.nchunks, in, hb.chunks, o + head, cap - head,
                                o + ZC_HEADER_BYTES, &bytes, NULL, NULL));
  *size = head + bytes;
  return zcclSuccess;
}

/* hz in the codec table (zc_codec.h): szp's streams, reduced as they are. */
const zc_codec_ops_t zc_hz_ops = {zc_szp_bound, zc_szp_encode, zc_szp_decode, zc_hop, 1};
