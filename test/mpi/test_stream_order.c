/* Stream-ordered calls (zccl.h, "Buffers and streams"), on the sim device,
 * whose user streams stand for CUDA streams: every collective and a
 * point-to-point group queued on a stream
 * - returns at once, before the stream's earlier work (a slow writer of the
 *   inputs) has run and before the peers have called;
 * - starts only after that work: it reduces the values the writer wrote;
 * - holds the stream's later work until it ends: a reader queued after it
 *   sees the finished outputs;
 * and a failing stream-ordered call reports through zcclCommGetAsyncError
 * while the stream goes on (no hang).
 * With ZCCL_STREAM_MODE=blocking the same calls keep the same order by
 * waiting instead: each returns after the stream's earlier work and its own
 * end (outputs complete at return), and a failure comes back from the call
 * as well. */
#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "zccl.h"
#include "zd_device.h"

static int rank, nranks;
static int blocking; /* ZCCL_STREAM_MODE=blocking */

enum { N = 4099 }; /* per-rank block; odd so no collective divides it evenly */

typedef struct {
  float *in, *out, *seen; /* seen: what the reader found in out */
  size_t in_n, out_n;
  float base;
  atomic_int wrote, read;
  int sleep_ms;
} job_t;

static void writer(void* arg) { /* slow: the calls must not wait for it */
  job_t* j = arg;
  struct timespec ts = {j->sleep_ms / 1000, (long)(j->sleep_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  for (size_t i = 0; i < j->in_n; i++) j->in[i] = j->base + (float)(i % 97);
  atomic_store(&j->wrote, 1);
}

static void reader(void* arg) {
  job_t* j = arg;
  memcpy(j->seen, j->out, j->out_n * sizeof(float));
  atomic_store(&j->read, 1);
}

static job_t* job_new(size_t in_n, size_t out_n, float base) {
  job_t* j = calloc(1, sizeof *j);
  j->in = calloc(in_n + 1, sizeof(float));
  j->out = calloc(out_n + 1, sizeof(float));
  j->seen = calloc(out_n + 1, sizeof(float));
  j->in_n = in_n, j->out_n = out_n, j->base = base;
  return j;
}

static void job_free(job_t* j) {
  free(j->in), free(j->out), free(j->seen), free(j);
}

/* Every rank's input value at i (as the writer makes it on that rank). */
static float input(int r, size_t i) { return (float)(r * 1000) + (float)(i % 97); }

typedef enum { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER, P2P_RING, NCOLL } coll_t;
static const char* names[] = {"allreduce", "broadcast",     "reduce", "allgather", "reducescatter",
                              "alltoall",  "gather", "scatter", "p2p ring"};

static zcclResult_t issue(zcclComm_t comm, coll_t c, job_t* j, zcclStream_t s) {
  int root = nranks - 1;
  switch (c) {
    case ALLREDUCE: return zcclAllReduce(j->in, j->out, N, zcclFloat32, zcclSum, comm, s);
    case BROADCAST: return zcclBroadcast(j->in, j->out, N, zcclFloat32, root, comm, s);
    case REDUCE: return zcclReduce(j->in, j->out, N, zcclFloat32, zcclSum, root, comm, s);
    case ALLGATHER: return zcclAllGather(j->in, j->out, N, zcclFloat32, comm, s);
    case REDUCESCATTER: return zcclReduceScatter(j->in, j->out, N, zcclFloat32, zcclSum, comm, s);
    case ALLTOALL: return zcclAlltoAll(j->in, j->out, N, zcclFloat32, comm, s);
    case GATHER: return zcclGather(j->in, j->out, N, zcclFloat32, root, comm, s);
    case SCATTER: return zcclScatter(j->in, j->out, N, zcclFloat32, root, comm, s);
    default: {
      zcclResult_t r[4];
      r[0] = zcclGroupStart();
      r[1] = zcclSend(j->in, N, zcclFloat32, (rank + 1) % nranks, comm, s);
      r[2] = zcclRecv(j->out, N, zcclFloat32, (rank + nranks - 1) % nranks, comm, s);
      r[3] = zcclGroupEnd();
      for (int k = 0; k < 4; k++)
        if (r[k] != zcclSuccess) return r[k];
      return zcclSuccess;
    }
  }
}

static size_t in_count(coll_t c) { return c == ALLTOALL || c == REDUCESCATTER || c == SCATTER ? N * nranks : N; }
static size_t out_count(coll_t c) {
  return c == ALLGATHER || c == ALLTOALL || c == GATHER || c == REDUCESCATTER ? N * nranks : N;
}

/* The expected output at i on this rank (NAN: not written / not checked). */
static float expect(coll_t c, size_t i) {
  int root = nranks - 1;
  float sum = 0;
  switch (c) {
    case ALLREDUCE:
      for (int r = 0; r < nranks; r++) sum += input(r, i);
      return sum;
    case REDUCE:
      if (rank != root) return NAN;
      for (int r = 0; r < nranks; r++) sum += input(r, i);
      return sum;
    case BROADCAST: return input(root, i);
    case ALLGATHER: return input((int)(i / N), i % N);
    case REDUCESCATTER:
      if (i >= N) return NAN;
      for (int r = 0; r < nranks; r++) sum += input(r, (size_t)rank * N + i);
      return sum;
    case ALLTOALL: return input((int)(i / N), (size_t)rank * N + i % N);
    case GATHER: return rank == root ? input((int)(i / N), i % N) : NAN;
    case SCATTER: return input(root, (size_t)rank * N + i);
    default: return input((rank + nranks - 1) % nranks, i);
  }
}

static void test_ordered(zcclComm_t comm, zcclStream_t s) {
  job_t* jobs[NCOLL];
  /* The writer of every input goes first on the stream and takes long;
   * rank 0 also calls late, so the others' calls find no peer yet. */
  if (rank == 0) usleep(50000);
  for (int c = 0; c < NCOLL; c++) {
    jobs[c] = job_new(in_count((coll_t)c), out_count((coll_t)c), (float)(rank * 1000));
    jobs[c]->sleep_ms = c == 0 ? 300 : 0;
    CHECK_RES(zd_sim_stream_launch(s, writer, jobs[c]), zcclSuccess);
  }
  for (int c = 0; c < NCOLL; c++) CHECK_RES(issue(comm, (coll_t)c, jobs[c], s), zcclSuccess);
  /* Async: every call returned before the stream reached its inputs'
   * writer. Blocking: after it, with the outputs complete. */
  CHECK(atomic_load(&jobs[0]->wrote) == blocking);
  for (int c = 0; c < NCOLL; c++) {
    if (blocking)
      memcpy(jobs[c]->seen, jobs[c]->out, jobs[c]->out_n * sizeof(float));
    else
      CHECK_RES(zd_sim_stream_launch(s, reader, jobs[c]), zcclSuccess);
  }
  CHECK_RES(zd_sim_stream_sync(s), zcclSuccess);
  for (int c = 0; c < NCOLL; c++) {
    job_t* j = jobs[c];
    CHECK(atomic_load(&j->read) == !blocking);
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < j->out_n; i++) {
      float e = expect((coll_t)c, i);
      if (!isnan(e) && j->seen[i] != e && wrong++ == 0) first = i;
    }
    if (wrong) printf("rank %d %s: %zu wrong, first at %zu: %g, expected %g\n", rank, names[c], wrong, first,
                      (double)j->seen[first], (double)expect((coll_t)c, first));
    CHECK(wrong == 0);
    job_free(j);
  }
  zcclResult_t async;
  CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclSuccess);
  CHECK(async == zcclSuccess);
}

/* A compressed allreduce on the stream: the codec runs on the sim device's
 * queue behind the stream's writer; every element within 4 x eb. */
static void test_ordered_compressed(zcclComm_t comm, zcclStream_t s) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  CHECK_RES(zcclCompressionFromString("codec=hz,mode=abs,eb=1e-2,min_bytes=0", &c), zcclSuccess);
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  job_t* j = job_new(N * 64, N * 64, (float)(rank * 1000));
  j->sleep_ms = 100;
  CHECK_RES(zd_sim_stream_launch(s, writer, j), zcclSuccess);
  CHECK_RES(zcclAllReduce(j->in, j->out, j->in_n, zcclFloat32, zcclSum, comm, s), zcclSuccess);
  CHECK(atomic_load(&j->wrote) == blocking);
  CHECK_RES(zd_sim_stream_launch(s, reader, j), zcclSuccess);
  CHECK_RES(zd_sim_stream_sync(s), zcclSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < j->out_n; i++) {
    double sum = 0;
    for (int r = 0; r < nranks; r++) sum += input(r, i);
    wrong += !(fabs((double)j->seen[i] - sum) <= nranks * 1e-2 * (1 + 1e-6)); /* (a NaN is wrong) */
  }
  CHECK(wrong == 0);
  job_free(j);
  c.codec = zcclCodecNone;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
}

/* A group mixing a stream-ordered call with a blocking one fails whole. */
static void test_mixed_group(zcclComm_t comm, zcclStream_t s) {
  float x[4] = {0}, y[4];
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclAllReduce(x, y, 4, zcclFloat32, zcclSum, comm, s), zcclSuccess);
  CHECK_RES(zcclAllReduce(x, y, 4, zcclFloat32, zcclSum, comm, NULL), zcclInvalidUsage);
  CHECK_RES(zcclGroupEnd(), zcclInvalidUsage);
}

/* Counts that differ across ranks: the stream-ordered call returns success
 * (blocking: the error), the failure reaches the communicator, and the
 * stream's later work runs. */
static void test_async_failure(zcclComm_t comm, zcclStream_t s) {
  job_t* j = job_new(N * 2, N * 2, 0);
  zcclResult_t res = zcclAllReduce(j->in, j->out, rank == 0 ? N : N * 2, zcclFloat32, zcclSum, comm, s);
  CHECK(blocking ? res != zcclSuccess : res == zcclSuccess);
  CHECK_RES(zd_sim_stream_launch(s, reader, j), zcclSuccess);
  CHECK_RES(zd_sim_stream_sync(s), zcclSuccess);
  CHECK(atomic_load(&j->read) == 1);
  zcclResult_t async;
  CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclSuccess);
  CHECK(async != zcclSuccess && async != zcclInProgress);
  printf("rank %d: mismatched counts on a stream: async error %d\n", rank, (int)async);
  job_free(j);
}

int main(int argc, char** argv) {
  setenv("ZCCL_DEVICE", "sim", 1);
  setenv("ZCCL_TIMEOUT", "4", 0); /* the mismatched counts end by it (most of the test's time) */
  const char* mode = getenv("ZCCL_STREAM_MODE");
  blocking = mode && strcmp(mode, "blocking") == 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  zcclUniqueId id;
  if (rank == 0) CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(&comm, nranks, id, rank), zcclSuccess);
  zcclStream_t s = NULL;
  CHECK_RES(zd_sim_stream_create(&s), zcclSuccess);
  test_ordered(comm, s);
  test_ordered_compressed(comm, s);
  test_mixed_group(comm, s);
  MPI_Barrier(MPI_COMM_WORLD);
  test_async_failure(comm, s);
  zd_sim_stream_destroy(s);
  zcclCommAbort(comm);
  MPI_Finalize();
  TEST_DONE();
}
