/* An NCCL program, unchanged: it includes <nccl.h> and uses only NCCL's
 * names. Compiled as C here and as C++ by test_nccl_dropin_cxx. It runs on
 * one rank; the collective call reports that the data path is not built. */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define NCCLCHECK(cmd)                                                                    \
  do {                                                                                    \
    ncclResult_t r = (cmd);                                                               \
    if (r != ncclSuccess) {                                                               \
      printf("NCCL failure %s:%d '%s'\n", __FILE__, __LINE__, ncclGetErrorString(r));     \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main(void) {
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  NCCLCHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  int n = 0, rank = -1, dev = 0;
  NCCLCHECK(ncclCommCount(comm, &n));
  NCCLCHECK(ncclCommUserRank(comm, &rank));
  NCCLCHECK(ncclCommCuDevice(comm, &dev));
  float buf[4] = {1, 2, 3, 4};
  cudaStream_t stream = NULL;
  ncclResult_t ar = ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, stream);
  if (ar != ncclInvalidUsage || strstr(ncclGetLastError(comm), "not built") == NULL) {
    printf("unexpected: %d %s\n", (int)ar, ncclGetLastError(comm));
    return 1;
  }
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclGroupEnd());
  ncclResult_t async;
  NCCLCHECK(ncclCommGetAsyncError(comm, &async));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  if (n != 1 || rank != 0 || async != ncclSuccess || NCCL_VERSION_CODE < 22800) return 1;
  printf("nccl drop-in ok: zccl version %d, %d rank(s)\n", version, n);
  return 0;
}
