/* The unique-id bootstrap over TCP (NCCL's model). zcclGetUniqueId starts a
 * root thread listening on the chosen interface; its address, port and a
 * random 128-bit secret go into the id. The secret never crosses the wire:
 *
 *   root -> rank  challenge: magic, a fresh 16-byte root nonce
 *   rank -> root  hello: magic, rank, nranks, bloblen, a rank nonce, and
 *                 HMAC-SHA256(secret, "hello", root nonce, hello, blob); blob
 *   root -> rank  answer: magic, status, nranks, bloblen, why; the table when
 *                 status is 0; HMAC-SHA256(secret, "answer", rank nonce, root
 *                 nonce, answer, table)
 *
 * so an observer of one job can neither replay a hello (the nonce differs)
 * nor forge one, and a rank believes only an answer keyed by the secret.
 * The root serves every connection at once (one poll over all of them, a
 * deadline each, a cap on those not yet authenticated that drops the
 * oldest): silent or slow strangers cost nothing but a slot. Nothing a
 * connection sends changes shared state before its hello has been read
 * whole and its MAC checked. Authenticated hellos wait in groups by
 * (nranks, bloblen); the first group with all its ranks forms the job, the
 * others are refused, so one wrong nranks cannot take the job's shape. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "zb_bootstrap.h"
#include "zu_error.h"
#include "zu_time.h"

#define ZB_TCP_MAGIC 0x32544258u /* "XBT2": the challenge-response protocol */
#define ZB_MAX_RANKS 65536
#define ZB_MAX_BLOB 4096
#define ZB_NONCE 16
#define ZB_MAC 32
/* Connections that have not proven the secret yet: beyond this the oldest
 * is dropped (a rank sends its hello at once, a stranger may never). */
#define ZB_MAX_UNAUTH 256
/* Seconds a connection has to send its whole hello. */
#define ZB_HELLO_SECONDS 5.0
/* Seconds a rank has to take its answer once the root has it. */
#define ZB_ANSWER_SECONDS 5.0

typedef struct {
  uint32_t magic;
  uint8_t nonce[ZB_NONCE];
} zb_challenge_t;

typedef struct {
  uint32_t magic;
  int32_t rank, nranks;
  uint32_t bloblen;
  uint8_t nonce[ZB_NONCE];
  uint8_t mac[ZB_MAC]; /* over everything above but itself (zeroed) */
} zb_hello_t;

typedef struct {
  uint32_t magic;
  int32_t status; /* 0 ok (the table follows), else a zcclResult_t */
  int32_t nranks;
  uint32_t bloblen;
  char why[128];
} zb_answer_t;

static const char zb_label_hello[] = "zccl bootstrap hello v2";
static const char zb_label_answer[] = "zccl bootstrap answer v2";

/* HMAC-SHA256 keyed by the id's secret over the parts in order. */
static int zb_mac(const uint8_t secret[16], const struct iovec* parts, int n, uint8_t out[ZB_MAC]) {
  EVP_MAC* mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char*)"SHA256", 0),
                         OSSL_PARAM_construct_end()};
  size_t len = 0;
  int ok = ctx && EVP_MAC_init(ctx, secret, 16, params);
  for (int i = 0; ok && i < n; i++) ok = EVP_MAC_update(ctx, parts[i].iov_base, parts[i].iov_len);
  ok = ok && EVP_MAC_final(ctx, out, &len, ZB_MAC) && len == ZB_MAC;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return ok ? 0 : -1;
}

static int zb_hello_mac(const uint8_t secret[16], const uint8_t root_nonce[ZB_NONCE], const zb_hello_t* h,
                        const void* blob, uint8_t out[ZB_MAC]) {
  zb_hello_t bare = *h;
  memset(bare.mac, 0, sizeof bare.mac);
  struct iovec parts[] = {{(void*)zb_label_hello, sizeof zb_label_hello},
                          {(void*)root_nonce, ZB_NONCE},
                          {&bare, sizeof bare},
                          {(void*)blob, h->bloblen}};
  return zb_mac(secret, parts, 4, out);
}

static int zb_answer_mac(const uint8_t secret[16], const uint8_t rank_nonce[ZB_NONCE],
                         const uint8_t root_nonce[ZB_NONCE], const zb_answer_t* a, const void* table, size_t len,
                         uint8_t out[ZB_MAC]) {
  struct iovec parts[] = {{(void*)zb_label_answer, sizeof zb_label_answer},
                          {(void*)rank_nonce, ZB_NONCE},
                          {(void*)root_nonce, ZB_NONCE},
                          {(void*)a, sizeof *a},
                          {(void*)table, len}};
  return zb_mac(secret, parts, 5, out);
}

/* ---- the root --------------------------------------------------------- */

typedef enum {
  ZB_CONN_HELLO,  /* reading the hello: not authenticated */
  ZB_CONN_JOINED, /* authenticated, waiting for its group to fill */
  ZB_CONN_ANSWER  /* writing its answer, then closed */
} zb_conn_state_t;

typedef struct {
  int fd;
  zb_conn_state_t state;
  double deadline;
  uint64_t seq; /* accept order, to drop the oldest stranger */
  uint8_t nonce[ZB_NONCE];
  zb_hello_t h;
  uint8_t* blob; /* bloblen bytes, allocated once the header is read */
  size_t got;    /* bytes of hello + blob read */
  /* ZB_CONN_ANSWER: the answer, the table (shared) and the MAC, from sent. */
  zb_answer_t a;
  const uint8_t* table;
  size_t table_len, sent;
  uint8_t mac[ZB_MAC];
} zb_conn_t;

/* Joined hellos of one shape; the job forms when count reaches nranks. */
typedef struct {
  int32_t nranks;
  uint32_t bloblen;
  int count;
} zb_group_t;

typedef struct zb_root {
  int fd;
  int stop_rd, stop_wr; /* a byte on this pipe stops a root that has not formed a job */
  uint8_t secret[16];
  double timeout;
  pthread_t thread;
  pid_t pid; /* the process that runs it: a forked child inherits the list, not the thread */
  /* The thread's first arrays, allocated by zb_tcp_root_start: a root that
   * nobody has contacted allocates nothing, so a fork just after
   * zcclGetUniqueId (ranks forked by the process that made the id) cannot
   * catch it inside malloc or mmap, whose locks (the allocator's, UCX's
   * memory hooks') the child would inherit taken. */
  zb_conn_t** conns;
  struct pollfd* pfd;
  int done;  /* the thread has finished (under zb_roots_lock) */
  struct zb_root* next;
} zb_root_t;

#define ZB_ROOT_CONNS0 64 /* connections before the root's arrays grow */

/* The roots this process started and has not joined yet, so
 * zb_tcp_root_stop can find one by id and finished ones get joined. */
static pthread_mutex_t zb_roots_lock = PTHREAD_MUTEX_INITIALIZER;
static zb_root_t* zb_roots;

static void zb_root_free(zb_root_t* root) {
  close(root->stop_rd);
  close(root->stop_wr);
  free(root);
}

/* Joins the roots whose threads have finished; called without the lock. */
static void zb_roots_reap(void) {
  zb_root_t* done = NULL;
  pthread_mutex_lock(&zb_roots_lock);
  for (zb_root_t** p = &zb_roots; *p;) {
    zb_root_t* r = *p;
    if (r->done && r->pid == getpid()) {
      *p = r->next;
      r->next = done;
      done = r;
    } else {
      p = &r->next;
    }
  }
  pthread_mutex_unlock(&zb_roots_lock);
  while (done) {
    zb_root_t* r = done;
    done = r->next;
    pthread_join(r->thread, NULL);
    zb_root_free(r);
  }
}

/* At exit: stops (or lets finish answering) and joins every root of this
 * process, so none is left running while the process's libraries are torn
 * down, and none is left finished but not joined. */
static void zb_roots_end(void) {
  for (;;) {
    zb_root_t* found = NULL;
    pthread_mutex_lock(&zb_roots_lock);
    for (zb_root_t** p = &zb_roots; *p; p = &(*p)->next)
      if ((*p)->pid == getpid()) {
        found = *p;
        *p = found->next;
        break;
      }
    pthread_mutex_unlock(&zb_roots_lock);
    if (found == NULL) return;
    char one = 1;
    if (write(found->stop_wr, &one, 1) != 1) ZU_WARN("bootstrap: cannot stop the root");
    pthread_join(found->thread, NULL);
    zb_root_free(found);
  }
}

/* libcrypto registers its own clean-up with atexit when it initialises;
 * zb_roots_end is registered after it, so it runs before it. */
static void zb_roots_at_exit(void) {
  OPENSSL_init_crypto(0, NULL);
  atexit(zb_roots_end);
}

void zb_tcp_root_stop(const zcclUniqueId* id) {
  uint8_t secret[16];
  zb_id_secret(id, secret);
  zb_root_t* found = NULL;
  pthread_mutex_lock(&zb_roots_lock);
  for (zb_root_t** p = &zb_roots; *p; p = &(*p)->next)
    if ((*p)->pid == getpid() && memcmp((*p)->secret, secret, 16) == 0) {
      found = *p;
      *p = found->next; /* this caller joins it, no other */
      break;
    }
  pthread_mutex_unlock(&zb_roots_lock);
  if (found) {
    char one = 1;
    if (write(found->stop_wr, &one, 1) != 1) ZU_WARN("bootstrap: cannot stop the root");
    pthread_join(found->thread, NULL);
    zb_root_free(found);
  }
  zb_roots_reap();
}

/* The connections of one root and what they have joined. */
typedef struct {
  const uint8_t* secret;
  zb_conn_t** conns;
  int n, cap;
  int unauth;
  uint64_t seq;
  zb_group_t* groups;
  int ngroups, gcap;
  double accept_after; /* out of descriptors: no accept before then */
  int formed;      /* the job formed: no more joining */
  uint8_t* table;  /* the formed job's table */
} zb_serve_t;

static void zb_conn_close(zb_serve_t* s, int i) {
  zb_conn_t* c = s->conns[i];
  if (c->state == ZB_CONN_HELLO) s->unauth--;
  if (c->state == ZB_CONN_JOINED)
    for (int g = 0; g < s->ngroups; g++)
      if (s->groups[g].nranks == c->h.nranks && s->groups[g].bloblen == c->h.bloblen) s->groups[g].count--;
  close(c->fd);
  free(c->blob);
  free(c);
  s->conns[i] = s->conns[--s->n];
}

/* Queues an answer (status 0: with the table) and its MAC for c. */
static void zb_conn_answer(zb_serve_t* s, zb_conn_t* c, int status, const char* why, int32_t nranks,
                           uint32_t bloblen, const uint8_t* table, double deadline) {
  memset(&c->a, 0, sizeof c->a);
  c->a.magic = ZB_TCP_MAGIC;
  c->a.status = status;
  c->a.nranks = nranks;
  c->a.bloblen = bloblen;
  snprintf(c->a.why, sizeof c->a.why, "%s", why);
  c->table = status == 0 ? table : NULL;
  c->table_len = status == 0 ? (size_t)nranks * bloblen : 0;
  c->sent = 0;
  c->state = ZB_CONN_ANSWER;
  c->deadline = deadline;
  if (zb_answer_mac(s->secret, c->h.nonce, c->nonce, &c->a, c->table, c->table_len, c->mac) != 0) {
    /* No MAC, no answer the rank would believe: it hears nothing. */
    ZU_WARN("bootstrap root: HMAC-SHA256 failed (libcrypto)");
    c->deadline = 0;
  }
}

/* Sends what c's answer has left; 1 when all of it is out, -1 on error. */
static int zb_conn_send(zb_conn_t* c) {
  for (;;) {
    struct iovec v[3] = {{&c->a, sizeof c->a}, {(void*)c->table, c->table_len}, {c->mac, ZB_MAC}};
    size_t skip = c->sent;
    int first = 0;
    while (first < 3 && skip >= v[first].iov_len) skip -= v[first++].iov_len;
    if (first == 3) return 1;
    v[first].iov_base = (uint8_t*)v[first].iov_base + skip;
    v[first].iov_len -= skip;
    struct msghdr m = {.msg_iov = v + first, .msg_iovlen = (size_t)(3 - first)};
    ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    c->sent += (size_t)n;
  }
}

/* c's hello is whole and its MAC right: it joins its group, is refused, or
 * (its group complete) forms the job. */
static void zb_conn_joined(zb_serve_t* s, zb_conn_t* c, double root_deadline) {
  const zb_hello_t* h = &c->h;
  char why[128] = "";
  s->unauth--;
  c->state = ZB_CONN_JOINED;
  c->deadline = root_deadline;
  if (h->nranks < 1 || h->nranks > ZB_MAX_RANKS)
    snprintf(why, sizeof why, "rank %d says nranks=%d, outside [1, %d]", h->rank, h->nranks, ZB_MAX_RANKS);
  else if (h->rank < 0 || h->rank >= h->nranks)
    snprintf(why, sizeof why, "rank %d is outside [0, %d)", h->rank, h->nranks);
  for (int i = 0; !why[0] && i < s->n; i++) {
    const zb_conn_t* o = s->conns[i];
    if (o != c && o->state == ZB_CONN_JOINED && o->h.rank == h->rank && o->h.nranks == h->nranks &&
        o->h.bloblen == h->bloblen)
      snprintf(why, sizeof why, "rank %d joined twice", h->rank);
  }
  if (why[0]) { /* refused at once, counted in no group */
    zb_conn_answer(s, c, zcclInvalidUsage, why, h->nranks, h->bloblen, NULL, zu_now() + ZB_ANSWER_SECONDS);
    return;
  }
  zb_group_t* g = NULL;
  for (int i = 0; i < s->ngroups && !g; i++)
    if (s->groups[i].nranks == h->nranks && s->groups[i].bloblen == h->bloblen) g = &s->groups[i];
  if (g == NULL) {
    if (s->ngroups == s->gcap) {
      int cap = s->gcap ? 2 * s->gcap : 4;
      zb_group_t* more = realloc(s->groups, sizeof *more * (size_t)cap);
      if (more == NULL) {
        zb_conn_answer(s, c, zcclSystemError, "the bootstrap root is out of memory", h->nranks, h->bloblen, NULL,
                       zu_now() + ZB_ANSWER_SECONDS);
        return;
      }
      s->groups = more;
      s->gcap = cap;
    }
    g = &s->groups[s->ngroups++];
    *g = (zb_group_t){h->nranks, h->bloblen, 0};
  }
  g->count++;
  if (g->count < g->nranks) return;

  /* The job: g's ranks get the table, every other joined rank a refusal. */
  const int32_t nranks = g->nranks;
  const uint32_t bloblen = g->bloblen;
  s->formed = 1;
  s->table = calloc((size_t)nranks, bloblen ? bloblen : 1);
  double answer_deadline = zu_now() + ZB_ANSWER_SECONDS;
  for (int i = 0; i < s->n; i++) {
    zb_conn_t* o = s->conns[i];
    if (o->state != ZB_CONN_JOINED || o->h.nranks != nranks || o->h.bloblen != bloblen) continue;
    if (s->table && bloblen) memcpy(s->table + (size_t)o->h.rank * bloblen, o->blob, bloblen);
  }
  for (int i = 0; i < s->n; i++) {
    zb_conn_t* o = s->conns[i];
    if (o->state != ZB_CONN_JOINED) continue;
    if (s->table == NULL) {
      zb_conn_answer(s, o, zcclSystemError, "the bootstrap root is out of memory", o->h.nranks, o->h.bloblen, NULL,
                     answer_deadline);
    } else if (o->h.nranks == nranks && o->h.bloblen == bloblen) {
      zb_conn_answer(s, o, 0, "", nranks, bloblen, s->table, answer_deadline);
    } else {
      snprintf(why, sizeof why, "rank %d says nranks=%d with %u address bytes; the job formed with %d ranks, %u bytes",
               o->h.rank, o->h.nranks, o->h.bloblen, nranks, bloblen);
      zb_conn_answer(s, o, zcclInvalidUsage, why, o->h.nranks, o->h.bloblen, NULL, answer_deadline);
    }
  }
  ZU_INFO(ZU_LOG_BOOTSTRAP, "bootstrap root: %d ranks joined (%u address bytes each)", nranks, bloblen);
}

/* Reads what c has sent of its hello; drops it (returns -1) when it is not
 * a hello keyed by the secret. */
static int zb_conn_read(zb_serve_t* s, zb_conn_t* c, double root_deadline) {
  for (;;) {
    size_t want = c->got < sizeof c->h ? sizeof c->h - c->got : sizeof c->h + c->h.bloblen - c->got;
    if (want == 0) break;
    uint8_t* dst = c->got < sizeof c->h ? (uint8_t*)&c->h + c->got : c->blob + (c->got - sizeof c->h);
    ssize_t n = recv(c->fd, dst, want, MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    if (n == 0) return -1;
    c->got += (size_t)n;
    if (c->got == sizeof c->h) { /* the header: check what it can say before the blob */
      if (c->h.magic != ZB_TCP_MAGIC || c->h.bloblen > ZB_MAX_BLOB) return -1;
      if (c->h.bloblen && (c->blob = malloc(c->h.bloblen)) == NULL) return -1;
    }
  }
  uint8_t mac[ZB_MAC];
  if (zb_hello_mac(s->secret, c->nonce, &c->h, c->blob, mac) != 0 || CRYPTO_memcmp(mac, c->h.mac, ZB_MAC) != 0)
    return -1;
  zb_conn_joined(s, c, root_deadline);
  return 0;
}

/* Drops the connection that has waited longest without proving the secret. */
static void zb_drop_oldest(zb_serve_t* s) {
  int oldest = -1;
  for (int i = 0; i < s->n; i++)
    if (s->conns[i]->state == ZB_CONN_HELLO && (oldest < 0 || s->conns[i]->seq < s->conns[oldest]->seq)) oldest = i;
  if (oldest >= 0) zb_conn_close(s, oldest);
}

static void zb_accept(zb_serve_t* s, int listen_fd) {
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && s->unauth > 0) {
        /* Out of descriptors: a stranger's slot is worth less than a rank's. */
        zb_drop_oldest(s);
        continue;
      }
      /* Out of descriptors with only ranks to keep: ask again in a while
       * rather than spin on a listening socket that stays readable. */
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        s->accept_after = zu_now() + 0.1;
      return;
    }
    if (s->n == s->cap) {
      int cap = s->cap ? 2 * s->cap : 64;
      zb_conn_t** more = realloc(s->conns, sizeof *more * (size_t)cap);
      if (more == NULL) {
        close(fd);
        return;
      }
      s->conns = more;
      s->cap = cap;
    }
    zb_conn_t* c = calloc(1, sizeof *c);
    zb_challenge_t ch = {.magic = ZB_TCP_MAGIC};
    /* A fresh socket's buffer takes the challenge at once; if not, it is no rank. */
    if (c == NULL || getrandom(ch.nonce, ZB_NONCE, 0) != ZB_NONCE ||
        send(fd, &ch, sizeof ch, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof ch) {
      close(fd);
      free(c);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->state = ZB_CONN_HELLO;
    c->seq = s->seq++;
    c->deadline = zu_now() + ZB_HELLO_SECONDS;
    memcpy(c->nonce, ch.nonce, ZB_NONCE);
    s->conns[s->n++] = c;
    s->unauth++;
    if (s->unauth > ZB_MAX_UNAUTH) {
      zb_drop_oldest(s);
    }
  }
}

/* The root: serves every connection until a group of ranks is complete and
 * has its answers, the deadline passes, or it is stopped before forming. */
static void* zb_root_main(void* arg) {
  zb_root_t* self = arg;
  const double deadline = zu_now() + self->timeout;
  zb_serve_t s = {.secret = self->secret, .conns = self->conns, .cap = ZB_ROOT_CONNS0};
  int listen_fd = self->fd, stopping = 0;
  struct pollfd* pfd = self->pfd;
  int pcap = ZB_ROOT_CONNS0 + 2;
  for (;;) {
    double now = zu_now();
    if (!s.formed && (now >= deadline || stopping)) {
      /* Every joined rank hears why; strangers are just dropped. */
      char why[128];
      for (int i = 0; i < s.n; i++) {
        zb_conn_t* c = s.conns[i];
        if (c->state != ZB_CONN_JOINED) continue;
        int have = 0;
        for (int g = 0; g < s.ngroups; g++)
          if (s.groups[g].nranks == c->h.nranks && s.groups[g].bloblen == c->h.bloblen) have = s.groups[g].count;
        snprintf(why, sizeof why, "%s: %d of %d ranks joined",
                 stopping ? "the root was stopped" : "not every rank joined before ZCCL_BOOTSTRAP_TIMEOUT", have,
                 c->h.nranks);
        zb_conn_answer(&s, c, zcclRemoteError, why, c->h.nranks, c->h.bloblen, NULL, now + ZB_ANSWER_SECONDS);
      }
      s.formed = 1; /* nothing more joins: only answers are left */
      if (stopping) /* the ranks met another way: nobody waits for answers */
        for (int i = 0; i < s.n; i++) s.conns[i]->deadline = 0;
    }
    if (s.formed && listen_fd >= 0) {
      close(listen_fd); /* late comers are refused by the kernel */
      listen_fd = -1;
      for (int i = s.n - 1; i >= 0; i--)
        if (s.conns[i]->state != ZB_CONN_ANSWER) zb_conn_close(&s, i);
    }
    /* Expired connections go; answers are pushed. */
    double next = s.formed ? now + 1.0 : deadline;
    for (int i = s.n - 1; i >= 0; i--) {
      zb_conn_t* c = s.conns[i];
      int done = 0;
      if (c->state == ZB_CONN_ANSWER) done = zb_conn_send(c);
      if (done != 0 || now >= c->deadline) {
        zb_conn_close(&s, i);
        continue;
      }
      if (c->deadline < next) next = c->deadline;
    }
    if (s.formed && s.n == 0) break;
    if (pcap < s.n + 2) {
      int cap = 2 * (s.n + 2);
      struct pollfd* more = realloc(pfd, sizeof *more * (size_t)cap);
      if (more == NULL) break; /* out of memory: the ranks time out */
      pfd = more;
      pcap = cap;
    }
    int np = 0, accepting = listen_fd >= 0 && now >= s.accept_after;
    if (listen_fd >= 0 && !accepting && s.accept_after < next) next = s.accept_after;
    pfd[np++] = (struct pollfd){accepting ? listen_fd : -1, POLLIN, 0}; /* -1: ignored */
    pfd[np++] = (struct pollfd){s.formed ? -1 : self->stop_rd, POLLIN, 0};
    for (int i = 0; i < s.n; i++)
      pfd[np++] = (struct pollfd){s.conns[i]->fd, (short)(s.conns[i]->state == ZB_CONN_ANSWER ? POLLOUT : POLLIN), 0};
    double left = next - zu_now();
    int ready = poll(pfd, (nfds_t)np, left > 0 ? (int)(left * 1000) + 1 : 0);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (pfd[1].revents) stopping = 1;
    /* Connections first (by fd, since closing reorders the array), then new ones. */
    for (int k = 2; k < np; k++) {
      if (!pfd[k].revents) continue;
      int i = 0;
      while (i < s.n && s.conns[i]->fd != pfd[k].fd) i++;
      if (i == s.n) continue;
      zb_conn_t* c = s.conns[i];
      if (s.formed && c->state != ZB_CONN_ANSWER) continue; /* too late: closed above, next turn */
      if (c->state == ZB_CONN_HELLO) {
        if (zb_conn_read(&s, c, deadline) != 0) {
          ZU_INFO(ZU_LOG_BOOTSTRAP, "bootstrap root: dropped a connection that did not prove the id's secret");
          zb_conn_close(&s, i);
        }
      } else if (c->state == ZB_CONN_JOINED) {
        /* A joined rank says nothing more: bytes or a hang-up mean it left. */
        zb_conn_close(&s, i);
      } else if (zb_conn_send(c) != 0) {
        zb_conn_close(&s, i);
      }
    }
    if (listen_fd >= 0 && !s.formed && (pfd[0].revents & POLLIN)) zb_accept(&s, listen_fd);
  }
  for (int i = s.n - 1; i >= 0; i--) zb_conn_close(&s, i);
  if (listen_fd >= 0) close(listen_fd);
  free(s.conns);
  free(s.groups);
  free(s.table);
  free(pfd);
  pthread_mutex_lock(&zb_roots_lock);
  self->done = 1;
  pthread_mutex_unlock(&zb_roots_lock);
  return NULL;
}

/* The IPv4 address to listen on: ifname, else the first up non-loopback
 * interface, else loopback. */
static int zb_pick_address(const char* ifname, struct in_addr* out) {
  struct ifaddrs *ifs, *i;
  int found = 0;
  out->s_addr = htonl(INADDR_LOOPBACK);
  if (getifaddrs(&ifs) != 0) return ifname && ifname[0] ? -1 : 0;
  for (i = ifs; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    int loop = (i->ifa_flags & IFF_LOOPBACK) != 0;
    if (ifname && ifname[0] ? strcmp(i->ifa_name, ifname) == 0 : !loop) {
      *out = ((struct sockaddr_in*)i->ifa_addr)->sin_addr;
      found = 1;
    }
  }
  freeifaddrs(ifs);
  return (ifname && ifname[0] && !found) ? -1 : 0;
}

zcclResult_t zb_tcp_root_start(const char* ifname, double timeout, zcclUniqueId* id) {
  static pthread_once_t at_exit = PTHREAD_ONCE_INIT;
  pthread_once(&at_exit, zb_roots_at_exit);
  zb_roots_reap(); /* roots that ended on their own since the last call */
  struct in_addr ip;
  ZU_RETURN_ERR_IF(zb_pick_address(ifname, &ip) != 0, zcclInvalidArgument,
                   "ZCCL_SOCKET_IFNAME=%s: no such IPv4 interface that is up", ifname);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ZU_RETURN_ERR_IF(fd < 0, zcclSystemError, "bootstrap: socket: %s", strerror(errno));
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = ip, .sin_port = 0};
  socklen_t len = sizeof sa;
  if (bind(fd, (struct sockaddr*)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, (struct sockaddr*)&sa, &len) != 0) {
    int e = errno;
    close(fd);
    return ZU_ERROR(zcclSystemError, "bootstrap: cannot listen on %s: %s", inet_ntoa(ip), strerror(e));
  }
  zcclResult_t res = zb_id_create(id);
  if (res != zcclSuccess) {
    close(fd);
    return res;
  }
  zb_id_set_tcp(id, ip.s_addr, sa.sin_port);
  zb_root_t* root = calloc(1, sizeof *root);
  zb_conn_t** conns = malloc(sizeof *conns * ZB_ROOT_CONNS0);
  struct pollfd* pfd = malloc(sizeof *pfd * (ZB_ROOT_CONNS0 + 2));
  int stop[2];
  if (root == NULL || conns == NULL || pfd == NULL || pipe2(stop, O_CLOEXEC) != 0) {
    free(root);
    free(conns);
    free(pfd);
    close(fd);
    return ZU_ERROR(zcclSystemError, "bootstrap: out of memory or file descriptors");
  }
  root->conns = conns; /* the thread's from now on: it frees them */
  root->pfd = pfd;
  root->fd = fd;
  root->stop_rd = stop[0];
  root->stop_wr = stop[1];
  root->timeout = timeout;
  root->pid = getpid();
  zb_id_secret(id, root->secret);
  /* Registered before it runs: its `done` and `next` are the registry's. */
  pthread_mutex_lock(&zb_roots_lock);
  int rc = pthread_create(&root->thread, NULL, zb_root_main, root);
  if (rc == 0) {
    root->next = zb_roots;
    zb_roots = root;
  }
  pthread_mutex_unlock(&zb_roots_lock);
  if (rc != 0) {
    close(fd);
    free(conns);
    free(pfd);
    zb_root_free(root);
    return ZU_ERROR(zcclSystemError, "bootstrap: cannot start the root thread: %s", strerror(rc));
  }
  ZU_INFO(ZU_LOG_BOOTSTRAP, "bootstrap root listening on %s:%u", inet_ntoa(ip), ntohs(sa.sin_port));
  return zcclSuccess;
}

/* ---- a rank ----------------------------------------------------------- */

/* Reads or writes exactly len bytes before the deadline; 0 ok, -1 error or
 * time out. */
static int zb_io(int fd, void* buf, size_t len, double deadline, int writing) {
  uint8_t* p = buf;
  while (len > 0) {
    double left = deadline - zu_now();
    if (left <= 0) return -1;
    struct pollfd pfd = {fd, (short)(writing ? POLLOUT : POLLIN), 0};
    int r = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

zcclResult_t zb_tcp_allgather(const zcclUniqueId* id, int rank, int nranks, const void* blob, size_t len,
                              void* table, double timeout) {
  ZU_RETURN_ERR_IF(len > ZB_MAX_BLOB, zcclInternalError, "bootstrap: address of %zu bytes too long", len);
  uint32_t ip;
  uint16_t port;
  ZU_RETURN_ERR_IF(zb_id_get_tcp(id, &ip, &port) != 0, zcclInvalidArgument,
                   "the unique id has no TCP root (not from zcclGetUniqueId?)");
  uint8_t secret[16];
  zb_id_secret(id, secret);
  double deadline = zu_now() + timeout;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port};
  sa.sin_addr.s_addr = ip;
  int fd = -1;
  /* The root may not listen yet when ranks start: retry until the deadline. */
  while (zu_now() < deadline) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr*)&sa, sizeof sa) == 0) break;
    if (fd >= 0) close(fd);
    fd = -1;
    usleep(20000);
  }
  ZU_RETURN_ERR_IF(fd < 0, zcclRemoteError, "bootstrap: cannot reach the root %s:%u within %.0f s",
                   inet_ntoa(sa.sin_addr), ntohs(port), timeout);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  zb_challenge_t ch;
  zb_hello_t h = {.magic = ZB_TCP_MAGIC, .rank = rank, .nranks = nranks, .bloblen = (uint32_t)len};
  zb_answer_t a;
  uint8_t mac[ZB_MAC], want[ZB_MAC];
  zcclResult_t res = zcclSuccess;
  /* The root gives up at its own ZCCL_BOOTSTRAP_TIMEOUT and says which
   * ranks are missing: wait a little longer than it for that answer. */
  double answer_deadline = zu_now() + timeout + 2.0;
  if (zb_io(fd, &ch, sizeof ch, deadline, 0) != 0 || ch.magic != ZB_TCP_MAGIC) {
    res = ZU_ERROR(zcclRemoteError, "bootstrap: rank %d of %d: no challenge from the root %s:%u (another zccl "
                   "version, or not a zccl root?)", rank, nranks, inet_ntoa(sa.sin_addr), ntohs(port));
    goto out;
  }
  if (getrandom(h.nonce, ZB_NONCE, 0) != ZB_NONCE || zb_hello_mac(secret, ch.nonce, &h, blob, h.mac) != 0) {
    res = ZU_ERROR(zcclSystemError, "bootstrap: rank %d: cannot make the hello (getrandom or libcrypto failed)", rank);
    goto out;
  }
  if (zb_io(fd, &h, sizeof h, deadline, 1) != 0 || (len && zb_io(fd, (void*)blob, len, deadline, 1) != 0) ||
      zb_io(fd, &a, sizeof a, answer_deadline, 0) != 0) {
    res = ZU_ERROR(zcclRemoteError,
                   "bootstrap: rank %d of %d: no answer from the root within ZCCL_BOOTSTRAP_TIMEOUT (%.0f s)", rank,
                   nranks, timeout);
    goto out;
  }
  size_t table_len = a.status == 0 ? (size_t)nranks * len : 0;
  if (a.magic != ZB_TCP_MAGIC || a.nranks != nranks || a.bloblen != len) {
    res = ZU_ERROR(zcclRemoteError, "bootstrap: rank %d of %d: the root's answer does not fit this rank", rank,
                   nranks);
    goto out;
  }
  if ((table_len && zb_io(fd, table, table_len, answer_deadline, 0) != 0) ||
      zb_io(fd, mac, ZB_MAC, answer_deadline, 0) != 0) {
    res = ZU_ERROR(zcclRemoteError, "bootstrap: rank %d: the root's table did not arrive", rank);
    goto out;
  }
  if (zb_answer_mac(secret, h.nonce, ch.nonce, &a, table, table_len, want) != 0 ||
      CRYPTO_memcmp(mac, want, ZB_MAC) != 0) {
    res = ZU_ERROR(zcclRemoteError,
                   "bootstrap: rank %d: the answer from %s:%u does not prove the id's secret (not this id's root)",
                   rank, inet_ntoa(sa.sin_addr), ntohs(port));
    goto out;
  }
  if (a.status != 0) {
    a.why[sizeof a.why - 1] = '\0';
    res = ZU_ERROR((zcclResult_t)a.status, "bootstrap: rank %d of %d refused: %s", rank, nranks, a.why);
  }
out:
  close(fd);
  return res;
}
