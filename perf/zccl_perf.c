/*
 * zccl-perf: nccl-tests-style sweeps of one collective, zccl beside OpenMPI
 * on the same buffers in the same run. Run under mpirun/srun.
 *
 *   mpirun -np 4 zccl-perf allreduce -b 1M -e 128M -f 2 --data levitus_climatology.cdf:TEMP
 *   mpirun -np 4 zccl-perf alltoall -b 64K -e 16M --algo pairwise --json a2a.json
 *   mpirun -np 2 zccl-perf pingpong -b 8 -e 64M
 *
 * Collectives: allreduce, allgather, broadcast, reducescatter, reduce,
 * gather, scatter, alltoall (root 0 where there is one), each beside its
 * OpenMPI call (MPI_Allreduce, MPI_Allgather, MPI_Bcast,
 * MPI_Reduce_scatter_block, MPI_Reduce, MPI_Gather, MPI_Scatter,
 * MPI_Alltoall). Point to point: sendrecv is nccl-tests' sendrecv_perf (rank
 * r sends to r+1 and receives from r-1, zccl in a group, MPI_Sendrecv beside
 * it); pingpong is rank 0 <-> rank 1, its time half a round trip (one-way
 * latency).
 *
 * Each method (mpi, zccl, zccl-compressed) runs every size; a method that
 * cannot run in this build says why once and is left out of the table.
 * Sizes are bytes of the collective's largest buffer, as in nccl-tests: the
 * whole N-block buffer for reducescatter (input), allgather and gather
 * (output), scatter (the root's input) and alltoall (each rank's input and
 * output); the one buffer for the others. With -c 1 (default) every element
 * is checked against a reference computed here from every rank's input:
 * exactly for data movement, within reduction-order rounding for sums; the
 * exit code is 1 when any element was wrong.
 */
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl.h"
#include "zccl_data.h"
#include "zp_algo.h" /* the library's algorithm table and ZCCL_ALGO's rules */

typedef enum {
  COLL_ALLREDUCE,
  COLL_ALLGATHER,
  COLL_BROADCAST,
  COLL_REDUCESCATTER,
  COLL_REDUCE,
  COLL_GATHER,
  COLL_SCATTER,
  COLL_ALLTOALL,
  COLL_SENDRECV,
  COLL_PINGPONG,
  NUM_COLLS
} coll_t;
static const char* coll_names[NUM_COLLS] = {"allreduce", "allgather", "broadcast",
                                            "reducescatter", "reduce", "gather", "scatter", "alltoall",
                                            "sendrecv", "pingpong"};
/* Each collective as the library's algorithm table (src/proto/zp_algos.c)
 * knows it; the point-to-point modes have no algorithms (-1). */
static const int coll_zp[NUM_COLLS] = {
    [COLL_ALLREDUCE] = ZP_COLL_ALLREDUCE, [COLL_ALLGATHER] = ZP_COLL_ALLGATHER, [COLL_BROADCAST] = ZP_COLL_BROADCAST,
    [COLL_REDUCESCATTER] = ZP_COLL_REDUCESCATTER, [COLL_REDUCE] = ZP_COLL_REDUCE, [COLL_GATHER] = ZP_COLL_GATHER,
    [COLL_SCATTER] = ZP_COLL_SCATTER, [COLL_ALLTOALL] = ZP_COLL_ALLTOALL, [COLL_SENDRECV] = -1, [COLL_PINGPONG] = -1};
#define ROOT 0 /* broadcast, reduce, gather, scatter */
static const char* op_names[zcclNumOps] = {"sum", "prod", "max", "min", "avg"}; /* zcclRedOp_t order */

typedef struct {
  coll_t coll;
  size_t min_bytes, max_bytes;
  double factor;
  int iters, warmup, check;
  int loop; /* --timing loop: iterations back to back, their mean */
  int is_double;
  zcclRedOp_t op;
  const char* data_spec;
  int fill_zero;
  int baseline_mpi;
#define MAX_COMP 8
  const char* compression[MAX_COMP]; /* --compression SPEC[@ALGO], each a compressed method */
  int ncomp;
  const char* csv_path;
  const char* json_path;
  const char* algo; /* --algo: ZCCL_ALGO for the zccl rows */
} opts_t;

typedef struct {
  const opts_t* o;
  int rank, nranks;
  zccl_data_t field;
  zcclComm_t comm;       /* NULL when zccl could not build a communicator */
  char zccl_why[512];    /* why, when comm is NULL */
  FILE* csv;
  FILE* json;
  int json_rows;
  long wrong_total;      /* elements outside tolerance, all rows: exit 1 if any */
  char algo_note[512];   /* how it was chosen, for the header */
  const zcclCompression_t* comp; /* the row being timed is compressed with this (else NULL) */
  const char* forced;    /* the algorithm ZCCL_ALGO's rules name for the row being timed (NULL: the model's) */
} ctx_t;

typedef struct {
  const char* method;
  const char* codec;
  const char* algo;
  size_t bytes, count;
  double time_us, algbw, busbw, speedup;
  long wrong;
  double ratio, max_abs_err, eb_abs, rmse, psnr;
} row_t;

static void usage(FILE* out) {
  fprintf(out,
          "usage: zccl-perf COLLECTIVE [options]   (under mpirun or srun)\n"
          "  COLLECTIVE: allreduce, reducescatter, allgather, broadcast, reduce, gather, scatter,\n"
          "              alltoall (root 0 where there is one), sendrecv or pingpong\n"
          "  sendrecv: rank r sends SIZE bytes to r+1 and receives from r-1 (zccl in a group;\n"
          "            MPI_Sendrecv); algbw = busbw = SIZE / time\n"
          "  pingpong: rank 0 sends, rank 1 sends back (2 ranks or more; others idle); time is\n"
          "            half the round trip (one-way latency), algbw = busbw = SIZE / time\n"
          "  SIZE is the collective's largest buffer, as in nccl-tests: the whole N-block buffer\n"
          "  for reducescatter (input), allgather and gather (output), scatter (the root's input),\n"
          "  alltoall (each rank's input = output); the one buffer for allreduce, broadcast, reduce.\n"
          "  N-block sizes are rounded down to a multiple of N elements.\n"
          "  algbw = SIZE / time; busbw = algbw * factor (nccl-tests' factors): allreduce 2(N-1)/N;\n"
          "  reducescatter, allgather, alltoall (N-1)/N; broadcast, reduce 1; gather, scatter\n"
          "  (N-1)/N (the root sends or receives N-1 of the N blocks; nccl-tests uses the same).\n"
          "  -b SIZE     smallest size in bytes (K/M/G suffixes; default 1M)\n"
          "  -e SIZE     largest size (default 16M)\n"
          "  -f FACTOR   size multiplication factor (default 2)\n"
          "  -n ITERS    timed iterations per size (default 10); the median is reported\n"
          "  -w WARMUP   untimed iterations first (default 2)\n"
          "  --timing each|loop  each (default): an MPI_Barrier before every timed iteration, the\n"
          "              median of the slowest rank's times (nccl-tests' way); loop: one barrier,\n"
          "              then the iterations back to back, the slowest rank's mean: what a program\n"
          "              calling in a loop sees, stalls included\n"
          "  -d TYPE     float|double (default float)\n"
          "  -o OP       sum|prod|max|min|avg (default sum; allreduce, reducescatter, reduce)\n"
          "  -c 0|1      check results (default 1): data movement exactly, reductions within\n"
          "              rounding of the reduction order; #wrong counts elements outside (-1: not\n"
          "              checked); exit code 1 if any\n"
          "  --algo RULES  set ZCCL_ALGO=RULES for the zccl rows: a name (zccl-info --algos lists\n"
          "              them) or rules per collective and size (docs/collectives.md, e.g.\n"
          "              allreduce:ring@0-4M,rd). The algo column shows the algorithm the rules\n"
          "              give each row, else auto (the library's cost\n"
          "              model). A forced algorithm that cannot run a call (docs/collectives.md)\n"
          "              falls back to the model without telling the caller: ZCCL_DEBUG=INFO\n"
          "              ZCCL_DEBUG_SUBSYS=TUNING logs every choice\n"
          "  --data SPEC     file.f32, file.f64 or file.nc:VAR (default: a synthetic smooth field)\n"
          "  --fill keep|zero  keep fill values or set them to 0 (default zero)\n"
          "  --baseline mpi|none  also time OpenMPI on the same buffers (default mpi); speedup =\n"
          "                       mpi time / zccl time\n"
          "  --compression SPEC[@ALGO]  add a zccl-compressed method (ZCCL_COMPRESSION syntax;\n"
          "                       collectives only: sendrecv and pingpong send uncompressed);\n"
          "                       up to 8, each its own rows (codec and algo columns); @ALGO sets\n"
          "                       ZCCL_ALGO for that method's calls only (e.g. @cprp2p, @rd)\n"
          "  --csv FILE, --json FILE  write the rows (docs/performance.md: the JSON fields)\n"
          "  -h, --help  this text\n");
}

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    case '\0': break;
    default: return 0;
  }
  return v > 0 ? (size_t)v : 0;
}

/* Argument errors, from rank 0 only (every rank parses the same line). */
static int perr_quiet;
static void perr(const char* fmt, ...) {
  if (perr_quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* Whether NAME is a word of the space-separated LIST. */
static int word_in(const char* list, const char* name) {
  size_t n = strlen(name);
  for (const char* p = list; p && *p;) {
    const char* e = strchr(p, ' ');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* The algorithm ZCCL_ALGO's rules name for this row (collective, bytes,
 * codec), as the library reads them; "auto" where they name none (the
 * cost model's), "-" for the point-to-point modes. */
static const char* ruled_algo(const zp_algo_rules_t* rules, coll_t coll, size_t count, int dbl, int codec) {
  if (coll_zp[coll] < 0) return "-";
  zp_coll_args_t a = {.coll = (zp_coll_id_t)coll_zp[coll], .count = count,
                      .datatype = dbl ? zcclFloat64 : zcclFloat32};
  a.compression.codec = codec;
  const zp_algo_t* al = zp_algo_ruled_for(&a, rules);
  return al ? al->name : "auto";
}

/* The algorithm names of a collective, space-separated, into buf. */
static const char* coll_algo_names(coll_t coll, char* buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < zp_algo_count() && at < len; k++) {
    const zp_algo_t* al = zp_algo_at(k);
    if ((int)al->coll != coll_zp[coll] || (at && word_in(buf, al->name))) continue;
    at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " " : "", al->name);
  }
  return buf;
}

/* 0: run; 1: --help; -1: bad arguments. */
static int parse_args(int argc, char** argv, opts_t* o) {
  *o = (opts_t){.min_bytes = 1 << 20, .max_bytes = 16 << 20, .factor = 2, .iters = 10, .warmup = 2,
                .check = 1, .op = zcclSum, .fill_zero = 1, .baseline_mpi = 1};
  if (argc < 2) return -1;
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) return 1;
  int c;
  for (c = 0; c < NUM_COLLS; c++)
    if (strcmp(argv[1], coll_names[c]) == 0) break;
  if (c == NUM_COLLS) {
    perr("zccl-perf: unknown or not yet supported collective '%s'\n", argv[1]);
    return -1;
  }
  o->coll = (coll_t)c;
  for (int i = 2; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return 1;
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) {
      perr("zccl-perf: %s needs a value\n", a);
      return -1;
    }
    i++;
    if (strcmp(a, "-b") == 0) o->min_bytes = parse_size(v);
    else if (strcmp(a, "-e") == 0) o->max_bytes = parse_size(v);
    else if (strcmp(a, "-f") == 0) o->factor = atof(v);
    else if (strcmp(a, "-n") == 0) o->iters = atoi(v);
    else if (strcmp(a, "-w") == 0) o->warmup = atoi(v);
    else if (strcmp(a, "-c") == 0) o->check = atoi(v);
    else if (strcmp(a, "-d") == 0) {
      if (strcmp(v, "float") == 0 || strcmp(v, "float32") == 0) o->is_double = 0;
      else if (strcmp(v, "double") == 0 || strcmp(v, "float64") == 0) o->is_double = 1;
      else return perr("zccl-perf: -d float|double\n"), -1;
    } else if (strcmp(a, "-o") == 0) {
      int k;
      for (k = 0; k < zcclNumOps && strcmp(v, op_names[k]) != 0; k++) {}
      if (k == zcclNumOps) return perr("zccl-perf: -o sum|prod|max|min|avg\n"), -1;
      o->op = (zcclRedOp_t)k;
    } else if (strcmp(a, "--data") == 0) o->data_spec = v;
    else if (strcmp(a, "--fill") == 0) o->fill_zero = strcmp(v, "zero") == 0;
    else if (strcmp(a, "--baseline") == 0) o->baseline_mpi = strcmp(v, "mpi") == 0;
    else if (strcmp(a, "--compression") == 0) {
      if (o->ncomp == MAX_COMP) return perr("zccl-perf: at most %d --compression methods\n", MAX_COMP), -1;
      o->compression[o->ncomp++] = v;
    }
    else if (strcmp(a, "--csv") == 0) o->csv_path = v;
    else if (strcmp(a, "--json") == 0) o->json_path = v;
    else if (strcmp(a, "--algo") == 0) o->algo = v;
    else if (strcmp(a, "--timing") == 0) {
      if (strcmp(v, "each") != 0 && strcmp(v, "loop") != 0) return perr("zccl-perf: --timing each|loop\n"), -1;
      o->loop = strcmp(v, "loop") == 0;
    }
    else {
      perr("zccl-perf: unknown option %s\n", a);
      return -1;
    }
  }
  if (o->min_bytes == 0 || o->max_bytes < o->min_bytes || o->factor <= 1 || o->iters < 1 ||
      o->warmup < 0) {
    perr("zccl-perf: need 0 < -b <= -e, -f > 1, -n >= 1, -w >= 0\n");
    return -1;
  }
  if (o->ncomp && (o->coll == COLL_SENDRECV || o->coll == COLL_PINGPONG)) {
    perr("zccl-perf: --compression is for the collectives; %s sends uncompressed\n", coll_names[o->coll]);
    return -1;
  }
  zp_algo_rules_t rules;
  zp_algo_rules_parse(o->algo, &rules); /* what does not parse, the library warns about */
  if (o->algo && rules.n == 0) {
    perr("zccl-perf: --algo %s: no collective has it (zccl-info --algos lists them)\n", o->algo);
    return -1;
  }
  return 0;
}

/* A smooth synthetic field when no --data is given. */
static void synthetic_field(zccl_data_t* d, int is_double) {
  memset(d, 0, sizeof *d);
  d->count = 1 << 20;
  d->is_double = is_double;
  d->values = malloc(d->count * (is_double ? 8 : 4));
  for (size_t i = 0; i < d->count; i++) {
    double x = (double)i / 1024.0;
    double v = 10.0 * sin(x * 0.37) * cos(x * 0.011) + 0.5 * sin(x * 3.1);
    if (is_double) ((double*)d->values)[i] = v;
    else ((float*)d->values)[i] = (float)v;
  }
  snprintf(d->source, sizeof d->source, "synthetic smooth field");
}

static size_t rank_offset(const ctx_t* c, int r) { return (size_t)r * (c->field.count / c->nranks); }

/* sendrecv's neighbours: send to the right, receive from the left. */
static int right_of(const ctx_t* c) { return (c->rank + 1) % c->nranks; }
static int left_of(const ctx_t* c) { return (c->rank - 1 + c->nranks) % c->nranks; }

/* pingpong runs this many round trips back to back per timed iteration
 * (their mean is the iteration's time), so small messages are not timed
 * against the barrier's skew: 100 up to 40 KiB, 1 from 4 MiB. */
static int calls_per_iter(const ctx_t* c, size_t bytes) {
  if (c->o->coll != COLL_PINGPONG) return 1;
  size_t r = ((size_t)4 << 20) / bytes;
  return r < 1 ? 1 : r > 100 ? 100 : (int)r;
}

/* The reductions, where -o applies. */
static int is_reduction(coll_t coll) {
  return coll == COLL_ALLREDUCE || coll == COLL_REDUCESCATTER || coll == COLL_REDUCE;
}

/* Collectives whose size is N blocks, one per rank. */
static int is_blocked(coll_t coll) {
  return coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER || coll == COLL_GATHER || coll == COLL_SCATTER ||
         coll == COLL_ALLTOALL;
}

/* nccl-tests' bus bandwidth factors; gather and scatter as nccl-tests'
 * gather_perf/scatter_perf: the root moves N-1 of the N blocks. */
static double bus_factor(coll_t coll, int n) {
  switch (coll) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_REDUCESCATTER:
    case COLL_ALLGATHER:
    case COLL_ALLTOALL:
    case COLL_GATHER:
    case COLL_SCATTER: return (double)(n - 1) / n;
    default: return 1.0; /* broadcast, reduce, sendrecv, pingpong */
  }
}

/* Elements in each rank's send buffer for a size of `count` elements (for
 * scatter only the root's is read). */
static size_t send_count(const ctx_t* c, size_t count) {
  return c->o->coll == COLL_ALLGATHER || c->o->coll == COLL_GATHER ? count / c->nranks : count;
}

/* Elements each rank receives (on the root only, for reduce and gather). */
static size_t recv_count(const ctx_t* c, size_t count) {
  return c->o->coll == COLL_REDUCESCATTER || c->o->coll == COLL_SCATTER ? count / c->nranks : count;
}

static MPI_Op mpi_op(zcclRedOp_t op) {
  switch (op) {
    case zcclProd: return MPI_PROD;
    case zcclMax: return MPI_MAX;
    case zcclMin: return MPI_MIN;
    default: return MPI_SUM; /* avg: sum, divided afterwards */
  }
}

static double get(const void* p, int is_double, size_t i) {
  return is_double ? ((const double*)p)[i] : ((const float*)p)[i];
}

static void put(void* p, int is_double, size_t i, double v) {
  if (is_double) ((double*)p)[i] = v;
  else ((float*)p)[i] = (float)v;
}

/* MPI has no AVG: a sum, then one division (timed with it, as zccl's). */
static void mpi_avg(const ctx_t* c, void* recv, size_t n) {
  if (c->o->op != zcclAvg) return;
  for (size_t i = 0; i < n; i++) put(recv, c->o->is_double, i, get(recv, c->o->is_double, i) / c->nranks);
}

typedef int (*run_fn)(ctx_t* c, const void* send, void* recv, size_t count);

static int run_mpi(ctx_t* c, const void* send, void* recv, size_t count) {
  MPI_Datatype t = c->o->is_double ? MPI_DOUBLE : MPI_FLOAT;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Op op = mpi_op(c->o->op);
  int sc = (int)send_count(c, count), rc = (int)recv_count(c, count), blk = (int)(count / c->nranks);
  int r;
  switch (c->o->coll) {
    case COLL_ALLREDUCE:
      r = MPI_Allreduce(send, recv, (int)count, t, op, w);
      mpi_avg(c, recv, count);
      break;
    case COLL_REDUCESCATTER:
      r = MPI_Reduce_scatter_block(send, recv, rc, t, op, w);
      mpi_avg(c, recv, (size_t)rc);
      break;
    case COLL_REDUCE:
      r = MPI_Reduce(send, recv, (int)count, t, op, ROOT, w);
      if (c->rank == ROOT) mpi_avg(c, recv, count);
      break;
    case COLL_ALLGATHER: r = MPI_Allgather(send, sc, t, recv, sc, t, w); break;
    case COLL_GATHER: r = MPI_Gather(send, sc, t, recv, sc, t, ROOT, w); break;
    case COLL_SCATTER: r = MPI_Scatter(send, rc, t, recv, rc, t, ROOT, w); break;
    case COLL_ALLTOALL: r = MPI_Alltoall(send, blk, t, recv, blk, t, w); break;
    case COLL_BROADCAST:
      if (c->rank == ROOT) memcpy(recv, send, count * (c->o->is_double ? 8 : 4));
      r = MPI_Bcast(recv, (int)count, t, ROOT, w);
      break;
    case COLL_SENDRECV:
      r = MPI_Sendrecv(send, (int)count, t, right_of(c), 0, recv, (int)count, t, left_of(c), 0, w, MPI_STATUS_IGNORE);
      break;
    case COLL_PINGPONG:
      r = MPI_SUCCESS;
      if (c->rank == 0) {
        r = MPI_Send(send, (int)count, t, 1, 0, w);
        if (r == MPI_SUCCESS) r = MPI_Recv(recv, (int)count, t, 1, 0, w, MPI_STATUS_IGNORE);
      } else if (c->rank == 1) {
        r = MPI_Recv(recv, (int)count, t, 0, 0, w, MPI_STATUS_IGNORE);
        if (r == MPI_SUCCESS) r = MPI_Send(recv, (int)count, t, 0, 0, w);
      }
      break;
    default: return -1;
  }
  return r == MPI_SUCCESS ? 0 : -1;
}

static int run_zccl(ctx_t* c, const void* send, void* recv, size_t count) {
  zcclDataType_t t = c->o->is_double ? zcclFloat64 : zcclFloat32;
  zcclRedOp_t op = c->o->op;
  size_t sc = send_count(c, count), rc = recv_count(c, count), blk = count / c->nranks;
  zcclResult_t r;
  switch (c->o->coll) {
    case COLL_ALLREDUCE: r = zcclAllReduce(send, recv, count, t, op, c->comm, NULL); break;
    case COLL_REDUCESCATTER: r = zcclReduceScatter(send, recv, rc, t, op, c->comm, NULL); break;
    case COLL_REDUCE: r = zcclReduce(send, recv, count, t, op, ROOT, c->comm, NULL); break;
    case COLL_ALLGATHER: r = zcclAllGather(send, recv, sc, t, c->comm, NULL); break;
    case COLL_GATHER: r = zcclGather(send, recv, sc, t, ROOT, c->comm, NULL); break;
    case COLL_SCATTER: r = zcclScatter(send, recv, rc, t, ROOT, c->comm, NULL); break;
    case COLL_ALLTOALL: r = zcclAlltoAll(send, recv, blk, t, c->comm, NULL); break;
    case COLL_BROADCAST: r = zcclBroadcast(send, recv, count, t, ROOT, c->comm, NULL); break;
    case COLL_SENDRECV: {
      zcclResult_t g = zcclGroupStart();
      r = g == zcclSuccess ? zcclSend(send, count, t, right_of(c), c->comm, NULL) : g;
      if (r == zcclSuccess) r = zcclRecv(recv, count, t, left_of(c), c->comm, NULL);
      if (g == zcclSuccess) { /* a started group is always ended */
        g = zcclGroupEnd();
        if (r == zcclSuccess) r = g;
      }
      break;
    }
    case COLL_PINGPONG:
      r = zcclSuccess;
      if (c->rank == 0) {
        r = zcclSend(send, count, t, 1, c->comm, NULL);
        if (r == zcclSuccess) r = zcclRecv(recv, count, t, 1, c->comm, NULL);
      } else if (c->rank == 1) {
        r = zcclRecv(recv, count, t, 0, c->comm, NULL);
        if (r == zcclSuccess) r = zcclSend(recv, count, t, 0, c->comm, NULL);
      }
      break;
    default: return -1;
  }
  if (r != zcclSuccess) {
    snprintf(c->zccl_why, sizeof c->zccl_why, "%s", zcclGetLastError(c->comm));
    return -1;
  }
  return 0;
}

/* Rank r's input elements [off, off+n) into ref[at...] as doubles: every
 * rank's send buffer is the field tiled from rank_offset(r). */
static void input_of(const ctx_t* c, int r, size_t off, size_t n, void* tmp, double* ref) {
  zccl_data_tile(&c->field, rank_offset(c, r) + off, tmp, n);
  for (size_t i = 0; i < n; i++) ref[i] = get(tmp, c->o->is_double, i);
}

/* What this rank's recv buffer must hold for a size of `count` elements,
 * computed from every rank's input: the element count (0 when this rank
 * receives nothing), ref[] the values, mag[] (reductions) the sum of the
 * inputs' magnitudes, for the rounding tolerance. */
static size_t expected_result(const ctx_t* c, size_t count, double* ref, double* mag) {
  const int n = c->nranks, me = c->rank;
  size_t rc = recv_count(c, count), sc = send_count(c, count), blk = count / (size_t)n;
  void* tmp = malloc(count * (c->o->is_double ? 8 : 4));
  double* in = malloc(count * sizeof(double));
  size_t got = rc;
  switch (c->o->coll) {
    case COLL_REDUCE:
      if (me != ROOT) {
        got = 0;
        break;
      }
      /* fall through */
    case COLL_ALLREDUCE:
    case COLL_REDUCESCATTER: {
      size_t off = c->o->coll == COLL_REDUCESCATTER ? (size_t)me * rc : 0;
      for (int r = 0; r < n; r++) {
        input_of(c, r, off, rc, tmp, in);
        for (size_t i = 0; i < rc; i++) {
          double v = in[i];
          switch (c->o->op) {
            case zcclProd: ref[i] = r ? ref[i] * v : v; break;
            case zcclMax: ref[i] = r ? fmax(ref[i], v) : v; break;
            case zcclMin: ref[i] = r ? fmin(ref[i], v) : v; break;
            default: ref[i] = r ? ref[i] + v : v; break;
          }
          mag[i] = (r ? mag[i] : 0) + fabs(v);
        }
      }
      if (c->o->op == zcclAvg)
        for (size_t i = 0; i < rc; i++) ref[i] /= n;
      break;
    }
    case COLL_GATHER:
      if (me != ROOT) {
        got = 0;
        break;
      }
      /* fall through */
    case COLL_ALLGATHER:
      for (int r = 0; r < n; r++) input_of(c, r, 0, sc, tmp, ref + (size_t)r * sc);
      break;
    case COLL_ALLTOALL: /* block me of every rank's input, in rank order */
      for (int r = 0; r < n; r++) input_of(c, r, (size_t)me * blk, blk, tmp, ref + (size_t)r * blk);
      break;
    case COLL_SCATTER: input_of(c, ROOT, (size_t)me * rc, rc, tmp, ref); break;
    case COLL_BROADCAST: input_of(c, ROOT, 0, count, tmp, ref); break;
    case COLL_SENDRECV: input_of(c, left_of(c), 0, count, tmp, ref); break;
    case COLL_PINGPONG: /* rank 1 receives rank 0's buffer and echoes it back */
      if (me < 2) input_of(c, 0, 0, count, tmp, ref);
      else got = 0;
      break;
    default: got = 0; break;
  }
  free(tmp);
  free(in);
  return got;
}

/* Compares recv with the exact result of the collective on every rank's
 * input: data movement must be exact, reductions within the rounding of any
 * reduction order (2·N·eps·(sum of |inputs| + |result|)). */
/* The absolute bound a compressed row must keep, as the library derives
 * it: ABS as given; REL times the range of the finite inputs involved
 * (every rank's, or the root's for a broadcast or scatter). A SUM of N inputs each
 * quantized once may be off by N times it, unless the bound is a target
 * for the output. */
static double compressed_bound(const ctx_t* c, size_t count, double* eb_abs) {
  const zcclCompression_t* z = c->comp;
  double e = z->eb, fill = c->o->is_double ? z->fillValue : (double)(float)z->fillValue;
  if (z->mode == zcclErrorRel || z->mode == zcclErrorTargetRel) {
    size_t sc = send_count(c, count);
    void* tmp = malloc(sc * (c->o->is_double ? 8 : 4));
    double* in = malloc(sc * sizeof(double));
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < c->nranks; r++) {
      if ((c->o->coll == COLL_BROADCAST || c->o->coll == COLL_SCATTER) && r != ROOT) continue;
      input_of(c, r, 0, sc, tmp, in);
      for (size_t i = 0; i < sc; i++)
        if (isfinite(in[i]) && !(z->hasFill && in[i] == fill)) lo = fmin(lo, in[i]), hi = fmax(hi, in[i]);
    }
    free(tmp);
    free(in);
    e *= hi > lo ? hi - lo : (hi == lo && hi != 0 ? fabs(hi) : 1.0);
  }
  int target = z->mode == zcclErrorTargetAbs || z->mode == zcclErrorTargetRel;
  coll_t coll = c->o->coll;
  if (z->codec == zcclCodecRle) { /* lossless: only the reduction's rounding */
    *eb_abs = 0;
    return 0;
  }
  /* CPRP2P (forced, or codec=zfp's: its only reductions; for allgather
   * and broadcast the cost model's choice against compress-once, unless
   * ZCCL_ALGO names compress-once's ring or tree, so the longer path's
   * bound holds either way): eb per compression on the longest path
   * (docs/compressed.md): allreduce N (AVG 1); reduce-scatter N-1;
   * reduce SUM N-1, MAX/MIN floor(log2 N) (AVG of both: (N-1)/N);
   * allgather N-1; broadcast ceil(log2 N). Target modes divide by it
   * (not AVG's). */
  const char* forced = c->forced;
  int N = c->nranks, avg = c->o->op == zcclAvg, cpr = 0;
  if (forced && strcmp(forced, "cprp2p") == 0)
    cpr = is_reduction(coll) || coll == COLL_ALLGATHER || coll == COLL_BROADCAST;
  else if (z->codec == zcclCodecZfp)
    cpr = is_reduction(coll) || (coll == COLL_ALLGATHER && !(forced && strcmp(forced, "ring") == 0)) ||
          (coll == COLL_BROADCAST && !(forced && strcmp(forced, "tree") == 0));
  if (cpr) {
    int lg = 0, depth = 0;
    while ((1 << lg) < N) lg++;
    while ((2 << depth) <= N) depth++;
    double hops = coll == COLL_ALLREDUCE ? (avg ? 1 : N)
                  : coll == COLL_REDUCESCATTER ? (avg ? (N - 1.0) / N : N - 1)
                  : coll == COLL_REDUCE ? (avg ? (N - 1.0) / N : c->o->op == zcclSum ? N - 1 : depth)
                  : coll == COLL_ALLGATHER ? N - 1 : lg;
    if (target && hops > 1) e /= hops;
    *eb_abs = e;
    return hops * e;
  }
  if (target && c->o->op == zcclSum && is_reduction(coll)) e /= c->nranks;
  *eb_abs = e;
  return is_reduction(coll) && c->o->op == zcclSum ? e * c->nranks : e;
}

static void check_result(ctx_t* c, const void* recv, size_t count, row_t* row) {
  int dbl = c->o->is_double;
  double* ref = malloc(count * sizeof(double));
  double* mag = malloc(count * sizeof(double));
  size_t m = expected_result(c, count, ref, mag);
  double eps = dbl ? 2.2e-16 : 1.2e-7;
  int reduction = is_reduction(c->o->coll);
  /* Compressed: the documented bound, plus one rounding of the output. */
  double bound = c->comp ? compressed_bound(c, count, &row->eb_abs) : 0.0;
  double max_err = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
  long wrong = 0;
  for (size_t i = 0; i < m; i++) {
    double want = ref[i], got = get(recv, dbl, i);
    double err = fabs(got - want);
    double tol = (reduction ? 2.0 * c->nranks * eps * (mag[i] + fabs(want)) : 0.0) +
                 (c->comp ? bound + eps * fabs(want) : 0.0);
    if (c->comp && !isfinite(want)) tol = 0; /* non-finite values travel exactly */
    if (!(err <= tol)) wrong++;
    if (err > max_err || err != err) max_err = err;
    sq += err * err;
    /* PSNR's range: the valid values (not fill values, which travel exactly). */
    if (c->comp && c->comp->hasFill &&
        want == (dbl ? c->comp->fillValue : (double)(float)c->comp->fillValue))
      continue;
    if (want < lo) lo = want;
    if (want > hi) hi = want;
  }
  row->wrong = wrong;
  row->max_abs_err = max_err;
  double rmse = m ? sqrt(sq / (double)m) : 0;
  row->rmse = rmse;
  row->psnr = rmse > 0 ? 20.0 * log10((hi - lo) / rmse) : INFINITY;
  free(ref);
  free(mag);
}

/* Whether the library has a compressed algorithm of this collective for
 * the codec: one in its algorithm table that needs a capability the
 * codec's row has (as its choice reads them). */
static int has_compressed(coll_t coll, int codec) {
  if (codec == zcclCodecNone) return 1; /* a control: the uncompressed path again (rows named zccl) */
  const zc_codec_info_t* ci = zc_codec_info(codec);
  for (size_t k = 0; ci && coll_zp[coll] >= 0 && k < zp_algo_count(); k++)
    if ((int)zp_algo_at(k)->coll == coll_zp[coll] && (zp_algo_at(k)->needs & ci->caps)) return 1;
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Times one method at one size; 0 ok, -1 when the method failed (then it is
 * left out from here on). The time is the slowest rank's, median over iters;
 * for pingpong, half a round trip. */
static int time_method(ctx_t* c, run_fn run, size_t count, void* send, void* recv, row_t* row) {
  const opts_t* o = c->o;
  size_t esize = o->is_double ? 8 : 4;
  int calls = calls_per_iter(c, count * esize);
  double scale = (o->coll == COLL_PINGPONG ? 0.5 : 1.0) / calls;
  int ok = 1;
  uint64_t raw0 = 0, wire0 = 0, raw1 = 0, wire1 = 0;
  if (c->comp) zcclCommCompressionStats(c->comm, &raw0, &wire0);
  for (int i = 0; i < o->warmup && ok; i++) ok = run(c, send, recv, count) == 0;
  double* t = malloc(sizeof(double) * (size_t)o->iters);
  if (o->loop) { /* back to back: every iteration gets the mean */
    if (o->check) memset(recv, 0xff, count * esize);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o->iters && ok; i++)
      for (int k = 0; k < calls && ok; k++) ok = run(c, send, recv, count) == 0;
    double mean = (MPI_Wtime() - t0) * scale / o->iters;
    for (int i = 0; i < o->iters; i++) t[i] = mean;
  } else {
    for (int i = 0; i < o->iters; i++) {
      /* A result left over from an earlier run or method must not pass the check. */
      if (o->check && i == o->iters - 1) memset(recv, 0xff, count * esize);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int k = 0; k < calls && ok; k++) ok = run(c, send, recv, count) == 0;
      t[i] = (MPI_Wtime() - t0) * scale;
    }
  }
  int all_ok = ok;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, t, o->iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  qsort(t, (size_t)o->iters, sizeof(double), cmp_double);
  double med = t[o->iters / 2];
  free(t);
  if (!all_ok) return -1;
  row->count = count;
  row->bytes = count * esize;
  row->time_us = med * 1e6;
  row->algbw = (double)row->bytes / med / 1e9;
  row->busbw = row->algbw * bus_factor(o->coll, c->nranks);
  row->wrong = -1;
  row->max_abs_err = NAN;
  row->rmse = NAN;
  row->psnr = NAN;
  row->ratio = 1.0;
  if (c->comp) { /* every rank's streams together */
    zcclCommCompressionStats(c->comm, &raw1, &wire1);
    double rw[2] = {(double)(raw1 - raw0), (double)(wire1 - wire0)};
    MPI_Allreduce(MPI_IN_PLACE, rw, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    row->ratio = rw[1] > 0 ? rw[0] / rw[1] : 1.0;
  }
  if (o->check) {
    /* Every rank checks what it received; the worst rank's numbers count. */
    check_result(c, recv, count, row);
    long w = row->wrong;
    double e[2] = {row->max_abs_err, row->rmse}, p = row->psnr;
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, e, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* the worst rank's */
    MPI_Allreduce(MPI_IN_PLACE, &p, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); /* the worst rank's */
    row->wrong = w;
    row->max_abs_err = e[0];
    row->rmse = e[1];
    row->psnr = p;
  }
  return 0;
}

static void print_header(const ctx_t* c) {
  const opts_t* o = c->o;
  printf("# zccl-perf %s: %d ranks, %s, %s%s, op %s, %d iterations (+%d warm-up), %s\n",
         coll_names[o->coll], c->nranks, c->field.source, o->is_double ? "double" : "float",
         c->field.has_fill ? (o->fill_zero ? " (fill values set to 0)" : " (fill values kept)") : "",
         is_reduction(o->coll) ? op_names[o->op] : "-",
         o->iters, o->warmup,
         o->loop ? "back to back, the slowest rank's mean" : "a barrier before each, median of the slowest rank");
  if (is_blocked(o->coll) || o->coll == COLL_BROADCAST || o->coll == COLL_REDUCE)
    printf("# %s%s: size = %s; busbw = algbw * %s\n", coll_names[o->coll],
           o->coll == COLL_ALLGATHER || o->coll == COLL_REDUCESCATTER || o->coll == COLL_ALLTOALL ? "" : " (root 0)",
           o->coll == COLL_REDUCESCATTER ? "the whole input (N blocks; each rank keeps one)"
           : o->coll == COLL_ALLGATHER || o->coll == COLL_GATHER ? "the whole output (N blocks)"
           : o->coll == COLL_SCATTER ? "the root's whole input (N blocks)"
           : o->coll == COLL_ALLTOALL ? "each rank's whole input = output (N blocks)"
                                      : "the buffer",
           o->coll == COLL_BROADCAST || o->coll == COLL_REDUCE ? "1" : "(N-1)/N");
  if (o->coll == COLL_ALLREDUCE) printf("# allreduce: size = the buffer; busbw = algbw * 2(N-1)/N\n");
  if (c->algo_note[0]) printf("# %s\n", c->algo_note);
  if (o->coll == COLL_SENDRECV)
    printf("# sendrecv: rank r sends to (r+1)%%%d and receives from (r-1)%%%d; algbw = busbw = size / time\n",
           c->nranks, c->nranks);
  if (o->coll == COLL_PINGPONG)
    printf("# pingpong: rank 0 <-> rank 1; time = half a round trip (each iteration the mean of "
           "min(100, max(1, 4 MiB / size)) back-to-back round trips), algbw = busbw = size / time\n");
  printf("# %10s %11s %6s %5s %-16s %-12s %-6s %11s %9s %9s %8s %7s %7s %10s %10s %7s\n", "size(B)", "count",
         "type", "redop", "method", "algo", "codec", "time(us)", "algbw", "busbw", "speedup", "#wrong",
         "ratio", "max_err", "rmse", "psnr");
}

/* A JSON number, or null for what JSON cannot hold (NaN: not measured;
 * infinity: a PSNR with no error). */
static const char* json_num(char* buf, size_t size, double v) {
  if (isfinite(v)) snprintf(buf, size, "%.6g", v);
  else snprintf(buf, size, "null");
  return buf;
}

static void emit_row(ctx_t* c, const row_t* r) {
  const opts_t* o = c->o;
  const char* type = o->is_double ? "double" : "float";
  const char* op = is_reduction(o->coll) ? op_names[o->op] : "-";
  if (r->wrong > 0) c->wrong_total += r->wrong;
  if (c->rank != 0) return;
  printf("  %10zu %11zu %6s %5s %-16s %-12s %-6s %11.1f %9.3f %9.3f %8.2f %7ld %7.2f %10.3g %10.3g %7.1f\n",
         r->bytes, r->count, type, op, r->method, r->algo, r->codec, r->time_us, r->algbw, r->busbw, r->speedup,
         r->wrong, r->ratio, r->max_abs_err, r->rmse, r->psnr);
  if (c->csv)
    fprintf(c->csv, "%s,%s,%s,%s,%zu,%zu,%s,%s,%.3f,%.6f,%.6f,%.4f,%ld,%.4f,%.6g,%.6g,%.6g,%.4f\n",
            coll_names[o->coll], r->method, r->codec, r->algo, r->bytes, r->count, type, op, r->time_us, r->algbw,
            r->busbw, r->speedup, r->wrong, r->ratio, r->max_abs_err, r->eb_abs, r->rmse, r->psnr);
  if (c->json) {
    char speedup[32], err[32], rmse[32], psnr[32];
    fprintf(c->json,
            "%s\n  {\"collective\": \"%s\", \"method\": \"%s\", \"codec\": \"%s\", \"algo\": \"%s\", "
            "\"bytes\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"nranks\": %d, "
            "\"time_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"speedup\": %s, "
            "\"ratio\": %.4f, \"max_abs_err\": %s, \"eb_abs\": %.6g, \"rmse\": %s, \"psnr\": %s, \"wrong\": %ld}",
            c->json_rows++ ? "," : "", coll_names[o->coll], r->method, r->codec, r->algo, r->bytes, r->count,
            type, op, c->nranks, r->time_us, r->algbw, r->busbw, json_num(speedup, sizeof speedup, r->speedup),
            r->ratio, json_num(err, sizeof err, r->wrong < 0 ? NAN : r->max_abs_err), r->eb_abs,
            json_num(rmse, sizeof rmse, r->wrong < 0 ? NAN : r->rmse), json_num(psnr, sizeof psnr, r->psnr),
            r->wrong);
  }
}

/* A zccl communicator over all MPI ranks: the id travels by MPI_Bcast. */
static void zccl_setup(ctx_t* c) {
  zcclUniqueId id;
  zcclResult_t r = zcclSuccess;
  if (c->rank == 0) r = zcclGetUniqueId(&id);
  MPI_Bcast(&r, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (r == zcclSuccess) {
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    r = zcclCommInitRank(&c->comm, c->nranks, id, c->rank);
  }
  int ok = r == zcclSuccess;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) {
    snprintf(c->zccl_why, sizeof c->zccl_why, "%s", zcclGetLastError(NULL));
    if (c->comm) zcclCommDestroy(c->comm);
    c->comm = NULL;
  }
}

/* A communicator whose ZCCL_ALGO is algo (the library reads it when a
 * communicator is created), for a method with its own @ALGO; NULL when it
 * could not be made (c->zccl_why says why). */
static zcclComm_t zccl_comm_with_algo(ctx_t* c, const char* algo) {
  const char* env = getenv("ZCCL_ALGO");
  char keep[512] = "";
  if (env) snprintf(keep, sizeof keep, "%s", env);
  setenv("ZCCL_ALGO", algo, 1);
  zcclComm_t main_comm = c->comm, made;
  c->comm = NULL;
  zccl_setup(c);
  made = c->comm;
  c->comm = main_comm;
  if (env) setenv("ZCCL_ALGO", keep, 1);
  else unsetenv("ZCCL_ALGO");
  return made;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ctx_t c = {0};
  opts_t o;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
  perr_quiet = c.rank != 0;
  int pa = parse_args(argc, argv, &o);
  if (pa != 0) {
    if (c.rank == 0) usage(pa > 0 ? stdout : stderr);
    MPI_Finalize();
    return pa > 0 ? 0 : 2;
  }
  c.o = &o;
  if (o.coll == COLL_PINGPONG && c.nranks < 2) {
    if (c.rank == 0) fprintf(stderr, "zccl-perf: pingpong needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  if (o.data_spec) {
    char err[600];
    if (zccl_data_load(o.data_spec, o.is_double, &c.field, err, sizeof err) != 0) {
      if (c.rank == 0) fprintf(stderr, "zccl-perf: %s\n", err);
      MPI_Finalize();
      return 1;
    }
    if (o.fill_zero) zccl_data_replace_fill(&c.field, 0.0);
  } else {
    synthetic_field(&c.field, o.is_double);
  }
  int files_ok = 1;
  if (c.rank == 0 && o.csv_path) {
    c.csv = fopen(o.csv_path, "w");
    if (!c.csv) fprintf(stderr, "zccl-perf: cannot write %s\n", o.csv_path), files_ok = 0;
    else
      fprintf(c.csv, "collective,method,codec,algo,bytes,count,type,redop,time_us,algbw_gbps,busbw_gbps,"
                     "speedup,wrong,ratio,max_abs_err,eb_abs,rmse,psnr\n");
  }
  if (c.rank == 0 && o.json_path) {
    c.json = fopen(o.json_path, "w");
    if (!c.json) fprintf(stderr, "zccl-perf: cannot write %s\n", o.json_path), files_ok = 0;
    else fprintf(c.json, "[");
  }
  MPI_Bcast(&files_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  /* --algo: the library reads ZCCL_ALGO when a communicator is created;
   * set before it exists, so before any thread of the library could read
   * the environment. */
  if (o.algo) setenv("ZCCL_ALGO", o.algo, 1);
  /* The main communicator's rules, as the library parses them (methods'
   * own @ALGO have theirs): they name each row's algorithm. */
  const char* forced = getenv("ZCCL_ALGO");
  zp_algo_rules_t rules_main, rules_comp[MAX_COMP];
  zp_algo_rules_parse(forced, &rules_main);
  if (forced && forced[0] && coll_zp[o.coll] >= 0) {
    char names[256];
    snprintf(c.algo_note, sizeof c.algo_note,
             "zccl: ZCCL_ALGO=%s%s: the algo column names the algorithm its rules give each row, auto where they "
             "give none (the cost model's); a call it cannot run falls back to the model, unseen here (%s has: %s)",
             forced, o.algo ? " (--algo)" : " (environment)", coll_names[o.coll],
             coll_algo_names(o.coll, names, sizeof names));
  }

  zcclCompression_t plain = ZCCL_COMPRESSION_INITIALIZER, comp[MAX_COMP];
  char comp_algo[MAX_COMP][64];
  for (int k = 0; k < o.ncomp && files_ok; k++) {
    /* SPEC[@ALGO]: the algorithm is the part after the last '@'. */
    char spec[512];
    snprintf(spec, sizeof spec, "%s", o.compression[k]);
    char* at = strrchr(spec, '@');
    comp_algo[k][0] = '\0';
    if (at) {
      snprintf(comp_algo[k], sizeof comp_algo[k], "%s", at + 1);
      *at = '\0';
    }
    zp_algo_rules_parse(comp_algo[k][0] ? comp_algo[k] : forced, &rules_comp[k]);
    comp[k] = (zcclCompression_t)ZCCL_COMPRESSION_INITIALIZER;
    if (zcclCompressionFromString(spec, &comp[k]) != zcclSuccess) {
      if (c.rank == 0) fprintf(stderr, "zccl-perf: --compression %s: %s\n", o.compression[k], zcclGetLastError(NULL));
      files_ok = 0;
    }
  }
  if (!files_ok) {
    if (c.csv) fclose(c.csv);
    if (c.json) fclose(c.json);
    zccl_data_free(&c.field);
    MPI_Finalize();
    return 2;
  }
  zccl_setup(&c);
  zcclComm_t algo_comm[MAX_COMP] = {NULL}; /* a method's own @ALGO: its communicator (may repeat) */
  for (int k = 0; k < o.ncomp && c.comm; k++) {
    for (int j = 0; j < k && !algo_comm[k] && comp_algo[k][0]; j++)
      if (strcmp(comp_algo[j], comp_algo[k]) == 0) algo_comm[k] = algo_comm[j];
    if (comp_algo[k][0] && !algo_comm[k]) algo_comm[k] = zccl_comm_with_algo(&c, comp_algo[k]);
  }
  int run_zccl_plain = c.comm != NULL, run_comp[MAX_COMP];
  if (c.rank == 0) {
    print_header(&c);
    if (!c.comm) printf("# zccl: not run: %s\n", c.zccl_why);
  }
  for (int k = 0; k < o.ncomp; k++) {
    run_comp[k] = c.comm != NULL && has_compressed(o.coll, comp[k].codec) && (!comp_algo[k][0] || algo_comm[k]);
    if (c.rank == 0 && c.comm && comp_algo[k][0] && !algo_comm[k])
      printf("# zccl-compressed: not run: --compression %s: %s\n", o.compression[k], c.zccl_why);
    /* Where the library would send the data uncompressed, a row named
     * compressed would be a lie. */
    if (c.rank == 0 && c.comm && !run_comp[k])
      printf("# zccl-compressed: not run: zccl has no compressed %s for --compression %s yet\n",
             coll_names[o.coll], o.compression[k]);
  }

  size_t esize = o.is_double ? 8 : 4;
  double mpi_time = NAN;
  for (double b = (double)o.min_bytes; b <= (double)o.max_bytes * 1.0000001; b *= o.factor) {
    size_t count = (size_t)b / esize;
    if (is_blocked(o.coll)) count -= count % (size_t)c.nranks;
    if (count == 0) continue;
    size_t sc = send_count(&c, count);
    void* send = malloc(count * esize);
    void* recv = malloc(count * esize);
    zccl_data_tile(&c.field, rank_offset(&c, c.rank), send, sc);
    row_t row;
    mpi_time = NAN;
    if (o.baseline_mpi) {
      row = (row_t){.method = "mpi", .codec = "none", .algo = "default"};
      if (time_method(&c, run_mpi, count, send, recv, &row) == 0) {
        mpi_time = row.time_us;
        row.speedup = 1.0;
        emit_row(&c, &row);
      }
    }
    for (int m = 0; m <= o.ncomp; m++) { /* 0: uncompressed; k + 1: --compression k */
      if (m == 0 ? !run_zccl_plain : !run_comp[m - 1]) continue;
      const zcclCompression_t* cm = m == 0 ? &plain : &comp[m - 1];
      const char* malgo = m > 0 && comp_algo[m - 1][0] ? comp_algo[m - 1] : NULL;
      zcclComm_t main_comm = c.comm;
      if (malgo) c.comm = algo_comm[m - 1];
      zcclCommSetCompression(c.comm, cm);
      int plain_row = cm->codec == zcclCodecNone;
      const char* ruled = ruled_algo(m == 0 ? &rules_main : &rules_comp[m - 1], o.coll, count, o.is_double,
                                     cm->codec);
      row = (row_t){.method = plain_row ? "zccl" : "zccl-compressed", .codec = zc_codec_info(cm->codec)->name,
                    .algo = ruled};
      c.comp = plain_row ? NULL : cm;
      c.forced = strcmp(ruled, "auto") && strcmp(ruled, "-") ? ruled : NULL; /* the bound (eb_of) depends on it */
      int failed = time_method(&c, run_zccl, count, send, recv, &row) != 0;
      c.comm = main_comm;
      c.forced = NULL;
      if (failed) {
        if (c.rank == 0) printf("# %s: stopped: %s\n", row.method, c.zccl_why);
        if (m == 0) run_zccl_plain = 0;
        else run_comp[m - 1] = 0;
        continue;
      }
      row.speedup = o.baseline_mpi ? mpi_time / row.time_us : NAN;
      emit_row(&c, &row);
    }
    free(send);
    free(recv);
  }
  if (c.csv) fclose(c.csv);
  if (c.json) {
    fprintf(c.json, "\n]\n");
    fclose(c.json);
  }
  for (int k = 0; k < o.ncomp; k++) {
    int first = algo_comm[k] != NULL;
    for (int j = 0; j < k && first; j++) first = algo_comm[j] != algo_comm[k];
    if (first) zcclCommDestroy(algo_comm[k]);
  }
  if (c.comm) zcclCommDestroy(c.comm);
  zccl_data_free(&c.field);
  MPI_Finalize();
  if (c.wrong_total > 0 && c.rank == 0)
    fprintf(stderr, "zccl-perf: %ld wrong elements in all\n", c.wrong_total);
  return c.wrong_total > 0 ? 1 : 0;
}
