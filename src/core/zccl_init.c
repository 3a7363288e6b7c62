#include <pthread.h>
#include <stdlib.h>

#include "zccl_core.h"
#include "zd_device.h"

static pthread_once_t zccl_once = PTHREAD_ONCE_INIT;

static void zccl_banner(void) {
  /* At VERSION, or with the details of INFO and above; not at the default
   * WARN, so that quiet programs stay quiet. */
  zu_log_level_t level = zu_log_level();
  if (level != ZU_LOG_VERSION && level < ZU_LOG_INFO) return;
  zd_cuda_info_t cuda; /* versions only: counting devices would initialise CUDA before a fork */
  zd_cuda_versions(&cuda);
  zu_log(ZU_LOG_VERSION, ZU_LOG_ALL, __FILE__, __LINE__, "zccl version %d.%d.%d%s, CUDA: %s",
         ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH, ZCCL_SUFFIX, cuda.status);
}

void zccl_init_once(void) { pthread_once(&zccl_once, zccl_banner); }

zcclResult_t zcclGetVersion(int* version) {
  ZU_RETURN_ERR_IF(version == NULL, zcclInvalidArgument, "zcclGetVersion: version is NULL");
  *version = ZCCL_VERSION_CODE;
  return zcclSuccess;
}

const char* zcclGetErrorString(zcclResult_t result) { return zu_error_string(result); }

/* ---- live communicators -----------------------------------------------------------
 * Every communicator between its allocation and its free is in this list,
 * so a handle is checked without reading its memory: a call on a destroyed
 * or aborted communicator (or a second destroy) would otherwise read freed
 * memory. Here, not in zccl_comm.c: zcclGetLastError needs it without
 * pulling the runtime into static links of the codec alone. An address the allocator reuses for a new communicator names
 * that one, as with any pointer handle. */
static pthread_mutex_t zccl_live_lock = PTHREAD_MUTEX_INITIALIZER;
static zcclComm_t* zccl_live;
static size_t zccl_nlive, zccl_caplive;

int zccl_live_add(zcclComm_t c) {
  int ok = 1;
  pthread_mutex_lock(&zccl_live_lock);
  if (zccl_nlive == zccl_caplive) {
    size_t cap = zccl_caplive ? 2 * zccl_caplive : 16;
    zcclComm_t* l = realloc(zccl_live, sizeof *l * cap);
    if (l) zccl_live = l, zccl_caplive = cap;
    ok = l != NULL;
  }
  if (ok) zccl_live[zccl_nlive++] = c;
  pthread_mutex_unlock(&zccl_live_lock);
  return ok;
}

void zccl_live_remove(zcclComm_t c) {
  pthread_mutex_lock(&zccl_live_lock);
  for (size_t i = 0; i < zccl_nlive; i++)
    if (zccl_live[i] == c) {
      zccl_live[i] = zccl_live[--zccl_nlive];
      break;
    }
  pthread_mutex_unlock(&zccl_live_lock);
}

/* Holds (zccl_comm_enter) and closing, under the list's lock: a destroy
 * or abort waits on zccl_live_cv until the other threads' calls are out. */
static pthread_cond_t zccl_live_cv = PTHREAD_COND_INITIALIZER;

static int zccl_live_find(zcclComm_t comm) {
  for (size_t i = 0; i < zccl_nlive; i++)
    if (zccl_live[i] == comm) return 1;
  return 0;
}

/* A live communicator not being closed: one more user (claim 0), or
 * closing from now on (claim 1). */
static zcclResult_t zccl_comm_take(const char* fn, zcclComm_t comm, int claim) {
  ZU_RETURN_ERR_IF(comm == NULL, zcclInvalidArgument, "%s: comm is NULL", fn);
  pthread_mutex_lock(&zccl_live_lock);
  int live = zccl_live_find(comm) && comm->magic == ZCCL_COMM_MAGIC, closing = live && comm->closing;
  if (live && !closing) {
    if (claim)
      comm->closing = 1;
    else
      comm->users++;
  }
  pthread_mutex_unlock(&zccl_live_lock);
  ZU_RETURN_ERR_IF(!live, zcclInvalidArgument,
                   "%s: comm is not a live communicator (destroyed, aborted or never created)", fn);
  ZU_RETURN_ERR_IF(closing, zcclInvalidUsage, "%s: comm is being destroyed or aborted by another thread", fn);
  zu_log_set_rank(comm->rank);
  return zcclSuccess;
}

zcclResult_t zccl_comm_enter(const char* fn, zcclComm_t comm, zcclComm_t* held) {
  *held = NULL;
  ZU_CHECK(zccl_comm_take(fn, comm, 0));
  *held = comm;
  return zcclSuccess;
}

void zccl_comm_release(zcclComm_t* held) {
  if (*held == NULL) return;
  pthread_mutex_lock(&zccl_live_lock);
  if (--(*held)->users == 0) pthread_cond_broadcast(&zccl_live_cv);
  pthread_mutex_unlock(&zccl_live_lock);
  *held = NULL;
}

zcclResult_t zccl_comm_claim(const char* fn, zcclComm_t comm) { return zccl_comm_take(fn, comm, 1); }

void zccl_comm_wait_users(zcclComm_t comm) {
  pthread_mutex_lock(&zccl_live_lock);
  while (comm->users > 0) pthread_cond_wait(&zccl_live_cv, &zccl_live_lock);
  pthread_mutex_unlock(&zccl_live_lock);
}

int zccl_comm_live(zcclComm_t comm) {
  int found = 0;
  pthread_mutex_lock(&zccl_live_lock);
  for (size_t i = 0; i < zccl_nlive && !found; i++) found = zccl_live[i] == comm;
  pthread_mutex_unlock(&zccl_live_lock);
  return found;
}

void zcclResetDebugInit(void) { zu_log_reset(); }

const char* zcclGetLastError(zcclComm_t comm) {
  const char* msg = zu_error_last();
  if (msg[0] == '\0' && comm != NULL && zccl_comm_live(comm) && comm->magic == ZCCL_COMM_MAGIC &&
      comm->async_error != zcclSuccess)
    return comm->async_msg;
  return msg;
}
