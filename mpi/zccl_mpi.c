/* libzccl-mpi.so: MPI's collectives on zccl through the MPI profiling
 * interface (docs/mpi.md). Preloaded into an unchanged MPI program, its
 * MPI_Allreduce, MPI_Bcast, ... take the calls zccl can serve (float or
 * double data, SUM/MAX/MIN, at least ZCCL_MPI_MIN_BYTES, a communicator
 * ZCCL_MPI_COMMS allows, a collective ZCCL_MPI_OPS names) to the zccl
 * communicator of their MPI communicator, made at the first such call over
 * the MPI communicator itself and freed with it (an attribute's delete
 * callback), where zccl would compress it (ZCCL_COMPRESSION; with it off,
 * nothing is taken unless ZCCL_MPI_UNCOMPRESSED=1); every other call goes
 * to PMPI_* unchanged. It owns no collective logic.
 *
 * Every rank must decide alike, or some would wait in zccl for ranks gone
 * to MPI: the decision reads only what MPI requires to be the same on
 * every rank (counts, datatypes, ops, the root, the communicator), and the
 * environment (the same on every rank under a launcher). */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zccl.h"
#include "zu_log.h"
#include "zu_param.h"

#define ZM_LOG (ZU_LOG_INIT | ZU_LOG_COLL) /* shown by ZCCL_DEBUG=INFO with the default subsystems */

typedef enum {
  ZM_ALLREDUCE,
  ZM_REDUCE,
  ZM_REDUCE_SCATTER_BLOCK,
  ZM_REDUCE_SCATTER,
  ZM_BCAST,
  ZM_ALLGATHER,
  ZM_GATHER,
  ZM_SCATTER,
  ZM_ALLTOALL,
  ZM_NUM
} zm_coll_t;

/* ZCCL_MPI_OPS's accepted values in zu_param.c are "all" and these. */
static const char* const zm_names[ZM_NUM] = {"allreduce", "reduce",  "reduce_scatter_block", "reduce_scatter",
                                             "bcast",     "allgather", "gather",             "scatter",
                                             "alltoall"};

/* One MPI communicator's zccl communicator (its attribute's value). */
typedef struct zm_comm {
  MPI_Comm mpi;
  zcclComm_t zc; /* NULL: every call on it goes to MPI (one rank, an intercommunicator, not allowed, failed) */
  struct zm_comm* next;
} zm_comm_t;

static struct {
  pthread_once_t once;
  int keyval;
  int64_t min_bytes;
  int64_t uncompressed; /* ZCCL_MPI_UNCOMPRESSED */
  int none;             /* nothing would go to zccl (compression off, not asked): no communicators made */
  int world_only;
  unsigned ops; /* bit per zm_coll_t */
  pthread_mutex_t lock; /* the list and the decisions logged */
  zm_comm_t* comms;
  atomic_ullong calls[ZM_NUM], passed[ZM_NUM], bytes[ZM_NUM];
  _Atomic double seconds;
  uint64_t raw, wire; /* compressed traffic of the communicators already freed */
  struct {
    void* site;
    int coll, zccl;
  } said[64]; /* decisions logged, once per call site */
  int nsaid;
} zm = {.once = PTHREAD_ONCE_INIT, .keyval = MPI_KEYVAL_INVALID, .lock = PTHREAD_MUTEX_INITIALIZER};

static double zm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- settings ---------------------------------------------------------------- */

static void zm_settings(void) {
  /* Malformed: reported once, the default used. */
  zm.min_bytes = zu_param_int_or_default(ZU_PARAM_MPI_MIN_BYTES);
  zm.uncompressed = zu_param_int_or_default(ZU_PARAM_MPI_UNCOMPRESSED);
  /* ZCCL_COMPRESSION is every new communicator's setting: off (or
   * malformed, which communicator creation would refuse), nothing is taken
   * unless asked, and no zccl communicator is made for nothing. */
  zcclCompression_t env = ZCCL_COMPRESSION_INITIALIZER;
  int off = zcclCompressionFromString(zu_param_str(ZU_PARAM_COMPRESSION), &env) != zcclSuccess ||
            env.codec == zcclCodecNone;
  zm.none = off && !zm.uncompressed;
  zm.world_only = zu_param_choice(ZU_PARAM_MPI_COMMS) == 0; /* world; an unknown value: all, reported once */
  const char* ops = zu_param_str(ZU_PARAM_MPI_OPS);
  zm.ops = 0;
  char list[256], used[256] = "";
  int unknown = 0;
  snprintf(list, sizeof list, "%s", ops);
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int known = strcmp(t, "all") == 0;
    if (known) zm.ops = (1u << ZM_NUM) - 1;
    for (int c = 0; c < ZM_NUM; c++)
      if (strcmp(t, zm_names[c]) == 0) zm.ops |= 1u << c, known = 1;
    if (known) snprintf(used + strlen(used), sizeof used - strlen(used), "%s%s", used[0] ? "," : "", t);
    unknown |= !known;
  }
  if (unknown) zu_param_warn_bad(ZU_PARAM_MPI_OPS, used); /* the names it knows; once */
  ZU_INFO(ZM_LOG, "libzccl-mpi: collectives of at least %lld bytes on %s communicators (ZCCL_MPI_OPS=%s) go to "
          "zccl", (long long)zm.min_bytes, zm.world_only ? "MPI_COMM_WORLD's" : "all", ops);
}

/* ---- communicators ------------------------------------------------------------- */

static void zm_stats_take(zm_comm_t* m) {
  uint64_t raw = 0, wire = 0;
  if (m->zc && zcclCommCompressionStats(m->zc, &raw, &wire) == zcclSuccess) zm.raw += raw, zm.wire += wire;
}

/* MPI_Comm_free (or MPI_Finalize) of a communicator that has one. */
static int zm_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm, (void)keyval, (void)extra;
  zm_comm_t* m = value;
  pthread_mutex_lock(&zm.lock);
  for (zm_comm_t** p = &zm.comms; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  zm_stats_take(m);
  pthread_mutex_unlock(&zm.lock);
  if (m->zc) zcclCommDestroy(m->zc);
  free(m);
  return MPI_SUCCESS;
}

static void zm_init_once(void) {
  zm_settings();
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, zm_delete, &zm.keyval, NULL) != MPI_SUCCESS)
    zm.keyval = MPI_KEYVAL_INVALID;
}

/* The zccl communicator of comm, made at its first call here: every rank
 * of comm is in the same call (a collective), so they meet through rank 0's
 * unique id, and all agree whether every rank got one. */
static zcclComm_t zm_comm(MPI_Comm comm) {
  pthread_once(&zm.once, zm_init_once);
  if (zm.keyval == MPI_KEYVAL_INVALID) return NULL;
  void* value = NULL;
  int found = 0;
  PMPI_Comm_get_attr(comm, zm.keyval, &value, &found);
  if (found) return ((zm_comm_t*)value)->zc;
  zm_comm_t* m = calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  m->mpi = comm;
  int inter = 0, rank = 0, size = 1, same = MPI_UNEQUAL;
  PMPI_Comm_test_inter(comm, &inter);
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
  if (!inter && size > 1 && (!zm.world_only || same == MPI_IDENT)) {
    zcclUniqueId id;
    int ok = rank != 0 || zcclGetUniqueId(&id) == zcclSuccess, all = 0;
    PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) PMPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
    ok = ok && zcclCommInitRank(&m->zc, size, id, rank) == zcclSuccess;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all && m->zc) zcclCommDestroy(m->zc), m->zc = NULL;
    if (!all)
      ZU_WARN("libzccl-mpi: a rank could not make the zccl communicator of an MPI communicator of %d ranks; its "
              "calls go to MPI", size);
  }
  PMPI_Comm_set_attr(comm, zm.keyval, m);
  pthread_mutex_lock(&zm.lock);
  m->next = zm.comms;
  zm.comms = m;
  pthread_mutex_unlock(&zm.lock);
  return m->zc;
}

/* ---- deciding ------------------------------------------------------------------ */

static zcclDataType_t zm_dtype(MPI_Datatype dt) {
  return dt == MPI_FLOAT ? zcclFloat32 : dt == MPI_DOUBLE ? zcclFloat64 : zcclNumTypes;
}

static zcclRedOp_t zm_op(MPI_Op op) {
  return op == MPI_SUM ? zcclSum : op == MPI_MAX ? zcclMax : op == MPI_MIN ? zcclMin : zcclNumOps;
}

static void zm_say(void* site, zm_coll_t c, int to_zccl, const char* why) {
  if (!ZU_LOG_ENABLED(ZU_LOG_INFO, ZM_LOG)) return;
  pthread_mutex_lock(&zm.lock);
  int seen = 0;
  for (int i = 0; i < zm.nsaid && !seen; i++)
    seen = zm.said[i].site == site && zm.said[i].coll == (int)c && zm.said[i].zccl == to_zccl;
  if (!seen && zm.nsaid < (int)(sizeof zm.said / sizeof zm.said[0]))
    zm.said[zm.nsaid++] = (__typeof__(zm.said[0])){site, (int)c, to_zccl};
  pthread_mutex_unlock(&zm.lock);
  if (!seen) ZU_INFO(ZM_LOG, "MPI_%s called from %p: %s", zm_names[c], site, why);
}

/* Whether zccl would compress a call of these bytes on zc: nothing else is
 * gained by taking it from MPI, which moves the same bytes with algorithms
 * tuned for the machine (codec=auto: zccl's model decides per call, so
 * those calls go to zccl). */
static int zm_compresses(zcclComm_t zc, size_t bytes) {
  zcclCompression_t c;
  return zcclCommGetCompression(zc, &c) == zcclSuccess && c.codec != zcclCodecNone &&
         c.codec != ZCCL_CONFIG_UNDEF_INT && bytes >= c.minBytes;
}

/* Whether the call goes to zccl (then *zc is its communicator). no: why
 * not, found by the caller (NULL: nothing yet). dt and count: the data
 * every rank moves; op the reduction (reduces 1). Counted either way. */
static int zm_take(void* site, zm_coll_t c, const char* no, MPI_Comm comm, MPI_Datatype dt, size_t count, MPI_Op op,
                   int reduces, zcclDataType_t* zdt, zcclRedOp_t* zop, zcclComm_t* zc) {
  pthread_once(&zm.once, zm_init_once);
  const char* why = no;
  *zdt = zm_dtype(dt);
  *zop = reduces ? zm_op(op) : zcclSum;
  size_t bytes = *zdt == zcclFloat32 ? 4 * count : 8 * count;
  if (why)
    ;
  else if (zm.none)
    why = "to MPI: ZCCL_COMPRESSION is off (ZCCL_MPI_UNCOMPRESSED=1 takes calls to zccl anyway)";
  else if (!(zm.ops & (1u << c)))
    why = "to MPI: not in ZCCL_MPI_OPS";
  else if (*zdt == zcclNumTypes)
    why = "to MPI: not MPI_FLOAT or MPI_DOUBLE";
  else if (*zop == zcclNumOps)
    why = "to MPI: not MPI_SUM, MPI_MAX or MPI_MIN";
  else if ((int64_t)bytes < zm.min_bytes)
    why = "to MPI: fewer bytes than ZCCL_MPI_MIN_BYTES";
  else if ((*zc = zm_comm(comm)) == NULL)
    why = "to MPI: the communicator has no zccl one (one rank, an intercommunicator, ZCCL_MPI_COMMS, or it failed)";
  else if (!zm.uncompressed && !zm_compresses(*zc, bytes))
    why = "to MPI: zccl would not compress it (ZCCL_COMPRESSION off or below its min_bytes; "
          "ZCCL_MPI_UNCOMPRESSED=1 takes it anyway)";
  if (why) {
    atomic_fetch_add(&zm.passed[c], 1);
    zm_say(site, c, 0, why);
    return 0;
  }
  atomic_fetch_add(&zm.calls[c], 1);
  atomic_fetch_add(&zm.bytes[c], bytes);
  zm_say(site, c, 1, "to zccl");
  return 1;
}

/* A zccl call's result as MPI's: a failure goes to the communicator's
 * error handler (the default one aborts the job), as MPI's own would. */
static int zm_done(MPI_Comm comm, zcclResult_t res, double t0) {
  double dt = zm_now() - t0, cur = atomic_load(&zm.seconds);
  while (!atomic_compare_exchange_weak(&zm.seconds, &cur, cur + dt)) {
  }
  if (res == zcclSuccess) return MPI_SUCCESS;
  int code = MPI_ERR_OTHER;
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

#define ZM_SITE __builtin_return_address(0)

/* ---- the collectives ----------------------------------------------------------- */

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  if (!zm_take(ZM_SITE, ZM_ALLREDUCE, count < 0 ? "to MPI: negative count" : NULL, comm, datatype, (size_t)count, op,
               1, &t, &o, &zc))
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  double t0 = zm_now();
  const void* s = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return zm_done(comm, zcclAllReduce(s, recvbuf, (size_t)count, t, o, zc, NULL), t0);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  if (!zm_take(ZM_SITE, ZM_REDUCE, count < 0 ? "to MPI: negative count" : NULL, comm, datatype, (size_t)count, op, 1,
               &t, &o, &zc))
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  double t0 = zm_now();
  const void* s = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf; /* MPI_IN_PLACE: the root's */
  return zm_done(comm, zcclReduce(s, recvbuf, (size_t)count, t, o, root, zc, NULL), t0);
}

/* MPI's in-place form holds the whole input in recvbuf and wants this
 * rank's block at its start; zccl's in place leaves it at rank * count. */
static zcclResult_t zm_reduce_scatter(const void* sendbuf, void* recvbuf, size_t count, zcclDataType_t t,
                                      zcclRedOp_t o, MPI_Comm comm, zcclComm_t zc) {
  if (sendbuf != MPI_IN_PLACE) return zcclReduceScatter(sendbuf, recvbuf, count, t, o, zc, NULL);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  size_t es = t == zcclFloat32 ? 4 : 8;
  char* mine = (char*)recvbuf + (size_t)rank * count * es;
  zcclResult_t res = zcclReduceScatter(recvbuf, mine, count, t, o, zc, NULL);
  if (res == zcclSuccess && rank > 0) memmove(recvbuf, mine, count * es);
  return res;
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int size = 1;
  PMPI_Comm_size(comm, &size);
  if (!zm_take(ZM_SITE, ZM_REDUCE_SCATTER_BLOCK, recvcount < 0 ? "to MPI: negative count" : NULL, comm, datatype,
               (size_t)(recvcount < 0 ? 0 : recvcount) * (size_t)size, op, 1, &t, &o, &zc))
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  double t0 = zm_now();
  return zm_done(comm, zm_reduce_scatter(sendbuf, recvbuf, (size_t)recvcount, t, o, comm, zc), t0);
}

/* Equal blocks only (zccl's ReduceScatter); other counts go to MPI. */
int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int size = 1, equal = 1;
  PMPI_Comm_size(comm, &size);
  for (int r = 1; r < size; r++) equal &= recvcounts[r] == recvcounts[0];
  size_t n = (size_t)(recvcounts[0] < 0 ? 0 : recvcounts[0]);
  const char* no = !equal ? "to MPI: blocks of different sizes" : recvcounts[0] < 0 ? "to MPI: negative count" : NULL;
  if (!zm_take(ZM_SITE, ZM_REDUCE_SCATTER, no, comm, datatype, n * (size_t)size, op, 1, &t, &o, &zc))
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  double t0 = zm_now();
  return zm_done(comm, zm_reduce_scatter(sendbuf, recvbuf, n, t, o, comm, zc), t0);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  if (!zm_take(ZM_SITE, ZM_BCAST, count < 0 ? "to MPI: negative count" : NULL, comm, datatype, (size_t)count,
               MPI_OP_NULL, 0, &t, &o, &zc))
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  /* The root's buffer is its input and stays as it is (zccl's root would
   * get the decoded values, the same as every other rank's). */
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  void* out = buffer;
  if (rank == root && (out = malloc((size_t)count * (t == zcclFloat32 ? 4 : 8) + 1)) == NULL) {
    zm_say(ZM_SITE, ZM_BCAST, 0, "to MPI: out of memory for the root's copy");
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  }
  double t0 = zm_now();
  int rc = zm_done(comm, zcclBroadcast(buffer, out, (size_t)count, t, root, zc, NULL), t0);
  if (out != buffer) free(out);
  return rc;
}

/* The data-movement collectives with a send and a receive side: the same
 * datatype and count on both (else MPI); MPI_IN_PLACE reads the receive
 * side. */
static int zm_same_sides(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                         MPI_Datatype recvtype) {
  return sendbuf == MPI_IN_PLACE || (sendcount == recvcount && sendtype == recvtype);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int size = 1, rank = 0;
  PMPI_Comm_size(comm, &size);
  const char* no = recvcount < 0                                                        ? "to MPI: negative count"
                   : !zm_same_sides(sendbuf, sendcount, sendtype, recvcount, recvtype) ? "to MPI: the sides differ"
                                                                                       : NULL;
  if (!zm_take(ZM_SITE, ZM_ALLGATHER, no, comm, recvtype, (size_t)(recvcount < 0 ? 0 : recvcount) * (size_t)size,
               MPI_OP_NULL, 0, &t, &o, &zc))
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  PMPI_Comm_rank(comm, &rank);
  size_t es = t == zcclFloat32 ? 4 : 8;
  const void* s = sendbuf == MPI_IN_PLACE ? (char*)recvbuf + (size_t)rank * (size_t)recvcount * es : sendbuf;
  double t0 = zm_now();
  return zm_done(comm, zcclAllGather(s, recvbuf, (size_t)recvcount, t, zc, NULL), t0);
}

/* Gather and Scatter: every rank decides by the side all ranks have (the
 * send side of a Gather, the receive side of a Scatter; the root's other
 * side when it is in place), and the root takes zccl only where its two
 * sides agree, as the others' decision assumes. A program whose root
 * gathers into another datatype leaves gather out of ZCCL_MPI_OPS
 * (docs/mpi.md). */
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  int in_place = rank == root && sendbuf == MPI_IN_PLACE;
  int n = in_place ? recvcount : sendcount;
  MPI_Datatype dt = in_place ? recvtype : sendtype;
  const char* no = n < 0 ? "to MPI: negative count"
                   : rank == root && !zm_same_sides(sendbuf, sendcount, sendtype, recvcount, recvtype)
                       ? "to MPI: the root's sides differ"
                       : NULL;
  if (!zm_take(ZM_SITE, ZM_GATHER, no, comm, dt, (size_t)(n < 0 ? 0 : n), MPI_OP_NULL, 0, &t, &o, &zc))
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  size_t es = t == zcclFloat32 ? 4 : 8;
  const void* s = in_place ? (char*)recvbuf + (size_t)root * (size_t)n * es : sendbuf;
  double t0 = zm_now();
  return zm_done(comm, zcclGather(s, recvbuf, (size_t)n, t, root, zc, NULL), t0);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  int in_place = rank == root && recvbuf == MPI_IN_PLACE;
  int n = in_place ? sendcount : recvcount;
  MPI_Datatype dt = in_place ? sendtype : recvtype;
  int same = !(rank == root) || in_place || (sendcount == recvcount && sendtype == recvtype);
  const char* no = n < 0 ? "to MPI: negative count" : !same ? "to MPI: the root's sides differ" : NULL;
  if (!zm_take(ZM_SITE, ZM_SCATTER, no, comm, dt, (size_t)(n < 0 ? 0 : n), MPI_OP_NULL, 0, &t, &o, &zc))
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  size_t es = t == zcclFloat32 ? 4 : 8;
  void* r = in_place ? (char*)sendbuf + (size_t)root * (size_t)n * es : recvbuf;
  double t0 = zm_now();
  return zm_done(comm, zcclScatter(sendbuf, r, (size_t)n, t, root, zc, NULL), t0);
}

/* MPI_IN_PLACE goes to MPI (zccl's AlltoAll is out of place). */
int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  zcclDataType_t t;
  zcclRedOp_t o;
  zcclComm_t zc;
  int size = 1;
  PMPI_Comm_size(comm, &size);
  const char* no = recvcount < 0                ? "to MPI: negative count"
                   : sendbuf == MPI_IN_PLACE   ? "to MPI: in place (zccl's AlltoAll is out of place)"
                   : !zm_same_sides(sendbuf, sendcount, sendtype, recvcount, recvtype) ? "to MPI: the sides differ"
                                                                                       : NULL;
  if (!zm_take(ZM_SITE, ZM_ALLTOALL, no, comm, recvtype, (size_t)(recvcount < 0 ? 0 : recvcount) * (size_t)size,
               MPI_OP_NULL, 0, &t, &o, &zc))
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  double t0 = zm_now();
  return zm_done(comm, zcclAlltoAll(sendbuf, recvbuf, (size_t)recvcount, t, zc, NULL), t0);
}

/* Calls taken to zccl and left to MPI so far (tests look it up with dlsym
 * to see the library is there and what it did). */
int zcclMpiCounts(unsigned long long* taken, unsigned long long* passed);
int zcclMpiCounts(unsigned long long* taken, unsigned long long* passed) {
  unsigned long long t = 0, p = 0;
  for (int c = 0; c < ZM_NUM; c++) t += atomic_load(&zm.calls[c]), p += atomic_load(&zm.passed[c]);
  if (taken) *taken = t;
  if (passed) *passed = p;
  return 0;
}

/* ---- the end ------------------------------------------------------------------- */

/* Frees every zccl communicator (their attributes' callbacks), then says
 * what went where (ZCCL_DEBUG=INFO). */
int MPI_Finalize(void) {
  for (;;) {
    pthread_mutex_lock(&zm.lock);
    zm_comm_t* m = zm.comms;
    pthread_mutex_unlock(&zm.lock);
    if (m == NULL) break;
    PMPI_Comm_delete_attr(m->mpi, zm.keyval); /* zm_delete takes it off the list */
    pthread_mutex_lock(&zm.lock);
    int still = zm.comms == m;
    pthread_mutex_unlock(&zm.lock);
    if (still) zm_delete(m->mpi, zm.keyval, m, NULL); /* its MPI communicator was already gone */
  }
  if (zm.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&zm.keyval);
  if (ZU_LOG_ENABLED(ZU_LOG_INFO, ZM_LOG)) {
    char line[1024];
    size_t at = 0;
    unsigned long long taken = 0, passed = 0;
    for (int c = 0; c < ZM_NUM; c++) {
      taken += zm.calls[c], passed += zm.passed[c];
      if ((zm.calls[c] || zm.passed[c]) && at < sizeof line)
        at += (size_t)snprintf(line + at, sizeof line - at, " %s %llu/%llu (%.1f MB);", zm_names[c],
                               (unsigned long long)zm.calls[c], (unsigned long long)(zm.calls[c] + zm.passed[c]),
                               zm.bytes[c] / 1e6);
    }
    ZU_INFO(ZM_LOG, "libzccl-mpi: %llu calls to zccl, %llu to MPI;%s %.3f s in zccl; compressed streams: %.1f MB "
            "for %.1f MB (%.1f MB saved)", taken, passed, at ? line : "", atomic_load(&zm.seconds), zm.wire / 1e6,
            zm.raw / 1e6, (zm.raw > zm.wire ? zm.raw - zm.wire : 0) / 1e6);
  }
  return PMPI_Finalize();
}
