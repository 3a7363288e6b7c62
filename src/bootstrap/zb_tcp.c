/* The unique-id bootstrap over TCP (NCCL's model). zcclGetUniqueId starts a
 * root thread listening on the chosen interface; its address, port and a
 * random 128-bit secret go into the id. Every rank connects, proves the
 * secret and sends its blob (a worker address); once all nranks have arrived
 * the root sends each the whole table and exits. A connection with the wrong
 * secret is dropped without disturbing the others; a duplicate rank or a
 * different nranks gets an error reply; every wait has a deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zb_bootstrap.h"
#include "zu_error.h"
#include "zu_time.h"

#define ZB_TCP_MAGIC 0x5a425450u /* "PTBZ" */
#define ZB_MAX_RANKS 65536
#define ZB_MAX_BLOB 4096

typedef struct {
  uint32_t magic;
  uint8_t secret[16];
  int32_t rank, nranks;
  uint32_t bloblen;
} zb_hello_t;

typedef struct {
  int32_t status; /* 0 ok, else a zcclResult_t */
  char why[124];
} zb_reply_t;

typedef struct zb_root {
  int fd;
  int stop_rd, stop_wr; /* a byte on this pipe stops the root */
  uint8_t secret[16];
  double timeout;
  struct zb_root* next; /* in zb_roots while running */
} zb_root_t;

/* The roots this process runs, so zb_tcp_root_stop can find one by id. */
static pthread_mutex_t zb_roots_lock = PTHREAD_MUTEX_INITIALIZER;
static zb_root_t* zb_roots;

void zb_tcp_root_stop(const zcclUniqueId* id) {
  uint8_t secret[16];
  zb_id_secret(id, secret);
  pthread_mutex_lock(&zb_roots_lock);
  for (zb_root_t* r = zb_roots; r; r = r->next)
    if (memcmp(r->secret, secret, 16) == 0) {
      char one = 1;
      if (write(r->stop_wr, &one, 1) != 1) ZU_WARN("bootstrap: cannot stop the root");
    }
  pthread_mutex_unlock(&zb_roots_lock);
}

static void zb_root_unlink(zb_root_t* root) {
  pthread_mutex_lock(&zb_roots_lock);
  for (zb_root_t** p = &zb_roots; *p; p = &(*p)->next)
    if (*p == root) {
      *p = root->next;
      break;
    }
  pthread_mutex_unlock(&zb_roots_lock);
  close(root->stop_rd);
  close(root->stop_wr);
  close(root->fd);
  free(root);
}

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

static void zb_reply(int fd, int status, const char* why, double deadline) {
  zb_reply_t r;
  memset(&r, 0, sizeof r);
  r.status = status;
  snprintf(r.why, sizeof r.why, "%s", why);
  zb_io(fd, &r, sizeof r, deadline, 1);
}

/* The root: collects nranks hellos, then answers each with the table. */
static void* zb_root_main(void* arg) {
  zb_root_t* self = arg;
  /* Only the fields that never change: `next` is the registry's. */
  const int listen_fd = self->fd, stop_rd = self->stop_rd;
  const double timeout = self->timeout;
  uint8_t secret[16];
  memcpy(secret, self->secret, sizeof secret);
  double deadline = zu_now() + timeout;
  int nranks = -1, arrived = 0;
  uint32_t bloblen = 0;
  int* fds = NULL;
  uint8_t* table = NULL;
  while (nranks < 0 || arrived < nranks) {
    double left = deadline - zu_now();
    struct pollfd pfd[2] = {{listen_fd, POLLIN, 0}, {stop_rd, POLLIN, 0}};
    if (left <= 0) break;
    int ready = poll(pfd, 2, (int)(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue; /* a signal to this thread: keep waiting */
    if (ready <= 0 || pfd[1].revents) break;
    int fd = accept(listen_fd, NULL, NULL);
    if (fd < 0) continue;
    zb_hello_t h;
    double conn_deadline = zu_now() + 5.0 < deadline ? zu_now() + 5.0 : deadline;
    if (zb_io(fd, &h, sizeof h, conn_deadline, 0) != 0 || h.magic != ZB_TCP_MAGIC ||
        memcmp(h.secret, secret, 16) != 0) {
      ZU_INFO(ZU_LOG_BOOTSTRAP, "bootstrap root: dropped a connection without the id's secret");
      close(fd); /* a stranger: no reply, no effect on the others */
      continue;
    }
    if (nranks < 0) {
      if (h.nranks < 1 || h.nranks > ZB_MAX_RANKS || h.bloblen > ZB_MAX_BLOB) {
        zb_reply(fd, zcclInvalidArgument, "bad nranks or address length", conn_deadline);
        close(fd);
        continue;
      }
      nranks = h.nranks;
      bloblen = h.bloblen;
      fds = malloc(sizeof(int) * (size_t)nranks);
      table = calloc((size_t)nranks, bloblen ? bloblen : 1);
      if (!fds || !table) { /* the first rank hears why; the others time out */
        zb_reply(fd, zcclSystemError, "the bootstrap root is out of memory", conn_deadline);
        close(fd);
        break;
      }
      for (int i = 0; i < nranks; i++) fds[i] = -1;
    }
    char why[124] = "";
    if (h.nranks != nranks)
      snprintf(why, sizeof why, "rank %d says nranks=%d, the first rank said %d", h.rank, h.nranks, nranks);
    else if (h.bloblen != bloblen)
      snprintf(why, sizeof why, "rank %d sends %u address bytes, others %u", h.rank, h.bloblen, bloblen);
    else if (h.rank < 0 || h.rank >= nranks)
      snprintf(why, sizeof why, "rank %d is outside [0, %d)", h.rank, nranks);
    else if (fds[h.rank] >= 0)
      snprintf(why, sizeof why, "rank %d joined twice", h.rank);
    if (why[0] || (bloblen && zb_io(fd, table + (size_t)h.rank * bloblen, bloblen, conn_deadline, 0) != 0)) {
      if (why[0]) zb_reply(fd, zcclInvalidUsage, why, conn_deadline);
      close(fd);
      continue;
    }
    fds[h.rank] = fd;
    arrived++;
  }
  int complete = nranks > 0 && arrived == nranks;
  for (int i = 0; fds && i < nranks; i++) {
    if (fds[i] < 0) continue;
    double d = zu_now() + 5.0;
    if (complete) {
      zb_reply(fds[i], 0, "", d);
      zb_io(fds[i], table, (size_t)nranks * bloblen, d, 1);
    } else {
      zb_reply(fds[i], zcclRemoteError, "not every rank joined before ZCCL_BOOTSTRAP_TIMEOUT", d);
    }
    close(fds[i]);
  }
  free(fds);
  free(table);
  zb_root_unlink(self);
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
  struct in_addr ip;
  ZU_RETURN_ERR_IF(zb_pick_address(ifname, &ip) != 0, zcclInvalidArgument,
                   "ZCCL_SOCKET_IFNAME=%s: no such IPv4 interface that is up", ifname);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ZU_RETURN_ERR_IF(fd < 0, zcclSystemError, "bootstrap: socket: %s", strerror(errno));
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = ip, .sin_port = 0};
  socklen_t len = sizeof sa;
  if (bind(fd, (struct sockaddr*)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, (struct sockaddr*)&sa, &len) != 0) {
    int e = errno;
    close(fd);
    return ZU_ERROR(zcclSystemError, "bootstrap: cannot listen on %s: %s", inet_ntoa(ip), strerror(e));
  }
  ZU_CHECK(zb_id_create(id));
  zb_id_set_tcp(id, ip.s_addr, sa.sin_port);
  zb_root_t* root = calloc(1, sizeof *root);
  int stop[2];
  if (root == NULL || pipe2(stop, O_CLOEXEC) != 0) {
    free(root);
    close(fd);
    return ZU_ERROR(zcclSystemError, "bootstrap: out of memory or file descriptors");
  }
  root->fd = fd;
  root->stop_rd = stop[0];
  root->stop_wr = stop[1];
  root->timeout = timeout;
  zb_id_secret(id, root->secret);
  pthread_mutex_lock(&zb_roots_lock);
  root->next = zb_roots;
  zb_roots = root;
  pthread_mutex_unlock(&zb_roots_lock);
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&th, &attr, zb_root_main, root);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    zb_root_unlink(root);
    return ZU_ERROR(zcclSystemError, "bootstrap: cannot start the root thread");
  }
  ZU_INFO(ZU_LOG_BOOTSTRAP, "bootstrap root listening on %s:%u", inet_ntoa(ip), ntohs(sa.sin_port));
  return zcclSuccess;
}

zcclResult_t zb_tcp_allgather(const zcclUniqueId* id, int rank, int nranks, const void* blob, size_t len,
                              void* table, double timeout) {
  ZU_RETURN_ERR_IF(len > ZB_MAX_BLOB, zcclInternalError, "bootstrap: address of %zu bytes too long", len);
  uint32_t ip;
  uint16_t port;
  ZU_RETURN_ERR_IF(zb_id_get_tcp(id, &ip, &port) != 0, zcclInvalidArgument,
                   "the unique id has no TCP root (not from zcclGetUniqueId?)");
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
  zb_hello_t h = {.magic = ZB_TCP_MAGIC, .rank = rank, .nranks = nranks, .bloblen = (uint32_t)len};
  zb_id_secret(id, h.secret);
  zb_reply_t r;
  zcclResult_t res = zcclSuccess;
  /* The root gives up at its own ZCCL_BOOTSTRAP_TIMEOUT and says which
   * ranks are missing: wait a little longer than it for that answer. */
  double reply_deadline = zu_now() + timeout + 2.0;
  if (zb_io(fd, &h, sizeof h, deadline, 1) != 0 || (len && zb_io(fd, (void*)blob, len, deadline, 1) != 0) /* only read */ ||
      zb_io(fd, &r, sizeof r, reply_deadline, 0) != 0) {
    res = ZU_ERROR(zcclRemoteError,
                   "bootstrap: rank %d of %d: no answer from the root within ZCCL_BOOTSTRAP_TIMEOUT (%.0f s)", rank,
                   nranks, timeout);
  } else if (r.status != 0) {
    r.why[sizeof r.why - 1] = '\0';
    res = ZU_ERROR((zcclResult_t)r.status, "bootstrap: rank %d of %d refused: %s", rank, nranks, r.why);
  } else if (zb_io(fd, table, (size_t)nranks * len, reply_deadline, 0) != 0) {
    res = ZU_ERROR(zcclRemoteError, "bootstrap: rank %d: the root's table did not arrive", rank);
  }
  close(fd);
  return res;
}
