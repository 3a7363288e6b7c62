/* The stream codec (docs/format.md) as CUDA kernels: compress, decompress and
 * the homomorphic SUM/MAX/MIN, each one kernel launch that writes the bytes
 * (or values) zc_compress, zc_decompress and zc_hop write. The per-block work
 * is zc_szp_block.h's and zd_cuda_codec_blocks.h's functions, shared with the
 * host; this file adds only how blocks and chunks are placed.
 *
 * Placement. A CTA does one chunk at a time, one thread per 32-value block
 * (a chunk of more than ZD_T blocks takes several rounds of ZD_T blocks).
 * CTAs take chunks in order from a ticket counter (so a CTA only ever waits
 * for chunks that a running CTA holds) and loop until the chunks run out, so
 * the grid can be sized by occupancy whatever the chunk count (decompress
 * and hop do not know it on the host: it is in the stream's header).
 * - Inside a chunk, CTA-wide scans (warp shuffles, then across warps through
 *   shared memory) join the blocks: the sum of the blocks' coded sizes places
 *   each block; for compression and the hop's result a "last valid" scan of
 *   the blocks' last ordinary integers gives each block the chunk's predictor
 *   entering it (the chunk-scope delta: exception, fill and padding positions
 *   carry the previous integer; without an ordinary integer before it, a
 *   block's first ordinary integer starts the track with delta 0 and is the
 *   chunk's base); for decoding a scan of the blocks' delta sums gives each
 *   block its entering integer. The carries of all three pass from round to
 *   round.
 * - A chunk's blocks have no offsets in the format, so before decoding one
 *   thread walks the chunk's block heads (zc_block_span: a few bytes each,
 *   from shared memory when the chunk fits there); the threads then decode
 *   their blocks with zc_block_decode's full checks and check that each
 *   block ends where the walk says the next begins.
 * - Chunks are placed in the output by a decoupled look-back over their
 *   sizes: a CTA publishes its chunk's size (aggregate), sums the
 *   predecessors' aggregates backwards until one has published its inclusive
 *   prefix, then publishes its own inclusive prefix. A chunk's bytes are
 *   written to the output only after its size is known: compression and
 *   the hop stage them in shared memory meanwhile (each thread writes its
 *   block there as soon as the scan of the round's sizes has placed it;
 *   the CTA then copies the chunk out in consecutive bytes); a chunk too
 *   large for that runs its rounds again once placed. The hop
 *   places its input chunks the same way (their sizes are in the indexes,
 *   available at once). Decompression writes values at fixed places; it has
 *   no scratch, so each CTA sums the index in front of its range of chunks.
 * - Registers. A thread holds its block as 32 32-bit words
 *   (zd_cuda_codec_blocks.h, "blocks in 32-bit registers"): no index into
 *   them is left unknown at compile time, so they never go to local
 *   memory. Blocks that do not fit that form (a float64 compression's,
 *   deltas wider than 32 bits, a hop's inputs whose exception or fill
 *   positions differ, malformed blocks) take the general 64-bit views, in
 *   local memory, by out-of-line functions.
 * - Scratch: 64 control bytes (the ticket counter and the grid barrier's
 *   count, zeroed by the launcher before each launch: that memset is the
 *   only other work enqueued) and a 64-byte slot per chunk for the look-back.
 *   A slot's words are tagged with a launch epoch from the host instead of
 *   being reset: the hop's launcher cannot know how many slots the stream
 *   has without a host round trip.
 * - Errors found by the kernels go to *status (atomicCAS from zcclSuccess) as
 *   zcclInvalidUsage: every check zc_header_read, zc_parse_block and the
 *   drivers make, each chunk's before it reads the chunk, so nothing is read
 *   or written out of bounds. A chunk that fails still publishes its size
 *   (with an error bit the look-back carries), so no CTA waits forever and
 *   the last chunk knows to report a failure (*out_size 0). Output room
 *   follows the CPU's rule exactly: the encoders demand room for a whole
 *   worst-case block before each block (ZD_EMIT_MAX), so a stream that fits
 *   its cap only tightly fails on the GPU exactly when it fails on the CPU.
 *
 * In-place hop (out == a or out == b). A result chunk may be larger than the
 * input chunk whose place it takes, so chunk c's bytes may land on input that
 * the CTA of a later chunk has not read yet (it may not even have started:
 * the look-back orders writers, not readers). Waiting for those readers could
 * deadlock (they may need the waiting CTA's SM), so instead a staging kernel
 * launched just before the hop on the same stream copies every input that
 * overlaps out into the scratch (behind the slots) and keeps the inputs'
 * sizes, and the hop reads only the copies: stream order makes every copy
 * complete before any CTA of the hop writes, with no grid barrier and so no
 * cooperative launch (which needs the whole grid resident at once: a kernel
 * already running on the GPU, such as a stream-ordered call's hold, can keep
 * it from starting). The copy costs one pass over the compressed input;
 * zd_cuda_codec_scratch_bytes leaves room for one input of
 * zc_compress_bound bytes. A failed in-place hop leaves out's bytes
 * unspecified (the CPU leaves them).
 *
 * Floating point matches the host: the file is built with --fmad=false (no
 * contraction, as -ffp-contract=off on the host), IEEE division and no
 * flush-to-zero; exceptions' raw values are handled as bits (see
 * zd_cuda_codec_blocks.h). */
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zd_cuda_codec_blocks.h"
#include "zd_cuda_kernels.h"
#include "zd_cuda_queue.h"
#include "zd_cuda_util.h"
#include "zu_error.h"

/* Threads per CTA, one per block of a round (the build's
 * ZCCL_CUDA_CODEC_CTA): a chunk of 4096 values takes one round at 128,
 * four at 32, where a CTA is one warp and an SM holds more CTAs, so more
 * chunks' heads are walked at once (zd_walk is one thread's). */
#ifndef ZD_T
#define ZD_T 128
#endif
#if ZD_T < 32 || ZD_T > 1024 || ZD_T % 32 != 0
#error "ZD_T (ZCCL_CUDA_CODEC_CTA): threads per CTA, a multiple of 32 from 32 to 1024"
#endif
#define ZD_WARPS (ZD_T / 32)
#define ZD_CTL_BYTES 64ull
#define ZD_SLOT_BYTES 64ull
#define ZD_DBUF 16384u /* decompress: a chunk's bytes in shared memory when they fit (zd_stage) */
#define ZD_HBUF 8192u  /* hop: each input chunk's, likewise */
#define ZD_ALIGN_PAD 32u /* room for zd_stage's offset, and reads past the end (zd_walk_staged, zd_copy_out) */
#define ZD_ERR (1ull << 63)
#define ZD_VAL (~ZD_ERR)
#define ZD_AGG 1ull /* a slot holds the chunk's aggregate */
#define ZD_INC 2ull /* ... and its inclusive prefix */
#define ZD_FULL 0xffffffffu

/* Which way blocks went (in registers, or general), counted by the
 * host emulation's tests (test/unit/test_cuda_codec_emu.cpp) so that they
 * can tell that both ways ran; nothing on a GPU. */
enum {
  ZD_PATH_C32,
  ZD_PATH_CGEN,
  ZD_PATH_D32,
  ZD_PATH_DGEN,
  ZD_PATH_H32,
  ZD_PATH_HGEN,
  ZD_PATH_HLATE,
  ZD_PATH_CLATE, /* float64 compression in registers but for the block's first move */
  ZD_PATH_NUM
};
#ifndef ZD_PATH
#define ZD_PATH(k) ((void)0)
#endif

typedef struct {
  unsigned long long ticket;   /* next chunk to take */
  unsigned long long size[2];  /* in-place hop: the inputs' sizes as the staging kernel read them */
} zd_ctl_t;

/* One chunk's look-back words: status (epoch << 2 | ZD_AGG or ZD_INC), then
 * values; out: the chunk's bytes in the output (| ZD_ERR when a chunk so far
 * failed); in: its bytes in input a and b (hop). */
typedef struct {
  unsigned long long out_st, out_agg, out_inc;
  unsigned long long in_st, in_agg[2], in_inc[2];
} zd_slot_t;

/* ---- device helpers --------------------------------------------------------- */

__device__ static void zd_fail(int* status) { atomicCAS(status, (int)zcclSuccess, (int)zcclInvalidUsage); }

__device__ static unsigned long long zd_ld(const unsigned long long* p) {
  return *(const volatile unsigned long long*)p;
}
__device__ static void zd_st(unsigned long long* p, unsigned long long v) { *(volatile unsigned long long*)p = v; }

/* Output sizes add; their error bits accumulate. */
__device__ static unsigned long long zd_add(unsigned long long x, unsigned long long y) {
  return ((x + y) & ZD_VAL) | ((x | y) & ZD_ERR);
}

/* Waits until slot word st is published in this launch; the values written
 * before it are then visible. */
__device__ static unsigned long long zd_wait(const unsigned long long* st, unsigned long long epoch) {
  unsigned long long s;
  while (((s = zd_ld(st)) >> 2) != epoch) __nanosleep(32);
  __threadfence();
  return s & 3;
}

/* Thread 0: publishes chunk c's output size agg, looks back for the bytes of
 * the chunks before it, publishes its inclusive prefix; returns the
 * exclusive prefix. */
__device__ static unsigned long long zd_place_out(zd_slot_t* slots, unsigned long long c, unsigned long long agg,
                                                  unsigned long long epoch) {
  zd_slot_t* me = &slots[c];
  unsigned long long excl = 0;
  if (c > 0) {
    zd_st(&me->out_agg, agg);
    __threadfence();
    zd_st(&me->out_st, epoch << 2 | ZD_AGG);
    for (unsigned long long j = c; j-- > 0;) {
      if (zd_wait(&slots[j].out_st, epoch) == ZD_INC) {
        excl = zd_add(excl, zd_ld(&slots[j].out_inc));
        break;
      }
      excl = zd_add(excl, zd_ld(&slots[j].out_agg));
    }
  }
  zd_st(&me->out_inc, zd_add(excl, agg));
  __threadfence();
  zd_st(&me->out_st, epoch << 2 | ZD_INC);
  return excl;
}

/* The same for the hop's input chunks (sizes of a and b). */
__device__ static void zd_place_in(zd_slot_t* slots, unsigned long long c, const unsigned long long agg[2],
                                   unsigned long long epoch, unsigned long long excl[2]) {
  zd_slot_t* me = &slots[c];
  excl[0] = excl[1] = 0;
  if (c > 0) {
    zd_st(&me->in_agg[0], agg[0]);
    zd_st(&me->in_agg[1], agg[1]);
    __threadfence();
    zd_st(&me->in_st, epoch << 2 | ZD_AGG);
    for (unsigned long long j = c; j-- > 0;) {
      if (zd_wait(&slots[j].in_st, epoch) == ZD_INC) {
        excl[0] += zd_ld(&slots[j].in_inc[0]);
        excl[1] += zd_ld(&slots[j].in_inc[1]);
        break;
      }
      excl[0] += zd_ld(&slots[j].in_agg[0]);
      excl[1] += zd_ld(&slots[j].in_agg[1]);
    }
  }
  zd_st(&me->in_inc[0], excl[0] + agg[0]);
  zd_st(&me->in_inc[1], excl[1] + agg[1]);
  __threadfence();
  zd_st(&me->in_st, epoch << 2 | ZD_INC);
}

/* Exclusive sum (wrapping) of v over the CTA's threads in order; *total the
 * sum of all. Every thread calls it. */
__device__ static uint64_t zd_scan_add(uint64_t v, uint64_t* total) {
  __shared__ uint64_t sh[ZD_WARPS];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t x = v;
  for (unsigned o = 1; o < 32; o <<= 1) {
    uint64_t y = __shfl_up_sync(ZD_FULL, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) sh[warp] = x;
  __syncthreads();
  uint64_t before = 0, all = 0;
  for (unsigned w = 0; w < ZD_WARPS; w++) {
    if (w < warp) before += sh[w];
    all += sh[w];
  }
  __syncthreads();
  *total = all;
  return before + x - v;
}

/* Exclusive "last valid" scan: 1 and in *ev the value of the nearest thread
 * before this one whose flag f is set, else 0; *tf and *tv: the last of all. */
__device__ static int zd_scan_last(int f, int64_t v, int64_t* ev, int* tf, int64_t* tv) {
  __shared__ int shf[ZD_WARPS];
  __shared__ int64_t shv[ZD_WARPS];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int xf = f;
  int64_t xv = v;
  for (unsigned o = 1; o < 32; o <<= 1) {
    int yf = __shfl_up_sync(ZD_FULL, xf, o);
    int64_t yv = __shfl_up_sync(ZD_FULL, xv, o);
    if (lane >= o && !xf) {
      xf = yf;
      xv = yv;
    }
  }
  int pf = __shfl_up_sync(ZD_FULL, xf, 1);
  int64_t pv = __shfl_up_sync(ZD_FULL, xv, 1);
  if (lane == 0) pf = 0;
  if (lane == 31) {
    shf[warp] = xf;
    shv[warp] = xv;
  }
  __syncthreads();
  int wf = 0, af = 0;
  int64_t wv = 0, av = 0;
  for (unsigned w = 0; w < ZD_WARPS; w++) {
    if (!shf[w]) continue;
    if (w < warp) {
      wf = 1;
      wv = shv[w];
    }
    af = 1;
    av = shv[w];
  }
  __syncthreads();
  *tf = af;
  *tv = av;
  *ev = pf ? pv : wv;
  return pf || wf;
}

/* A 16-byte store (p 16-byte aligned: a GPU faults otherwise, and the host
 * emulation aborts). */
__device__ static void zd_st16(uint32_t* p, uint4 v) {
#ifdef ZD_EMULATED
  zemu_check_aligned(p, 16);
#endif
  *(uint4*)p = v;
}

/* The kernels read their inputs with plain loads, not __ldg: the persistent
 * kernel reads buffers that copies and other items write while it runs,
 * and the read-only path is coherent only for data that no one writes
 * during the kernel. (Plain loads are cached in L1 all the same.) Aligned
 * as their size. */
__device__ static uint4 zd_ld16(const void* p) {
#ifdef ZD_EMULATED
  zemu_check_aligned(p, 16);
#endif
  return *(const uint4*)p;
}
__device__ static uint32_t zd_ld4(const uint32_t* p) {
#ifdef ZD_EMULATED
  zemu_check_aligned(p, 4);
#endif
  return *p;
}

/* n 4-byte words at p (4-byte aligned) to w and back: 16-byte accesses where
 * p is 16-byte aligned, single words for the head and the tail. */
__device__ static void zd_load_words(const uint32_t* p, int n, uint32_t* w) {
  int i = 0, head = (int)(((16u - ((uintptr_t)p & 15u)) & 15u) >> 2);
  if (head > n) head = n;
  for (; i < head; i++) w[i] = zd_ld4(p + i);
  for (; i + 4 <= n; i += 4) {
    uint4 t = zd_ld16(p + i);
    w[i] = t.x;
    w[i + 1] = t.y;
    w[i + 2] = t.z;
    w[i + 3] = t.w;
  }
  for (; i < n; i++) w[i] = zd_ld4(p + i);
}

__device__ static void zd_store_words(uint32_t* p, int n, const uint32_t* w) {
  int i = 0, head = (int)(((16u - ((uintptr_t)p & 15u)) & 15u) >> 2);
  if (head > n) head = n;
  for (; i < head; i++) p[i] = w[i];
  for (; i + 4 <= n; i += 4) zd_st16(p + i, make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]));
  for (; i < n; i++) p[i] = w[i];
}

/* The CTA copies n bytes from global memory into a shared buffer (16-byte
 * aligned, room for n + 15 bytes) at the same offset from a 16-byte
 * boundary as src, so that all but the few bytes at either end move 16 at
 * a time; returns where the copy starts. Reads only [src, src + n). */
__device__ static const uint8_t* zd_stage(uint8_t* buf, const uint8_t* src, uint32_t n) {
  const uint32_t mis = (uint32_t)((uintptr_t)src & 15u);
  uint8_t* dst = buf + mis;
  const uint32_t lead = (16u - mis) & 15u, head = lead < n ? lead : n, end = head + ((n - head) & ~15u);
  if (threadIdx.x < head) dst[threadIdx.x] = src[threadIdx.x];
  for (uint32_t k = head + 16u * threadIdx.x; k < end; k += 16u * ZD_T)
    zd_st16((uint32_t*)(dst + k), zd_ld16(src + k));
  if (end + threadIdx.x < n) dst[end + threadIdx.x] = src[end + threadIdx.x];
  return dst;
}

/* zd_walk over a chunk that zd_stage copied from src into buf, where up to 32
 * bytes past its end are still the buffer's: each head's first 12 bytes
 * come from four aligned word loads issued at once (zc_block_span_window), not
 * from two or three loads each waiting for the one before. */
__device__ static int zd_walk_staged(const uint8_t* buf, const uint8_t* src, uint32_t bytes, uint32_t o, uint32_t nb,
                                     int last, int esize, uint32_t* off) {
  const uint8_t* chunk = buf + ((uintptr_t)src & 15u); /* zd_stage's copy of src, from buf: its loads stay shared */
  for (uint32_t k = 0; k < nb; k++) {
    off[k] = o;
    const uint8_t* h = chunk + o;
    const uint32_t mis = (uint32_t)((uintptr_t)h & 3u);
    const uint32_t* a = (const uint32_t*)(h - mis);
    const uint32_t sh = 8u * mis, a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const uint32_t w0 = (uint32_t)(((uint64_t)a1 << 32 | a0) >> sh), w1 = (uint32_t)(((uint64_t)a2 << 32 | a1) >> sh),
                   w2 = (uint32_t)(((uint64_t)a3 << 32 | a2) >> sh);
    const int sp = zc_block_span_window(w0, w1, w2, bytes - o, esize);
    if (sp < 0) return -1;
    o += (uint32_t)sp;
  }
  off[nb] = o;
  return !last || o == bytes ? 0 : -1;
}

/* The walk of round r (of R) of a chunk's nb blocks, the chunk at src or
 * (staged) zd_stage's copy of it in buf: the round's first head is where
 * the last round's blocks ended (off[ZD_T], written by the same thread),
 * or 8. */
__device__ static int zd_walk_round(const uint8_t* buf, const uint8_t* src, int staged, uint32_t bytes, uint32_t r,
                                    uint32_t R, uint32_t nb, int esize, uint32_t* off) {
  const uint32_t o = r == 0 ? 8u : off[ZD_T], k = nb - r * ZD_T < ZD_T ? nb - r * ZD_T : ZD_T;
  return staged ? zd_walk_staged(buf, src, bytes, o, k, r + 1 == R, esize, off)
                : zd_walk(src, bytes, o, k, r + 1 == R, esize, off);
}

/* The scans' carries from one round of blocks to the next (the same in
 * every thread). */
typedef struct {
  uint64_t qa, qb; /* the inputs' tracks (hop) */
  int have_prev;   /* an ordinary integer before the round, */
  int64_t prev;    /* the last one */
  uint64_t bytes;  /* the chunk's bytes before the round */
} zd_carry_t;

/* A round's "last valid" scan of its result blocks' ends (has/fst/lst from
 * zd_block_ends): whether an ordinary integer comes before this thread's
 * block (*hp) and the last one (*pv); the chunk's base in *s_base (the one
 * thread holding the chunk's first ordinary integer); the carry moves on. */
__device__ static void zd_round_prev(int act, int has, int64_t fst, int64_t lst, zd_carry_t* cy, int* hp, int64_t* pv,
                                     int64_t* s_base) {
  int64_t ev, tv;
  int tf;
  int ef = zd_scan_last(has, lst, &ev, &tf, &tv);
  *hp = ef || cy->have_prev;
  *pv = ef ? ev : cy->prev;
  if (act && has && !*hp) *s_base = fst;
  if (tf) {
    cy->have_prev = 1;
    cy->prev = tv;
  }
}

/* A round's scan of its blocks' coded sizes: *off the thread's block's
 * offset in the chunk, the last block's in *s_last; 1 when the round ends
 * within room (the same in every thread). */
__device__ static int zd_round_place(int bytes, int act, uint32_t blk, uint32_t nb, zd_carry_t* cy, uint64_t room,
                                     uint32_t* s_last, uint32_t* off) {
  uint64_t total;
  uint64_t o = cy->bytes + zd_scan_add((uint64_t)bytes, &total);
  if (act && blk == nb - 1) *s_last = (uint32_t)o;
  *off = (uint32_t)o;
  cy->bytes += total;
  return cy->bytes <= room;
}

/* The general way of a block (or of a hop's pair of blocks): 64-bit views
 * in local memory, by functions kept out of line, so that neither their
 * arrays nor their registers weigh on the register paths beside them. They
 * take what the callers also use (the grid, header fields, input places)
 * by value, so that it does not go to local memory in the callers either. */
typedef struct {
  zc_block_t b[2];       /* parsed inputs */
  const uint8_t* raw[2]; /* their raw values */
  uint64_t sum[2];       /* their delta sums */
  zd_bview_t v;          /* the block to code (compression's, the hop's result) */
  int has, err;          /* v's ends (zd_block_ends); a delta out of range */
  int64_t fst, lst;
  uint8_t enc[ZD_EMIT_MAX(8)];
} zd_gen_t;

/* Block k parsed (zd_block_parse), ending span bytes after its start. */
__device__ static __noinline__ int zd_gen_parse(zd_gen_t* s, int k, const uint8_t* in, size_t avail, uint32_t span,
                                                int nv, int fill, int esize) {
  int used = zd_block_parse(in, avail, nv, fill, esize, &s->b[k], &s->raw[k]);
  if (used < 0 || (uint32_t)used != span) return 0;
  s->sum[k] = zd_block_dsum(&s->b[k]);
  return 1;
}

/* v's deltas and bytes (zc_emit_block's) into enc; the bytes, and in
 * s->err whether a delta was out of range. */
__device__ static __noinline__ int zd_gen_emit(zd_gen_t* s, int hp, int64_t pv, int fill, int esize) {
  zc_block_t b;
  uint32_t pad;
  s->err = zd_block_deltas(&s->v, hp, pv, &b, &pad) != 0;
  return zd_block_emit(&b, pad, fill, &s->v, esize, s->enc);
}

/* A block's words between registers and memory (p 4-byte aligned): H
 * single words up to the first 16-byte boundary, then 16-byte accesses,
 * then single words to the end (ghZCCL's adaptive vectorized access). H is
 * a template argument, one instance for each of the four alignments, so
 * that every index into the registers stays a compile-time constant. */
template <int H>
__device__ static void zd_load32_at(const uint32_t* p, uint32_t* w) {
  ZD_UNROLL for (int i = 0; i < H; i++) w[i] = zd_ld4(p + i);
  ZD_UNROLL for (int i = H; i + 4 <= ZC_BLOCK; i += 4) {
    uint4 t = zd_ld16(p + i);
    w[i] = t.x;
    w[i + 1] = t.y;
    w[i + 2] = t.z;
    w[i + 3] = t.w;
  }
  ZD_UNROLL for (int i = H + (ZC_BLOCK - H) / 4 * 4; i < ZC_BLOCK; i++) w[i] = zd_ld4(p + i);
}

/* Word j of 32 float64 values held as low and high words. */
#define ZD_W64(lo, hi, j) (((j) & 1) ? (hi)[(j) >> 1] : (lo)[(j) >> 1])

/* NW words to p: w's (NW 32), or lo/hi's interleaved (NW 64). */
template <int H, int NW>
__device__ static void zd_store_at(uint32_t* p, const uint32_t* lo, const uint32_t* hi) {
  ZD_UNROLL for (int j = 0; j < H; j++) p[j] = NW == 32 ? lo[j] : ZD_W64(lo, hi, j);
  ZD_UNROLL for (int j = H; j + 4 <= NW; j += 4) {
    if (NW == 32)
      zd_st16(p + j, make_uint4(lo[j], lo[j + 1], lo[j + 2], lo[j + 3]));
    else
      zd_st16(p + j, make_uint4(ZD_W64(lo, hi, j), ZD_W64(lo, hi, j + 1), ZD_W64(lo, hi, j + 2),
                                ZD_W64(lo, hi, j + 3)));
  }
  ZD_UNROLL for (int j = H + (NW - H) / 4 * 4; j < NW; j++) p[j] = NW == 32 ? lo[j] : ZD_W64(lo, hi, j);
}

/* Single words from p to the first 16-byte boundary. */
__device__ static unsigned zd_head_words(const void* p) { return ((16u - ((uintptr_t)p & 15u)) & 15u) >> 2; }

/* 32 float32 words at p, n of them valid (the rest 0), into registers. */
__device__ static void zd_load32(const uint32_t* p, int n, uint32_t* w) {
  if (n == ZC_BLOCK) {
    switch (zd_head_words(p)) {
      case 0: zd_load32_at<0>(p, w); break;
      case 1: zd_load32_at<1>(p, w); break;
      case 2: zd_load32_at<2>(p, w); break;
      default: zd_load32_at<3>(p, w); break;
    }
  } else {
    ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) w[i] = i < n ? zd_ld4(p + i) : 0u;
  }
}

/* n values' NW / 32 words each to p (see zd_store_at). */
template <int NW>
__device__ static void zd_store_block(uint32_t* p, int n, const uint32_t* lo, const uint32_t* hi) {
  if (n == ZC_BLOCK) {
    switch (zd_head_words(p)) {
      case 0: zd_store_at<0, NW>(p, lo, hi); break;
      case 1: zd_store_at<1, NW>(p, lo, hi); break;
      case 2: zd_store_at<2, NW>(p, lo, hi); break;
      default: zd_store_at<3, NW>(p, lo, hi); break;
    }
  } else {
    ZD_UNROLL for (int j = 0; j < NW; j++) if (j < n * (NW / 32)) p[j] = NW == 32 ? lo[j] : ZD_W64(lo, hi, j);
  }
}

/* The CTA copies a chunk's staged bytes [8, n) (staged 16-byte aligned in
 * shared memory) to out, at any alignment (the base, bytes 0..8, is
 * written by thread 0 directly): a word a thread between byte heads and
 * tails, each made of the two staged words it straddles (consecutive
 * threads read consecutive words, and a warp stores 128 consecutive
 * bytes), reading up to 3 bytes past n (ZD_ALIGN_PAD). */
__device__ static void zd_copy_out(uint8_t* out, const uint8_t* staged, uint64_t n) {
  const uint32_t m = (uint32_t)n, lead = (uint32_t)((4u - ((uintptr_t)(out + 8) & 3u)) & 3u);
  const uint32_t b0 = 8 + (lead < m - 8 ? lead : m - 8), end = b0 + ((m - b0) & ~3u), sh = 8 * (b0 & 3u);
  if (8 + threadIdx.x < b0) out[8 + threadIdx.x] = staged[8 + threadIdx.x];
  const uint32_t* w = (const uint32_t*)staged;
  for (uint32_t k = b0 + 4 * threadIdx.x; k < end; k += 4 * ZD_T) {
    const uint64_t two = ((uint64_t)w[(k >> 2) + 1] << 32) | w[k >> 2];
    *(uint32_t*)(out + k) = (uint32_t)(two >> sh);
  }
  if (end + threadIdx.x < m) out[end + threadIdx.x] = staged[end + threadIdx.x];
}

/* A chunk's checksum (docs/format.md): the low 32 bits of XXH3-64 of its n
 * bytes at p, seed s. Longer than the short paths, the eight accumulator
 * lanes run on threads 0-7 and thread 0 merges them; every thread of the
 * CTA calls it and gets the result. */
__device__ static uint32_t zd_chunk_sum(const uint8_t* p, uint32_t n, uint64_t s) {
  __shared__ uint64_t s_acc[ZC_XXH3_LANES];
  __shared__ uint32_t s_sum;
  if (n > ZC_XXH3_MIDSIZE_MAX) {
    if (threadIdx.x < ZC_XXH3_LANES) s_acc[threadIdx.x] = zc_xxh3_lane(p, n, s, threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) s_sum = (uint32_t)zc_xxh3_merge(s_acc, n, s);
  } else if (threadIdx.x == 0) {
    s_sum = (uint32_t)zc_xxh3_short(p, n, s);
  }
  __syncthreads();
  const uint32_t sum = s_sum;
  __syncthreads(); /* s_sum and s_acc are reused by the next call */
  return sum;
}

/* Whether chunk c's n bytes at p (checksum included) pass their checksum
 * under header h (always without checksums); *payload: the bytes before it.
 * Every thread of the CTA calls it. */
__device__ static int zd_chunk_verify(const zd_hdr_t* h, uint64_t c, const uint8_t* p, uint32_t n,
                                      uint32_t* payload) {
  *payload = n;
  if (!h->checksum) return 1;
  *payload = n - ZC_CHUNK_SUM_BYTES; /* the caller saw n >= 12 */
  return zd_chunk_sum(p, *payload, h->seed + c) == zc_get_u32(p + *payload);
}

/* Thread 0 of the CTA holding the stream's last chunk: *out_size, or 0 and
 * a failure when a chunk failed or the CPU's room rule is not met (room for
 * a worst-case block at the start of every block, the last one tightest). */
__device__ static void zd_finish(uint64_t* out_size, int* status, unsigned long long excl, int err, uint64_t at,
                                 uint64_t bytes, uint32_t last, uint64_t cap, int esize) {
  int ok = !(excl & ZD_ERR) && !err && at + last <= cap && cap - (at + last) >= (uint64_t)ZD_EMIT_MAX(esize) &&
           at + bytes <= cap; /* with a checksum it may not: zc_chunk_seal's rule */
  *out_size = ok ? at + bytes : 0;
  if (!ok) zd_fail(status);
}

/* ---- compression (arguments: zd_cargs_t, zd_cuda_queue.h) ------------------ */

/* Shared memory of a compression or hop: a chunk's result bytes, staged
 * until its place in the output is known (ZD_OBUF: a float32 chunk of 4096
 * values compressed at least 4 : 3, a float64 one 8 : 3). */
#define ZD_OBUF 12288u
typedef struct __align__(16) {
  uint8_t out[ZD_OBUF + ZD_ALIGN_PAD];
} zd_csmem_t;

/* A float64 block's view and ends. */
__device__ static __noinline__ void zd_gen_quant64(zd_gen_t* s, const uint8_t* src, int nv, zc_grid_t g, int has_fill,
                                                   double fill) {
  uint32_t w[2 * ZC_BLOCK];
  zd_load_words((const uint32_t*)src, nv * 2, w);
  zd_quant_f64((const double*)w, nv, &g, has_fill, fill, &s->v);
  s->has = zd_block_ends(&s->v, &s->fst, &s->lst);
}

/* A float64 block in registers, quantized half a block (32 words) at a
 * time: at each ordinary position but the first, the move from the
 * ordinary integer before it in m and ng / ps (its sign); the first and
 * last ordinary integers in *fst and *lst (the first's move, from the
 * block before, is known after the round's scan); positions of
 * exceptions and fill in *xb, *fb. 0 when a move needs more than 32 bits
 * (the block then goes the general way). */
__device__ static int zd_quant64_32(const uint8_t* src, int nv, const zc_grid_t* g, int has_fill, double fill,
                                    uint32_t* m, uint32_t* xb, uint32_t* fb, uint32_t* ng, uint32_t* ps, int64_t* fst,
                                    int64_t* lst) {
  uint32_t w[ZC_BLOCK];
  uint64_t prev = 0;
  int have = 0;
  uint32_t wide = 0, x = 0, f = 0, n = 0, p = 0;
  ZD_UNROLL for (int half = 0; half < 2; half++) {
    const int nw = 2 * nv - ZC_BLOCK * half;
    zd_load32((const uint32_t*)src + ZC_BLOCK * half, nw < 0 ? 0 : nw > ZC_BLOCK ? ZC_BLOCK : nw, w);
    ZD_UNROLL for (int j = 0; j < ZC_BLOCK / 2; j++) {
      const int i = ZC_BLOCK / 2 * half + j;
      m[i] = 0;
      if (i >= nv) continue;
      const double v = zc_bits_f64((uint64_t)w[2 * j + 1] << 32 | w[2 * j]);
      int64_t q = 0;
      if (has_fill && v == fill) {
        f |= 1u << i;
      } else if (zc_quant_f64(v, g, &q)) {
        x |= 1u << i;
      } else {
        if (have) {
          const int64_t d = (int64_t)((uint64_t)q - prev);
          const uint64_t a = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
          wide |= (uint32_t)(a >> 32);
          m[i] = (uint32_t)a;
          n |= (uint32_t)(d < 0) << i;
          p |= (uint32_t)(d > 0) << i;
        } else {
          *fst = q;
          have = 1;
        }
        prev = (uint64_t)q;
      }
    }
  }
  *lst = (int64_t)prev;
  *xb = x;
  *fb = f;
  *ng = n;
  *ps = p;
  return wide == 0;
}

/* One round of a chunk's blocks: quantized, their deltas coded; the bytes
 * go to dst (the chunk's bytes, room of them) when the round ends within
 * room. Blocks are held in registers (zd_lay32): every float32 one, and
 * the float64 ones whose moves fit 32 bits (zd_quant64_32); any other
 * float64 block as a general view. Returns 1 when written (the same in
 * every thread). F64: A->f64, a template argument so that each dtype's
 * kernel holds only its own register form. */
template <int F64>
__device__ static int zd_compress_round(const zd_cargs_t* A, const zc_grid_t* g, uint64_t first, uint32_t n,
                                        uint32_t nb, uint32_t r, zd_carry_t* cy, int64_t* s_base, uint32_t* s_last,
                                        uint8_t* dst, uint64_t room, int* err) {
  const int esize = F64 ? 8 : 4;
  const uint32_t blk = r * ZD_T + threadIdx.x;
  const int act = blk < nb;
  const int nv = !act ? 0 : n - blk * ZC_BLOCK < ZC_BLOCK ? (int)(n - blk * ZC_BLOCK) : ZC_BLOCK;
  const uint32_t valid = zd_valid_mask(nv);
  const uint8_t* src = A->in + (first + (uint64_t)blk * ZC_BLOCK) * esize;
  int has = 0, fast = 0;
  int64_t fst = 0, lst = 0;
  uint32_t m[ZC_BLOCK]; /* float32: the integers, then the deltas' magnitudes; float64: the moves */
  uint32_t xb = 0, fb = 0, ord = 0, ng = 0, ps = 0;
  zd_gen_t gs; /* any other */
  if (act && !F64) {
    fast = 1;
    zd_load32((const uint32_t*)src, nv, m);
    const float fill = (float)A->fill;
    ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
      float f = zc_bits_f32(m[i]);
      int64_t q = 0;
      m[i] = 0;
      if (i >= nv) continue;
      if (A->has_fill && f == fill)
        fb |= 1u << i;
      else if (zc_quant_f32(f, g, &q))
        xb |= 1u << i;
      else
        m[i] = (uint32_t)q; /* |q| <= 2^30 */
    }
    ord = valid & ~(xb | fb);
    has = ord != 0;
    ZD_UNROLL for (int i = ZC_BLOCK - 1; i >= 0; i--) if ((ord >> i) & 1u) fst = (int32_t)m[i];
    ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) if ((ord >> i) & 1u) lst = (int32_t)m[i];
  } else if (act) {
    fast = zd_quant64_32(src, nv, g, A->has_fill, A->fill, m, &xb, &fb, &ng, &ps, &fst, &lst);
    ord = valid & ~(xb | fb);
    has = ord != 0;
    if (!fast) {
      zd_gen_quant64(&gs, src, nv, *g, A->has_fill, A->fill);
      has = gs.has;
      fst = gs.fst;
      lst = gs.lst;
    }
  }
  if (act) ZD_PATH(fast ? ZD_PATH_C32 : ZD_PATH_CGEN);
  int hp;
  int64_t pv;
  zd_round_prev(act, has, fst, lst, cy, &hp, &pv, s_base);
  int bytes = 0;
  zd_lay32_t L;
  if (fast && !F64) {
    /* The deltas along the chunk's track; every |q| <= 2^30, so every
     * delta's magnitude fits 32 bits. */
    int64_t prev = pv;
    int h = hp;
    ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
      if (!((ord >> i) & 1u)) continue;
      int64_t q = (int32_t)m[i], d = h ? q - prev : 0;
      h = 1;
      prev = q;
      m[i] = (uint32_t)(d < 0 ? -d : d);
      ng |= (uint32_t)(d < 0) << i;
      ps |= (uint32_t)(d > 0) << i;
    }
  } else if (fast && has) {
    /* float64: the first ordinary integer's move from pv (none before:
     * it is the chunk's base, delta 0); wider than 32 bits: the general
     * way, late */
    const int64_t d = hp ? (int64_t)((uint64_t)fst - (uint64_t)pv) : 0;
    const uint64_t a = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
    const uint32_t one = ord & (0u - ord);
    if (a >> 32) {
      fast = 0;
      ZD_PATH(ZD_PATH_CLATE);
      zd_gen_quant64(&gs, src, nv, *g, A->has_fill, A->fill);
    } else {
      ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) if ((one >> i) & 1u) m[i] = (uint32_t)a;
      ng |= d < 0 ? one : 0u;
      ps |= d > 0 ? one : 0u;
    }
  }
  if (fast) {
    zd_lay32(m, ng, ps, xb, fb, ~valid, A->has_fill, &L);
    bytes = L.bytes + esize * ZC_POPC32(xb);
  } else if (act) {
    bytes = zd_gen_emit(&gs, hp, pv, A->has_fill, esize);
    if (gs.err) *err = 1;
  }
  uint32_t off;
  if (!zd_round_place(bytes, act, blk, nb, cy, room, s_last, &off)) return 0;
  if (fast) {
    zd_write32(m, &L, dst + off);
    /* the exceptions' raw values, read again (float32 quieted: the CPU
     * keeps them as doubles) */
    uint8_t* o = dst + off + L.bytes;
    const uint32_t* sw = (const uint32_t*)src;
    for (uint32_t x = xb; x; x &= x - 1, o += esize) {
      const int i = __ffs(x) - 1;
      if (!F64)
        zc_put_u32(o, zc_quiet32(zd_ld4(sw + i)));
      else
        zd_put_u64(o, (uint64_t)zd_ld4(sw + 2 * i + 1) << 32 | zd_ld4(sw + 2 * i));
    }
  } else if (act) {
    for (int k = 0; k < bytes; k++) dst[off + k] = gs.enc[k];
  }
  return 1;
}

/* A CTA's part of a compression: chunks from *ticket until they run out;
 * vb is the CTA's number (0 writes the header). A chunk's bytes are staged
 * in shared memory while the look-back places it; a chunk too large for
 * that is coded again once placed, straight into the output. */
template <int F64>
__device__ static void zd_compress_body(const zd_cargs_t& A, unsigned vb, unsigned long long* ticket,
                                        zd_csmem_t* sm) {
  __shared__ unsigned long long s_c, s_excl;
  __shared__ int64_t s_base;
  __shared__ uint32_t s_last;
  __shared__ uint64_t s_seed;
  zd_slot_t* slots = (zd_slot_t*)(A.scratch + ZD_CTL_BYTES);
  const int esize = A.f64 ? 8 : 4;
  const uint64_t head = ZC_HEADER_BYTES + 4ull * A.nchunks;
  const uint32_t sum_bytes = A.checksum ? ZC_CHUNK_SUM_BYTES : 0;
  const int room = A.cap >= head;
  zc_grid_t g;
  zc_grid_init(A.eb, &g);
  if (threadIdx.x == 0) { /* every CTA: the checksums' seed is the header's hash; CTA 0 also writes it */
    uint8_t hdr[ZC_HEADER_BYTES];
    zd_header_write(hdr, A.f64, A.count, A.eb, A.has_fill, A.fill, A.lg, A.nchunks, A.checksum);
    s_seed = A.checksum ? zc_xxh3_64(hdr, ZC_HEADER_BYTES, 0) : 0;
    if (vb == 0 && room)
      for (int k = 0; k < ZC_HEADER_BYTES; k++) A.out[k] = hdr[k];
  }
  if (vb == 0 && threadIdx.x == 0) {
    if (!room) zd_fail(A.status);
    if (A.nchunks == 0 || !room) *A.out_size = room ? head : 0;
  }
  if (!room) return; /* zc_compress_begin's failure: no CTA takes a chunk */
  for (;;) {
    if (threadIdx.x == 0) {
      s_c = atomicAdd(ticket, 1ull);
      s_base = 0;
    }
    __syncthreads();
    const unsigned long long c = s_c;
    if (c >= A.nchunks) break;
    const uint64_t first = c << A.lg;
    const uint32_t n = A.count - first < (1ull << A.lg) ? (uint32_t)(A.count - first) : 1u << A.lg;
    const uint32_t nb = (n + ZC_BLOCK - 1) / ZC_BLOCK, R = (nb + ZD_T - 1) / ZD_T;
    zd_carry_t cy = {0, 0, 0, 0, 8};
    int err = 0, staged = 1;
    for (uint32_t r = 0; r < R; r++)
      staged &= zd_compress_round<F64>(&A, &g, first, n, nb, r, &cy, &s_base, &s_last, sm->out, ZD_OBUF, &err);
    err = __syncthreads_or(err);
    const uint64_t pay = cy.bytes, bytes = pay + sum_bytes;
    if (threadIdx.x == 0) s_excl = zd_place_out(slots, c, bytes | (err ? ZD_ERR : 0), A.epoch);
    __syncthreads();
    const unsigned long long excl = s_excl;
    const int64_t base = s_base;
    const uint32_t last = s_last;
    const uint64_t at = head + (excl & ZD_VAL);
    if (at + bytes <= A.cap && !err) {
      if (threadIdx.x == 0) {
        zc_put_u32(A.out + ZC_HEADER_BYTES + 4 * c, (uint32_t)bytes);
        zd_put_u64(A.out + at, (uint64_t)base);
      }
      if (staged) {
        zd_copy_out(A.out + at, sm->out, pay);
      } else { /* the rounds again, now that the chunk's place is known */
        zd_carry_t cy2 = {0, 0, 0, 0, 8};
        int64_t base2;
        uint32_t last2;
        for (uint32_t r = 0; r < R; r++)
          zd_compress_round<F64>(&A, &g, first, n, nb, r, &cy2, &base2, &last2, A.out + at, ~0ull, &err);
      }
      if (A.checksum) { /* of the bytes as written: __syncthreads makes the CTA's writes visible to it */
        __syncthreads();
        const uint32_t sum = zd_chunk_sum(A.out + at, (uint32_t)pay, s_seed + c);
        if (threadIdx.x == 0) zc_put_u32(A.out + at + pay, sum);
      }
    }
    if (threadIdx.x == 0) {
      if (err) zd_fail(A.status);
      if (c == A.nchunks - 1) zd_finish(A.out_size, A.status, excl, err, at, bytes, last, A.cap, esize);
    }
    __syncthreads();
  }
}

template <int F64>
__global__ static void __launch_bounds__(ZD_T) zd_compress_kernel(zd_cargs_t A) {
  __shared__ zd_csmem_t s_cm;
  zd_compress_body<F64>(A, blockIdx.x, &((zd_ctl_t*)A.scratch)->ticket, &s_cm);
}

/* ---- decompression (arguments: zd_dargs_t, zd_cuda_queue.h) ---------------- */

/* Decompression's shared memory. */
typedef struct __align__(16) {
  uint8_t buf[ZD_DBUF + ZD_ALIGN_PAD]; /* a chunk's bytes when they fit */
  uint32_t off[ZD_T + 1];              /* a round's blocks' offsets (zd_walk_round) */
} zd_dsmem_t;

/* Block 0's values, its track entering at q, to dst. */
__device__ static __noinline__ void zd_gen_values(const zd_gen_t* s, int f64, uint32_t divisor, uint64_t fill_bits,
                                                  zc_grid_t g, int nv, uint64_t q, uint8_t* dst) {
  const int esize = f64 ? 8 : 4;
  zd_bview_t v;
  uint64_t y[ZC_BLOCK];
  uint32_t w[2 * ZC_BLOCK];
  zd_block_track(&s->b[0], s->raw[0], nv, esize, (int64_t)q, &v);
  zd_block_values(&v, nv, f64, &g, divisor, fill_bits, y);
  for (int i = 0; i < nv; i++) {
    if (esize == 4) {
      w[i] = (uint32_t)y[i];
    } else {
      w[2 * i] = (uint32_t)y[i];
      w[2 * i + 1] = (uint32_t)(y[i] >> 32);
    }
  }
  zd_store_words((uint32_t*)dst, nv * esize / 4, w);
}

/* CTA vb of vg's part of a decompression: a fixed range of the chunks. */
__device__ static void zd_decompress_body(const zd_dargs_t& A, unsigned vb, unsigned vg, zd_dsmem_t* sm) {
  __shared__ zd_hdr_t s_h;
  __shared__ uint64_t s_size;
  __shared__ int s_ok;
  uint32_t* s_off = sm->off;
  uint8_t* s_buf = sm->buf;
  if (threadIdx.x == 0) {
    uint64_t size = *A.size;
    int ok = zd_header_parse(A.s, size, &s_h) == 0 && s_h.count == A.count;
    if (ok && s_h.nchunks == 0 && size != ZC_HEADER_BYTES) ok = 0; /* no chunk: nothing may follow */
    if (!ok) zd_fail(A.status);
    s_ok = ok;
    s_size = size;
  }
  __syncthreads();
  if (!s_ok) return;
  const zd_hdr_t h = s_h;
  const int esize = h.f64 ? 8 : 4;
  const uint64_t head = ZC_HEADER_BYTES + 4ull * h.nchunks, body = s_size - head;
  const uint8_t* index = A.s + ZC_HEADER_BYTES;
  /* This CTA's chunks, and where they start: the index entries before. */
  const uint64_t c0 = (uint64_t)vb * h.nchunks / vg;
  const uint64_t c1 = ((uint64_t)vb + 1) * h.nchunks / vg;
  if (c0 >= c1) return;
  uint64_t part = 0, off;
  for (uint64_t i = threadIdx.x; i < c0; i += ZD_T) part += zc_get_u32(index + 4 * i);
  zd_scan_add(part, &off);
  zc_grid_t g;
  zc_grid_init(zc_bits_f64(h.eb_bits), &g);
  for (uint64_t c = c0; c < c1; c++) {
    const uint32_t bytes = zc_get_u32(index + 4 * c);
    /* zc_header_read's index checks, for this chunk */
    if (bytes < 8u + (h.checksum ? ZC_CHUNK_SUM_BYTES : 0) || off + bytes > body ||
        (c == h.nchunks - 1 && off + bytes != body)) {
      if (threadIdx.x == 0) zd_fail(A.status);
      return;
    }
    const uint8_t *src = A.s + head + off, *chunk = src;
    const int staged = bytes <= ZD_DBUF;
    if (staged) {
      chunk = zd_stage(s_buf, chunk, bytes);
      __syncthreads();
    }
    uint32_t pay; /* the bytes before the checksum */
    if (!zd_chunk_verify(&h, c, chunk, bytes, &pay)) {
      if (threadIdx.x == 0) zd_fail(A.status);
      return;
    }
    const uint64_t first = c << h.chunk_log2;
    const uint32_t n = h.count - first < (1ull << h.chunk_log2) ? (uint32_t)(h.count - first) : 1u << h.chunk_log2;
    const uint32_t nb = (n + ZC_BLOCK - 1) / ZC_BLOCK, R = (nb + ZD_T - 1) / ZD_T;
    int err = 0;
    uint64_t q = zd_get_u64(chunk); /* the base */
    for (uint32_t r = 0; r < R && !err; r++) {
      if (threadIdx.x == 0) s_ok = zd_walk_round(s_buf, src, staged, pay, r, R, nb, esize, s_off) == 0;
      __syncthreads();
      if (!s_ok) {
        err = 1;
        break;
      }
      uint32_t blk = r * ZD_T + threadIdx.x;
      int nv = 0, okb = 0, fast = 0;
      uint64_t sum = 0;
      uint32_t m[ZC_BLOCK], ng = 0, xb = 0, fb = 0; /* a block in registers */
      const uint8_t* raw = NULL;
      zd_gen_t gs; /* any other */
      uint8_t* dst = A.out + (first + (uint64_t)blk * ZC_BLOCK) * esize;
      if (blk < nb) {
        nv = n - blk * ZC_BLOCK < ZC_BLOCK ? (int)(n - blk * ZC_BLOCK) : ZC_BLOCK;
        uint32_t o = s_off[threadIdx.x], e = s_off[threadIdx.x + 1];
        int used = zd_parse32(chunk + o, pay - o, nv, h.has_fill, esize, m, &ng, &xb, &fb, &raw);
        fast = used >= 0 && o + (uint32_t)used == e;
        if (fast) {
          okb = 1;
          sum = zd_dsum32(m, ng);
        } else {
          okb = zd_gen_parse(&gs, 0, chunk + o, pay - o, e - o, nv, h.has_fill, esize);
          if (okb)
            sum = gs.sum[0];
          else
            err = 1;
        }
      }
      if (blk < nb) ZD_PATH(fast ? ZD_PATH_D32 : ZD_PATH_DGEN);
      uint64_t total, ex = zd_scan_add(sum, &total);
      if (fast && !h.f64) {
        zd_values32(m, ng, xb, fb, raw, nv, &g, h.divisor, h.fill_bits, (int64_t)(q + ex), m);
        zd_store_block<32>((uint32_t*)dst, nv, m, m);
      } else if (fast) {
        uint32_t hi[ZC_BLOCK];
        zd_values64(m, ng, xb, fb, raw, nv, &g, h.divisor, h.fill_bits, (int64_t)(q + ex), m, hi);
        zd_store_block<64>((uint32_t*)dst, nv, m, hi);
      } else if (okb) {
        zd_gen_values(&gs, h.f64, h.divisor, h.fill_bits, g, nv, q + ex, dst);
      }
      q += total;
      err = __syncthreads_or(err);
    }
    if (err) {
      if (threadIdx.x == 0) zd_fail(A.status);
      return;
    }
    off += bytes;
    __syncthreads(); /* s_buf and s_off are reused */
  }
}

__global__ static void __launch_bounds__(ZD_T) zd_decompress_kernel(zd_dargs_t A) {
  __shared__ zd_dsmem_t s_dm;
  zd_decompress_body(A, blockIdx.x, gridDim.x, &s_dm);
}

/* ---- homomorphic operations (arguments: zd_hargs_t, zd_cuda_queue.h) ------- */

/* One input chunk as a round reads it. */
typedef struct {
  const uint8_t* p; /* its bytes (shared or global memory) */
  uint32_t bytes;
  uint32_t* off;      /* the round's blocks' offsets (zd_walk_round) */
  uint8_t* buf;       /* the shared copy's buffer (zd_stage), */
  const uint8_t* src; /* and where it was copied from */
  int staged;         /* p is the shared copy */
} zd_in_t;

/* The result block the general way: both inputs' views (tracks entering
 * at qa and qb) combined, and its ends. */
__device__ static __noinline__ void zd_gen_hop(zd_gen_t* s, zcclRedOp_t op, int f64, zc_grid_t g, int nv, uint64_t qa,
                                               uint64_t qb) {
  const int esize = f64 ? 8 : 4;
  zd_bview_t va, vb;
  zd_block_track(&s->b[0], s->raw[0], nv, esize, (int64_t)qa, &va);
  zd_block_track(&s->b[1], s->raw[1], nv, esize, (int64_t)qb, &vb);
  zd_block_hop(op, f64, &g, &va, &vb, &s->v);
  s->has = zd_block_ends(&s->v, &s->fst, &s->lst);
}

/* Block k of the round of both inputs parsed the general way; 1 when both
 * are well formed and end where the walks say. */
__device__ static int zd_gen_parse2(zd_gen_t* s, int fill, int esize, const zd_in_t& ia, const zd_in_t& ib,
                                    uint32_t k, int nv) {
  uint32_t oa = ia.off[k], ob = ib.off[k];
  int ok = zd_gen_parse(s, 0, ia.p + oa, ia.bytes - oa, ia.off[k + 1] - oa, nv, fill, esize);
  return zd_gen_parse(s, 1, ib.p + ob, ib.bytes - ob, ib.off[k + 1] - ob, nv, fill, esize) && ok;
}

/* A block pair the register form took but cannot finish (a move wider
 * than 32 bits): parsed again and combined the general way. */
__device__ static void zd_hop_late(zd_gen_t* s, const zd_hargs_t* A, const zd_hdr_t* h, const zc_grid_t* g,
                                   const zd_in_t& ia, const zd_in_t& ib, int nv, uint64_t qa, uint64_t qb) {
  ZD_PATH(ZD_PATH_HLATE);
  zd_gen_parse2(s, h->has_fill, h->f64 ? 8 : 4, ia, ib, threadIdx.x, nv);
  zd_gen_hop(s, A->op, h->f64, *g, nv, qa, qb);
}

/* One round of a chunk's block pairs, coded as compression's rounds are.
 * Two blocks whose exception and fill positions agree (the common case,
 * fill or not) are combined in registers: both inputs' integers follow
 * from where their tracks enter the block (the scans of the delta sums),
 * the result's are their SUM, MAX or MIN at its ordinary positions, and it
 * moves by their differences, except at its first ordinary position, which
 * moves from the result's previous ordinary integer (the "last valid" scan
 * gives it). The exceptions' raw values are combined as the general way
 * does. Anything else (exception or fill positions that differ, deltas or
 * moves wider than 32 bits, malformed blocks) takes the general views.
 * SUM (the instance for zcclSum, the common op) adds the two blocks'
 * deltas as soon as they are parsed: at agreeing positions the result's
 * move at every ordinary position but its first is that sum, so one
 * array, not both inputs', lives across the scans (MAX and MIN need both
 * tracks). The round begins with both inputs' walks (s_walk: theirs
 * results). */
template <int SUM>
__device__ static int zd_hop_round(const zd_hargs_t* A, const zd_hdr_t* h, const zc_grid_t* g, const zd_in_t& ia,
                                   const zd_in_t& ib, uint32_t n, uint32_t nb, uint32_t r, zd_carry_t* cy,
                                   int64_t* s_base, uint32_t* s_last, int* s_walk, uint8_t* dst, uint64_t room,
                                   int* err) {
  const int esize = h->f64 ? 8 : 4;
  const uint32_t blk = r * ZD_T + threadIdx.x, R = (nb + ZD_T - 1) / ZD_T;
  __syncthreads(); /* the last round's readers of the offsets are done */
  /* (none after a failed one: the next would start from an unwritten
   * offset; b by the second warp's first thread, so both walks run at
   * once) */
  if (threadIdx.x == 0)
    s_walk[0] =
        (r == 0 || s_walk[0]) && zd_walk_round(ia.buf, ia.src, ia.staged, ia.bytes, r, R, nb, esize, ia.off) == 0;
  if (threadIdx.x == (ZD_T > 32 ? 32 : 0))
    s_walk[1] =
        (r == 0 || s_walk[1]) && zd_walk_round(ib.buf, ib.src, ib.staged, ib.bytes, r, R, nb, esize, ib.off) == 0;
  __syncthreads();
  const int walked = s_walk[0] && s_walk[1];
  if (!walked) *err = 1;
  const int act = blk < nb && walked;
  const int nv = !act ? 0 : n - blk * ZC_BLOCK < ZC_BLOCK ? (int)(n - blk * ZC_BLOCK) : ZC_BLOCK;
  const uint32_t valid = zd_valid_mask(nv);
  int okb = 0, fast = 0, has = 0;
  uint64_t sa = 0, sb = 0;
  uint32_t ma[ZC_BLOCK], mb[ZC_BLOCK], na = 0, nbn = 0, fa = 0, xa = 0; /* fast: magnitudes, signs, bitmaps */
  const uint8_t *ra = NULL, *rb = NULL;                                /* and raw values */
  zd_gen_t gs;                                                         /* general */
  if (act) {
    const uint32_t k = threadIdx.x, oa = ia.off[k], ob = ib.off[k];
    uint32_t xb, fb;
    int ua = zd_parse32(ia.p + oa, ia.bytes - oa, nv, h->has_fill, esize, ma, &na, &xa, &fa, &ra);
    int ub = zd_parse32(ib.p + ob, ib.bytes - ob, nv, h->has_fill, esize, mb, &nbn, &xb, &fb, &rb);
    fast = ua >= 0 && oa + (uint32_t)ua == ia.off[k + 1] && ub >= 0 && ob + (uint32_t)ub == ib.off[k + 1] &&
           ((xa ^ xb) & valid) == 0 && ((fa ^ fb) & valid) == 0;
    if (fast) {
      okb = 1;
      sa = zd_dsum32(ma, na);
      sb = zd_dsum32(mb, nbn);
    }
    if (SUM && fast) { /* the deltas' sums into ma and na; wider than 32 bits: the general way */
      uint32_t neg = 0, wide = 0;
      ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
        const int64_t d = (((na >> i) & 1u) ? -(int64_t)ma[i] : (int64_t)ma[i]) +
                          (((nbn >> i) & 1u) ? -(int64_t)mb[i] : (int64_t)mb[i]);
        const uint64_t m = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
        wide |= (uint32_t)(m >> 32);
        ma[i] = (uint32_t)m;
        neg |= (uint32_t)(d < 0) << i;
      }
      na = neg;
      if (wide) fast = okb = 0;
    }
  }
  if (act) ZD_PATH(fast ? ZD_PATH_H32 : ZD_PATH_HGEN);
  if (act && !fast) {
    okb = zd_gen_parse2(&gs, h->has_fill, esize, ia, ib, threadIdx.x, nv);
    if (okb) {
      sa = gs.sum[0];
      sb = gs.sum[1];
    } else {
      *err = 1;
    }
  }
  uint64_t ta, tb;
  const uint64_t qa = cy->qa + zd_scan_add(sa, &ta), qb = cy->qb + zd_scan_add(sb, &tb);
  cy->qa += ta;
  cy->qb += tb;
  int64_t fst = 0, lst = 0;
  uint32_t first = 0;
  if (fast) {
    /* Both tracks along the block; where the result has an ordinary
     * position, its integer (the op of the tracks') and its move from the
     * one before in the block, into ma and na. */
    fa &= valid;
    xa &= valid;
    const uint32_t ord = valid & ~(fa | xa);
    first = ord & (0u - ord);
    has = ord != 0;
    if (SUM) {
      /* Deltas are non-zero only at ordinary positions (zd_parse32), so
       * the result's first integer is both tracks' entry plus its summed
       * delta there, and its last their entry plus the blocks' sums. */
      uint64_t df = 0;
      ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
        if ((first >> i) & 1u) {
          df = ((na >> i) & 1u) ? (uint64_t)0 - ma[i] : (uint64_t)ma[i];
          ma[i] = 0;
        }
      }
      na &= ~first;
      fst = (int64_t)(qa + qb + df);
      lst = (int64_t)(qa + qb + sa + sb);
    } else {
      uint64_t tra = qa, trb = qb, rp = 0;
      int wide = 0; /* a move wider than 32 bits */
      uint32_t neg = 0;
      ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) {
        tra += ((na >> i) & 1u) ? (uint64_t)0 - ma[i] : (uint64_t)ma[i];
        trb += ((nbn >> i) & 1u) ? (uint64_t)0 - mb[i] : (uint64_t)mb[i];
        uint32_t mg = 0;
        if ((ord >> i) & 1u) {
          const uint64_t rq = (uint64_t)zd_int_op(A->op, (int64_t)tra, (int64_t)trb);
          if ((first >> i) & 1u) {
            fst = (int64_t)rq;
          } else {
            const int64_t d = (int64_t)(rq - rp);
            const uint64_t m = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
            wide |= (m >> 32) != 0;
            mg = (uint32_t)m;
            neg |= (uint32_t)(d < 0) << i;
          }
          rp = rq;
        }
        ma[i] = mg;
      }
      na = neg;
      lst = (int64_t)rp;
      if (wide) { /* (has, fst and lst stand: the general way finds the same) */
        fast = 0;
        zd_hop_late(&gs, A, h, g, ia, ib, nv, qa, qb);
      }
    }
  } else if (okb) {
    zd_gen_hop(&gs, A->op, h->f64, *g, nv, qa, qb);
    has = gs.has;
    fst = gs.fst;
    lst = gs.lst;
  }
  int hp;
  int64_t pv;
  zd_round_prev(okb, has, fst, lst, cy, &hp, &pv, s_base);
  if (fast && has) {
    /* The first ordinary position moves from pv (none: it is the base,
     * delta 0); a move wider than 32 bits goes the general way. */
    int64_t d = hp ? (int64_t)((uint64_t)fst - (uint64_t)pv) : 0;
    uint64_t md = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
    if (md >> 32) {
      fast = 0;
      zd_hop_late(&gs, A, h, g, ia, ib, nv, qa, qb);
    } else {
      ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) if ((first >> i) & 1u) ma[i] = (uint32_t)md;
      na = (na & ~first) | (d < 0 ? first : 0u);
    }
  }
  int bytes = 0;
  zd_lay32_t L;
  if (fast) {
    uint32_t nz = 0;
    ZD_UNROLL for (int i = 0; i < ZC_BLOCK; i++) nz |= (uint32_t)(ma[i] != 0) << i;
    zd_lay32(ma, na & nz, nz & ~na, xa, fa, ~valid, h->has_fill, &L);
    bytes = L.bytes + esize * ZC_POPC32(xa);
  } else if (okb) {
    bytes = zd_gen_emit(&gs, hp, pv, h->has_fill, esize);
    if (gs.err) *err = 1;
  }
  uint32_t off;
  if (!zd_round_place(bytes, okb, blk, nb, cy, room, s_last, &off)) return 0;
  if (fast) {
    zd_write32(ma, &L, dst + off);
    /* the same positions: the k-th raw value of each (float32 quieted, as
     * the general views hold them) */
    uint8_t* o = dst + off + L.bytes;
    for (int k = 0; k < ZC_POPC32(xa); k++, o += esize) {
      const uint64_t x = zd_raw_get(ra + esize * k, esize), y = zd_raw_get(rb + esize * k, esize);
      if (!h->f64)
        zc_put_u32(o, zc_exc_op_f32(A->op, zc_bits_f32((uint32_t)x), zc_bits_f32((uint32_t)y)));
      else
        zd_put_u64(o, zc_exc_op_f64(A->op, zc_bits_f64(x), zc_bits_f64(y)));
    }
  } else if (okb) {
    for (int k = 0; k < bytes; k++) dst[off + k] = gs.enc[k];
  }
  return 1;
}

/* [p, p + n) and [q, q + m) share a byte. */
__device__ static int zd_overlap(const uint8_t* p, uint64_t n, const uint8_t* q, uint64_t m) {
  return n > 0 && m > 0 && p < q + m && q < p + n;
}

__device__ static uint64_t zd_round16(uint64_t x) { return (x + 15) & ~15ull; }

/* zc_hop_begin's checks of the inputs (asz and bsz bytes) as they are before
 * anything is written, and where the hop reads them from: in place, every
 * input that out overlaps is read from a copy in the scratch, behind the
 * slots (the same copy for b == a). 1 when the hop can go ahead. */
__device__ static int zd_hop_plan(const zd_hargs_t* A, uint64_t asz, uint64_t bsz, zd_hdr_t* h, zd_hdr_t* hb,
                                  const uint8_t** pa, const uint8_t** pb) {
  int ok = zd_header_parse(A->a, asz, h) == 0 && zd_header_parse(A->b, bsz, hb) == 0 && zd_header_compatible(h, hb);
  const uint64_t head = ZC_HEADER_BYTES + 4ull * (ok ? h->nchunks : 0);
  if (ok && h->nchunks == 0 && (asz != head || bsz != head)) ok = 0; /* no chunk: nothing may follow */
  if (A->cap < head) ok = 0;
  int ova = zd_overlap(A->a, asz, A->out, A->cap), ovb = zd_overlap(A->b, bsz, A->out, A->cap);
  *pa = A->a;
  *pb = A->b;
  uint64_t stage = zd_round16(ZD_CTL_BYTES + ZD_SLOT_BYTES * (ok ? h->nchunks : 0));
  if (stage > A->scratch_bytes) ok = 0;
  if (!A->inplace) {
    if (ova || ovb) ok = 0; /* zc_hop_begin: out overlaps an input */
  } else if (ok) {
    if (ova) {
      *pa = A->scratch + stage;
      stage += zd_round16(asz);
    }
    if (ovb) {
      if (ova && A->b == A->a && bsz <= asz) {
        *pb = *pa;
      } else {
        *pb = A->scratch + stage;
        stage += zd_round16(bsz);
      }
    }
    if (stage > A->scratch_bytes) ok = 0;
  }
  return ok;
}

/* In place, launched just before zd_hop_kernel on the same stream: copies
 * every input that out overlaps into the scratch, and keeps the inputs'
 * sizes (*out_size may be one of them, and a late CTA of the hop would read
 * it after the last chunk wrote it). Stream order then does what a grid
 * barrier would: no CTA of the hop writes out before every copy is made,
 * without needing the whole hop grid resident at once (a cooperative
 * launch, which a kernel already running on the GPU, such as a
 * stream-ordered call's hold, can keep from starting). */
__device__ static void zd_hop_stage_body(const zd_hargs_t& A, unsigned vb, unsigned vg) {
  __shared__ int s_ok;
  __shared__ const uint8_t *s_pa, *s_pb;
  __shared__ uint64_t s_asz, s_bsz;
  if (threadIdx.x == 0) {
    zd_hdr_t h, hb;
    const uint8_t *pa, *pb;
    s_asz = *A.a_size;
    s_bsz = *A.b_size;
    s_ok = zd_hop_plan(&A, s_asz, s_bsz, &h, &hb, &pa, &pb);
    s_pa = pa;
    s_pb = pb;
    if (vb == 0) {
      zd_ctl_t* ctl = (zd_ctl_t*)A.scratch;
      ctl->size[0] = s_asz;
      ctl->size[1] = s_bsz;
    }
  }
  __syncthreads();
  if (!s_ok) return; /* the hop finds the same and reports it */
  const uint64_t step = (uint64_t)vg * ZD_T, t0 = (uint64_t)vb * ZD_T + threadIdx.x;
  if (s_pa != A.a)
    for (uint64_t k = t0; k < s_asz; k += step) ((uint8_t*)s_pa)[k] = A.a[k];
  if (s_pb != A.b && s_pb != s_pa)
    for (uint64_t k = t0; k < s_bsz; k += step) ((uint8_t*)s_pb)[k] = A.b[k];
}

__global__ static void __launch_bounds__(ZD_T) zd_hop_stage_kernel(zd_hargs_t A) {
  zd_hop_stage_body(A, blockIdx.x, gridDim.x);
}

/* The hop's shared memory: each input chunk's bytes when they fit, and
 * its blocks' offsets. */
typedef struct __align__(16) {
  uint8_t bufa[ZD_HBUF + ZD_ALIGN_PAD], bufb[ZD_HBUF + ZD_ALIGN_PAD];
  uint32_t offa[ZD_T + 1], offb[ZD_T + 1]; /* a round's blocks' offsets (zd_walk_round) */
  zd_csmem_t res; /* the result chunk, staged */
} zd_hsmem_t;

/* A CTA's part of a hop: chunks from *ticket until they run out; vb 0
 * writes the header. SUM: A.op is zcclSum (zd_hop_round). */
template <int SUM>
__device__ static void zd_hop_body(const zd_hargs_t& A, unsigned vb, unsigned long long* ticket, zd_hsmem_t* sm) {
  __shared__ zd_hdr_t s_h, s_hb;
  __shared__ int s_ok;
  __shared__ const uint8_t *s_pa, *s_pb;
  __shared__ uint64_t s_asz, s_bsz;
  __shared__ unsigned long long s_c, s_excl, s_in[2];
  __shared__ uint32_t s_n[2];
  __shared__ int64_t s_base;
  __shared__ uint32_t s_last;
  __shared__ int s_walk[2];
  uint32_t *s_offa = sm->offa, *s_offb = sm->offb;
  uint8_t *s_bufa = sm->bufa, *s_bufb = sm->bufb;
  zd_ctl_t* ctl = (zd_ctl_t*)A.scratch;
  zd_slot_t* slots = (zd_slot_t*)(A.scratch + ZD_CTL_BYTES);
  /* In place the inputs are read from the staging kernel's copies, with
   * the sizes it kept. */
  if (threadIdx.x == 0) {
    const uint64_t asz = A.inplace ? ctl->size[0] : *A.a_size, bsz = A.inplace ? ctl->size[1] : *A.b_size;
    const uint8_t *pa, *pb;
    s_ok = zd_hop_plan(&A, asz, bsz, &s_h, &s_hb, &pa, &pb);
    s_pa = pa;
    s_pb = pb;
    s_asz = asz;
    s_bsz = bsz;
  }
  __syncthreads();
  const zd_hdr_t h = s_h, hb = s_hb; /* the result's header is a's, and so are its checksums */
  const uint8_t *pa = s_pa, *pb = s_pb;
  const uint64_t asz = s_asz, bsz = s_bsz;
  if (!s_ok) {
    if (vb == 0 && threadIdx.x == 0) {
      zd_fail(A.status);
      *A.out_size = 0;
    }
    return;
  }
  const int esize = h.f64 ? 8 : 4;
  const uint64_t head = ZC_HEADER_BYTES + 4ull * h.nchunks;
  if (vb == 0 && threadIdx.x == 0) {
    for (int k = 0; k < ZC_HEADER_BYTES; k++) A.out[k] = pa[k]; /* a's header, as zc_hop_begin copies it */
    if (h.nchunks == 0) *A.out_size = head;
  }
  zc_grid_t g;
  zc_grid_init(zc_bits_f64(h.eb_bits), &g);
  for (;;) {
    if (threadIdx.x == 0) {
      s_c = atomicAdd(ticket, 1ull);
      s_base = 0;
    }
    __syncthreads();
    const unsigned long long c = s_c;
    if (c >= h.nchunks) break;
    /* Where the input chunks are, and zc_header_read's checks of them. */
    if (threadIdx.x == 0) {
      unsigned long long agg[2], ex[2];
      agg[0] = zc_get_u32(pa + ZC_HEADER_BYTES + 4 * c);
      agg[1] = zc_get_u32(pb + ZC_HEADER_BYTES + 4 * c);
      zd_place_in(slots, c, agg, A.epoch, ex);
      const int last = c == h.nchunks - 1;
      const uint32_t mina = 8u + (h.checksum ? ZC_CHUNK_SUM_BYTES : 0), minb = 8u + (hb.checksum ? ZC_CHUNK_SUM_BYTES : 0);
      s_ok = agg[0] >= mina && ex[0] + agg[0] <= asz - head && (!last || ex[0] + agg[0] == asz - head) &&
             agg[1] >= minb && ex[1] + agg[1] <= bsz - head && (!last || ex[1] + agg[1] == bsz - head);
      s_in[0] = ex[0];
      s_in[1] = ex[1];
      s_n[0] = (uint32_t)agg[0];
      s_n[1] = (uint32_t)agg[1];
    }
    __syncthreads();
    int ok = s_ok;
    zd_in_t ia = {pa + head + s_in[0], s_n[0], s_offa, s_bufa, NULL, 0};
    zd_in_t ib = {pb + head + s_in[1], s_n[1], s_offb, s_bufb, NULL, 0};
    const uint64_t first = c << h.chunk_log2;
    const uint32_t n = h.count - first < (1ull << h.chunk_log2) ? (uint32_t)(h.count - first) : 1u << h.chunk_log2;
    const uint32_t nb = (n + ZC_BLOCK - 1) / ZC_BLOCK, R = (nb + ZD_T - 1) / ZD_T;
    if (ok) {
      ia.src = ia.p;
      ib.src = ib.p;
      ia.staged = ia.bytes <= ZD_HBUF;
      ib.staged = ib.bytes <= ZD_HBUF;
      if (ia.staged) ia.p = zd_stage(s_bufa, ia.src, ia.bytes);
      if (ib.staged) ib.p = zd_stage(s_bufb, ib.src, ib.bytes);
      __syncthreads();
      /* Inputs verified first, as zc_hop_chunks does: a corrupt chunk must
       * not pass into a result that carries a valid checksum. */
      const int oka = zd_chunk_verify(&h, c, ia.p, ia.bytes, &ia.bytes);
      ok = zd_chunk_verify(&hb, c, ib.p, ib.bytes, &ib.bytes) && oka;
    }
    zd_carry_t cy = {0, 0, 0, 0, 8};
    int err = !ok, staged = 1;
    if (ok) {
      cy.qa = zd_get_u64(ia.p);
      cy.qb = zd_get_u64(ib.p);
      for (uint32_t r = 0; r < R; r++)
        staged &= zd_hop_round<SUM>(&A, &h, &g, ia, ib, n, nb, r, &cy, &s_base, &s_last, s_walk, sm->res.out, ZD_OBUF,
                                    &err);
    }
    err = __syncthreads_or(err);
    const uint64_t pay = cy.bytes, bytes = pay + (h.checksum ? ZC_CHUNK_SUM_BYTES : 0);
    if (threadIdx.x == 0) s_excl = zd_place_out(slots, c, bytes | (err ? ZD_ERR : 0), A.epoch);
    __syncthreads();
    const unsigned long long excl = s_excl;
    const int64_t base = s_base;
    const uint32_t last = s_last;
    const uint64_t at = head + (excl & ZD_VAL);
    if (at + bytes <= A.cap && !err) {
      if (threadIdx.x == 0) {
        zc_put_u32(A.out + ZC_HEADER_BYTES + 4 * c, (uint32_t)bytes);
        zd_put_u64(A.out + at, (uint64_t)base);
      }
      if (staged) {
        zd_copy_out(A.out + at, sm->res.out, pay);
      } else { /* the rounds again, now that the chunk's place is known */
        zd_carry_t cy2 = {zd_get_u64(ia.p), zd_get_u64(ib.p), 0, 0, 8};
        int64_t base2;
        uint32_t last2;
        for (uint32_t r = 0; r < R; r++)
          zd_hop_round<SUM>(&A, &h, &g, ia, ib, n, nb, r, &cy2, &base2, &last2, s_walk, A.out + at, ~0ull, &err);
      }
      if (h.checksum) { /* a's seed: the result's header is a's */
        __syncthreads();
        const uint32_t sum = zd_chunk_sum(A.out + at, (uint32_t)pay, h.seed + c);
        if (threadIdx.x == 0) zc_put_u32(A.out + at + pay, sum);
      }
    }
    if (threadIdx.x == 0) {
      if (err) zd_fail(A.status);
      if (c == h.nchunks - 1) zd_finish(A.out_size, A.status, excl, err, at, bytes, last, A.cap, esize);
    }
    __syncthreads();
  }
}

template <int SUM>
__global__ static void __launch_bounds__(ZD_T) zd_hop_kernel(zd_hargs_t A) {
  __shared__ zd_hsmem_t s_hm;
  zd_hop_body<SUM>(A, blockIdx.x, &((zd_ctl_t*)A.scratch)->ticket, &s_hm);
}

/* ---- persistent mode (ZCCL_PERSISTENT_KERNEL=1) ---------------------------
 * One long-running kernel per device takes compress, decompress and hop
 * items from a queue in mapped pinned memory that the host writes, instead
 * of a launch per operation (a ring's every chunk step is one). The same
 * chunk bodies as the launched kernels do the work; what changes is who
 * runs them:
 * - Virtual CTAs. Every item is done by vg virtual CTAs (vg = the engine's
 *   grid), numbered by one ticket counter over all items (item t / vg, CTA
 *   t % vg). A real CTA takes a ticket only of an item already published
 *   (or gives it back: zd_persist_take), does that virtual CTA's part and
 *   takes the next. So however many real CTAs run (all of the grid, a
 *   few, those of two launches), every virtual CTA is run by a running CTA,
 *   and a CTA only ever waits for tickets lower than its own: no grid
 *   barrier, no co-residency needed (another kernel may hold SMs).
 * - Items run in order: a virtual CTA starts only when the item before has
 *   completed (its output may be this one's input), then waits for the
 *   item's gate, a word in device memory that the issuing stream writes
 *   (cuStreamWriteValue32) after the work the item must follow. The last
 *   virtual CTA to finish resets the chunk ticket and publishes the count
 *   of completed items: in device memory (streams wait for it with
 *   cuStreamWaitValue32) and in the queue (the host reads it).
 * - Idle exit. A CTA with nothing published for idle_ns leaves, so that a
 *   user's cudaDeviceSynchronize (or cudaFree, which may synchronise) does
 *   not wait for ever on a kernel that never ends. The last CTA out marks
 *   the engine dead, then looks at the tail once more; the host, after
 *   publishing, looks at the mark (both with full fences, so one of them
 *   sees the other) and launches the kernel again when it is set. A launch
 *   queued behind a kernel that is still leaving simply starts after it.
 * The queue's layout is zd_cuda_queue.h's; its host side (pushing items,
 * relaunching the kernel) is zd_cuda_queue.cu. */

__device__ static unsigned long long zd_now_ns(void) {
#ifdef ZD_EMULATED
  return zemu_now_ns();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

__device__ static uint32_t zd_ld32(const uint32_t* p) { return *(const volatile uint32_t*)p; }
__device__ static void zd_st32(uint32_t* p, uint32_t v) { *(volatile uint32_t*)p = v; }

/* Thread 0, idle: the CTA leaves (1), or stays (0) because it was the
 * last one and an item came meanwhile. */
__device__ static int zd_persist_leave(const zd_pargs_t* P) {
  if (atomicSub(&P->ctl->alive, 1u) != 1u) return 1;
  zd_st32(&P->q->dead, 1);
  __threadfence_system();
  if (zd_ld(&P->ctl->vticket) / P->vg < zd_ld((const unsigned long long*)&P->q->tail)) {
    zd_st32(&P->q->dead, 0);
    atomicAdd(&P->ctl->alive, 1u);
    return 0;
  }
  return 1;
}

/* Thread 0: the next virtual CTA (*k its item, *vb its number), once the
 * item before has completed; 0 when the CTA is to leave (idle, or quit).
 * Tickets are taken with atomicAdd only when some are published and free
 * (no compare-and-swap storm among the CTAs), so a CTA may get one past
 * the published items: it waits for it, or when idle gives it back if no
 * ticket was taken after it (the highest goes back first). */
__device__ static int zd_persist_take(const zd_pargs_t* P, unsigned long long* k, unsigned* vb) {
  const zd_pq_t* q = P->q;
  zd_pctl_t* ctl = P->ctl;
  const unsigned long long* tail = (const unsigned long long*)&q->tail;
  unsigned long long since = zd_now_ns(), t = 0;
  for (;;) {
    if (zd_ld32(&q->quit)) return 0;
    if (zd_ld(&ctl->vticket) / P->vg < zd_ld(tail)) {
      t = atomicAdd(&ctl->vticket, 1ull);
      int kept = 1;
      while (t / P->vg >= zd_ld(tail)) {
        if (zd_ld32(&q->quit)) return 0;
        if (zd_now_ns() - since >= P->idle_ns && atomicCAS(&ctl->vticket, t + 1, t) == t + 1) {
          kept = 0;
          break;
        }
        __nanosleep(1000);
      }
      if (kept) break;
    } else if (zd_now_ns() - since < P->idle_ns) {
      __nanosleep(1000);
      continue;
    }
    if (zd_persist_leave(P)) return 0;
    since = zd_now_ns();
  }
  __threadfence_system(); /* the item's words after the tail that published them */
  *k = t / P->vg;
  *vb = (unsigned)(t % P->vg);
  while (zd_ld(&ctl->done) < *k) {
    if (zd_ld32(&q->quit)) return 0;
    __nanosleep(200);
  }
  __threadfence();
  return 1;
}

/* The whole CTA copies item k from the queue (host memory: every thread
 * loads a word, so the reads over the bus overlap). */
__device__ static void zd_persist_read(const zd_pargs_t* P, unsigned long long k, zd_pitem_t* it) {
  const volatile uint32_t* src = (const volatile uint32_t*)&P->q->item[k % ZD_PQ];
  for (unsigned i = threadIdx.x; i < sizeof *it / 4; i += ZD_T) ((uint32_t*)it)[i] = src[i];
}

/* Thread 0: waits for the item's gate; 0 on quit. */
__device__ static int zd_persist_gate(const zd_pargs_t* P, const zd_pitem_t* it) {
  if (it->gate)
    while ((int32_t)(zd_ld32(it->gate) - it->gate_val) < 0) {
      if (zd_ld32(&P->q->quit)) return 0;
      __nanosleep(200);
    }
  __threadfence();
  return 1;
}

/* Thread 0, after the CTA's part of item k: the last part completes it. */
__device__ static void zd_persist_finish(const zd_pargs_t* P, unsigned long long k) {
  zd_pctl_t* ctl = P->ctl;
  __threadfence_system(); /* this CTA's output (mapped size words included) before the count */
  if (atomicAdd(&ctl->vdone, 1ull) != P->vg - 1) return;
  zd_st(&ctl->chunk, 0);
  zd_st(&ctl->vdone, 0);
  __threadfence();
  zd_st(&ctl->done, k + 1);
  zd_st32(&ctl->done32, (uint32_t)(k + 1));
  __threadfence_system();
  zd_st((unsigned long long*)&P->q->done, k + 1);
}

__global__ static void __launch_bounds__(ZD_T) zd_persist_kernel(zd_pargs_t P) {
  __shared__ union {
    zd_csmem_t c;
    zd_dsmem_t d;
    zd_hsmem_t h;
  } s_u;
  __shared__ zd_pitem_t s_it;
  __shared__ unsigned long long s_k;
  __shared__ unsigned s_vb;
  __shared__ int s_go;
  if (threadIdx.x == 0) atomicAdd(&P.ctl->alive, 1u);
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned long long k = 0;
      unsigned vb = 0;
      s_go = zd_persist_take(&P, &k, &vb);
      s_k = k;
      s_vb = vb;
    }
    __syncthreads();
    if (!s_go) return;
    zd_persist_read(&P, s_k, &s_it);
    __syncthreads();
    if (threadIdx.x == 0) s_go = zd_persist_gate(&P, &s_it);
    __syncthreads();
    if (!s_go) return;
    switch (s_it.kind) {
      case ZD_P_COMPRESS:
        if (s_it.a.c.f64)
          zd_compress_body<1>(s_it.a.c, s_vb, &P.ctl->chunk, &s_u.c);
        else
          zd_compress_body<0>(s_it.a.c, s_vb, &P.ctl->chunk, &s_u.c);
        break;
      case ZD_P_DECOMPRESS: zd_decompress_body(s_it.a.d, s_vb, P.vg, &s_u.d); break;
      case ZD_P_HOP_STAGE: zd_hop_stage_body(s_it.a.h, s_vb, P.vg); break;
      /* (the instance for every op: with SUM's too, the kernel, which
       * holds every body, spilled twice as much) */
      case ZD_P_HOP: zd_hop_body<0>(s_it.a.h, s_vb, &P.ctl->chunk, &s_u.h); break;
      default: break;
    }
    __syncthreads();
    if (threadIdx.x == 0) zd_persist_finish(&P, s_k);
    __syncthreads(); /* s_it, s_k are the next item's */
  }
}

/* ---- launchers --------------------------------------------------------------- */

/* Launches, as macros so that test/unit/test_cuda_codec_emu.cpp can run
 * this file's kernels on the host under an emulation of the execution model
 * (ZD_EMULATED). Each is a cudaError_t. */
#ifndef ZD_EMULATED
#define ZD_LAUNCH(kernel, grid, stream, args) (kernel<<<(grid), ZD_T, 0, (stream)>>>(args), cudaGetLastError())
#endif

#define ZD_TRY(call)                                 \
  do {                                               \
    cudaError_t e_ = (call);                         \
    if (e_ != cudaSuccess) return zd_cuda_fail(e_, #call); \
  } while (0)

/* Slot words of a launch carry its epoch, never reused in this process. */
static unsigned long long zd_next_epoch(void) {
  static unsigned long long next = 0;
  return __atomic_add_fetch(&next, 1ull, __ATOMIC_RELAXED);
}

/* CTAs the device holds at once (a persistent grid), cached per device. */
enum { ZD_K_COMPRESS, ZD_K_COMPRESS64, ZD_K_DECOMPRESS, ZD_K_HOP_SUM, ZD_K_HOP, ZD_K_NUM };
#define ZD_MAX_DEVICES 64
static int zd_grid_cache[ZD_K_NUM][ZD_MAX_DEVICES];

/* The launched kernel of each kind. */
static const void* zd_kernel_of(int kind) {
  switch (kind) {
    case ZD_K_COMPRESS: return (const void*)zd_compress_kernel<0>;
    case ZD_K_COMPRESS64: return (const void*)zd_compress_kernel<1>;
    case ZD_K_DECOMPRESS: return (const void*)zd_decompress_kernel;
    case ZD_K_HOP_SUM: return (const void*)zd_hop_kernel<1>;
    default: return (const void*)zd_hop_kernel<0>;
  }
}

static zcclResult_t zd_grid(int kind, int* grid) {
  const void* kernel = zd_kernel_of(kind);
  int dev = 0, sms = 0, per = 0;
  ZD_TRY(cudaGetDevice(&dev));
  if (dev >= 0 && dev < ZD_MAX_DEVICES) {
    int cached = __atomic_load_n(&zd_grid_cache[kind][dev], __ATOMIC_RELAXED);
    if (cached > 0) {
      *grid = cached;
      return zcclSuccess;
    }
  }
  ZD_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  ZD_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, ZD_T, 0));
  if (per < 1) return ZU_ERROR(zcclInternalError, "codec kernel: no CTA fits on an SM");
  *grid = sms * per;
  /* What sets the grid, for reading kernel figures against (once per
   * kind and device: the grid is cached below). */
  static const char* const names[ZD_K_NUM] = {"compress (float32)", "compress (float64)", "decompress", "hop (sum)",
                                              "hop (max, min)"};
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess)
    ZU_INFO(ZU_LOG_DEVICE,
            "codec kernel %s on GPU %d: %d registers, %zu B local and %zu B shared a thread/CTA, %d CTAs of %d "
            "threads per SM, grid %d",
            names[kind], dev, fa.numRegs, fa.localSizeBytes, fa.sharedSizeBytes, per, ZD_T, *grid);
  if (dev >= 0 && dev < ZD_MAX_DEVICES) __atomic_store_n(&zd_grid_cache[kind][dev], *grid, __ATOMIC_RELAXED);
  return zcclSuccess;
}

static uint64_t zd_nchunks(uint64_t count, unsigned lg) { return zc_ceil_shift(count, lg); }

extern "C" size_t zd_cuda_codec_scratch_bytes(size_t count, zcclDataType_t dtype, unsigned chunk_log2) {
  unsigned lg = chunk_log2 ? chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  size_t slots = ZD_CTL_BYTES + ZD_SLOT_BYTES * zd_nchunks(count, lg);
  /* room to copy one input of an in-place hop; a count whose bound
   * saturates (zc_compress_bound) must not wrap to a small scratch */
  size_t bound = zc_compress_bound(count, dtype, lg);
  if (bound > SIZE_MAX / 2 || slots > SIZE_MAX / 4) return SIZE_MAX;
  return ((slots + 15) & ~(size_t)15) + bound + 16;
}

/* A hop into cap bytes: a chunk takes at least 13 bytes of a stream (its
 * index entry, its base, a one-byte zero block), so cap holds at most
 * (cap - header) / 13 chunks; plus room to copy both inputs of an in-place
 * hop (each no larger than cap). */
extern "C" size_t zd_cuda_hop_scratch_bytes(size_t cap) {
  size_t chunks = cap > ZC_HEADER_BYTES ? (cap - ZC_HEADER_BYTES) / 13 + 1 : 1;
  return ((ZD_CTL_BYTES + ZD_SLOT_BYTES * chunks + 15) & ~(size_t)15) + 2 * ((cap + 15) & ~(size_t)15) + 16;
}

/* The launchers' checks and arguments, shared by both modes. */
zcclResult_t zd_compress_args(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                              uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status,
                              zd_cargs_t* args) {
  ZU_RETURN_ERR_IF(p == NULL || out == NULL || out_size == NULL || status == NULL || scratch == NULL ||
                       (in == NULL && count > 0),
                   zcclInvalidArgument, "zd_cuda_compress: NULL argument");
  ZU_RETURN_ERR_IF(p->dtype != zcclFloat32 && p->dtype != zcclFloat64, zcclInvalidArgument,
                   "zd_cuda_compress: dtype %d is not float32/float64", (int)p->dtype);
  ZU_RETURN_ERR_IF(!(isfinite(p->eb) && p->eb > 0), zcclInvalidArgument,
                   "zd_cuda_compress: error bound %g must be finite and > 0", p->eb);
  ZU_RETURN_ERR_IF(p->has_fill && !isfinite(p->fill), zcclInvalidArgument,
                   "zd_cuda_compress: the fill value must be finite");
  unsigned lg = p->chunk_log2 ? p->chunk_log2 : ZC_CHUNK_LOG2_DEFAULT;
  ZU_RETURN_ERR_IF(lg < ZC_CHUNK_LOG2_MIN || lg > ZC_CHUNK_LOG2_MAX, zcclInvalidArgument,
                   "zd_cuda_compress: chunk size 2^%u outside 2^%d..2^%d", lg, ZC_CHUNK_LOG2_MIN, ZC_CHUNK_LOG2_MAX);
  uint64_t nchunks = zd_nchunks(count, lg);
  ZU_RETURN_ERR_IF(nchunks > UINT32_MAX, zcclInvalidArgument, "zd_cuda_compress: %zu values is too many", count);
  ZU_RETURN_ERR_IF(((uintptr_t)in & 3) != 0 || ((uintptr_t)scratch & 7) != 0, zcclInvalidArgument,
                   "zd_cuda_compress: the input must be 4-byte aligned, the scratch 8-byte aligned");
  ZU_RETURN_ERR_IF(scratch_bytes < ZD_CTL_BYTES + ZD_SLOT_BYTES * nchunks, zcclInvalidArgument,
                   "zd_cuda_compress: scratch of %zu bytes, %llu needed", scratch_bytes,
                   (unsigned long long)(ZD_CTL_BYTES + ZD_SLOT_BYTES * nchunks));
  zd_cargs_t& A = *args;
  A.in = (const uint8_t*)in;
  A.count = count;
  A.out = (uint8_t*)out;
  A.cap = cap;
  A.out_size = out_size;
  A.status = status;
  A.scratch = (uint8_t*)scratch;
  A.epoch = zd_next_epoch();
  A.eb = p->eb;
  A.fill = p->fill;
  A.has_fill = p->has_fill != 0;
  A.f64 = p->dtype == zcclFloat64;
  A.checksum = p->checksum != 0;
  A.lg = lg;
  A.nchunks = (uint32_t)nchunks;
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_compress(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                                         uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status,
                                         zd_cuda_stream_t stream) {
  zd_cargs_t A;
  ZU_CHECK(zd_compress_args(p, in, count, out, cap, out_size, scratch, scratch_bytes, status, &A));
  const uint64_t nchunks = A.nchunks;
  int grid;
  ZU_CHECK(zd_grid(A.f64 ? ZD_K_COMPRESS64 : ZD_K_COMPRESS, &grid));
  if ((uint64_t)grid > nchunks) grid = nchunks > 0 ? (int)nchunks : 1;
  cudaStream_t s = (cudaStream_t)stream;
  ZD_TRY(cudaMemsetAsync(scratch, 0, ZD_CTL_BYTES, s));
  if (A.f64)
    ZD_TRY(ZD_LAUNCH(zd_compress_kernel<1>, grid, s, A));
  else
    ZD_TRY(ZD_LAUNCH(zd_compress_kernel<0>, grid, s, A));
  return zcclSuccess;
}

zcclResult_t zd_decompress_args(const void* stream_bytes, const uint64_t* size, void* out, size_t count,
                                int* status, zd_dargs_t* args) {
  ZU_RETURN_ERR_IF(stream_bytes == NULL || size == NULL || status == NULL || (out == NULL && count > 0),
                   zcclInvalidArgument, "zd_cuda_decompress: NULL argument");
  ZU_RETURN_ERR_IF(((uintptr_t)out & 3) != 0, zcclInvalidArgument,
                   "zd_cuda_decompress: the output must be 4-byte aligned");
  zd_dargs_t& A = *args;
  A.s = (const uint8_t*)stream_bytes;
  A.size = size;
  A.out = (uint8_t*)out;
  A.count = count;
  A.status = status;
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_decompress(const void* stream_bytes, const uint64_t* size, void* out, size_t count,
                                           int* status, zd_cuda_stream_t stream) {
  zd_dargs_t A;
  ZU_CHECK(zd_decompress_args(stream_bytes, size, out, count, status, &A));
  int grid;
  ZU_CHECK(zd_grid(ZD_K_DECOMPRESS, &grid));
  /* At most one CTA per smallest chunk (the chunk size is in the stream). */
  uint64_t most = (count + ZC_BLOCK - 1) / ZC_BLOCK;
  if ((uint64_t)grid > most) grid = most > 0 ? (int)most : 1;
  ZD_TRY(ZD_LAUNCH(zd_decompress_kernel, grid, (cudaStream_t)stream, A));
  return zcclSuccess;
}

zcclResult_t zd_hop_args(zcclRedOp_t op, const void* a, const uint64_t* a_size, const void* b,
                         const uint64_t* b_size, void* out, size_t cap, uint64_t* out_size, void* scratch,
                         size_t scratch_bytes, int* status, zd_hargs_t* args) {
  ZU_RETURN_ERR_IF(op != zcclSum && op != zcclMax && op != zcclMin, zcclInvalidArgument,
                   "zd_cuda_hop: op %d is not sum, max or min", (int)op);
  ZU_RETURN_ERR_IF(a == NULL || a_size == NULL || b == NULL || b_size == NULL || out == NULL || out_size == NULL ||
                       scratch == NULL || status == NULL,
                   zcclInvalidArgument, "zd_cuda_hop: NULL argument");
  ZU_RETURN_ERR_IF(scratch_bytes < ZD_CTL_BYTES || ((uintptr_t)scratch & 7) != 0, zcclInvalidArgument,
                   "zd_cuda_hop: scratch of %zu bytes, or not 8-byte aligned", scratch_bytes);
  zd_hargs_t& A = *args;
  A.op = op;
  A.a = (const uint8_t*)a;
  A.a_size = a_size;
  A.b = (const uint8_t*)b;
  A.b_size = b_size;
  A.out = (uint8_t*)out;
  A.cap = cap;
  A.out_size = out_size;
  A.status = status;
  A.scratch = (uint8_t*)scratch;
  A.scratch_bytes = scratch_bytes;
  A.epoch = zd_next_epoch();
  A.inplace = out == a || out == b;
  /* Out of place, a CTA may start after the last chunk wrote *out_size, so
   * it must not be an input's size word (in place, the hop reads the sizes
   * the staging kernel kept before it). */
  ZU_RETURN_ERR_IF(!A.inplace && (out_size == a_size || out_size == b_size), zcclInvalidArgument,
                   "zd_cuda_hop: out_size is an input's size word (allowed in place only)");
  return zcclSuccess;
}

extern "C" zcclResult_t zd_cuda_hop(zcclRedOp_t op, const void* a, const uint64_t* a_size, const void* b,
                                    const uint64_t* b_size, void* out, size_t cap, uint64_t* out_size, void* scratch,
                                    size_t scratch_bytes, int* status, zd_cuda_stream_t stream) {
  zd_hargs_t A;
  ZU_CHECK(zd_hop_args(op, a, a_size, b, b_size, out, cap, out_size, scratch, scratch_bytes, status, &A));
  const int sum = op == zcclSum;
  int grid;
  ZU_CHECK(zd_grid(sum ? ZD_K_HOP_SUM : ZD_K_HOP, &grid));
  cudaStream_t s = (cudaStream_t)stream;
  ZD_TRY(cudaMemsetAsync(scratch, 0, ZD_CTL_BYTES, s));
  if (A.inplace) ZD_TRY(ZD_LAUNCH(zd_hop_stage_kernel, grid, s, A));
  if (sum)
    ZD_TRY(ZD_LAUNCH(zd_hop_kernel<1>, grid, s, A));
  else
    ZD_TRY(ZD_LAUNCH(zd_hop_kernel<0>, grid, s, A));
  return zcclSuccess;
}

/* ---- persistent mode: what the queue (zd_cuda_queue.cu) asks of the kernel -- */

#ifndef ZD_LAUNCH_PERSIST
#define ZD_LAUNCH_PERSIST ZD_LAUNCH
#endif

cudaError_t zd_cuda_pq_occupancy(int* per_sm) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, (const void*)zd_persist_kernel, ZD_T, 0);
}

cudaError_t zd_cuda_pq_launch(zd_pargs_t args, int grid, cudaStream_t stream) {
  return ZD_LAUNCH_PERSIST(zd_persist_kernel, grid, stream, args);
}

/* The three kernels, and the grid each gets on this GPU (zd_cuda_kernels.h). */
extern "C" zcclResult_t zd_cuda_codec_load(void) {
  ZD_CUDA_LOAD(zd_compress_kernel<0>);
  ZD_CUDA_LOAD(zd_compress_kernel<1>);
  ZD_CUDA_LOAD(zd_decompress_kernel);
  ZD_CUDA_LOAD(zd_hop_kernel<1>);
  ZD_CUDA_LOAD(zd_hop_kernel<0>);
  ZD_CUDA_LOAD(zd_hop_stage_kernel);
  ZD_CUDA_LOAD(zd_persist_kernel);
  int grid;
  for (int kind = 0; kind < ZD_K_NUM; kind++) ZU_CHECK(zd_grid(kind, &grid));
  return zcclSuccess;
}
