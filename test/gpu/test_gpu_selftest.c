/* Runs a kernel on the GPU and checks its result. Without a CUDA device (or
 * without a CUDA build) it reports itself skipped, never passed. */
#include "test_util.h"
#include "zd_device.h"

int main(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  if (!info.built || info.ndevices == 0) {
    printf("SKIP: %s\n", info.status);
    return TEST_SKIP_CODE;
  }
  printf("cuda: %s (built for %s)\n", info.status, info.archs);
  CHECK_RES(zd_cuda_selftest(), zcclSuccess);
  TEST_DONE();
}
