/* The DOC ring and chain (codec=szp: decompress, reduce, recompress per
 * hop) under mpirun: AllReduce, ReduceScatter and Reduce, float32 and
 * float64, SUM, AVG, MAX, MIN, ABS and REL at 1e-2 and 1e-4, target SUMs,
 * counts 0, 1, 33, 100003 and a few MB, in place and not; every element
 * checked against an exact long double reference built from every rank's
 * input, within the bound of docs/compressed.md:
 *   - SUM: AllReduce N eb, ReduceScatter and Reduce (N-1) eb; AVG: those
 *     over N; MAX/MIN: eb; plus the float roundings of the N-1 additions;
 *   - the fill value absorbs (fill on any rank: fill), NaN and +-Inf as
 *     IEEE arithmetic gives them, exactly;
 *   - AllReduce outputs bit-identical on every rank.
 *   mpirun -np N test_ccoll_doc   (ZCCL_DEVICE=host|sim; a small
 *   ZCCL_BUFFER_POOL_BYTES makes many rounds of few chunks) */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_ccoll_util.h"
#include "test_util.h"

#define FILLV -1e34

static int rank, nranks;

static double fillv(int f64) { return f64 ? FILLV : (double)(float)FILLV; }

/* Rank r's input value i: the field, with (special) the fill value, NaN
 * and +-Inf on some ranks at some positions (Inf on one rank and -Inf on
 * another give NaN). */
static double input(int r, size_t i, int special) {
  if (special) {
    if (i % 101 == 7 && (int)((i / 101) % (size_t)nranks) == r) return FILLV;
    if (i % 997 == 3 && r == nranks - 1) return NAN;
    if (i % 1499 == 5) return r == 0 ? INFINITY : r == 1 && (i & 1) ? -INFINITY : field(r, i);
  }
  return field(r, i);
}

/* The absolute bound as the library derives it (eb_abs); target modes
 * bound the output, so a SUM of N inputs compresses with a bound N times
 * smaller. */
static double doc_eb(zcclErrorMode_t mode, double eb, zcclRedOp_t op, const void* all, size_t total, int f64,
                     int has_fill) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.mode = mode, c.eb = eb, c.hasFill = has_fill, c.fillValue = FILLV;
  int target = mode == zcclErrorTargetAbs || mode == zcclErrorTargetRel;
  return eb_abs(&c, all, total, f64) / (target && op == zcclSum ? nranks : 1);
}

/* kind 0: AllReduce of n; 1: ReduceScatter, n per rank (N blocks in);
 * 2: Reduce to rank root. */
static void test_doc(zcclComm_t comm, int kind, int f64, zcclErrorMode_t mode, double eb, zcclRedOp_t op, size_t n,
                     int inplace, int special, int root) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks, nin = kind == 1 ? n * N : n;
  int out = kind != 2 || rank == root; /* this rank has a result */
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecSzp, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = special, c.fillValue = FILLV;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  uint8_t* x = malloc(nin * es + 1);
  uint8_t* y = malloc(nin * es + 1);
  uint8_t* all = gathered(nin * es * N + 1);
  for (size_t i = 0; i < nin; i++) set(x, i, f64, input(rank, i, special));
  MPI_Allgather(x, (int)(nin * es), MPI_BYTE, all, (int)(nin * es), MPI_BYTE, MPI_COMM_WORLD);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  /* In place: AllReduce and Reduce on one buffer; ReduceScatter's output
   * is this rank's block of its input. */
  const uint8_t* send = x;
  uint8_t* recv = y;
  if (inplace) {
    memcpy(y, x, nin * es);
    send = y;
    recv = kind == 1 ? y + (size_t)rank * n * es : y;
  }
  if (kind == 0) CHECK_RES(zcclAllReduce(send, recv, n, t, op, comm, NULL), zcclSuccess);
  if (kind == 1) CHECK_RES(zcclReduceScatter(send, recv, n, t, op, comm, NULL), zcclSuccess);
  if (kind == 2) CHECK_RES(zcclReduce(send, recv, n, t, op, root, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  /* Smooth data compresses (the root of a Reduce sends nothing). */
  if (n > 1000 && (kind != 2 || rank != root)) CHECK(raw1 - raw0 > 2 * (wire1 - wire0) && wire1 > wire0);
  double e = doc_eb(mode, eb, op, all, nin * N, f64, special);
  /* Each compression within e; SUM carries one per hop (N-1), AllReduce
   * one more for its allgather; MAX/MIN keep e (docs/compressed.md). */
  double hops = kind == 0 ? (double)N : (double)N - 1; /* Reduce: as ReduceScatter */
  double bound = op == zcclSum ? hops * e : op == zcclAvg ? hops * e / (double)N : e;
  double eps = f64 ? DBL_EPSILON : FLT_EPSILON;
  long bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n && out; i++) {
    size_t j = kind == 1 ? (size_t)rank * n + i : i;
    int fill = 0, nan = 0;
    long double ref = op == zcclMax ? -INFINITY : op == zcclMin ? INFINITY : 0, mag = 0;
    for (size_t r = 0; r < N; r++) {
      long double v = get(all, r * nin + j, f64);
      if (special && v == fillv(f64)) fill = 1;
      if (isnan(v)) nan = 1;
      if (op == zcclMax) ref = v > ref ? v : ref;
      else if (op == zcclMin) ref = v < ref ? v : ref;
      else ref += v;
      if (isfinite(v)) mag += fabsl(v); /* (an infinite input would make any result pass) */
    }
    if (op == zcclAvg) ref /= (long double)N;
    if (nan) ref = NAN;
    double got = get(recv, i, f64);
    int ok;
    if (fill) ok = got == fillv(f64);
    else if (isnan(ref)) ok = isnan(got);
    else if (isinf(ref)) ok = got == (double)ref;
    else {
      /* Float roundings: N-1 additions of partial results no larger than
       * mag + N e (a unit each, generously), AVG's division one more. */
      double slack = (double)(N + 1) * eps * ((double)mag + (double)N * e);
      double err = fabs((double)((long double)got - ref));
      ok = err <= bound + slack;
      if (err > worst) worst = err;
    }
    if (!ok && bad < 3)
      fprintf(stderr, "rank %d: element %zu got %.17g, reference %.17Lg (bound %g)\n", rank, i, got, ref, bound);
    bad += !ok;
  }
  if (bad)
    fprintf(stderr, "rank %d: DOC %s f%d mode %d eb %g op %d n %zu inplace %d special %d: %ld elements wrong "
            "(bound %g, worst %g)\n", rank, kind == 2 ? "reduce" : kind ? "reduce-scatter" : "allreduce", f64 ? 64 : 32, (int)mode, eb,
            (int)op, n, inplace, special, bad, bound, worst);
  CHECK(bad == 0);
  if (n > 1000 && out) CHECK(worst > 0); /* it was compressed, not sent exactly */
  if (kind == 0) CHECK(same_everywhere(recv, n * es));
  free(x), free(y);
}

/* Counts that differ across ranks: an error on every rank (a stream of
 * the wrong count is zcclInvalidUsage where it is decompressed; a rank
 * left waiting times out), nothing written past the buffer, no hang. */
static void test_mismatch(zcclUniqueId* id) {
  setenv("ZCCL_TIMEOUT", nranks <= 4 ? "3" : "5", 1); /* a rank left waiting: most of this test's time */
  zcclComm_t c2 = NULL;
  if (rank == 0) zcclGetUniqueId(id);
  MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
  CHECK_RES(zcclCommInitRank(&c2, nranks, *id, rank), zcclSuccess);
  if (c2 == NULL) return;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecSzp, c.mode = zcclErrorAbs, c.eb = 1e-3, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(c2, &c), zcclSuccess);
  size_t n = rank == 0 ? 50000 : 40000;
  float* x = calloc(n + 64, sizeof(float));
  float* y = calloc(n + 64, sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = (float)field(rank, i);
  y[n] = 123.0f;
  zcclResult_t res = zcclAllReduce(x, y, n, zcclFloat32, zcclSum, c2, NULL);
  CHECK(res == zcclInvalidUsage || res == zcclRemoteError);
  CHECK(y[n] == 123.0f);
  int bad = res == zcclInvalidUsage, anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(anybad > 0); /* someone saw the mismatch itself */
  zcclCommAbort(c2);
  free(x), free(y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  zcclUniqueId id;
  zcclComm_t comm = ccoll_comm(rank, nranks, &id);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  const size_t counts[] = {0, 1, 33, 100003};
  const zcclRedOp_t ops[] = {zcclSum, zcclAvg, zcclMax, zcclMin};
  const double ebs[] = {1e-2, 1e-4};
  for (int f64 = 0; f64 < 2; f64++)
    for (int kind = 0; kind < 3; kind++)
      for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
          for (size_t e = 0; e < 2; e++) {
            /* Large counts take one bound per op (alternating), to keep
             * the test short. */
            if (counts[k] > 1000 && e != (o + (size_t)kind) % 2) continue;
            /* Each op once in place, and each with special values. */
            int inplace = (int)((o + e) % 2), special = (int)((o + e + k) % 2);
            int root = (int)(o + k) % nranks;
            test_doc(comm, kind, f64, zcclErrorAbs, ebs[e], ops[o], counts[k], inplace, special, root);
            test_doc(comm, kind, f64, zcclErrorRel, ebs[e], ops[o], counts[k], !inplace, !special, root);
          }
  /* Target bounds: the SUM's output within the bound given. */
  for (int kind = 0; kind < 3; kind++) {
    test_doc(comm, kind, 0, zcclErrorTargetRel, 1e-3, zcclSum, 100003, 0, 0, nranks - 1);
    test_doc(comm, kind, 1, zcclErrorTargetAbs, 1e-2, zcclSum, 100003, 1, 1, 0);
  }
  /* A few MB: many chunks and, with a small pool, many rounds. */
  for (int f64 = 0; f64 < 2; f64++) {
    size_t big = ((size_t)3 << 20) / (f64 ? 8 : 4) + 17;
    test_doc(comm, 0, f64, zcclErrorRel, 1e-4, zcclSum, big, 0, 1, 0);
    test_doc(comm, 0, f64, zcclErrorAbs, 1e-2, zcclMax, big, 1, 0, 0);
    test_doc(comm, 1, f64, zcclErrorRel, 1e-4, zcclAvg, big / (size_t)nranks, 1, 1, 0);
    test_doc(comm, 2, f64, zcclErrorRel, 1e-4, zcclSum, big, f64, 1, 1 % nranks);
  }
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  test_mismatch(&id);
  MPI_Finalize();
  TEST_DONE();
}
