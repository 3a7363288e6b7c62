/* The CUDA codec's split of the stream codec, run on the host: the per-block
 * steps of zd_cuda_codec_blocks.h (and zc_block_span) in the order the
 * kernels run them, with what the kernels' scans and look-back compute
 * (entering integers, last ordinary integers, block and chunk offsets)
 * worked out block after block. Its streams, values and homomorphic results
 * must be the CPU codec's bit for bit, its failures the CPU's failures:
 * on synthetic and real data, NaN payloads (signalling, negative),
 * infinities, fill values, full-width deltas, crafted integer views,
 * corrupted and truncated streams, tight output room. The kernels
 * themselves run in test/gpu/test_gpu_codec.c, on a machine with a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "zc_simd.h"
#include "zc_szp.h"
#include "zccl_data.h"
#include "zd_cuda_codec_blocks.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) { return test_xorshift(&rng_state); }
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- the kernels' algorithm, sequentially ------------------------------------- */

/* zd_finish's rule (the CPU's): room for a worst-case block at the start of
 * the stream's last block. */
static int room_ok(uint64_t at, uint32_t last, uint64_t cap, int esize) {
  return at + last <= cap && cap - (at + last) >= (uint64_t)ZD_EMIT_MAX(esize);
}

/* The blocks of one result chunk, from their integer views (compression's
 * quantized blocks, the hop's combined ones) into chunk[0 ..): what
 * zd_emit_round does over rounds. Returns the chunk's bytes, -1 on a range
 * error; *last the offset of its last block. */
typedef struct {
  int have_prev;
  int64_t prev, base;
  uint64_t bytes;
  uint32_t last;
  int err;
} emu_chunk_t;

static void emu_begin(emu_chunk_t* e) {
  memset(e, 0, sizeof *e);
  e->bytes = 8;
}

static void emu_block(emu_chunk_t* e, const zd_bview_t* v, int fill, int esize, uint8_t* chunk, int is_last) {
  int64_t fst = 0, lst = 0;
  int has = zd_block_ends(v, &fst, &lst);
  if (has && !e->have_prev) e->base = fst;
  zc_block_t b;
  uint32_t pad;
  if (zd_block_deltas(v, e->have_prev, e->prev, &b, &pad) != 0) e->err = 1;
  uint8_t enc[ZD_EMIT_MAX(8)];
  int n = zd_block_emit(&b, pad, fill, v, esize, enc);
  CHECK(n <= ZD_EMIT_MAX(esize));
  if (is_last) e->last = (uint32_t)e->bytes;
  memcpy(chunk + e->bytes, enc, (size_t)n);
  e->bytes += (uint64_t)n;
  if (has) {
    e->have_prev = 1;
    e->prev = lst;
  }
}

static int emu_compress(const zc_params_t* p, const void* in, size_t count, uint8_t* out, size_t cap, size_t* size) {
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  int f64 = p->dtype == zcclFloat64, esize = f64 ? 8 : 4;
  uint64_t nchunks = (count + (1ull << lg) - 1) >> lg, head = ZC_HEADER_BYTES + 4 * nchunks;
  *size = 0;
  if (cap < head) return -1;
  zd_header_write(out, f64, count, p->eb, p->has_fill, p->fill, lg, (uint32_t)nchunks, 0);
  if (nchunks == 0) {
    *size = head;
    return 0;
  }
  zc_grid_t g;
  zc_grid_init(p->eb, &g);
  uint8_t* chunk = malloc(zc_chunks_bound(count, p->dtype, lg, 0, 1) + ZD_EMIT_MAX(8));
  uint64_t at = head;
  int ok = 1;
  for (uint64_t c = 0; c < nchunks; c++) {
    uint64_t first = c << lg;
    uint32_t n = count - first < (1ull << lg) ? (uint32_t)(count - first) : 1u << lg;
    uint32_t nb = (n + 31) / 32;
    emu_chunk_t e;
    emu_begin(&e);
    for (uint32_t blk = 0; blk < nb; blk++) {
      int nv = n - blk * 32 < 32 ? (int)(n - blk * 32) : 32;
      zd_bview_t v;
      if (f64)
        zd_quant_f64((const double*)in + first + blk * 32, nv, &g, p->has_fill, p->fill, &v);
      else
        zd_quant_f32((const float*)in + first + blk * 32, nv, &g, p->has_fill, (float)p->fill, &v);
      emu_block(&e, &v, p->has_fill, esize, chunk, blk == nb - 1);
    }
    zd_put_u64(chunk, (uint64_t)e.base);
    if (e.err) ok = 0;
    if (at + e.bytes <= cap && !e.err) {
      zc_put_u32(out + ZC_HEADER_BYTES + 4 * c, (uint32_t)e.bytes);
      memcpy(out + at, chunk, e.bytes);
    }
    if (c == nchunks - 1) ok = ok && room_ok(at, e.last, cap, esize);
    at += e.bytes;
  }
  free(chunk);
  if (ok) *size = at;
  return ok ? 0 : -1;
}

/* One input chunk's blocks as views, the way the kernels parse them (walk,
 * parse with the consistency check, delta sums scanned from the base). */
static int emu_parse_chunk(const uint8_t* chunk, uint32_t bytes, uint32_t n, int fill, int esize, zd_bview_t* views) {
  uint32_t nb = (n + 31) / 32;
  uint32_t* off = malloc((nb + 1) * sizeof *off);
  int rc = zd_walk(chunk, bytes, 8, nb, 1, esize, off);
  uint64_t q = zd_get_u64(chunk);
  for (uint32_t blk = 0; blk < nb && rc == 0; blk++) {
    int nv = n - blk * 32 < 32 ? (int)(n - blk * 32) : 32;
    zc_block_t b;
    const uint8_t* raw;
    int used = zd_block_parse(chunk + off[blk], bytes - off[blk], nv, fill, esize, &b, &raw);
    if (used < 0 || off[blk] + (uint32_t)used != off[blk + 1]) {
      rc = -1;
      break;
    }
    zd_block_track(&b, raw, nv, esize, (int64_t)q, &views[blk]);
    q += zd_block_dsum(&b);
  }
  free(off);
  return rc;
}

static int emu_decompress(const uint8_t* s, uint64_t size, void* out, uint64_t count) {
  zd_hdr_t h;
  if (zd_header_parse(s, size, &h) != 0 || h.count != count) return -1;
  if (h.nchunks == 0) return size == ZC_HEADER_BYTES ? 0 : -1;
  int esize = h.f64 ? 8 : 4;
  uint64_t head = ZC_HEADER_BYTES + 4ull * h.nchunks, body = size - head, off = 0;
  zc_grid_t g;
  zc_grid_init(zc_bits_f64(h.eb_bits), &g);
  zd_bview_t* views = malloc(((size_t)1 << (h.chunk_log2 - 5)) * sizeof *views);
  int rc = 0;
  for (uint64_t c = 0; c < h.nchunks && rc == 0; c++) {
    uint32_t bytes = zc_get_u32(s + ZC_HEADER_BYTES + 4 * c);
    if (bytes < 8 || off + bytes > body || (c == h.nchunks - 1 && off + bytes != body)) {
      rc = -1;
      break;
    }
    uint64_t first = c << h.chunk_log2;
    uint32_t n = h.count - first < (1ull << h.chunk_log2) ? (uint32_t)(h.count - first) : 1u << h.chunk_log2;
    if (emu_parse_chunk(s + head + off, bytes, n, h.has_fill, esize, views) != 0) {
      rc = -1;
      break;
    }
    for (uint32_t blk = 0; blk * 32 < n; blk++) {
      int nv = n - blk * 32 < 32 ? (int)(n - blk * 32) : 32;
      uint64_t y[32];
      zd_block_values(&views[blk], nv, h.f64, &g, h.divisor, h.fill_bits, y);
      for (int i = 0; i < nv; i++) {
        uint64_t at = first + blk * 32 + (uint64_t)i;
        if (esize == 4) {
          uint32_t u = (uint32_t)y[i];
          memcpy((uint8_t*)out + 4 * at, &u, 4);
        } else {
          memcpy((uint8_t*)out + 8 * at, &y[i], 8);
        }
      }
    }
    off += bytes;
  }
  free(views);
  return rc;
}

static int emu_hop(zcclRedOp_t op, const uint8_t* a, uint64_t asz, const uint8_t* b, uint64_t bsz, uint8_t* out,
                   uint64_t cap, size_t* size) {
  zd_hdr_t h, hb;
  *size = 0;
  if (zd_header_parse(a, asz, &h) != 0 || zd_header_parse(b, bsz, &hb) != 0 || !zd_header_compatible(&h, &hb))
    return -1;
  uint64_t head = ZC_HEADER_BYTES + 4ull * h.nchunks;
  if (h.nchunks == 0 && (asz != head || bsz != head)) return -1;
  if (cap < head) return -1;
  memcpy(out, a, ZC_HEADER_BYTES);
  if (h.nchunks == 0) {
    *size = head;
    return 0;
  }
  int esize = h.f64 ? 8 : 4;
  zc_grid_t g;
  zc_grid_init(zc_bits_f64(h.eb_bits), &g);
  uint32_t maxnb = 1u << (h.chunk_log2 - 5);
  zd_bview_t *va = malloc(maxnb * sizeof *va), *vb = malloc(maxnb * sizeof *vb);
  uint8_t* chunk = malloc(zc_chunks_bound(h.count, h.f64 ? zcclFloat64 : zcclFloat32, h.chunk_log2, 0, 1) +
                          ZD_EMIT_MAX(8));
  uint64_t offa = 0, offb = 0, at = head;
  int ok = 1, range = 0, malformed = 0;
  for (uint64_t c = 0; c < h.nchunks; c++) {
    uint32_t na = zc_get_u32(a + ZC_HEADER_BYTES + 4 * c), nb_ = zc_get_u32(b + ZC_HEADER_BYTES + 4 * c);
    int last = c == h.nchunks - 1;
    int cok = na >= 8 && offa + na <= asz - head && (!last || offa + na == asz - head) && nb_ >= 8 &&
              offb + nb_ <= bsz - head && (!last || offb + nb_ == bsz - head);
    uint64_t first = c << h.chunk_log2;
    uint32_t n = h.count - first < (1ull << h.chunk_log2) ? (uint32_t)(h.count - first) : 1u << h.chunk_log2;
    uint32_t nb = (n + 31) / 32;
    emu_chunk_t e;
    emu_begin(&e);
    if (cok) cok = emu_parse_chunk(a + head + offa, na, n, h.has_fill, esize, va) == 0 &&
                   emu_parse_chunk(b + head + offb, nb_, n, h.has_fill, esize, vb) == 0;
    if (cok) {
      for (uint32_t blk = 0; blk < nb; blk++) {
        zd_bview_t vr;
        zd_block_hop(op, h.f64, &g, &va[blk], &vb[blk], &vr);
        emu_block(&e, &vr, h.has_fill, esize, chunk, blk == nb - 1);
      }
      zd_put_u64(chunk, (uint64_t)e.base);
    }
    int err = !cok || e.err;
    if (err) ok = 0;
    malformed |= !cok;
    range |= cok && e.err;
    if (at + e.bytes <= cap && !err) {
      zc_put_u32(out + ZC_HEADER_BYTES + 4 * c, (uint32_t)e.bytes);
      memcpy(out + at, chunk, e.bytes);
    }
    if (last) ok = ok && room_ok(at, e.last, cap, esize);
    at += e.bytes;
    offa += na;
    offb += nb_;
  }
  free(va);
  free(vb);
  free(chunk);
  if (ok) *size = at;
  return ok ? 0 : range && !malformed ? ZD_RC_RANGE : -1; /* ZD_RC_RANGE: the CPU's zcclInvalidUsage */
}

/* ---- checks against the CPU codec ----------------------------------------------- */

static long compared_streams, compared_hops, compared_decodes;

/* zc_compress and the emulation write the same bytes or both fail; also at
 * tight room around the stream's size. Returns the CPU stream (malloc'd). */
static uint8_t* check_compress(const zc_params_t* p, const void* x, size_t n, size_t* size) {
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  size_t cap = zc_compress_bound(n, p->dtype, lg);
  uint8_t *s = malloc(cap), *t = malloc(cap);
  size_t sn = 0, tn = 0;
  CHECK_RES(zc_compress(p, x, n, s, cap, &sn, NULL, NULL), zcclSuccess);
  CHECK(emu_compress(p, x, n, t, cap, &tn) == 0);
  CHECK(sn == tn && memcmp(s, t, sn) == 0);
  if (sn != tn || memcmp(s, t, sn) != 0) {
    size_t k = 0;
    while (k < sn && k < tn && s[k] == t[k]) k++;
    fprintf(stderr, "compress differs: dtype %d n %zu eb %g lg %u: sizes %zu/%zu, first byte %zu\n", p->dtype, n,
            p->eb, lg, sn, tn, k);
  }
  compared_streams++;
  /* Tight room: succeed and fail where the CPU does. */
  size_t esize = p->dtype == zcclFloat32 ? 4 : 8;
  size_t caps[] = {sn - 1, sn, sn + 1, sn + ZD_EMIT_MAX(esize) - 1, sn + ZD_EMIT_MAX(esize), 39, 40};
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
    if (caps[k] > cap || rnd() % 4) continue;
    size_t a = 0, b = 0;
    int cpu = zc_compress(p, x, n, s + 0, caps[k], &a, NULL, NULL) == zcclSuccess;
    int emu = emu_compress(p, x, n, t, caps[k], &b) == 0;
    CHECK(cpu == emu && (!cpu || a == b));
    if (cpu != emu) fprintf(stderr, "room %zu (stream %zu): cpu %d emu %d\n", caps[k], sn, cpu, emu);
  }
  CHECK_RES(zc_compress(p, x, n, s, cap, &sn, NULL, NULL), zcclSuccess);
  free(t);
  *size = sn;
  return s;
}

/* zc_decompress and the emulation: the same values bit for bit, or both fail.
 * Returns whether the CPU succeeded: both failing passes here, so callers
 * whose stream is valid CHECK it. */
static int check_decompress(const uint8_t* s, size_t size, size_t count, size_t esize) {
  uint8_t *y = malloc(count * esize + 8), *z = malloc(count * esize + 8);
  size_t got = 0;
  int cpu = zc_decompress(s, size, y, count, &got, NULL, NULL) == zcclSuccess && got == count;
  int emu = emu_decompress(s, size, z, count) == 0;
  CHECK(cpu == emu);
  if (cpu && emu) CHECK(memcmp(y, z, count * esize) == 0);
  if (cpu != emu) fprintf(stderr, "decompress: cpu %d emu %d (size %zu)\n", cpu, emu, size);
  compared_decodes++;
  free(y);
  free(z);
  return cpu;
}

/* As check_decompress, for zc_hop. */
static int check_hop(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap) {
  uint8_t *r = malloc(cap + 1), *t = malloc(cap + 1);
  size_t rn = 0, tn = 0;
  int cpu = zc_hop(op, a, an, b, bn, r, cap, &rn) == zcclSuccess;
  int emu = emu_hop(op, a, an, b, bn, t, cap, &tn) == 0;
  CHECK(cpu == emu);
  if (cpu && emu) CHECK(rn == tn && memcmp(r, t, rn) == 0);
  if (cpu != emu || (cpu && (rn != tn || memcmp(r, t, rn) != 0))) {
    size_t k = 0;
    while (cpu && emu && k < rn && k < tn && r[k] == t[k]) k++;
    fprintf(stderr, "hop op %d: cpu %d emu %d sizes %zu/%zu first diff %zu\n", (int)op, cpu, emu, rn, tn, k);
  }
  compared_hops++;
  free(r);
  free(t);
  return cpu;
}

/* A hop of valid streams whose result needs a delta of 2^62 or more: the CPU's
 * range error (zcclInvalidUsage), and the kernels' blocks' (ZD_RC_RANGE), not
 * merely some failure. */
static void check_range_error(zcclRedOp_t op, const uint8_t* a, size_t an, const uint8_t* b, size_t bn, size_t cap) {
  uint8_t* t = malloc(cap + 1);
  size_t tn = 0;
  check_hop(op, a, an, b, bn, cap);
  CHECK_RES(zc_hop(op, a, an, b, bn, t, cap, &tn), zcclInvalidUsage);
  CHECK(emu_hop(op, a, an, b, bn, t, cap, &tn) == ZD_RC_RANGE);
  free(t);
}

/* ---- data ------------------------------------------------------------------------ */

static const uint32_t nan32s[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0x7f800001u /* signalling */,
                                  0xff812345u /* negative signalling */, 0x7fffffffu};
static const uint64_t nan64s[] = {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff8000012345678ull,
                                  0x7ff0000000000001ull, 0xfff0000000abcdefull, 0x7fffffffffffffffull};

enum { G_SMOOTH, G_NOISY, G_SPARSE, G_CONST, G_HUGE, G_DENORM, G_NONFINITE, G_FILL, G_STEPS, G_NUM };

static void gen(int kind, int f64, size_t n, double fill, void* x, uint64_t salt) {
  for (size_t i = 0; i < n; i++) {
    double v;
    uint64_t r = rnd();
    switch (kind) {
      case G_SMOOTH: v = 20.0 * sin((double)(i + salt) * 0.001) + 3.0 * cos((double)i * 0.013); break;
      case G_NOISY: v = urand() * 200.0 - 100.0; break;
      case G_SPARSE: v = r % 20 == 0 ? urand() * 10.0 : 0.0; break;
      case G_CONST: v = 4.25; break;
      case G_HUGE: v = (urand() - 0.5) * (f64 ? 1e300 : 6e37) * ((r & 1) ? 1.0 : 1e-30); break;
      case G_DENORM: v = (urand() - 0.5) * (f64 ? 1e-310 : 1e-40); break;
      case G_NONFINITE: v = r % 7 == 0 ? INFINITY : r % 7 == 1 ? -INFINITY : sin((double)i * 0.01); break;
      case G_FILL: v = r % 3 == 0 ? fill : sin((double)i * 0.01); break;
      default: v = (double)((i / 64) % 5) * 1000.0 + (r % 50 == 0 ? 1e9 : 0.0); break;
    }
    if (f64) {
      ((double*)x)[i] = v;
      if (kind == G_NONFINITE && r % 7 == 2) memcpy((double*)x + i, &nan64s[(r >> 8) % 6], 8);
    } else {
      ((float*)x)[i] = (float)v;
      if (kind == G_NONFINITE && r % 7 == 2) memcpy((float*)x + i, &nan32s[(r >> 8) % 6], 4);
    }
  }
}

static void test_header_parse(void) {
  /* zd_header_parse accepts what zc_header_read accepts, as far as the
   * header goes (the index is the kernels' per chunk). */
  float x[100];
  for (int i = 0; i < 100; i++) x[i] = (float)i;
  zc_params_t p = {zcclFloat32, 1e-2, 1, -1.0, 5, 0};
  uint8_t s[4096], t[4096];
  size_t n;
  CHECK_RES(zc_compress(&p, x, 100, s, sizeof s, &n, NULL, NULL), zcclSuccess);
  for (int k = 0; k < 20000; k++) {
    memcpy(t, s, n);
    int flips = 1 + (int)(rnd() % 3);
    for (int f = 0; f < flips; f++) t[rnd() % 44] ^= (uint8_t)(1u << (rnd() % 8));
    if (rnd() % 8 == 0) memcpy(t + 16, &(double){rnd() % 2 ? INFINITY : -0.0}, 8);
    zc_header_t h;
    zd_hdr_t d;
    size_t sz = rnd() % 16 == 0 ? rnd() % 60 : n;
    int cpu = zc_header_read(t, sz, &h) == zcclSuccess;
    int emu = zd_header_parse(t, sz, &d) == 0;
    /* The CPU also checks the index; the header alone must not be
     * stricter, and the checksums' seed must be the CPU's (libxxhash). */
    CHECK(!cpu || emu);
    if (cpu && emu)
      CHECK(d.count == h.count && d.nchunks == h.nchunks && d.chunk_log2 == h.chunk_log2 &&
            d.checksum == h.checksum && d.seed == h.seed);
  }
  /* The compressor's header. */
  zd_header_write(t, 0, 100, 1e-2, 1, -1.0, 5, 4, 0);
  CHECK(memcmp(s, t, ZC_HEADER_BYTES) == 0);
}

/* zc_block_span is zc_block_decode's size, raw values included, wherever
 * the decoder accepts a block (also on random bytes); zc_block_span_window is
 * zc_block_span. */
static void test_span(void) {
  uint8_t buf[ZD_EMIT_MAX(8) + 64];
  for (int t = 0; t < 200000; t++) {
    size_t len = 1 + rnd() % sizeof buf;
    if (t < 100000) {
      for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)rnd();
      if (rnd() % 2) buf[0] = (uint8_t)((buf[0] & 0x3f) % 20 | (buf[0] & 0xc0)); /* plausible widths */
    } else {
      zc_block_t b;
      int fill = (int)(rnd() & 1), w = (int)(rnd() % 63);
      b.xbits = rnd() % 3 == 0 ? (uint32_t)rnd() : 0;
      b.fbits = fill && rnd() % 3 == 0 ? (uint32_t)rnd() & ~b.xbits : 0;
      for (int i = 0; i < 32; i++) {
        int64_t v = w ? (int64_t)(rnd() & ((1ull << w) - 1)) : 0;
        b.d[i] = (((b.xbits | b.fbits) >> i) & 1u) ? 0 : (rnd() & 1 ? -v : v);
      }
      int n = zc_block_encode(&b, 0, fill, buf);
      for (size_t k = (size_t)n; k < sizeof buf; k++) buf[k] = (uint8_t)rnd();
      len = (size_t)n + (rnd() % 2 ? (size_t)__builtin_popcount(b.xbits) * (rnd() % 2 ? 4 : 8) : rnd() % 40);
      if (len > sizeof buf) len = sizeof buf;
    }
    for (int esize = 4; esize <= 8; esize += 4) {
      zc_block_t d;
      int nexc;
      int n = zc_block_decode(buf, len, 1, &d, &nexc);
      int sp = zc_block_span(buf, len, esize);
      if (n >= 0 && (size_t)n + (size_t)nexc * (size_t)esize <= len) CHECK(sp == n + nexc * esize);
      CHECK(sp <= (int)len);
      /* the same from the head's first 12 bytes as words, whatever lies past len */
      CHECK(zc_block_span_window(zc_get_u32(buf), zc_get_u32(buf + 4), zc_get_u32(buf + 8), len, esize) == sp);
    }
  }
}

/* Compression, decompression and hops of generated data, every dtype,
 * chunk size and count edge. */
static void test_synthetic(void) {
  const size_t counts[] = {0, 1, 31, 32, 33, 100, 4095, 4096, 4097, 70000};
  const unsigned lgs[] = {5, 8, 12, 16};
  const double ebs[] = {1e-1, 1e-3, 1e-6};
  for (int f64 = 0; f64 < 2; f64++) {
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    size_t esize = f64 ? 8 : 4;
    for (int kind = 0; kind < G_NUM; kind++) {
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t n = counts[ci];
        unsigned lg = lgs[(ci + (size_t)kind) % 4];
        double eb = ebs[(ci + (size_t)kind * 2) % 3];
        double fill = -1e34;
        int has_fill = kind == G_FILL || kind == G_SPARSE;
        if (kind == G_SPARSE) fill = 0.0; /* fill 0: whole blocks of fill */
        void* x = malloc(n * 8 + 8);
        void* y = malloc(n * 8 + 8);
        gen(kind, f64, n, fill, x, 0);
        gen((kind + 1) % G_NUM == G_FILL ? G_FILL : kind, f64, n, fill, y, 17);
        if (kind == G_NONFINITE) /* NaN and infinities at the same places in both inputs */
          for (size_t i = 0; i < n; i += 5) memcpy((uint8_t*)y + i * esize, (uint8_t*)x + i * esize, esize);
        zc_params_t p = {dt, eb, has_fill, fill, lg, 0};
        size_t an, bn;
        uint8_t* a = check_compress(&p, x, n, &an);
        uint8_t* b = check_compress(&p, y, n, &bn);
        CHECK(check_decompress(a, an, n, esize));
        size_t cap = zc_compress_bound(n, dt, lg);
        CHECK(check_hop(zcclSum, a, an, b, bn, cap));
        CHECK(check_hop(zcclMax, a, an, b, bn, cap));
        CHECK(check_hop(zcclMin, b, bn, a, an, cap));
        if (n > 0 && rnd() % 3 == 0) check_hop(zcclSum, a, an, b, bn, an > 60 ? an - 50 : 40); /* tight room */
        /* AVG's divisor: every decoded value divided, NaN payloads kept. */
        if (n > 0 && (kind == G_NONFINITE || kind == G_SMOOTH)) {
          zc_set_divisor(a, an, 3);
          CHECK(check_decompress(a, an, n, esize));
        }
        free(a);
        free(b);
        free(x);
        free(y);
      }
    }
  }
}

/* NaN against NaN, infinities against each other, in every op: the CPU's
 * x86 results, payloads and signs included. */
static void test_special_pairs(void) {
  const size_t n = 96;
  for (int f64 = 0; f64 < 2; f64++) {
    size_t esize = f64 ? 8 : 4;
    uint8_t *x = malloc(n * 8), *y = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
      const int k = (int)(i % 12);
      double vx = k < 6 ? 1.0 : k == 6 ? INFINITY : k == 7 ? -INFINITY : 2.5;
      double vy = k < 6 ? 2.0 : k == 6 ? -INFINITY : k == 7 ? -INFINITY : 1e30;
      if (f64) {
        memcpy(x + 8 * i, &vx, 8);
        memcpy(y + 8 * i, &vy, 8);
        if (k < 6) memcpy(x + 8 * i, &nan64s[k], 8);
        if (k < 6) memcpy(y + 8 * i, &nan64s[(k + i / 12) % 6], 8);
        if (k == 9) memcpy(y + 8 * i, &nan64s[i % 6], 8);
      } else {
        float fx = (float)vx, fy = (float)vy;
        memcpy(x + 4 * i, &fx, 4);
        memcpy(y + 4 * i, &fy, 4);
        if (k < 6) memcpy(x + 4 * i, &nan32s[k], 4);
        if (k < 6) memcpy(y + 4 * i, &nan32s[(k + i / 12) % 6], 4);
        if (k == 9) memcpy(y + 4 * i, &nan32s[i % 6], 4);
      }
    }
    zc_params_t p = {f64 ? zcclFloat64 : zcclFloat32, 1e-3, 0, 0, 5, 0};
    size_t an, bn;
    uint8_t* a = check_compress(&p, x, n, &an);
    uint8_t* b = check_compress(&p, y, n, &bn);
    size_t cap = zc_compress_bound(n, p.dtype, 5);
    for (int op = 0; op < 4; op++) {
      if (op == zcclProd) continue;
      CHECK(check_hop((zcclRedOp_t)op, a, an, b, bn, cap));
      CHECK(check_hop((zcclRedOp_t)op, b, bn, a, an, cap));
    }
    CHECK(check_decompress(a, an, n, esize));
    zc_set_divisor(a, an, 7);
    CHECK(check_decompress(a, an, n, esize));
    free(a);
    free(b);
    free(x);
    free(y);
  }
}

/* Integer views the quantizer never makes: full-width deltas (W = 62),
 * valid streams whose sum needs deltas past the limit (a range error in the
 * hop), chunks whose first blocks hold no ordinary value (the base comes
 * from a later block), chunks with none at all (base 0), short all-fill
 * last blocks. */
static void test_integer_views(void) {
  const size_t n = 3 * 256 + 40;
  int64_t* q = malloc(n * 8);
  uint8_t* kind = malloc(n);
  double* raw = malloc(n * 8);
  for (int variant = 0; variant < 6; variant++) {
    for (size_t i = 0; i < n; i++) {
      size_t c = i / 256, j = i % 256;
      raw[i] = 0;
      kind[i] = ZC_KIND_ORDINARY;
      q[i] = (int64_t)(rnd() % 1000);
      if (variant == 0) q[i] = (i & 1) ? ((int64_t)1 << 61) - 1 : -((int64_t)1 << 61); /* deltas 2^62 - 1 */
      if (variant == 1) q[i] = (i % 7 == 3) ? ((int64_t)1 << 62) - 1 : 0; /* encodable; a + a/2 is not */
      if (variant == 2 && j < 100) kind[i] = (j % 3) ? ZC_KIND_FILL : ZC_KIND_EXCEPTION;
      if (variant == 3 && c == 1) kind[i] = (j % 2) ? ZC_KIND_FILL : ZC_KIND_EXCEPTION;
      if (variant == 4 && i >= n - 40) kind[i] = ZC_KIND_FILL;
      if (variant == 5) q[i] = (int64_t)(rnd() % 2 ? rnd() : -rnd()) >> 2;
      if (kind[i] == ZC_KIND_EXCEPTION) raw[i] = (double)(float)(urand() * 10);
    }
    zc_header_t h;
    memset(&h, 0, sizeof h);
    h.dtype = zcclFloat64;
    h.count = n;
    h.eb = 1e-3;
    h.has_fill = 1;
    h.fill = 9.5;
    h.chunk_log2 = 8;
    h.divisor = 1;
    size_t cap = zc_compress_bound(n, zcclFloat64, 8) * 2, an = 0, bn = 0;
    uint8_t *a = malloc(cap), *b = malloc(cap);
    zcclResult_t ra = zc_encode_ints(&h, q, kind, raw, a, cap, &an);
    for (size_t i = 0; i < n; i++) q[i] = variant == 1 ? q[i] / 2 : -q[i] / 3;
    zcclResult_t rb = zc_encode_ints(&h, q, kind, raw, b, cap, &bn);
    CHECK(ra == zcclSuccess && rb == zcclSuccess);
    if (ra == zcclSuccess && rb == zcclSuccess) {
      CHECK(check_decompress(a, an, n, 8));
      CHECK(check_decompress(b, bn, n, 8));
      for (int k = 0; k < 3; k++) {
        /* a + b: |a + b| <= 4/3 |a| except variant 1's; a + a doubles deltas
         * of 2^62 - 1 (variants 0, 1); variant 5's random ones may or may not fit. */
        if (variant == 1) check_range_error(zcclSum, a, an, b, bn, cap);
        else CHECK(check_hop(zcclSum, a, an, b, bn, cap));
        if (variant <= 1) check_range_error(zcclSum, a, an, a, an, cap);
        else if (variant == 5) check_hop(zcclSum, a, an, a, an, cap);
        else CHECK(check_hop(zcclSum, a, an, a, an, cap));
        CHECK(check_hop(zcclMax, a, an, b, bn, cap));
        CHECK(check_hop(zcclMin, a, an, b, bn, cap));
      }
    }
    free(a);
    free(b);
  }
  /* A chain of sums of full-width values ends in the CPU's range error. */
  for (size_t i = 0; i < n; i++) {
    q[i] = (i & 1) ? ((int64_t)1 << 60) : -((int64_t)1 << 60);
    kind[i] = ZC_KIND_ORDINARY;
  }
  zc_header_t h = {zcclFloat64, n, 1e-3, 0, 0, 8, 0, 1, 0, 0, 0, NULL, NULL};
  size_t cap = zc_compress_bound(n, zcclFloat64, 8) * 2, an, tn;
  uint8_t *a = malloc(cap), *t = malloc(cap);
  CHECK_RES(zc_encode_ints(&h, q, kind, raw, a, cap, &an), zcclSuccess);
  int k = 0;
  for (; k < 4; k++) {
    check_hop(zcclSum, a, an, a, an, cap);
    if (zc_hop(zcclSum, a, an, a, an, t, cap, &tn) != zcclSuccess) break;
    memcpy(a, t, tn);
    an = tn;
  }
  CHECK(k < 4); /* it must end in the range error, not just stop */
  check_range_error(zcclSum, a, an, a, an, cap);
  free(a);
  free(t);
  free(q);
  free(kind);
  free(raw);
}

/* Corrupted and truncated streams: decoded, or rejected, as the CPU does. */
/* The blocks in registers (zd_lay32, zd_write32, zd_parse32, zd_dsum32,
 * zd_values32, zd_values64) against the 64-bit functions: the same bytes
 * written; every block zd_parse32 takes is zd_block_parse's with the same
 * deltas, bitmaps and raw values, and it takes every block at most 32 bits
 * wide that zd_block_parse takes (padding neither exception nor fill);
 * the same values decoded. */
static void test_regs32(void) {
  uint8_t buf[ZD_EMIT_MAX(8) + 64], enc[ZD_EMIT_MAX(8) + 64];
  long taken = 0, wide = 0;
  for (int t = 0; t < 200000; t++) {
    int fill = (int)(rnd() & 1), nv = rnd() % 4 ? 32 : 1 + (int)(rnd() % 32), w = (int)(rnd() % 35);
    uint32_t valid = zd_valid_mask(nv);
    zc_block_t b;
    b.xbits = rnd() % 3 == 0 ? (uint32_t)rnd() & valid : 0;
    b.fbits = fill && rnd() % 3 == 0 ? (uint32_t)rnd() & valid & ~b.xbits : 0;
    if (fill && rnd() % 16 == 0) { /* all fill */
      b.xbits = 0;
      b.fbits = valid;
    }
    uint32_t mag[32], neg = 0, pos = 0;
    for (int i = 0; i < 32; i++) {
      uint64_t v = w ? rnd() & ((1ull << w) - 1) : 0;
      if (w == 32 && rnd() % 8 == 0) v = 0xffffffffull;
      int held = ((b.xbits | b.fbits | ~valid) >> i) & 1u;
      b.d[i] = held ? 0 : (rnd() & 1 ? -(int64_t)v : (int64_t)v);
      mag[i] = held ? 0 : (uint32_t)v;
      neg |= (uint32_t)(b.d[i] < 0) << i;
      pos |= (uint32_t)(b.d[i] > 0) << i;
    }
    int n = zc_block_encode(&b, ~valid, fill, buf);
    if (w <= 32) { /* the same bytes from the registers' form */
      zd_lay32_t L;
      zd_lay32(mag, neg, pos, b.xbits, b.fbits, ~valid, fill, &L);
      CHECK(L.bytes == n);
      zd_write32(mag, &L, enc);
      CHECK(memcmp(enc, buf, (size_t)n) == 0);
    }
    int nexc = __builtin_popcount(b.xbits), esize = rnd() % 2 ? 4 : 8;
    for (int k = 0; k < nexc * esize / 4; k++) zc_put_u32(buf + n + 4 * k, (uint32_t)rnd());
    size_t len = (size_t)n + (size_t)esize * (size_t)nexc;
    if (rnd() % 4 == 0) { /* damaged: a byte or the length */
      if (rnd() % 2)
        buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
      else
        len = rnd() % (len + 1);
    }
    uint32_t m[32], ng, xb, fb;
    const uint8_t *r32 = NULL, *r64 = NULL;
    zc_block_t g;
    int u32 = zd_parse32(buf, len, nv, fill, esize, m, &ng, &xb, &fb, &r32);
    int u64 = zd_block_parse(buf, len, nv, fill, esize, &g, &r64);
    if (u32 >= 0) {
      taken++;
      CHECK(u64 == u32 && r64 == r32 && g.xbits == xb && g.fbits == fb);
      int same = 1;
      for (int i = 0; i < 32; i++) same &= g.d[i] == (((ng >> i) & 1u) ? -(int64_t)m[i] : (int64_t)m[i]);
      CHECK(same);
      CHECK(zd_dsum32(m, ng) == zd_block_dsum(&g));
      /* decoded values, with and without a divisor */
      zc_grid_t gr;
      zc_grid_init(rnd() % 2 ? 1e-3 : 0.37, &gr);
      uint32_t div = rnd() % 3 ? 1 : 1 + (uint32_t)(rnd() % 7);
      uint64_t fill_bits = zc_f64_bits(rnd() % 2 ? -9.96921e36 : 0.5);
      int64_t q = (int64_t)(rnd() % 2 ? rnd() : rnd() % 100000) >> (rnd() % 40);
      zd_bview_t v;
      uint64_t y[32];
      uint32_t lo[32], hi[32];
      zd_block_track(&g, r64, nv, esize, q, &v);
      zd_block_values(&v, nv, esize == 8, &gr, div, fill_bits, y);
      if (esize == 4) {
        zd_values32(m, ng, xb, fb, r32, nv, &gr, div, fill_bits, q, lo);
        for (int i = 0; i < nv; i++) same &= (uint32_t)y[i] == lo[i];
      } else {
        zd_values64(m, ng, xb, fb, r32, nv, &gr, div, fill_bits, q, lo, hi);
        for (int i = 0; i < nv; i++) same &= y[i] == ((uint64_t)hi[i] << 32 | lo[i]);
      }
      CHECK(same);
    } else if (u64 >= 0) {
      int fits = 1;
      for (int i = 0; i < 32; i++) fits &= g.d[i] > -((int64_t)1 << 32) && g.d[i] < ((int64_t)1 << 32);
      if (((g.xbits | g.fbits) & ~valid) == 0 || (buf[0] & 63) == ZC_W_ALLFILL) CHECK(!fits);
      wide++;
    }
  }
  CHECK(taken > 100000 && wide > 1000);
}

static void test_corrupt(void) {
  for (int f64 = 0; f64 < 2; f64++) {
    const size_t n = 2000;
    size_t esize = f64 ? 8 : 4;
    void *x = malloc(n * 8), *y = malloc(n * 8);
    gen(G_NONFINITE, f64, n, 0, x, 0);
    gen(G_FILL, f64, n, 0.5, y, 3);
    zc_params_t p = {f64 ? zcclFloat64 : zcclFloat32, 1e-3, 1, 0.5, 6, 0};
    size_t an, bn;
    uint8_t* a = check_compress(&p, x, n, &an);
    uint8_t* b = check_compress(&p, y, n, &bn);
    uint8_t* t = malloc(an + 64);
    size_t cap = zc_compress_bound(n, p.dtype, 6);
    for (int k = 0; k < 3000; k++) {
      memcpy(t, a, an);
      size_t tn = an;
      int how = (int)(rnd() % 4);
      if (how == 0) {
        tn = rnd() % an; /* truncated */
      } else if (how == 1) {
        t[rnd() % an] ^= (uint8_t)(1u << (rnd() % 8));
      } else if (how == 2) {
        t[ZC_HEADER_BYTES + rnd() % (an - ZC_HEADER_BYTES)] = (uint8_t)rnd();
      } else {
        for (int f = 0; f < 4; f++) t[rnd() % an] ^= (uint8_t)rnd();
      }
      check_decompress(t, tn, n, esize);
      if (k % 3 == 0) check_hop(zcclSum, t, tn, b, bn, cap);
      if (k % 3 == 1) check_hop(zcclMax, b, bn, t, tn, cap);
    }
    free(a);
    free(b);
    free(t);
    free(x);
    free(y);
  }
}

/* A real field with its _FillValue land points, both dtypes. */
static void test_real(void) {
  const char* var = "levitus_climatology.cdf:TEMP";
  for (int f64 = 0; f64 < 2; f64++) {
    zccl_data_t d;
    char err[600];
    if (zccl_data_load(var, f64, &d, err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      CHECK(0);
      return;
    }
    size_t n = d.count - 1000 > 300000 ? 300000 : d.count - 1000, esize = f64 ? 8 : 4;
    zcclDataType_t dt = f64 ? zcclFloat64 : zcclFloat32;
    for (double eb = 1e-1; eb > 1e-6; eb /= 100) {
      zc_params_t p = {dt, eb, 1, d.fill, f64 ? 12 : 10, 0};
      size_t an, bn;
      uint8_t* a = check_compress(&p, d.values, n, &an);
      uint8_t* b = check_compress(&p, (uint8_t*)d.values + 1000 * esize, n, &bn);
      CHECK(check_decompress(a, an, n, esize));
      CHECK(check_hop(zcclSum, a, an, b, bn, zc_compress_bound(n, dt, p.chunk_log2)));
      CHECK(check_hop(zcclMin, a, an, b, bn, zc_compress_bound(n, dt, p.chunk_log2)));
      free(a);
      free(b);
    }
    zccl_data_free(&d);
  }
}

int main(void) {
  test_header_parse();
  test_span();
  test_regs32();
  test_special_pairs();
  test_integer_views();
  test_synthetic();
  test_corrupt();
  test_real();
  printf("compared %ld streams, %ld decodes, %ld hops with the CPU codec (kernels: %s)\n", compared_streams,
         compared_decodes, compared_hops, zc_simd_name(zc_simd_get()));
  TEST_DONE();
}
