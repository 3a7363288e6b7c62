/* Compressed collectives under mpirun: the homomorphic ring allreduce and
 * ReduceScatter and binomial Reduce, the compress-once allgather,
 * broadcast, scatter, gather and alltoall, float32 and float64, ABS, REL and target
 * bounds, checked on every element against an exact (long double)
 * reference built from every rank's input:
 *   - allreduce SUM within N*eb, AVG within eb, MAX/MIN within eb (plus
 *     one rounding of the output value), bit-identical on every rank;
 *   - allgather and broadcast within eb; NaN, +-Inf and the fill value exactly;
 *     identical on every rank;
 *   - what is not compressed (int32, PROD, below min_bytes) stays exact.
 *   mpirun -np N test_ccoll   (ZCCL_DEVICE=host|sim; a small
 *   ZCCL_BUFFER_POOL_BYTES makes the algorithms work in slices) */
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

/* kind 0: AllReduce, 1: ReduceScatter (n per rank, N blocks in), 2: Reduce
 * to the last rank. */
static void test_reduction(zcclComm_t comm, int kind, int f64, zcclErrorMode_t mode, double eb, zcclRedOp_t op,
                           size_t n) {
  size_t es = f64 ? 8 : 4, nin = kind == 1 ? n * (size_t)nranks : n;
  int root = nranks - 1;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = mode, c.eb = eb, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(nin * es);
  void* y = malloc(n * es);
  void* all = gathered(nin * es * (size_t)nranks);
  for (size_t i = 0; i < nin; i++) set(x, i, f64, field(rank, i));
  MPI_Allgather(x, (int)(nin * es), MPI_BYTE, all, (int)(nin * es), MPI_BYTE, MPI_COMM_WORLD);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  if (kind == 0) CHECK_RES(zcclAllReduce(x, y, n, t, op, comm, NULL), zcclSuccess);
  if (kind == 1) CHECK_RES(zcclReduceScatter(x, y, n, t, op, comm, NULL), zcclSuccess);
  if (kind == 2) CHECK_RES(zcclReduce(x, y, n, t, op, root, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  /* Smooth data at these bounds compresses (the streams are counted). */
  if (n > 1000 && (kind != 2 || rank != root)) CHECK(raw1 - raw0 > 2 * (wire1 - wire0) && wire1 > wire0);
  double e = eb_abs(&c, all, nin * (size_t)nranks, f64);
  double bound = op == zcclSum && mode != zcclErrorTargetAbs && mode != zcclErrorTargetRel ? nranks * e : e;
  long bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n && (kind != 2 || rank == root); i++) {
    size_t j = kind == 1 ? (size_t)rank * n + i : i;
    long double ref = op == zcclMax ? -INFINITY : op == zcclMin ? INFINITY : 0;
    for (int r = 0; r < nranks; r++) {
      long double v = get(all, (size_t)r * nin + j, f64);
      if (op == zcclMax) ref = v > ref ? v : ref;
      else if (op == zcclMin) ref = v < ref ? v : ref;
      else ref += v;
    }
    if (op == zcclAvg) ref /= nranks;
    double got = get(y, i, f64), err = fabs((double)((long double)got - ref));
    /* The decoded sum is rounded once to the type; AVG's division once more. */
    double slack = 2 * half_ulp((double)ref, f64) + (f64 ? 0 : half_ulp((double)ref, 0));
    if (!(err <= bound + slack)) bad++;
    if (err > worst) worst = err;
  }
  if (bad)
    fprintf(stderr, "rank %d: reduction %d f%d mode %d eb %g op %d n %zu: %ld elements beyond %g (worst %g)\n", rank,
            kind, f64 ? 64 : 32, (int)mode, eb, (int)op, n, bad, bound, worst);
  CHECK(bad == 0);
  if (n > 1000 && (kind != 2 || rank == root)) CHECK(worst > 0); /* it was compressed, not sent exactly */
  if (kind == 0) CHECK(same_everywhere(y, n * es));
  free(x), free(y);
}

static void test_allreduce(zcclComm_t comm, int f64, zcclErrorMode_t mode, double eb, zcclRedOp_t op, size_t n) {
  test_reduction(comm, 0, f64, mode, eb, op, n);
}

/* uneven: rank 0's block is constant (a stream of a few bytes), rank 1's is
 * noise (the largest stream), so the streams' pieces cross block bounds. */
static void test_allgather(zcclComm_t comm, int f64, zcclErrorMode_t mode, double eb, size_t n, int inplace,
                           int uneven) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = 1, c.fillValue = -1e34;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es);
  void* y = malloc(n * es * N);
  void* all = gathered(n * es * N);
  for (size_t i = 0; i < n; i++) {
    double v = field(rank, i);
    if (uneven && rank == 0) v = 3.5;
    if (uneven && rank == 1) v += 40.0 * (double)((i * 2654435761u) % 1009) / 1009.0;
    if (i % 101 == 7) v = -1e34;     /* land points */
    if (i % 997 == 3) v = NAN;
    if (i % 1499 == 5) v = (i & 1) ? INFINITY : -INFINITY;
    set(x, i, f64, v);
  }
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  void* send = x;
  if (inplace) {
    memcpy((uint8_t*)y + (size_t)rank * n * es, x, n * es);
    send = (uint8_t*)y + (size_t)rank * n * es;
  }
  CHECK_RES(zcclAllGather(send, y, n, f64 ? zcclFloat64 : zcclFloat32, comm, NULL), zcclSuccess);
  long bad = moved_wrong(y, all, n * N, f64, eb_abs(&c, all, n * N, f64));
  if (bad)
    fprintf(stderr, "rank %d: allgather f%d mode %d eb %g n %zu: %ld elements wrong\n", rank, f64 ? 64 : 32,
            (int)mode, eb, n, bad);
  CHECK(bad == 0);
  CHECK(same_everywhere(y, n * es * N));
  free(x), free(y);
}

/* Broadcast from the last rank: the root's data within eb (REL from the
 * root's own range), special values exactly, the same on every rank (the
 * root included). */
static void test_broadcast(zcclComm_t comm, int f64, zcclErrorMode_t mode, double eb, size_t n) {
  size_t es = f64 ? 8 : 4;
  int root = nranks - 1;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = 1, c.fillValue = -1e34;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es);
  void* y = malloc(n * es);
  for (size_t i = 0; i < n; i++) {
    double v = field(root, i);
    if (i % 89 == 3) v = -1e34;
    if (i % 1009 == 1) v = NAN;
    if (i % 2003 == 2) v = -INFINITY;
    set(x, i, f64, v);
  }
  memset(y, 0, n * es);
  CHECK_RES(zcclBroadcast(x, y, n, f64 ? zcclFloat64 : zcclFloat32, root, comm, NULL), zcclSuccess);
  long bad = moved_wrong(y, x, n, f64, eb_abs(&c, x, n, f64));
  if (bad) fprintf(stderr, "rank %d: broadcast f%d mode %d n %zu: %ld wrong\n", rank, f64 ? 64 : 32, (int)mode, n, bad);
  CHECK(bad == 0);
  CHECK(same_everywhere(y, n * es));
  free(x), free(y);
}

static void fill_special(void* x, size_t n, int f64, int r) {
  for (size_t i = 0; i < n; i++) {
    double v = field(r, i);
    if (i % 97 == 5) v = -1e34;
    if (i % 1013 == 2) v = NAN;
    if (i % 1999 == 7) v = INFINITY;
    set(x, i, f64, v);
  }
}

/* Scatter from rank 1 % N (REL from the root's input), gather to the last
 * rank (in place there; REL from every rank's input), alltoall. */
static void test_rooted(zcclComm_t comm, int f64, zcclErrorMode_t mode, double eb, size_t n) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = 1, c.fillValue = -1e34;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  uint8_t* x = malloc(n * es * N);
  uint8_t* y = malloc(n * es * N);
  uint8_t* all = gathered(n * es * N * N);
  int sroot = 1 % nranks, groot = nranks - 1;
  /* Scatter: every rank makes the root's input (the same function). */
  fill_special(x, n * N, f64, sroot);
  memset(y, 0, n * es);
  CHECK_RES(zcclScatter(x, y, n, t, sroot, comm, NULL), zcclSuccess);
  long bad = moved_wrong(y, x + (size_t)rank * n * es, n, f64, eb_abs(&c, x, n * N, f64));
  /* Gather, in place at the root. */
  fill_special(x, n, f64, rank);
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  uint8_t* gsend = x;
  if (rank == groot) {
    memcpy(y + (size_t)rank * n * es, x, n * es);
    gsend = y + (size_t)rank * n * es;
  }
  CHECK_RES(zcclGather(gsend, y, n, t, groot, comm, NULL), zcclSuccess);
  if (rank == groot) bad += moved_wrong(y, all, n * N, f64, eb_abs(&c, all, n * N, f64));
  /* AlltoAll: block b of rank q's input lands in block q of rank b. */
  fill_special(x, n * N, f64, rank);
  MPI_Allgather(x, (int)(n * es * N), MPI_BYTE, all, (int)(n * es * N), MPI_BYTE, MPI_COMM_WORLD);
  CHECK_RES(zcclAlltoAll(x, y, n, t, comm, NULL), zcclSuccess);
  double e = eb_abs(&c, all, n * N * N, f64);
  for (size_t q = 0; q < N; q++)
    bad += moved_wrong(y + q * n * es, all + (q * N + (size_t)rank) * n * es, n, f64, e);
  if (bad) fprintf(stderr, "rank %d: scatter/gather/alltoall f%d mode %d n %zu: %ld wrong\n", rank, f64 ? 64 : 32,
                   (int)mode, n, bad);
  CHECK(bad == 0);
  free(x), free(y);
}

/* What compression does not apply to stays exact. */
static void test_uncompressed(zcclComm_t comm) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  size_t n = 5000;
  int32_t* xi = malloc(n * 4);
  int32_t* yi = malloc(n * 4);
  for (size_t i = 0; i < n; i++) xi[i] = (int32_t)(i * 31 + (size_t)rank);
  CHECK_RES(zcclAllReduce(xi, yi, n, zcclInt32, zcclSum, comm, NULL), zcclSuccess);
  long bad = 0;
  for (size_t i = 0; i < n; i++) bad += yi[i] != (int32_t)(i * 31 * (size_t)nranks + (size_t)(nranks * (nranks - 1) / 2));
  CHECK(bad == 0);
  float* xf = malloc(n * 4);
  float* yf = malloc(n * 4);
  for (size_t i = 0; i < n; i++) xf[i] = ((int)(i % 3) == rank % 3) ? 2.0f : 1.0f;
  CHECK_RES(zcclAllReduce(xf, yf, n, zcclFloat32, zcclProd, comm, NULL), zcclSuccess);
  for (size_t i = 0; i < n; i++) {
    float ref = 1.0f;
    for (int r = 0; r < nranks; r++) ref *= ((int)(i % 3) == r % 3) ? 2.0f : 1.0f;
    bad += yf[i] != ref;
  }
  CHECK(bad == 0);
  c.minBytes = 1 << 20; /* below: exact */
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  for (size_t i = 0; i < n; i++) xf[i] = (float)field(rank, i);
  CHECK_RES(zcclAllReduce(xf, yf, n, zcclFloat32, zcclMax, comm, NULL), zcclSuccess);
  float* mf = malloc(n * 4);
  MPI_Allreduce(xf, mf, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(memcmp(yf, mf, n * 4) == 0);
  free(xi), free(yi), free(xf), free(yf), free(mf);
}

/* ZCCL_CHECKSUM (read at communicator creation): with it the streams on
 * the wire carry a checksum per chunk (more wire bytes), and the results
 * are bit for bit those without; a homomorphic AllReduce verifies and
 * seals every step. The device must be the host's or sim (the CUDA
 * kernels write none). One algorithm for both: the cost model's choice
 * follows the link it measures, which differs from one communicator to
 * the next. */
static void test_checksum_wire(size_t n) {
  uint64_t wire[2];
  float* out[2];
  float* x = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)field(rank, i);
  setenv("ZCCL_ALGO", "ring", 1);
  for (int on = 0; on < 2; on++) {
    setenv("ZCCL_CHECKSUM", on ? "1" : "0", 1);
    zcclComm_t comm = ccoll_comm(rank, nranks, NULL);
    unsetenv("ZCCL_CHECKSUM");
    if (comm == NULL) return;
    zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
    c.codec = zcclCodecHz, c.mode = zcclErrorAbs, c.eb = 1e-3, c.minBytes = 0;
    CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
    out[on] = malloc(n * 4 * (size_t)nranks + n * 4);
    CHECK_RES(zcclAllGather(x, out[on], n, zcclFloat32, comm, NULL), zcclSuccess);
    CHECK_RES(zcclAllReduce(x, out[on] + n * (size_t)nranks, n, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
    uint64_t raw;
    CHECK_RES(zcclCommCompressionStats(comm, &raw, &wire[on]), zcclSuccess);
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  }
  unsetenv("ZCCL_ALGO");
  CHECK(wire[1] > wire[0]);
  CHECK(memcmp(out[0], out[1], n * 4 * ((size_t)nranks + 1)) == 0);
  free(out[0]);
  free(out[1]);
  free(x);
}

/* The hz AllReduce's output is the sum of what zcclCompressRoundtrip says
 * each rank's input becomes (the homomorphic sum adds the quantized values
 * exactly): so a rank's roundtrip residual is its whole share of the
 * output's error, which error feedback relies on. */
static void test_roundtrip_is_contribution(zcclComm_t comm, int f64, size_t n) {
  size_t es = f64 ? 8 : 4;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz, c.mode = zcclErrorAbs, c.eb = 1e-2, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  void* x = malloc(n * es);
  void* q = malloc(n * es);
  void* y = malloc(n * es);
  double* mine = malloc(n * sizeof(double));
  double* sum = malloc(n * sizeof(double));
  double* mag = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) set(x, i, f64, field(rank, i));
  CHECK_RES(zcclCompressRoundtrip(&c, x, q, n, t, NULL), zcclSuccess);
  CHECK_RES(zcclAllReduce(x, y, n, t, zcclSum, comm, NULL), zcclSuccess);
  for (size_t i = 0; i < n; i++) mine[i] = get(q, i, f64);
  MPI_Allreduce(mine, sum, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (size_t i = 0; i < n; i++) mine[i] = fabs(mine[i]);
  MPI_Allreduce(mine, mag, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  long off = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(get(y, i, f64) - sum[i]);
    if (!(d <= 2.0 * nranks * half_ulp(mag[i] + fabs(sum[i]), f64))) off++;
  }
  if (off) fprintf(stderr, "rank %d: %ld of %zu hz sums differ from the sum of the roundtrips\n", rank, off, n);
  CHECK(off == 0);
  free(x), free(q), free(y), free(mine), free(sum), free(mag);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  zcclComm_t comm = ccoll_comm(rank, nranks, NULL);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  const size_t counts[] = {1, 33, 100003};
  const zcclRedOp_t ops[] = {zcclSum, zcclAvg, zcclMax, zcclMin};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        test_allreduce(comm, f64, zcclErrorAbs, 1e-2, ops[o], counts[k]);
        test_allreduce(comm, f64, zcclErrorRel, 1e-4, ops[o], counts[k]);
      }
      test_allreduce(comm, f64, zcclErrorTargetRel, 1e-3, zcclSum, counts[k]);
      for (int kind = 1; kind <= 2; kind++) {
        test_reduction(comm, kind, f64, zcclErrorRel, 1e-4, zcclSum, counts[k]);
        test_reduction(comm, kind, f64, zcclErrorAbs, 1e-2, kind == 1 ? zcclAvg : zcclMax, counts[k]);
      }
      test_allgather(comm, f64, zcclErrorRel, 1e-3, counts[k], 0, 0);
      test_allgather(comm, f64, zcclErrorAbs, 1e-5, counts[k], 1, 0);
      test_allgather(comm, f64, zcclErrorRel, 1e-4, counts[k] * 3, k & 1, 1);
      test_broadcast(comm, f64, zcclErrorRel, 1e-3, counts[k]);
      test_broadcast(comm, f64, zcclErrorAbs, 1e-4, counts[k] * 7 + 1);
      test_rooted(comm, f64, zcclErrorRel, 1e-3, counts[k]);
      test_rooted(comm, f64, zcclErrorAbs, 1e-2, counts[k] / 3 + 1);
    }
  test_roundtrip_is_contribution(comm, 0, 100003);
  test_roundtrip_is_contribution(comm, 1, 4097);
  test_uncompressed(comm);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  test_checksum_wire(100003);
  MPI_Finalize();
  TEST_DONE();
}
