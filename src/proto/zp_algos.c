/* Every algorithm, in one table, and the choice among them: ZCCL_ALGO's
 * rules first, then the cost model. Adding an algorithm is its descriptor
 * in the file of its family and one row here. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_algo.h"
#include "zp_stream.h"
#include "zu_log.h"
#include "zu_param.h"

/* One row per algorithm; within a kind (uncompressed, or a codec's), ties
 * in cost go to the earlier row. */
#define ZP_ALGO_LIST(X)                                                                                    \
  X(zp_algo_ring_allreduce) X(zp_algo_rd_allreduce) X(zp_algo_rabenseifner_allreduce)                      \
  X(zp_algo_direct_allreduce) X(zp_algo_oneshot_allreduce) X(zp_algo_ring_reduce_scatter)                   \
  X(zp_algo_ring_allgather) X(zp_algo_rd_allgather)                                                        \
  X(zp_algo_bruck_allgather) X(zp_algo_direct_allgather) X(zp_algo_tree_broadcast)                         \
  X(zp_algo_chain_broadcast) X(zp_algo_scatter_allgather_broadcast) X(zp_algo_direct_broadcast)            \
  X(zp_algo_tree_reduce) X(zp_algo_chain_reduce) X(zp_algo_tree_gather) X(zp_algo_linear_gather)           \
  X(zp_algo_tree_scatter) X(zp_algo_linear_scatter) X(zp_algo_pairwise_alltoall)                           \
  X(zp_algo_hz_ring_allreduce) X(zp_algo_hz_rd_allreduce) X(zp_algo_hz_ring_reduce_scatter)                \
  X(zp_algo_doc_ring_allreduce) X(zp_algo_doc_ring_reduce_scatter) X(zp_algo_doc_chain_reduce)             \
  X(zp_algo_hz_tree_reduce) X(zp_algo_once_allgather) X(zp_algo_once_pipe_allgather)                       \
  X(zp_algo_once_broadcast)                                                                                \
  X(zp_algo_once_chain_broadcast) X(zp_algo_once_scatter) X(zp_algo_once_gather) X(zp_algo_once_alltoall)  \
  X(zp_algo_cpr_allreduce) X(zp_algo_cpr_allgather) X(zp_algo_cpr_broadcast) X(zp_algo_cpr_reduce_scatter) \
  X(zp_algo_cpr_reduce) X(zp_algo_sparse_reduce) X(zp_algo_sparse_allreduce)

#define ZP_ALGO_DECLARE(d) extern const zp_algo_t d;
ZP_ALGO_LIST(ZP_ALGO_DECLARE)
#undef ZP_ALGO_DECLARE

static const zp_algo_t* const zp_algo_table[] = {
#define ZP_ALGO_ROW(d) &d,
    ZP_ALGO_LIST(ZP_ALGO_ROW)
#undef ZP_ALGO_ROW
};
#define ZP_NUM_ALGOS (sizeof zp_algo_table / sizeof zp_algo_table[0])

size_t zp_algo_count(void) { return ZP_NUM_ALGOS; }
const zp_algo_t* zp_algo_at(size_t i) { return i < ZP_NUM_ALGOS ? zp_algo_table[i] : NULL; }

/* ---- choosing -------------------------------------------------------------------- */
/* The codec's capabilities (0: none, or not a codec). */
static unsigned zp_codec_caps(int codec) {
  const zc_codec_info_t* ci = zc_codec_info(codec);
  return ci ? ci->caps : 0;
}

static int zp_algo_fits(const zp_algo_t* al, zp_coll_id_t coll, int codec) {
  if (al->coll != coll) return 0;
  return codec == zcclCodecNone ? al->needs == 0 : (al->needs & zp_codec_caps(codec)) != 0;
}

/* The first algorithm a rule names for this call, NULL: none. ctx NULL:
 * without asking whether it can run the call. */
static const zp_algo_t* zp_algo_ruled(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_algo_rules_t* rules,
                                      size_t room) {
  int codec = a->compression.codec;
  uint64_t bytes = (uint64_t)a->count * zu_dtype_size(a->datatype);
  for (int i = 0; rules && i < rules->n; i++) {
    const zp_algo_rule_t* r = &rules->rule[i];
    if ((r->coll >= 0 && r->coll != (int)a->coll) || bytes < r->lo || bytes > r->hi) continue;
    for (size_t k = 0; k < ZP_NUM_ALGOS; k++) {
      const zp_algo_t* al = zp_algo_table[k];
      /* Compressed algorithms have no pool limit of their own: they slice. */
      if (zp_algo_fits(al, a->coll, codec) && strcmp(al->name, r->name) == 0 &&
          (codec != zcclCodecNone || !al->usable || !ctx || al->usable(ctx, a, room)))
        return al;
    }
  }
  return NULL;
}

const zp_algo_t* zp_algo_ruled_for(const zp_coll_args_t* a, const zp_algo_rules_t* rules) {
  return zp_algo_ruled(NULL, a, rules, 0);
}

/* Whether m holds the choice for this call (zp_choice_memo_t). */
static int zp_memo_holds(const zp_choice_memo_t* m, const zp_ctx_t* ctx, const zp_coll_args_t* a,
                         const zp_algo_rules_t* rules, size_t room) {
  const zp_coll_args_t* b = &m->a;
  const zcclCompression_t *c = &a->compression, *d = &b->compression;
  return m->valid && m->dev == ctx->dev && m->rules == rules && m->room == room && a->coll == b->coll &&
         a->count == b->count && a->datatype == b->datatype && a->op == b->op && a->root == b->root &&
         a->rank == b->rank && a->nranks == b->nranks && a->premul == b->premul && c->codec == d->codec &&
         c->mode == d->mode && c->eb == d->eb && c->hasFill == d->hasFill && c->fillValue == d->fillValue &&
         c->minBytes == d->minBytes && memcmp(&m->link, ctx->link, sizeof m->link) == 0;
}

const zp_algo_t* zp_algo_select(const zp_ctx_t* ctx, const zp_coll_args_t* a, const zp_algo_rules_t* rules,
                                double* t, int* by_rule) {
  int codec = a->compression.codec;
  if (by_rule) *by_rule = 0;
  const zc_codec_info_t* ci = zc_codec_info(codec);
  unsigned caps = ci ? ci->caps : 0;
  if (codec != zcclCodecNone && (caps == 0 || !zd_codec_runs(ctx->dev, ci))) return NULL;
  size_t room = codec == zcclCodecNone ? zd_buf_largest(ctx->dev) : 0;
  zp_choice_memo_t* memo = codec == zcclCodecNone && ctx->link ? ctx->memo : NULL;
  if (memo && zp_memo_holds(memo, ctx, a, rules, room)) {
    if (by_rule) *by_rule = memo->by_rule;
    *t = memo->t;
    return memo->algo;
  }
  const zp_algo_t* best = zp_algo_ruled(ctx, a, rules, room);
  int ruled = best != NULL;
  if (best) {
    *t = best->cost(ctx, a);
  } else {
    for (size_t k = 0; k < ZP_NUM_ALGOS; k++) {
      const zp_algo_t* al = zp_algo_table[k];
      if (!zp_algo_fits(al, a->coll, codec) || (al->forced_only & caps)) continue;
      if (codec == zcclCodecNone && al->usable && !al->usable(ctx, a, room)) continue;
      double ti = al->cost(ctx, a);
      if (best == NULL || ti < *t) best = al, *t = ti;
    }
  }
  if (best && codec != zcclCodecNone) *t += zp_eb_cost(ctx, a);
  if (by_rule) *by_rule = ruled;
  if (memo && best)
    *memo = (zp_choice_memo_t){.valid = 1, .a = *a, .link = *ctx->link, .dev = ctx->dev, .rules = rules,
                               .room = room, .algo = best, .t = *t, .by_rule = ruled};
  return best;
}

/* ---- ZCCL_ALGO's rules ---------------------------------------------------------- */
static const char* const zp_rule_colls[ZP_NUM_COLLS] = {
    [ZP_COLL_ALLREDUCE] = "allreduce", [ZP_COLL_BROADCAST] = "broadcast", [ZP_COLL_REDUCE] = "reduce",
    [ZP_COLL_ALLGATHER] = "allgather", [ZP_COLL_REDUCESCATTER] = "reducescatter", [ZP_COLL_ALLTOALL] = "alltoall",
    [ZP_COLL_GATHER] = "gather", [ZP_COLL_SCATTER] = "scatter"};

const char* zp_algo_coll_name(zp_coll_id_t coll) {
  return coll >= 0 && coll < ZP_NUM_COLLS && zp_rule_colls[coll] ? zp_rule_colls[coll] : "?";
}

/* len bytes at s as a collective (NCCL's and MPI's spellings too), -2: none. */
static int zp_rule_coll(const char* s, size_t len) {
  static const struct { const char* name; zp_coll_id_t coll; } alias[] = {
      {"bcast", ZP_COLL_BROADCAST}, {"reduce_scatter", ZP_COLL_REDUCESCATTER}, {"all_reduce", ZP_COLL_ALLREDUCE},
      {"all_gather", ZP_COLL_ALLGATHER}};
  for (int c = 0; c < ZP_NUM_COLLS; c++)
    if (zp_rule_colls[c] && strlen(zp_rule_colls[c]) == len && strncasecmp(s, zp_rule_colls[c], len) == 0) return c;
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strlen(alias[i].name) == len && strncasecmp(s, alias[i].name, len) == 0) return (int)alias[i].coll;
  return -2;
}

/* The table's string for an algorithm of that name (for coll, or any when
 * coll < 0), NULL: none. */
static const char* zp_rule_name(const char* s, size_t len, int coll) {
  for (size_t k = 0; k < ZP_NUM_ALGOS; k++) {
    const zp_algo_t* al = zp_algo_table[k];
    if ((coll < 0 || (int)al->coll == coll) && strlen(al->name) == len && strncasecmp(s, al->name, len) == 0)
      return al->name;
  }
  return NULL;
}

/* "lo-hi", "lo-", "-hi" (sizes as zu_parse_size reads them): 0 ok. */
static int zp_rule_range(const char* s, size_t len, uint64_t* lo, uint64_t* hi) {
  char buf[64];
  if (len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  char* dash = strchr(buf, '-');
  if (dash == NULL) return -1;
  *dash = '\0';
  int64_t v;
  *lo = 0, *hi = UINT64_MAX;
  if (buf[0] && (zu_parse_size(buf, &v) != 0 || v < 0)) return -1;
  if (buf[0]) *lo = (uint64_t)v;
  if (dash[1] && (zu_parse_size(dash + 1, &v) != 0 || v < 0)) return -1;
  if (dash[1]) *hi = (uint64_t)v;
  return *lo <= *hi ? 0 : -1;
}

/* The names the table has for coll (every collective when coll < 0), for
 * a warning. */
static void zp_rule_known(int coll, char* out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t k = 0; k < ZP_NUM_ALGOS && len < cap; k++) {
    const zp_algo_t* al = zp_algo_table[k];
    if (coll >= 0 && (int)al->coll != coll) continue;
    size_t j = 0; /* said once */
    while (j < k && !((coll < 0 || (int)zp_algo_table[j]->coll == coll) && !strcmp(zp_algo_table[j]->name, al->name)))
      j++;
    if (j < k) continue;
    int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", al->name);
    if (w > 0) len += (size_t)w;
  }
}

/* Said once a process: a value read at every communicator's creation. */
static atomic_int zp_rules_warned;

static void zp_rule_warn(const char* text, const char* entry, size_t len, const char* why, int coll) {
  if (atomic_exchange(&zp_rules_warned, 1)) return;
  char known[512];
  zp_rule_known(coll, known, sizeof known);
  ZU_WARN("ZCCL_ALGO='%s': '%.*s' %s; it is left out (the cost model chooses there). Syntax: "
          "[collective:]name[@lo-hi][,name...][;...]; collectives: allreduce, broadcast, reduce, allgather, "
          "reducescatter, alltoall, gather, scatter; algorithms%s%s: %s",
          text, (int)len, entry, why, coll >= 0 ? " of " : "", coll >= 0 ? zp_rule_colls[coll] : "", known);
}

/* Without the blanks around it. */
static void zp_rule_trim(const char** s, size_t* len) {
  while (*len && (**s == ' ' || **s == '\t')) (*s)++, (*len)--;
  while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) (*len)--;
}

/* One entry "name[@lo-hi]" of a rule for coll; 0 when added. */
static int zp_rule_entry(const char* text, const char* s, size_t len, int coll, zp_algo_rule_t* r) {
  zp_rule_trim(&s, &len);
  if (len == 0) return -1;
  const char* at = memchr(s, '@', len);
  size_t nlen = at ? (size_t)(at - s) : len;
  r->coll = coll;
  r->name = zp_rule_name(s, nlen, coll);
  if (r->name == NULL) {
    zp_rule_warn(text, s, len, zp_rule_name(s, nlen, -1) ? "is not an algorithm of this collective"
                                                          : "names no algorithm", coll);
    return -1;
  }
  r->lo = 0, r->hi = UINT64_MAX;
  if (at && zp_rule_range(at + 1, len - nlen - 1, &r->lo, &r->hi) != 0) {
    zp_rule_warn(text, s, len, "has no byte range lo-hi (e.g. 0-4M, 64K-)", coll);
    return -1;
  }
  return 0;
}

/* Adds the entries of one rule ("[coll:]entry,entry") whose collective
 * is (own) or is not (!own) given. */
static void zp_rule_parse(const char* text, const char* s, size_t len, int own, zp_algo_rules_t* rules) {
  const char* colon = memchr(s, ':', len);
  int coll = -1;
  if (colon) {
    const char* c = s;
    size_t clen = (size_t)(colon - s);
    zp_rule_trim(&c, &clen);
    coll = zp_rule_coll(c, clen);
    if (coll == -2) {
      if (own) zp_rule_warn(text, s, (size_t)(colon - s), "names no collective", -1);
      return;
    }
    len -= (size_t)(colon + 1 - s), s = colon + 1;
  }
  if ((coll >= 0) != own) return;
  while (len > 0) {
    const char* comma = memchr(s, ',', len);
    size_t elen = comma ? (size_t)(comma - s) : len;
    if (rules->n < ZP_ALGO_RULES_MAX && zp_rule_entry(text, s, elen, coll, &rules->rule[rules->n]) == 0)
      rules->n++;
    len -= comma ? elen + 1 : elen, s += comma ? elen + 1 : elen;
  }
}

void zp_algo_rules_parse(const char* text, zp_algo_rules_t* rules) {
  rules->n = 0;
  if (text == NULL) return;
  /* Two passes: the rules naming a collective go before those that do not. */
  for (int own = 1; own >= 0; own--)
    for (const char* s = text; *s;) {
      size_t len = strcspn(s, ";");
      zp_rule_parse(text, s, len, own, rules);
      s += len + (s[len] == ';');
    }
}
