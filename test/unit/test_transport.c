/* The transport on its own: two workers in one process, driven by one
 * thread. Tagged messages complete out of order and match by tag only;
 * a receive learns the true length, a too-long message is an error that
 * writes nothing past the buffer; cancel; registrations are cached. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zc_szp.h"
#include "zccl_core.h"
#include "zt_transport.h"

static zt_worker_t* w[2];

/* The codec's hook, for both workers (one thread plays both ranks). */
static int hook_calls;
static void hook_both(void* arg, uint32_t done, uint32_t total) {
  (void)arg;
  hook_calls++;
  zt_progress_hook(w[0], done, total);
  zt_progress_hook(w[1], done, total);
}

static void progress_until(zt_req_t* reqs, int n) {
  for (long spins = 0; spins < 100000000L; spins++) {
    int done = 0;
    for (int i = 0; i < n; i++) done += reqs[i].done;
    if (done == n) return;
    zt_progress(w[0]);
    zt_progress(w[1]);
  }
  CHECK(!"requests completed"); /* (their zeroed status would read as success) */
}

int main(void) {
  for (int i = 0; i < 2; i++) CHECK_RES(zt_worker_create(&w[i]), zcclSuccess);
  uint8_t* table = calloc(2, ZCCL_ADDR_SLOT);
  for (int i = 0; i < 2; i++) {
    const void* a;
    size_t len;
    zt_worker_address(w[i], &a, &len);
    CHECK(len > 0 && len < ZCCL_ADDR_SLOT - 4);
    uint32_t l = (uint32_t)len;
    memcpy(table + (size_t)i * ZCCL_ADDR_SLOT, &l, 4);
    memcpy(table + (size_t)i * ZCCL_ADDR_SLOT + 4, a, len);
  }
  for (int i = 0; i < 2; i++) CHECK_RES(zt_worker_set_peers(w[i], 2, table, ZCCL_ADDR_SLOT), zcclSuccess);
  CHECK_RES(zt_worker_set_peers(w[0], 2, table, ZCCL_ADDR_SLOT), zcclInternalError); /* once only */

  /* Tags: 64 receives posted in order, sent in reverse, of growing sizes
   * (eager and rendezvous). Each lands in its own buffer. */
  enum { N = 64 };
  zt_req_t rr[N], sr[N];
  uint8_t* sb[N];
  uint8_t* rb[N];
  for (int k = 0; k < N; k++) {
    size_t len = (size_t)k * k * 97;
    sb[k] = malloc(len + 1);
    rb[k] = malloc(len + 1);
    for (size_t i = 0; i < len; i++) sb[k][i] = (uint8_t)(i * 31 + k);
    memset(rb[k], 0, len + 1);
    CHECK_RES(zt_irecv(w[1], 0, zt_tag(ZT_TAG_P2P, 0, (uint32_t)k, 3), ZT_TAG_MASK_ALL, rb[k], len, NULL, &rr[k]),
              zcclSuccess);
  }
  for (int k = N - 1; k >= 0; k--)
    CHECK_RES(zt_isend(w[0], 1, zt_tag(ZT_TAG_P2P, 0, (uint32_t)k, 3), sb[k], (size_t)k * k * 97, NULL, &sr[k]),
              zcclSuccess);
  progress_until(rr, N);
  progress_until(sr, N);
  int wrong = 0;
  for (int k = 0; k < N; k++) {
    size_t len = (size_t)k * k * 97;
    wrong += rr[k].status != 0 || rr[k].length != len || memcmp(sb[k], rb[k], len) != 0 || rb[k][len] != 0;
    wrong += sr[k].status != 0;
    free(sb[k]);
    free(rb[k]);
  }
  CHECK(wrong == 0);

  /* True length and truncation, eager and rendezvous sizes. */
  const size_t big_sizes[] = {100, 1 << 20};
  for (int s = 0; s < 2; s++) {
    size_t sent = big_sizes[s], room = sent / 10;
    uint8_t* src = calloc(1, sent);
    uint8_t* dst = malloc(room + 16);
    memset(dst, 0x5a, room + 16);
    zt_req_t r[2];
    uint64_t tag = zt_tag(ZT_TAG_COLL, 0, 99, (uint32_t)s);
    CHECK_RES(zt_irecv(w[1], 0, tag, ZT_TAG_MASK_ALL, dst, room, NULL, &r[0]), zcclSuccess);
    CHECK_RES(zt_isend(w[0], 1, tag, src, sent, NULL, &r[1]), zcclSuccess);
    progress_until(r, 2);
    CHECK(zt_req_truncated(&r[0]));
    CHECK(r[0].length == sent);
    CHECK(dst[room] == 0x5a && dst[room + 15] == 0x5a);
    CHECK(strlen(zt_req_error(&r[0])) > 0);
    free(src);
    free(dst);
  }
  /* A shorter message than posted: true length, success. */
  {
    uint8_t src[10] = {1, 2, 3}, dst[100];
    zt_req_t r[2];
    uint64_t tag = zt_tag(ZT_TAG_COLL, 0, 100, 0);
    CHECK_RES(zt_irecv(w[1], 0, tag, ZT_TAG_MASK_ALL, dst, sizeof dst, NULL, &r[0]), zcclSuccess);
    CHECK_RES(zt_isend(w[0], 1, tag, src, sizeof src, NULL, &r[1]), zcclSuccess);
    progress_until(r, 2);
    CHECK(r[0].status == 0 && r[0].length == 10 && dst[2] == 3);
  }
  /* Zero bytes, to itself. */
  {
    zt_req_t r[2];
    uint64_t tag = zt_tag(ZT_TAG_P2P, 1, 7, 0);
    CHECK_RES(zt_irecv(w[1], 1, tag, ZT_TAG_MASK_ALL, NULL, 0, NULL, &r[0]), zcclSuccess);
    CHECK_RES(zt_isend(w[1], 1, tag, NULL, 0, NULL, &r[1]), zcclSuccess);
    progress_until(r, 2);
    CHECK(r[0].status == 0 && r[0].length == 0 && r[1].status == 0);
  }
  /* A send that cannot start is done and failed (a waiter must not wait). */
  {
    zt_req_t r;
    uint8_t b = 1;
    CHECK_RES(zt_isend(w[0], 99, zt_tag(ZT_TAG_P2P, 0, 8, 0), &b, 1, NULL, &r), zcclInternalError);
    CHECK(r.done == 1 && r.status != 0);
  }
  /* Cancel a receive nobody sends to. */
  {
    uint8_t dst[8];
    zt_req_t r;
    CHECK_RES(zt_irecv(w[0], 1, zt_tag(ZT_TAG_P2P, 1, 12345, 0), ZT_TAG_MASK_ALL, dst, 8, NULL, &r), zcclSuccess);
    zt_progress(w[0]);
    CHECK(!r.done);
    zt_cancel(w[0], &r);
    progress_until(&r, 1);
    CHECK(r.done && r.status != 0);
  }
  /* Registrations: counted per (buf, len), found for any range inside one,
   * unmapped at the last deregistration; a message carries the mapping. */
  {
    size_t len = 1 << 20;
    char *src = malloc(len), *dst = malloc(len);
    void *h1 = NULL, *h2 = NULL, *hd = NULL;
    CHECK_RES(zt_mem_register(w[0], src, len, &h1), zcclSuccess);
    CHECK_RES(zt_mem_register(w[0], src, len, &h2), zcclSuccess);
    CHECK_RES(zt_mem_register(w[1], dst, len, &hd), zcclSuccess);
    CHECK(h1 != NULL && h1 == h2);
    CHECK(zt_mem_find(w[0], src, len) == h1 && zt_mem_find(w[0], src + 4096, 4096) == h1);
    CHECK(zt_mem_find(w[0], src + 1, len) == NULL && zt_mem_find(w[0], dst, 16) == NULL);
    for (size_t i = 0; i < len; i++) src[i] = (char)(i * 7);
    zt_req_t r[2];
    uint64_t tag = zt_tag(ZT_TAG_P2P, 0, 4242, 0);
    CHECK_RES(zt_irecv(w[1], 0, tag, ZT_TAG_MASK_ALL, dst, len, zt_mem_find(w[1], dst, len), &r[0]), zcclSuccess);
    CHECK_RES(zt_isend(w[0], 1, tag, src, len, zt_mem_find(w[0], src, len), &r[1]), zcclSuccess);
    progress_until(r, 2);
    CHECK(r[0].status == 0 && r[1].status == 0 && memcmp(src, dst, len) == 0);
    zt_mem_deregister(w[0], h1);
    CHECK(zt_mem_find(w[0], src, len) == h2); /* one registration left */
    zt_mem_deregister(w[0], h2);
    CHECK(zt_mem_find(w[0], src, len) == NULL);
    zt_mem_deregister(w[1], hd);
    free(src), free(dst);
  }
  /* Overlap: a rendezvous message posted before a chunked compression
   * completes during it, driven only by the codec's between-chunks hook. */
  {
    size_t len = 8u << 20, count = 1u << 22;
    uint8_t* src = malloc(len);
    uint8_t* dst = malloc(len);
    memset(src, 7, len);
    float* field = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) field[i] = (float)(i % 1000) * 0.01f;
    size_t cap = zc_compress_bound(count, zcclFloat32, 0), size = 0;
    void* stream = malloc(cap);
    zt_req_t r[2];
    uint64_t tag = zt_tag(ZT_TAG_COLL, 0, 6, 6);
    CHECK_RES(zt_irecv(w[1], 0, tag, ZT_TAG_MASK_ALL, dst, len, NULL, &r[0]), zcclSuccess);
    CHECK_RES(zt_isend(w[0], 1, tag, src, len, NULL, &r[1]), zcclSuccess);
    CHECK(!r[0].done);
    zc_params_t p = {.dtype = zcclFloat32, .eb = 1e-3};
    CHECK_RES(zc_compress(&p, field, count, stream, cap, &size, hook_both, NULL), zcclSuccess);
    CHECK(hook_calls > 1);
    CHECK(r[0].done && r[1].done && r[0].status == 0 && memcmp(src, dst, len) == 0);
    free(src), free(dst), free(field), free(stream);
  }
  CHECK(zt_peer_failed(w[0], 1) == 0);

  /* One thread drives both: a graceful close would wait for the other. */
  for (int i = 0; i < 2; i++) zt_worker_destroy(w[i], 0.0, 1);
  free(table);
  TEST_DONE();
}
