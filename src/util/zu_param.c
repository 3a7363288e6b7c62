#include "zu_param.h"

#include "zu_error.h"
#include "zu_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>


static const zu_param_def_t zu_params[ZU_NUM_PARAMS] = {
#define ZU_PARAM_ROW(id, type, def, desc) {"ZCCL_" #id, ZU_PARAM_##type, def, desc},
    ZU_PARAM_LIST(ZU_PARAM_ROW)
#undef ZU_PARAM_ROW
};

/* The accepted values of the string parameters with a fixed set, beside
 * the table (whose rows hold the descriptions). list: comma-separated names,
 * parsed by the consumer; any_case: matched ignoring case, as the consumer
 * does. The consumers of BOOTSTRAP, UCX_ERR_MODE, CODEC_SIMD, DEVICE and
 * STREAM_MODE fail on an unknown value; the others carry on and say so
 * through zu_param_choice or zu_param_warn_bad. */
typedef struct {
  const char* values[12]; /* NULL-terminated */
  int any_case;
  int list;
} zu_param_enum_t;

static const zu_param_enum_t* const zu_param_enums[ZU_NUM_PARAMS] = {
    [ZU_PARAM_DEBUG] = &(const zu_param_enum_t){{"NONE", "VERSION", "WARN", "INFO", "TRACE"}, 1, 0},
    [ZU_PARAM_DEBUG_SUBSYS] = &(const zu_param_enum_t){{"INIT", "COLL", "P2P", "NET", "BOOTSTRAP", "CODEC",
                                                        "DEVICE", "TUNING", "ENV", "ALL"}, 1, 1},
    [ZU_PARAM_BOOTSTRAP] = &(const zu_param_enum_t){{"auto", "pmix", "tcp"}, 0, 0},
    [ZU_PARAM_UCX_ERR_MODE] = &(const zu_param_enum_t){{"none", "peer"}, 0, 0},
    [ZU_PARAM_CODEC_SIMD] = &(const zu_param_enum_t){{"auto", "scalar", "avx2", "avx2-gfni", "avx512"}, 0, 0},
    [ZU_PARAM_DEVICE] = &(const zu_param_enum_t){{"host", "sim", "cuda"}, 1, 0},
    [ZU_PARAM_STREAM_MODE] = &(const zu_param_enum_t){{"auto", "async", "blocking"}, 1, 0},
    [ZU_PARAM_MPI_COMMS] = &(const zu_param_enum_t){{"world", "all"}, 0, 0},
    [ZU_PARAM_MPI_OPS] = &(const zu_param_enum_t){{"all", "allreduce", "reduce", "reduce_scatter_block",
                                                   "reduce_scatter", "bcast", "allgather", "gather", "scatter",
                                                   "alltoall"}, 0, 1},
};

const zu_param_def_t* zu_param_def(zu_param_id_t id) {
  if ((int)id < 0 || id >= ZU_NUM_PARAMS) return NULL;
  return &zu_params[id];
}

const char* const* zu_param_values(zu_param_id_t id) {
  return zu_param_def(id) && zu_param_enums[id] ? zu_param_enums[id]->values : NULL;
}

/* ---- the cache -------------------------------------------------------------
 * One value of a parameter, parsed once. Never freed nor changed after it is
 * published (but for warned): a reader on another thread may hold it while
 * a reload publishes another. A parameter's values are interned, so the
 * memory kept is bounded by the distinct values the process ever set. */
typedef struct zu_param_val {
  struct zu_param_val* next; /* this parameter's other values */
  const char* text;          /* the environment's, else the default */
  int set;                   /* from the environment */
  int num_ok;                /* INT/SIZE: text parses, to num */
  int64_t num;
  atomic_int warned;         /* zu_param_warn_bad has reported it */
} zu_param_val_t;

static pthread_mutex_t zu_param_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int zu_param_loaded;
static zu_param_val_t* _Atomic zu_param_cur[ZU_NUM_PARAMS];
/* Under the lock: each parameter's values from the environment, its
 * default's, and the value last logged. */
static zu_param_val_t* zu_param_seen[ZU_NUM_PARAMS];
static zu_param_val_t zu_param_unset[ZU_NUM_PARAMS];
static const zu_param_val_t* zu_param_logged[ZU_NUM_PARAMS];

static void zu_param_parse(const zu_param_def_t* p, zu_param_val_t* v) {
  if (p->type == ZU_PARAM_SIZE) {
    v->num_ok = zu_parse_size(v->text, &v->num) == 0;
  } else { /* INT (a STR read as one, too) */
    char* end = NULL;
    errno = 0;
    long long ll = strtoll(v->text, &end, 10);
    v->num_ok = end != v->text && *end == '\0' && errno != ERANGE;
    v->num = v->num_ok ? ll : 0;
  }
}

/* Under the lock: the parameter's value for `text`, made at its first use;
 * NULL when out of memory. */
static zu_param_val_t* zu_param_intern(int id, const char* text) {
  for (zu_param_val_t* v = zu_param_seen[id]; v; v = v->next)
    if (strcmp(v->text, text) == 0) return v;
  size_t len = strlen(text) + 1;
  zu_param_val_t* v = calloc(1, sizeof *v + len);
  if (v == NULL) return NULL;
  v->text = memcpy(v + 1, text, len);
  v->set = 1;
  zu_param_parse(&zu_params[id], v);
  v->next = zu_param_seen[id];
  zu_param_seen[id] = v;
  return v;
}

/* Under the lock: reads the environment into the cache. */
static void zu_param_load_locked(void) {
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    zu_param_val_t* unset = &zu_param_unset[i];
    if (unset->text == NULL) {
      unset->text = zu_params[i].def;
      zu_param_parse(&zu_params[i], unset);
    }
    const char* env = getenv(zu_params[i].name);
    zu_param_val_t* v = env != NULL && env[0] != '\0' ? zu_param_intern(i, env) : unset;
    zu_param_val_t* was = atomic_load_explicit(&zu_param_cur[i], memory_order_relaxed);
    if (v == NULL) v = was ? was : unset; /* out of memory: keep what was read before */
    if (v != was) atomic_store_explicit(&zu_param_cur[i], v, memory_order_release);
  }
  atomic_store_explicit(&zu_param_loaded, 1, memory_order_release);
}

/* The first read loads and logs nothing: it may come from zu_log setting
 * itself up. The first reload logs the values set. */
static zu_param_val_t* zu_param_get(zu_param_id_t id) {
  if (!atomic_load_explicit(&zu_param_loaded, memory_order_acquire)) {
    pthread_mutex_lock(&zu_param_lock);
    if (!atomic_load_explicit(&zu_param_loaded, memory_order_relaxed)) zu_param_load_locked();
    pthread_mutex_unlock(&zu_param_lock);
  }
  return atomic_load_explicit(&zu_param_cur[id], memory_order_acquire);
}

void zu_param_reload(void) {
  const zu_param_val_t* changed[ZU_NUM_PARAMS] = {NULL};
  pthread_mutex_lock(&zu_param_lock);
  zu_param_load_locked();
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    const zu_param_val_t* v = atomic_load_explicit(&zu_param_cur[i], memory_order_relaxed);
    if (v == zu_param_logged[i] || (!v->set && zu_param_logged[i] == NULL)) continue;
    changed[i] = zu_param_logged[i] = v;
  }
  pthread_mutex_unlock(&zu_param_lock);
  /* After the unlock: logging reads ZCCL_DEBUG. */
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    if (changed[i] == NULL) continue;
    if (changed[i]->set)
      ZU_INFO(ZU_LOG_ENV, "%s='%s' (environment)", zu_params[i].name, changed[i]->text);
    else
      ZU_INFO(ZU_LOG_ENV, "%s unset: default '%s'", zu_params[i].name, changed[i]->text);
  }
}

int zu_param_is_set(zu_param_id_t id) {
  return zu_param_def(id) != NULL && zu_param_get(id)->set;
}

const char* zu_param_str(zu_param_id_t id) {
  const zu_param_def_t* p = zu_param_def(id);
  if (p == NULL) return "";
  return zu_param_get(id)->text;
}

/* zu_log's own settings are read while zu_log sets itself up, so what is
 * said about them goes straight to stderr, as zu_log did. */
static void zu_param_say(zu_param_id_t id, const char* msg) {
  if (id != ZU_PARAM_DEBUG && id != ZU_PARAM_DEBUG_SUBSYS && id != ZU_PARAM_DEBUG_FILE) {
    ZU_WARN("%s", msg);
    return;
  }
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  char* dot = strchr(host, '.');
  if (dot) *dot = '\0';
  fprintf(stderr, "%s:%d zccl WARN %s\n", host, (int)getpid(), msg);
}

/* "a, b, c" into buf. */
static void zu_param_join(const char* const* values, char* buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  for (int k = 0; values[k] && o < len; k++) {
    int n = snprintf(buf + o, len - o, "%s%s", k ? ", " : "", values[k]);
    o += n > 0 ? (size_t)n : 0;
  }
}

/* Says that value v of the parameter is not used, once per value. */
/* What is wrong with a number that does not parse, in words. */
static const char* zu_param_not_number(const zu_param_def_t* p) {
  return p->type == ZU_PARAM_SIZE ? "is not a size (e.g. 4096, 64K, 1M)" : "is not an integer";
}

static void zu_param_warn_val(zu_param_id_t id, zu_param_val_t* v, const char* used) {
  const zu_param_def_t* p = &zu_params[id];
  if (atomic_exchange(&v->warned, 1)) return;
  const zu_param_enum_t* e = zu_param_enums[id];
  char what[400] = "does not parse";
  if (e != NULL) {
    char list[320];
    zu_param_join(e->values, list, sizeof list);
    snprintf(what, sizeof what, "%s %s", e->list ? "names something not among" : "is not one of", list);
  } else if (p->type != ZU_PARAM_STR) {
    snprintf(what, sizeof what, "%s", zu_param_not_number(p));
  }
  char msg[1024];
  snprintf(msg, sizeof msg, "%s='%s' %s: using %s", p->name, v->text, what, used && used[0] ? used : "(none)");
  zu_param_say(id, msg);
}

void zu_param_warn_bad(zu_param_id_t id, const char* used) {
  if (zu_param_def(id) != NULL) zu_param_warn_val(id, zu_param_get(id), used);
}

int zu_param_choice(zu_param_id_t id) {
  const zu_param_enum_t* e = zu_param_def(id) ? zu_param_enums[id] : NULL;
  if (e == NULL) return -1;
  zu_param_val_t* v = zu_param_get(id);
  const char* text = v->text;
  int def = 0;
  for (int k = 0; e->values[k]; k++) {
    if (e->any_case ? strcasecmp(text, e->values[k]) == 0 : strcmp(text, e->values[k]) == 0) return k;
    if (strcmp(zu_params[id].def, e->values[k]) == 0) def = k;
  }
  zu_param_warn_val(id, v, zu_params[id].def);
  return def;
}

int zu_parse_size(const char* text, int64_t* value) {
  if (text == NULL) return -1;
  errno = 0;
  char* end = NULL;
  long long v = strtoll(text, &end, 0);
  if (end == text || errno == ERANGE) return -1;
  int shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
  }
  if (shift && (*end == 'i' || *end == 'B')) end++; /* "64KiB" / "64KB" */
  if (shift && *end == 'B') end++;
  if (*end != '\0') return -1;
  if (v < 0 ? v < (INT64_MIN >> shift) : v > (INT64_MAX >> shift)) return -1;
  *value = (int64_t)v * ((int64_t)1 << shift);
  return 0;
}

zcclResult_t zu_param_int(zu_param_id_t id, int64_t* value) {
  const zu_param_def_t* p = zu_param_def(id);
  ZU_RETURN_ERR_IF(p == NULL || value == NULL, zcclInternalError, "bad parameter id %d", (int)id);
  const zu_param_val_t* v = zu_param_get(id);
  ZU_RETURN_ERR_IF(!v->num_ok, zcclInvalidArgument, "%s='%s' %s", p->name, v->text, zu_param_not_number(p));
  *value = v->num;
  return zcclSuccess;
}

int64_t zu_param_int_or_default(zu_param_id_t id) {
  const zu_param_def_t* p = zu_param_def(id);
  if (p == NULL) return 0;
  zu_param_val_t* v = zu_param_get(id);
  if (v->num_ok) return v->num;
  zu_param_warn_val(id, v, p->def);
  return zu_param_unset[id].num; /* parsed at the first load, before v was published */
}

static const char* zu_param_type_name(zu_param_type_t t) {
  switch (t) {
    case ZU_PARAM_INT: return "integer";
    case ZU_PARAM_SIZE: return "size";
    default: return "string";
  }
}

void zu_param_print(FILE* out, int markdown) {
  if (markdown) {
    fprintf(out,
            "# Environment variables\n\n"
            "Generated by `zccl-info --params --markdown` from the parameter table in\n"
            "`src/util/zu_param.h`; a test fails when this file is out of date.\n"
            "Why each default is what it is: [measurements/defaults.md](measurements/defaults.md).\n\n"
            "| variable | type | default | meaning |\n"
            "|---|---|---|---|\n");
    for (int i = 0; i < ZU_NUM_PARAMS; i++) {
      const zu_param_def_t* p = &zu_params[i];
      fprintf(out, "| `%s` | %s | %s%s%s | %s |\n", p->name, zu_param_type_name(p->type),
              p->def[0] ? "`" : "", p->def[0] ? p->def : "(unset)", p->def[0] ? "`" : "", p->desc);
    }
    return;
  }
  for (int i = 0; i < ZU_NUM_PARAMS; i++) {
    const zu_param_def_t* p = &zu_params[i];
    const char* v = getenv(p->name);
    fprintf(out, "%-22s %-8s default=%-20s%s%s%s\n    %s\n", p->name, zu_param_type_name(p->type),
            p->def[0] ? p->def : "(unset)", v ? " set=\"" : "", v ? v : "", v ? "\"" : "", p->desc);
  }
}
