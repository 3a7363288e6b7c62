#include <pthread.h>

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

const char* zcclGetLastError(zcclComm_t comm) {
  const char* msg = zu_error_last();
  if (msg[0] == '\0' && comm != NULL && zccl_comm_live(comm) && comm->magic == ZCCL_COMM_MAGIC &&
      comm->async_error != zcclSuccess)
    return comm->async_msg;
  return msg;
}
