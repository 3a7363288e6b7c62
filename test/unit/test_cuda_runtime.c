/* A CUDA-enabled build loads and runs its CPU path on a machine whose CUDA
 * runtime has no device or driver, and reports that state cleanly: the cuda
 * device and a communicator asking for it (ZCCL_DEVICE=cuda) are refused
 * with zcclInvalidUsage saying why. On a machine with a GPU it reports the
 * device, and both are created. */
#include <stdlib.h>

#include "test_util.h"
#include "zd_device.h"

int main(void) {
  zd_cuda_info_t info;
  CHECK_RES(zd_cuda_query(&info), zcclSuccess);
  CHECK(info.built == 1);
  CHECK(info.runtime_version > 0);
  CHECK(info.status[0] != '\0');
  printf("cuda: %s\n", info.status);
  zcclUniqueId id = {{0}};
  zcclComm_t comm;
  CHECK_RES(zcclCommInitRank(&comm, 1, id, 0), zcclSuccess);
  int dev = -2;
  CHECK_RES(zcclCommCuDevice(comm, &dev), zcclSuccess);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);

  zd_dev_t* zdev = (zd_dev_t*)&zdev;
  zcclComm_t gcomm = NULL;
  setenv("ZCCL_DEVICE", "cuda", 1);
  if (info.ndevices == 0) {
    CHECK(dev == -1);
    CHECK(strstr(info.status, "no usable CUDA device") != NULL);
    CHECK_RES(zd_cuda_selftest(), zcclInvalidUsage);
    CHECK_RES(zd_dev_create(ZD_CUDA, &zdev), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("no usable CUDA device");
    CHECK(zdev == NULL);
    CHECK_RES(zcclCommInitRank(&gcomm, 1, id, 0), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("no usable CUDA device");
    printf("ZCCL_DEVICE=cuda without a GPU: %s\n", zcclGetLastError(NULL));
  } else {
    CHECK(dev >= 0 && dev < info.ndevices);
    CHECK_RES(zd_dev_create(ZD_CUDA, &zdev), zcclSuccess);
    zd_dev_destroy(zdev);
    CHECK_RES(zcclCommInitRank(&gcomm, 1, id, 0), zcclSuccess);
    CHECK_RES(zcclCommDestroy(gcomm), zcclSuccess);
  }
  unsetenv("ZCCL_DEVICE");
  TEST_DONE();
}
