/* The CUDA entry points of a build without CUDA (ZCCL_CUDA=OFF). */
#include <stdio.h>
#include <string.h>

#include "zd_dev_impl.h"
#include "zu_error.h"

zcclResult_t zd_cuda_query(zd_cuda_info_t* info) {
  memset(info, 0, sizeof *info);
  snprintf(info->status, sizeof info->status, "built without CUDA (ZCCL_CUDA=OFF)");
  return zcclSuccess;
}

int zd_cuda_current_device(void) { return -1; }

zcclResult_t zd_cuda_selftest(void) {
  return ZU_ERROR(zcclInvalidUsage, "zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

static zcclResult_t zd_cuda_none_init(zd_dev_t* dev) {
  (void)dev;
  return ZU_ERROR(zcclInvalidUsage, "the cuda device: zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

/* init always fails, so nothing else of the row is ever called. */
const zd_ops_t zd_cuda_ops = {.name = "cuda", .init = zd_cuda_none_init};

zcclResult_t zd_cuda_post_error(zd_dev_t* dev, zcclResult_t code) {
  (void)dev;
  (void)code;
  return ZU_ERROR(zcclInvalidUsage, "zd_cuda_post_error: zccl was built without CUDA (ZCCL_CUDA=OFF)");
}
