/* The first-fit allocator (src/device/zd_alloc.h) over a plain range of
 * host memory, no device: alignment of pieces, first fit, splitting and
 * merging of free pieces, the largest free piece, exhaustion (no piece,
 * never a crash), double and foreign puts refused, the bookkeeping's
 * growth, and a random sequence against a model of 64-byte units. Then the
 * host device's buffer pool on it (zd_buf_*): the pool made at the first
 * get, and a wrong put reported. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zd_alloc.h"
#include "zd_dev_impl.h"

/* A range handed to zd_alloc_provide, counting how often it is asked. */
typedef struct {
  void* base;
  size_t size;
  int calls;
  zcclResult_t fail; /* returned instead when not zcclSuccess */
} range_t;

static zcclResult_t range_mem(void* ctx, void** mem, size_t* size) {
  range_t* r = ctx;
  r->calls++;
  if (r->fail != zcclSuccess) return r->fail;
  *mem = r->base;
  *size = r->size;
  return zcclSuccess;
}

/* An allocator over units * ZD_ALIGN bytes of fresh memory (r->base, the
 * caller frees it). */
static void alloc_over(zd_alloc_t* a, range_t* r, size_t units) {
  memset(r, 0, sizeof *r);
  r->size = units * ZD_ALIGN;
  r->base = aligned_alloc(ZD_ALIGN, r->size);
  zd_alloc_init(a);
  CHECK_RES(zd_alloc_provide(a, range_mem, r), zcclSuccess);
}

static size_t largest(zd_alloc_t* a) {
  size_t n = (size_t)-1;
  CHECK(zd_alloc_largest(a, &n));
  return n;
}

static size_t off_of(const range_t* r, const void* p) { return (size_t)((const char*)p - (const char*)r->base); }

static void* get(zd_alloc_t* a, size_t bytes) {
  void* p = (void*)1;
  CHECK_RES(zd_alloc_get(a, bytes, &p), zcclSuccess);
  return p;
}

/* Without a range: no piece, no largest, nothing to put back. */
static void test_no_range(void) {
  zd_alloc_t a;
  zd_alloc_init(&a);
  size_t n = 7;
  CHECK(!zd_alloc_largest(&a, &n) && n == 7);
  CHECK(get(&a, 1) == NULL);
  char x;
  CHECK(!zd_alloc_put(&a, &x));
  CHECK(zd_alloc_outstanding(&a) == 0);
  zd_alloc_fini(&a);
}

/* The range is asked for once; a failure leaves the allocator without one,
 * and a later provide may still succeed. */
static void test_provide(void) {
  zd_alloc_t a;
  zd_alloc_init(&a);
  range_t r = {.fail = zcclSystemError};
  CHECK_RES(zd_alloc_provide(&a, range_mem, &r), zcclSystemError);
  CHECK(a.base == NULL && a.segs == NULL);
  r.fail = zcclSuccess;
  r.size = 4 * ZD_ALIGN;
  r.base = aligned_alloc(ZD_ALIGN, r.size);
  CHECK_RES(zd_alloc_provide(&a, range_mem, &r), zcclSuccess);
  CHECK_RES(zd_alloc_provide(&a, range_mem, &r), zcclSuccess);
  CHECK(r.calls == 2); /* the failed one and the first good one */
  CHECK(largest(&a) == r.size);
  zd_alloc_fini(&a);
  free(r.base);
}

/* Pieces start at multiples of ZD_ALIGN and take whole multiples: 0 bytes
 * take one unit, 65 bytes two. */
static void test_alignment(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, 16);
  char* p0 = get(&a, 0);
  char* p1 = get(&a, 1);
  char* p2 = get(&a, 65);
  char* p3 = get(&a, 64);
  CHECK(p0 == r.base);
  CHECK(off_of(&r, p1) == 64 && off_of(&r, p2) == 128 && off_of(&r, p3) == 256);
  CHECK((uintptr_t)p0 % ZD_ALIGN == 0 && (uintptr_t)p2 % ZD_ALIGN == 0);
  CHECK(largest(&a) == r.size - 320);
  CHECK(zd_alloc_outstanding(&a) == 4);
  CHECK(zd_alloc_put(&a, p0) && zd_alloc_put(&a, p1) && zd_alloc_put(&a, p2) && zd_alloc_put(&a, p3));
  CHECK(largest(&a) == r.size && a.nsegs == 1);
  zd_alloc_fini(&a);
  free(r.base);
}

/* A request takes the first free piece large enough, not the best one; a
 * larger free piece splits, the rest staying free right after. */
static void test_first_fit_and_split(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, 16);
  char* p[4];
  for (int i = 0; i < 4; i++) p[i] = get(&a, 4 * ZD_ALIGN); /* the whole range */
  CHECK(largest(&a) == 0);
  CHECK(zd_alloc_put(&a, p[1]) && zd_alloc_put(&a, p[3])); /* holes of 4 units at 4 and 12 */
  char* q = get(&a, ZD_ALIGN);
  CHECK(q == p[1]); /* the first hole, though both fit */
  CHECK(a.nsegs == 5 && a.segs[2].off == 5 * ZD_ALIGN && a.segs[2].len == 3 * ZD_ALIGN && !a.segs[2].used);
  char* q2 = get(&a, 3 * ZD_ALIGN); /* exactly the rest of the first hole: no split */
  CHECK(q2 == p[1] + ZD_ALIGN && a.nsegs == 5);
  char* q3 = get(&a, 2 * ZD_ALIGN);
  CHECK(q3 == p[3]);
  CHECK(largest(&a) == 2 * ZD_ALIGN);
  zd_alloc_fini(&a);
  free(r.base);
}

/* A put merges with a free left, right or both neighbours, so first fit
 * sees whole holes. */
static void test_merge(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, 5);
  char* p[5];
  for (int i = 0; i < 5; i++) p[i] = get(&a, ZD_ALIGN);
  CHECK(a.nsegs == 5);
  CHECK(zd_alloc_put(&a, p[1]));
  CHECK(zd_alloc_put(&a, p[2])); /* free left neighbour */
  CHECK(a.nsegs == 4 && largest(&a) == 2 * ZD_ALIGN);
  CHECK(zd_alloc_put(&a, p[0])); /* free right neighbour */
  CHECK(a.nsegs == 3 && largest(&a) == 3 * ZD_ALIGN);
  CHECK(zd_alloc_put(&a, p[4]));
  CHECK(zd_alloc_put(&a, p[3])); /* free on both sides */
  CHECK(a.nsegs == 1 && largest(&a) == 5 * ZD_ALIGN);
  CHECK(get(&a, 5 * ZD_ALIGN) == p[0]);
  zd_alloc_fini(&a);
  free(r.base);
}

/* No room is no piece and no error, whatever the request. */
static void test_exhaustion(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, 4);
  CHECK(get(&a, r.size + 1) == NULL);
  CHECK(get(&a, SIZE_MAX) == NULL);             /* its rounding overflows */
  CHECK(get(&a, SIZE_MAX - ZD_ALIGN) == NULL);  /* rounds to just below it */
  char* all = get(&a, r.size);
  CHECK(all == r.base);
  CHECK(get(&a, 0) == NULL && get(&a, 1) == NULL);
  CHECK(largest(&a) == 0 && zd_alloc_outstanding(&a) == 1);
  CHECK(zd_alloc_put(&a, all));
  CHECK(largest(&a) == r.size);
  zd_alloc_fini(&a);
  free(r.base);
}

/* A piece put twice, an address inside a piece, one outside the range and
 * NULL are refused and change nothing. */
static void test_wrong_put(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, 8);
  char* p = get(&a, ZD_ALIGN);
  char* q = get(&a, 2 * ZD_ALIGN);
  char outside[8];
  CHECK(!zd_alloc_put(&a, q + ZD_ALIGN)); /* inside q, not its start */
  CHECK(!zd_alloc_put(&a, q + 1));
  CHECK(!zd_alloc_put(&a, outside));
  CHECK(!zd_alloc_put(&a, (char*)r.base + r.size));
  CHECK(!zd_alloc_put(&a, NULL));
  CHECK(zd_alloc_outstanding(&a) == 2 && largest(&a) == 5 * ZD_ALIGN);
  CHECK(zd_alloc_put(&a, p));
  CHECK(!zd_alloc_put(&a, p)); /* twice */
  CHECK(!zd_alloc_put(&a, (char*)r.base + 3 * ZD_ALIGN)); /* the free piece's start */
  CHECK(zd_alloc_outstanding(&a) == 1 && largest(&a) == 5 * ZD_ALIGN);
  CHECK(zd_alloc_put(&a, q));
  CHECK(a.nsegs == 1);
  zd_alloc_fini(&a);
  free(r.base);
}

/* More pieces out than the first bookkeeping holds (64 segments): it grows,
 * and shrinks back to one segment as they return. */
static void test_many_pieces(void) {
  enum { N = 300 };
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, N);
  static char* p[N];
  for (int i = 0; i < N; i++) {
    p[i] = get(&a, 1);
    CHECK(p[i] != NULL && off_of(&r, p[i]) == (size_t)i * ZD_ALIGN);
  }
  CHECK(a.cap >= N && get(&a, 1) == NULL);
  for (int i = 0; i < N; i += 2) CHECK(zd_alloc_put(&a, p[i]));
  CHECK(zd_alloc_outstanding(&a) == N / 2 && largest(&a) == ZD_ALIGN);
  for (int i = 1; i < N; i += 2) CHECK(zd_alloc_put(&a, p[i]));
  CHECK(a.nsegs == 1 && largest(&a) == r.size);
  zd_alloc_fini(&a);
  free(r.base);
}

/* ---- random gets and puts against a model ---------------------------------- */

enum { UNITS = 64, SLOTS = 24 };

typedef struct {
  char used[UNITS]; /* the model: which units are out */
  char* p[SLOTS];   /* pieces out, NULL for none */
  size_t units[SLOTS];
} model_t;

/* First fit in the model: the lowest start of need free units, or -1. */
static int model_fit(const model_t* m, size_t need) {
  for (size_t s = 0; s + need <= UNITS; s++) {
    size_t k = 0;
    while (k < need && !m->used[s + k]) k++;
    if (k == need) return (int)s;
  }
  return -1;
}

static size_t model_largest(const model_t* m) {
  size_t best = 0, run = 0;
  for (int u = 0; u < UNITS; u++) {
    run = m->used[u] ? 0 : run + 1;
    if (run > best) best = run;
  }
  return best * ZD_ALIGN;
}

static void model_step(zd_alloc_t* a, const range_t* r, model_t* m, uint64_t* rng) {
  int s = (int)(test_xorshift(rng) % SLOTS);
  size_t bytes = test_xorshift(rng) % (10 * ZD_ALIGN);
  size_t need = bytes == 0 ? 1 : (bytes + ZD_ALIGN - 1) / ZD_ALIGN;
  if (m->p[s] != NULL) {
    CHECK(zd_alloc_put(a, m->p[s]));
    memset(&m->used[off_of(r, m->p[s]) / ZD_ALIGN], 0, m->units[s]);
    m->p[s] = NULL;
    return;
  }
  int at = model_fit(m, need);
  char* p = get(a, bytes);
  CHECK(at < 0 ? p == NULL : p != NULL && off_of(r, p) == (size_t)at * ZD_ALIGN);
  if (p == NULL || at < 0) return;
  memset(&m->used[at], 1, need);
  m->p[s] = p;
  m->units[s] = need;
}

static void test_random(void) {
  zd_alloc_t a;
  range_t r;
  alloc_over(&a, &r, UNITS);
  model_t m;
  memset(&m, 0, sizeof m);
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int step = 0; step < 20000; step++) {
    model_step(&a, &r, &m, &rng);
    CHECK(largest(&a) == model_largest(&m));
  }
  zd_alloc_fini(&a);
  free(r.base);
}

/* ---- the host device's buffer pool on it ------------------------------------ */

static void test_host_pool(void) {
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_HOST, &dev), zcclSuccess);
  if (dev == NULL) return;
  CHECK(dev->bufs.base == NULL);                /* made at the first get */
  CHECK(zd_buf_largest(dev) == 64u << 10);      /* the pool it will make */
  void* p = NULL;
  CHECK_RES(zd_buf_get(dev, 100, &p), zcclSuccess);
  CHECK(p == dev->bufs.base && dev->bufs.size == 64u << 10);
  CHECK(zd_buf_largest(dev) == (64u << 10) - 128);
  void* q = (void*)1;
  CHECK_RES(zd_buf_get(dev, 64u << 10, &q), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("ZCCL_BUFFER_POOL_BYTES");
  CHECK(q == NULL);
  zd_buf_put(dev, p);
  zd_buf_put(dev, p); /* twice: reported, nothing changes */
  CHECK_LAST_ERROR_HAS("is not a piece");
  CHECK(zd_buf_largest(dev) == 64u << 10);
  zd_dev_destroy(dev);
}

int main(void) {
  /* One pool size for the program, set before any parameter is read. */
  setenv("ZCCL_BUFFER_POOL_BYTES", "64K", 1);
  test_no_range();
  test_provide();
  test_alignment();
  test_first_fit_and_split();
  test_merge();
  test_exhaustion();
  test_wrong_put();
  test_many_pieces();
  test_random();
  test_host_pool();
  TEST_DONE();
}
