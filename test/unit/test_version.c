/* zcclGetVersion reports the header's version; NULL is rejected. */
#include "test_util.h"

int main(void) {
  int v = -1;
  CHECK_RES(zcclGetVersion(&v), zcclSuccess);
  CHECK(v == ZCCL_VERSION_CODE);
  CHECK(v == ZCCL_MAJOR * 10000 + ZCCL_MINOR * 100 + ZCCL_PATCH);
  CHECK_RES(zcclGetVersion(NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("version is NULL");
  TEST_DONE();
}
