/* Communicators created and destroyed again and again, with threads as
 * ranks (NCCL's one-process-many-ranks use): every cycle bootstraps through
 * a fresh unique id, exchanges a message, and destroys. Run under ASan
 * (LeakSanitizer) by the sanitizer suite: nothing may leak, and no file
 * descriptor stays open (counted after a first cycle of each kind, which
 * may open what a process keeps). Also: destroy with a group still open,
 * abort of a healthy communicator, abort from another thread while a call
 * waits in the communicator. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

typedef struct {
  zcclUniqueId id;
  int rank, nranks, cycles_ok;
  int abort_it;
} rank_arg_t;

static void* rank_main(void* p) {
  rank_arg_t* a = p;
  zcclComm_t comm = NULL;
  if (zcclCommInitRank(&comm, a->nranks, a->id, a->rank) != zcclSuccess) return NULL;
  int right = (a->rank + 1) % a->nranks, left = (a->rank + a->nranks - 1) % a->nranks;
  int v = a->rank, w = -1;
  zcclGroupStart();
  zcclSend(&v, 1, zcclInt32, right, comm, NULL);
  zcclRecv(&w, 1, zcclInt32, left, comm, NULL);
  zcclResult_t res = zcclGroupEnd();
  zcclResult_t down = a->abort_it ? zcclCommAbort(comm) : zcclCommDestroy(comm);
  if (res == zcclSuccess && w == left && down == zcclSuccess) a->cycles_ok++;
  return NULL;
}

/* One cycle: nranks threads bring up a communicator and tear it down. */
static int cycle(int nranks, int abort_it) {
  rank_arg_t args[4];
  pthread_t th[4];
  zcclUniqueId id;
  if (zcclGetUniqueId(&id) != zcclSuccess) return 0;
  for (int r = 0; r < nranks; r++) {
    args[r] = (rank_arg_t){.id = id, .rank = r, .nranks = nranks, .abort_it = abort_it};
    pthread_create(&th[r], NULL, rank_main, &args[r]);
  }
  int ok = 1;
  for (int r = 0; r < nranks; r++) {
    pthread_join(th[r], NULL);
    ok &= args[r].cycles_ok == 1;
  }
  return ok;
}

/* Open file descriptors of this process. */
static int open_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  while (readdir(d) != NULL) n++;
  closedir(d);
  return n;
}

static int one_rank_cycle(const zcclUniqueId* zero) {
  zcclComm_t c = NULL;
  return zcclCommInitRank(&c, 1, *zero, 0) == zcclSuccess && zcclCommDestroy(c) == zcclSuccess;
}

/* Abort from another thread while a call waits inside the communicator
 * (c10d's watchdog): rank 0's AllReduce waits for rank 1, which never
 * calls; the main thread aborts rank 0's communicator. The call must come
 * back with an error soon, and the abort must not free what it uses. */
typedef struct {
  zcclUniqueId id;
  int rank;
  zcclComm_t comm;
  zcclResult_t init, call;
  double call_end;
} abort_arg_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void* abort_rank_init(void* p) {
  abort_arg_t* a = p;
  a->init = zcclCommInitRank(&a->comm, 2, a->id, a->rank);
  return NULL;
}

static void* abort_rank_call(void* p) {
  abort_arg_t* a = p;
  static float x[1 << 16], y[1 << 16];
  a->call = zcclAllReduce(x, y, 1 << 16, zcclFloat32, zcclSum, a->comm, NULL);
  a->call_end = now_s();
  return NULL;
}

static void test_abort_while_waiting(void) {
  abort_arg_t a[2];
  pthread_t th[2];
  zcclUniqueId id;
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  for (int r = 0; r < 2; r++) {
    a[r] = (abort_arg_t){.id = id, .rank = r};
    pthread_create(&th[r], NULL, abort_rank_init, &a[r]);
  }
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  CHECK(a[0].init == zcclSuccess && a[1].init == zcclSuccess);
  if (a[0].init != zcclSuccess || a[1].init != zcclSuccess) return;
  pthread_create(&th[0], NULL, abort_rank_call, &a[0]);
  struct timespec pause = {0, 300 * 1000000L};
  nanosleep(&pause, NULL);
  double t0 = now_s();
  CHECK_RES(zcclCommAbort(a[0].comm), zcclSuccess);
  pthread_join(th[0], NULL);
  CHECK(a[0].call != zcclSuccess);
  CHECK(a[0].call_end - t0 < 5.0);
  printf("abort from another thread: the waiting call returned %s %.2f s after the abort began\n",
         zcclGetErrorString(a[0].call), a[0].call_end - t0);
  CHECK_RES(zcclCommAbort(a[0].comm), zcclInvalidArgument); /* gone */
  CHECK_RES(zcclCommAbort(a[1].comm), zcclSuccess);
}

int main(int argc, char** argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 300;
  zcclUniqueId zero;
  memset(&zero, 0, sizeof zero);
  /* One-rank communicators. */
  int good = one_rank_cycle(&zero);
  const int fds = open_fds();
  for (int i = 1; i < cycles; i++) good += one_rank_cycle(&zero);
  CHECK(good == cycles);
  CHECK(open_fds() == fds);
  /* Two ranks (threads), a tenth as many cycles: each starts a TCP root. */
  good = cycle(2, 0);
  const int fds2 = open_fds();
  for (int i = 1; i < cycles / 10; i++) good += cycle(2, i % 2);
  CHECK(good == cycles / 10);
  CHECK(open_fds() == fds2);
  /* Three ranks, a few times. */
  good = 0;
  for (int i = 0; i < 5; i++) good += cycle(3, 0);
  CHECK(good == 5);

  /* Destroying a communicator that still has calls in an open group:
   * they are dropped, and the group ends cleanly. */
  zcclComm_t c = NULL;
  CHECK_RES(zcclCommInitRank(&c, 1, zero, 0), zcclSuccess);
  int v = 1;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(&v, 1, zcclInt32, 0, c, NULL), zcclSuccess);
  CHECK_RES(zcclCommDestroy(c), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  test_abort_while_waiting();
  TEST_DONE();
}
