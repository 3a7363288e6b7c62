/* A rank killed in the middle of a collective: every survivor's call must
 * return zcclRemoteError within ZCCL_TIMEOUT + the size allowance (10 MB/s
 * for the call's largest buffer) + 1 s of the kill, whatever the
 * algorithm, and a later call on the broken communicator must fail at once;
 * then the survivors shrink it without the dead rank (ZCCL_SHRINK_ABORT) and
 * the collective runs again on the communicator they get.
 *
 *   test_kill_coll COLLS NRANKS BYTES [compressed]
 *
 * COLLS is a comma-separated list of allreduce, broadcast, reduce,
 * allgather, reducescatter, alltoall, gather, scatter (or "all"); BYTES the
 * largest buffer of each call. For every collective the test forks NRANKS
 * fresh ranks (no mpirun: it would take the whole job down with the dead
 * rank) that meet through a unique id, run the collective in a loop, and
 * rank 1 dies by SIGKILL 0.3 s into the loop. The kill's time goes through
 * shared memory (CLOCK_MONOTONIC is the same clock in every process). The
 * transport is whatever UCX_TLS says (shared memory by default; tcp). A
 * watchdog kills everything that hangs. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define TIMEOUT_S 2
#define MARGIN_S 1.0
#define VICTIM 1

static const char* colls[] = {"allreduce", "broadcast", "reduce",  "allgather",
                              "reducescatter", "alltoall", "gather", "scatter"};
#define NCOLLS ((int)(sizeof colls / sizeof colls[0]))

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Shared between the ranks: when the victim died. */
static volatile double* killed_at;

static void* killer(void* arg) {
  (void)arg;
  usleep(300000);
  *killed_at = now();
  raise(SIGKILL);
  return NULL;
}

/* One call of collective c; the largest buffer is `bytes`. */
static zcclResult_t run_coll(int c, float* a, float* b, size_t bytes, int n, zcclComm_t comm) {
  size_t big = bytes / sizeof(float), part = big / (size_t)n;
  switch (c) {
    case 0: return zcclAllReduce(a, b, big, zcclFloat32, zcclSum, comm, NULL);
    case 1: return zcclBroadcast(a, b, big, zcclFloat32, 0, comm, NULL);
    case 2: return zcclReduce(a, b, big, zcclFloat32, zcclSum, 0, comm, NULL);
    case 3: return zcclAllGather(a, b, part, zcclFloat32, comm, NULL);
    case 4: return zcclReduceScatter(a, b, part, zcclFloat32, zcclSum, comm, NULL);
    case 5: return zcclAlltoAll(a, b, part, zcclFloat32, comm, NULL);
    case 6: return zcclGather(a, b, part, zcclFloat32, 0, comm, NULL);
    default: return zcclScatter(a, b, part, zcclFloat32, 0, comm, NULL);
  }
}

static int rank_main(int c, int rank, int n, size_t bytes, int compressed, zcclUniqueId id) {
  zcclComm_t comm;
  CHECK_RES(zcclCommInitRank(&comm, n, id, rank), zcclSuccess);
  if (test_failures) return 1;
  if (compressed) {
    zcclCompression_t z = ZCCL_COMPRESSION_INITIALIZER;
    z.codec = zcclCodecHz, z.mode = zcclErrorAbs, z.eb = 1e-3, z.minBytes = 0;
    CHECK_RES(zcclCommSetCompression(comm, &z), zcclSuccess);
  }
  float* a = malloc(bytes);
  float* b = malloc(bytes);
  for (size_t i = 0; i < bytes / sizeof(float); i++) a[i] = (float)((i * 7 + (size_t)rank) % 1000) * 0.01f;
  /* One good call first: the endpoints exist when the failure comes. */
  CHECK_RES(run_coll(c, a, b, bytes, n, comm), zcclSuccess);
  if (rank == VICTIM) {
    pthread_t t;
    pthread_create(&t, NULL, killer, NULL);
  }
  zcclResult_t res = zcclSuccess;
  int calls = 0;
  double end = 0;
  while (res == zcclSuccess && calls < 100000) {
    res = run_coll(c, a, b, bytes, n, comm);
    end = now();
    calls++;
  }
  double bound = TIMEOUT_S + (double)bytes / 1e7 + MARGIN_S, after = end - *killed_at;
  printf("%s%s %d ranks: rank %d's call %d returned %s %.2f s after the kill (bound %.2f): %s\n", colls[c],
         compressed ? " compressed" : "", n, rank, calls, zcclGetErrorString(res), after, bound,
         zcclGetLastError(comm));
  /* For perf/chaos.sh: one line a survivor. */
  printf("PROBE kill %s %s np%d %s rank %d: %s %.3f s bound %.2f\n", colls[c], compressed ? "compressed" : "plain", n,
         getenv("UCX_TLS") && strcmp(getenv("UCX_TLS"), "tcp") == 0 ? "tcp" : "shm", rank,
         res == zcclSuccess ? "silent" : res == zcclRemoteError ? "clean" : "other", after, bound);
  CHECK(res == zcclRemoteError);
  CHECK(*killed_at > 0 && after < bound);
  /* Broken: the next call fails at once. */
  double t0 = now();
  CHECK_RES(run_coll(c, a, b, bytes, n, comm), zcclRemoteError);
  CHECK(now() - t0 < 1.0);
  /* The survivors go on without the dead rank: a communicator of the
   * others (ZCCL_SHRINK_ABORT gives up what the parent still runs first),
   * on which the collective works again; AllReduce's sums are checked. */
  int dead = VICTIM;
  zcclComm_t rest = NULL;
  t0 = now();
  CHECK_RES(zcclCommShrink(comm, &dead, 1, &rest, NULL, ZCCL_SHRINK_ABORT), zcclSuccess);
  if (rest) {
    int rn = 0, rr = -1;
    CHECK_RES(zcclCommCount(rest, &rn), zcclSuccess);
    CHECK_RES(zcclCommUserRank(rest, &rr), zcclSuccess);
    CHECK(rn == n - 1 && rr == (rank < VICTIM ? rank : rank - 1));
    CHECK_RES(run_coll(c, a, b, bytes, n - 1, rest), zcclSuccess);
    size_t bad = 0;
    for (size_t i = 0; c == 0 && i < bytes / sizeof(float); i++) {
      double want = 0;
      for (int r = 0; r < n; r++) want += r == VICTIM ? 0 : (float)((i * 7 + (size_t)r) % 1000) * 0.01f;
      bad += fabs(b[i] - want) > 1e-3;
    }
    CHECK(bad == 0);
    CHECK_RES(zcclCommDestroy(rest), zcclSuccess);
  }
  printf("%s %d ranks: rank %d shrank the communicator to %d ranks and ran the collective in %.2f s\n", colls[c], n,
         rank, n - 1, now() - t0);
  t0 = now();
  CHECK_RES(zcclCommAbort(comm), zcclSuccess);
  CHECK(now() - t0 < TIMEOUT_S + MARGIN_S);
  free(a);
  free(b);
  fflush(stdout); /* the child leaves by _exit */
  return test_failures ? 1 : 0;
}

/* Forks the ranks for collective c; 0 when every survivor passed. */
static int run_case(int c, int n, size_t bytes, int compressed) {
  zcclUniqueId id;
  if (zcclGetUniqueId(&id) != zcclSuccess) return 1;
  *killed_at = 0;
  pid_t* pids = calloc((size_t)n, sizeof *pids);
  int* status = malloc(sizeof(int) * (size_t)n);
  for (int r = 0; r < n; r++) {
    status[r] = -1;
    pids[r] = fork();
    if (pids[r] == 0) _exit(rank_main(c, r, n, bytes, compressed, id));
  }
  double deadline = now() + 4 * (TIMEOUT_S + (double)bytes / 1e7 + MARGIN_S) + 20;
  int left = n, bad = 0;
  while (left > 0 && now() < deadline) {
    for (int r = 0; r < n; r++) {
      int st;
      if (status[r] == -1 && waitpid(pids[r], &st, WNOHANG) == pids[r]) status[r] = st, left--;
    }
    usleep(20000);
  }
  for (int r = 0; r < n; r++) {
    if (status[r] == -1) {
      fprintf(stderr, "%s: rank %d hung: killed by the watchdog\n", colls[c], r);
      printf("PROBE kill %s rank %d: hang\n", colls[c], r);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], NULL, 0);
      bad = 1;
    } else if (r == VICTIM) {
      bad |= !(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL);
    } else if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
      fprintf(stderr, "%s: rank %d failed\n", colls[c], r);
      if (WIFSIGNALED(status[r])) printf("PROBE kill %s rank %d: crash (signal %d)\n", colls[c], r, WTERMSIG(status[r]));
      bad = 1;
    }
  }
  free(pids);
  free(status);
  return bad;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: test_kill_coll COLLS|all NRANKS BYTES [compressed]\n");
    return 2;
  }
  int n = atoi(argv[2]);
  size_t bytes = (size_t)strtoull(argv[3], NULL, 0);
  int compressed = argc > 4 && strcmp(argv[4], "compressed") == 0;
  if (n < 2 || bytes < (size_t)n * sizeof(float)) {
    fprintf(stderr, "need 2 ranks or more and at least a float per rank\n");
    return 2;
  }
  char t[16];
  snprintf(t, sizeof t, "%d", TIMEOUT_S);
  setenv("ZCCL_TIMEOUT", t, 1);
  setenv("ZCCL_BOOTSTRAP", "tcp", 1);
  /* UCX lists each send given up to the dead rank when the worker goes. */
  setenv("UCX_LOG_LEVEL", "error", 0);
  killed_at = mmap(NULL, sizeof *killed_at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (killed_at == MAP_FAILED) return 2;
  for (int c = 0; c < NCOLLS; c++) {
    if (strcmp(argv[1], "all") != 0) {
      char list[256];
      snprintf(list, sizeof list, ",%s,", argv[1]);
      char want[32];
      snprintf(want, sizeof want, ",%s,", colls[c]);
      if (strstr(list, want) == NULL) continue;
    }
    int bad = run_case(c, n, bytes, compressed);
    printf("%s%s: %s\n", colls[c], compressed ? " compressed" : "", bad ? "FAILED" : "ok");
    fflush(stdout);
    CHECK(!bad);
  }
  TEST_DONE();
}
