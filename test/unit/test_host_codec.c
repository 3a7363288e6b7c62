/* The host thread pool and the multi-threaded codec: every thread count
 * writes the single-threaded bytes and decodes to the same values. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "zd_host_codec.h"
#include "zd_pool.h"
#include "zu_param.h"

static atomic_int calls;
static atomic_long sum;

static void count_job(void* arg, int t, int n) {
  (void)arg;
  atomic_fetch_add(&calls, 1);
  atomic_fetch_add(&sum, t * 100 + n);
}

/* Jobs back to back (workers still polling) and apart (asleep), with the
 * poll on and off (ZCCL_POOL_SPIN_US). */
static void test_pool(void) {
  const char* spins[] = {"0", "100"};
  for (int sp = 0; sp < 2; sp++) {
    setenv("ZCCL_POOL_SPIN_US", spins[sp], 1);
    zu_param_reload(); /* pools made without a communicator */
    for (int size = 1; size <= 5; size++) {
      zd_pool_t* pool = NULL;
      CHECK_RES(zd_pool_create(size, &pool), zcclSuccess);
      CHECK(zd_pool_size(pool) == size);
      for (int rep = 0; rep < 50; rep++) {
        for (int want = 0; want <= size + 1; want++) {
          atomic_store(&calls, 0);
          atomic_store(&sum, 0);
          zd_pool_run(pool, want, count_job, NULL);
          int n = want <= 0 || want > size ? size : want;
          CHECK(atomic_load(&calls) == n);
          CHECK(atomic_load(&sum) == 100L * n * (n - 1) / 2 + (long)n * n);
        }
        if (rep % 10 == 9) usleep(400); /* past the poll: the workers sleep */
      }
      zd_pool_destroy(pool);
    }
  }
  zd_pool_t* bad = NULL;
  setenv("ZCCL_POOL_SPIN_US", "-1", 1);
  zu_param_reload();
  CHECK_RES(zd_pool_create(2, &bad), zcclInvalidArgument);
  CHECK(bad == NULL);
  unsetenv("ZCCL_POOL_SPIN_US");
  zu_param_reload();
  zd_pool_t* all = NULL;
  CHECK_RES(zd_pool_create(0, &all), zcclSuccess); /* hwloc's core count */
  CHECK(zd_pool_size(all) >= 1);
  zd_pool_destroy(all);
  zd_pool_destroy(NULL);
}

static void test_codec_threads(void) {
  const size_t counts[] = {0, 1, 4095, 4096 * 3 + 17, 200000};
  zd_pool_t* pool = NULL;
  CHECK_RES(zd_pool_create(4, &pool), zcclSuccess);
  /* The in-place hops' kept buffer, across every size below (grown, then
   * reused by smaller calls). */
  zd_scratch_t aside = {NULL, 0};
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
    size_t n = counts[ci];
    for (int dt = 0; dt < 2; dt++) {
      zcclDataType_t type = dt ? zcclFloat64 : zcclFloat32;
      size_t esize = dt ? 8 : 4;
      void* x = malloc(n * esize + 8);
      void* x2 = malloc(n * esize + 8);
      for (size_t i = 0; i < n; i++) {
        double v = 50.0 * sin((double)i * 0.003) + (i % 97 == 0 ? NAN : 0.0) + (i % 1000 < 30 ? -1e34 : 0.0);
        double w = 10.0 * cos((double)i * 0.01);
        if (dt) ((double*)x)[i] = v, ((double*)x2)[i] = w;
        else ((float*)x)[i] = (float)v, ((float*)x2)[i] = (float)w;
      }
      zc_params_t p = {type, 1e-3, 1, -1e34, 0, 0};
      size_t cap = zc_compress_bound(n, type, 0), s1n, s2n, tn, h1n, htn, got;
      uint8_t *s1 = malloc(cap), *s2 = malloc(cap), *st = malloc(cap), *h1 = malloc(cap), *ht = malloc(cap);
      void* y1 = malloc(n * esize + 8);
      void* yt = malloc(n * esize + 8);
      CHECK_RES(zc_compress(&p, x, n, s1, cap, &s1n, NULL, NULL), zcclSuccess);
      CHECK_RES(zc_compress(&p, x2, n, s2, cap, &s2n, NULL, NULL), zcclSuccess);
      CHECK_RES(zc_hop(zcclSum, s1, s1n, s2, s2n, h1, cap, &h1n), zcclSuccess);
      CHECK_RES(zc_decompress(s1, s1n, y1, n, &got, NULL, NULL), zcclSuccess);
      for (int threads = 1; threads <= 4; threads++) {
        CHECK_RES(zd_host_compress(pool, threads, &p, x, n, st, cap, &tn), zcclSuccess);
        CHECK(tn == s1n && memcmp(st, s1, s1n) == 0);
        CHECK_RES(zd_host_hop(pool, threads, NULL, zcclSum, s1, s1n, s2, s2n, ht, cap, &htn), zcclSuccess);
        CHECK(htn == h1n && memcmp(ht, h1, h1n) == 0);
        CHECK_RES(zd_host_decompress(pool, threads, s1, s1n, yt, n, &got), zcclSuccess);
        memcpy(ht, s1, s1n); /* in place over the first input */
        CHECK_RES(zd_host_hop(pool, threads, threads % 2 ? &aside : NULL, zcclSum, ht, s1n, s2, s2n, ht, cap, &htn),
                  zcclSuccess);
        CHECK(htn == h1n && memcmp(ht, h1, h1n) == 0);
        CHECK(aside.bytes >= cap && aside.p != NULL);
        void* kept = aside.p;
        CHECK(got == n && memcmp(yt, y1, n * esize) == 0);
        /* x with s2 in one pass: compress(x) then hop's bytes, out of place and over s2 */
        CHECK_RES(zd_host_hop_values(pool, threads, NULL, zcclSum, &p, x, n, s2, s2n, ht, cap, &htn), zcclSuccess);
        CHECK(htn == h1n && memcmp(ht, h1, h1n) == 0);
        memcpy(ht, s2, s2n);
        CHECK_RES(zd_host_hop_values(pool, threads, &aside, zcclSum, &p, x, n, ht, s2n, ht, cap, &htn), zcclSuccess);
        CHECK(htn == h1n && memcmp(ht, h1, h1n) == 0);
        CHECK(aside.p == kept); /* no larger than before: the same buffer */
      }
      /* Errors from worker threads reach the caller with their reason. */
      if (n > 5000) {
        CHECK_RES(zd_host_compress(pool, 4, &p, x, n, st, s1n / 2, &tn), zcclInvalidArgument);
        CHECK_LAST_ERROR_HAS("too small");
        s1[s1n - 3] ^= 0xff;
        zcclResult_t r = zd_host_decompress(pool, 4, s1, s1n, yt, n, &got);
        CHECK(r == zcclSuccess || r == zcclInvalidArgument);
        CHECK_RES(zd_host_decompress(pool, 4, s1, s1n - 1, yt, n, &got), zcclInvalidArgument);
        CHECK_RES(zd_host_hop_values(pool, 4, NULL, zcclSum, &p, x, n, s2, s2n, ht, s2n / 2, &htn),
                  zcclInvalidArgument);
        CHECK_LAST_ERROR_HAS("too small");
      }
      free(x); free(x2); free(s1); free(s2); free(st); free(h1); free(ht); free(y1); free(yt);
    }
  }
  zd_scratch_free(&aside);
  CHECK(aside.p == NULL && aside.bytes == 0);
  /* Without a pool: the calling thread alone. */
  float v[100] = {0};
  uint8_t s[4096];
  size_t sn;
  zc_params_t p = {zcclFloat32, 1e-2, 0, 0, 5, 0};
  CHECK_RES(zd_host_compress(NULL, 0, &p, v, 100, s, sizeof s, &sn), zcclSuccess);
  zd_pool_destroy(pool);
}

static void slow_chunk(void* arg) {
  (void)arg;
  usleep(300);
}

/* Thread 0 slowed down (its progress hook sleeps between chunks): the
 * others steal batches from the back of its range, and the stream is still
 * the one-thread stream, byte for byte. */
static void test_codec_stealing(void) {
  const size_t n = 300000;
  zd_pool_t* pool = NULL;
  CHECK_RES(zd_pool_create(4, &pool), zcclSuccess);
  float* x = malloc(n * sizeof *x);
  float* x2 = malloc(n * sizeof *x2);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(20.0 * sin((double)i * 0.001) + (i % 5000 < 600 ? 0.0 : 0.01 * (double)(i % 13)));
    x2[i] = (float)(5.0 * cos((double)i * 0.002));
  }
  zc_params_t p = {zcclFloat32, 1e-4, 0, 0, 0, 0};
  size_t cap = zc_compress_bound(n, zcclFloat32, 0), s1n, s2n, h1n, tn;
  uint8_t *s1 = malloc(cap), *s2 = malloc(cap), *h1 = malloc(cap), *st = malloc(cap);
  CHECK_RES(zc_compress(&p, x, n, s1, cap, &s1n, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_compress(&p, x2, n, s2, cap, &s2n, NULL, NULL), zcclSuccess);
  CHECK_RES(zc_hop(zcclSum, s1, s1n, s2, s2n, h1, cap, &h1n), zcclSuccess);
  unsigned long before = zd_host_stolen_batches();
  zd_host_set_progress(slow_chunk, NULL);
  for (int threads = 2; threads <= 4; threads++) {
    memset(st, 0xa5, cap);
    CHECK_RES(zd_host_compress(pool, threads, &p, x, n, st, cap, &tn), zcclSuccess);
    CHECK(tn == s1n && memcmp(st, s1, s1n) == 0);
    memset(st, 0xa5, cap);
    CHECK_RES(zd_host_hop_values(pool, threads, NULL, zcclSum, &p, x, n, s2, s2n, st, cap, &tn), zcclSuccess);
    CHECK(tn == h1n && memcmp(st, h1, h1n) == 0);
  }
  zd_host_set_progress(NULL, NULL);
  CHECK(zd_host_stolen_batches() > before);
  free(x); free(x2); free(s1); free(s2); free(h1); free(st);
  zd_pool_destroy(pool);
}

int main(void) {
  test_pool();
  test_codec_threads();
  test_codec_stealing();
  TEST_DONE();
}
