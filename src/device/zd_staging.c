/* Staging (zd_stage_*): host memory for messages the transport cannot send
 * from the device's own, a piece of the staging pool (a zd_alloc_t of
 * ZCCL_BUFFER_POOL_BYTES, pinned for cuda) or, for a message larger than
 * its free room, memory of the message's own. A piece that a queued copy
 * still reads goes on the late list and back to the pool only once the
 * copy's event has passed (zd_stage_put_after). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zd_alloc.h"
#include "zd_dev_impl.h"
#include "zu_error.h"
#include "zu_param.h"

int zd_stage_needed(const zd_dev_t* dev) {
  if (dev == NULL) return 0;
  if (dev->kind == ZD_CUDA) return 1;
  return dev->kind == ZD_SIM && zu_param_int_or_default(ZU_PARAM_SIM_STAGE) != 0; /* per message: cached */
}

/* Waits for a late buffer's event. The wait reports (and clears) the
 * lane's first error since its last report, which belongs to the
 * algorithm's next wait on that lane: kept for it (zd_late_err_take). The
 * copy is over either way. */
static void zd_late_wait(zd_dev_t* dev, zd_event_t ev) {
  if (zd_event_done(dev, ev)) return;
  zcclResult_t r = dev->ops->wait(dev, ev);
  int l = zd_ev_lane(ev);
  pthread_mutex_lock(&dev->late_lock);
  if (r != zcclSuccess && dev->late_err[l] == zcclSuccess) {
    dev->late_err[l] = r;
    atomic_fetch_add(&dev->late_pending, 1);
    snprintf(dev->late_msg[l], sizeof dev->late_msg[l], "%s", zu_error_last());
  }
  pthread_mutex_unlock(&dev->late_lock);
}

/* Takes the first late buffer whose event has passed off the list; with
 * oldest, the oldest when none has. 0 when the list is empty or none
 * qualifies. */
static int zd_late_take(zd_dev_t* dev, int oldest, void** buf, zd_event_t* ev) {
  if (atomic_load(&dev->late_pending) == 0) return 0;
  pthread_mutex_lock(&dev->late_lock);
  int i = 0;
  while (i < dev->nlate && !zd_event_done(dev, dev->late[i].ev)) i++;
  if (i == dev->nlate && oldest && dev->nlate > 0) i = 0;
  int found = i < dev->nlate;
  if (found) {
    *buf = dev->late[i].buf;
    *ev = dev->late[i].ev;
    memmove(&dev->late[i], &dev->late[i + 1], (size_t)(dev->nlate - i - 1) * sizeof dev->late[0]);
    dev->nlate--;
    atomic_fetch_sub(&dev->late_pending, 1);
  }
  pthread_mutex_unlock(&dev->late_lock);
  return found;
}

int zd_stage_reclaim(zd_dev_t* dev, int wait) {
  int back = 0;
  void* buf;
  zd_event_t ev;
  while (zd_late_take(dev, wait && back == 0, &buf, &ev)) {
    zd_late_wait(dev, ev);
    zd_stage_put(dev, buf);
    back++;
  }
  return back;
}

zcclResult_t zd_late_err_take(zd_dev_t* dev, int l, zcclResult_t res) {
  if (atomic_load(&dev->late_pending) == 0) return res;
  pthread_mutex_lock(&dev->late_lock);
  zcclResult_t e = dev->late_err[l];
  char msg[sizeof dev->late_msg[0]];
  memcpy(msg, dev->late_msg[l], sizeof msg);
  if (e != zcclSuccess) atomic_fetch_sub(&dev->late_pending, 1);
  dev->late_err[l] = zcclSuccess;
  pthread_mutex_unlock(&dev->late_lock);
  return e != zcclSuccess ? ZU_ERROR(e, "%s", msg) : res;
}

void zd_stage_drop_late(zd_dev_t* dev) {
  for (int i = 0; i < dev->nlate; i++) zd_stage_put(dev, dev->late[i].buf);
  atomic_fetch_sub(&dev->late_pending, dev->nlate);
  dev->nlate = 0;
}

void zd_stage_put_after(zd_dev_t* dev, void* buf, zd_event_t ev) {
  if (dev == NULL || buf == NULL) return;
  if (zd_event_done(dev, ev)) {
    zd_stage_put(dev, buf);
    return;
  }
  for (;;) { /* full: the oldest goes back first (another thread may fill it again meanwhile) */
    pthread_mutex_lock(&dev->late_lock);
    if (dev->nlate < ZD_STAGE_LATE) {
      dev->late[dev->nlate].buf = buf;
      dev->late[dev->nlate].ev = ev;
      dev->nlate++;
      atomic_fetch_add(&dev->late_pending, 1);
      pthread_mutex_unlock(&dev->late_lock);
      return;
    }
    pthread_mutex_unlock(&dev->late_lock);
    zd_stage_reclaim(dev, 1);
  }
}

/* A piece of the staging pool, made at the first get where the device did
 * not make it (zd_dev_create); *buf NULL when none is free. */
static zcclResult_t zd_stage_piece(zd_dev_t* dev, size_t bytes, void** buf) {
  *buf = NULL;
  ZU_CHECK(zd_bufpool_make(dev, &dev->stage, 1));
  return zd_alloc_get(&dev->stage, bytes, buf);
}

zcclResult_t zd_stage_try(zd_dev_t* dev, size_t bytes, void** buf) {
  ZU_RETURN_ERR_IF(dev == NULL || buf == NULL, zcclInvalidArgument, "zd_stage_try: NULL argument");
  zd_stage_reclaim(dev, 0);
  ZU_CHECK(zd_stage_piece(dev, bytes, buf));
  while (*buf == NULL && zd_stage_reclaim(dev, 1) > 0) ZU_CHECK(zd_stage_piece(dev, bytes, buf));
  return zcclSuccess;
}

zcclResult_t zd_stage_get(zd_dev_t* dev, size_t bytes, void** buf) {
  ZU_RETURN_ERR_IF(dev == NULL || buf == NULL, zcclInvalidArgument, "zd_stage_get: NULL argument");
  ZU_CHECK(zd_stage_try(dev, bytes, buf));
  if (*buf) return zcclSuccess;
  /* A message larger than the free staging memory: memory of its own, for
   * this message only, plain pageable memory (slow: raise
   * ZCCL_BUFFER_POOL_BYTES): pinning and unpinning it may wait for the
   * whole GPU, from the progress thread, while the call's hold waits for
   * that thread. */
  static atomic_int said;
  if (!atomic_exchange(&said, 1))
    ZU_INFO(ZU_LOG_DEVICE, "a %zu-byte message does not fit the %zu-byte staging pool: it gets memory of its own "
            "(raise ZCCL_BUFFER_POOL_BYTES to avoid the allocation)", bytes, dev->stage.size);
  *buf = aligned_alloc(ZD_ALIGN, (bytes + ZD_ALIGN - 1) / ZD_ALIGN * ZD_ALIGN + ZD_ALIGN);
  ZU_RETURN_ERR_IF(*buf == NULL, zcclSystemError, "zd_stage_get: out of memory for %zu bytes", bytes);
  return zcclSuccess;
}

void zd_stage_put(zd_dev_t* dev, void* buf) {
  if (dev == NULL || buf == NULL || zd_alloc_put(&dev->stage, buf)) return;
  free(buf); /* memory of its own (zd_stage_get) */
}
