/* The unique-id bootstrap under attack, on loopback, ranks and attackers as
 * threads of this process:
 * - 4 ranks form their job within 10 s (printed; a few ms unloaded) while
 *   100 silent and 100 slow-drip connections hold the root's port and 1,000
 *   garbage or forged hellos hit it;
 * - a secret holder saying nranks=65536 first, and one with a rank outside
 *   the job, are refused without affecting it;
 * - a passive observer (a relay that records one rank's bytes) can neither
 *   join by replaying that rank's hello, nor feed a rank a table by
 *   replaying the root's answer from a fake root. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "zb_bootstrap.h"

#define BLOB 32
#define SILENT 100
#define DRIP 100
#define GARBAGE 1000

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int dial(uint32_t ip, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port};
  sa.sin_addr.s_addr = ip;
  if (fd >= 0 && connect(fd, (struct sockaddr*)&sa, sizeof sa) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

/* A loopback listener on a free port (network order in *port). */
static int listener(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr*)&sa, sizeof sa) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, (struct sockaddr*)&sa, &sl) != 0)
    return -1;
  *port = sa.sin_port;
  return fd;
}

/* A rank as a thread: ok when zb_tcp_allgather returns `expect` (and, on
 * success, the right table) and the last error has `says` in it. */
typedef struct {
  zcclUniqueId id;
  int rank, nranks;
  zcclResult_t expect;
  const char* says;
  char tag; /* the blob's first byte: who sent it */
  int ok;
  double done_at;
  pthread_t th;
} rank_t;

static void fill_blob(char* blob, char tag, int rank) {
  memset(blob, 0, BLOB);
  snprintf(blob, BLOB, "%c address of rank %d", tag, rank);
}

static void* rank_main(void* arg) {
  rank_t* r = arg;
  char blob[BLOB], *table = calloc((size_t)r->nranks, BLOB);
  fill_blob(blob, r->tag, r->rank);
  zcclResult_t res = zb_tcp_allgather(&r->id, r->rank, r->nranks, blob, BLOB, table, 20);
  r->done_at = now();
  r->ok = res == r->expect;
  if (r->ok && res == zcclSuccess)
    for (int i = 0; i < r->nranks; i++) {
      char want[BLOB];
      fill_blob(want, r->tag, i);
      r->ok &= memcmp(table + (size_t)i * BLOB, want, BLOB) == 0;
    }
  if (r->ok && r->says) r->ok = strstr(zcclGetLastError(NULL), r->says) != NULL;
  if (!r->ok)
    fprintf(stderr, "rank %d of %d: got %d, expected %d (%s): %s\n", r->rank, r->nranks, (int)res, (int)r->expect,
            r->says ? r->says : "", zcclGetLastError(NULL));
  free(table);
  return NULL;
}

static void spawn(rank_t* r, const zcclUniqueId* id, int rank, int nranks, zcclResult_t expect, const char* says,
                  char tag) {
  *r = (rank_t){.id = *id, .rank = rank, .nranks = nranks, .expect = expect, .says = says, .tag = tag};
  pthread_create(&r->th, NULL, rank_main, r);
}

static int reap(rank_t* r) {
  pthread_join(r->th, NULL);
  return r->ok;
}

/* ---- attackers -------------------------------------------------------- */

static uint32_t root_ip;
static uint16_t root_port;
static atomic_int stop_attack, garbage_sent;

/* Slow drip: a byte to each connection every 20 ms. */
static void* drip_main(void* arg) {
  int* fds = arg;
  unsigned char b = 0x50;
  while (!atomic_load(&stop_attack)) {
    for (int i = 0; i < DRIP; i++)
      if (fds[i] >= 0) (void)!send(fds[i], &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    usleep(20000);
  }
  return NULL;
}

/* Garbage and forged hellos, until told to stop: random bytes, or whatever
 * the root's first bytes were followed by a plausible hello with a made-up
 * proof. */
static void* garbage_main(void* arg) {
  (void)arg;
  unsigned seed = 12345;
  for (int i = 0; !atomic_load(&stop_attack); i++) {
    int fd = dial(root_ip, root_port);
    if (fd < 0) continue;
    uint8_t buf[256];
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = (uint8_t)rand_r(&seed);
    size_t len = 1 + (size_t)rand_r(&seed) % sizeof buf;
    if (i % 2) { /* forged: the root's magic, rank i%4 of 4, BLOB bytes, a random MAC */
      struct pollfd p = {fd, POLLIN, 0};
      uint8_t first[64];
      ssize_t got = poll(&p, 1, 50) == 1 ? recv(fd, first, sizeof first, MSG_DONTWAIT) : 0;
      int32_t f[3] = {i % 4, 4, BLOB};
      if (got >= 4) memcpy(buf, first, 4);
      memcpy(buf + 4, f, sizeof f);
      len = 4 + sizeof f + 16 + 32 + BLOB;
    }
    (void)!send(fd, buf, len, MSG_NOSIGNAL);
    close(fd);
    atomic_fetch_add(&garbage_sent, 1);
  }
  return NULL;
}

/* ---- the observer: a relay between a rank and the root ---------------- */

typedef struct {
  int listen_fd;
  uint32_t ip;
  uint16_t port; /* the root's */
  pthread_mutex_t lock;
  uint8_t up[8192], down[8192]; /* rank -> root, root -> rank */
  size_t uplen, downlen;
} relay_t;

static void* relay_main(void* arg) {
  relay_t* r = arg;
  int a = accept(r->listen_fd, NULL, NULL);
  int b = dial(r->ip, r->port);
  struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  while (a >= 0 && b >= 0 && poll(p, 2, 10000) > 0) {
    uint8_t buf[4096];
    int from = p[0].revents ? 0 : 1;
    ssize_t n = recv(p[from].fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    pthread_mutex_lock(&r->lock);
    uint8_t* rec = from == 0 ? r->up : r->down;
    size_t* len = from == 0 ? &r->uplen : &r->downlen;
    if (*len + (size_t)n <= sizeof r->up) memcpy(rec + *len, buf, (size_t)n), *len += (size_t)n;
    pthread_mutex_unlock(&r->lock);
    if (send(p[1 - from].fd, buf, (size_t)n, MSG_NOSIGNAL) != n) break;
  }
  if (a >= 0) close(a);
  if (b >= 0) close(b);
  return NULL;
}

/* A fake root: answers one rank with recorded bytes. */
typedef struct {
  int listen_fd;
  const uint8_t* bytes;
  size_t len;
} fake_root_t;

static void* fake_root_main(void* arg) {
  fake_root_t* f = arg;
  int fd = accept(f->listen_fd, NULL, NULL);
  if (fd < 0) return NULL;
  (void)!send(fd, f->bytes, f->len, MSG_NOSIGNAL);
  struct pollfd p = {fd, POLLIN, 0};
  uint8_t sink[4096];
  while (poll(&p, 1, 5000) == 1 && recv(fd, sink, sizeof sink, 0) > 0) {
  }
  close(fd);
  return NULL;
}

int main(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
    rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "20", 1);
  zcclUniqueId id;
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  CHECK(zb_id_get_tcp(&id, &root_ip, &root_port) == 0);

  /* Strangers take their places first. */
  int silent[SILENT], drip[DRIP];
  for (int i = 0; i < SILENT; i++) silent[i] = dial(root_ip, root_port);
  for (int i = 0; i < DRIP; i++) drip[i] = dial(root_ip, root_port);
  pthread_t dripper, garbler;
  pthread_create(&dripper, NULL, drip_main, drip);
  pthread_create(&garbler, NULL, garbage_main, NULL);
  /* Secret holders with a wrong shape, before any real rank. */
  rank_t wrong, outside, r[4];
  spawn(&wrong, &id, 0, 65536, zcclInvalidUsage, "the job formed with 4 ranks", 'w');
  usleep(200000);
  spawn(&outside, &id, 9, 4, zcclInvalidUsage, "rank 9 is outside [0, 4)", 'o');
  CHECK(reap(&outside));

  /* The ranks come while the garbage flows: half of it before them. */
  for (double give_up = now() + 20; atomic_load(&garbage_sent) < GARBAGE / 2 && now() < give_up;) usleep(1000);
  double t0 = now();
  int garbage_before = atomic_load(&garbage_sent);
  for (int i = 0; i < 4; i++) spawn(&r[i], &id, i, 4, zcclSuccess, NULL, 'a');
  double formed = t0;
  for (int i = 0; i < 4; i++) {
    CHECK(reap(&r[i]));
    if (r[i].done_at > formed) formed = r[i].done_at;
  }
  int garbage_during = atomic_load(&garbage_sent) - garbage_before;
  printf("4 ranks formed in %.3f s with %d silent and %d slow-drip connections open, %d garbage/forged hellos "
         "before and %d while they met\n",
         formed - t0, SILENT, DRIP, garbage_before, garbage_during);
  CHECK(formed - t0 < 10.0); /* a generous bound: CI machines are noisy */
  CHECK(reap(&wrong));
  /* At least GARBAGE in all; the root has gone, so the rest are refused. */
  for (double give_up = now() + 20; atomic_load(&garbage_sent) < GARBAGE && now() < give_up;) usleep(1000);
  atomic_store(&stop_attack, 1);
  pthread_join(dripper, NULL);
  pthread_join(garbler, NULL);
  for (int i = 0; i < SILENT; i++) close(silent[i]);
  for (int i = 0; i < DRIP; i++) close(drip[i]);

  /* The observer records rank 1's bytes on their way to the root. */
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  relay_t relay = {.lock = PTHREAD_MUTEX_INITIALIZER};
  CHECK(zb_id_get_tcp(&id, &relay.ip, &relay.port) == 0);
  uint16_t relay_port;
  relay.listen_fd = listener(&relay_port);
  CHECK(relay.listen_fd >= 0);
  zcclUniqueId via = id;
  zb_id_set_tcp(&via, htonl(INADDR_LOOPBACK), relay_port);
  pthread_t relay_th;
  pthread_create(&relay_th, NULL, relay_main, &relay);
  spawn(&r[1], &via, 1, 2, zcclSuccess, NULL, 'b');
  usleep(500000); /* rank 1's hello has gone through: it waits for rank 0 */
  /* Replayed as it was, on a new connection: the root sends nothing but
   * its challenge (no answer, no "joined twice") and hangs up. */
  int fd = dial(relay.ip, relay.port);
  pthread_mutex_lock(&relay.lock);
  CHECK(relay.uplen > 0 && send(fd, relay.up, relay.uplen, MSG_NOSIGNAL) == (ssize_t)relay.uplen);
  pthread_mutex_unlock(&relay.lock);
  size_t heard = 0;
  uint8_t buf[512];
  struct pollfd p = {fd, POLLIN, 0};
  ssize_t n;
  while (poll(&p, 1, 3000) == 1 && (n = recv(fd, buf, sizeof buf, 0)) > 0) heard += (size_t)n;
  close(fd);
  printf("the replayed hello heard %zu bytes back\n", heard);
  CHECK(heard <= 20); /* the challenge: magic and nonce */
  spawn(&r[0], &id, 0, 2, zcclSuccess, NULL, 'b');
  CHECK(reap(&r[0]) && reap(&r[1]));
  pthread_join(relay_th, NULL);
  close(relay.listen_fd);

  /* A fake root replays the root's recorded answer to rank 1: not believed. */
  fake_root_t fake = {.bytes = relay.down, .len = relay.downlen};
  uint16_t fake_port;
  fake.listen_fd = listener(&fake_port);
  CHECK(fake.listen_fd >= 0 && relay.downlen > 0);
  zcclUniqueId spoofed = id;
  zb_id_set_tcp(&spoofed, htonl(INADDR_LOOPBACK), fake_port);
  pthread_t fake_th;
  pthread_create(&fake_th, NULL, fake_root_main, &fake);
  spawn(&r[2], &spoofed, 1, 2, zcclRemoteError, "does not prove the id's secret", 'c');
  CHECK(reap(&r[2]));
  pthread_join(fake_th, NULL);
  close(fake.listen_fd);
  TEST_DONE();
}
