/* The homomorphic recursive-doubling allreduce under mpirun, any rank
 * count (powers of two and not: the fold), float32 and float64,
 * SUM/AVG/MAX/MIN, ABS and REL at 1e-2 and 1e-4, every element checked
 * against an exact (long double) reference built from every rank's input:
 * SUM within N*eb, AVG and MAX/MIN within eb (plus the output's rounding);
 * NaN, +-Inf and fill values exactly; in place; every rank's output
 * bit-identical.
 *   ZCCL_ALGO=rd   every compressed allreduce must run recursive doubling;
 *   ZCCL_ALGO=ring the homomorphic ring; unset: the cost model's choice,
 *                  which for a one-element message must be recursive
 *                  doubling.
 * Which algorithm ran shows in zcclCommCompressionStats: recursive doubling
 * sends the whole stream per round, the ring 2(N-1) blocks (the same bytes
 * at N = 2, so there the check says nothing).
 *   mpirun -np N test_ccoll_rd   (ZCCL_DEVICE=host|sim; a small
 *   ZCCL_BUFFER_POOL_BYTES makes it work in slices) */
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
static const char* forced = "";
static const double FILLV = -1e34;

/* Raw bytes this rank's streams stand for, by algorithm: recursive
 * doubling sends n per round (log2 P of them), a folded-out rank once, its
 * partner once more; the ring every block but two of its own. */
static uint64_t rd_raw(size_t n, size_t es) {
  int p = 1, lg = 0;
  while (p * 2 <= nranks) p *= 2, lg++;
  int rem = nranks - p, steps = rank < 2 * rem ? (rank % 2 ? lg + 1 : 1) : lg;
  return (uint64_t)steps * n * es;
}
static size_t blen(size_t n, int b) {
  return (size_t)((unsigned long long)n * (unsigned)(b + 1) / (unsigned)nranks -
                  (unsigned long long)n * (unsigned)b / (unsigned)nranks);
}
static uint64_t ring_raw(size_t n, size_t es) {
  return (uint64_t)(2 * n - blen(n, rank) - blen(n, (rank + 1) % nranks)) * es;
}

/* The algorithm that must have run, from ZCCL_ALGO (unset: rd for one element). */
static void check_algo(uint64_t raw, size_t n, size_t es) {
  if (nranks < 3) return;
  int want_rd = strcmp(forced, "rd") == 0 || (forced[0] == 0 && n == 1);
  int want_ring = strcmp(forced, "ring") == 0;
  int all = 1, ok = want_rd ? raw == rd_raw(n, es) : want_ring ? raw == ring_raw(n, es)
                                                               : raw == rd_raw(n, es) || raw == ring_raw(n, es);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok)
    fprintf(stderr, "rank %d: n %zu sent %llu raw bytes: rd %llu, ring %llu (ZCCL_ALGO=%s)\n", rank, n,
            (unsigned long long)raw, (unsigned long long)rd_raw(n, es), (unsigned long long)ring_raw(n, es), forced);
  CHECK(all);
}

/* Input of rank r at i; specials: fill (land points, on one rank at a
 * time), NaN on one rank, +Inf on rank 0 and -Inf on rank 1 at the same
 * places (their sum is NaN, their max +Inf). */
static double input(int r, size_t i, int special, int fill) {
  if (special) {
    if (fill && i % 101 == 7 && (int)((i / 101) % (size_t)nranks) == r) return FILLV;
    if (i % 997 == 3 && (int)((i / 997) % (size_t)nranks) == r) return NAN;
    if (i % 1499 == 5 && r == 0) return INFINITY;
    if (i % 1499 == 5 && r == 1 && (i & 1)) return -INFINITY;
  }
  return field(r, i);
}

/* One allreduce, every element checked; returns the wrong count. */
static long run(zcclComm_t comm, int f64, zcclErrorMode_t mode, double eb, zcclRedOp_t op, size_t n, int special,
                int fill, int inplace) {
  size_t es = f64 ? 8 : 4;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = mode, c.eb = eb, c.minBytes = 0;
  if (fill) c.hasFill = 1, c.fillValue = FILLV;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es + 1);
  void* y = malloc(n * es + 1);
  void* all = gathered(n * es * (size_t)nranks + 1);
  for (size_t i = 0; i < n; i++) set(x, i, f64, input(rank, i, special, fill));
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  void* send = x;
  if (inplace) memcpy(y, x, n * es), send = y;
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  CHECK_RES(zcclAllReduce(send, y, n, t, op, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  check_algo(raw1 - raw0, n, es);
  /* Smooth data at these bounds compresses (the streams are counted). */
  if (n > 1000 && !special) CHECK(raw1 - raw0 > 2 * (wire1 - wire0) && wire1 > wire0);
  double e = eb_abs(&c, all, n * (size_t)nranks, f64);
  int target = mode == zcclErrorTargetAbs || mode == zcclErrorTargetRel;
  double bound = op == zcclSum && !target ? nranks * e : e;
  long bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    long double ref = op == zcclMax ? -INFINITY : op == zcclMin ? INFINITY : 0;
    int anyfill = 0, anynan = 0;
    for (int r = 0; r < nranks; r++) {
      double d = get(all, (size_t)r * n + i, f64);
      long double v = d;
      anyfill |= is_fill(d, &c, f64);
      anynan |= isnan(d);
      if (op == zcclMax) ref = v > ref ? v : ref;
      else if (op == zcclMin) ref = v < ref ? v : ref;
      else ref += v;
    }
    if (op == zcclAvg) ref /= nranks;
    double got = get(y, i, f64);
    int ok;
    if (anyfill) ok = got == (f64 ? FILLV : (double)(float)FILLV); /* fill in any input: fill out */
    else if (anynan || isnan((double)ref)) ok = isnan(got);
    else if (isinf((double)ref)) ok = got == (double)ref;
    else {
      double err = fabs((double)((long double)got - ref));
      /* The decoded sum is rounded once to the type; AVG's division once more. */
      double slack = 2 * half_ulp((double)ref, f64) + (f64 ? 0 : half_ulp((double)ref, 0));
      ok = err <= bound + slack;
      if (err > worst) worst = err;
    }
    bad += !ok;
  }
  if (bad)
    fprintf(stderr, "rank %d: f%d mode %d eb %g op %d n %zu special %d fill %d inplace %d: %ld wrong (bound %g, "
            "worst %g)\n", rank, f64 ? 64 : 32, (int)mode, eb, (int)op, n, special, fill, inplace, bad, bound, worst);
  if (n > 1000 && !special) CHECK(worst > 0); /* it was compressed, not sent exactly */
  CHECK(same_everywhere(y, n * es));
  free(x), free(y);
  return bad;
}

/* Zero elements: nothing to do, nothing written. */
static void test_empty(zcclComm_t comm) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = zcclErrorRel, c.eb = 1e-3, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  float x = 1.5f, y = 7.0f;
  CHECK_RES(zcclAllReduce(&x, &y, 0, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
  CHECK(y == 7.0f);
}

/* REL on data with no range (constant) or no valid value (all NaN). */
static void test_degenerate(zcclComm_t comm, int f64) {
  size_t n = 777, es = f64 ? 8 : 4;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = zcclErrorRel, c.eb = 1e-3, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es);
  void* y = malloc(n * es);
  for (size_t i = 0; i < n; i++) set(x, i, f64, 3.0);
  CHECK_RES(zcclAllReduce(x, y, n, f64 ? zcclFloat64 : zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
  long bad = 0;
  for (size_t i = 0; i < n; i++) bad += !(fabs(get(y, i, f64) - 3.0 * nranks) <= nranks * 3e-3 + 1e-5);
  for (size_t i = 0; i < n; i++) set(x, i, f64, NAN);
  CHECK_RES(zcclAllReduce(x, y, n, f64 ? zcclFloat64 : zcclFloat32, zcclMax, comm, NULL), zcclSuccess);
  for (size_t i = 0; i < n; i++) bad += !isnan(get(y, i, f64));
  CHECK(bad == 0);
  CHECK(same_everywhere(y, n * es));
  free(x), free(y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (getenv("ZCCL_ALGO")) forced = getenv("ZCCL_ALGO");
  zcclComm_t comm = ccoll_comm(rank, nranks, NULL);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  const size_t counts[] = {1, 33, 100003};
  const zcclRedOp_t ops[] = {zcclSum, zcclAvg, zcclMax, zcclMin};
  const zcclErrorMode_t modes[] = {zcclErrorAbs, zcclErrorRel};
  const double ebs[] = {1e-2, 1e-4};
  long bad = 0;
  test_empty(comm);
  for (int f64 = 0; f64 < 2; f64++) {
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t m = 0; m < 2; m++)
          for (size_t e = 0; e < 2; e++) bad += run(comm, f64, modes[m], ebs[e], ops[o], counts[k], 0, 0, 0);
    bad += run(comm, f64, zcclErrorTargetRel, 1e-3, zcclSum, 100003, 0, 0, 0);
    /* Specials: fill and NaN and +-Inf with every op (AVG leaves the fill). */
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      bad += run(comm, f64, zcclErrorRel, 1e-3, ops[o], 30011, 1, 1, 0);
      bad += run(comm, f64, zcclErrorAbs, 1e-2, ops[o], 30011, 1, 0, 0);
    }
    /* In place (sendbuff == recvbuff). */
    bad += run(comm, f64, zcclErrorRel, 1e-4, zcclSum, 100003, 0, 0, 1);
    bad += run(comm, f64, zcclErrorAbs, 1e-2, zcclAvg, 33, 0, 0, 1);
    bad += run(comm, f64, zcclErrorRel, 1e-3, zcclMax, 30011, 1, 1, 1);
    test_degenerate(comm, f64);
  }
  CHECK(bad == 0);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  MPI_Finalize();
  TEST_DONE();
}
