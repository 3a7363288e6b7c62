/* An NCCL program, unchanged: it includes <nccl.h> (zccl's) and uses only
 * NCCL's names; it links libnccl.so.2 (zccl's). Compiled as C here and as
 * C++ by test_nccl_dropin_cxx. It runs on one rank: an allreduce (in
 * place, AVG on one rank is the identity) and a grouped allgather. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What NCCL programs do with the header beyond calling it: weak
 * declarations (a fallback when a library lacks the function), taking the
 * functions' addresses, and in C++ overloading on NCCL's types. */
#pragma weak ncclCommWindowRegister
const char* ncclGetLastError(ncclComm_t comm) __attribute__((weak));
typedef void (*any_fn)(void);
#define F(name) (any_fn) name, (any_fn)p##name
static const any_fn every[] = {
    F(ncclMemAlloc),         F(ncclMemFree),          F(ncclGetVersion),         F(ncclGetUniqueId),
    F(ncclCommInitRankConfig), F(ncclCommInitRank),   F(ncclCommInitAll),        F(ncclCommFinalize),
    F(ncclCommDestroy),      F(ncclCommAbort),        F(ncclCommSplit),          F(ncclCommInitRankScalable),
    F(ncclGetErrorString),   F(ncclGetLastError),     F(ncclCommGetAsyncError),  F(ncclCommCount),
    F(ncclCommCuDevice),     F(ncclCommUserRank),     F(ncclCommRegister),       F(ncclCommDeregister),
    F(ncclCommWindowRegister), F(ncclCommWindowDeregister), F(ncclReduce),       F(ncclBcast),
    F(ncclBroadcast),        F(ncclAllReduce),        F(ncclReduceScatter),      F(ncclAllGather),
    F(ncclAlltoAll),         F(ncclGather),           F(ncclScatter),            F(ncclSend),
    F(ncclRecv),             F(ncclGroupStart),       F(ncclGroupEnd),           F(ncclResetDebugInit),
    F(ncclRedOpCreatePreMulSum), F(ncclRedOpDestroy), F(ncclCommShrink), F(ncclCommRevoke),
    F(ncclGroupSimulateEnd)};
#undef F
#ifdef __cplusplus
static int kind_of(ncclResult_t) { return 1; }
static int kind_of(ncclDataType_t) { return 2; }
static int kind_of(ncclComm_t) { return 3; }
static int kind_of(int) { return 4; }
#endif

#define NCCLCHECK(cmd)                                                                    \
  do {                                                                                    \
    ncclResult_t r = (cmd);                                                               \
    if (r != ncclSuccess) {                                                               \
      printf("NCCL failure %s:%d '%s'\n", __FILE__, __LINE__, ncclGetErrorString(r));     \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main(void) {
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
    if (every[i] == NULL) {
      printf("function %zu of the table has no address\n", i);
      return 1;
    }
  if (ncclGetLastError == NULL || ncclCommWindowRegister == NULL) return 1; /* weak, but present */
#ifdef __cplusplus
  if (kind_of(ncclSuccess) != 1 || kind_of(ncclFloat) != 2 || kind_of(NCCL_COMM_NULL == NULL ? (ncclComm_t)0 : 0) != 3 ||
      kind_of(7) != 4)
    return 1;
#endif
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  /* ncclResetDebugInit: logging switched to INFO into a file while running */
  char log[64];
  snprintf(log, sizeof log, "/tmp/zccl_nccl_dropin.%d.log", (int)getpid());
  setenv("ZCCL_DEBUG", "INFO", 1);
  setenv("ZCCL_DEBUG_FILE", log, 1);
  ncclResetDebugInit();
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  NCCLCHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  setenv("ZCCL_DEBUG", "WARN", 1);
  unsetenv("ZCCL_DEBUG_FILE");
  ncclResetDebugInit();
  struct stat st;
  if (stat(log, &st) != 0 || st.st_size == 0) {
    printf("ncclResetDebugInit: no INFO lines in %s\n", log);
    return 1;
  }
  unlink(log);
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
