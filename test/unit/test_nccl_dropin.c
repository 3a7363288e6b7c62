/* An NCCL program, unchanged: it includes <nccl.h> and uses only NCCL's
 * names. Compiled as C here and as C++ by test_nccl_dropin_cxx. It runs on
 * one rank: an allreduce (in place, AVG on one rank is the identity) and a
 * grouped allgather. */
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
  float buf[4] = {1, 2, 3, 4}, out[4] = {0};
  cudaStream_t stream = NULL;
  NCCLCHECK(ncclAllReduce(buf, buf, 4, ncclFloat, ncclAvg, comm, stream));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllGather(buf, out, 4, ncclFloat, comm, stream));
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < 4; i++)
    if (buf[i] != (float)(i + 1) || out[i] != buf[i]) {
      printf("unexpected element %d: %g %g\n", i, buf[i], out[i]);
      return 1;
    }
  ncclResult_t async;
  NCCLCHECK(ncclCommGetAsyncError(comm, &async));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  if (n != 1 || rank != 0 || async != ncclSuccess || NCCL_VERSION_CODE < 22800) return 1;
  printf("nccl drop-in ok: zccl version %d, %d rank(s)\n", version, n);
  return 0;
}
