/* A communicator leaves nothing behind: cycles of zcclGetUniqueId +
 * zcclCommInitRank + one AllReduce + zcclCommDestroy keep the process's
 * threads (/proc/self/task), file descriptors (/proc/self/fd), heap in use
 * (glibc mallinfo2) and RSS flat after a warm-up. Built twice: for one rank
 * (unit; also an id that is never used and failed inits), and under mpirun
 * (ZCCL_LEAK_MPI, label mpi: the id from rank 0 by MPI_Bcast, the bootstrap
 * as ZCCL_BOOTSTRAP says).
 * Usage: test_comm_leak [cycles [warm-up]]; prints the figures. */
#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef ZCCL_LEAK_MPI
#include <mpi.h>
#endif

#include "test_util.h"

#define COUNT 1024
/* Allowed growth after the warm-up, whatever the cycles: the target is flat
 * within 1 MiB over 1,000 cycles; a leak of 1 kB a cycle fails the heap
 * bound within 200 cycles. */
#define HEAP_SLACK (128 * 1024)
#define RSS_SLACK (1024 * 1024)
/* Under the sanitizers the allocator is theirs (mallinfo2 sees none of it)
 * and freed memory sits in quarantine: only threads and fds are checked,
 * over fewer cycles (they run several times slower). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static int entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static long long heap_used(void) {
  struct mallinfo2 m = mallinfo2();
  return (long long)(m.uordblks + m.hblkhd);
}

static long long rss(void) {
  long long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL || fscanf(f, "%lld %lld", &pages, &resident) != 2) resident = -1;
  if (f) fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

/* Threads end just after they are joined or told to: wait up to 2 s for
 * the count to come down to `want`. */
static int threads_settle(int want) {
  int n = entries("/proc/self/task");
  for (int i = 0; i < 200 && n > want; i++) {
    sleep_s(0.01);
    n = entries("/proc/self/task");
  }
  return n;
}

static int rank = 0, nranks = 1;

static int cycle(void) {
  zcclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0 && zcclGetUniqueId(&id) != zcclSuccess) return 0;
#ifdef ZCCL_LEAK_MPI
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
  zcclComm_t comm = NULL;
  if (zcclCommInitRank(&comm, nranks, id, rank) != zcclSuccess) return 0;
  static float in[COUNT], out[COUNT];
  for (int i = 0; i < COUNT; i++) in[i] = (float)(i + rank);
  int ok = zcclAllReduce(in, out, COUNT, zcclFloat32, zcclSum, comm, NULL) == zcclSuccess;
  ok &= out[COUNT - 1] == (float)(nranks * (COUNT - 1) + nranks * (nranks - 1) / 2);
  ok &= zcclCommDestroy(comm) == zcclSuccess;
  return ok;
}

int main(int argc, char** argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : SANITIZED ? 50 : 200;
  int warm = argc > 2 ? atoi(argv[2]) : SANITIZED ? 5 : 20;
#ifdef ZCCL_LEAK_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#endif
  int good = 0;
  for (int i = 0; i < warm; i++) good += cycle();
  CHECK(good == warm);
  const int threads0 = threads_settle(0), fds0 = entries("/proc/self/fd");
  const long long heap0 = heap_used(), rss0 = rss();
  good = 0;
  for (int i = 0; i < cycles; i++) good += cycle();
  CHECK(good == cycles);
  const int threads1 = threads_settle(threads0), fds1 = entries("/proc/self/fd");
  const long long heap1 = heap_used(), rss1 = rss();
  printf("rank %d of %d, %d cycles after %d: threads %d -> %d, fds %d -> %d, heap %lld -> %lld (%+.1f B/cycle), "
         "RSS %lld -> %lld kB (%+.1f B/cycle)\n",
         rank, nranks, cycles, warm, threads0, threads1, fds0, fds1, heap0, heap1,
         (double)(heap1 - heap0) / cycles, rss0 / 1024, rss1 / 1024, (double)(rss1 - rss0) / cycles);
  CHECK(threads1 == threads0);
  CHECK(fds1 == fds0);
  if (!SANITIZED) {
    CHECK(heap1 - heap0 < HEAP_SLACK);
    CHECK(rss1 - rss0 < RSS_SLACK);
  }

#ifndef ZCCL_LEAK_MPI
  /* Ids never used: each root ends at ZCCL_BOOTSTRAP_TIMEOUT, and what is
   * left of it goes at the next bootstrap call. */
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "2", 1);
  for (int i = 0; i < 10; i++) {
    zcclUniqueId unused;
    CHECK_RES(zcclGetUniqueId(&unused), zcclSuccess);
  }
  CHECK(entries("/proc/self/task") == threads0 + 10); /* made in well under 2 s */
  sleep_s(2.3);
  CHECK(threads_settle(threads0) == threads0);
  /* Failed inits: a bad rank, and a rank whose peer never comes. */
  zcclUniqueId id;
  zcclComm_t comm = NULL;
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  CHECK_RES(zcclCommInitRank(&comm, 1, id, 3), zcclInvalidArgument);
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  CHECK_RES(zcclCommInitRank(&comm, 2, id, 0), zcclRemoteError);
  CHECK(cycle());
  printf("after unused ids and failed inits: threads %d, fds %d\n", threads_settle(threads0),
         entries("/proc/self/fd"));
  CHECK(threads_settle(threads0) == threads0);
  CHECK(entries("/proc/self/fd") == fds0);
#endif
#ifdef ZCCL_LEAK_MPI
  MPI_Finalize();
#endif
  TEST_DONE();
}
