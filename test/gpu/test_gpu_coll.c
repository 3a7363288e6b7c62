/* Every collective on CUDA device buffers, stream-ordered, across ranks
 * that are processes of this program sharing one GPU (forked before any
 * CUDA call, met through the unique-id bootstrap; bytes go through UCX
 * directly or through pinned staging, whichever the build has):
 *   - uncompressed: AllReduce (SUM, MAX, AVG; out of place and in place),
 *     Reduce, Broadcast, AllGather, ReduceScatter, AlltoAll, Gather,
 *     Scatter and a Send/Recv ring, float32 and int32, exact;
 *   - compressed (hz): the same collectives on float32 and float64 fields,
 *     every element within the documented bound (SUM within nranks x eb,
 *     NaN, +-Inf and the fill value exact), AllReduce identical on every
 *     rank, the communicator's statistics showing compressed bytes;
 *   - stream order: a call returns before earlier work on its stream (a
 *     host function that sleeps, then writes the input) has run, reduces
 *     what that work wrote, and later work on the stream sees the result;
 *     with ZCCL_STREAM_MODE=blocking (cuda's default for now) it returns
 *     after that work instead, with the result complete;
 *   - one host and one device buffer in a call is zcclInvalidArgument.
 *   test_gpu_coll [nranks=2]
 * Results come back with a pageable cudaMemcpyAsync, as most programs do;
 * ZCCL_TEST_PINNED_COPY=1 bounces them through pinned memory instead. A
 * rank prints a line per case passed, so a stuck one shows where it
 * stopped. Without a usable GPU (or a CUDA build) every rank exits 77:
 * skipped. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "zccl.h"
#include "zccl_fork.h"
#include "zd_device.h"

#ifdef ZCCL_TEST_CUDA
#include <cuda_runtime_api.h>

#define CU(call)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

static int rank, nranks;
static zcclComm_t comm;
static cudaStream_t st;

enum { N = (1 << 18) + 5 }; /* elements per rank block: odd, so no algorithm divides it evenly */

/* Smooth, different on every rank, mixed signs (as the MPI tests' field). */
static double field(int r, size_t i) {
  return 20.0 * sin((double)i * 0.001 + r) + 3.0 * cos((double)i * 0.037) + 0.25 * r - 5.0 +
         1e-3 * (double)((i * 2654435761u) % 97);
}
/* Integer-valued, so float32 sums over a few ranks are exact. */
static double exact(int r, size_t i) { return (double)((i * 7 + 13 * (size_t)r) % 1024) - 300.0; }

static double get(const void* b, size_t i, int f64) { return f64 ? ((const double*)b)[i] : ((const float*)b)[i]; }
static void set(void* b, size_t i, int f64, double v) {
  if (f64) ((double*)b)[i] = v;
  else ((float*)b)[i] = (float)v;
}

/* Device copies of host bytes, queued on the stream (pinned host memory, so
 * the copy is truly asynchronous and the call after it is what orders). */
static void* dev_from(const void* h, size_t bytes) {
  void *d, *pin;
  CU(cudaMalloc(&d, bytes ? bytes : 1));
  CU(cudaMallocHost(&pin, bytes ? bytes : 1));
  memcpy(pin, h, bytes);
  CU(cudaMemcpyAsync(d, pin, bytes, cudaMemcpyHostToDevice, st));
  CU(cudaStreamSynchronize(st)); /* pin is freed next */
  CU(cudaFreeHost(pin));
  return d;
}
static void* dev_zero(size_t bytes) {
  void* d;
  CU(cudaMalloc(&d, bytes ? bytes : 1));
  CU(cudaMemsetAsync(d, 0, bytes, st));
  return d;
}
/* The device bytes back to the host after everything queued on the stream
 * (through pinned memory with ZCCL_TEST_PINNED_COPY=1). */
static void* bounce;
static void* host_from(const void* d, size_t bytes) {
  void* h = malloc(bytes ? bytes : 1);
  CU(cudaMemcpyAsync(bounce ? bounce : h, d, bytes, cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  if (bounce) memcpy(h, bounce, bytes);
  return h;
}

/* One line per case on stdout, flushed: where a stuck rank stopped. */
static void passed(const char* what) {
  printf("rank %d: %s done\n", rank, what);
  fflush(stdout);
}

static uint64_t fnv(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t*)p)[i]) * 1099511628211ull;
  return h;
}
/* 1 when buf's bytes hash the same on every rank (host buffers, exact). */
static int same_everywhere(const void* buf, size_t bytes) {
  uint64_t h = fnv(buf, bytes), *all = calloc((size_t)nranks, sizeof *all);
  CHECK_RES(zcclAllGather(&h, all, 1, zcclUint64, comm, NULL), zcclSuccess);
  int same = 1;
  for (int r = 0; r < nranks; r++) same &= all[r] == h;
  free(all);
  return same;
}

static void set_codec(int codec, int mode, double eb) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = codec, c.mode = mode, c.eb = eb, c.minBytes = 0, c.hasFill = 1, c.fillValue = -1e34;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
}

/* Absolute bound of REL eb over the valid values of every rank's block of
 * f (rank range [r0, r1)). */
static double rel_bound(double eb, double (*f)(int, size_t), int r0, int r1, size_t n, int f64) {
  double lo = INFINITY, hi = -INFINITY;
  for (int r = r0; r < r1; r++)
    for (size_t i = 0; i < n; i++) {
      double v = f64 ? f(r, i) : (double)(float)f(r, i);
      lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
  return eb * (hi - lo);
}

/* got within e of want (special values exact); the count of those that are not. */
static long wrong(const void* got, const void* want, size_t n, int f64, double e, const char* what) {
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double w = get(want, i, f64), g = get(got, i, f64);
    int ok = isnan(w) ? isnan(g) : (!isfinite(w) || w == -1e34 || (!f64 && w == (double)(float)-1e34)) ? g == w
                                                                                                          : fabs(g - w) <= e;
    if (!ok && bad++ < 3)
      fprintf(stderr, "rank %d: %s: [%zu] got %.9g, want %.9g (bound %g)\n", rank, what, i, g, w, e);
  }
  return bad;
}

/* The reduction (SUM, MAX, AVG) over ranks of f at block element i. */
static double reduce_ref(double (*f)(int, size_t), int f64, zcclRedOp_t op, size_t i) {
  double acc = op == zcclMax ? -INFINITY : 0;
  for (int r = 0; r < nranks; r++) {
    double v = f64 ? f(r, i) : (double)(float)f(r, i);
    acc = op == zcclMax ? (v > acc ? v : acc) : acc + v;
  }
  return op == zcclAvg ? acc / nranks : acc;
}

/* AllReduce (kind 0, in place when inplace), ReduceScatter (1), Reduce to
 * the last rank (2) of f; e: the compressed bound of one value, 0 when
 * exact. */
static void check_reduction(int kind, int f64, zcclRedOp_t op, double (*f)(int, size_t), double e, int inplace) {
  size_t es = f64 ? 8 : 4, nin = kind == 1 ? N * (size_t)nranks : N;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  int root = nranks - 1;
  void* x = malloc(nin * es);
  for (size_t i = 0; i < nin; i++) set(x, i, f64, f(rank, i % N) + (double)(i / N)); /* block j shifted by j */
  void* dx = dev_from(x, nin * es);
  void* dy = inplace ? dx : dev_zero(N * es);
  uint64_t raw0, wire0, raw1, wire1;
  CHECK_RES(zcclCommCompressionStats(comm, &raw0, &wire0), zcclSuccess);
  if (kind == 0) CHECK_RES(zcclAllReduce(dx, dy, N, t, op, comm, st), zcclSuccess);
  if (kind == 1) CHECK_RES(zcclReduceScatter(dx, dy, N, t, op, comm, st), zcclSuccess);
  if (kind == 2) CHECK_RES(zcclReduce(dx, dy, N, t, op, root, comm, st), zcclSuccess);
  void* y = host_from(dy, N * es);
  CHECK_RES(zcclCommCompressionStats(comm, &raw1, &wire1), zcclSuccess);
  void* want = malloc(N * es);
  for (size_t i = 0; i < N; i++) {
    double w = reduce_ref(f, f64, op, i);
    if (kind == 1) w += op == zcclSum ? (double)rank * nranks : (double)rank;
    set(want, i, f64, w);
  }
  /* SUM adds nranks values of error e; AVG divides that sum; one rounding of the output each. */
  double bound = op == zcclSum ? nranks * e : e;
  char what[96];
  snprintf(what, sizeof what, "%s f%d op %d%s%s", kind == 0 ? "allreduce" : kind == 1 ? "reducescatter" : "reduce",
           f64 ? 64 : 32, (int)op, inplace ? " in place" : "", e > 0 ? " compressed" : "");
  if (kind != 2 || rank == root) {
    long bad = 0;
    for (size_t i = 0; i < N; i++) {
      double w = get(want, i, f64), g = get(y, i, f64);
      double slack = e > 0 ? 3 * fabs(w) * (f64 ? DBL_EPSILON : FLT_EPSILON) : 0;
      if (op == zcclAvg && e == 0) slack = fabs(w) * (f64 ? DBL_EPSILON : FLT_EPSILON);
      if (!(fabs(g - w) <= bound + slack) && bad++ < 3)
        fprintf(stderr, "rank %d: %s: [%zu] got %.9g, want %.9g\n", rank, what, i, g, w);
    }
    if (bad) fprintf(stderr, "rank %d: %s: %ld elements wrong\n", rank, what, bad);
    CHECK(bad == 0);
  }
  /* It was compressed: this rank sent streams (a reduce's root may send nothing). */
  if (e > 0 && (kind != 2 || rank != root)) CHECK(wire1 > wire0 && raw1 - raw0 > 2 * (wire1 - wire0));
  if (kind == 0) CHECK(same_everywhere(y, N * es));
  passed(what);
  CU(cudaFree(dx));
  if (!inplace) CU(cudaFree(dy));
  free(x), free(y), free(want);
}

/* The data-movement collectives of rank blocks of g (special values
 * included), each element within e (0: exact). */
static double moved(int r, size_t i) {
  if (i % 101 == 7) return -1e34; /* fill (land) */
  if (i % 997 == 3) return NAN;
  if (i % 1499 == 5) return (i & 1) ? INFINITY : -INFINITY;
  return field(r, i);
}
/* The n values at d, once the stream has run, against want (within e,
 * special values exact; with same, also identical on every rank). */
static void check_out(const void* d, const void* want, size_t n, int f64, double e, const char* coll, int same) {
  char what[64];
  snprintf(what, sizeof what, "%s f%d %s", coll, f64 ? 64 : 32, e > 0 ? "compressed" : "exact");
  void* y = host_from(d, n * (f64 ? 8 : 4));
  CHECK(wrong(y, want, n, f64, e, what) == 0);
  if (same) CHECK(same_everywhere(y, n * (f64 ? 8 : 4)));
  passed(what);
  free(y);
}

static void check_moves(int f64, double e) {
  size_t es = f64 ? 8 : 4, NN = N * (size_t)nranks;
  zcclDataType_t t = f64 ? zcclFloat64 : zcclFloat32;
  void *x = malloc(NN * es), *want = malloc(NN * es);
  /* x: this rank's blocks, block j for rank j where a collective sends per rank. */
  for (size_t i = 0; i < NN; i++) set(x, i, f64, moved(rank, i % N) + (double)(i / N));
  void* dx = dev_from(x, NN * es);
  void* dy = dev_zero(NN * es);

  /* AllGather: block r is rank r's first block. */
  CHECK_RES(zcclAllGather(dx, dy, N, t, comm, st), zcclSuccess);
  for (size_t i = 0; i < NN; i++) set(want, i, f64, moved((int)(i / N), i % N));
  check_out(dy, want, NN, f64, e, "allgather", 1);

  /* Broadcast from rank 1 % nranks: its first block. */
  int root = 1 % nranks;
  CU(cudaMemsetAsync(dy, 0, NN * es, st));
  CHECK_RES(zcclBroadcast(dx, dy, N, t, root, comm, st), zcclSuccess);
  for (size_t i = 0; i < N; i++) set(want, i, f64, moved(root, i));
  check_out(dy, want, N, f64, e, "broadcast", 0);

  /* AlltoAll: block j of rank r goes to rank j's block r. */
  CU(cudaMemsetAsync(dy, 0, NN * es, st));
  CHECK_RES(zcclAlltoAll(dx, dy, N, t, comm, st), zcclSuccess);
  for (size_t i = 0; i < NN; i++) set(want, i, f64, moved((int)(i / N), i % N) + (double)rank);
  check_out(dy, want, NN, f64, e, "alltoall", 0);

  /* Gather to rank 0 (the others' output is not written), then Scatter
   * from rank 0: rank r gets its block r. */
  CU(cudaMemsetAsync(dy, 0, NN * es, st));
  CHECK_RES(zcclGather(dx, dy, N, t, 0, comm, st), zcclSuccess);
  for (size_t i = 0; i < NN; i++) set(want, i, f64, rank == 0 ? moved((int)(i / N), i % N) : 0.0);
  check_out(dy, want, NN, f64, e, "gather", 0);
  CU(cudaMemsetAsync(dy, 0, NN * es, st));
  CHECK_RES(zcclScatter(dx, dy, N, t, 0, comm, st), zcclSuccess);
  for (size_t i = 0; i < N; i++) set(want, i, f64, moved(0, i) + (double)rank);
  check_out(dy, want, N, f64, e, "scatter", 0);

  /* A ring of Send/Recv in one group: from rank-1, to rank+1. */
  int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
  CU(cudaMemsetAsync(dy, 0, NN * es, st));
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(dx, N, t, to, comm, st), zcclSuccess);
  CHECK_RES(zcclRecv(dy, N, t, from, comm, st), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  for (size_t i = 0; i < N; i++) set(want, i, f64, moved(from, i));
  check_out(dy, want, N, f64, e, "send/recv", 0);

  CU(cudaFree(dx));
  CU(cudaFree(dy));
  free(x), free(want);
}

/* int32 AllReduce MAX and SUM: never compressed, exact. */
static void check_int(void) {
  int32_t* x = malloc(N * sizeof *x);
  for (size_t i = 0; i < N; i++) x[i] = (int32_t)((i * 2654435761u) % 100003) - 50000 + rank * 7;
  int32_t* dx = dev_from(x, N * sizeof *x);
  int32_t* dy = dev_zero(N * sizeof *x);
  for (int k = 0; k < 2; k++) {
    zcclRedOp_t op = k ? zcclMax : zcclSum;
    CHECK_RES(zcclAllReduce(dx, dy, N, zcclInt32, op, comm, st), zcclSuccess);
    int32_t* y = host_from(dy, N * sizeof *x);
    long bad = 0;
    for (size_t i = 0; i < N; i++) {
      int64_t base = (int64_t)((i * 2654435761u) % 100003) - 50000, w = 0;
      for (int r = 0; r < nranks; r++) w = op == zcclMax ? base + r * 7 : w + base + r * 7;
      bad += y[i] != (int32_t)w;
    }
    if (bad) fprintf(stderr, "rank %d: int32 allreduce op %d: %ld wrong\n", rank, (int)op, bad);
    CHECK(bad == 0);
    passed(op == zcclMax ? "allreduce int32 max" : "allreduce int32 sum");
    free(y);
  }
  CU(cudaFree(dx));
  CU(cudaFree(dy));
  free(x);
}

/* Pre-multiplied sums on device buffers: rank r's scalar r + 1 in device
 * memory (ncclScalarDevice), written on the stream before each call, which
 * must read it then; AllReduce, Reduce to rank 1 (the other ranks' products
 * in pool pieces) and ReduceScatter. Integer values: float32 sums exact. */
static void check_premul(void) {
  float* x = malloc((size_t)N * nranks * sizeof *x);
  for (size_t k = 0; k < (size_t)N * nranks; k++) x[k] = (float)exact(rank, k);
  float* dx = dev_from(x, (size_t)N * nranks * sizeof *x);
  float* dy = dev_zero((size_t)N * sizeof *x);
  float* ds = dev_zero(sizeof(float));
  zcclRedOp_t op;
  CHECK_RES(zcclRedOpCreatePreMulSum(&op, ds, zcclFloat32, zcclScalarDevice, comm), zcclSuccess);
  static float scale; /* the host side of the scalar's copy: static, the copy is asynchronous */
  for (int coll = 0; coll < 3; coll++) {
    scale = (float)(rank + 1 + coll);
    CU(cudaMemcpyAsync(ds, &scale, sizeof scale, cudaMemcpyHostToDevice, st));
    if (coll == 0) CHECK_RES(zcclAllReduce(dx, dy, N, zcclFloat32, op, comm, st), zcclSuccess);
    if (coll == 1) CHECK_RES(zcclReduce(dx, dy, N, zcclFloat32, op, 1 % nranks, comm, st), zcclSuccess);
    if (coll == 2) CHECK_RES(zcclReduceScatter(dx, dy, N, zcclFloat32, op, comm, st), zcclSuccess);
    float* y = host_from(dy, (size_t)N * sizeof *x);
    long bad = 0;
    size_t off = coll == 2 ? (size_t)rank * N : 0;
    for (size_t i = 0; coll != 1 || rank == 1 % nranks ? i < N : 0; i++) {
      double w = 0;
      for (int r = 0; r < nranks; r++) w += (r + 1 + coll) * exact(r, off + i);
      bad += y[i] != (float)w;
    }
    if (bad) fprintf(stderr, "rank %d: pre-multiplied sum, collective %d: %ld wrong\n", rank, coll, bad);
    CHECK(bad == 0);
    free(y);
  }
  CHECK_RES(zcclRedOpDestroy(op, comm), zcclSuccess);
  passed("pre-multiplied sums");
  CU(cudaFree(dx));
  CU(cudaFree(dy));
  CU(cudaFree(ds));
  free(x);
}

/* Stream order: the input is written by a host function that sleeps first
 * and a copy queued after it; the call must return while that function has
 * not run, and the result read after it must be that input's sum. */
typedef struct {
  float* pin;
  volatile int wrote;
} writer_t;
static void CUDART_CB slow_writer(void* arg) {
  writer_t* w = arg;
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  for (size_t i = 0; i < N; i++) w->pin[i] = (float)exact(rank, i);
  __atomic_store_n(&w->wrote, 1, __ATOMIC_RELEASE);
}
static void check_stream_order(void) {
  writer_t w = {0};
  CU(cudaMallocHost((void**)&w.pin, N * sizeof(float)));
  memset(w.pin, 0, N * sizeof(float));
  float* dx = dev_zero(N * sizeof(float));
  float* dy = dev_zero(N * sizeof(float));
  CU(cudaStreamSynchronize(st));
  CU(cudaLaunchHostFunc(st, slow_writer, &w));
  CU(cudaMemcpyAsync(dx, w.pin, N * sizeof(float), cudaMemcpyHostToDevice, st));
  CHECK_RES(zcclAllReduce(dx, dy, N, zcclFloat32, zcclSum, comm, st), zcclSuccess);
  /* async: returned before the stream got there; blocking: after */
  const char* mode = getenv("ZCCL_STREAM_MODE");
  int blocking = !(mode && strcmp(mode, "async") == 0);
  CHECK(__atomic_load_n(&w.wrote, __ATOMIC_ACQUIRE) == blocking);
  float* y = host_from(dy, N * sizeof(float));
  CHECK(w.wrote == 1);
  long bad = 0;
  for (size_t i = 0; i < N; i++) bad += y[i] != (float)reduce_ref(exact, 0, zcclSum, i);
  if (bad) fprintf(stderr, "rank %d: stream-ordered allreduce: %ld wrong\n", rank, bad);
  CHECK(bad == 0);
  passed("stream-ordered allreduce");
  free(y);
  CU(cudaFree(dx));
  CU(cudaFree(dy));
  CU(cudaFreeHost(w.pin));
}

static int run_rank(int r, const zcclUniqueId* id, void* arg) {
  (void)arg;
  rank = r;
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  if (info.ndevices < 1) {
    printf("SKIP: %s\n", info.status);
    return TEST_SKIP_CODE;
  }
  CU(cudaSetDevice(0));
  CHECK_RES(zcclCommInitRank(&comm, nranks, *id, rank), zcclSuccess);
  if (comm == NULL) return 1;
  int dev = -1;
  CHECK_RES(zcclCommCuDevice(comm, &dev), zcclSuccess);
  CHECK(dev == 0);
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (getenv("ZCCL_TEST_PINNED_COPY")) CU(cudaMallocHost(&bounce, (size_t)N * 8 * (size_t)nranks));

  /* One host and one device buffer: refused, nothing queued. */
  float h[4] = {0};
  void* d;
  CHECK_RES(zcclMemAlloc(&d, 4 * sizeof(float)), zcclSuccess);
  CHECK_RES(zcclAllReduce(h, d, 4, zcclFloat32, zcclSum, comm, st), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("device memory");
  CHECK_RES(zcclMemFree(d), zcclSuccess);

  set_codec(zcclCodecNone, zcclErrorRel, 1e-3);
  check_reduction(0, 0, zcclSum, exact, 0, 0);
  check_reduction(0, 0, zcclSum, exact, 0, 1);
  check_reduction(0, 0, zcclMax, exact, 0, 0);
  check_reduction(0, 1, zcclAvg, exact, 0, 0);
  check_reduction(1, 0, zcclSum, exact, 0, 0);
  check_reduction(2, 1, zcclSum, exact, 0, 0);
  check_int();
  check_premul();
  check_moves(0, 0);
  check_stream_order();

  for (int f64 = 0; f64 < 2; f64++) {
    double eb = 1e-3;
    set_codec(zcclCodecHz, zcclErrorRel, eb);
    double e = rel_bound(eb, field, 0, nranks, N, f64);
    check_reduction(0, f64, zcclSum, field, e, 0);
    check_reduction(0, f64, zcclSum, field, e, 1);
    check_reduction(0, f64, zcclMax, field, e, 0);
    check_reduction(2, f64, zcclSum, field, e, 0);
    /* ReduceScatter's blocks are shifted by their index (see check_reduction). */
    check_reduction(1, f64, zcclSum, field, eb * (rel_bound(1.0, field, 0, nranks, N, f64) + nranks - 1), 0);
    /* Moved data in ABS mode: every path's bound is eb itself. */
    set_codec(zcclCodecHz, zcclErrorAbs, 1e-2);
    check_moves(f64, 1e-2);
  }
  CU(cudaStreamDestroy(st));
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  printf("rank %d: ", rank);
  TEST_DONE();
}
#endif /* ZCCL_TEST_CUDA */

int main(int argc, char** argv) {
#ifndef ZCCL_TEST_CUDA
  (void)argc, (void)argv;
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  printf("SKIP: zccl was built without CUDA (%s)\n", info.status);
  return test_failures ? 1 : TEST_SKIP_CODE;
#else
  nranks = argc > 1 ? atoi(argv[1]) : 2;
  if (nranks < 1 || nranks > 8) return fprintf(stderr, "usage: test_gpu_coll [nranks 1..8]\n"), 2;
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "60", 1);
  /* Every rank's status, within 120 s (then the rest are killed: a hang fails). */
  return zccl_fork_ranks(nranks, run_rank, NULL, 120);
#endif
}
