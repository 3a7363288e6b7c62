/* The CPRP2P baseline (compress before every send, decompress after every
 * receive) under mpirun: codec=zfp picks it by default, codec=hz and szp
 * when ZCCL_ALGO=cprp2p forces it (set here for a second communicator).
 * Every element is checked against an exact (long double) reference built
 * from every rank's input, with the bound docs/compressed.md derives (eb
 * each compression on the element's path):
 *   - allreduce SUM/MAX/MIN within N eb, AVG within eb, plus the float
 *     rounding of the hops' reductions; a fill value (stream codecs) on any
 *     rank gives the fill; bit-identical on every rank;
 *   - allgather: rank q's block on rank r within ((r - q) mod N) eb, the own
 *     block exact; stream codecs carry NaN, +-Inf and the fill value exactly;
 *   - broadcast: relative rank v within popcount(v) eb, the root exact;
 *   - target modes: the output within the target;
 *   - codec=zfp with NaN/Inf input or a fill value, or partial sums that
 *     overflow: zcclInvalidArgument on every rank, nothing hangs.
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
  void* all = malloc(n * es * N + 1);
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
  free(x), free(y), free(all);
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
  void* all = malloc(n * es * N + 1);
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
  free(x), free(y), free(all);
}

static int popcount(int v) {
  int c = 0;
  for (; v; v &= v - 1) c++;
  return c;
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

/* ZFP cannot carry NaN, Inf or fill values: every rank gets
 * zcclInvalidArgument before anything moves (a fresh communicator each
 * time: a failed collective breaks its communicator). */
static void test_zfp_bad(zcclUniqueId* id, int f64) {
  size_t n = 5000, es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  void* x = malloc(n * es);
  void* y = malloc(n * es * N);
  for (int kase = 0; kase < 5; kase++) {
    zcclComm_t comm = NULL;
    if (rank == 0) zcclGetUniqueId(id);
    MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK_RES(zcclCommInitRank(&comm, nranks, *id, rank), zcclSuccess);
    if (comm == NULL) break;
    set_codec(comm, zcclCodecZfp, zcclErrorAbs, 1e-3, kase == 3);
    make_input(x, n, f64, rank, 0);
    zcclResult_t res;
    const char* needle = "NaN or Inf";
    if (kase == 0) { /* one NaN on the last rank */
      if (rank == nranks - 1) set(x, n / 2, f64, NAN);
      res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
    } else if (kase == 1) { /* an Inf on rank 0 */
      if (rank == 0) set(x, 7, f64, -INFINITY);
      res = zcclAllGather(x, y, n, t, comm, NULL);
    } else if (kase == 2) { /* the root's Inf, found by the root alone */
      if (rank == 0) set(x, n - 1, f64, INFINITY);
      res = zcclBroadcast(x, y, n, t, 0, comm, NULL);
    } else if (kase == 3) { /* a fill value: ZFP cannot keep it exactly */
      needle = "fill";
      res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
    } else { /* finite inputs whose sums overflow on the way (ranks 0 and 1 large): the hops that meet the
              * Inf tell the others */
      needle = "compress";
      if (rank < 2)
        for (size_t i = 0; i < n; i++) set(x, i, f64, (f64 ? 0.9 * DBL_MAX : 0.9 * FLT_MAX) * (i % 2 ? 1 : -1));
      res = zcclAllReduce(x, y, n, t, zcclSum, comm, NULL);
    }
    CHECK(res == zcclInvalidArgument);
    CHECK_LAST_ERROR_HAS(needle);
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  }
  free(x), free(y);
}

static void run_codec(zcclComm_t comm, int codec) {
  const size_t counts[] = {1, 33, 100003};
  const zcclRedOp_t ops[] = {zcclSum, zcclAvg, zcclMax, zcclMin};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      size_t n = counts[k];
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        test_allreduce(comm, codec, f64, o % 2 ? zcclErrorRel : zcclErrorAbs, o % 2 ? 1e-4 : 1e-2, ops[o], n);
      test_allreduce(comm, codec, f64, zcclErrorTargetRel, 1e-3, zcclSum, n);
      test_allgather(comm, codec, f64, zcclErrorRel, 1e-3, n, 0);
      test_allgather(comm, codec, f64, zcclErrorAbs, 1e-3, n, 1);
      test_broadcast(comm, codec, f64, zcclErrorRel, 1e-3, n * 3 + 1);
      test_broadcast(comm, codec, f64, zcclErrorTargetAbs, 1e-2, n);
    }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  zcclUniqueId id;
  /* codec=zfp: CPRP2P by default. The stream codecs run it only when
   * ZCCL_ALGO names it: set while no communicator (no library thread
   * reading the environment) exists. */
  for (int forced = 0; forced < 2; forced++) {
    if (forced) setenv("ZCCL_ALGO", "cprp2p", 1);
    zcclComm_t comm = ccoll_comm(rank, nranks, &id);
    if (comm == NULL) break;
    if (!forced) run_codec(comm, zcclCodecZfp);
    if (forced) run_codec(comm, zcclCodecHz);
    if (forced) run_codec(comm, zcclCodecSzp);
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
    if (forced) unsetenv("ZCCL_ALGO");
  }
  test_zfp_bad(&id, 0);
  test_zfp_bad(&id, 1);
  MPI_Finalize();
  TEST_DONE();
}
