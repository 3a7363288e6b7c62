/* The CPRP2P baseline (compress before every send, decompress after every
 * receive) under mpirun, and codec=zfp on every compressed collective:
 * codec=zfp runs CPRP2P by default for its reductions (ZFP streams cannot
 * be added homomorphically) and compress-once for scatter, gather and
 * alltoall; for allgather and broadcast the cost model picks between
 * compress-once and CPRP2P, so each is forced here (ZCCL_ALGO=cprp2p, ring,
 * tree: set for a communicator of its own). codec=hz and szp run CPRP2P
 * when ZCCL_ALGO=cprp2p. Every element is checked against an exact (long
 * double) reference built from every rank's input, with the bound
 * docs/compressed.md derives (eb each compression on the element's path):
 *   - allreduce SUM/MAX/MIN within N eb, AVG within eb, plus the float
 *     rounding of the hops' reductions; a fill value (stream codecs) on any
 *     rank gives the fill; bit-identical on every rank;
 *   - reduce-scatter (ring): SUM/MAX/MIN within (N-1) eb, AVG (N-1) eb / N;
 *     reduce (binomial tree): SUM within (N-1) eb, AVG (N-1) eb / N,
 *     MAX/MIN within floor(log2 N) eb; plus the roundings; stream codecs
 *     with fill values (absorbing), NaN and +-Inf (IEEE) on some ranks;
 *   - allgather: rank q's block on rank r within ((r - q) mod N) eb, the own
 *     block exact; stream codecs carry NaN, +-Inf and the fill value exactly;
 *   - broadcast: relative rank v within popcount(v) eb, the root exact;
 *   - codec=zfp compress-once (allgather, broadcast, scatter, gather,
 *     alltoall): within eb; allgather and broadcast bit-identical everywhere;
 *   - target modes: the output within the target;
 *   - codec=zfp with NaN/Inf input or a fill value, on any collective, or
 *     partial sums that overflow where they must be compressed again:
 *     zcclInvalidArgument on every rank, nothing hangs.
 *   mpirun -np N test_ccoll_cpr */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_ccoll_util.h"
#include "test_util.h"

static int rank, nranks;

static double eps_of(int f64) { return f64 ? DBL_EPSILON : FLT_EPSILON; }
static int is_target(zcclErrorMode_t m) { return m == zcclErrorTargetAbs || m == zcclErrorTargetRel; }

static void set_codec(zcclComm_t comm, int codec, zcclErrorMode_t mode, double eb, int fill) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = codec, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = fill, c.fillValue = -1e34;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
}

static void test_allreduce(zcclComm_t comm, int codec, int f64, zcclErrorMode_t mode, double eb, zcclRedOp_t op,
                           size_t n) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  int fill = codec != zcclCodecZfp; /* stream codecs: a fill value absorbs */
  double fv = f64 ? -1e34 : (double)(float)-1e34;
  set_codec(comm, codec, mode, eb, fill);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es + 1);
  void* y = malloc(n * es + 1);
  void* all = gathered(n * es * N + 1);
  for (size_t i = 0; i < n; i++) set(x, i, f64, fill && i % 211 == 5 && (size_t)rank == i % N ? fv : field(rank, i));
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  CHECK_RES(zcclAllReduce(x, y, n, t, op, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  if (n > 1000) CHECK(raw1 - raw0 > wire1 - wire0 && wire1 > wire0); /* streams went out, smaller */
  /* N compressions on every element's path (AVG: N eb / N). */
  double e = eb_abs(&c, all, n * N, f64), hops = op == zcclAvg ? 1 : (double)N;
  double bound = is_target(mode) ? e : hops * e;
  long bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    long double ref = op == zcclMax ? -INFINITY : op == zcclMin ? INFINITY : 0, mag = 0;
    int is_fill = 0;
    for (size_t r = 0; r < N; r++) is_fill |= fill && get(all, r * n + i, f64) == fv;
    if (is_fill) { /* the fill on any rank is the fill in the result */
      bad += get(y, i, f64) != fv;
      continue;
    }
    for (size_t r = 0; r < N; r++) {
      long double v = get(all, r * n + i, f64);
      mag += fabsl(v);
      if (op == zcclMax) ref = v > ref ? v : ref;
      else if (op == zcclMin) ref = v < ref ? v : ref;
      else ref += v;
    }
    if (op == zcclAvg) ref /= (long double)N;
    double got = get(y, i, f64), err = fabs((double)((long double)got - ref));
    /* The hops' reductions round partials of at most sum|x| + N eb, the
     * decoded value and AVG's division round once each. */
    double slack = eps_of(f64) * ((double)N * ((double)mag + (double)N * e) + 2 * fabs((double)ref));
    if (!(err <= bound + slack)) bad++;
    if (err > worst) worst = err;
  }
  if (bad)
    fprintf(stderr, "rank %d: allreduce codec %d f%d mode %d eb %g op %d n %zu: %ld elements beyond %g (worst %g)\n",
            rank, codec, f64 ? 64 : 32, (int)mode, eb, (int)op, n, bad, bound, worst);
  CHECK(bad == 0);
  if (n > 1000) CHECK(worst > 0); /* compressed, not sent exactly */
  CHECK(same_everywhere(y, n * es));
  free(x), free(y);
}

static int popcount(int v) {
  int c = 0;
  for (; v; v &= v - 1) c++;
  return c;
}

static int log2_floor(int n) {
  int l = 0;
  while ((2 << l) <= n) l++;
  return l;
}

/* ReduceScatter (rs: n per rank, N blocks in; in place at block r of the
 * input) or Reduce to `root` (in place there). Stream codecs get, on one
 * rank each, fill values (absorbing), NaN and +-Inf (IEEE arithmetic). */
static void test_reduction(zcclComm_t comm, int codec, int rs, int f64, zcclErrorMode_t mode, double eb,
                           zcclRedOp_t op, size_t n, int root, int inplace) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks, nin = rs ? n * N : n;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  int special = codec != zcclCodecZfp, out = rs || rank == root;
  double fv = f64 ? -1e34 : (double)(float)-1e34;
  set_codec(comm, codec, mode, eb, special);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  uint8_t* x = malloc(nin * es + 1);
  uint8_t* y = malloc(nin * es + 1);
  uint8_t* all = gathered(nin * es * N + 1);
  for (size_t i = 0; i < nin; i++) {
    double v = field(rank, i);
    if (special && (size_t)rank == i % N) {
      if (i % 211 == 5) v = fv;
      else if (i % 997 == 3) v = NAN;
      else if (i % 1499 == 7) v = (i & 1) ? INFINITY : -INFINITY;
    }
    set(x, i, f64, v);
  }
  MPI_Allgather(x, (int)(nin * es), MPI_BYTE, all, (int)(nin * es), MPI_BYTE, MPI_COMM_WORLD);
  /* In place: recvbuff is the input's block r (ReduceScatter) or the input (Reduce's root). */
  uint8_t* send = x;
  uint8_t* recv = y;
  if (inplace) {
    memcpy(y, x, nin * es);
    send = y;
    recv = rs ? y + (size_t)rank * n * es : y;
  }
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  if (rs) CHECK_RES(zcclReduceScatter(send, recv, n, t, op, comm, NULL), zcclSuccess);
  else CHECK_RES(zcclReduce(send, recv, n, t, op, root, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  double sent[2] = {(double)(raw1 - raw0), (double)(wire1 - wire0)};
  MPI_Allreduce(MPI_IN_PLACE, sent, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (n > 1000) CHECK(sent[0] > sent[1] && sent[1] > 0); /* streams went out, smaller */
  /* SUM: every compression on the way adds up to eb (N-1 of them, each
   * non-root rank's once in the tree); AVG that over N; MAX/MIN pass an
   * error on without adding: the path's compressions (ring N-1, tree
   * floor(log2 N)). Target modes divide by those (AVG: by 1). */
  double e = eb_abs(&c, all, nin * N, f64), hops = op == zcclSum || op == zcclAvg || rs ? (double)N - 1
                                                                                       : log2_floor(nranks);
  double bound = op == zcclAvg ? hops * e / (double)N : is_target(mode) ? e : hops * e;
  long bad = 0;
  double worst = 0;
  for (size_t i = 0; out && i < n; i++) {
    size_t j = rs ? (size_t)rank * n + i : i;
    long double ref = op == zcclMax ? -INFINITY : op == zcclMin ? INFINITY : 0, mag = 0;
    int is_fill = 0, nan = 0;
    for (size_t r = 0; r < N; r++) {
      long double v = get(all, r * nin + j, f64);
      is_fill |= special && v == fv;
      nan |= isnan(v);
      if (isfinite(v)) mag += fabsl(v);
      if (op == zcclMax) ref = v > ref ? v : ref;
      else if (op == zcclMin) ref = v < ref ? v : ref;
      else ref += v;
    }
    if (nan) ref = NAN; /* MAX and MIN too, as the uncompressed reduction */
    if (op == zcclAvg) ref /= (long double)N;
    double got = get(recv, i, f64);
    if (is_fill || !isfinite((double)ref)) { /* the fill, NaN and +-Inf exactly */
      double want = is_fill ? fv : (double)ref;
      bad += isnan(want) ? !isnan(got) : got != want;
      continue;
    }
    double err = fabs((double)((long double)got - ref));
    double slack = eps_of(f64) * ((double)N * ((double)mag + (double)N * e) + 2 * fabs((double)ref));
    if (!(err <= bound + slack)) bad++;
    if (err > worst) worst = err;
  }
  if (bad)
    fprintf(stderr, "rank %d: %s codec %d f%d mode %d eb %g op %d n %zu root %d%s: %ld elements beyond %g (worst %g)\n",
            rank, rs ? "reduce-scatter" : "reduce", codec, f64 ? 64 : 32, (int)mode, eb, (int)op, n, root,
            inplace ? " in place" : "", bad, bound, worst);
  CHECK(bad == 0);
  if (n > 1000 && out) CHECK(worst > 0); /* compressed, not sent exactly */
  free(x), free(y);
}

/* Stream codecs get fill values, NaN and +-Inf too (stored exactly at every
 * hop); ZFP only finite values. */
static void make_input(void* x, size_t n, int f64, int r, int special) {
  for (size_t i = 0; i < n; i++) {
    double v = field(r, i);
    if (special && i % 101 == 7) v = -1e34;
    if (special && i % 997 == 3) v = NAN;
    if (special && i % 1499 == 5) v = (i & 1) ? INFINITY : -INFINITY;
    set(x, i, f64, v);
  }
}

static void test_allgather(zcclComm_t comm, int codec, int f64, zcclErrorMode_t mode, double eb, size_t n,
                           int inplace) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  int special = codec != zcclCodecZfp;
  set_codec(comm, codec, mode, eb, special);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es + 1);
  uint8_t* y = malloc(n * es * N + 1);
  void* all = gathered(n * es * N + 1);
  make_input(x, n, f64, rank, special);
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  const void* send = x;
  if (inplace) {
    memcpy(y + (size_t)rank * n * es, x, n * es);
    send = y + (size_t)rank * n * es;
  }
  CHECK_RES(zcclAllGather(send, y, n, f64 ? zcclFloat64 : zcclFloat32, comm, NULL), zcclSuccess);
  double e = eb_abs(&c, all, n * N, f64);
  if (is_target(mode)) e /= (double)(N - 1); /* the target over N-1 hops */
  long bad = 0;
  for (size_t q = 0; q < N; q++) {
    size_t d = ((size_t)rank + N - q) % N; /* compressions rank q's block went through */
    bad += moved_wrong(y + q * n * es, (uint8_t*)all + q * n * es, n, f64, (double)d * e);
  }
  if (bad)
    fprintf(stderr, "rank %d: allgather codec %d f%d mode %d eb %g n %zu: %ld elements wrong\n", rank, codec,
            f64 ? 64 : 32, (int)mode, eb, n, bad);
  CHECK(bad == 0);
  CHECK(memcmp(y + (size_t)rank * n * es, x, n * es) == 0); /* the own block exact: CPRP2P ran, not compress-once */
  free(x), free(y);
}

/* Broadcast from rank 1 % N (REL from the root's range). */
static void test_broadcast(zcclComm_t comm, int codec, int f64, zcclErrorMode_t mode, double eb, size_t n) {
  size_t es = f64 ? 8 : 4;
  int root = 1 % nranks, special = codec != zcclCodecZfp, lg = 0;
  while ((1 << lg) < nranks) lg++;
  set_codec(comm, codec, mode, eb, special);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es + 1);
  void* y = malloc(n * es + 1);
  make_input(x, n, f64, root, special);
  memset(y, 0, n * es);
  CHECK_RES(zcclBroadcast(x, y, n, f64 ? zcclFloat64 : zcclFloat32, root, comm, NULL), zcclSuccess);
  double e = eb_abs(&c, x, n, f64);
  if (is_target(mode)) e /= lg;
  int v = (rank - root + nranks) % nranks;
  long bad = moved_wrong(y, x, n, f64, popcount(v) * e);
  if (bad)
    fprintf(stderr, "rank %d: broadcast codec %d f%d mode %d n %zu: %ld wrong\n", rank, codec, f64 ? 64 : 32,
            (int)mode, n, bad);
  CHECK(bad == 0);
  if (rank == root) CHECK(memcmp(x, y, n * es) == 0);
  free(x), free(y);
}

/* codec=zfp's compress-once data movement (finite values only): every
 * element within eb. which 0: AllGather (in place or not), 1: Broadcast
 * from rank 1 % N, both bit-identical on every rank (every rank decodes
 * the same streams, its own too); 2: Scatter from rank 1 % N, Gather to the
 * last rank (in place there when inplace), AlltoAll. */
static void test_zfp_once(zcclComm_t comm, int which, int f64, zcclErrorMode_t mode, double eb, size_t n,
                          int inplace) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  int sroot = 1 % nranks, groot = nranks - 1;
  set_codec(comm, zcclCodecZfp, mode, eb, 0);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  uint8_t* x = malloc(n * es * N + 1);
  uint8_t* y = malloc(n * es * N + 1);
  uint8_t* all = gathered(n * es * N * N + 1);
  long bad = 0;
  if (which == 0) {
    make_input(x, n, f64, rank, 0);
    MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
    const uint8_t* send = x;
    if (inplace) {
      memcpy(y + (size_t)rank * n * es, x, n * es);
      send = y + (size_t)rank * n * es;
    }
    CHECK_RES(zcclAllGather(send, y, n, t, comm, NULL), zcclSuccess);
    bad = moved_wrong(y, all, n * N, f64, eb_abs(&c, all, n * N, f64));
    CHECK(same_everywhere(y, n * es * N));
  } else if (which == 1) {
    make_input(x, n, f64, sroot, 0);
    memset(y, 0, n * es);
    CHECK_RES(zcclBroadcast(x, y, n, t, sroot, comm, NULL), zcclSuccess);
    bad = moved_wrong(y, x, n, f64, eb_abs(&c, x, n, f64)); /* REL: the root's range */
    CHECK(same_everywhere(y, n * es));
  } else {
    make_input(x, n * N, f64, sroot, 0); /* every rank makes the root's input (the same function) */
    memset(y, 0, n * es);
    CHECK_RES(zcclScatter(x, y, n, t, sroot, comm, NULL), zcclSuccess);
    bad += moved_wrong(y, x + (size_t)rank * n * es, n, f64, eb_abs(&c, x, n * N, f64));
    make_input(x, n, f64, rank, 0);
    MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
    const uint8_t* gsend = x;
    if (inplace && rank == groot) {
      memcpy(y + (size_t)rank * n * es, x, n * es);
      gsend = y + (size_t)rank * n * es;
    }
    CHECK_RES(zcclGather(gsend, y, n, t, groot, comm, NULL), zcclSuccess);
    if (rank == groot) bad += moved_wrong(y, all, n * N, f64, eb_abs(&c, all, n * N, f64));
    make_input(x, n * N, f64, rank, 0); /* block b of rank q's input lands in block q of rank b */
    MPI_Allgather(x, (int)(n * es * N), MPI_BYTE, all, (int)(n * es * N), MPI_BYTE, MPI_COMM_WORLD);
    CHECK_RES(zcclAlltoAll(x, y, n, t, comm, NULL), zcclSuccess);
    double e = eb_abs(&c, all, n * N * N, f64);
    for (size_t q = 0; q < N; q++) bad += moved_wrong(y + q * n * es, all + (q * N + (size_t)rank) * n * es, n, f64, e);
  }
  if (bad)
    fprintf(stderr, "rank %d: zfp compress-once %d f%d mode %d eb %g n %zu: %ld elements wrong\n", rank, which,
            f64 ? 64 : 32, (int)mode, eb, n, bad);
  CHECK(bad == 0);
  free(x), free(y);
}

/* ZFP cannot carry NaN, Inf or fill values: every rank gets
 * zcclInvalidArgument before anything moves, whichever algorithm runs
 * (the ZCCL_ALGO of each case; a fresh communicator each time: a failed
 * collective breaks its communicator). Finite inputs whose partial sums
 * overflow fail where such a sum must be compressed again: the allreduce
 * always, the reduce-scatter ring from 3 ranks, the reduce tree from 4
 * (below, the last sum is kept raw and the result is the IEEE one: Inf). */
static void test_zfp_bad(zcclUniqueId* id, int f64) {
  size_t n = 5000, es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  uint8_t* x = malloc(n * es * N);
  uint8_t* y = malloc(n * es * N);
  static const struct {
    const char* algo; /* ZCCL_ALGO, or "" */
    const char* needle;
  } cases[] = {{"", "NaN or Inf"},       {"ring", "NaN or Inf"}, {"cprp2p", "NaN or Inf"}, {"tree", "NaN or Inf"},
               {"cprp2p", "NaN or Inf"}, {"", "NaN or Inf"},     {"", "NaN or Inf"},       {"", "NaN or Inf"},
               {"", "NaN or Inf"},       {"", "NaN or Inf"},     {"", "fill"},             {"ring", "fill"},
               {"", "fill"},             {"", "compress"},       {"", "compress"},         {"", "compress"}};
  for (int kase = 0; kase < (int)(sizeof cases / sizeof cases[0]); kase++) {
    /* the fill cases (10-12) once, in float32: they do not depend on the
     * dtype, and each case costs a communicator */
    if (f64 && kase >= 10 && kase <= 12) continue;
    if (cases[kase].algo[0]) setenv("ZCCL_ALGO", cases[kase].algo, 1); /* while no communicator exists */
    zcclComm_t comm = NULL;
    if (rank == 0) zcclGetUniqueId(id);
    MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK_RES(zcclCommInitRank(&comm, nranks, *id, rank), zcclSuccess);
    if (comm == NULL) break;
    set_codec(comm, zcclCodecZfp, zcclErrorAbs, 1e-3, kase >= 10 && kase <= 12);
    make_input(x, n * N, f64, rank, 0);
    zcclResult_t res, want = zcclInvalidArgument;
    int overflow_ok = 0; /* the overflowing sum is kept raw: Inf, no error */
    if (kase == 0) { /* one NaN on the last rank */
      if (rank == nranks - 1) set(x, n / 2, f64, NAN);
      res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
    } else if (kase <= 2) { /* an Inf on rank 0: compress-once, CPRP2P */
      if (rank == 0) set(x, 7, f64, -INFINITY);
      res = zcclAllGather(x, y, n, t, comm, NULL);
    } else if (kase <= 4) { /* the root's Inf, found by the root alone: compress-once, CPRP2P */
      if (rank == 0) set(x, n - 1, f64, INFINITY);
      res = zcclBroadcast(x, y, n, t, 0, comm, NULL);
    } else if (kase == 5) { /* the root's NaN, in the last rank's block */
      if (rank == 0) set(x, (N - 1) * n + 3, f64, NAN);
      res = zcclScatter(x, y, n, t, 0, comm, NULL);
    } else if (kase == 6) { /* a non-root's Inf */
      if (rank == nranks - 1) set(x, 0, f64, INFINITY);
      res = zcclGather(x, y, n, t, 0, comm, NULL);
    } else if (kase == 7) {
      if (rank == 1 % nranks) set(x, N * n - 1, f64, NAN);
      res = zcclAlltoAll(x, y, n, t, comm, NULL);
    } else if (kase == 8) {
      if (rank == 0) set(x, n + 1, f64, NAN);
      res = zcclReduceScatter(x, y, n, t, zcclMax, comm, NULL);
    } else if (kase == 9) {
      if (rank == nranks - 1) set(x, 11, f64, -INFINITY);
      res = zcclReduce(x, y, n, t, zcclSum, 0, comm, NULL);
    } else if (kase == 10) { /* a fill value: ZFP cannot keep it exactly */
      res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
    } else if (kase == 11) {
      res = zcclAllGather(x, y, n, t, comm, NULL);
    } else if (kase == 12) {
      res = zcclReduce(x, y, n, t, zcclAvg, 0, comm, NULL);
    } else { /* finite inputs whose sums overflow on the way */
      double big = (f64 ? 0.9 * DBL_MAX : 0.9 * FLT_MAX);
      if (kase == 13) { /* ranks 0 and 1: the hops that meet the Inf tell the others */
        if (rank < 2)
          for (size_t i = 0; i < n; i++) set(x, i, f64, big * (i % 2 ? 1 : -1));
        res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
      } else { /* every rank: any partial of two ranks overflows */
        for (size_t i = 0; i < n * N; i++) set(x, i, f64, big * (i % 2 ? 1 : -1));
        overflow_ok = kase == 14 ? nranks < 3 : nranks < 4;
        res = kase == 14 ? zcclReduceScatter(x, y, n, t, zcclSum, comm, NULL)
                         : zcclReduce(x, y, n, t, zcclSum, 0, comm, NULL);
      }
      if (overflow_ok) want = zcclSuccess;
    }
    if (res != want) fprintf(stderr, "rank %d: zfp case %d f%d returned %d\n", rank, kase, f64 ? 64 : 32, (int)res);
    CHECK(res == want);
    if (want != zcclSuccess) CHECK_LAST_ERROR_HAS(cases[kase].needle);
    if (overflow_ok && (kase == 14 || rank == 0)) {
      long wrong = 0;
      for (size_t i = 0; i < n; i++) wrong += get(y, i, f64) != (i % 2 ? INFINITY : -INFINITY);
      CHECK(wrong == 0);
    }
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
    if (cases[kase].algo[0]) unsetenv("ZCCL_ALGO");
  }
  free(x), free(y);
}

/* Counts: none, one, fewer than the ranks, and not divisible by them. */
static const size_t counts[] = {0, 1, 33, 100003};
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* The reductions: AllReduce, ReduceScatter and Reduce (roots and in place
 * varied), SUM/AVG/MAX/MIN at ABS and REL, target-REL SUM. */
static void run_reductions(zcclComm_t comm, int codec) {
  const zcclRedOp_t ops[] = {zcclSum, zcclAvg, zcclMax, zcclMin};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t k = 0; k < NCOUNTS; k++) {
      size_t n = counts[k];
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        zcclErrorMode_t mode = o % 2 ? zcclErrorRel : zcclErrorAbs;
        double eb = o % 2 ? 1e-4 : 1e-2;
        test_allreduce(comm, codec, f64, mode, eb, ops[o], n);
        test_reduction(comm, codec, 1, f64, mode, eb, ops[o], n, 0, (int)(o + k) % 2);
        test_reduction(comm, codec, 0, f64, mode, eb, ops[o], n, (int)(o + k) % nranks, (int)(o + k + 1) % 2);
      }
      test_allreduce(comm, codec, f64, zcclErrorTargetRel, 1e-3, zcclSum, n);
      test_reduction(comm, codec, 1, f64, zcclErrorTargetRel, 1e-3, zcclSum, n, 0, 0);
      test_reduction(comm, codec, 0, f64, zcclErrorTargetAbs, 1e-2, zcclMax, n, nranks - 1, 0);
    }
}

/* CPRP2P's allgather and broadcast. */
static void run_moves(zcclComm_t comm, int codec) {
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t k = 1; k < NCOUNTS; k++) {
      size_t n = counts[k];
      test_allgather(comm, codec, f64, zcclErrorRel, 1e-3, n, 0);
      test_allgather(comm, codec, f64, zcclErrorAbs, 1e-3, n, 1);
      test_broadcast(comm, codec, f64, zcclErrorRel, 1e-3, n * 3 + 1);
      test_broadcast(comm, codec, f64, zcclErrorTargetAbs, 1e-2, n);
    }
}

/* codec=zfp's compress-once: which as test_zfp_once (-1: all three). */
static void run_zfp_once(zcclComm_t comm, int which) {
  for (int w = 0; w < 3; w++) {
    if (which >= 0 && w != which) continue;
    for (int f64 = 0; f64 < 2; f64++)
      for (size_t k = 0; k < NCOUNTS; k++) {
        test_zfp_once(comm, w, f64, zcclErrorRel, 1e-3, counts[k], 0);
        test_zfp_once(comm, w, f64, zcclErrorAbs, 1e-2, counts[k] * 2 + 1, 1);
      }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  zcclUniqueId id;
  /* ZCCL_ALGO is set while no communicator (no library thread reading the
   * environment) exists. "": codec=zfp's own choice (CPRP2P reductions;
   * compress-once scatter, gather, alltoall); cprp2p: CPRP2P for every
   * codec; ring, tree: codec=zfp's compress-once allgather, broadcast. */
  const char* algos[] = {"", "cprp2p", "ring", "tree"};
  for (int p = 0; p < 4; p++) {
    if (algos[p][0]) setenv("ZCCL_ALGO", algos[p], 1);
    zcclComm_t comm = ccoll_comm(rank, nranks, &id);
    if (comm == NULL) break;
    if (p == 0) run_reductions(comm, zcclCodecZfp);
    if (p == 0) run_zfp_once(comm, 2);
    if (p == 1) run_moves(comm, zcclCodecZfp);
    if (p == 1) run_reductions(comm, zcclCodecHz), run_moves(comm, zcclCodecHz);
    if (p == 1) run_reductions(comm, zcclCodecSzp), run_moves(comm, zcclCodecSzp);
    if (p >= 2) run_zfp_once(comm, p - 2);
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
    if (algos[p][0]) unsetenv("ZCCL_ALGO");
  }
  test_zfp_bad(&id, 0);
  test_zfp_bad(&id, 1);
  MPI_Finalize();
  TEST_DONE();
}
