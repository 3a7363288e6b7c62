/* OSU-style latency of MPI_Allreduce and MPI_Bcast as an unchanged MPI
 * program sees them with libzccl-mpi.so preloaded, beside the same calls
 * through PMPI_* (MPI itself) in the same run, rounds interleaved: the
 * interception's overhead on small messages and its gain on large ones
 * (docs/mpi.md). Each row: bytes, MPI's and the preloaded call's median
 * time over the rounds (each round the mean of its iterations, rank 0's
 * view after a barrier), their ratio, whether zccl took the call, and the
 * largest difference between the two results (0 uncompressed; within the
 * bound compressed). Data: levitus TEMP, each rank elsewhere in it.
 *
 *   mpirun -np 4 -x LD_PRELOAD=.../libzccl-mpi.so zccl-mpi-osu [-b 8] [-e 64M] [-r 5] [--csv FILE]
 */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl_data.h"

typedef int (*counts_fn)(unsigned long long*, unsigned long long*);

static int rank, nranks;

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end && (*end == 'K' || *end == 'k')) v *= 1024;
  if (end && (*end == 'M' || *end == 'm')) v *= 1048576;
  if (end && (*end == 'G' || *end == 'g')) v *= 1073741824;
  return (size_t)v;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Mean seconds of iters calls (bcast 0, allreduce 1), plain through PMPI or not. */
static double timed(int coll, int plain, float* x, float* y, int n, int iters) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    if (coll == 0)
      plain ? PMPI_Bcast(x, n, MPI_FLOAT, 0, MPI_COMM_WORLD) : MPI_Bcast(x, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else
      plain ? PMPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
            : MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double t = (MPI_Wtime() - t0) / iters, worst = 0;
  PMPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t lo = 8, hi = 64u << 20;
  int rounds = 5;
  const char* csv = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-b") && i + 1 < argc) lo = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-e") && i + 1 < argc) hi = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
  }
  counts_fn counts = (counts_fn)dlsym(RTLD_DEFAULT, "zcclMpiCounts");
  if (rank == 0 && counts == NULL) fprintf(stderr, "zccl-mpi-osu: libzccl-mpi.so is not preloaded: both columns are MPI\n");
  zccl_data_t field;
  char err[256];
  if (zccl_data_load("levitus_climatology.cdf:TEMP", 0, &field, err, sizeof err) != 0) {
    if (rank == 0) fprintf(stderr, "zccl-mpi-osu: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  zccl_data_replace_fill(&field, 0.0);
  size_t maxn = hi / 4 + 1;
  float *x = malloc(maxn * 4), *y = malloc(maxn * 4), *ref = malloc(maxn * 4), *orig = malloc(maxn * 4);
  zccl_data_tile(&field, (size_t)rank * 104729, orig, maxn);
  FILE* out = csv && rank == 0 ? fopen(csv, "w") : NULL;
  if (out) fprintf(out, "collective,bytes,mpi_us,preload_us,ratio,zccl,max_diff\n");
  static const char* names[2] = {"MPI_Bcast", "MPI_Allreduce"};
  for (int coll = 1; coll >= 0; coll--) {
    if (rank == 0)
      printf("\n%s, %d ranks\n%12s %12s %12s %8s %6s %10s\n", names[coll], nranks, "bytes", "MPI us", "preload us",
             "ratio", "zccl", "max diff");
    for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
      int n = (int)(bytes / 4 ? bytes / 4 : 1);
      int iters = bytes <= 65536 ? 200 : bytes <= (4u << 20) ? 20 : 3;
      double tm[64], tp[64];
      unsigned long long t0 = 0, t1 = 0, p = 0;
      if (counts) counts(&t0, &p);
      for (int r = 0; r < rounds && r < 64; r++) {
        memcpy(x, orig, (size_t)n * 4);
        tm[r] = timed(coll, 1, x, y, n, iters);
        memcpy(x, orig, (size_t)n * 4);
        tp[r] = timed(coll, 0, x, y, n, iters);
      }
      if (counts) counts(&t1, &p);
      /* the results, once more each, compared element by element */
      memcpy(x, orig, (size_t)n * 4);
      if (coll == 0) {
        PMPI_Bcast(x, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        memcpy(ref, x, (size_t)n * 4);
        memcpy(x, orig, (size_t)n * 4);
        MPI_Bcast(x, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      } else {
        PMPI_Allreduce(x, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      const float* got = coll == 0 ? x : y;
      double diff = 0, all = 0;
      for (int i = 0; i < n; i++) diff = fmax(diff, fabs((double)got[i] - ref[i]));
      PMPI_Allreduce(&diff, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      qsort(tm, (size_t)rounds, sizeof tm[0], cmp_double);
      qsort(tp, (size_t)rounds, sizeof tp[0], cmp_double);
      double m = tm[rounds / 2] * 1e6, q = tp[rounds / 2] * 1e6;
      int took = t1 > t0;
      if (rank == 0) {
        printf("%12zu %12.1f %12.1f %8.2f %6s %10.3g\n", bytes, m, q, m / q, took ? "yes" : "no", all);
        fflush(stdout);
      }
      if (out) fprintf(out, "%s,%zu,%.3f,%.3f,%.4f,%d,%.6g\n", names[coll], bytes, m, q, m / q, took, all);
    }
  }
  if (out) fclose(out);
  free(x), free(y), free(ref), free(orig);
  zccl_data_free(&field);
  MPI_Finalize();
  return 0;
}
