/* ZCCL_DEBUG / ZCCL_DEBUG_SUBSYS / ZCCL_DEBUG_FILE. CTest runs this with
 * ZCCL_DEBUG=INFO, ZCCL_DEBUG_SUBSYS=INIT and ZCCL_DEBUG_FILE=<dir>/log.%h.%p;
 * the test checks that the expanded file holds one line per event, in the
 * documented format, filtered by subsystem. */
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

int main(void) {
  const char* pattern = getenv("ZCCL_DEBUG_FILE");
  CHECK(pattern != NULL && strstr(pattern, "%h") && strstr(pattern, "%p"));
  if (pattern == NULL) TEST_DONE();

  zcclUniqueId id = {{0}};
  zcclComm_t comm;
  CHECK_RES(zcclCommInitRank(&comm, 1, id, 0), zcclSuccess);          /* INFO INIT line */
  CHECK_RES(zcclCommCount(comm, NULL), zcclInvalidArgument);          /* WARN line */
  float x = 0;
  CHECK_RES(zcclAllReduce(&x, &x, 0, zcclFloat32, zcclSum, comm, NULL), zcclSuccess); /* COLL: filtered */
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);                      /* INFO INIT line */

  char host[64] = "";
  gethostname(host, sizeof host - 1);
  char* dot = strchr(host, '.');
  if (dot) *dot = '\0';
  /* Expand the pattern the way the library documents it. */
  char path[512];
  size_t o = 0;
  for (const char* s = pattern; *s && o + 64 < sizeof path; s++) {
    if (s[0] == '%' && s[1] == 'h') o += (size_t)snprintf(path + o, sizeof path - o, "%s", host), s++;
    else if (s[0] == '%' && s[1] == 'p') o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid()), s++;
    else path[o++] = *s;
  }
  path[o] = '\0';
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  if (f == NULL) {
    fprintf(stderr, "no log file %s\n", path);
    TEST_DONE();
  }
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s:%d:", host, (int)getpid());
  char line[1200];
  int init_lines = 0, warn_lines = 0, other = 0, version_lines = 0;
  while (fgets(line, sizeof line, f)) {
    CHECK(strncmp(line, prefix, strlen(prefix)) == 0); /* host:pid:tid */
    if (strstr(line, "] zccl VERSION zccl version ")) {
      version_lines++; /* the banner, once per process */
    } else if (strstr(line, "] zccl INFO INIT ")) {
      init_lines++;
      CHECK(strstr(line, " [0] ") != NULL); /* the rank */
    } else if (strstr(line, " zccl WARN ") && strstr(line, "zcclCommCount: count is NULL")) {
      warn_lines++;
      CHECK(strstr(line, "zccl_comm.c:") != NULL); /* file:line of the cause */
    } else if (strstr(line, " zccl INFO ") && strstr(line, "-> 4")) {
      other++; /* error trail (subsystem ALL passes every filter) */
    } else {
      fprintf(stderr, "unexpected log line: %s", line);
      CHECK(0);
    }
  }
  fclose(f);
  CHECK(init_lines >= 2);
  CHECK(warn_lines == 1);
  CHECK(version_lines == 1);
  unlink(path);
  TEST_DONE();
}
