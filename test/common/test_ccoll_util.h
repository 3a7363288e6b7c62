/* What the compressed-collective tests share: a test field, float32/float64
 * element access, the library's absolute bound, and a check that a buffer
 * is the same on every MPI rank. Header-only (static), for tests under mpirun. */
#ifndef TEST_CCOLL_UTIL_H_
#define TEST_CCOLL_UTIL_H_

#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zccl.h"

/* Smooth, different on every rank, mixed signs. */
static inline double field(int r, size_t i) {
  return 20.0 * sin(i * 0.001 + r) + 3.0 * cos(i * 0.037) + 0.25 * r - 5.0 + 1e-3 * (double)((i * 2654435761u) % 97);
}

static inline double get(const void* b, size_t i, int f64) {
  return f64 ? ((const double*)b)[i] : ((const float*)b)[i];
}
static inline void set(void* b, size_t i, int f64, double v) {
  if (f64)
    ((double*)b)[i] = v;
  else
    ((float*)b)[i] = (float)v;
}

/* One rounding of an output value: half an ulp of its type. */
static inline double half_ulp(double v, int f64) { return fabs(v) * (f64 ? DBL_EPSILON : FLT_EPSILON); }

static inline int is_fill(double v, const zcclCompression_t* c, int f64) {
  return c->hasFill && v == (f64 ? c->fillValue : (double)(float)c->fillValue);
}

/* eb as the library derives it before any target division: ABS as given,
 * REL times the range of the valid values in all[0, total) (constant or no
 * valid data: the magnitude, or 1). */
static inline double eb_abs(const zcclCompression_t* c, const void* all, size_t total, int f64) {
  if (c->mode == zcclErrorAbs || c->mode == zcclErrorTargetAbs) return c->eb;
  double mn = INFINITY, mx = -INFINITY;
  for (size_t i = 0; i < total; i++) {
    double v = get(all, i, f64);
    if (!isfinite(v) || is_fill(v, c, f64)) continue;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  double range = mx - mn;
  if (!(range > 0) || !isfinite(range)) range = isfinite(mx) && mx != 0 ? fabs(mx) : 1.0;
  return c->eb * range;
}

/* Where every rank's input is gathered for the reference (MPI_Allgather):
 * one kept buffer a process. At 8 ranks a million float64s gather into
 * 64 MiB, above anything glibc keeps after a free. */
static inline void* gathered(size_t bytes) {
  static void* buf;
  static size_t cap;
  return test_kept(&buf, &cap, bytes);
}

/* 1 on every rank when buf's bytes are rank 0's everywhere. */
static inline int same_everywhere(const void* buf, size_t bytes) {
  void* r0 = malloc(bytes ? bytes : 1);
  memcpy(r0, buf, bytes);
  MPI_Bcast(r0, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  int same = memcmp(r0, buf, bytes) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  free(r0);
  return all;
}

/* Moved values got against ref: within e, NaN as NaN, +-Inf and the tests'
 * fill value (-1e34) exactly. Returns how many are not. */
static inline long moved_wrong(const void* got, const void* ref, size_t n, int f64, double e) {
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double r = get(ref, i, f64), g = get(got, i, f64);
    int ok;
    if (isnan(r)) ok = isnan(g);
    else if (!isfinite(r) || r == (f64 ? -1e34 : (double)(float)-1e34)) ok = g == r;
    else ok = fabs(g - r) <= e;
    bad += !ok;
  }
  return bad;
}

/* One zccl communicator over MPI_COMM_WORLD (MPI is initialised; the id
 * travels by MPI_Bcast, and comes back in *id unless id is NULL); NULL when
 * zccl could not make one, a failed CHECK having said why. */
static inline zcclComm_t ccoll_comm(int rank, int nranks, zcclUniqueId* id) {
  zcclUniqueId mine;
  if (id == NULL) id = &mine;
  if (rank == 0) zcclGetUniqueId(id);
  MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(&comm, nranks, *id, rank), zcclSuccess);
  return comm;
}

#endif /* TEST_CCOLL_UTIL_H_ */
