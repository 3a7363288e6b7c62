/* Small allreduces by the mailbox (ranks on one machine store into each
 * other's memory, zp_mailbox.c): thousands of calls back to back, sizes on
 * both sides of ZCCL_MAILBOX_BYTES, in and out of place, two types and
 * ops, with broadcasts from every root between them (a root that returns
 * at once runs ahead into the next allreduce, whose slots must not be
 * overwritten early). Every element of every call is checked, and every
 * rank's result is bit-identical. Whether the mailbox was on is for the
 * CTest line to check (its log line); the same test runs with it off. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_ccoll_util.h"

static int rank, nranks;

/* Float counts around the default mailbox (4096 bytes, its 16-byte frame
 * head included): 1020 floats fit, 1021 do not. */
static const size_t counts[] = {1, 2, 15, 16, 255, 1020, 1021, 1500};
#define NCOUNTS (sizeof counts / sizeof counts[0])
#define MAXC 1500

static long wrong;

static float rounding_input(int r, size_t j) {
  return sinf((float)(j * 0.37 + r * 1.3)) * 1e3f / (1.0f + (float)(j % 5));
}

static void check_sum(const float* y, size_t n, int iter) {
  for (size_t j = 0; j < n; j++) {
    double want = (double)nranks * (nranks - 1) / 2 + (double)nranks * (3.0 * (double)j + iter % 101);
    if (y[j] != (float)want && wrong++ < 5)
      fprintf(stderr, "rank %d iter %d: sum[%zu] = %g, want %g\n", rank, iter, j, (double)y[j], want);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int iters = argc > 1 ? atoi(argv[1]) : 4000;
  zcclComm_t comm = ccoll_comm(rank, nranks, NULL);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  float* x = malloc(MAXC * sizeof *x);
  float* y = malloc(MAXC * sizeof *y);
  int32_t* ix = malloc(MAXC * sizeof *ix);
  int32_t* iy = malloc(MAXC * sizeof *iy);
  float b[4];
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    size_t n = counts[i % NCOUNTS];
    int inplace = (i / NCOUNTS) % 2;
    for (size_t j = 0; j < n; j++) x[j] = (float)(rank + 3 * (double)j + i % 101);
    CHECK_RES(zcclAllReduce(x, inplace ? x : y, n, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
    check_sum(inplace ? x : y, n, i);
    if (i % 5 == 0) {
      for (size_t j = 0; j < n; j++) ix[j] = (int32_t)((rank * 7919 + (int)j * 31 + i) % 1000);
      CHECK_RES(zcclAllReduce(ix, iy, n, zcclInt32, zcclMax, comm, NULL), zcclSuccess);
      for (size_t j = 0; j < n; j++) {
        int32_t want = -1;
        for (int q = 0; q < nranks; q++) {
          int32_t v = (int32_t)((q * 7919 + (int)j * 31 + i) % 1000);
          if (v > want) want = v;
        }
        if (iy[j] != want && wrong++ < 5) fprintf(stderr, "rank %d iter %d: max[%zu] = %d, want %d\n", rank, i, j,
                                                  (int)iy[j], (int)want);
      }
    }
    if (i % 3 == 0) { /* the root returns at once, into the next allreduce */
      int root = i % nranks;
      for (int j = 0; j < 4; j++) b[j] = rank == root ? (float)(i + j) : -1.0f;
      CHECK_RES(zcclBroadcast(b, b, 4, zcclFloat32, root, comm, NULL), zcclSuccess);
      for (int j = 0; j < 4; j++)
        if (b[j] != (float)(i + j) && wrong++ < 5) fprintf(stderr, "rank %d iter %d: broadcast[%d] = %g\n", rank, i, j,
                                                           (double)b[j]);
    }
  }
  double per = (MPI_Wtime() - t0) / iters * 1e6;
  /* Values that round: every rank's result is the same bits (each reduces
   * the N messages in rank order). */
  for (size_t c = 0; c < NCOUNTS; c++) {
    size_t n = counts[c];
    for (size_t j = 0; j < n; j++) x[j] = rounding_input(rank, j);
    CHECK_RES(zcclAllReduce(x, y, n, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < n * sizeof *y; k++) h = (h ^ ((const uint8_t*)y)[k]) * 16777619u;
    uint32_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT32_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi);
    for (size_t j = 0; j < n; j++) { /* and within float rounding of the exact sum */
      double want = 0, scale = 0;
      for (int q = 0; q < nranks; q++) want += rounding_input(q, j), scale += fabs(rounding_input(q, j));
      if (fabs(y[j] - want) > 1e-6 * scale * nranks && wrong++ < 5)
        fprintf(stderr, "rank %d: rounded sum[%zu] = %g, want %g\n", rank, j, (double)y[j], want);
    }
  }
  CHECK(wrong == 0);
  if (rank == 0) printf("%d rounds of small allreduces (and broadcasts), %.2f us a round\n", iters, per);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  free(x), free(y), free(ix), free(iy);
  MPI_Finalize();
  TEST_DONE();
}
