/* Algorithm selection without a launcher (white box: proto layer): a table
 * of (collective, bytes, ranks, link, codec, ZCCL_ALGO) -> the algorithm
 * the cost model or a rule picks, and the parser of ZCCL_ALGO's rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "zd_device.h"
#include "zp_algo.h"
#include "zp_stream.h"

static zd_dev_t* dev;

typedef struct {
  zp_coll_id_t coll;
  size_t bytes;        /* float32 values x 4: per rank for allgather, gather, scatter, alltoall */
  int nranks;
  double alpha, bw;    /* the link: seconds, bytes/s */
  int codec;           /* zcclCodec_t (zcclCodecNone: uncompressed) */
  const char* algo;    /* ZCCL_ALGO ("": unset) */
  const char* name;    /* expected: the algorithm's name, and its description where names repeat */
  const char* desc;
  int by_rule;
} select_case_t;

#define GBIT (1e9 / 8)
static const select_case_t cases[] = {
    /* The model. An allreduce of fewer values than ranks: only rd can. */
    {ZP_COLL_ALLREDUCE, 8, 4, 20e-6, GBIT, zcclCodecNone, "", "rd", NULL, 0},
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecNone, "", "ring", NULL, 0},
    /* 8 ranks, 4 bytes: 3 latencies (tree) against 7 (chain) or a round of 7 messages (direct). */
    {ZP_COLL_BROADCAST, 4, 8, 20e-6, 10 * GBIT, zcclCodecNone, "", "tree", NULL, 0},
    {ZP_COLL_BROADCAST, 64 << 20, 8, 20e-6, 10 * GBIT, zcclCodecNone, "", "chain", NULL, 0},
    {ZP_COLL_GATHER, 64, 4, 20e-6, GBIT, zcclCodecNone, "", "tree", NULL, 0},
    {ZP_COLL_REDUCESCATTER, 1 << 20, 4, 20e-6, GBIT, zcclCodecNone, "", "ring", NULL, 0},
    {ZP_COLL_ALLTOALL, 1 << 20, 4, 20e-6, GBIT, zcclCodecNone, "", "pairwise", NULL, 0},
    /* Compressed: hz's ring for large, recursive doubling for small. */
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecHz, "", "ring", "homomorphic ring", 0},
    {ZP_COLL_ALLREDUCE, 64, 4, 20e-6, GBIT, zcclCodecHz, "", "rd", "homomorphic recursive doubling", 0},
    /* szp: the DOC ring; CPRP2P only when named, except for zfp (its only reduction). */
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecSzp, "", "ring", "DOC ring", 0},
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecZfp, "", "cprp2p", NULL, 0},
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecSzp, "cprp2p", "cprp2p", NULL, 1},
    {ZP_COLL_REDUCE, 4 << 20, 4, 20e-6, GBIT, zcclCodecRle, "", "sparse", NULL, 0},
    /* Broadcast: the stream broadcast where one piece is all, the compressed chain where pieces overlap. */
    {ZP_COLL_BROADCAST, 64 << 10, 4, 20e-6, GBIT, zcclCodecHz, "", "tree", "compress-once, stream broadcast", 0},
    {ZP_COLL_BROADCAST, 4 << 20, 4, 20e-6, GBIT, zcclCodecHz, "", "chain", "compress-once, pipelined chain", 0},
    {ZP_COLL_BROADCAST, 128 << 20, 4, 20e-6, GBIT, zcclCodecHz, "", "chain", "compress-once, pipelined chain", 0},
    /* Rules: per collective and size; an entry that cannot run falls through. */
    {ZP_COLL_ALLREDUCE, 1 << 20, 4, 20e-6, GBIT, zcclCodecNone, "allreduce:ring@0-4M,rd;broadcast:tree", "ring",
     NULL, 1},
    {ZP_COLL_ALLREDUCE, 16 << 20, 4, 20e-6, GBIT, zcclCodecNone, "allreduce:ring@0-4M,rd;broadcast:tree", "rd",
     NULL, 1},
    {ZP_COLL_BROADCAST, 64 << 20, 8, 20e-6, 10 * GBIT, zcclCodecNone, "allreduce:ring@0-4M,rd;broadcast:tree",
     "tree", NULL, 1},
    {ZP_COLL_ALLGATHER, 64 << 20, 4, 20e-6, GBIT, zcclCodecNone, "allreduce:ring@0-4M,rd;broadcast:tree", "direct",
     NULL, 0},
    /* A bare name, as before rules: every collective that has it. */
    {ZP_COLL_ALLGATHER, 64, 4, 20e-6, GBIT, zcclCodecNone, "direct", "direct", NULL, 1},
    {ZP_COLL_ALLREDUCE, 8, 4, 20e-6, GBIT, zcclCodecNone, "ring", "rd", NULL, 0},
    {ZP_COLL_ALLREDUCE, 64, 4, 20e-6, GBIT, zcclCodecHz, "ring", "ring", "homomorphic ring", 1},
    /* A collective's own rules go before the others. */
    {ZP_COLL_ALLREDUCE, 64 << 20, 4, 20e-6, GBIT, zcclCodecNone, "ring;allreduce:rabenseifner", "rabenseifner",
     NULL, 1},
    {ZP_COLL_ALLGATHER, 1 << 20, 4, 20e-6, GBIT, zcclCodecNone, "bruck ; allreduce : direct@64K-", "bruck", NULL, 1},
    {ZP_COLL_ALLREDUCE, 1 << 20, 4, 20e-6, GBIT, zcclCodecNone, "bruck ; allreduce : direct@64K-", "direct", NULL, 1},
    {ZP_COLL_ALLREDUCE, 1 << 10, 4, 20e-6, GBIT, zcclCodecNone, "bruck ; allreduce : direct@64K-", "rd", NULL, 0},
    /* Allgathers up to 1 MiB a step: recursive doubling where N is a power
     * of two; not at 6 ranks, nor at 2 MiB a step even when named. */
    {ZP_COLL_ALLGATHER, 64 << 10, 4, 20e-6, 10 * GBIT, zcclCodecNone, "", "rd", NULL, 0},
    {ZP_COLL_ALLGATHER, 256 << 10, 8, 20e-6, 10 * GBIT, zcclCodecNone, "", "rd", NULL, 0},
    {ZP_COLL_ALLGATHER, 8 << 10, 6, 20e-6, 10 * GBIT, zcclCodecNone, "rd", "direct", NULL, 0},
    {ZP_COLL_ALLGATHER, 4 << 20, 4, 20e-6, 10 * GBIT, zcclCodecNone, "rd", "direct", NULL, 0},
    /* Bruck's N blocks (256 MiB) do not fit the pool: the model chooses. */
    {ZP_COLL_ALLGATHER, 64 << 20, 4, 20e-6, GBIT, zcclCodecNone, "bruck", "direct", NULL, 0},
    /* rd's temporary (the whole buffer) does not fit a 64 MiB pool. */
    {ZP_COLL_ALLREDUCE, 128 << 20, 4, 20e-6, GBIT, zcclCodecNone, "rd", "ring", NULL, 0},
};

static void check_case(const select_case_t* c) {
  zp_link_t link = {.alpha = c->alpha, .bandwidth = c->bw, .incast = 1, .cpu_share = 1};
  zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = c->nranks};
  zp_algo_rules_t rules;
  zp_algo_rules_parse(c->algo, &rules);
  zp_coll_args_t a = {.coll = c->coll, .count = c->bytes / 4, .datatype = zcclFloat32, .op = zcclSum,
                      .nranks = c->nranks};
  a.compression.codec = c->codec;
  double t = -1;
  int by_rule = -1;
  const zp_algo_t* al = zp_algo_select(&ctx, &a, &rules, &t, &by_rule);
  CHECK(al != NULL);
  if (!al) return;
  int ok = strcmp(al->name, c->name) == 0 && (!c->desc || strcmp(al->desc, c->desc) == 0) &&
           by_rule == c->by_rule && al->coll == c->coll && t > 0;
  if (!ok)
    fprintf(stderr, "%s %zu bytes, %d ranks, codec %d, ZCCL_ALGO='%s': got %s (%s, rule %d, %g s), want %s%s%s\n",
            zp_algo_coll_name(c->coll), c->bytes, c->nranks, c->codec, c->algo, al->name, al->desc, by_rule, t,
            c->name, c->desc ? " / " : "", c->desc ? c->desc : "");
  CHECK(ok);
}

/* What the kind of link decides, whatever the calibrated fan-out read
 * (1.0-1.9 over shared memory, 1.2-3.0 on emulated 10 Gbit/s links):
 * - the small allreduce: over shared memory (zp_link_t.shm) the one-shot's
 *   single round beats recursive doubling's log2 N steps; over a network
 *   (or not measured) its N-1 messages cost more. Never for large calls:
 *   the one-shot sends N-1 copies of the buffer ("!": any but).
 * - large broadcasts: over shared memory direct (the receivers copy in
 *   parallel); over a network the fan-out prices the root's N-1 copies
 *   and the chain wins. */
static void check_link_kind(void) {
  struct {
    zp_coll_id_t coll;
    int shm;
    double fanout;
    size_t bytes;
    int nranks;
    const char* want;
  } k[] = {{ZP_COLL_ALLREDUCE, 1, 1.0, 8, 4, "oneshot"},        {ZP_COLL_ALLREDUCE, 1, 1.2, 512, 4, "oneshot"},
           {ZP_COLL_ALLREDUCE, 1, 1.0, 8, 3, "oneshot"},        {ZP_COLL_ALLREDUCE, 1, 2.9, 8, 4, "oneshot"},
           {ZP_COLL_ALLREDUCE, 0, 2.9, 8, 4, "rd"},             {ZP_COLL_ALLREDUCE, 0, 1.2, 8, 4, "rd"},
           {ZP_COLL_ALLREDUCE, 0, 0, 8, 4, "rd"},               {ZP_COLL_ALLREDUCE, 1, 1.0, 8, 2, "rd"},
           {ZP_COLL_ALLREDUCE, 1, 1.0, 1 << 20, 4, "!oneshot"}, {ZP_COLL_BROADCAST, 1, 1.0, 16 << 20, 4, "direct"},
           {ZP_COLL_BROADCAST, 1, 1.5, 16 << 20, 4, "direct"},  {ZP_COLL_BROADCAST, 1, 1.9, 64 << 20, 4, "direct"},
           {ZP_COLL_BROADCAST, 0, 1.5, 16 << 20, 4, "chain"},   {ZP_COLL_BROADCAST, 0, 3.0, 64 << 20, 4, "chain"},
           {ZP_COLL_BROADCAST, 1, 1.5, 256, 4, "tree"}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    int bcast = k[i].coll == ZP_COLL_BROADCAST;
    zp_link_t link = {.alpha = bcast ? 3e-6 : 5e-6, .bandwidth = 3e9, .fanout = k[i].fanout, .incast = 1,
                      .cpu_share = 2, .shm = k[i].shm};
    zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = k[i].nranks};
    zp_coll_args_t a = {.coll = k[i].coll, .count = bcast ? k[i].bytes : k[i].bytes / 4,
                        .datatype = bcast ? zcclUint8 : zcclFloat32, .op = zcclSum, .nranks = k[i].nranks};
    double t = -1;
    const zp_algo_t* al = zp_algo_select(&ctx, &a, NULL, &t, NULL);
    int ok = al && (k[i].want[0] == '!' ? strcmp(al->name, k[i].want + 1) != 0 : strcmp(al->name, k[i].want) == 0);
    if (!ok)
      fprintf(stderr, "%s %zu bytes, %d ranks, %s, fan-out %.1f: got %s, want %s\n", zp_algo_coll_name(k[i].coll),
              k[i].bytes, k[i].nranks, k[i].shm ? "shared memory" : "network", k[i].fanout, al ? al->name : "none",
              k[i].want);
    CHECK(ok);
  }
}

/* Every descriptor is complete, and no two of one collective and codec
 * share a name (a rule could reach only the first). */
static void check_table(void) {
  CHECK(zp_algo_count() > 30);
  for (size_t i = 0; i < zp_algo_count(); i++) {
    const zp_algo_t* al = zp_algo_at(i);
    CHECK(al->name && al->desc && al->cost && al->run && strlen(al->desc) > 5);
    for (int c = 1; c < zcclNumCodecs; c++) { /* forced only where it runs at all */
      unsigned caps = zc_codec_info(c)->caps;
      CHECK(!(al->forced_only & caps) || (al->needs & caps));
    }
    for (size_t j = 0; j < i; j++) {
      const zp_algo_t* b = zp_algo_at(j);
      int same_kind = 0;
      for (int c = 0; c < zcclNumCodecs; c++) { /* some codec (or none) both run with */
        unsigned caps = zc_codec_info(c)->caps;
        same_kind |= c == zcclCodecNone ? al->needs == 0 && b->needs == 0 : (al->needs & caps) && (b->needs & caps);
      }
      CHECK(!(b->coll == al->coll && same_kind && strcmp(b->name, al->name) == 0));
    }
  }
  CHECK(zp_algo_at(zp_algo_count()) == NULL);
}

/* The model's codec figures (zp_link_t.speeds): zeros and the defaults
 * written out price every descriptor the same, to the bit; faster codec
 * rates or a higher ratio never price a compressed algorithm higher, and a
 * faster sum never prices an uncompressed one higher. */
static void check_speeds(void) {
  const zp_speeds_t dflt = {.compress_bps = ZP_AUTO_COMPRESS_BPS, .decompress_bps = ZP_AUTO_COMPRESS_BPS,
                            .hop_bps = ZP_AUTO_HOP_BPS, .hop_values_bps = ZP_AUTO_HOP_VALUES_BPS,
                            .reduce_bps = ZP_REDUCE_BYTES_PER_S, .ratio = ZP_AUTO_RATIO};
  zp_speeds_t fast = dflt;
  fast.compress_bps *= 2, fast.decompress_bps *= 3, fast.hop_bps *= 2, fast.hop_values_bps *= 2, fast.ratio *= 2;
  fast.reduce_bps *= 2;
  const int ranks[] = {2, 5, 64};
  int lower = 0;
  for (size_t i = 0; i < zp_algo_count(); i++)
    for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++)
      for (size_t bytes = 64; bytes <= (64u << 20); bytes <<= 10) {
        const zp_algo_t* al = zp_algo_at(i);
        zp_link_t link = {.alpha = 20e-6, .bandwidth = GBIT, .incast = 1, .cpu_share = 2};
        zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = ranks[r]};
        zp_coll_args_t a = {.coll = al->coll, .count = bytes / 4, .datatype = zcclFloat32, .op = zcclSum,
                            .nranks = ranks[r]};
        double t0 = al->cost(&ctx, &a);
        link.speeds = dflt;
        double t1 = al->cost(&ctx, &a);
        link.speeds = fast;
        double t2 = al->cost(&ctx, &a);
        CHECK(t0 == t1);
        CHECK(t2 <= t1);
        lower += t2 < t1;
      }
  CHECK(lower > 0);
}

/* A REL bound's range scan and agreement (zp_eb_cost): the compressed
 * pick is the same as under ABS, priced higher by exactly the scan of the
 * rank's input at the range rate over the cpu share plus ceil(log2 N)
 * latencies; ABS with hz and lossless codecs pay nothing, ZFP's finiteness
 * check one more scan. */
static void check_eb_cost(void) {
  const struct {
    zp_coll_id_t coll;
    size_t count;
    double scanned; /* values a rank scans */
  } c[] = {{ZP_COLL_ALLREDUCE, 16u << 20, 16u << 20},
           {ZP_COLL_ALLGATHER, 1u << 20, 1u << 20},
           {ZP_COLL_REDUCESCATTER, 1u << 20, 5.0 * (1u << 20)},
           {ZP_COLL_BROADCAST, 4u << 20, 4u << 20}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    zp_link_t link = {.alpha = 30e-6, .bandwidth = GBIT, .incast = 1, .cpu_share = 2};
    zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = 5};
    zp_coll_args_t a = {.coll = c[i].coll, .count = c[i].count, .datatype = zcclFloat32, .op = zcclSum,
                        .nranks = 5};
    a.compression.codec = zcclCodecHz;
    a.compression.mode = zcclErrorAbs;
    a.compression.eb = 1e-3;
    double t_abs = 0, t_rel = 0;
    const zp_algo_t* al_abs = zp_algo_select(&ctx, &a, NULL, &t_abs, NULL);
    CHECK(zp_eb_cost(&ctx, &a) == 0);
    a.compression.mode = zcclErrorRel;
    const zp_algo_t* al_rel = zp_algo_select(&ctx, &a, NULL, &t_rel, NULL);
    double want = c[i].scanned * 4 / (ZP_AUTO_RANGE_BPS / 2) + 3 * link.alpha; /* ceil(log2 5) = 3 */
    CHECK(al_abs != NULL && al_abs == al_rel);
    CHECK(fabs((t_rel - t_abs) - want) <= 1e-9 * want);
    a.compression.codec = zcclCodecRle;
    CHECK(zp_eb_cost(&ctx, &a) == 0);
    /* ZFP checks every value for finiteness under any mode: one scan and
     * agreement under ABS, two under REL. */
    a.compression.codec = zcclCodecZfp;
    CHECK(fabs(zp_eb_cost(&ctx, &a) - 2 * want) <= 1e-9 * want);
    a.compression.mode = zcclErrorAbs;
    CHECK(fabs(zp_eb_cost(&ctx, &a) - want) <= 1e-9 * want);
  }
}

static void check_parse(void) {
  zp_algo_rules_t r;
  zp_algo_rules_parse("allreduce:ring@0-4M,rd;broadcast:tree", &r);
  CHECK(r.n == 3);
  CHECK(r.rule[0].coll == ZP_COLL_ALLREDUCE && strcmp(r.rule[0].name, "ring") == 0);
  CHECK(r.rule[0].lo == 0 && r.rule[0].hi == 4 << 20);
  CHECK(r.rule[1].coll == ZP_COLL_ALLREDUCE && r.rule[1].lo == 0 && r.rule[1].hi == UINT64_MAX);
  CHECK(r.rule[2].coll == ZP_COLL_BROADCAST && strcmp(r.rule[2].name, "tree") == 0);
  zp_algo_rules_parse("RING", &r); /* case does not matter */
  CHECK(r.n == 1 && r.rule[0].coll == -1 && strcmp(r.rule[0].name, "ring") == 0);
  zp_algo_rules_parse("bcast:chain@64K-;reduce_scatter:ring@-1M", &r); /* NCCL's and MPI's spellings */
  CHECK(r.n == 2 && r.rule[0].coll == ZP_COLL_BROADCAST && r.rule[0].lo == 65536 && r.rule[0].hi == UINT64_MAX);
  CHECK(r.rule[1].coll == ZP_COLL_REDUCESCATTER && r.rule[1].lo == 0 && r.rule[1].hi == 1 << 20);
  /* Left out (with one warning a process): unknown names and collectives,
   * a name another collective has, ranges that do not parse. */
  zp_algo_rules_parse("bogus", &r);
  CHECK(r.n == 0);
  zp_algo_rules_parse("allreduce:bruck,ring;frobnicate:tree;gather:linear@4M-1M;scatter:linear@x-;tree", &r);
  CHECK(r.n == 2 && r.rule[0].coll == ZP_COLL_ALLREDUCE && strcmp(r.rule[0].name, "ring") == 0);
  CHECK(r.rule[1].coll == -1 && strcmp(r.rule[1].name, "tree") == 0);
  zp_algo_rules_parse("", &r);
  CHECK(r.n == 0);
  zp_algo_rules_parse(NULL, &r);
  CHECK(r.n == 0);
  zp_algo_rules_parse(";;,ring,,;", &r);
  CHECK(r.n == 1);
}

/* The WARN lines about ZCCL_ALGO in the log: one a process, naming what
 * exists. */
static void check_warned_once(const char* path) {
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  if (!f) return;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "WARN") && strstr(line, "ZCCL_ALGO=")) {
      n++;
      CHECK(strstr(line, "names no algorithm") && strstr(line, "algorithms: ring, rd, rabenseifner"));
    }
  fclose(f);
  CHECK(n == 1);
  unlink(path);
}

int main(void) {
  char log[64];
  snprintf(log, sizeof log, "/tmp/zccl_algo_select.%d.log", (int)getpid());
  setenv("ZCCL_DEBUG_FILE", log, 1); /* before the library reads any setting */
  setenv("ZCCL_DEBUG", "WARN", 1);
  unsetenv("ZCCL_BUFFER_POOL_BYTES"); /* the cases assume the default pool (64 MiB) */
  CHECK(zd_dev_create(ZD_HOST, &dev) == zcclSuccess);
  check_table();
  check_link_kind();
  check_speeds();
  check_eb_cost();
  check_parse();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  zd_dev_destroy(dev);
  check_warned_once(log);
  TEST_DONE();
}
