/* An NCCL program built against NVIDIA's nccl.h and linked to NVIDIA's
 * libnccl.so, run on zccl's libnccl.so.2 (put first on LD_LIBRARY_PATH):
 * the binary is not rebuilt, only the library under it changes. Host
 * buffers, ranks from mpirun, the unique id through MPI. Checked on every
 * element: AllReduce, Reduce and ReduceScatter for every datatype and op;
 * every other collective, Bcast in place and a Send/Recv ring for every
 * datatype; a group of several collectives; split; pre-multiplied sums
 * (every datatype, scalars on the host and read at each call); shrink and
 * revoke; a simulated group; registration; a nonblocking communicator
 * polled through ncclCommGetAsyncError; InitRankScalable; abort; InitAll
 * (two communicators of one process, one thread each); and with
 * ZCCL_COMPRESSION set, a large float AllReduce and a pre-multiplied sum
 * that must go compressed (zcclCommCompressionStats, looked up at run
 * time) and stay within their bound. */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static int rank, nranks;

#define NCHECK(call) CHECK_RES_NCCL((call), ncclSuccess)
#define CHECK_RES_NCCL(call, want)                                                              \
  do {                                                                                          \
    test_checks++;                                                                              \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != (want)) {                                                                         \
      test_failures++;                                                                          \
      fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d: %s\n", __FILE__, __LINE__, #call, \
              (int)r_, ncclGetErrorString(r_), (int)(want), ncclGetLastError(NULL));            \
    }                                                                                           \
  } while (0)

/* ---- element codecs: small integers exactly in every type ---------------- */

static const size_t type_size[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

/* A small non-negative integer (< 2^mbits+1, exact) as a binary float with
 * ebits exponent and mbits mantissa bits. */
static uint32_t mini_float(double v, int ebits, int mbits) {
  if (v == 0) return 0;
  int e = 0;
  double m = frexp(v, &e); /* v = m 2^e, 0.5 <= m < 1 */
  uint32_t bias = (1u << (ebits - 1)) - 1, frac = (uint32_t)((m * 2 - 1) * (double)(1u << mbits));
  return ((uint32_t)(e - 1 + (int)bias) << mbits) | frac;
}

static double mini_value(uint32_t b, int ebits, int mbits) {
  uint32_t bias = (1u << (ebits - 1)) - 1, e = b >> mbits, frac = b & ((1u << mbits) - 1);
  if (e == 0 && frac == 0) return 0;
  return ldexp(1.0 + (double)frac / (double)(1u << mbits), (int)e - (int)bias);
}

static void put(void* p, size_t i, ncclDataType_t t, double v) {
  uint8_t* b = p;
  switch (t) {
    case ncclInt8: ((int8_t*)b)[i] = (int8_t)v; break;
    case ncclUint8: b[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t*)b)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t*)b)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t*)b)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t*)b)[i] = (uint64_t)v; break;
    case ncclFloat16: ((uint16_t*)b)[i] = (uint16_t)mini_float(v, 5, 10); break;
    case ncclFloat32: ((float*)b)[i] = (float)v; break;
    case ncclFloat64: ((double*)b)[i] = v; break;
    case ncclBfloat16: ((uint16_t*)b)[i] = (uint16_t)mini_float(v, 8, 7); break;
    case ncclFloat8e4m3: b[i] = (uint8_t)mini_float(v, 4, 3); break;
    case ncclFloat8e5m2: b[i] = (uint8_t)mini_float(v, 5, 2); break;
    default: break;
  }
}

static double get(const void* p, size_t i, ncclDataType_t t) {
  const uint8_t* b = p;
  switch (t) {
    case ncclInt8: return ((const int8_t*)b)[i];
    case ncclUint8: return b[i];
    case ncclInt32: return ((const int32_t*)b)[i];
    case ncclUint32: return ((const uint32_t*)b)[i];
    case ncclInt64: return (double)((const int64_t*)b)[i];
    case ncclUint64: return (double)((const uint64_t*)b)[i];
    case ncclFloat16: return mini_value(((const uint16_t*)b)[i], 5, 10);
    case ncclFloat32: return ((const float*)b)[i];
    case ncclFloat64: return ((const double*)b)[i];
    case ncclBfloat16: return mini_value(((const uint16_t*)b)[i], 8, 7);
    case ncclFloat8e4m3: return mini_value(b[i], 4, 3);
    case ncclFloat8e5m2: return mini_value(b[i], 5, 2);
    default: return NAN;
  }
}

/* Rank r's element i: 1 or 2 (products stay powers of two, sums small). */
static double val(int r, size_t i) { return (double)(1 + (r + (int)i) % 2); }

static int is_float(ncclDataType_t t) { return t >= ncclFloat16; }

/* ---- collectives ------------------------------------------------------------- */

static double reduce_ref(ncclRedOp_t op, size_t i) {
  double acc = val(0, i);
  for (int r = 1; r < nranks; r++) {
    double v = val(r, i);
    if (op == ncclSum || op == ncclAvg) acc += v;
    if (op == ncclProd) acc *= v;
    if (op == ncclMax) acc = v > acc ? v : acc;
    if (op == ncclMin) acc = v < acc ? v : acc;
  }
  return op == ncclAvg ? acc / nranks : acc;
}

static void test_allreduce_all(ncclComm_t comm) {
  const size_t n = 97;
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (int t = 0; t < ncclNumTypes; t++)
    for (size_t o = 0; o < 5; o++) {
      ncclDataType_t dt = (ncclDataType_t)t;
      if (ops[o] == ncclAvg && !is_float(dt)) continue; /* NCCL's AVG is for floating types */
      uint8_t *x = malloc(n * 8), *y = malloc(n * 8);
      for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
      NCHECK(ncclAllReduce(x, o == 1 ? x : y, n, dt, ops[o], comm, NULL));
      const uint8_t* res = o == 1 ? x : y;
      int bad = 0;
      for (size_t i = 0; i < n; i++) {
        double want = reduce_ref(ops[o], i), got = get(res, i, dt);
        /* AVG: exact up to the type's rounding of sum / nranks */
        double tol = ops[o] == ncclAvg ? (dt == ncclFloat64 ? 1e-12 : dt == ncclFloat32 ? 1e-6 : 0.13) * want : 0;
        if (fabs(got - want) > tol) bad++;
      }
      CHECK(bad == 0);
      if (bad) fprintf(stderr, "allreduce dtype %d op %d: %d elements wrong\n", t, (int)ops[o], bad);
      free(x);
      free(y);
    }
}

/* Reduce and ReduceScatter for every datatype and op, every element. */
static void test_reductions_all(ncclComm_t comm) {
  const size_t n = 61, N = (size_t)nranks;
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  int bad = 0;
  for (int t = 0; t < ncclNumTypes; t++)
    for (size_t o = 0; o < 5; o++) {
      ncclDataType_t dt = (ncclDataType_t)t;
      if (ops[o] == ncclAvg && !is_float(dt)) continue;
      double tol = ops[o] == ncclAvg ? (dt == ncclFloat64 ? 1e-12 : dt == ncclFloat32 ? 1e-6 : 0.13) : 0;
      uint8_t *x = malloc(n * N * 8), *y = malloc(n * N * 8);
      int root = (t + (int)o) % nranks;
      for (size_t k = 0; k < n * N; k++) put(x, k, dt, val(rank, k));
      NCHECK(ncclReduce(x, y, n, dt, ops[o], root, comm, NULL));
      for (size_t i = 0; rank == root && i < n; i++) {
        double want = reduce_ref(ops[o], i);
        bad += fabs(get(y, i, dt) - want) > tol * want;
      }
      NCHECK(ncclReduceScatter(x, y, n, dt, ops[o], comm, NULL));
      for (size_t i = 0; i < n; i++) {
        double want = reduce_ref(ops[o], (size_t)rank * n + i);
        bad += fabs(get(y, i, dt) - want) > tol * want;
      }
      free(x);
      free(y);
    }
  CHECK(bad == 0);
  if (bad) fprintf(stderr, "reduce / reducescatter, every type and op: %d elements wrong\n", bad);
}

/* Every other collective for one type, every element. */
static void test_others(ncclComm_t comm, ncclDataType_t dt) {
  const size_t n = 1000, N = (size_t)nranks, es = type_size[dt];
  uint8_t *x = calloc(n * N, es), *y = calloc(n * N, es);
  int bad = 0;
  /* Broadcast from the last rank, and Bcast in place from rank 0 */
  for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
  NCHECK(ncclBroadcast(x, y, n, dt, nranks - 1, comm, NULL));
  for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != val(nranks - 1, i);
  NCHECK(ncclBcast(x, n, dt, 0, comm, NULL));
  for (size_t i = 0; i < n; i++) bad += get(x, i, dt) != val(0, i);
  /* Reduce (SUM) to rank 1 % N */
  for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
  NCHECK(ncclReduce(x, y, n, dt, ncclSum, 1 % nranks, comm, NULL));
  if (rank == 1 % nranks)
    for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != reduce_ref(ncclSum, i);
  /* AllGather */
  NCHECK(ncclAllGather(x, y, n, dt, comm, NULL));
  for (size_t r = 0; r < N; r++)
    for (size_t i = 0; i < n; i++) bad += get(y, r * n + i, dt) != val((int)r, i);
  /* ReduceScatter (MAX): block r of every rank's input to rank r */
  for (size_t k = 0; k < n * N; k++) put(x, k, dt, val(rank, k));
  NCHECK(ncclReduceScatter(x, y, n, dt, ncclMax, comm, NULL));
  for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != reduce_ref(ncclMax, (size_t)rank * n + i);
  /* AlltoAll: block j of rank r's input to rank j's block r */
  for (size_t k = 0; k < n * N; k++) put(x, k, dt, (double)((rank * 3 + (int)(k / n)) % 7));
  NCHECK(ncclAlltoAll(x, y, n, dt, comm, NULL));
  for (size_t r = 0; r < N; r++)
    for (size_t i = 0; i < n; i++) bad += get(y, r * n + i, dt) != (double)(((int)r * 3 + rank) % 7);
  /* Gather to the last rank, Scatter from rank 0 */
  for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
  NCHECK(ncclGather(x, y, n, dt, nranks - 1, comm, NULL));
  if (rank == nranks - 1)
    for (size_t r = 0; r < N; r++)
      for (size_t i = 0; i < n; i++) bad += get(y, r * n + i, dt) != val((int)r, i);
  for (size_t k = 0; k < n * N; k++) put(x, k, dt, (double)((k / n) % 5));
  NCHECK(ncclScatter(x, y, n, dt, 0, comm, NULL));
  for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != (double)(rank % 5);
  /* A ring of Send/Recv in one group */
  for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
  NCHECK(ncclGroupStart());
  NCHECK(ncclSend(x, n, dt, (rank + 1) % nranks, comm, NULL));
  NCHECK(ncclRecv(y, n, dt, (rank + nranks - 1) % nranks, comm, NULL));
  NCHECK(ncclGroupEnd());
  for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != val((rank + nranks - 1) % nranks, i);
  CHECK(bad == 0);
  if (bad) fprintf(stderr, "collectives on dtype %d: %d elements wrong\n", (int)dt, bad);
  free(x);
  free(y);
}

/* Pre-multiplied sums, every datatype: rank r's scalar is r + 1, so the
 * result is sum_r (r + 1) val(r, i), small integers exact in every type. */
static double premul_ref(size_t i) {
  double acc = 0;
  for (int r = 0; r < nranks; r++) acc += (r + 1) * val(r, i);
  return acc;
}

static void test_premulsum(ncclComm_t comm) {
  const size_t n = 257, N = (size_t)nranks;
  int bad = 0;
  for (int t = 0; t < ncclNumTypes; t++) {
    ncclDataType_t dt = (ncclDataType_t)t;
    uint8_t scalar[8] = {0};
    put(scalar, 0, dt, rank + 1);
    ncclRedOp_t op;
    NCHECK(ncclRedOpCreatePreMulSum(&op, scalar, dt, ncclScalarHostImmediate, comm));
    memset(scalar, 0, sizeof scalar); /* taken at creation: the op keeps r + 1 */
    uint8_t *x = calloc(n * N, 8), *y = calloc(n * N, 8);
    for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
    NCHECK(ncclAllReduce(x, y, n, dt, op, comm, NULL));
    for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != premul_ref(i);
    NCHECK(ncclAllReduce(x, x, n, dt, op, comm, NULL)); /* in place */
    for (size_t i = 0; i < n; i++) bad += get(x, i, dt) != premul_ref(i);
    /* Reduce to the last rank; a non-root's products need room of their own. */
    for (size_t i = 0; i < n; i++) put(x, i, dt, val(rank, i));
    NCHECK(ncclReduce(x, y, n, dt, op, nranks - 1, comm, NULL));
    if (rank == nranks - 1)
      for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != premul_ref(i);
    for (size_t i = 0; i < n; i++) bad += get(x, i, dt) != val(rank, i); /* the input is left alone */
    /* ReduceScatter: block r of the products' sum to rank r */
    for (size_t k = 0; k < n * N; k++) put(x, k, dt, val(rank, k));
    NCHECK(ncclReduceScatter(x, y, n, dt, op, comm, NULL));
    for (size_t i = 0; i < n; i++) bad += get(y, i, dt) != premul_ref((size_t)rank * n + i);
    NCHECK(ncclRedOpDestroy(op, comm));
    CHECK_RES_NCCL(ncclAllReduce(x, y, n, dt, op, comm, NULL), ncclInvalidArgument); /* destroyed */
    free(x);
    free(y);
  }
  CHECK(bad == 0);
  if (bad) fprintf(stderr, "pre-multiplied sums: %d elements wrong\n", bad);
  /* ncclScalarDevice: the scalar is read when each call runs */
  double s = 0, x[64], y[64];
  ncclRedOp_t op;
  NCHECK(ncclRedOpCreatePreMulSum(&op, &s, ncclFloat64, ncclScalarDevice, comm));
  for (int i = 0; i < 64; i++) x[i] = i;
  for (int k = 1; k <= 2; k++) {
    s = 0.5 * k * (rank + 1);
    NCHECK(ncclAllReduce(x, y, 64, ncclFloat64, op, comm, NULL));
    bad = 0;
    for (int i = 0; i < 64; i++) bad += y[i] != 0.5 * k * i * N * (N + 1) / 2;
    CHECK(bad == 0);
  }
  CHECK_RES_NCCL(ncclAllReduce(x, y, 64, ncclFloat32, op, comm, NULL), ncclInvalidArgument); /* not its type */
  NCHECK(ncclRedOpDestroy(op, comm));
  CHECK_RES_NCCL(ncclRedOpDestroy(op, comm), ncclInvalidArgument);
  CHECK_RES_NCCL(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
  CHECK_RES_NCCL(ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat64, ncclScalarDevice, comm), ncclInvalidArgument);
}

/* A group of collectives on one communicator, then on a split one. */
static void test_group_split(ncclComm_t comm) {
  float a[64], b[64], g[64 * 8];
  for (int i = 0; i < 64; i++) a[i] = (float)(rank + i);
  NCHECK(ncclGroupStart());
  NCHECK(ncclAllReduce(a, b, 64, ncclFloat32, ncclMax, comm, NULL));
  NCHECK(ncclAllGather(a, g, 64, ncclFloat32, comm, NULL));
  NCHECK(ncclGroupEnd());
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += b[i] != (float)(nranks - 1 + i);
  for (int r = 0; r < nranks; r++)
    for (int i = 0; i < 64; i++) bad += g[r * 64 + i] != (float)(r + i);
  CHECK(bad == 0);
  ncclComm_t half = NULL;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "half";
  cfg.minCTAs = 4; /* no meaning in zccl: accepted */
  NCHECK(ncclCommSplit(comm, rank % 2, -rank, &half, &cfg));
  int hn = 0, hr = -1;
  NCHECK(ncclCommCount(half, &hn));
  NCHECK(ncclCommUserRank(half, &hr));
  int want_n = (nranks + 1 - rank % 2) / 2;
  CHECK(hn == want_n && hr == want_n - 1 - rank / 2); /* key -rank: reversed */
  int v = rank, s = -1;
  NCHECK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, half, NULL));
  int want = 0;
  for (int r = rank % 2; r < nranks; r += 2) want += r;
  CHECK(s == want);
  NCHECK(ncclCommDestroy(half));
}

/* Shrink and revoke. Default: the last rank is left out and does not call;
 * its own rank in the list is refused. Revoke (on a copy from a split):
 * calls and finalize are refused, the async error reads success, and the
 * revoked communicator still shrinks, without rank 0. */
static void test_shrink_revoke(ncclComm_t comm) {
  ncclComm_t small = NULL;
  int me = rank, n = 0, r = -1;
  CHECK_RES_NCCL(ncclCommShrink(comm, &me, 1, &small, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  if (rank != nranks - 1) {
    int out = nranks - 1;
    NCHECK(ncclCommShrink(comm, &out, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    NCHECK(ncclCommCount(small, &n));
    NCHECK(ncclCommUserRank(small, &r));
    CHECK(n == nranks - 1 && r == rank);
    int v = rank + 1, sum = 0;
    NCHECK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, small, NULL));
    CHECK(sum == (nranks - 1) * nranks / 2);
    NCHECK(ncclCommDestroy(small));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ncclComm_t dup = NULL;
  NCHECK(ncclCommSplit(comm, 0, rank, &dup, NULL));
  NCHECK(ncclCommRevoke(dup, NCCL_REVOKE_DEFAULT));
  CHECK_RES_NCCL(ncclCommRevoke(dup, 7), ncclInvalidArgument);
  float x = 1, y = 0;
  CHECK_RES_NCCL(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, dup, NULL), ncclInvalidUsage);
  ncclResult_t st = ncclInternalError;
  NCHECK(ncclCommGetAsyncError(dup, &st));
  CHECK(st == ncclSuccess);
  CHECK_RES_NCCL(ncclCommFinalize(dup), ncclInvalidUsage);
  if (rank != 0) {
    int out = 0;
    NCHECK(ncclCommShrink(dup, &out, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    double d = rank, m = 0;
    NCHECK(ncclAllReduce(&d, &m, 1, ncclFloat64, ncclMax, small, NULL));
    CHECK(m == nranks - 1);
    NCHECK(ncclCommDestroy(small));
  }
  NCHECK(ncclCommDestroy(dup));
}

/* ncclGroupSimulateEnd: the model's time, more for more data, nothing run
 * (the output untouched, and the next real calls pair up as before). */
static void test_simulate(ncclComm_t comm) {
  const size_t n = (size_t)1 << 20;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = 1, y[i] = -1;
  float t[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    NCHECK(ncclGroupStart());
    NCHECK(ncclAllReduce(x, y, k ? n : n / 16, ncclFloat32, ncclSum, comm, NULL));
    NCHECK(ncclBroadcast(x, y, k ? n : n / 16, ncclFloat32, 0, comm, NULL));
    if (k == 1) {
      ncclSimInfo_t bad = sim;
      bad.magic = 0;
      CHECK_RES_NCCL(ncclGroupSimulateEnd(&bad), ncclInvalidArgument); /* the group stays open */
    }
    NCHECK(ncclGroupSimulateEnd(&sim));
    t[k] = sim.estimatedTime;
  }
  CHECK(t[0] > 0 && t[1] > t[0] && t[1] < 1e7);
  if (rank == 0) printf("ncclGroupSimulateEnd: %.1f us for 4 MiB, %.1f us for 256 KiB\n", t[1], t[0]);
  size_t untouched = 0;
  for (size_t i = 0; i < n; i++) untouched += y[i] == -1;
  CHECK(untouched == n);
  NCHECK(ncclAllReduce(x, y, n, ncclFloat32, ncclSum, comm, NULL));
  CHECK(y[0] == nranks && y[n - 1] == nranks);
  free(x);
  free(y);
}

/* Two communicators of one job in this process, one thread each. */
typedef struct {
  ncclComm_t comm;
  int me;
  double out[100];
  ncclResult_t res;
} init_all_arg_t;

static void* init_all_rank(void* p) {
  init_all_arg_t* a = p;
  double x[100];
  for (int i = 0; i < 100; i++) x[i] = a->me * 1000 + i;
  a->res = ncclAllReduce(x, a->out, 100, ncclFloat64, ncclSum, a->comm, NULL);
  return NULL;
}

static void test_init_all(void) {
  ncclComm_t comms[2] = {NULL, NULL};
  NCHECK(ncclCommInitAll(comms, 2, NULL));
  init_all_arg_t a[2] = {{comms[0], 0, {0}, ncclSuccess}, {comms[1], 1, {0}, ncclSuccess}};
  pthread_t t[2];
  for (int k = 0; k < 2; k++) pthread_create(&t[k], NULL, init_all_rank, &a[k]);
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  int bad = 0;
  for (int k = 0; k < 2; k++) {
    int r = -1;
    NCHECK(ncclCommUserRank(comms[k], &r));
    CHECK(r == k && a[k].res == ncclSuccess);
    for (int i = 0; i < 100; i++) bad += a[k].out[i] != 1000 + 2 * i;
  }
  CHECK(bad == 0);
  for (int k = 0; k < 2; k++) NCHECK(ncclCommDestroy(comms[k]));
  int devs[2] = {0, 0};
  CHECK_RES_NCCL(ncclCommInitAll(comms, 2, devs), ncclInvalidArgument); /* a device twice */
}

static void test_register(ncclComm_t comm) {
  static _Alignas(64) char buf[8192];
  void* h = NULL;
  ncclWindow_t w = NULL;
  NCHECK(ncclCommRegister(comm, buf, sizeof buf, &h));
  CHECK(h != NULL);
  NCHECK(ncclCommWindowRegister(comm, buf, sizeof buf, &w, NCCL_WIN_COLL_SYMMETRIC));
  CHECK(w != NULL);
  for (int i = 0; i < 2048; i++) ((int32_t*)buf)[i] = rank + i;
  NCHECK(ncclAllReduce(buf, buf, 1024, ncclInt32, ncclMax, comm, NULL)); /* registered twice */
  NCHECK(ncclCommWindowDeregister(comm, w));
  NCHECK(ncclAllReduce(buf + 4096, buf + 4096, 1024, ncclInt32, ncclSum, comm, NULL)); /* once, a range inside */
  NCHECK(ncclCommDeregister(comm, h));
  int bad = 0;
  for (int i = 0; i < 1024; i++) bad += ((int32_t*)buf)[i] != nranks - 1 + i;
  for (int i = 1024; i < 2048; i++) bad += ((int32_t*)buf)[i] != nranks * i + nranks * (nranks - 1) / 2;
  CHECK(bad == 0);
  int junk;
  CHECK_RES_NCCL(ncclCommDeregister(comm, &junk), ncclInvalidArgument);
}

/* With ZCCL_COMPRESSION (nothing in the program changes), a large float
 * AllReduce goes compressed: fewer bytes on the wire, every element within
 * nranks x eb of the exact sum. */
static void test_compressed(ncclComm_t comm, double eb) {
  typedef int (*stats_fn)(void*, uint64_t*, uint64_t*);
  stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "zcclCommCompressionStats");
  CHECK(stats != NULL);
  const size_t n = (size_t)1 << 20;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.001 * (double)i + rank);
  uint64_t raw0 = 0, wire0 = 0, raw1 = 0, wire1 = 0;
  if (stats) stats(comm, &raw0, &wire0);
  NCHECK(ncclAllReduce(x, y, n, ncclFloat32, ncclSum, comm, NULL));
  if (stats) stats(comm, &raw1, &wire1);
  CHECK(raw1 > raw0 && wire1 - wire0 < raw1 - raw0);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double want = 0;
    for (int r = 0; r < nranks; r++) want += (float)sin(0.001 * (double)i + r);
    if (fabs(y[i] - want) > nranks * eb * 1.0001 + 1e-6) bad++;
  }
  CHECK(bad == 0);
  /* A pre-multiplied sum goes compressed too: the products are what is
   * compressed, each within eb, so the weighted sum is within nranks x eb. */
  float w = 0.25f * (float)(rank + 1);
  ncclRedOp_t op;
  NCHECK(ncclRedOpCreatePreMulSum(&op, &w, ncclFloat32, ncclScalarHostImmediate, comm));
  if (stats) stats(comm, &raw0, &wire0);
  NCHECK(ncclAllReduce(x, y, n, ncclFloat32, op, comm, NULL));
  if (stats) stats(comm, &raw1, &wire1);
  CHECK(raw1 > raw0 && wire1 - wire0 < raw1 - raw0);
  size_t badw = 0;
  for (size_t i = 0; i < n; i++) {
    double want = 0;
    for (int r = 0; r < nranks; r++) want += (double)(0.25f * (float)(r + 1) * (float)sin(0.001 * (double)i + r));
    if (fabs(y[i] - want) > nranks * eb * 1.0001 + 1e-6) badw++;
  }
  CHECK(badw == 0);
  NCHECK(ncclRedOpDestroy(op, comm));
  if (rank == 0)
    printf("compressed AllReduce of %zu floats: %llu raw bytes, %llu on the wire, %zu out of bound\n", n,
           (unsigned long long)(raw1 - raw0), (unsigned long long)(wire1 - wire0), bad);
  free(x);
  free(y);
}

/* Wait for a nonblocking communicator's last call, as NCCL programs do:
 * poll ncclCommGetAsyncError while it says ncclInProgress. */
static ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t st = ncclInProgress;
  for (int k = 0; k < 200000 && st == ncclInProgress; k++) {
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) return ncclInternalError;
    if (st == ncclInProgress) usleep(50);
  }
  return st;
}

/* A nonblocking communicator (config.blocking = 0): init and a collective
 * may return ncclInProgress; polling ends in ncclSuccess, results right. */
static void test_nonblocking(void) {
  ncclUniqueId id;
  if (rank == 0) NCHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t c = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&c, nranks, id, rank, &cfg);
  CHECK(r == ncclSuccess || r == ncclInProgress);
  CHECK(c != NULL && settle(c) == ncclSuccess);
  double x[300], y[300];
  for (int i = 0; i < 300; i++) x[i] = rank + i;
  r = ncclAllReduce(x, y, 300, ncclFloat64, ncclMin, c, NULL);
  CHECK(r == ncclSuccess || r == ncclInProgress);
  CHECK(settle(c) == ncclSuccess);
  int bad = 0;
  for (int i = 0; i < 300; i++) bad += y[i] != i;
  CHECK(bad == 0);
  NCHECK(ncclCommFinalize(c));
  CHECK(settle(c) == ncclSuccess);
  NCHECK(ncclCommDestroy(c));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* The library under the binary is zccl's: its libnccl.so.2 brought
   * libzccl along. */
  int v = 0;
  NCHECK(ncclGetVersion(&v));
  CHECK(dlsym(RTLD_DEFAULT, "zcclAllReduce") != NULL);
  CHECK(v >= 22800 && v < 22900);
  if (dlsym(RTLD_DEFAULT, "zcclAllReduce") == NULL) {
    fprintf(stderr, "libnccl.so.2 here is not zccl's: set LD_LIBRARY_PATH to zccl's build/nccl\n");
    MPI_Finalize();
    return 1;
  }
  ncclUniqueId id;
  if (rank == 0) NCHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = NULL;
  NCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  const char* zc = getenv("ZCCL_COMPRESSION");
  if (zc && *zc) {
    const char* e = strstr(zc, "eb=");
    test_compressed(comm, e ? atof(e + 3) : 1e-3);
  } else {
    test_allreduce_all(comm);
    test_reductions_all(comm);
    for (int t = 0; t < ncclNumTypes; t++) test_others(comm, (ncclDataType_t)t);
    test_premulsum(comm);
    test_group_split(comm);
    test_register(comm);
    test_shrink_revoke(comm);
    test_simulate(comm);
    test_nonblocking();
  }
  NCHECK(ncclCommFinalize(comm));
  NCHECK(ncclCommDestroy(comm));

  /* Several roots' ids: every rank has them all. */
  ncclUniqueId ids[2];
  if (rank == 0) NCHECK(ncclGetUniqueId(&ids[0]));
  if (rank == nranks - 1) NCHECK(ncclGetUniqueId(&ids[1]));
  MPI_Bcast(&ids[0], sizeof ids[0], MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&ids[1], sizeof ids[1], MPI_BYTE, nranks - 1, MPI_COMM_WORLD);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  NCHECK(ncclCommInitRankScalable(&comm, nranks, rank, 2, ids, &cfg));
  int n = 0;
  NCHECK(ncclCommCount(comm, &n));
  CHECK(n == nranks);
  NCHECK(ncclCommAbort(comm)); /* abort, not destroy: must return */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  CHECK_RES_NCCL(ncclCommInitRankConfig(&comm, nranks, id, rank, &bad), ncclInvalidArgument);

  if (rank == 0 && !(zc && *zc)) test_init_all();
  MPI_Finalize();
  TEST_DONE();
}
