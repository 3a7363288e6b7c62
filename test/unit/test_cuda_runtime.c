/* A CUDA-enabled build loads and runs its CPU path on a machine whose CUDA
 * runtime has no device or driver, and reports that state cleanly. On a
 * machine with a GPU it reports the device instead. */
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
  if (info.ndevices == 0) {
    CHECK(dev == -1);
    CHECK(strstr(info.status, "no usable CUDA device") != NULL);
    CHECK_RES(zd_cuda_selftest(), zcclInvalidUsage);
  } else {
    CHECK(dev >= 0 && dev < info.ndevices);
  }
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  TEST_DONE();
}
