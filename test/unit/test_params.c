/* The parameter table, its parsers and its cache: values read once, again
 * by zu_param_reload, a value that does not parse reported once (white
 * box: util layer). */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "zc_simd.h"
#include "zu_log.h"
#include "zu_param.h"

static char log_path[64], err_path[64];

/* Lines of the file holding every needle (NULL-terminated). */
static int lines_with(const char* path, const char* const* needles) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    int all = 1;
    for (int k = 0; needles[k] && all; k++) all = strstr(line, needles[k]) != NULL;
    n += all;
  }
  fclose(f);
  return n;
}

static void set(const char* name, const char* value) {
  setenv(name, value, 1);
  zu_param_reload();
}

/* "a, b, c": how a warning lists the accepted values. */
static void join(const char* const* values, char* buf, size_t len) {
  buf[0] = '\0';
  for (int k = 0; values[k]; k++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", k ? ", " : "", values[k]);
}

/* Read once: a change of the environment shows after zu_param_reload only. */
static void test_cache(void) {
  set("ZCCL_TIMEOUT", "7");
  int64_t v = 0;
  CHECK_RES(zu_param_int(ZU_PARAM_TIMEOUT, &v), zcclSuccess);
  CHECK(v == 7);
  const char* held = zu_param_str(ZU_PARAM_TIMEOUT);
  setenv("ZCCL_TIMEOUT", "9", 1);
  CHECK_RES(zu_param_int(ZU_PARAM_TIMEOUT, &v), zcclSuccess);
  CHECK(v == 7 && strcmp(zu_param_str(ZU_PARAM_TIMEOUT), "7") == 0);
  zu_param_reload();
  CHECK_RES(zu_param_int(ZU_PARAM_TIMEOUT, &v), zcclSuccess);
  CHECK(v == 9 && strcmp(zu_param_str(ZU_PARAM_TIMEOUT), "9") == 0);
  CHECK(strcmp(held, "7") == 0); /* a string read before stays valid */
  set("ZCCL_TIMEOUT", "7");
  CHECK(zu_param_str(ZU_PARAM_TIMEOUT) == held); /* values are interned */
  unsetenv("ZCCL_TIMEOUT");
  CHECK(zu_param_is_set(ZU_PARAM_TIMEOUT));
  zu_param_reload();
  CHECK(!zu_param_is_set(ZU_PARAM_TIMEOUT));
  CHECK(strcmp(zu_param_str(ZU_PARAM_TIMEOUT), zu_param_def(ZU_PARAM_TIMEOUT)->def) == 0);
}

/* The value tables: each default accepted, CODEC_SIMD's the codec's levels. */
static void test_value_tables(void) {
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    const char* const* vals = zu_param_values((zu_param_id_t)i);
    if (vals == NULL) continue;
    CHECK(zu_param_def((zu_param_id_t)i)->type == ZU_PARAM_STR);
    char def[128];
    snprintf(def, sizeof def, "%s", zu_param_def((zu_param_id_t)i)->def);
    char* save = NULL;
    for (char* t = strtok_r(def, ",", &save); t; t = strtok_r(NULL, ",", &save)) { /* lists too */
      int found = 0;
      for (int k = 0; vals[k]; k++) found |= strcmp(t, vals[k]) == 0;
      CHECK(found);
    }
  }
  const char* const* simd = zu_param_values(ZU_PARAM_CODEC_SIMD);
  CHECK(strcmp(simd[0], "auto") == 0);
  for (int l = 0; l < ZC_SIMD_NUM; l++) CHECK(simd[l + 1] && strcmp(simd[l + 1], zc_simd_name(l)) == 0);
  CHECK(simd[ZC_SIMD_NUM + 1] == NULL);
  CHECK(zu_param_values(ZU_PARAM_TIMEOUT) == NULL && zu_param_values(ZU_PARAM_ALGO) == NULL);
}

/* Each fixed-set parameter (zu_log's own below): a bad value gives the
 * default and one WARN line naming the accepted values, not two. */
static void test_bad_choices(void) {
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    zu_param_id_t id = (zu_param_id_t)i;
    const char* const* vals = zu_param_values(id);
    if (vals == NULL || id == ZU_PARAM_DEBUG || id == ZU_PARAM_DEBUG_SUBSYS) continue;
    const zu_param_def_t* p = zu_param_def(id);
    int def = -1;
    for (int k = 0; vals[k]; k++)
      if (strcmp(vals[k], p->def) == 0) def = k;
    CHECK(def >= 0);
    set(p->name, vals[1]);
    CHECK(zu_param_choice(id) == 1);
    set(p->name, "bogus");
    char what[256], list[256], used[128];
    snprintf(what, sizeof what, "%s='bogus'", p->name);
    join(vals, list, sizeof list);
    snprintf(used, sizeof used, ": using %s", p->def);
    const char* needles[] = {" zccl WARN ", what, list, used, NULL};
    CHECK(zu_param_choice(id) == def);
    CHECK(zu_param_choice(id) == def);
    CHECK(lines_with(log_path, needles) == 1);
    set(p->name, "Bogus2"); /* another value: said once more */
    CHECK(zu_param_choice(id) == def);
    set(p->name, "bogus"); /* said before */
    CHECK(zu_param_choice(id) == def);
    snprintf(what, sizeof what, "%s='Bogus2'", p->name);
    CHECK(lines_with(log_path, needles) == 1);
    needles[1] = p->name;
    CHECK(lines_with(log_path, needles) == 2);
    unsetenv(p->name);
  }
  /* Case: DEVICE's consumer ignores it, MPI_COMMS's does not. */
  set("ZCCL_DEVICE", "SIM");
  CHECK(zu_param_choice(ZU_PARAM_DEVICE) == 1);
  set("ZCCL_MPI_COMMS", "WORLD");
  CHECK(zu_param_choice(ZU_PARAM_MPI_COMMS) == 1);
  unsetenv("ZCCL_DEVICE");
  unsetenv("ZCCL_MPI_COMMS");
  zu_param_reload();
}

/* Numbers read by consumers that carry on: the default and one WARN line;
 * zu_param_int still fails as before. Lists and free text: what the
 * consumer says it uses. */
static void test_bad_numbers(void) {
  set("ZCCL_SIM_STAGE", "yes");
  CHECK(zu_param_int_or_default(ZU_PARAM_SIM_STAGE) == 0);
  CHECK(zu_param_int_or_default(ZU_PARAM_SIM_STAGE) == 0);
  const char* n1[] = {" zccl WARN ", "ZCCL_SIM_STAGE='yes' is not an integer: using 0", NULL};
  CHECK(lines_with(log_path, n1) == 1);
  int64_t v = 0;
  CHECK_RES(zu_param_int(ZU_PARAM_SIM_STAGE, &v), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_SIM_STAGE='yes' is not an integer");
  set("ZCCL_MPI_MIN_BYTES", "lots");
  CHECK(zu_param_int_or_default(ZU_PARAM_MPI_MIN_BYTES) == 64 << 10);
  CHECK(zu_param_int_or_default(ZU_PARAM_MPI_MIN_BYTES) == 64 << 10);
  const char* n2[] = {" zccl WARN ", "ZCCL_MPI_MIN_BYTES='lots' is not a size (e.g. 4096, 64K, 1M): using 64K", NULL};
  CHECK(lines_with(log_path, n2) == 1);
  CHECK_RES(zu_param_int(ZU_PARAM_MPI_MIN_BYTES, &v), zcclInvalidArgument);
  set("ZCCL_MPI_MIN_BYTES", "1M");
  CHECK(zu_param_int_or_default(ZU_PARAM_MPI_MIN_BYTES) == 1 << 20);
  set("ZCCL_MPI_OPS", "bcast,nope");
  zu_param_warn_bad(ZU_PARAM_MPI_OPS, "bcast");
  zu_param_warn_bad(ZU_PARAM_MPI_OPS, "bcast");
  const char* n3[] = {" zccl WARN ", "ZCCL_MPI_OPS='bcast,nope' names something not among all, allreduce, ",
                      ", alltoall: using bcast", NULL};
  CHECK(lines_with(log_path, n3) == 1);
  set("ZCCL_COMPRESSION", "codec=what");
  zu_param_warn_bad(ZU_PARAM_COMPRESSION, "off");
  zu_param_warn_bad(ZU_PARAM_COMPRESSION, "off");
  const char* n4[] = {" zccl WARN ", "ZCCL_COMPRESSION='codec=what' does not parse: using off", NULL};
  CHECK(lines_with(log_path, n4) == 1);
  unsetenv("ZCCL_SIM_STAGE");
  unsetenv("ZCCL_MPI_MIN_BYTES");
  unsetenv("ZCCL_MPI_OPS");
  unsetenv("ZCCL_COMPRESSION");
  zu_param_reload();
}

/* zu_log's own settings: said once, on stderr (zu_log may be setting
 * itself up when it reads them), however often the log is reset. */
static void test_bad_log_settings(void) {
  fflush(stderr);
  int saved = dup(2), fd = open(err_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  CHECK(saved >= 0 && fd >= 0);
  if (saved < 0 || fd < 0) return;
  dup2(fd, 2);
  close(fd);
  setenv("ZCCL_DEBUG", "LOUD", 1);
  setenv("ZCCL_DEBUG_SUBSYS", "INIT,FOO", 1);
  for (int k = 0; k < 3; k++) zu_log_reset();
  CHECK(zu_log_level() == ZU_LOG_WARN);
  CHECK(zu_log_mask() == (ZU_LOG_INIT | ZU_LOG_BOOTSTRAP | ZU_LOG_ENV));
  setenv("ZCCL_DEBUG", "info", 1); /* any case */
  zu_log_reset();
  CHECK(zu_log_level() == ZU_LOG_INFO);
  setenv("ZCCL_DEBUG", "WARN", 1);
  unsetenv("ZCCL_DEBUG_SUBSYS");
  zu_log_reset();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const char* n1[] = {" zccl WARN ZCCL_DEBUG='LOUD' is not one of NONE, VERSION, WARN, INFO, TRACE: using WARN",
                      NULL};
  const char* n2[] = {" zccl WARN ZCCL_DEBUG_SUBSYS='INIT,FOO' names something not among INIT, COLL, P2P, NET, "
                      "BOOTSTRAP, CODEC, DEVICE, TUNING, ENV, ALL: using INIT,BOOTSTRAP,ENV", NULL};
  const char* any[] = {"zccl", NULL};
  CHECK(lines_with(err_path, n1) == 1);
  CHECK(lines_with(err_path, n2) == 1);
  CHECK(lines_with(err_path, any) == 2);
  unlink(err_path);
}

/* Readers on other threads while the values change under them (for TSan). */
static atomic_int stop_readers;

static void* reader(void* arg) {
  (void)arg;
  long bad = 0;
  while (!atomic_load(&stop_readers)) {
    const char* s = zu_param_str(ZU_PARAM_BOOTSTRAP_TIMEOUT);
    int64_t v = zu_param_int_or_default(ZU_PARAM_BOOTSTRAP_TIMEOUT);
    bad += strcmp(s, "11") != 0 && strcmp(s, "12") != 0;
    bad += v != 11 && v != 12;
  }
  return (void*)(intptr_t)bad;
}

static void test_reload_beside_readers(void) {
  set("ZCCL_BOOTSTRAP_TIMEOUT", "11");
  pthread_t t[3];
  for (int k = 0; k < 3; k++) CHECK(pthread_create(&t[k], NULL, reader, NULL) == 0);
  for (int r = 0; r < 2000; r++) set("ZCCL_BOOTSTRAP_TIMEOUT", r % 2 ? "11" : "12");
  atomic_store(&stop_readers, 1);
  for (int k = 0; k < 3; k++) {
    void* bad = NULL;
    pthread_join(t[k], &bad);
    CHECK(bad == NULL);
  }
  unsetenv("ZCCL_BOOTSTRAP_TIMEOUT");
  zu_param_reload();
}

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
  set("ZCCL_DEBUG_SUBSYS", "NET");
  CHECK(strcmp(zu_param_str(ZU_PARAM_DEBUG_SUBSYS), "NET") == 0);
  set("ZCCL_DEBUG_SUBSYS", "");
  CHECK(!zu_param_is_set(ZU_PARAM_DEBUG_SUBSYS));

  /* Integers. */
  unsetenv("ZCCL_CODEC_THREADS");
  zu_param_reload();
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclSuccess);
  CHECK(v == 0);
  set("ZCCL_CODEC_THREADS", "3");
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclSuccess);
  CHECK(v == 3);
  set("ZCCL_CODEC_THREADS", "three");
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_CODEC_THREADS='three' is not an integer");
  CHECK_RES(zu_param_int(ZU_PARAM_CODEC_THREADS, &v), zcclInvalidArgument); /* each read, as before */
  unsetenv("ZCCL_CODEC_THREADS");
  zu_param_reload();

  /* Subsystem lists. */
  uint32_t m = 0;
  CHECK(zu_log_parse_subsys("INIT,net", &m) == 0 && m == (ZU_LOG_INIT | ZU_LOG_NET));
  CHECK(zu_log_parse_subsys("^CODEC", &m) == 0 && (m & ZU_LOG_CODEC) == 0 && (m & ZU_LOG_COLL));
  CHECK(zu_log_parse_subsys("ALL", &m) == 0 && m == ZU_LOG_ALL);
  m = 5;
  CHECK(zu_log_parse_subsys("INIT,BOGUS", &m) != 0 && m == 5);

  /* The log (WARN lines) into a file of this run. */
  snprintf(log_path, sizeof log_path, "/tmp/zccl-params-%d.log", (int)getpid());
  snprintf(err_path, sizeof err_path, "/tmp/zccl-params-%d.err", (int)getpid());
  unlink(log_path);
  setenv("ZCCL_DEBUG", "WARN", 1);
  setenv("ZCCL_DEBUG_FILE", log_path, 1);
  zu_log_reset();
  test_cache();
  test_value_tables();
  test_bad_choices();
  test_bad_numbers();
  test_bad_log_settings();
  test_reload_beside_readers();
  unlink(log_path);
  TEST_DONE();
}
