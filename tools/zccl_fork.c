#include "zccl_fork.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int zccl_fork_ranks(int n, int (*fn)(int rank, const zcclUniqueId* id, void* arg), void* arg, int timeout_s) {
  if (n < 1 || n > 8) return fprintf(stderr, "zccl_fork_ranks: %d ranks, expected 1..8\n", n), 2;
  zcclUniqueId id;
  if (zcclGetUniqueId(&id) != zcclSuccess) return fprintf(stderr, "zcclGetUniqueId: %s\n", zcclGetLastError(NULL)), 2;
  fflush(NULL);
  pid_t pids[8];
  int codes[8], left = 0, failed = 0, skipped = 0;
  for (int r = 0; r < n; r++) {
    codes[r] = -1;
    pids[r] = fork();
    if (pids[r] == 0) {
      int rc = fn(r, &id, arg);
      fflush(NULL);
      _exit(rc);
    }
    if (pids[r] < 0) codes[r] = 1, perror("fork");
    else left++;
  }
  struct timespec tick = {0, 100 * 1000000L};
  for (long t = 0; t < (long)timeout_s * 10 && left; t++) {
    for (int r = 0; r < n; r++) {
      int s;
      if (codes[r] == -1 && waitpid(pids[r], &s, WNOHANG) == pids[r]) {
        codes[r] = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
        left--;
      }
    }
    if (left) nanosleep(&tick, NULL);
  }
  for (int r = 0; r < n; r++) {
    if (codes[r] == -1) {
      fprintf(stderr, "rank %d still running after %d s: killed\n", r, timeout_s);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], NULL, 0);
      codes[r] = 124;
    }
    skipped += codes[r] == 77;
    failed += codes[r] != 0 && codes[r] != 77;
  }
  if (failed) fprintf(stderr, "%d of %d ranks failed\n", failed, n);
  return failed ? 1 : skipped == n ? 77 : skipped ? 1 : 0;
}
