/* The unique-id bootstrap over TCP, ranks as threads of this process: all
 * ranks get every rank's address; strangers without the secret are dropped
 * without disturbing the others; a duplicate rank is refused at once and a
 * different nranks when the job forms, with a message; missing ranks time
 * out within the deadline. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "zb_bootstrap.h"

#define BLOB 32

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A rank as a thread (fork under ThreadSanitizer, with the root thread
 * running, is not reliable): ok when the allgather returns `expect` and, on
 * success, a correct table. */
typedef struct {
  const zcclUniqueId* id;
  int rank, nranks;
  zcclResult_t expect;
  double timeout;
  int ok;
  pthread_t th;
} rank_t;

static void* rank_main(void* arg) {
  rank_t* r = arg;
  char blob[BLOB] = {0}, *table = calloc((size_t)r->nranks, BLOB);
  snprintf(blob, sizeof blob, "address of rank %d", r->rank);
  zcclResult_t res = zb_tcp_allgather(r->id, r->rank, r->nranks, blob, BLOB, table, r->timeout);
  r->ok = res == r->expect;
  if (r->ok && res == zcclSuccess)
    for (int i = 0; i < r->nranks; i++) {
      char want[BLOB] = {0};
      snprintf(want, sizeof want, "address of rank %d", i);
      r->ok &= memcmp(table + (size_t)i * BLOB, want, BLOB) == 0;
    }
  if (!r->ok)
    fprintf(stderr, "rank %d: got %d, expected %d: %s\n", r->rank, (int)res, (int)r->expect, zcclGetLastError(NULL));
  free(table);
  return NULL;
}

static rank_t ranks[16];

static rank_t* spawn(const zcclUniqueId* id, int rank, int nranks, zcclResult_t expect, double timeout) {
  static int next;
  rank_t* r = &ranks[next++ % 16];
  *r = (rank_t){id, rank, nranks, expect, timeout, 0, 0};
  pthread_create(&r->th, NULL, rank_main, r);
  return r;
}

static int reap(rank_t* r) {
  pthread_join(r->th, NULL);
  return r->ok ? 0 : 1;
}

/* Connects to the id's root and sends bytes: a stranger. */
static void stranger(const zcclUniqueId* id, const void* bytes, size_t len) {
  uint32_t ip;
  uint16_t port;
  CHECK(zb_id_get_tcp(id, &ip, &port) == 0);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port};
  sa.sin_addr.s_addr = ip;
  CHECK(connect(fd, (struct sockaddr*)&sa, sizeof sa) == 0);
  CHECK(send(fd, bytes, len, 0) == (ssize_t)len);
  close(fd);
}

int main(void) {
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "20", 1);
  /* Eight ranks meet. */
  zcclUniqueId id;
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  zb_id_kind_t kind;
  CHECK_RES(zb_id_check(&id, &kind), zcclSuccess);
  CHECK(kind == ZB_ID_KIND_TCP);
  rank_t* p[8];
  for (int r = 7; r >= 0; r--) p[r] = spawn(&id, r, 8, zcclSuccess, 20);
  for (int r = 0; r < 8; r++) CHECK(reap(p[r]) == 0);

  /* Strangers first (garbage; the right magic with a wrong secret): the
   * ranks that follow are not disturbed. */
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  uint8_t junk[64];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 37 + 1);
  stranger(&id, junk, sizeof junk);
  uint8_t forged[64] = {0x50, 0x54, 0x42, 0x5a}; /* magic, zero secret, rank 0 of 2 */
  forged[20] = 0;
  forged[24] = 2;
  stranger(&id, forged, sizeof forged);
  p[0] = spawn(&id, 0, 2, zcclSuccess, 20);
  p[1] = spawn(&id, 1, 2, zcclSuccess, 20);
  CHECK(reap(p[0]) == 0 && reap(p[1]) == 0);

  /* A duplicate rank and a different nranks are refused with a reason. */
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  p[0] = spawn(&id, 0, 2, zcclSuccess, 20);
  CHECK(usleep(300000) == 0);
  p[2] = spawn(&id, 0, 2, zcclInvalidUsage, 20); /* "rank 0 joined twice", at once */
  CHECK(reap(p[2]) == 0);
  /* Another nranks waits in a group of its own, refused when the job forms. */
  p[3] = spawn(&id, 1, 3, zcclInvalidUsage, 20); /* "says nranks=3" */
  CHECK(usleep(300000) == 0);
  p[1] = spawn(&id, 1, 2, zcclSuccess, 20);
  CHECK(reap(p[0]) == 0 && reap(p[1]) == 0);
  CHECK(reap(p[3]) == 0);

  /* Missing ranks: the root gives up at ZCCL_BOOTSTRAP_TIMEOUT and says so. */
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "2", 1);
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  double t0 = now();
  p[0] = spawn(&id, 0, 3, zcclRemoteError, 20);
  p[1] = spawn(&id, 2, 3, zcclRemoteError, 20);
  CHECK(reap(p[0]) == 0 && reap(p[1]) == 0);
  double waited = now() - t0;
  printf("missing rank detected after %.2f s (ZCCL_BOOTSTRAP_TIMEOUT=2)\n", waited);
  CHECK(waited >= 1.5 && waited < 12.0); /* bounded, with room for sanitizers on a loaded machine */

  /* No root at all: a rank gives up at its own deadline. The id points at
   * a loopback port just closed (the root above may still be closing its
   * socket when the children have their answers, and would take the
   * connection). */
  zcclUniqueId gone = id;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  CHECK(s >= 0 && bind(s, (struct sockaddr*)&sa, sizeof sa) == 0 && getsockname(s, (struct sockaddr*)&sa, &sl) == 0);
  close(s);
  zb_id_set_tcp(&gone, sa.sin_addr.s_addr, sa.sin_port);
  t0 = now();
  CHECK_RES(zb_tcp_allgather(&gone, 0, 2, "x", 1, (char[2]){0}, 1.0), zcclRemoteError);
  CHECK(now() - t0 < 3.0);
  CHECK_LAST_ERROR_HAS("cannot reach the root");

  /* An id without a root. */
  zcclUniqueId plain;
  CHECK_RES(zb_id_create(&plain), zcclSuccess);
  CHECK_RES(zb_tcp_allgather(&plain, 0, 2, "x", 1, (char[2]){0}, 1.0), zcclInvalidArgument);
  setenv("ZCCL_SOCKET_IFNAME", "nosuchif0", 1);
  CHECK_RES(zcclGetUniqueId(&id), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_SOCKET_IFNAME=nosuchif0");
  setenv("ZCCL_SOCKET_IFNAME", "lo", 1);
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  unsetenv("ZCCL_SOCKET_IFNAME");
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "soon", 1);
  CHECK_RES(zcclGetUniqueId(&id), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_BOOTSTRAP_TIMEOUT='soon'");
  TEST_DONE();
}
