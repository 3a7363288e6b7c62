/* Error strings for every code, and the last-error message trail. */
#include "test_util.h"

int main(void) {
  /* Values are NCCL's. */
  CHECK(zcclSuccess == 0 && zcclUnhandledCudaError == 1 && zcclSystemError == 2 &&
        zcclInternalError == 3 && zcclInvalidArgument == 4 && zcclInvalidUsage == 5 &&
        zcclRemoteError == 6 && zcclInProgress == 7 && zcclNumResults == 8);
  const char* seen[zcclNumResults];
  for (int r = 0; r < zcclNumResults; r++) {
    const char* s = zcclGetErrorString((zcclResult_t)r);
    CHECK(s != NULL && s[0] != '\0');
    seen[r] = s;
    for (int q = 0; q < r; q++) CHECK(strcmp(seen[q], s) != 0); /* distinct */
  }
  CHECK(strcmp(zcclGetErrorString(zcclSuccess), "no error") == 0);
  CHECK(strstr(zcclGetErrorString(zcclInvalidArgument), "invalid argument") != NULL);
  CHECK(strcmp(zcclGetErrorString((zcclResult_t)99), "unknown result code") == 0);
  CHECK(strcmp(zcclGetErrorString((zcclResult_t)-1), "unknown result code") == 0);

  /* No error yet: empty message. */
  CHECK(strcmp(zcclGetLastError(NULL), "") == 0);
  /* A failing call leaves "file:line: reason". */
  CHECK_RES(zcclCommCount(NULL, NULL), zcclInvalidArgument);
  const char* m = zcclGetLastError(NULL);
  CHECK(strstr(m, "zccl_init.c:") == m); /* where communicator handles are checked */
  CHECK_LAST_ERROR_HAS("zcclCommCount: comm is NULL");
  TEST_DONE();
}
