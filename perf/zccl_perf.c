/*
 * zccl-perf: nccl-tests-style sweeps of one collective, zccl beside OpenMPI
 * on the same buffers in the same run. Run under mpirun/srun.
 *
 *   mpirun -np 4 zccl-perf allreduce -b 1M -e 128M -f 2 --data levitus_climatology.cdf:TEMP
 *   mpirun -np 2 zccl-perf pingpong -b 8 -e 64M
 *
 * Point to point: sendrecv is nccl-tests' sendrecv_perf (rank r sends to r+1
 * and receives from r-1, zccl in a group, MPI_Sendrecv beside it); pingpong
 * is rank 0 <-> rank 1, its time half a round trip (one-way latency).
 *
 * Each method (mpi, zccl, zccl-compressed) runs every size; a method that
 * cannot run in this build says why once and is left out of the table.
 * Sizes are bytes of the collective's result buffer, as in nccl-tests.
 * With -c 1 (default) every element is checked against an exact reference;
 * the exit code is 1 when any element was wrong.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl.h"
#include "zccl_data.h"

typedef enum { COLL_ALLREDUCE, COLL_ALLGATHER, COLL_BROADCAST, COLL_SENDRECV, COLL_PINGPONG, NUM_COLLS } coll_t;
static const char* coll_names[NUM_COLLS] = {"allreduce", "allgather", "broadcast", "sendrecv", "pingpong"};
static const char* op_names[zcclNumOps] = {"sum", "prod", "max", "min", "avg"}; /* zcclRedOp_t order */

typedef struct {
  coll_t coll;
  size_t min_bytes, max_bytes;
  double factor;
  int iters, warmup, check;
  int is_double;
  zcclRedOp_t op;
  const char* data_spec;
  int fill_zero;
  int baseline_mpi;
  const char* compression; /* NULL: no compressed method */
  const char* csv_path;
  const char* json_path;
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
} ctx_t;

typedef struct {
  const char* method;
  const char* codec;
  const char* algo;
  size_t bytes, count;
  double time_us, algbw, busbw, speedup;
  long wrong;
  double ratio, max_abs_err, eb_abs, psnr;
} row_t;

static void usage(void) {
  fprintf(stderr,
          "usage: zccl-perf allreduce|allgather|broadcast|sendrecv|pingpong [options]\n"
          "  sendrecv: rank r sends SIZE bytes to r+1 and receives from r-1 (zccl in a group;\n"
          "            MPI_Sendrecv); algbw = busbw = SIZE / time\n"
          "  pingpong: rank 0 sends, rank 1 sends back (2 ranks or more; others idle); time is\n"
          "            half the round trip (one-way latency), algbw = busbw = SIZE / time\n"
          "  -b SIZE     smallest size in bytes (K/M/G suffixes; default 1M)\n"
          "  -e SIZE     largest size (default 16M)\n"
          "  -f FACTOR   size multiplication factor (default 2)\n"
          "  -n ITERS    timed iterations per size (default 10); the median is reported\n"
          "  -w WARMUP   untimed iterations first (default 2)\n"
          "  -d TYPE     float|double (default float)\n"
          "  -o OP       sum|prod|max|min|avg (default sum)\n"
          "  -c 0|1      check results (default 1)\n"
          "  --data SPEC     file.f32, file.f64 or file.nc:VAR (default: a synthetic smooth field)\n"
          "  --fill keep|zero  keep fill values or set them to 0 (default zero)\n"
          "  --baseline mpi|none  also time OpenMPI on the same buffers (default mpi)\n"
          "  --compression SPEC   add a zccl-compressed method (ZCCL_COMPRESSION syntax;\n"
          "                       collectives only: sendrecv and pingpong send uncompressed)\n"
          "  --csv FILE, --json FILE  write the rows\n");
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

static int parse_args(int argc, char** argv, opts_t* o) {
  *o = (opts_t){.min_bytes = 1 << 20, .max_bytes = 16 << 20, .factor = 2, .iters = 10, .warmup = 2,
                .check = 1, .op = zcclSum, .fill_zero = 1, .baseline_mpi = 1};
  if (argc < 2) return -1;
  int c;
  for (c = 0; c < NUM_COLLS; c++)
    if (strcmp(argv[1], coll_names[c]) == 0) break;
  if (c == NUM_COLLS) {
    fprintf(stderr, "zccl-perf: unknown or not yet supported collective '%s'\n", argv[1]);
    return -1;
  }
  o->coll = (coll_t)c;
  for (int i = 2; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) {
      fprintf(stderr, "zccl-perf: %s needs a value\n", a);
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
      else return fprintf(stderr, "zccl-perf: -d float|double\n"), -1;
    } else if (strcmp(a, "-o") == 0) {
      int k;
      for (k = 0; k < zcclNumOps && strcmp(v, op_names[k]) != 0; k++) {}
      if (k == zcclNumOps) return fprintf(stderr, "zccl-perf: -o sum|prod|max|min|avg\n"), -1;
      o->op = (zcclRedOp_t)k;
    } else if (strcmp(a, "--data") == 0) o->data_spec = v;
    else if (strcmp(a, "--fill") == 0) o->fill_zero = strcmp(v, "zero") == 0;
    else if (strcmp(a, "--baseline") == 0) o->baseline_mpi = strcmp(v, "mpi") == 0;
    else if (strcmp(a, "--compression") == 0) o->compression = v;
    else if (strcmp(a, "--csv") == 0) o->csv_path = v;
    else if (strcmp(a, "--json") == 0) o->json_path = v;
    else {
      fprintf(stderr, "zccl-perf: unknown option %s\n", a);
      return -1;
    }
  }
  if (o->min_bytes == 0 || o->max_bytes < o->min_bytes || o->factor <= 1 || o->iters < 1 ||
      o->warmup < 0) {
    fprintf(stderr, "zccl-perf: need 0 < -b <= -e, -f > 1, -n >= 1, -w >= 0\n");
    return -1;
  }
  if (o->compression && (o->coll == COLL_SENDRECV || o->coll == COLL_PINGPONG)) {
    fprintf(stderr, "zccl-perf: --compression is for the collectives; %s sends uncompressed\n", coll_names[o->coll]);
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

/* The one rank whose input is this rank's whole expected result (copies:
 * broadcast, sendrecv, pingpong); -1 when the result involves every rank. */
static int source_rank(const ctx_t* c) {
  switch (c->o->coll) {
    case COLL_BROADCAST: return 0;
    case COLL_SENDRECV: return left_of(c);
    case COLL_PINGPONG: return c->rank < 2 ? 0 : -2; /* -2: ranks past 1 receive nothing */
    default: return -1;
  }
}

/* pingpong runs this many round trips back to back per timed iteration
 * (their mean is the iteration's time), so small messages are not timed
 * against the barrier's skew: 100 up to 40 KiB, 1 from 4 MiB. */
static int calls_per_iter(const ctx_t* c, size_t bytes) {
  if (c->o->coll != COLL_PINGPONG) return 1;
  size_t r = ((size_t)4 << 20) / bytes;
  return r < 1 ? 1 : r > 100 ? 100 : (int)r;
}

/* nccl-tests' bus bandwidth factors. */
static double bus_factor(coll_t coll, int n) {
  switch (coll) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_ALLGATHER: return (double)(n - 1) / n;
    default: return 1.0;
  }
}

/* Elements each rank sends for a result buffer of `count` elements. */
static size_t send_count(const ctx_t* c, size_t count) {
  return c->o->coll == COLL_ALLGATHER ? count / c->nranks : count;
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

typedef int (*run_fn)(ctx_t* c, const void* send, void* recv, size_t count);

static int run_mpi(ctx_t* c, const void* send, void* recv, size_t count) {
  MPI_Datatype t = c->o->is_double ? MPI_DOUBLE : MPI_FLOAT;
  size_t sc = send_count(c, count);
  switch (c->o->coll) {
    case COLL_ALLREDUCE:
      MPI_Allreduce(send, recv, (int)count, t, mpi_op(c->o->op), MPI_COMM_WORLD);
      if (c->o->op == zcclAvg)
        for (size_t i = 0; i < count; i++) put(recv, c->o->is_double, i, get(recv, c->o->is_double, i) / c->nranks);
      return 0;
    case COLL_ALLGATHER:
      return MPI_Allgather(send, (int)sc, t, recv, (int)sc, t, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
    case COLL_BROADCAST:
      if (c->rank == 0) memcpy(recv, send, count * (c->o->is_double ? 8 : 4));
      return MPI_Bcast(recv, (int)count, t, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
    case COLL_SENDRECV:
      return MPI_Sendrecv(send, (int)count, t, right_of(c), 0, recv, (int)count, t, left_of(c), 0, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
    case COLL_PINGPONG: {
      int r = MPI_SUCCESS;
      if (c->rank == 0) {
        r = MPI_Send(send, (int)count, t, 1, 0, MPI_COMM_WORLD);
        if (r == MPI_SUCCESS) r = MPI_Recv(recv, (int)count, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (c->rank == 1) {
        r = MPI_Recv(recv, (int)count, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (r == MPI_SUCCESS) r = MPI_Send(recv, (int)count, t, 0, 0, MPI_COMM_WORLD);
      }
      return r == MPI_SUCCESS ? 0 : -1;
    }
    default: return -1;
  }
}

static int run_zccl(ctx_t* c, const void* send, void* recv, size_t count) {
  zcclDataType_t t = c->o->is_double ? zcclFloat64 : zcclFloat32;
  zcclResult_t r;
  switch (c->o->coll) {
    case COLL_ALLREDUCE: r = zcclAllReduce(send, recv, count, t, c->o->op, c->comm, NULL); break;
    case COLL_ALLGATHER: r = zcclAllGather(send, recv, send_count(c, count), t, c->comm, NULL); break;
    case COLL_BROADCAST: r = zcclBroadcast(send, recv, count, t, 0, c->comm, NULL); break;
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

/* Compares recv with the exact result of the collective on every rank's
 * input; counts elements beyond the reduction-order tolerance. */
static void check_result(ctx_t* c, const void* recv, size_t count, row_t* row) {
  int dbl = c->o->is_double;
  size_t esize = dbl ? 8 : 4;
  size_t sc = send_count(c, count);
  int src = source_rank(c);
  if (src == -2) { /* nothing received here */
    row->wrong = 0;
    row->max_abs_err = 0;
    row->psnr = INFINITY;
    return;
  }
  void* in = malloc(sc * esize);
  double* ref = calloc(count, sizeof(double));
  double* mag = calloc(count, sizeof(double));
  for (int r = 0; r < c->nranks; r++) {
    if (src >= 0 && r != src) continue;
    zccl_data_tile(&c->field, rank_offset(c, r), in, sc);
    for (size_t i = 0; i < sc; i++) {
      double v = get(in, dbl, i);
      if (c->o->coll == COLL_ALLGATHER) {
        ref[(size_t)r * sc + i] = v;
      } else if (src >= 0) { /* a copy of rank src's input */
        ref[i] = v;
      } else {
        switch (c->o->op) {
          case zcclProd: ref[i] = r ? ref[i] * v : v; break;
          case zcclMax: ref[i] = r ? fmax(ref[i], v) : v; break;
          case zcclMin: ref[i] = r ? fmin(ref[i], v) : v; break;
          default: ref[i] += v; break;
        }
        mag[i] += fabs(v);
      }
    }
  }
  double eps = dbl ? 2.2e-16 : 1.2e-7;
  double max_err = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
  long wrong = 0;
  for (size_t i = 0; i < count; i++) {
    double want = ref[i];
    if (c->o->coll == COLL_ALLREDUCE && c->o->op == zcclAvg) want /= c->nranks;
    double got = get(recv, dbl, i);
    double err = fabs(got - want);
    double tol = c->o->coll == COLL_ALLREDUCE ? 2.0 * c->nranks * eps * (mag[i] + fabs(want)) : 0.0;
    if (!(err <= tol)) wrong++;
    if (err > max_err || err != err) max_err = err;
    sq += err * err;
    if (want < lo) lo = want;
    if (want > hi) hi = want;
  }
  row->wrong = wrong;
  row->max_abs_err = max_err;
  double rmse = sqrt(sq / (double)count);
  row->psnr = rmse > 0 ? 20.0 * log10((hi - lo) / rmse) : INFINITY;
  free(in);
  free(ref);
  free(mag);
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
  for (int i = 0; i < o->warmup && ok; i++) ok = run(c, send, recv, count) == 0;
  double* t = malloc(sizeof(double) * (size_t)o->iters);
  for (int i = 0; i < o->iters; i++) {
    /* A result left over from an earlier run or method must not pass the check. */
    if (o->check && i == o->iters - 1) memset(recv, 0xff, count * esize);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < calls && ok; k++) ok = run(c, send, recv, count) == 0;
    t[i] = (MPI_Wtime() - t0) * scale;
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
  row->psnr = NAN;
  row->ratio = 1.0;
  if (o->check) {
    /* Copies (all but allreduce) are exact; every rank checks its own. */
    check_result(c, recv, count, row);
    long w = row->wrong;
    double e = row->max_abs_err;
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    row->wrong = w;
    row->max_abs_err = e;
  }
  return 0;
}

static void print_header(const ctx_t* c) {
  const opts_t* o = c->o;
  printf("# zccl-perf %s: %d ranks, %s, %s%s, op %s, %d iterations (+%d warm-up), median of the slowest rank\n",
         coll_names[o->coll], c->nranks, c->field.source, o->is_double ? "double" : "float",
         c->field.has_fill ? (o->fill_zero ? " (fill values set to 0)" : " (fill values kept)") : "",
         o->coll == COLL_ALLREDUCE ? op_names[o->op] : "-",
         o->iters, o->warmup);
  if (o->coll == COLL_SENDRECV)
    printf("# sendrecv: rank r sends to (r+1)%%%d and receives from (r-1)%%%d; algbw = busbw = size / time\n",
           c->nranks, c->nranks);
  if (o->coll == COLL_PINGPONG)
    printf("# pingpong: rank 0 <-> rank 1; time = half a round trip (each iteration the mean of "
           "min(100, max(1, 4 MiB / size)) back-to-back round trips), algbw = busbw = size / time\n");
  printf("# %10s %11s %6s %5s %-16s %-8s %-6s %11s %9s %9s %8s %7s %7s %10s %7s\n", "size(B)", "count",
         "type", "redop", "method", "algo", "codec", "time(us)", "algbw", "busbw", "speedup", "#wrong",
         "ratio", "max_err", "psnr");
}

static void emit_row(ctx_t* c, const row_t* r) {
  const opts_t* o = c->o;
  const char* type = o->is_double ? "double" : "float";
  const char* op = o->coll == COLL_ALLREDUCE ? op_names[o->op] : "-";
  if (r->wrong > 0) c->wrong_total += r->wrong;
  if (c->rank != 0) return;
  printf("  %10zu %11zu %6s %5s %-16s %-8s %-6s %11.1f %9.3f %9.3f %8.2f %7ld %7.2f %10.3g %7.1f\n", r->bytes,
         r->count, type, op, r->method, r->algo, r->codec, r->time_us, r->algbw, r->busbw, r->speedup,
         r->wrong, r->ratio, r->max_abs_err, r->psnr);
  if (c->csv)
    fprintf(c->csv, "%s,%s,%s,%s,%zu,%zu,%s,%s,%.3f,%.6f,%.6f,%.4f,%ld,%.4f,%.6g,%.6g,%.4f\n", coll_names[o->coll],
            r->method, r->codec, r->algo, r->bytes, r->count, type, op, r->time_us, r->algbw, r->busbw,
            r->speedup, r->wrong, r->ratio, r->max_abs_err, r->eb_abs, r->psnr);
  if (c->json) {
    char psnr[32];
    if (isfinite(r->psnr)) snprintf(psnr, sizeof psnr, "%.4f", r->psnr);
    else snprintf(psnr, sizeof psnr, "null");
    fprintf(c->json,
            "%s\n  {\"collective\": \"%s\", \"method\": \"%s\", \"codec\": \"%s\", \"algo\": \"%s\", "
            "\"bytes\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"nranks\": %d, "
            "\"time_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"speedup\": %.4f, "
            "\"ratio\": %.4f, \"max_abs_err\": %.6g, \"eb_abs\": %.6g, \"psnr\": %s, \"wrong\": %ld}",
            c->json_rows++ ? "," : "", coll_names[o->coll], r->method, r->codec, r->algo, r->bytes, r->count,
            type, op, c->nranks, r->time_us, r->algbw, r->busbw, r->speedup, r->ratio,
            isfinite(r->max_abs_err) ? r->max_abs_err : -1.0, r->eb_abs, psnr, r->wrong);
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

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ctx_t c = {0};
  opts_t o;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
  if (parse_args(argc, argv, &o) != 0) {
    if (c.rank == 0) usage();
    MPI_Finalize();
    return 2;
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
  if (c.rank == 0 && o.csv_path) {
    c.csv = fopen(o.csv_path, "w");
    if (c.csv)
      fprintf(c.csv, "collective,method,codec,algo,bytes,count,type,redop,time_us,algbw_gbps,busbw_gbps,"
                     "speedup,wrong,ratio,max_abs_err,eb_abs,psnr\n");
  }
  if (c.rank == 0 && o.json_path) {
    c.json = fopen(o.json_path, "w");
    if (c.json) fprintf(c.json, "[");
  }

  zccl_setup(&c);
  int run_zccl_plain = c.comm != NULL;
  int run_zccl_comp = c.comm != NULL && o.compression != NULL;
  zcclCompression_t plain = ZCCL_COMPRESSION_INITIALIZER, comp = ZCCL_COMPRESSION_INITIALIZER;
  if (o.compression && zcclCompressionFromString(o.compression, &comp) != zcclSuccess) {
    if (c.rank == 0) fprintf(stderr, "zccl-perf: --compression: %s\n", zcclGetLastError(NULL));
    MPI_Finalize();
    return 2;
  }
  if (c.rank == 0) {
    print_header(&c);
    if (!c.comm) printf("# zccl: not run: %s\n", c.zccl_why);
    /* The library would send the data uncompressed: a row named compressed
     * would be a lie. */
    if (run_zccl_comp) printf("# zccl-compressed: not run: compressed collectives are not built yet\n");
  }
  run_zccl_comp = 0;

  size_t esize = o.is_double ? 8 : 4;
  double mpi_time = NAN;
  for (double b = (double)o.min_bytes; b <= (double)o.max_bytes * 1.0000001; b *= o.factor) {
    size_t count = (size_t)b / esize;
    if (o.coll == COLL_ALLGATHER) count -= count % (size_t)c.nranks;
    if (count == 0) continue;
    size_t sc = send_count(&c, count);
    void* send = malloc(count * esize);
    void* recv = malloc(count * esize);
    zccl_data_tile(&c.field, rank_offset(&c, c.rank), send, sc);
    row_t row;
    if (o.baseline_mpi) {
      row = (row_t){.method = "mpi", .codec = "none", .algo = "default"};
      if (time_method(&c, run_mpi, count, send, recv, &row) == 0) {
        mpi_time = row.time_us;
        row.speedup = 1.0;
        emit_row(&c, &row);
      }
    }
    for (int m = 0; m < 2; m++) {
      if (m == 0 ? !run_zccl_plain : !run_zccl_comp) continue;
      zcclCommSetCompression(c.comm, m == 0 ? &plain : &comp);
      static const char* codec_names[zcclNumCodecs] = {"none", "auto", "szp", "hz", "rle", "zfp"};
      row = (row_t){.method = m == 0 ? "zccl" : "zccl-compressed",
                    .codec = codec_names[m == 0 ? zcclCodecNone : comp.codec], .algo = "auto"};
      if (time_method(&c, run_zccl, count, send, recv, &row) != 0) {
        if (c.rank == 0) printf("# %s: stopped: %s\n", row.method, c.zccl_why);
        if (m == 0) run_zccl_plain = 0;
        else run_zccl_comp = 0;
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
  if (c.comm) zcclCommDestroy(c.comm);
  zccl_data_free(&c.field);
  MPI_Finalize();
  if (c.wrong_total > 0 && c.rank == 0)
    fprintf(stderr, "zccl-perf: %ld wrong elements in all\n", c.wrong_total);
  return c.wrong_total > 0 ? 1 : 0;
}
