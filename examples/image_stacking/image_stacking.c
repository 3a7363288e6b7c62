/*
 * image_stacking: stacks the frames of a NetCDF variable (e.g. 12 monthly
 * ocean-temperature volumes) across MPI ranks with one AllReduce, done by
 * MPI, by zccl uncompressed and by zccl compressed (hz, szp; ABS and REL
 * bounds), and checks every pixel of every answer against the exact one.
 *
 * Rank r of N reads frames [r*F/N, (r+1)*F/N) of the F stacked frames (the
 * first axis of the variable is the frame axis; a frame is the rest), sums
 * them into one local image and the ranks AllReduce that image:
 *   op sum: SUM of the local sums; composite = result / F (the mean image)
 *   op avg: AVG of the local means (zcclAvg; MPI: SUM then / N); equal to the
 *           mean image only when every rank holds the same number of frames,
 *           so avg requires F % N == 0 (otherwise exit 2; use --ops sum).
 * The exact reference is the sum of the same float inputs in double
 * (MPI_Reduce of doubles). A pixel that is fill (_FillValue, missing_value,
 * non-finite) in any frame of any rank is masked: 0 in the inputs, left out
 * of every check and metric.
 *
 * Checks, per unmasked element, against the exact result `want`:
 *   uncompressed (mpi, zccl): |got - want| <= 2 N eps (sum|inputs| + |want|)
 *     (float reduction in any order)
 *   compressed: |got - want| <= bound + eps |want|, with bound = N eb_abs
 *     (SUM) or eb_abs (AVG), eb_abs = eb (ABS) or eb x (max - min) of the
 *     inputs of all ranks (REL), as zccl documents (include/zccl.h).
 * Exit status: 0 all within bounds; 1 an element over its bound, or a
 * zccl output that differs between ranks; 2 bad arguments or input.
 *
 * Usage: mpirun -np N image_stacking [--data FILE:VAR] [--frames K]
 *        [--abs EB] [--rel EB] [--codecs hz,szp] [--ops sum,avg]
 *        [--warmup W] [--reps R] [--units TEXT] [--out DIR] [--csv FILE]
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <netcdf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zccl.h"

#define DEFAULT_DATA "/usr/share/ferret-vis/data/ocean_atlas_subset.nc:TEMP"
#define FERRET_DIR "/usr/share/ferret-vis/data"
#define EXIT_BAD_INPUT 2
#define EXIT_HELP (-1) /* parse_args: --help was printed; exit 0 */
#define MAX_CODECS 4
#define MAX_ROWS 32
#define MSG_LEN 5120             /* room for a full path */
#define MAX_PIXELS (INT_MAX / 4) /* MPI counts are int; the reference reduces 4 arrays at once */

enum { OP_SUM = 0, OP_AVG = 1, NUM_OPS = 2 };
enum { KIND_MPI, KIND_ZCCL, KIND_COMPRESSED };

typedef struct {
  char file[4096];
  char var[NC_MAX_NAME + 1];
  long frames;           /* 0: all */
  double eb_abs, eb_rel; /* <= 0: leave that mode out */
  int codecs[MAX_CODECS], ncodecs;
  int ops[NUM_OPS], nops;
  int warmup, reps;
  const char *units, *out, *csv;
} opts_t;

typedef struct {
  int ndims; /* of a frame */
  char dims[NC_MAX_VAR_DIMS][NC_MAX_NAME + 1];
  size_t shape[NC_MAX_VAR_DIMS];
  char frame_dim[NC_MAX_NAME + 1];
  size_t n;          /* pixels of a frame */
  long in_file, F;   /* frames in the file, frames stacked */
  long first, count; /* this rank's frames */
  char units[128], long_name[256];
  int has_fill[2];
  float fill[2]; /* _FillValue, missing_value */
  double* acc;   /* this rank's sum in double */
  unsigned char* mask;
  float* input[NUM_OPS]; /* local sum, local mean; masked pixels 0 */
  size_t masked;
} input_t;

typedef struct {                   /* want, mag, crange: rank 0 only (MPI_Reduce of doubles) */
  double* want[NUM_OPS];           /* exact AllReduce result of each op */
  double* mag[NUM_OPS];            /* sum over ranks of |input| (AVG: / N) */
  double lo[NUM_OPS], hi[NUM_OPS]; /* inputs of all ranks (REL's range) */
  double scale[NUM_OPS];           /* result x scale = composite */
  double crange[NUM_OPS];          /* value range of the exact composite */
} ref_t;

typedef struct {
  int kind, codec, mode, op;
  double eb, eb_abs, bound; /* bound: on the AllReduce result */
  double t_med, speedup, ratio, max_err, max_tol, nrmse, psnr;
  long wrong;
  int same; /* bit-identical output on every rank */
  char name[64];
} row_t;

typedef struct {
  int rank, N;
  opts_t o;
  input_t in;
  ref_t ref;
  zcclComm_t comm;
  float *send, *recv;
  row_t rows[MAX_ROWS];
  int nrows;
} ctx_t;

static const char* op_name(int op) { return op == OP_SUM ? "sum" : "avg"; }

static const char* codec_name(int codec) {
  switch (codec) {
    case zcclCodecHz:
      return "hz";
    case zcclCodecSzp:
      return "szp";
    case zcclCodecZfp:
      return "zfp";
    default:
      return "none";
  }
}

/* ---- arguments ---------------------------------------------------------- */

static int usage(int rank, const char* why) {
  if (rank == 0) {
    if (why) fprintf(stderr, "image_stacking: %s\n", why);
    fprintf(stderr,
            "usage: mpirun -np N image_stacking [--data FILE:VAR] [--frames K] [--abs EB] [--rel EB]\n"
            "       [--codecs hz,szp] [--ops sum,avg] [--warmup W] [--reps R] [--units TEXT]\n"
            "       [--out DIR] [--csv FILE]\n"
            "  --data   NetCDF variable; first axis = frames (default %s;\n"
            "           a bare file name is also looked for in %s)\n"
            "  --frames stack only the first K frames (0: all)\n"
            "  --abs/--rel  error bounds of the compressed rows (<= 0 leaves the mode out)\n",
            DEFAULT_DATA, FERRET_DIR);
  }
  return EXIT_BAD_INPUT;
}

static int parse_codecs(opts_t* o, char* list) {
  o->ncodecs = 0;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int c = strcmp(t, "hz") == 0    ? zcclCodecHz
            : strcmp(t, "szp") == 0 ? zcclCodecSzp
            : strcmp(t, "zfp") == 0 ? zcclCodecZfp
                                    : -1;
    if (c < 0 || o->ncodecs == MAX_CODECS) return -1;
    o->codecs[o->ncodecs++] = c;
  }
  return 0;
}

static int parse_ops(opts_t* o, char* list) {
  o->nops = 0;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int op = strcmp(t, "sum") == 0 ? OP_SUM : strcmp(t, "avg") == 0 ? OP_AVG : -1;
    if (op < 0 || o->nops == NUM_OPS) return -1;
    o->ops[o->nops++] = op;
  }
  return o->nops ? 0 : -1;
}

static int set_data(opts_t* o, const char* arg) {
  const char* colon = strrchr(arg, ':');
  size_t flen = colon ? (size_t)(colon - arg) : 0;
  if (!colon || flen == 0 || flen >= sizeof o->file || strlen(colon + 1) == 0 || strlen(colon + 1) > NC_MAX_NAME)
    return -1;
  memcpy(o->file, arg, flen);
  o->file[flen] = '\0';
  strcpy(o->var, colon + 1);
  /* A bare name such as monthly_navy_winds.cdf: the ferret-datasets copy. */
  if (access(o->file, R_OK) != 0 && !strchr(o->file, '/')) {
    char path[sizeof o->file + sizeof FERRET_DIR];
    snprintf(path, sizeof path, "%s/%s", FERRET_DIR, o->file);
    if (access(path, R_OK) == 0 && strlen(path) < sizeof o->file) memcpy(o->file, path, strlen(path) + 1);
  }
  return 0;
}

static int parse_num(const char* s, double* v) {
  char* end;
  errno = 0;
  *v = strtod(s, &end);
  return errno || end == s || *end || !isfinite(*v) ? -1 : 0;
}

static int parse_int(const char* s, long lo, long hi, long* v) {
  double x;
  if (parse_num(s, &x) || x < (double)lo || x > (double)hi || x != floor(x)) return -1;
  *v = (long)x;
  return 0;
}

static int parse_args(opts_t* o, int argc, char** argv, int rank) {
  static char codecs[] = "hz,szp", ops[] = "sum,avg";
  *o = (opts_t){.eb_abs = 1e-4, .eb_rel = 1e-4, .warmup = 2, .reps = 20};
  set_data(o, DEFAULT_DATA);
  parse_codecs(o, codecs);
  parse_ops(o, ops);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long x = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(rank, NULL), EXIT_HELP;
    if (!v) return usage(rank, "an option needs a value");
    i++;
    int bad = 0;
    if (strcmp(a, "--data") == 0)
      bad = set_data(o, v);
    else if (strcmp(a, "--frames") == 0)
      bad = parse_int(v, 0, 1L << 40, &o->frames);
    else if (strcmp(a, "--abs") == 0)
      bad = parse_num(v, &o->eb_abs);
    else if (strcmp(a, "--rel") == 0)
      bad = parse_num(v, &o->eb_rel);
    else if (strcmp(a, "--codecs") == 0)
      bad = parse_codecs(o, argv[i]);
    else if (strcmp(a, "--ops") == 0)
      bad = parse_ops(o, argv[i]);
    else if (strcmp(a, "--warmup") == 0)
      bad = parse_int(v, 0, 1000, &x), o->warmup = bad ? 0 : (int)x;
    else if (strcmp(a, "--reps") == 0)
      bad = parse_int(v, 1, 100000, &x), o->reps = bad ? 1 : (int)x;
    else if (strcmp(a, "--units") == 0)
      o->units = v;
    else if (strcmp(a, "--out") == 0)
      o->out = v;
    else if (strcmp(a, "--csv") == 0)
      o->csv = v;
    else {
      char msg[MSG_LEN];
      snprintf(msg, sizeof msg, "unknown option %.200s", a);
      return usage(rank, msg);
    }
    if (bad) {
      char msg[MSG_LEN];
      snprintf(msg, sizeof msg, "bad value for %s: '%s'", a, v);
      return usage(rank, msg);
    }
  }
  return 0;
}

/* ---- input (libnetcdf, one frame at a time) ------------------------------ */

/* Writes the reason for bad input to msg (MSG_LEN bytes); returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(char* msg, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, MSG_LEN, fmt, ap);
  va_end(ap);
  return -1;
}

static int nc_fail(char* msg, const char* what, const opts_t* o, int status) {
  return fail(msg, "%s %s:%s: %s", what, o->file, o->var, nc_strerror(status));
}

static void read_text_att(int nc, int varid, const char* name, char* buf, size_t len) {
  size_t n = 0;
  nc_type t;
  buf[0] = '\0';
  if (nc_inq_att(nc, varid, name, &t, &n) != NC_NOERR || t != NC_CHAR || n >= len) return;
  if (nc_get_att_text(nc, varid, name, buf) == NC_NOERR) buf[n] = '\0';
}

/* Shape, fill values, units. */
static int inquire(int nc, int varid, ctx_t* c, char* msg) {
  input_t* in = &c->in;
  int ndims, dimids[NC_MAX_VAR_DIMS];
  nc_type type;
  int st = nc_inq_var(nc, varid, NULL, &type, &ndims, dimids, NULL);
  if (st != NC_NOERR) return nc_fail(msg, "cannot inquire", &c->o, st);
  if (ndims < 2 || type == NC_CHAR || type == NC_STRING)
    return fail(msg, "%s:%s must be numeric with a frame axis and at least one more axis (has %d axes)", c->o.file,
                c->o.var, ndims);
  size_t len;
  nc_inq_dim(nc, dimids[0], in->frame_dim, &len);
  in->in_file = (long)len;
  in->ndims = ndims - 1;
  in->n = 1;
  for (int d = 1; d < ndims; d++) {
    nc_inq_dim(nc, dimids[d], in->dims[d - 1], &in->shape[d - 1]);
    in->n *= in->shape[d - 1];
  }
  if (in->n == 0 || in->n > MAX_PIXELS)
    return fail(msg, "%s:%s: frames of %zu values (1 .. %d supported)", c->o.file, c->o.var, in->n, MAX_PIXELS);
  in->has_fill[0] = nc_get_att_float(nc, varid, "_FillValue", &in->fill[0]) == NC_NOERR;
  in->has_fill[1] = nc_get_att_float(nc, varid, "missing_value", &in->fill[1]) == NC_NOERR;
  if (!in->has_fill[0]) in->has_fill[0] = 1, in->fill[0] = NC_FILL_FLOAT; /* netCDF's default fill */
  read_text_att(nc, varid, "units", in->units, sizeof in->units);
  read_text_att(nc, varid, "long_name", in->long_name, sizeof in->long_name);
  if (c->o.units) snprintf(in->units, sizeof in->units, "%s", c->o.units);
  return 0;
}

/* The policy on frame counts (same on every rank: no collective needed). */
static int check_frames(ctx_t* c, char* msg) {
  input_t* in = &c->in;
  int avg = c->o.nops == 2 || c->o.ops[0] == OP_AVG;
  if (c->o.frames > in->in_file)
    return fail(msg, "--frames %ld: %s:%s has only %ld frames", c->o.frames, c->o.file, c->o.var, in->in_file);
  in->F = c->o.frames ? c->o.frames : in->in_file;
  if (in->F < c->N) return fail(msg, "%ld frames for %d ranks: every rank needs at least one frame", in->F, c->N);
  if (avg && in->F % c->N)
    return fail(msg,
                "%ld frames do not divide among %d ranks: op avg (the mean of the ranks' means) needs the same "
                "number of frames on every rank; use --frames %ld or --ops sum",
                in->F, c->N, in->F / c->N * c->N);
  in->first = c->rank * in->F / c->N;
  in->count = (c->rank + 1) * in->F / c->N - in->first;
  return 0;
}

static int is_fill(const input_t* in, float v) {
  return !isfinite(v) || (in->has_fill[0] && v == in->fill[0]) || (in->has_fill[1] && v == in->fill[1]);
}

static int read_frames(int nc, int varid, ctx_t* c, char* msg) {
  input_t* in = &c->in;
  float* frame = malloc(in->n * sizeof *frame);
  in->acc = calloc(in->n, sizeof *in->acc);
  in->mask = calloc(in->n, 1);
  if (!frame || !in->acc || !in->mask) return free(frame), fail(msg, "out of memory");
  size_t start[NC_MAX_VAR_DIMS] = {0}, count[NC_MAX_VAR_DIMS] = {1};
  for (int d = 0; d < in->ndims; d++) count[d + 1] = in->shape[d];
  for (long f = in->first; f < in->first + in->count; f++) {
    start[0] = (size_t)f;
    int st = nc_get_vara_float(nc, varid, start, count, frame);
    if (st != NC_NOERR) return free(frame), nc_fail(msg, "cannot read a frame of", &c->o, st);
    for (size_t i = 0; i < in->n; i++) {
      if (is_fill(in, frame[i]))
        in->mask[i] = 1;
      else
        in->acc[i] += frame[i];
    }
  }
  free(frame);
  return 0;
}

/* Everything local: returns 0, or -1 with msg set. */
static int read_input(ctx_t* c, char* msg) {
  int nc, varid, st = nc_open(c->o.file, NC_NOWRITE, &nc);
  if (st != NC_NOERR) return fail(msg, "cannot open %s: %s", c->o.file, nc_strerror(st));
  st = nc_inq_varid(nc, c->o.var, &varid);
  int rc = st != NC_NOERR ? fail(msg, "no variable %s in %s", c->o.var, c->o.file) : 0;
  if (!rc) rc = inquire(nc, varid, c, msg) || check_frames(c, msg) || read_frames(nc, varid, c, msg) ? -1 : 0;
  nc_close(nc);
  return rc;
}

/* Masks agreed by all ranks; the inputs of both ops with masked pixels 0. */
static void finish_input(ctx_t* c) {
  input_t* in = &c->in;
  MPI_Allreduce(MPI_IN_PLACE, in->mask, (int)in->n, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD);
  in->input[OP_SUM] = malloc(in->n * sizeof(float));
  in->input[OP_AVG] = malloc(in->n * sizeof(float));
  for (size_t i = 0; i < in->n; i++) {
    int m = in->mask[i];
    in->masked += (size_t)m;
    in->input[OP_SUM][i] = m ? 0.0f : (float)in->acc[i];
    in->input[OP_AVG][i] = m ? 0.0f : (float)(in->acc[i] / (double)in->count);
  }
  free(in->acc);
  in->acc = NULL;
}

/* ---- exact references ----------------------------------------------------- */

/* REL's range: zccl's, over what it is given (masked pixels are 0 there). */
static void input_ranges(ctx_t* c) {
  double mm[2 * NUM_OPS];
  for (int op = 0; op < NUM_OPS; op++) {
    double lo = c->in.masked ? 0 : INFINITY, hi = c->in.masked ? 0 : -INFINITY;
    for (size_t i = 0; i < c->in.n; i++) {
      double v = c->in.input[op][i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    mm[2 * op] = -lo, mm[2 * op + 1] = hi;
  }
  MPI_Allreduce(MPI_IN_PLACE, mm, 2 * NUM_OPS, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int op = 0; op < NUM_OPS; op++) c->ref.lo[op] = -mm[2 * op], c->ref.hi[op] = mm[2 * op + 1];
}

static double composite_range(const ctx_t* c, int op) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < c->in.n; i++) {
    if (c->in.mask[i]) continue;
    double v = c->ref.want[op][i] * c->ref.scale[op];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  return hi > lo ? hi - lo : 0;
}

/* Sums of the float inputs (and of their magnitudes) in double on rank 0. */
static void exact_refs(ctx_t* c) {
  size_t n = c->in.n;
  double* buf = malloc(4 * n * sizeof *buf);
  double* sum = c->rank == 0 ? malloc(4 * n * sizeof *sum) : NULL;
  for (int op = 0; op < NUM_OPS; op++)
    for (size_t i = 0; i < n; i++)
      buf[(2 * op) * n + i] = c->in.input[op][i], buf[(2 * op + 1) * n + i] = fabs(c->in.input[op][i]);
  MPI_Reduce(buf, sum, (int)(4 * n), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); /* n <= MAX_PIXELS */
  free(buf);
  input_ranges(c);
  if (c->rank) return;
  for (size_t i = 0; i < 2 * n; i++) sum[2 * n + i] /= c->N; /* AVG: the mean of the ranks' means */
  for (int op = 0; op < NUM_OPS; op++) {
    c->ref.want[op] = sum + (2 * op) * n, c->ref.mag[op] = sum + (2 * op + 1) * n;
    c->ref.scale[op] = op == OP_SUM ? 1.0 / (double)c->in.F : 1.0;
    c->ref.crange[op] = composite_range(c, op);
  }
}

/* ---- rows ----------------------------------------------------------------- */

static void add_row(ctx_t* c, int kind, int codec, int mode, double eb, int op) {
  row_t* r = &c->rows[c->nrows++];
  *r = (row_t){.kind = kind, .codec = codec, .mode = mode, .eb = eb, .op = op};
  if (kind == KIND_COMPRESSED)
    snprintf(r->name, sizeof r->name, "%s_%s_%s", codec_name(codec), mode == zcclErrorAbs ? "abs" : "rel", op_name(op));
  else
    snprintf(r->name, sizeof r->name, "%s_%s", kind == KIND_MPI ? "mpi" : "zccl", op_name(op));
}

static void plan_rows(ctx_t* c) {
  for (int k = 0; k < c->o.nops; k++) {
    int op = c->o.ops[k];
    add_row(c, KIND_MPI, zcclCodecNone, -1, 0, op);
    add_row(c, KIND_ZCCL, zcclCodecNone, -1, 0, op);
    for (int j = 0; j < c->o.ncodecs; j++) {
      if (c->o.eb_abs > 0) add_row(c, KIND_COMPRESSED, c->o.codecs[j], zcclErrorAbs, c->o.eb_abs, op);
      if (c->o.eb_rel > 0) add_row(c, KIND_COMPRESSED, c->o.codecs[j], zcclErrorRel, c->o.eb_rel, op);
    }
  }
}

static void die_zccl(const ctx_t* c, const char* what, zcclResult_t r) {
  fprintf(stderr, "image_stacking: rank %d: %s: %s (%s)\n", c->rank, what, zcclGetErrorString(r),
          zcclGetLastError(c->comm));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The row's setting on the communicator (every rank sets the same). */
static void set_compression(ctx_t* c, const row_t* r) {
  zcclCompression_t z = ZCCL_COMPRESSION_INITIALIZER;
  z.codec = r->kind == KIND_COMPRESSED ? r->codec : zcclCodecNone;
  if (r->kind == KIND_COMPRESSED) z.mode = r->mode, z.eb = r->eb;
  z.minBytes = 0; /* compress whatever the size: the small fields too */
  zcclResult_t res = zcclCommSetCompression(c->comm, &z);
  if (res != zcclSuccess) die_zccl(c, "zcclCommSetCompression", res);
}

static void allreduce_once(ctx_t* c, const row_t* r) {
  int n = (int)c->in.n;
  if (r->kind == KIND_MPI) {
    MPI_Allreduce(c->send, c->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (r->op == OP_AVG) /* MPI has no AVG: SUM, then divide */
      for (int i = 0; i < n; i++) c->recv[i] /= (float)c->N;
    return;
  }
  zcclResult_t res =
      zcclAllReduce(c->send, c->recv, c->in.n, zcclFloat32, r->op == OP_SUM ? zcclSum : zcclAvg, c->comm, NULL);
  if (res != zcclSuccess) die_zccl(c, "zcclAllReduce", res);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median over the timed calls of each call's slowest rank. */
static double timed_calls(ctx_t* c, const row_t* r) {
  int reps = c->o.reps;
  double* t = malloc((size_t)reps * sizeof *t);
  for (int i = 0; i < c->o.warmup; i++) allreduce_once(c, r);
  for (int i = 0; i < reps; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    allreduce_once(c, r);
    t[i] = MPI_Wtime() - t0;
  }
  MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  free(t);
  return med;
}

static uint64_t fnv1a(const void* p, size_t len) {
  const unsigned char* b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The contract says every rank ends with the same bits: checked by hash. */
static int same_on_all_ranks(const ctx_t* c) {
  uint64_t h = fnv1a(c->recv, c->in.n * sizeof(float)), h0 = h;
  MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int same = h == h0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return same;
}

/* Raw/wire bytes of the ranks' compressed sends during the row. */
static double compression_ratio(ctx_t* c, const uint64_t before[2]) {
  uint64_t now[2], d[2], tot[2];
  zcclCommCompressionStats(c->comm, &now[0], &now[1]);
  d[0] = now[0] - before[0], d[1] = now[1] - before[1];
  MPI_Allreduce(d, tot, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return tot[1] ? (double)tot[0] / (double)tot[1] : 1.0;
}

/* The documented bound on the AllReduce result (perf/zccl_perf.c's
 * compressed_bound for hz/szp): SUM N eb_abs, AVG eb_abs. */
static void row_bound(const ctx_t* c, row_t* r) {
  if (r->kind != KIND_COMPRESSED) return;
  double lo = c->ref.lo[r->op], hi = c->ref.hi[r->op];
  double range = hi > lo ? hi - lo : (hi == lo && hi != 0 ? fabs(hi) : 1.0); /* a constant field: as zccl */
  r->eb_abs = r->mode == zcclErrorRel ? r->eb * range : r->eb;
  r->bound = r->op == OP_SUM ? c->N * r->eb_abs : r->eb_abs;
}

/* Every unmasked element against the exact result (rank 0). */
static void check_row(const ctx_t* c, row_t* r) {
  const double *want = c->ref.want[r->op], *mag = c->ref.mag[r->op];
  double eps = FLT_EPSILON, sq = 0, sc = c->ref.scale[r->op];
  size_t m = 0;
  for (size_t i = 0; i < c->in.n; i++) {
    if (c->in.mask[i]) continue;
    double w = want[i], err = fabs((double)c->recv[i] - w);
    double tol = r->kind == KIND_COMPRESSED ? r->bound + eps * fabs(w) : 2.0 * c->N * eps * (mag[i] + fabs(w));
    if (!(err <= tol)) r->wrong++;
    if (err > r->max_err || err != err) r->max_err = err;
    if (tol > r->max_tol) r->max_tol = tol;
    sq += err * err;
    m++;
  }
  /* Reported on the composite's scale (the mean image: SUM / F); max_tol
   * becomes the table's bound: the largest tolerance an element had. */
  r->max_err *= sc, r->max_tol *= sc;
  double rmse = m ? sqrt(sq / (double)m) * sc : 0, range = c->ref.crange[r->op];
  r->nrmse = range > 0 ? rmse / range : NAN;
  r->psnr = rmse > 0 ? 20.0 * log10(range / rmse) : INFINITY;
}

static void run_row(ctx_t* c, row_t* r) {
  uint64_t before[2] = {0, 0};
  memcpy(c->send, c->in.input[r->op], c->in.n * sizeof(float)); /* the same input for every call */
  if (r->kind != KIND_MPI) {
    set_compression(c, r);
    zcclCommCompressionStats(c->comm, &before[0], &before[1]);
  }
  r->t_med = timed_calls(c, r);
  r->ratio = r->kind == KIND_COMPRESSED ? compression_ratio(c, before) : 1.0;
  r->same = same_on_all_ranks(c);
  row_bound(c, r);
  if (c->rank == 0) check_row(c, r);
  MPI_Bcast(&r->wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
}

/* ---- report --------------------------------------------------------------- */

static void mode_text(const row_t* r, char* buf, size_t len) {
  if (r->kind == KIND_COMPRESSED)
    snprintf(buf, len, "%s %.0e", r->mode == zcclErrorAbs ? "abs" : "rel", r->eb);
  else
    snprintf(buf, len, "-");
}

static void print_table(const ctx_t* c) {
  const input_t* in = &c->in;
  const char* where = getenv("ZCCL_EXAMPLE_WHERE");
  printf(
      "image_stacking: %s:%s, %ld frames (of %ld) of %zu pixels, %d ranks (frames [r*F/N,(r+1)*F/N)), %zu "
      "masked pixels\n",
      c->o.file, c->o.var, in->F, in->in_file, in->n, c->N, in->masked);
  if (where) printf("where: %s\n", where);
  printf("time: median of %d calls (slowest rank each); composite = SUM/F or AVG of rank means; errors in %s\n",
         c->o.reps, in->units[0] ? in->units : "the data's units");
  printf("%-6s %-3s %-5s %-10s %9s %6s %6s %9s %9s %6s %9s %7s\n", "method", "op", "codec", "mode/bound", "time(ms)",
         "x MPI", "ratio", "max err", "bound", "wrong", "NRMSE", "PSNR");
  for (int k = 0; k < c->nrows; k++) {
    const row_t* r = &c->rows[k];
    char mode[32], ratio[16];
    mode_text(r, mode, sizeof mode);
    if (r->kind == KIND_COMPRESSED)
      snprintf(ratio, sizeof ratio, "%.2f", r->ratio);
    else
      snprintf(ratio, sizeof ratio, "-");
    printf("%-6s %-3s %-5s %-10s %9.3f %6.2f %6s %9.3g %9.3g %6ld %9.3g %7.1f%s\n",
           r->kind == KIND_MPI ? "mpi" : "zccl", op_name(r->op),
           r->kind == KIND_COMPRESSED ? codec_name(r->codec) : "-", mode, r->t_med * 1e3, r->speedup, ratio, r->max_err,
           r->max_tol, r->wrong, r->nrmse, r->psnr, r->same || r->kind == KIND_MPI ? "" : "  (differs between ranks)");
  }
  fflush(stdout);
}

static void json_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void json_num(FILE* f, double v) {
  if (isfinite(v))
    fprintf(f, "%.9g", v);
  else
    fputs("null", f);
}

static void json_row(FILE* f, const ctx_t* c, const row_t* r) {
  int cmp = r->kind == KIND_COMPRESSED;
  fprintf(f, "    {\"name\": \"%s\", \"method\": \"%s\", \"op\": \"%s\", \"codec\": \"%s\", \"mode\": %s%s%s, \"eb\": ",
          r->name, r->kind == KIND_MPI ? "mpi" : "zccl", op_name(r->op), cmp ? codec_name(r->codec) : "none",
          cmp ? "\"" : "", cmp ? (r->mode == zcclErrorAbs ? "abs" : "rel") : "null", cmp ? "\"" : "");
  json_num(f, cmp ? r->eb : NAN);
  fputs(", \"eb_abs\": ", f), json_num(f, cmp ? r->eb_abs : NAN);
  fputs(", \"bound\": ", f), json_num(f, r->max_tol);
  fputs(", \"bound_documented\": ", f), json_num(f, cmp ? r->bound * c->ref.scale[r->op] : NAN);
  fputs(", \"time_ms\": ", f), json_num(f, r->t_med * 1e3);
  fputs(", \"speedup\": ", f), json_num(f, r->speedup);
  fputs(", \"ratio\": ", f), json_num(f, r->ratio);
  fputs(", \"max_abs_err\": ", f), json_num(f, r->max_err);
  fprintf(f, ", \"wrong\": %ld, \"nrmse\": ", r->wrong), json_num(f, r->nrmse);
  fputs(", \"psnr\": ", f), json_num(f, r->psnr);
  fprintf(f, ", \"same_on_ranks\": %s, \"file\": ", r->same ? "true" : "false");
  if (cmp)
    fprintf(f, "\"%s.f32\"}", r->name);
  else
    fputs("null}", f);
}

static void json_meta(FILE* f, const ctx_t* c) {
  const input_t* in = &c->in;
  fputs("{\n  \"program\": \"image_stacking\",\n  \"data\": ", f), json_str(f, c->o.file);
  fputs(",\n  \"variable\": ", f), json_str(f, c->o.var);
  fputs(",\n  \"long_name\": ", f), json_str(f, in->long_name);
  fputs(",\n  \"units\": ", f), json_str(f, in->units);
  fputs(",\n  \"frame_axis\": ", f), json_str(f, in->frame_dim);
  fputs(",\n  \"frame_dims\": [", f);
  for (int d = 0; d < in->ndims; d++) fputs(d ? ", " : "", f), json_str(f, in->dims[d]);
  fputs("],\n  \"frame_shape\": [", f);
  for (int d = 0; d < in->ndims; d++) fprintf(f, "%s%zu", d ? ", " : "", in->shape[d]);
  fprintf(f, "],\n  \"dtype\": \"float32\", \"order\": \"C\", \"pixels\": %zu, \"masked_pixels\": %zu,\n", in->n,
          in->masked);
  fprintf(f,
          "  \"frames\": %ld, \"frames_in_file\": %ld, \"ranks\": %d, \"frames_per_rank\": \"[r*F/N, (r+1)*F/N)\",\n",
          in->F, in->in_file, c->N);
  fprintf(f, "  \"warmup\": %d, \"reps\": %d, \"where\": ", c->o.warmup, c->o.reps);
  const char* where = getenv("ZCCL_EXAMPLE_WHERE");
  if (where)
    json_str(f, where);
  else
    fputs("null", f);
  fputs(",\n  \"exact\": \"exact_sum.f32\", \"mask\": \"mask.u8\",\n  \"exact_range\": ", f);
  json_num(f, c->ref.crange[OP_SUM]);
  fputs(",\n  \"rows\": [\n", f);
  for (int k = 0; k < c->nrows; k++) json_row(f, c, &c->rows[k]), fputs(k + 1 < c->nrows ? ",\n" : "\n", f);
  fputs("  ]\n}\n", f);
}

static int mkdir_p(const char* dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return -1;
  for (char* p = path + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(path, 0777) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

static int write_file(const char* dir, const char* name, const void* data, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  int ok = f && fwrite(data, 1, bytes, f) == bytes;
  if (f && fclose(f)) ok = 0;
  if (!ok) fprintf(stderr, "image_stacking: cannot write %s: %s\n", path, strerror(errno));
  return ok ? 0 : -1;
}

/* A composite (result x scale) as float32, masked pixels 0. */
static int write_composite(const ctx_t* c, const char* name, const double* v64, const float* v32, double scale) {
  float* img = malloc(c->in.n * sizeof *img);
  for (size_t i = 0; i < c->in.n; i++) img[i] = c->in.mask[i] ? 0.0f : (float)((v64 ? v64[i] : (double)v32[i]) * scale);
  int rc = write_file(c->o.out, name, img, c->in.n * sizeof *img);
  free(img);
  return rc;
}

static int write_meta(const ctx_t* c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/meta.json", c->o.out);
  FILE* f = fopen(path, "w");
  if (!f) return fprintf(stderr, "image_stacking: cannot write %s: %s\n", path, strerror(errno)), -1;
  json_meta(f, c);
  return fclose(f) ? -1 : 0;
}

static int write_csv(const ctx_t* c) {
  FILE* f = fopen(c->o.csv, "w");
  if (!f) return fprintf(stderr, "image_stacking: cannot write %s: %s\n", c->o.csv, strerror(errno)), -1;
  fprintf(f,
          "name,method,op,codec,mode,eb,time_ms,speedup,ratio,max_abs_err,bound,bound_documented,wrong,nrmse,psnr,same_"
          "on_ranks\n");
  for (int k = 0; k < c->nrows; k++) {
    const row_t* r = &c->rows[k];
    int cmp = r->kind == KIND_COMPRESSED;
    fprintf(f, "%s,%s,%s,%s,%s,%g,%.6g,%.4g,%.4g,%.6g,%.6g,%.6g,%ld,%.6g,%.4g,%d\n", r->name,
            r->kind == KIND_MPI ? "mpi" : "zccl", op_name(r->op), cmp ? codec_name(r->codec) : "none",
            cmp ? (r->mode == zcclErrorAbs ? "abs" : "rel") : "none", cmp ? r->eb : 0.0, r->t_med * 1e3, r->speedup,
            r->ratio, r->max_err, r->max_tol, cmp ? r->bound * c->ref.scale[r->op] : 0.0, r->wrong, r->nrmse, r->psnr,
            r->same);
  }
  return fclose(f) ? -1 : 0;
}

/* ---- main ----------------------------------------------------------------- */

/* Each row's composite is written by rank 0 right after the row runs. */
static int write_row(const ctx_t* c, const row_t* r) {
  char name[96];
  if (!c->o.out || c->rank || r->kind != KIND_COMPRESSED) return 0;
  snprintf(name, sizeof name, "%s.f32", r->name);
  return write_composite(c, name, NULL, c->recv, c->ref.scale[r->op]);
}

static int run_rows(ctx_t* c) {
  double mpi_t[NUM_OPS] = {0, 0};
  int rc = 0;
  for (int k = 0; k < c->nrows; k++) {
    row_t* r = &c->rows[k];
    run_row(c, r);
    if (r->kind == KIND_MPI) mpi_t[r->op] = r->t_med;
    r->speedup = r->t_med > 0 ? mpi_t[r->op] / r->t_med : NAN;
    rc |= write_row(c, r);
  }
  return rc;
}

static int write_outputs(const ctx_t* c) {
  int rc = 0;
  if (c->rank) return 0;
  if (c->o.out) {
    rc |= write_composite(c, "exact_sum.f32", c->ref.want[OP_SUM], NULL, c->ref.scale[OP_SUM]);
    rc |= write_file(c->o.out, "mask.u8", c->in.mask, c->in.n);
    rc |= write_meta(c);
  }
  if (c->o.csv) rc |= write_csv(c);
  return rc;
}

/* 0 when every row is within its bound and zccl's outputs agree on all ranks. */
static int verdict(const ctx_t* c) {
  int bad = 0;
  for (int k = 0; k < c->nrows; k++) {
    const row_t* r = &c->rows[k];
    if (r->wrong || (r->kind != KIND_MPI && !r->same)) {
      bad = 1;
      if (c->rank == 0)
        fprintf(stderr, "image_stacking: FAILED %s: %ld elements over the bound%s\n", r->name, r->wrong,
                r->same ? "" : ", output differs between ranks");
    }
  }
  if (!bad && c->rank == 0) printf("every unmasked element of every row is within its bound\n");
  return bad;
}

static int init_zccl(ctx_t* c) {
  zcclUniqueId id;
  zcclResult_t r = zcclSuccess;
  if (c->rank == 0) r = zcclGetUniqueId(&id);
  MPI_Bcast(&r, sizeof r, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (r != zcclSuccess) die_zccl(c, "zcclGetUniqueId", r);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  r = zcclCommInitRank(&c->comm, c->N, id, c->rank);
  if (r != zcclSuccess) die_zccl(c, "zcclCommInitRank", r);
  return 0;
}

/* Input errors are agreed on, so that every rank exits 2 together. */
static int load(ctx_t* c) {
  char msg[MSG_LEN] = "";
  int bad = read_input(c, msg) ? c->rank : c->N, first;
  if (bad == c->N && c->rank == 0 && c->o.out && mkdir_p(c->o.out)) {
    snprintf(msg, sizeof msg, "cannot create --out %s: %s", c->o.out, strerror(errno));
    bad = 0;
  }
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first < c->N) {
    if (c->rank == first) fprintf(stderr, "image_stacking: %s\n", msg);
    return EXIT_BAD_INPUT;
  }
  finish_input(c);
  return 0;
}

static void release(ctx_t* c) {
  free(c->send), free(c->recv);
  free(c->in.input[OP_SUM]), free(c->in.input[OP_AVG]);
  free(c->in.mask), free(c->in.acc);
  free(c->ref.want[OP_SUM]); /* one block for all four */
}

int main(int argc, char** argv) {
  static ctx_t c;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.N);
  int rc = parse_args(&c.o, argc, argv, c.rank);
  if (!rc) rc = load(&c);
  if (rc) {
    release(&c);
    MPI_Finalize();
    return rc == EXIT_HELP ? 0 : rc;
  }
  exact_refs(&c);
  init_zccl(&c);
  c.send = malloc(c.in.n * sizeof(float));
  c.recv = malloc(c.in.n * sizeof(float));
  plan_rows(&c);
  int io = run_rows(&c);
  if (c.rank == 0) print_table(&c);
  io |= write_outputs(&c);
  rc = verdict(&c) || io ? 1 : 0;
  zcclCommDestroy(c.comm);
  release(&c);
  MPI_Finalize();
  return rc;
}
