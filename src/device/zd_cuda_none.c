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

void zd_cuda_versions(zd_cuda_info_t* info) { zd_cuda_query(info); }

int zd_cuda_current_device(void) { return -1; }

zcclResult_t zd_cuda_selftest(void) {
  return ZU_ERROR(zcclInvalidUsage, "zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

int zd_cuda_is_device_ptr(const void* p) {
  (void)p;
  return 0;
}

zcclResult_t zd_cuda_ticket_enter(zcclStream_t stream, void** state) {
  (void)stream;
  *state = NULL;
  return ZU_ERROR(zcclInvalidUsage, "zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

int zd_cuda_ticket_passed(void* state) {
  (void)state;
  return -1;
}

void zd_cuda_ticket_release(void* state) { (void)state; }

zcclResult_t zd_cuda_stream_sync(zcclStream_t stream) {
  (void)stream;
  return ZU_ERROR(zcclInvalidUsage, "zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

void zd_cuda_use_device(int dev) { (void)dev; }

zcclResult_t zd_cuda_mem_alloc(void** ptr, size_t size) {
  (void)size;
  if (ptr) *ptr = NULL;
  return ZU_ERROR(zcclInvalidUsage, "zcclMemAlloc: zccl was built without CUDA (ZCCL_CUDA=OFF)");
}

zcclResult_t zd_cuda_mem_free(void* ptr) {
  ZU_RETURN_ERR_IF(ptr != NULL, zcclInvalidUsage, "zcclMemFree: zccl was built without CUDA (ZCCL_CUDA=OFF)");
  return zcclSuccess;
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
