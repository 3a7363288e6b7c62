/* Message tags (white box: proto's zp_tag.h, transport's zt_tag): the sub
 * of a collective message is injective over its fields, operations fewer
 * than 2^16 apart never share a tag, the kinds never meet and the failure
 * notices' mask takes every rank's notice and nothing else, and the
 * purposes that share one operation use disjoint tags. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zp_tag.h"

#define SUB_MASK ((uint64_t)((1u << ZP_TAG_SUB_BITS) - 1))
#define SEQ_WINDOW ((1u << ZP_TAG_SEQ_BITS) - 1)

/* (a) Every (part, step, chunk) in the declared ranges gives its own sub,
 * inside the sub's bits; past the ranges step and chunk wrap. */
static void test_sub_injective(void) {
  size_t nsubs = (size_t)1 << ZP_TAG_SUB_BITS;
  uint8_t* seen = calloc(nsubs / 8, 1);
  CHECK(seen != NULL);
  if (seen == NULL) return;
  int dups = 0, outside = 0;
  for (uint32_t p = 0; p < ZP_TAG_NPARTS; p++)
    for (uint32_t s = 0; s < ZP_TAG_STEPS; s++)
      for (uint32_t c = 0; c < ZP_TAG_CHUNKS; c++) {
        uint32_t v = zp_sub((zp_tag_part_t)p, s, c);
        if (v >= nsubs) {
          outside++;
          continue;
        }
        if (seen[v / 8] & (1u << (v % 8))) dups++;
        seen[v / 8] |= (uint8_t)(1u << (v % 8));
      }
  CHECK(dups == 0);
  CHECK(outside == 0);
  free(seen);
  /* Wrapping, as zp_tag.h says, and zp_sub_step keeps part and chunk. */
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  int bad_wrap = 0, bad_step = 0;
  for (int i = 0; i < 100000; i++) {
    zp_tag_part_t p = (zp_tag_part_t)(test_xorshift(&rng) % ZP_TAG_NPARTS);
    uint32_t s = (uint32_t)test_xorshift(&rng), c = (uint32_t)test_xorshift(&rng), t = (uint32_t)test_xorshift(&rng);
    bad_wrap += zp_sub(p, s, c) != zp_sub(p, s % ZP_TAG_STEPS, c % ZP_TAG_CHUNKS);
    bad_wrap += zp_sub(p, s + ZP_TAG_STEPS, c + ZP_TAG_CHUNKS) != zp_sub(p, s, c);
    bad_step += zp_sub_step(zp_sub(p, s, c), t) != zp_sub(p, t, c);
  }
  CHECK(bad_wrap == 0);
  CHECK(bad_step == 0);
  CHECK(zp_sub(ZP_TAG_ALGO, 0, 0) == 0 && ZP_SUB_ALGO == 0);
}

/* (b) A collective tag's sub sits in its own low bits, and sequence
 * numbers s and s + d, 0 < d < 2^16, never share a tag whatever the subs,
 * across the sequence field's wrap and the counter's own; at d = 2^16 they
 * do (the window zp_tag.h documents). */
static void test_seq_window(void) {
  const uint32_t starts[] = {0, 1, 0x7fff, 0xfffe, 0xffff, 0x10000, 0xffffff, 0x1000000, 0xfffffff0u, UINT32_MAX};
  const int srcs[] = {0, 1, 7, 4095, ZT_MAX_RANKS - 1};
  uint64_t rng = 12345;
  int bad_disjoint = 0, bad_window = 0, bad_pairs = 0;
  for (size_t j = 0; j < sizeof srcs / sizeof *srcs; j++)
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
      int r = srcs[j];
      uint32_t s = starts[i];
      uint64_t base = zp_tag(r, s, 0);
      for (int k = 0; k < 64; k++) {
        uint32_t sub = (uint32_t)(test_xorshift(&rng) & SUB_MASK);
        bad_disjoint += zp_tag(r, s, sub) != (base | sub);
      }
      for (uint32_t d = 1; d <= SEQ_WINDOW; d++) {
        /* Different bits above the sub: no two subs can make them equal. */
        bad_window += ((zp_tag(r, s + d, 0) ^ base) & ~SUB_MASK) == 0;
        if (d % 251 == 0) {
          uint32_t x = (uint32_t)(test_xorshift(&rng) & SUB_MASK), y = (uint32_t)(test_xorshift(&rng) & SUB_MASK);
          bad_pairs += zp_tag(r, s, x) == zp_tag(r, s + d, y) || zp_tag(r, s, x) == zp_tag(r, s + d, x);
        }
      }
      CHECK(zp_tag(r, s, 5) == zp_tag(r, s + SEQ_WINDOW + 1, 5));
    }
  CHECK(bad_disjoint == 0);
  CHECK(bad_window == 0);
  CHECK(bad_pairs == 0);
}

/* (c) Kinds keep collective, point-to-point and internal tags apart; the
 * source field holds every rank; point-to-point and internal tags keep
 * their layout; the notices' mask matches every rank's notice only. */
static void test_kinds_and_notices(void) {
  int bad_kind = 0, bad_src = 0, bad_layout = 0, bad_notice = 0, stray = 0;
  uint64_t mask = zp_notice_mask(), want = zp_notice_tag(0) & mask;
  CHECK(mask == ~ZT_TAG_SRC_MASK);
  for (int r = 0; r < ZT_MAX_RANKS; r++) {
    uint64_t c = zp_tag(r, (uint32_t)r * 2654435761u, (uint32_t)r);
    bad_kind += (c >> 60) != ZT_TAG_COLL;
    bad_src += (c & ZT_TAG_SRC_MASK) != (uint64_t)r << ZT_TAG_SRC_SHIFT;
    bad_notice += (zp_notice_tag(r) & mask) != want;
    bad_kind += (zp_notice_tag(r) >> 60) != ZT_TAG_INTERNAL || (zp_sig_tag(r, (uint32_t)r) >> 60) != ZT_TAG_INTERNAL;
  }
  uint64_t rng = 777;
  const uint32_t edge[] = {0, 1, 2, 0xffff, 0xfffffe, 0xffffff, UINT32_MAX};
  for (int i = 0; i < 200000; i++) {
    int r = (int)(test_xorshift(&rng) % ZT_MAX_RANKS);
    uint32_t seq = i < 49 ? edge[i % 7] : (uint32_t)test_xorshift(&rng);
    uint32_t sub = i < 49 ? edge[i / 7] : (uint32_t)test_xorshift(&rng);
    uint64_t coll = zp_tag(r, seq, sub), p2p = zt_tag(ZT_TAG_P2P, r, seq, sub & 0xffff);
    uint64_t split = zt_tag(ZT_TAG_INTERNAL, r, seq, 0), shrink = zt_tag(ZT_TAG_INTERNAL, r, seq, 2);
    uint64_t sig = zp_sig_tag(r, seq);
    bad_kind += (coll >> 60) != ZT_TAG_COLL || (p2p >> 60) != ZT_TAG_P2P;
    bad_kind += coll == p2p || coll == sig || coll == split || p2p == sig || p2p == split;
    bad_layout += p2p != ((uint64_t)ZT_TAG_P2P << 60 | (uint64_t)r << 40 | (uint64_t)(seq & 0xffffff) << 16 |
                          (sub & 0xffff));
    bad_layout += sig != ((uint64_t)ZT_TAG_INTERNAL << 60 | (uint64_t)r << 40 | (uint64_t)(seq & 0xffffff) << 16 | 1);
    /* The notice receive takes none of the others, whatever their fields. */
    stray += (coll & mask) == want || (p2p & mask) == want || (sig & mask) == want;
    stray += (split & mask) == want || (shrink & mask) == want;
  }
  CHECK(bad_kind == 0);
  CHECK(bad_src == 0);
  CHECK(bad_layout == 0);
  CHECK(bad_notice == 0);
  CHECK(stray == 0);
}

/* (d) What the algorithms put in one operation, by part: the steps and
 * chunks each purpose uses (ranges wrap where the code's numbers can pass
 * the field). Rows of one algorithm run in one operation; rows with no
 * algorithm (agreements, the size exchanges) may run inside any. */
#define ALL_S 0, ZP_TAG_STEPS - 1
#define ALL_C 0, ZP_TAG_CHUNKS - 1
#define RD_ROUNDS 1, 20 /* recursive doubling: log2 of at most 2^20 ranks */
#define LAST ZP_TAG_STEP_LAST, ZP_TAG_STEP_LAST
typedef struct {
  const char* algo; /* NULL: may share any operation */
  const char* what;
  zp_tag_part_t part;
  uint32_t s0, s1, c0, c1; /* steps [s0, s1], chunks [c0, c1] */
} use_t;
static const use_t uses[] = {
    {"ring allreduce", "reduce-scatter: step, slice", ZP_TAG_ALGO, ALL_S, ALL_C},
    {"ring allreduce", "allgather of a slice: step, slice", ZP_TAG_NESTED_RING, ALL_S, ALL_C},
    {"ring reduce-scatter", "step, slice", ZP_TAG_ALGO, ALL_S, ALL_C},
    {"ring allgather", "step (windows reuse them)", ZP_TAG_ALGO, ALL_S, 0, 0},
    {"scatter-allgather broadcast", "scatter", ZP_TAG_ALGO, 0, 0, 0, 0},
    {"scatter-allgather broadcast", "ring allgather: step", ZP_TAG_NESTED_RING, ALL_S, 0, 0},
    {"direct allreduce", "reduce-scatter round: slice", ZP_TAG_ALGO, 0, 0, ALL_C},
    {"direct allreduce", "allgather round: slice", ZP_TAG_ALGO_PHASE2, 0, 0, ALL_C},
    {"rd allreduce", "fold-in", ZP_TAG_ALGO, 0, 0, 0, 0},
    {"rd allreduce", "rounds", ZP_TAG_ALGO, RD_ROUNDS, 0, 0},
    {"rd allreduce", "fold-out", ZP_TAG_ALGO, LAST, 0, 0},
    {"rabenseifner", "fold-in", ZP_TAG_ALGO, 0, 0, 0, 0},
    {"rabenseifner", "halving and doubling rounds", ZP_TAG_ALGO, 1, 40, 0, 0},
    {"rabenseifner", "fold-out", ZP_TAG_ALGO, LAST, 0, 0},
    {"bruck allgather", "steps", ZP_TAG_ALGO, 0, 19, 0, 0},
    {"rd allgather", "steps", ZP_TAG_ALGO, 0, 19, 0, 0},
    {"pairwise alltoall", "steps", ZP_TAG_ALGO, ALL_S, 0, 0},
    {"chain", "pieces", ZP_TAG_ALGO, 0, 0, ALL_C},
    {"doc ring", "step, chunk", ZP_TAG_ALGO, ALL_S, 0, 31},
    {"doc chain", "chunks", ZP_TAG_ALGO, 0, 0, 0, 31},
    {"hz rd", "fold-in: slice", ZP_TAG_ALGO, 0, 0, ALL_C},
    {"hz rd", "rounds: slice", ZP_TAG_ALGO, RD_ROUNDS, ALL_C},
    {"hz rd", "fold-out: slice", ZP_TAG_ALGO, LAST, ALL_C},
    {"cprp2p allreduce", "reduce-scatter: step, slice", ZP_TAG_ALGO, ALL_S, ALL_C},
    {"cprp2p allreduce", "allgather: step, slice", ZP_TAG_ALGO_PHASE2, ALL_S, ALL_C},
    {"cprp2p tree", "slices", ZP_TAG_ALGO, 0, 0, ALL_C},
    {"sparse allreduce", "reduce chain: pieces", ZP_TAG_ALGO, 0, 0, ALL_C},
    {"sparse allreduce", "broadcast chain: pieces", ZP_TAG_ALGO_PHASE2, 0, 0, ALL_C},
    {"compressed allgather", "byte ring: steps", ZP_TAG_ALGO, ALL_S, 0, 0},
    {"compressed allgather", "sizes: ring steps", ZP_TAG_STREAM_SIZES, ALL_S, 0, 0},
    {"compressed broadcast", "the stream by a nested uncompressed broadcast", ZP_TAG_ALGO, ALL_S, ALL_C},
    {"compressed broadcast", "(its scatter-allgather's ring)", ZP_TAG_NESTED_RING, ALL_S, 0, 0},
    {"compressed broadcast", "the stream's size: tree broadcast", ZP_TAG_BCAST_SIZE, 0, 0, 0, 0},
    {"compressed scatter, gather, hz tree", "one message a pair", ZP_TAG_ALGO, 0, 0, 0, 0},
    {"compressed alltoall", "steps", ZP_TAG_ALGO, ALL_S, 0, 0},
    {"calibration", "exchanges, fan-out, readies, direct rounds, later latency rounds", ZP_TAG_ALGO, 0, 53, 0, 0},
    {"calibration", "max-allreduce: fold-in, rounds", ZP_TAG_NESTED_RD, 0, 20, 0, 0},
    {"calibration", "max-allreduce: fold-out", ZP_TAG_NESTED_RD, LAST, 0, 0},
    {NULL, "REL bound: max-allreduce", ZP_TAG_EB_AGREE, 0, 20, 0, 0},
    {NULL, "REL bound: fold-out", ZP_TAG_EB_AGREE, LAST, 0, 0},
    {NULL, "root's bound: tree broadcast; flags: max-allreduce", ZP_TAG_ROOT_AGREE, 0, 20, 0, 0},
    {NULL, "flags: fold-out", ZP_TAG_ROOT_AGREE, LAST, 0, 0},
    {NULL, "cprp2p zfp: who failed", ZP_TAG_CPR_WHO, 0, 20, 0, 0},
    {NULL, "cprp2p zfp: fold-out", ZP_TAG_CPR_WHO, LAST, 0, 0},
    {NULL, "codec=auto: zero fraction", ZP_TAG_AUTO_ZEROS, 0, 20, 0, 0},
    {NULL, "codec=auto: fold-out", ZP_TAG_AUTO_ZEROS, LAST, 0, 0},
};

static int overlap(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) { return a0 <= b1 && b0 <= a1; }

static void test_purposes_disjoint(void) {
  size_t n = sizeof uses / sizeof *uses;
  int used[ZP_TAG_NPARTS] = {0};
  for (size_t i = 0; i < n; i++) {
    const use_t* u = &uses[i];
    CHECK(u->part < ZP_TAG_NPARTS && u->s0 <= u->s1 && u->s1 < ZP_TAG_STEPS && u->c0 <= u->c1 &&
          u->c1 < ZP_TAG_CHUNKS);
    used[u->part] = 1;
    /* The box's corners are the subs the code makes: distinct parts stay apart. */
    uint32_t lo = zp_sub(u->part, u->s0, u->c0), hi = zp_sub(u->part, u->s1, u->c1);
    CHECK(lo >> (ZP_TAG_STEP_BITS + ZP_TAG_CHUNK_BITS) == (uint32_t)u->part);
    CHECK(hi >> (ZP_TAG_STEP_BITS + ZP_TAG_CHUNK_BITS) == (uint32_t)u->part);
    for (size_t j = i + 1; j < n; j++) {
      const use_t* v = &uses[j];
      int together = u->algo == NULL || v->algo == NULL || strcmp(u->algo, v->algo) == 0;
      if (!together || u->part != v->part) continue;
      int meet = overlap(u->s0, u->s1, v->s0, v->s1) && overlap(u->c0, u->c1, v->c0, v->c1);
      if (meet)
        fprintf(stderr, "tags meet: %s (%s) and %s (%s)\n", u->algo ? u->algo : "any", u->what,
                v->algo ? v->algo : "any", v->what);
      CHECK(!meet);
    }
  }
  for (int p = 0; p < ZP_TAG_NPARTS; p++) CHECK(used[p]); /* no part without a use */
}

int main(void) {
  test_sub_injective();
  test_seq_window();
  test_kinds_and_notices();
  test_purposes_disjoint();
  TEST_DONE();
}
