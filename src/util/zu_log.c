#include "zu_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zu_error.h"
#include "zu_param.h"

static pthread_once_t zu_log_once = PTHREAD_ONCE_INIT;
/* Atomic: zu_log_reset may read the settings again while other threads log. */
static _Atomic int zu_level = ZU_LOG_WARN;
static _Atomic uint32_t zu_mask = ZU_LOG_INIT | ZU_LOG_BOOTSTRAP | ZU_LOG_ENV;
static FILE* _Atomic zu_log_file = NULL; /* NULL: stderr */
static pthread_mutex_t zu_log_reset_mu = PTHREAD_MUTEX_INITIALIZER;
static char zu_host[64] = "?";
static _Thread_local int zu_log_rank = -1;

static const struct {
  const char* name;
  uint32_t bit;
} zu_subsys_names[] = {
    {"INIT", ZU_LOG_INIT}, {"COLL", ZU_LOG_COLL},     {"P2P", ZU_LOG_P2P},
    {"NET", ZU_LOG_NET},   {"BOOTSTRAP", ZU_LOG_BOOTSTRAP}, {"CODEC", ZU_LOG_CODEC},
    {"DEVICE", ZU_LOG_DEVICE}, {"TUNING", ZU_LOG_TUNING}, {"ENV", ZU_LOG_ENV},
    {"ALL", ZU_LOG_ALL},
};

int zu_log_parse_subsys(const char* text, uint32_t* mask) {
  int invert = 0;
  if (text[0] == '^') {
    invert = 1;
    text++;
  }
  uint32_t m = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    size_t i, n = sizeof zu_subsys_names / sizeof zu_subsys_names[0];
    for (i = 0; i < n; i++)
      if (strcasecmp(tok, zu_subsys_names[i].name) == 0) break;
    if (i == n) return -1;
    m |= zu_subsys_names[i].bit;
  }
  *mask = invert ? ~m : m;
  return 0;
}

static const char* zu_subsys_name(uint32_t subsys) {
  if (subsys == ZU_LOG_ALL) return "";
  for (size_t i = 0; i < sizeof zu_subsys_names / sizeof zu_subsys_names[0]; i++)
    if (zu_subsys_names[i].bit == subsys) return zu_subsys_names[i].name;
  return "";
}

/* Expands %h (host) and %p (pid) in a ZCCL_DEBUG_FILE pattern. */
static void zu_log_expand_path(const char* pattern, char* out, size_t len) {
  size_t o = 0;
  for (const char* s = pattern; *s && o + 1 < len; s++) {
    if (s[0] == '%' && (s[1] == 'h' || s[1] == 'p')) {
      int n = s[1] == 'h' ? snprintf(out + o, len - o, "%s", zu_host)
                          : snprintf(out + o, len - o, "%d", (int)getpid());
      o += (n > 0 && (size_t)n < len - o) ? (size_t)n : 0;
      s++;
    } else {
      out[o++] = *s;
    }
  }
  out[o] = '\0';
}

/* The settings from the environment (ZCCL_DEBUG, _FILE, _SUBSYS). */
static void zu_log_load(void) {
  /* An unknown level is reported once (to stderr) and WARN used. */
  atomic_store(&zu_level, zu_param_choice(ZU_PARAM_DEBUG));
  const char* file = zu_param_str(ZU_PARAM_DEBUG_FILE);
  if (file[0] != '\0') {
    char path[512];
    zu_log_expand_path(file, path, sizeof path);
    /* A file opened before stays open: another thread may be writing to it. */
    FILE* f = fopen(path, "a");
    if (f == NULL)
      fprintf(stderr, "%s:%d zccl WARN cannot open ZCCL_DEBUG_FILE '%s'; logging to stderr\n",
              zu_host, (int)getpid(), path);
    else
      setvbuf(f, NULL, _IOLBF, 0);
    atomic_store(&zu_log_file, f);
  } else {
    atomic_store(&zu_log_file, NULL);
  }
  const char* sub = zu_param_str(ZU_PARAM_DEBUG_SUBSYS);
  uint32_t mask = ZU_LOG_INIT | ZU_LOG_BOOTSTRAP | ZU_LOG_ENV;
  if (zu_log_parse_subsys(sub, &mask) != 0) /* reported once (to stderr) */
    zu_param_warn_bad(ZU_PARAM_DEBUG_SUBSYS, zu_param_def(ZU_PARAM_DEBUG_SUBSYS)->def);
  atomic_store(&zu_mask, mask);
}

static void zu_log_init(void) {
  gethostname(zu_host, sizeof zu_host - 1);
  zu_host[sizeof zu_host - 1] = '\0';
  char* dot = strchr(zu_host, '.');
  if (dot) *dot = '\0';
  zu_log_load();
}

void zu_log_reset(void) {
  pthread_once(&zu_log_once, zu_log_init);
  zu_param_reload(); /* logs with the settings before */
  pthread_mutex_lock(&zu_log_reset_mu);
  zu_log_load();
  pthread_mutex_unlock(&zu_log_reset_mu);
}

zu_log_level_t zu_log_level(void) {
  pthread_once(&zu_log_once, zu_log_init);
  return (zu_log_level_t)atomic_load_explicit(&zu_level, memory_order_relaxed);
}

uint32_t zu_log_mask(void) {
  pthread_once(&zu_log_once, zu_log_init);
  return atomic_load_explicit(&zu_mask, memory_order_relaxed);
}

void zu_log_set_rank(int rank) { zu_log_rank = rank; }

void zu_log(zu_log_level_t level, uint32_t subsys, const char* file, int line, const char* fmt, ...) {
  pthread_once(&zu_log_once, zu_log_init);
  static const char* tags[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
  char msg[1024];
  char rank[16] = "-";
  if (zu_log_rank >= 0) snprintf(rank, sizeof rank, "%d", zu_log_rank);
  const char* sub = zu_subsys_name(subsys);
  int n = snprintf(msg, sizeof msg, "%s:%d:%ld [%s] zccl %s %s%s", zu_host, (int)getpid(),
                   (long)syscall(SYS_gettid), rank, tags[level], sub, sub[0] ? " " : "");
  if (level == ZU_LOG_TRACE && n > 0 && (size_t)n < sizeof msg)
    n += snprintf(msg + n, sizeof msg - n, "%s:%d ", zu_basename(file), line);
  if (n > 0 && (size_t)n < sizeof msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - n, fmt, ap);
    va_end(ap);
  }
  FILE* f = atomic_load(&zu_log_file);
  FILE* out = f ? f : stderr;
  fprintf(out, "%s\n", msg); /* one call: lines from threads don't interleave */
}
