/* The mailbox: small messages among the ranks of one machine go by plain
 * stores into the receiver's memory, a window UCX maps from it
 * (zt_window_*), instead of UCX messages. A message there costs a copy and
 * a flag; over UCX's shared-memory FIFO it also costs the claim of a FIFO
 * element that both processes write, which took most of a 64-byte
 * allreduce's time (docs/measurements/latency.md, "The mailbox").
 *
 * Rank r's window holds two slots per peer q (the exchange's parity): q
 * writes its message there, then a release store of the exchange's number
 * into the slot's flag; r waits for that number (acquire). Every exchange
 * goes from every rank to every other, so a rank that starts exchange m+2
 * has had every peer's message of m+1, which each sent after it had read
 * everything of m: the slot of m's parity is free again. Exchanges are
 * numbered per communicator, alike on every rank as long as their calls
 * are; calls that differ are caught by the frames' signatures and by the
 * wait's stall probes (zp_net.c), as with messages. */
#include <stdlib.h>
#include <string.h>

#include "zp_algo.h"
#include "zu_log.h"
#include "zu_param.h"

/* A slot: the flag (the exchange's number), the message's length, then the
 * message, 16-byte aligned. */
#define ZP_MBOX_HEAD 16
/* Mailboxes for communicators of at most this many ranks: the one-shot
 * allreduce that uses it reduces every rank's message on every rank. */
#define ZP_MBOX_MAX_RANKS 64
/* A wait fetches the first this many bytes of a message with its flag
 * (zp_mbox_poll); the rest as it reads them. */
#define ZP_MBOX_PREFETCH 512

/* What a rank tells every other of its window. */
typedef struct {
  uint64_t cap; /* ZCCL_MAILBOX_BYTES; 0: no window */
  zt_window_key_t key;
} zp_mbox_rec_t;

static size_t zp_mbox_slot(const zp_mbox_t* mb, int peer, uint64_t m) {
  return (2 * (size_t)peer + (size_t)(m & 1)) * mb->stride;
}

int zp_mbox_fits(const zp_ctx_t* ctx, size_t bytes) {
  return ctx->mbox && ctx->mbox->on && bytes <= ctx->mbox->cap && zd_dev_kind(ctx->dev) == ZD_HOST;
}

int zp_mbox_poll(zp_xfer_t* x, int n) {
  int events = 0;
  for (int i = 0; i < n; i++) {
    if (x[i].flag == NULL || x[i].req.done) continue;
    /* The message's other cache lines (count: the length expected) asked
     * for with the flag's: the flag is stored last, so lines fetched with
     * the one that shows it are mostly fresh, and the reduction does not
     * wait for each one after the flag (docs/measurements/latency.md). */
    for (size_t o = 64; o < ZP_MBOX_HEAD + x[i].count && o <= ZP_MBOX_PREFETCH; o += 64)
      __builtin_prefetch((const uint8_t*)x[i].flag + o);
    if (__atomic_load_n(x[i].flag, __ATOMIC_ACQUIRE) != x[i].want) continue;
    uint64_t len;
    memcpy(&len, (const uint8_t*)x[i].flag + 8, sizeof len);
    x[i].req.length = (size_t)len;
    x[i].req.status = 0;
    x[i].req.done = 1;
    events = 1;
  }
  return events;
}

zcclResult_t zp_mbox_exchange(const zp_ctx_t* ctx, const char* what, const void* msg, size_t bytes,
                              const uint8_t** in, size_t* got) {
  zp_mbox_t* mb = ctx->mbox;
  int N = ctx->nranks, r = ctx->rank, nx = 0;
  ZU_RETURN_ERR_IF(bytes > mb->cap, zcclInternalError, "%s: %zu bytes for a mailbox of %zu", what, bytes, mb->cap);
  uint64_t m = ++mb->calls, len = bytes;
  for (int s = 1; s < N; s++) {
    uint8_t* d = mb->peers[(r + s) % N] + zp_mbox_slot(mb, r, m);
    memcpy(d + ZP_MBOX_HEAD, msg, bytes);
    memcpy(d + 8, &len, sizeof len);
    __atomic_store_n((uint64_t*)d, m, __ATOMIC_RELEASE);
  }
  zp_xfer_t x[N];
  for (int s = 1; s < N; s++) {
    int from = (r + N - s) % N;
    uint8_t* slot = mb->mine + zp_mbox_slot(mb, from, m);
    in[from] = slot + ZP_MBOX_HEAD;
    x[nx] = (zp_xfer_t){.peer = from, .bytes = mb->cap, .count = bytes, .dtype = zcclUint8, .coll = 1, .var = 1,
                        .flag = (const uint64_t*)slot, .want = m};
    x[nx].req.peer = from;
    x[nx].req.is_recv = 1;
    nx++;
  }
  zp_mbox_poll(x, nx);
  int left = 0;
  for (int i = 0; i < nx; i++) left += !x[i].req.done;
  if (left) ZU_CHECK(zp_xfers_wait(ctx, what, x, nx));
  for (int i = 0; i < nx; i++) got[x[i].peer] = x[i].req.length;
  return zcclSuccess;
}

zcclResult_t zp_mbox_open(const zp_ctx_t* ctx, zp_mbox_t* mb) {
  int N = ctx->nranks, r = ctx->rank;
  const char* what = "mailbox setup";
  mb->on = 0;
  if (N < 2 || N > ZP_MBOX_MAX_RANKS) return zcclSuccess;
  int64_t cap = 0;
  ZU_CHECK(zu_param_int(ZU_PARAM_MAILBOX_BYTES, &cap));
  /* Every rank of the machine takes part, with or without a window of its
   * own, so that a rank whose setting or UCX differs turns it off for all. */
  zp_mbox_rec_t* rec = calloc((size_t)N, sizeof *rec);
  uint8_t* ok = calloc((size_t)N, 1);
  mb->peers = calloc((size_t)N, sizeof *mb->peers);
  if (rec == NULL || ok == NULL || mb->peers == NULL) {
    free(rec);
    free(ok);
    return ZU_ERROR(zcclSystemError, "%s: out of memory for %d ranks", what, N);
  }
  zcclResult_t res = zcclSuccess;
  void* base = NULL;
  if (cap > 0 && (uint64_t)cap < ((uint64_t)1 << 30)) {
    mb->cap = (size_t)cap;
    mb->stride = (ZP_MBOX_HEAD + mb->cap + 63) / 64 * 64;
    if (zt_window_open(ctx->w, 2 * (size_t)N * mb->stride, &base, &rec[r].key) != zcclSuccess) {
      ZU_INFO(ZU_LOG_NET, "%s: no window: %s", what, zu_error_last());
      base = NULL;
      memset(&rec[r].key, 0, sizeof rec[r].key);
    }
  }
  rec[r].cap = base ? (uint64_t)cap : 0;
  zp_xfer_t x[2 * N];
  int nx = 0;
  for (int p = 0; p < N; p++) {
    if (p == r) continue;
    zp_recv_at(ctx, &x[nx++], p, zp_sub(ZP_TAG_ALGO, ZP_MBOX_STEP, 0), &rec[p], sizeof *rec);
    zp_send_at(ctx, &x[nx++], p, zp_sub(ZP_TAG_ALGO, ZP_MBOX_STEP, 0), &rec[r], sizeof *rec);
  }
  ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nx), res, out);
  memset(ok, 1, (size_t)N);
  ok[r] = base != NULL;
  for (int p = 0; p < N && ok[r]; p++)
    if (p != r) {
      if (rec[p].cap == rec[r].cap) mb->peers[p] = zt_window_peer(ctx->w, p, &rec[p].key);
      ok[r] = mb->peers[p] != NULL;
    }
  /* On only where every rank mapped every peer's: each tells every other. */
  nx = 0;
  for (int p = 0; p < N; p++) {
    if (p == r) continue;
    zp_recv_at(ctx, &x[nx++], p, zp_sub(ZP_TAG_ALGO, ZP_MBOX_STEP + 1, 0), &ok[p], 1);
    zp_send_at(ctx, &x[nx++], p, zp_sub(ZP_TAG_ALGO, ZP_MBOX_STEP + 1, 0), &ok[r], 1);
  }
  ZU_CHECK_GOTO(zp_xfers_run(ctx, what, x, nx), res, out);
  mb->on = 1;
  for (int p = 0; p < N; p++) mb->on &= ok[p];
  mb->mine = base;
  mb->calls = 0;
  ZU_INFO(ZU_LOG_NET, "mailbox: %s (%s)", mb->on ? "on" : "off",
          mb->on ? "every rank maps every peer's window" : base ? "some rank cannot map a peer's window"
                                                             : "no window here (ZCCL_MAILBOX_BYTES, UCX)");
out:
  free(rec);
  free(ok);
  if (!mb->on) zp_mbox_close(ctx->w, mb);
  return res;
}

void zp_mbox_close(zt_worker_t* w, zp_mbox_t* mb) {
  if (w) zt_window_close(w);
  free(mb->peers);
  mb->peers = NULL;
  mb->mine = NULL;
  mb->on = 0;
}
