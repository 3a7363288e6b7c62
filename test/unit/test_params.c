/* The parameter table and its parsers (white box: util layer). */
#include <stdlib.h>

#include "test_util.h"
#include "zu_log.h"
#include "zu_param.h"

int main(void) {
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    const zu_param_def_t* p = zu_param_def((zu_param_id_t)i);
    CHECK(p != NULL && strncmp(p->name, "ZCCL_", 5) == 0);
    CHECK(p->desc != NULL && strlen(p->desc) > 10);
    CHECK(p->def != NULL);
    for (int j = 0; j < i; j++) CHECK(strcmp(p->name, zu_param_def((zu_param_id_t)j)->name) != 0);
  }
  CHECK(zu_param_def(ZU_NUM_PARAMS) == NULL);
  CHECK(strcmp(zu_param_def(ZU_PARAM_DEBUG)->name, "ZCCL_DEBUG") == 0);

  int64_t v = 0;
  CHECK(zu_parse_size("4096", &v) == 0 && v == 4096);
  CHECK(zu_parse_size("64K", &v) == 0 && v == 65536);
  CHECK(zu_parse_size("64KiB", &v) == 0 && v == 65536);
  CHECK(zu_parse_size("2m", &v) == 0 && v == 2 << 20);
  CHECK(zu_parse_size("1G", &v) == 0 && v == 1 << 30);
  CHECK(zu_parse_size("0x10", &v) == 0 && v == 16);
  CHECK(zu_parse_size("", &v) != 0);
  CHECK(zu_parse_size("12Q", &v) != 0);
  CHECK(zu_parse_size("K", &v) != 0);
  CHECK(zu_parse_size("99999999999999999999", &v) != 0);
  CHECK(zu_parse_size("9000000000G", &v) != 0);

  /* Environment beats default; empty means unset. */
  unsetenv("ZCCL_DEBUG_FILE");
  CHECK(!zu_param_is_set(ZU_PARAM_DEBUG_FILE));
  CHECK(strcmp(zu_param_str(ZU_PARAM_DEBUG_SUBSYS), "INIT,BOOTSTRAP,ENV") == 0);
  setenv("ZCCL_DEBUG_SUBSYS", "NET", 1);
  CHECK(strcmp(zu_param_str(ZU_PARAM_DEBUG_SUBSYS), "NET") == 0);
  setenv("ZCCL_DEBUG_SUBSYS", "", 1);
  CHECK(!zu_param_is_set(ZU_PARAM_DEBUG_SUBSYS));

  /* Integers. */
  unsetenv("ZCCL_CODEC_THREADS");
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclSuccess);
  CHECK(v == 0);
  setenv("ZCCL_CODEC_THREADS", "3", 1);
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclSuccess);
  CHECK(v == 3);
  setenv("ZCCL_CODEC_THREADS", "three", 1);
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_CODEC_THREADS='three' is not an integer");
  unsetenv("ZCCL_CODEC_THREADS");

  /* Subsystem lists. */
  uint32_t m = 0;
  CHECK(zu_log_parse_subsys("INIT,net", &m) == 0 && m == (ZU_LOG_INIT | ZU_LOG_NET));
  CHECK(zu_log_parse_subsys("^CODEC", &m) == 0 && (m & ZU_LOG_CODEC) == 0 && (m & ZU_LOG_COLL));
  CHECK(zu_log_parse_subsys("ALL", &m) == 0 && m == ZU_LOG_ALL);
  m = 5;
  CHECK(zu_log_parse_subsys("INIT,BOGUS", &m) != 0 && m == 5);
  TEST_DONE();
}
