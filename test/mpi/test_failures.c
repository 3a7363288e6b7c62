/* Failures: the test forks its own ranks (no mpirun, which would kill the
 * whole job when one rank dies) that meet through a unique id, then:
 *
 *   kill-recv   rank 1 dies by SIGKILL while rank 0 waits in a receive
 *   kill-send   rank 1 dies while rank 0 sends it 16 MiB (rendezvous)
 *   no-show     rank 1 lives but never posts the receive
 *   kill-hz     rank 1 dies while rank 0 is in a compressed (homomorphic
 *               ring) allreduce of 64 MiB: chunks in flight both ways
 *   range-fail  both live on the sim device; rank 1's value range fails
 *               (ZCCL_SIM_FAIL_RANGE=1) as a REL error bound is worked out:
 *               rank 1's call returns that error and rank 0's fails at once
 *               with zcclRemoteError naming rank 1 (homomorphic allreduce,
 *               a ZFP allgather, then broadcast and scatter from rank 1,
 *               whose bound is its own, and the broadcast again on the
 *               compressed chain; then, with ZCCL_SIM_FAIL_ENCODE=1, rank 1's
 *               compression fails in the pipelined allgather; each on a
 *               fresh communicator)
 *
 * Rank 0's call must fail with zcclRemoteError within ZCCL_TIMEOUT (plus
 * its slow-link allowance for the message, and a margin), zcclCommGetAsyncError must report it, later calls must fail at
 * once, and zcclCommAbort (or Destroy, for no-show) must return promptly.
 * A watchdog kills everything if any of that hangs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define TIMEOUT_S 4
#define MARGIN_S 4.0

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* no-show: the parent tells rank 1 (SIGUSR1) that rank 0 is done with it. */
static volatile sig_atomic_t rank0_done;
static void on_rank0_done(int sig) {
  (void)sig;
  rank0_done = 1;
}

static int rank1(const char* mode, zcclUniqueId id) {
  zcclComm_t comm;
  if (zcclCommInitRank(&comm, 2, id, 1) != zcclSuccess) return 2;
  int v = 1, w = 0;
  /* One good exchange first: the endpoints exist when the failure comes. */
  zcclGroupStart();
  zcclSend(&v, 1, zcclInt32, 0, comm, NULL);
  zcclRecv(&w, 1, zcclInt32, 0, comm, NULL);
  if (zcclGroupEnd() != zcclSuccess) return 3;
  if (strcmp(mode, "no-show") == 0) {
    /* alive, silent, until rank 0 has failed and destroyed its end (at most
     * TIMEOUT_S + 6 s) */
    for (int k = 0; k < 100 * (TIMEOUT_S + 6) && !rank0_done; k++) usleep(10000);
    zcclCommAbort(comm);
    return 0;
  }
  usleep(300000); /* rank 0 is inside its call by now */
  raise(SIGKILL);
  return 4;
}

static int rank0(const char* mode, zcclUniqueId id) {
  zcclComm_t comm;
  /* kill-hz's allreduce runs the homomorphic ring (ZCCL_ALGO is read when
   * the communicator is created). */
  if (strcmp(mode, "kill-hz") == 0) setenv("ZCCL_ALGO", "ring", 1);
  CHECK_RES(zcclCommInitRank(&comm, 2, id, 0), zcclSuccess);
  if (test_failures) return 1;
  int v = 0, w = -1;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(&v, 1, zcclInt32, 1, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(&w, 1, zcclInt32, 1, comm, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK(w == 1);

  /* 16 MiB for a point-to-point message (rendezvous, the allowance adds
   * 1.7 s to the wait), 64 MiB for the ring's chunks in flight */
  size_t bytes = (size_t)(strcmp(mode, "kill-hz") == 0 ? 64 : 16) << 20;
  char* buf = calloc(1, bytes);
  double t0 = now();
  zcclResult_t res;
  if (strcmp(mode, "kill-recv") == 0) {
    res = zcclRecv(buf, bytes, zcclInt8, 1, comm, NULL);
  } else if (strcmp(mode, "kill-hz") == 0) {
    zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
    c.codec = zcclCodecHz, c.mode = zcclErrorAbs, c.eb = 1e-3, c.minBytes = 0;
    CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
    float* x = (float*)buf;
    for (size_t i = 0; i < bytes / sizeof(float); i++) x[i] = (float)(i % 1000) * 0.01f;
    t0 = now();
    res = zcclAllReduce(buf, buf, bytes / sizeof(float), zcclFloat32, zcclSum, comm, NULL);
  } else
    res = zcclSend(buf, bytes, zcclInt8, 1, comm, NULL);
  double took = now() - t0;
  printf("%s: rank 0's call returned %s after %.2f s: %s\n", mode, zcclGetErrorString(res), took,
         zcclGetLastError(comm));
  CHECK(res == zcclRemoteError);
  /* The no-progress timeout allows 10 MB/s for the message on top. */
  CHECK(took < TIMEOUT_S + (double)bytes / 1e7 + MARGIN_S);
  zcclResult_t async = zcclSuccess;
  CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclSuccess);
  CHECK(async == zcclRemoteError);
  /* The communicator is broken: calls fail at once instead of waiting. */
  t0 = now();
  CHECK_RES(zcclSend(&v, 1, zcclInt32, 1, comm, NULL), zcclRemoteError);
  CHECK_LAST_ERROR_HAS("pending error");
  CHECK(now() - t0 < 1.0);
  t0 = now();
  if (strcmp(mode, "no-show") == 0)
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  else
    CHECK_RES(zcclCommAbort(comm), zcclSuccess);
  took = now() - t0;
  printf("%s: %s returned after %.2f s\n", mode, strcmp(mode, "no-show") ? "abort" : "destroy", took);
  CHECK(took < TIMEOUT_S + MARGIN_S);
  free(buf);
  printf("rank 0: %d checks, %d failed\n", test_checks, test_failures);
  fflush(stdout); /* the child leaves by _exit */
  return test_failures ? 1 : 0;
}

/* range-fail, on either rank: ids[k] for case k. */
static int range_fail(int rank, const zcclUniqueId* ids) {
  setenv("ZCCL_DEVICE", "sim", 1);
  if (rank == 1) setenv("ZCCL_SIM_FAIL_RANGE", "1", 1);
  size_t n = 4096;
  float* x = malloc(n * 2 * sizeof(float));
  for (size_t i = 0; i < n * 2; i++) x[i] = (float)(i % 97) * 0.5f;
  static const char* needle[6] = {"rank 1 failed", "rank 1 failed", "root (rank 1) failed", "root (rank 1) failed",
                                  "root (rank 1) failed", "rank 1 failed"};
  for (int kase = 0; kase < 6; kase++) {
    zcclComm_t comm = NULL;
    if (kase == 4) setenv("ZCCL_ALGO", "broadcast:chain", 1); /* the compressed chain's own way of telling */
    if (kase == 5) { /* the pipelined allgather's: its bound is agreed, so rank 1's compression fails instead */
      setenv("ZCCL_ALGO", "allgather:pipeline", 1);
      if (rank == 1) {
        unsetenv("ZCCL_SIM_FAIL_RANGE");
        setenv("ZCCL_SIM_FAIL_ENCODE", "1", 1);
      }
    }
    CHECK_RES(zcclCommInitRank(&comm, 2, ids[kase], rank), zcclSuccess);
    unsetenv("ZCCL_ALGO");
    if (comm == NULL) break;
    zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
    c.codec = kase == 1 ? zcclCodecZfp : zcclCodecHz, c.mode = zcclErrorRel, c.eb = 1e-3, c.minBytes = 0;
    CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
    double t0 = now();
    zcclResult_t res = kase == 0   ? zcclAllReduce(x, x + n, n, zcclFloat32, zcclSum, comm, NULL)
                       : kase == 1 || kase == 5 ? zcclAllGather(x, x + n, n / 2, zcclFloat32, comm, NULL)
                       : kase == 2 || kase == 4 ? zcclBroadcast(x, x + n, n, zcclFloat32, 1, comm, NULL)
                                   : zcclScatter(x, x + n, n / 2, zcclFloat32, 1, comm, NULL);
    double took = now() - t0;
    const char* msg = zcclGetLastError(comm);
    printf("range-fail case %d: rank %d's call returned %s after %.2f s: %s\n", kase, rank, zcclGetErrorString(res),
           took, msg);
    if (rank == 1) {
      CHECK(res == zcclInternalError);
      CHECK(strstr(msg, kase == 5 ? "ZCCL_SIM_FAIL_ENCODE" : "ZCCL_SIM_FAIL_RANGE") != NULL);
    } else {
      CHECK(res == zcclRemoteError);
      CHECK(strstr(msg, needle[kase]) != NULL);
      CHECK(took < 1.0); /* not at ZCCL_TIMEOUT */
    }
    CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  }
  free(x);
  printf("rank %d: %d checks, %d failed\n", rank, test_checks, test_failures);
  fflush(stdout);
  return test_failures ? 1 : 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "kill-recv";
  if (strcmp(mode, "kill-recv") && strcmp(mode, "kill-send") && strcmp(mode, "no-show") && strcmp(mode, "kill-hz") &&
      strcmp(mode, "range-fail")) {
    fprintf(stderr, "usage: test_failures kill-recv|kill-send|no-show|kill-hz|range-fail\n");
    return 2;
  }
  int live = strcmp(mode, "range-fail") == 0; /* both ranks live and end */
  char t[16];
  snprintf(t, sizeof t, "%d", TIMEOUT_S);
  setenv("ZCCL_TIMEOUT", t, 1);
  setenv("ZCCL_BOOTSTRAP", "tcp", 1);
  zcclUniqueId ids[6];
  for (int k = 0; k < 6; k++) CHECK_RES(zcclGetUniqueId(&ids[k]), zcclSuccess);
  pid_t pids[2];
  signal(SIGUSR1, on_rank0_done); /* before the fork: rank 1 has it from its start */
  for (int r = 0; r < 2; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(live ? range_fail(r, ids) : r == 0 ? rank0(mode, ids[0]) : rank1(mode, ids[0]));
  }
  /* Watchdog: nothing may take longer than this. */
  double deadline = now() + 3 * (TIMEOUT_S + MARGIN_S) + 10;
  int status[2] = {-1, -1}, left = 2;
  while (left > 0 && now() < deadline) {
    for (int r = 0; r < 2; r++) {
      if (status[r] != -1) continue;
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st, left--;
        if (r == 0 && status[1] == -1 && strcmp(mode, "no-show") == 0) kill(pids[1], SIGUSR1);
      }
    }
    usleep(20000);
  }
  for (int r = 0; r < 2; r++)
    if (status[r] == -1) {
      fprintf(stderr, "rank %d hung: killed by the watchdog\n", r);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], NULL, 0);
    }
  CHECK(status[0] != -1 && WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 0);
  if (strcmp(mode, "no-show") == 0 || live)
    CHECK(status[1] != -1 && WIFEXITED(status[1]) && WEXITSTATUS(status[1]) == 0);
  else
    CHECK(status[1] != -1 && WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL);
  TEST_DONE();
}
