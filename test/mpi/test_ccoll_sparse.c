/* The sparse RLE chain (codec=rle) under mpirun: Reduce and AllReduce of
 * sparse (95% zeros), dense, all-zero and NaN/Inf/-0.0-containing inputs,
 * float32 and float64, SUM, AVG, MAX and MIN, counts 0, 1, 33 and one large
 * enough for many pipelined pieces. RLE is lossless, so every element must
 * equal, exactly, the reduction computed here in the chain's order
 *   x_0 op (x_1 op (... op (x_{N-2} op x_{N-1}))),  x_v: rank (root + v) mod N,
 * in the dtype's arithmetic (NaN where either operand of MAX/MIN is; a
 * zero's sign is not compared), and the uncompressed chain Reduce
 * (ZCCL_ALGO=chain for the whole run: the same order). AllReduce:
 * bit-identical on every rank.
 * The stats show the streams: far smaller than the values for sparse data,
 * never more than the values plus a 24-byte header per piece.
 *   mpirun -np N test_ccoll_sparse */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_ccoll_util.h"
#include "test_util.h"

static int rank, nranks;

enum { SPARSE, DENSE, ZEROS, SPECIAL, NKINDS };
static const char* kind_name[NKINDS] = {"sparse", "dense", "all-zero", "nan/inf"};

static uint32_t mix(size_t i, int r) {
  uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(r + 1) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  return h ^ (h >> 13);
}

static double value(int kind, int r, size_t i) {
  double v = 20.0 * sin(i * 0.001 + r) + 3.0 * cos(i * 0.037) + 0.25 * r + 1e-3 * (double)(mix(i, r) % 97);
  if (kind == ZEROS) return 0.0;
  if (kind == DENSE) return v;
  if (mix(i, r) % 100 >= 5) return (kind == SPECIAL && mix(i, r) % 100 == 50) ? -0.0 : 0.0; /* 95% zeros */
  if (kind == SPECIAL) {
    uint32_t s = mix(i, r + 7) % 40;
    if (s == 0) return NAN;
    if (s == 1) return INFINITY;
    if (s == 2) return -INFINITY;
  }
  return v;
}

/* op(a, b) in the dtype, as the chain computes it. */
static float op_f(zcclRedOp_t op, float a, float b) {
  if (op == zcclMax) return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  if (op == zcclMin) return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
  return a + b;
}
static double op_d(zcclRedOp_t op, double a, double b) {
  if (op == zcclMax) return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  if (op == zcclMin) return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
  return a + b;
}

/* The reference of element i in the chain's order from all[r * n + i]. */
static double reference(const void* all, size_t n, size_t i, int f64, zcclRedOp_t op, int root) {
  zcclRedOp_t o = op == zcclAvg ? zcclSum : op;
  int last = (root + nranks - 1) % nranks;
  if (f64) {
    double acc = get(all, (size_t)last * n + i, 1);
    for (int v = nranks - 2; v >= 0; v--) acc = op_d(o, get(all, (size_t)((root + v) % nranks) * n + i, 1), acc);
    return op == zcclAvg ? acc / (double)nranks : acc;
  }
  float acc = (float)get(all, (size_t)last * n + i, 0);
  for (int v = nranks - 2; v >= 0; v--)
    acc = op_f(o, (float)get(all, (size_t)((root + v) % nranks) * n + i, 0), acc);
  return op == zcclAvg ? (double)(acc / (float)nranks) : (double)acc;
}

static int equal(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void set_codec(zcclComm_t comm, int codec) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = codec, c.minBytes = 0;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
}

/* all: 0 Reduce to root, 1 AllReduce. */
static void test_sparse_codec(zcclComm_t comm, int codec, int all_ranks, int kind, int f64, zcclRedOp_t op, size_t n,
                              int root, int inplace) {
  size_t es = f64 ? 8 : 4, N = (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  if (all_ranks) root = 0;
  uint8_t* x = malloc(n * es + 1);
  uint8_t* y = malloc(n * es + 1);
  uint8_t* z = malloc(n * es + 1);
  uint8_t* all = gathered(n * es * N + 1);
  for (size_t i = 0; i < n; i++) set(x, i, f64, value(kind, rank, i));
  MPI_Allgather(x, (int)(n * es), MPI_BYTE, all, (int)(n * es), MPI_BYTE, MPI_COMM_WORLD);
  memset(y, 0x5a, n * es);
  const void* send = x;
  if (inplace) {
    memcpy(y, x, n * es);
    send = y;
  }
  set_codec(comm, codec);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  if (all_ranks)
    CHECK_RES(zcclAllReduce(send, y, n, t, op, comm, NULL), zcclSuccess);
  else
    CHECK_RES(zcclReduce(send, y, n, t, op, root, comm, NULL), zcclSuccess);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  uint64_t raw = raw1 - raw0, wire = wire1 - wire0, raw_all = raw;
  MPI_Allreduce(MPI_IN_PLACE, &raw_all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  int chain = codec == zcclCodecRle || raw_all > 0; /* auto: did the sparse chain run? */
  if (codec == zcclCodecAuto && rank == 0)
    printf("codec=auto %s of %zu values, 95%% zeros: %s\n", all_ranks ? "allreduce" : "reduce", n,
           chain ? "the sparse chain" : "uncompressed (the model found it cheaper here)");
  /* Every rank but the reduce's root sends n values (allreduce: all but the
   * last also pass the result on); never more than them plus the headers. */
  if (chain && n > 0 && (all_ranks || rank != root)) CHECK(raw >= n * es && wire > 0);
  CHECK(wire <= raw + 24 * (raw / 4096 + 2));
  /* Partial sums grow denser toward the root: with 95% zeros at random
   * places, k inputs leave 1 - 0.95^k nonzero. Each rank sends one
   * partial of at most N - 1 inputs, so it is below two thirds of the raw
   * bytes while that stays under about a fifth (N <= 5). */
  if (n > 100000 && kind != DENSE && raw > 0 && nranks <= 5) CHECK(wire * 3 < raw * 2);
  long bad = 0;
  if (all_ranks || rank == root)
    for (size_t i = 0; i < n; i++) {
      double want = reference(all, n, i, f64, op, root), got = get(y, i, f64);
      /* The uncompressed path may add in another order: within its rounding. */
      bad += chain ? !equal(got, want) : !(fabs(got - want) <= 4.0 * nranks * (f64 ? 2.3e-16 : 1.2e-7) * (1 + fabs(want)));
    }
  if (bad)
    fprintf(stderr, "rank %d: sparse %s %s f%d op %d n %zu root %d: %ld elements differ\n", rank,
            all_ranks ? "allreduce" : "reduce", kind_name[kind], f64 ? 64 : 32, (int)op, n, root, bad);
  CHECK(bad == 0);
  if (all_ranks) CHECK(same_everywhere(y, n * es));
  if (!all_ranks && op != zcclAvg) { /* the uncompressed chain, same order: the same values */
    set_codec(comm, zcclCodecNone);
    CHECK_RES(zcclReduce(x, z, n, t, op, root, comm, NULL), zcclSuccess);
    long diff = 0;
    if (rank == root)
      for (size_t i = 0; i < n; i++) diff += !equal(get(y, i, f64), get(z, i, f64));
    CHECK(diff == 0);
  }
  free(x), free(y), free(z);
}

static void test_sparse(zcclComm_t comm, int all_ranks, int kind, int f64, zcclRedOp_t op, size_t n, int root,
                        int inplace) {
  test_sparse_codec(comm, zcclCodecRle, all_ranks, kind, f64, op, n, root, inplace);
}

/* codec=auto on data whose every rank is 95% zeros, 4 MB: the model takes
 * the sparse chain (over 1 MiB, every rank at least 90% zeros), so the
 * result is the chain's, exactly; the same checks as codec=rle. Over shared
 * memory the model may find the uncompressed path cheaper, which gives the
 * same values in the same (chain) order: the test holds either way, and
 * says which ran. */
static void test_auto_sparse(zcclComm_t comm) {
  for (int all_ranks = 0; all_ranks < 2; all_ranks++)
    for (int f64 = 0; f64 < 2; f64++) test_sparse_codec(comm, zcclCodecAuto, all_ranks, 0, f64, zcclSum, 1000003,
                                                        nranks - 1, 0);
}

/* Data movement with codec=rle (compress once, RLE streams): every value
 * arrives exactly (-0.0 as +0.0, NaN as NaN), the same on every rank.
 * coll: 0 allgather, 1 broadcast, 2 scatter, 3 gather, 4 alltoall; n per
 * rank's block. */
static void test_rle_moves(zcclComm_t comm, int coll, int kind, int f64, size_t n) {
  static const char* names[] = {"allgather", "broadcast", "scatter", "gather", "alltoall"};
  size_t es = f64 ? 8 : 4, N = (size_t)nranks, nin = coll == 1 ? n : (coll == 0 || coll == 3) ? n : n * N;
  size_t nout = coll == 1 || coll == 2 ? n : n * N;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  int root = nranks - 1;
  uint8_t* x = malloc(nin * es + 1);
  uint8_t* y = malloc(nout * es + 1);
  uint8_t* all = gathered(nin * es * N + 1);
  for (size_t i = 0; i < nin; i++) set(x, i, f64, value(kind, rank, i));
  MPI_Allgather(x, (int)(nin * es), MPI_BYTE, all, (int)(nin * es), MPI_BYTE, MPI_COMM_WORLD);
  memset(y, 0x5a, nout * es);
  set_codec(comm, zcclCodecRle);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  switch (coll) {
    case 0: CHECK_RES(zcclAllGather(x, y, n, t, comm, NULL), zcclSuccess); break;
    case 1: CHECK_RES(zcclBroadcast(x, y, n, t, root, comm, NULL), zcclSuccess); break;
    case 2: CHECK_RES(zcclScatter(x, y, n, t, root, comm, NULL), zcclSuccess); break;
    case 3: CHECK_RES(zcclGather(x, y, n, t, root, comm, NULL), zcclSuccess); break;
    default: CHECK_RES(zcclAlltoAll(x, y, n, t, comm, NULL), zcclSuccess); break;
  }
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  uint64_t rw[2] = {raw1 - raw0, wire1 - wire0};
  MPI_Allreduce(MPI_IN_PLACE, rw, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(rw[0] > 0); /* it went compressed */
  if (kind != DENSE && n > 10000) CHECK(rw[1] * 4 < rw[0]); /* 95% zeros: far fewer bytes */
  long bad = 0;
  int has = coll != 3 || rank == root;
  for (size_t i = 0; has && i < nout; i++) {
    size_t src; /* the rank and index of the input this output value comes from */
    if (coll == 0 || coll == 3) src = i / n * nin + i % n;
    else if (coll == 1) src = (size_t)root * nin + i;
    else if (coll == 2) src = (size_t)root * nin + (size_t)rank * n + i;
    else src = i / n * nin + (size_t)rank * n + i % n;
    bad += !equal(get(y, i, f64), get(all, src, f64));
  }
  if (bad)
    fprintf(stderr, "rank %d: rle %s %s f%d n %zu: %ld values differ\n", rank, names[coll], kind_name[kind],
            f64 ? 64 : 32, n, bad);
  CHECK(bad == 0);
  free(x), free(y);
}

/* What the chain does not take stays exact and uncompressed: PROD. */
static void test_prod(zcclComm_t comm) {
  size_t n = 3000;
  float* x = malloc(n * 4);
  float* y = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = ((int)(i % 3) == rank % 3) ? 2.0f : (i % 5 ? 1.0f : 0.0f);
  set_codec(comm, zcclCodecRle);
  CHECK_RES(zcclAllReduce(x, y, n, zcclFloat32, zcclProd, comm, NULL), zcclSuccess);
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    float ref = 1.0f;
    for (int r = 0; r < nranks; r++) ref *= ((int)(i % 3) == r % 3) ? 2.0f : (i % 5 ? 1.0f : 0.0f);
    bad += y[i] != ref;
  }
  CHECK(bad == 0);
  free(x), free(y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* The uncompressed Reduce to compare with is the chain; no compressed
   * algorithm has that name, so codec=rle keeps its own (sparse). Set
   * before the library has threads reading the environment. */
  setenv("ZCCL_ALGO", "chain", 1);
  zcclComm_t comm = ccoll_comm(rank, nranks, NULL);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  const size_t counts[] = {0, 1, 33, 1000003};
  const zcclRedOp_t ops[] = {zcclSum, zcclMax, zcclMin, zcclAvg};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (int kind = 0; kind < NKINDS; kind++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
          /* A million values (many chunks, a pipelined chain) for every
           * kind and op in float32; in float64 for SUM only, which the
           * other ops' paths share but for the element function, already
           * covered at the smaller counts (keeps CI's np8 run short). */
          if (counts[k] > 100000 && f64 && ops[o] != zcclSum) continue;
          /* Roots at either end and in the middle; in place now and then. */
          int root = (int)(k + (size_t)kind + o) % nranks, inplace = (kind + (int)o) % 3 == 0;
          test_sparse(comm, 0, kind, f64, ops[o], counts[k], root, inplace);
          test_sparse(comm, 1, kind, f64, ops[o], counts[k], 0, !inplace);
        }
  test_prod(comm);
  test_auto_sparse(comm);
  for (int coll = 0; coll < 5; coll++)
    for (int kind = 0; kind < NKINDS; kind++) {
      test_rle_moves(comm, coll, kind, kind & 1, 100003);
      test_rle_moves(comm, coll, kind, !(kind & 1), 33);
    }
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  MPI_Finalize();
  TEST_DONE();
}
