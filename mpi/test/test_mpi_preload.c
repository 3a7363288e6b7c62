/* An MPI program that knows nothing of zccl, run with libzccl-mpi.so
 * preloaded: every collective the library takes (float and double, SUM,
 * MAX, MIN, in place and not) on real data (levitus TEMP, each rank at
 * another place in it), compared on every element with the same call made
 * through PMPI_* (MPI itself): data movement exactly, reductions within
 * their rounding, or, with ZCCL_COMPRESSION set, within the bound (given as
 * the program's argument, ABS). Calls the library must leave to MPI (int,
 * MPI_PROD, small, a derived datatype, in-place Alltoall) are made too, and
 * the library's counters (zcclMpiCounts, looked up at run time) must show
 * exactly which went where: uncompressed runs set ZCCL_MPI_UNCOMPRESSED=1
 * so that zccl takes them; "0 mpi" as arguments: without it, every call
 * must stay with MPI. */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl_data.h"

static int rank, nranks, failures, checks;
static double eb; /* 0: uncompressed */
static zccl_data_t field;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    checks++;                                                                         \
    if (!(cond)) failures++, fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s\n", rank, __FILE__, __LINE__, #cond); \
  } while (0)

typedef int (*counts_fn)(unsigned long long*, unsigned long long*);
static counts_fn counts;
static unsigned long long taken0, passed0;

/* "mpi" as the second argument: the library must leave every call to MPI
 * (ZCCL_COMPRESSION off, ZCCL_MPI_UNCOMPRESSED unset). */
static int all_to_mpi;

/* How many calls went to zccl and to MPI since the last look. */
static void expect_counts(unsigned long long taken, unsigned long long passed, const char* what) {
  unsigned long long t = 0, p = 0;
  if (all_to_mpi) passed += taken, taken = 0;
  if (counts) counts(&t, &p);
  if (t - taken0 != taken || p - passed0 != passed)
    fprintf(stderr, "rank %d: %s: %llu calls to zccl and %llu to MPI, expected %llu and %llu\n", rank, what,
            t - taken0, p - passed0, taken, passed);
  CHECK(t - taken0 == taken && p - passed0 == passed);
  taken0 = t, passed0 = p;
}

static double get(const void* b, size_t i, MPI_Datatype t) {
  return t == MPI_FLOAT ? ((const float*)b)[i] : ((const double*)b)[i];
}

static void* fill(size_t n, MPI_Datatype t, size_t offset) {
  void* b = malloc(n * 8 + 8);
  zccl_data_t d = field;
  if (t == MPI_DOUBLE) {
    double* v = b;
    float* f = malloc(n * 4);
    zccl_data_tile(&d, offset, f, n);
    for (size_t i = 0; i < n; i++) v[i] = f[i];
    free(f);
  } else {
    zccl_data_tile(&d, offset, b, n);
  }
  return b;
}

/* got against want (MPI's), n elements: exact for data movement, else
 * within tol (and within eb per contribution when compressed). */
static long compare(const void* got, const void* want, size_t n, MPI_Datatype t, double tol, const char* what) {
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = get(got, i, t), w = get(want, i, t);
    if (!(fabs(g - w) <= tol)) {
      if (bad++ == 0)
        fprintf(stderr, "rank %d: %s: element %zu is %.9g, MPI gives %.9g (tolerance %g)\n", rank, what, i, g, w,
                tol);
    }
  }
  CHECK(bad == 0);
  return bad;
}

/* The reductions' tolerance: rounding of N-1 additions in another order
 * (magnitudes up to 40 degrees), plus N x eb compressed (the bound of a
 * compressed reduction over N ranks, docs/compressed.md). */
static double red_tol(MPI_Datatype t, MPI_Op op) {
  double ulp = t == MPI_FLOAT ? 6e-8 : 1.2e-16;
  double round = op == MPI_SUM ? 2.0 * nranks * nranks * 40 * ulp : 0;
  return round + (eb > 0 ? nranks * eb * 1.0001 : 0);
}

/* Every intercepted collective for type t with n elements per block. */
static void test_type(MPI_Datatype t, size_t n) {
  size_t N = (size_t)nranks;
  const char* tn = t == MPI_FLOAT ? "float" : "double";
  char what[96];
  void* x = fill(n * N, t, (size_t)rank * 7919);
  void* y = malloc(n * N * 8 + 8);
  void* z = malloc(n * N * 8 + 8);
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
  const char* opn[] = {"sum", "max", "min"};
  for (int o = 0; o < 3; o++) {
    snprintf(what, sizeof what, "allreduce %s %s", tn, opn[o]);
    MPI_Allreduce(x, y, (int)n, t, ops[o], MPI_COMM_WORLD);
    PMPI_Allreduce(x, z, (int)n, t, ops[o], MPI_COMM_WORLD);
    compare(y, z, n, t, red_tol(t, ops[o]), what);
    /* in place */
    memcpy(y, x, n * (t == MPI_FLOAT ? 4 : 8));
    MPI_Allreduce(MPI_IN_PLACE, y, (int)n, t, ops[o], MPI_COMM_WORLD);
    compare(y, z, n, t, red_tol(t, ops[o]), "allreduce in place");
    /* reduce to the last rank, in place there */
    int root = nranks - 1;
    if (rank == root) memcpy(y, x, n * (t == MPI_FLOAT ? 4 : 8));
    MPI_Reduce(rank == root ? MPI_IN_PLACE : x, rank == root ? y : NULL, (int)n, t, ops[o], root, MPI_COMM_WORLD);
    PMPI_Reduce(x, z, (int)n, t, ops[o], root, MPI_COMM_WORLD);
    if (rank == root) compare(y, z, n, t, red_tol(t, ops[o]), "reduce");
    /* reduce_scatter_block, and in place */
    snprintf(what, sizeof what, "reduce_scatter_block %s %s", tn, opn[o]);
    MPI_Reduce_scatter_block(x, y, (int)n, t, ops[o], MPI_COMM_WORLD);
    PMPI_Reduce_scatter_block(x, z, (int)n, t, ops[o], MPI_COMM_WORLD);
    compare(y, z, n, t, red_tol(t, ops[o]), what);
    memcpy(y, x, n * N * (t == MPI_FLOAT ? 4 : 8));
    MPI_Reduce_scatter_block(MPI_IN_PLACE, y, (int)n, t, ops[o], MPI_COMM_WORLD);
    compare(y, z, n, t, red_tol(t, ops[o]), "reduce_scatter_block in place");
    /* reduce_scatter with equal counts */
    int* rc = malloc(sizeof(int) * N);
    for (size_t r = 0; r < N; r++) rc[r] = (int)n;
    MPI_Reduce_scatter(x, y, rc, t, ops[o], MPI_COMM_WORLD);
    compare(y, z, n, t, red_tol(t, ops[o]), "reduce_scatter");
    free(rc);
  }
  expect_counts(3 * 6, 0, "reductions"); /* per op: allreduce 2, reduce 1, reduce_scatter_block 2, reduce_scatter 1 */
  double mv = eb > 0 ? eb * 1.0001 : 0; /* data movement: exact, or within eb */
  /* bcast from rank 1 % N */
  memcpy(y, x, n * (t == MPI_FLOAT ? 4 : 8));
  memcpy(z, x, n * (t == MPI_FLOAT ? 4 : 8));
  MPI_Bcast(y, (int)n, t, 1 % nranks, MPI_COMM_WORLD);
  PMPI_Bcast(z, (int)n, t, 1 % nranks, MPI_COMM_WORLD);
  compare(y, z, n, t, rank == 1 % nranks ? 0 : mv, "bcast");
  /* allgather, and in place */
  MPI_Allgather(x, (int)n, t, y, (int)n, t, MPI_COMM_WORLD);
  PMPI_Allgather(x, (int)n, t, z, (int)n, t, MPI_COMM_WORLD);
  compare(y, z, n * N, t, mv, "allgather");
  memcpy((char*)y + (size_t)rank * n * (t == MPI_FLOAT ? 4 : 8), x, n * (t == MPI_FLOAT ? 4 : 8));
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y, (int)n, t, MPI_COMM_WORLD);
  compare(y, z, n * N, t, mv, "allgather in place");
  /* gather to rank 0, scatter from it */
  MPI_Gather(x, (int)n, t, y, (int)n, t, 0, MPI_COMM_WORLD);
  PMPI_Gather(x, (int)n, t, z, (int)n, t, 0, MPI_COMM_WORLD);
  if (rank == 0) compare(y, z, n * N, t, mv, "gather");
  MPI_Scatter(x, (int)n, t, y, (int)n, t, 0, MPI_COMM_WORLD);
  PMPI_Scatter(x, (int)n, t, z, (int)n, t, 0, MPI_COMM_WORLD);
  compare(y, z, n, t, mv, "scatter");
  /* alltoall */
  MPI_Alltoall(x, (int)n, t, y, (int)n, t, MPI_COMM_WORLD);
  PMPI_Alltoall(x, (int)n, t, z, (int)n, t, MPI_COMM_WORLD);
  compare(y, z, n * N, t, mv, "alltoall");
  expect_counts(6, 0, "data movement");
  free(x), free(y), free(z);
}

/* Calls that must go to MPI untouched, every rank alike. */
static void test_passed(void) {
  int a[1 << 15], b[1 << 15];
  for (int i = 0; i < 1 << 15; i++) a[i] = rank + i;
  MPI_Allreduce(a, b, 1 << 15, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* not float */
  CHECK(b[5] == nranks * 5 + nranks * (nranks - 1) / 2);
  float f[1 << 15], g[1 << 15];
  for (int i = 0; i < 1 << 15; i++) f[i] = 1.0f + (float)(i % 3);
  MPI_Allreduce(f, g, 1 << 15, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD); /* not SUM/MAX/MIN */
  MPI_Allreduce(f, g, 16, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);        /* small */
  CHECK(g[1] == 2.0f * nranks);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_FLOAT, &pair);
  MPI_Type_commit(&pair);
  MPI_Bcast(f, 1 << 14, pair, 0, MPI_COMM_WORLD); /* a derived datatype */
  MPI_Type_free(&pair);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, f, (1 << 15) / nranks, MPI_FLOAT, MPI_COMM_WORLD);
  expect_counts(0, 5, "calls left to MPI");
  /* A communicator of its own (a split), with its own zccl one, freed. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int hn = 0;
  MPI_Comm_size(half, &hn);
  MPI_Allreduce(f, g, 1 << 15, MPI_FLOAT, MPI_MAX, half);
  MPI_Comm_free(&half);
  expect_counts(hn > 1 ? 1 : 0, hn > 1 ? 0 : 1, "a split communicator");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  eb = argc > 1 ? atof(argv[1]) : 0;
  all_to_mpi = argc > 2 && strcmp(argv[2], "mpi") == 0;
  counts = (counts_fn)dlsym(RTLD_DEFAULT, "zcclMpiCounts");
  if (counts == NULL) {
    fprintf(stderr, "libzccl-mpi.so is not loaded: run with LD_PRELOAD=.../libzccl-mpi.so\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char err[256];
  if (zccl_data_load("levitus_climatology.cdf:TEMP", 0, &field, err, sizeof err) != 0) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zccl_data_replace_fill(&field, 0.0);
  counts(&taken0, &passed0);
  test_type(MPI_FLOAT, 100003);
  test_type(MPI_DOUBLE, 50021);
  test_passed();
  zccl_data_free(&field);
  int all = 0;
  PMPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d: %d checks, %d failed%s\n", rank, checks, failures, rank == 0 && all ? " (somewhere)" : "");
  MPI_Finalize();
  return all ? 1 : 0;
}
