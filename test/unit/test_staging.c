/* Staging (zd_stage_*, src/device/zd_staging.c): pieces of the staging
 * pool reused, messages too large for it given memory of their own, and
 * late pieces (zd_stage_put_after) held until their event has passed. The
 * events are a fake device's (a host device whose record, done and wait
 * this file answers, on two lanes), so the test decides when each passes
 * and sees every wait: a full pool waits for the oldest late piece only, a
 * full late list likewise, and an error a wait for a late piece took is
 * reported by the lane's next wait, once. Then the same on the sim device,
 * whose events pass when its worker has run the copy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zd_alloc.h"
#include "zd_dev_impl.h"
#include "zu_error.h"

#define POOL (64u << 10)

/* ---- the fake device's events ---------------------------------------------- */

static struct {
  uint64_t recorded[2], passed[2]; /* per lane */
  int waits;
  zcclResult_t fail[2]; /* the lane's next wait reports it */
} fk;

static zd_event_t fake_record(zd_dev_t* dev) {
  int l = dev->lane;
  return zd_ev_make(l, ++fk.recorded[l]);
}

static int fake_done(zd_dev_t* dev, zd_event_t ev) {
  (void)dev;
  return zd_ev_seq(ev) <= fk.passed[zd_ev_lane(ev)];
}

/* Waiting makes the event pass, as a real wait returns once it has. */
static zcclResult_t fake_wait(zd_dev_t* dev, zd_event_t ev) {
  (void)dev;
  int l = zd_ev_lane(ev);
  fk.waits++;
  if (zd_ev_seq(ev) > fk.passed[l]) fk.passed[l] = zd_ev_seq(ev);
  zcclResult_t r = fk.fail[l];
  fk.fail[l] = zcclSuccess;
  return r == zcclSuccess ? r : ZU_ERROR(r, "fake lane %d failed", l);
}

static zd_ops_t fake_ops;

/* A host device with the fake events on two lanes. */
static zd_dev_t* fake_dev(void) {
  memset(&fk, 0, sizeof fk);
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_HOST, &dev), zcclSuccess);
  if (dev == NULL) exit(1);
  fake_ops = *dev->ops;
  fake_ops.name = "fake";
  fake_ops.record = fake_record;
  fake_ops.done = fake_done;
  fake_ops.wait = fake_wait;
  dev->ops = &fake_ops;
  dev->nlanes = 2;
  return dev;
}

static int in_pool(zd_dev_t* dev, const void* p) {
  uintptr_t at = (uintptr_t)p, base = (uintptr_t)dev->stage.base;
  return dev->stage.base != NULL && at >= base && at < base + dev->stage.size;
}

static void* stage_try(zd_dev_t* dev, size_t bytes) {
  void* p = (void*)1;
  CHECK_RES(zd_stage_try(dev, bytes, &p), zcclSuccess);
  return p;
}

/* ---- the tests ----------------------------------------------------------------- */

/* A piece goes back and is handed out again; a message larger than the
 * pool gets memory of its own, which zd_stage_put frees. */
static void test_reuse(void) {
  zd_dev_t* dev = fake_dev();
  void *p = NULL, *q = NULL;
  CHECK_RES(zd_stage_get(dev, 100, &p), zcclSuccess);
  CHECK(in_pool(dev, p) && (uintptr_t)p % ZD_ALIGN == 0 && dev->stage.size == POOL);
  zd_stage_put(dev, p);
  CHECK(zd_alloc_outstanding(&dev->stage) == 0);
  CHECK_RES(zd_stage_get(dev, 100, &q), zcclSuccess);
  CHECK(q == p);
  zd_stage_put(dev, q);
  CHECK(stage_try(dev, POOL + 1) == NULL); /* the pool only */
  void* own = NULL;
  CHECK_RES(zd_stage_get(dev, POOL + 1, &own), zcclSuccess);
  CHECK(own != NULL && !in_pool(dev, own) && (uintptr_t)own % ZD_ALIGN == 0);
  if (own) memset(own, 7, POOL + 1); /* all of it is the message's */
  zd_stage_put(dev, own);
  void* all = stage_try(dev, POOL);
  CHECK(all == dev->stage.base);
  CHECK(stage_try(dev, 1) == NULL); /* full, nothing late to wait for */
  zd_stage_put(dev, all);
  CHECK(fk.waits == 0);
  zd_dev_destroy(dev);
}

/* A late piece stays out while its event has not passed (no wait for it
 * while the pool has room), and goes back once it has; one whose event has
 * passed already goes back at once. */
static void test_late_held(void) {
  zd_dev_t* dev = fake_dev();
  void* p = stage_try(dev, 100);
  zd_event_t ev = zd_event_record(dev);
  zd_stage_put_after(dev, p, ev);
  CHECK(dev->nlate == 1 && zd_alloc_outstanding(&dev->stage) == 1);
  void* q = stage_try(dev, 64);
  CHECK(q != NULL && q != p);
  CHECK(dev->nlate == 1 && fk.waits == 0);
  fk.passed[0] = zd_ev_seq(ev); /* the copy out of p is over */
  void* r = stage_try(dev, 64);
  CHECK(r == p); /* back, and first fit */
  CHECK(dev->nlate == 0 && fk.waits == 0);
  zd_event_t passed = zd_event_record(dev);
  fk.passed[0] = zd_ev_seq(passed);
  zd_stage_put_after(dev, r, passed);
  CHECK(dev->nlate == 0 && zd_alloc_outstanding(&dev->stage) == 1);
  zd_stage_put(dev, q);
  CHECK(zd_alloc_outstanding(&dev->stage) == 0);
  zd_dev_destroy(dev);
}

/* A pool full of late pieces: a get waits for the oldest only, and takes
 * its place; zd_sync takes back the rest. */
static void test_full_waits_oldest(void) {
  zd_dev_t* dev = fake_dev();
  void* a = stage_try(dev, POOL / 2);
  void* b = stage_try(dev, POOL / 2);
  zd_event_t ea = zd_event_record(dev), eb = zd_event_record(dev);
  zd_stage_put_after(dev, a, ea);
  zd_stage_put_after(dev, b, eb);
  CHECK(dev->nlate == 2 && fk.waits == 0);
  void* r = stage_try(dev, 64);
  CHECK(r == a);
  CHECK(fk.waits == 1 && fk.passed[0] == zd_ev_seq(ea));
  CHECK(dev->nlate == 1 && dev->late[0].buf == b); /* eb has not passed */
  zd_stage_put(dev, r);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(dev->nlate == 0 && zd_alloc_outstanding(&dev->stage) == 0);
  zd_dev_destroy(dev);
}

/* The late list full (ZD_STAGE_LATE): one more waits for the oldest. */
static void test_late_list_full(void) {
  zd_dev_t* dev = fake_dev();
  static void* p[ZD_STAGE_LATE + 1];
  for (int i = 0; i <= ZD_STAGE_LATE; i++) p[i] = stage_try(dev, 64);
  for (int i = 0; i < ZD_STAGE_LATE; i++) zd_stage_put_after(dev, p[i], zd_event_record(dev));
  CHECK(dev->nlate == ZD_STAGE_LATE && fk.waits == 0);
  zd_stage_put_after(dev, p[ZD_STAGE_LATE], zd_event_record(dev));
  CHECK(fk.waits == 1 && fk.passed[0] == 1);
  CHECK(dev->nlate == ZD_STAGE_LATE && dev->late[0].buf == p[1]);
  CHECK(dev->late[ZD_STAGE_LATE - 1].buf == p[ZD_STAGE_LATE]);
  CHECK(zd_alloc_outstanding(&dev->stage) == ZD_STAGE_LATE);
  CHECK(stage_try(dev, 64) == p[0]);
  zd_stage_put(dev, p[0]);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(dev->nlate == 0 && zd_alloc_outstanding(&dev->stage) == 0);
  zd_dev_destroy(dev);
}

/* An error that a wait for a late piece took on lane 1 is the lane's next
 * wait's, reported once; lane 0's waits do not see it. */
static void test_late_error(void) {
  zd_dev_t* dev = fake_dev();
  zd_set_lane(dev, 1);
  void* p = stage_try(dev, POOL);
  zd_event_t ev = zd_event_record(dev);
  zd_stage_put_after(dev, p, ev);
  zd_set_lane(dev, 0);
  fk.fail[1] = zcclUnhandledCudaError;
  void* q = stage_try(dev, 64); /* waits for ev: the error is kept */
  CHECK(q == p && fk.waits == 1 && fk.fail[1] == zcclSuccess);
  zd_stage_put(dev, q);
  CHECK_RES(zd_event_wait(dev, zd_event_record(dev)), zcclSuccess);
  CHECK_RES(zd_event_wait(dev, ev), zcclUnhandledCudaError);
  CHECK_LAST_ERROR_HAS("fake lane 1 failed");
  CHECK_RES(zd_event_wait(dev, ev), zcclSuccess);
  CHECK_RES(zd_sync(dev), zcclSuccess);
  zd_dev_destroy(dev);
}

/* Late pieces left at the device's end go back with the pool (the
 * sanitizers see the memory freed once). */
static void test_destroy_with_late(void) {
  zd_dev_t* dev = fake_dev();
  void* piece = stage_try(dev, 64);
  void* own = NULL;
  CHECK_RES(zd_stage_get(dev, POOL * 2, &own), zcclSuccess); /* before: it would wait for a late piece */
  zd_stage_put_after(dev, piece, zd_event_record(dev));
  zd_stage_put_after(dev, own, zd_event_record(dev)); /* memory of its own, late */
  CHECK(dev->nlate == 2 && fk.waits == 0);
  zd_dev_destroy(dev);
}

/* The sim device: a queued copy out of a late piece, whose event passes
 * when the worker has run it; zd_sync takes the piece back, and the copy
 * read the piece's bytes before it could be handed out again. */
static void test_sim(void) {
  zd_dev_t* dev = NULL;
  CHECK_RES(zd_dev_create(ZD_SIM, &dev), zcclSuccess);
  if (dev == NULL) return;
  unsigned char *p = NULL, *dst = NULL;
  CHECK_RES(zd_stage_get(dev, 4096, (void**)&p), zcclSuccess);
  CHECK_RES(zd_buf_get(dev, 4096, (void**)&dst), zcclSuccess);
  if (p == NULL || dst == NULL) return;
  memset(p, 0x5a, 4096);
  CHECK_RES(zd_copy(dev, dst, p, 4096), zcclSuccess);
  zd_event_t ev = zd_event_record(dev);
  zd_stage_put_after(dev, p, ev);
  if (!zd_event_done(dev, ev)) CHECK(dev->nlate == 1); /* not passed then either */
  CHECK_RES(zd_sync(dev), zcclSuccess);
  CHECK(dev->nlate == 0 && zd_alloc_outstanding(&dev->stage) == 0);
  CHECK(dst[0] == 0x5a && dst[4095] == 0x5a);
  unsigned char* again = NULL;
  CHECK_RES(zd_stage_get(dev, 4096, (void**)&again), zcclSuccess);
  CHECK(again == p);
  zd_stage_put(dev, again);
  zd_buf_put(dev, dst);
  zd_dev_destroy(dev);
}

int main(void) {
  /* Set before any parameter is read: one pool size for the program. */
  setenv("ZCCL_BUFFER_POOL_BYTES", "64K", 1);
  setenv("ZCCL_SIM_DELAY_US", "500", 1);
  test_reuse();
  test_late_held();
  test_full_waits_oldest();
  test_late_list_full();
  test_late_error();
  test_destroy_with_late();
  test_sim();
  TEST_DONE();
}
