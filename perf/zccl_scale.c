/*
 * zccl-scale: the library's cost model run at scale. It measures here the
 * host codec rates and the compression ratio the model needs (one core,
 * as the model assumes one core per rank), takes a GPU codec's rates from
 * --gpu-speeds, and predicts each collective's time at 4..1024 ranks on
 * 1..400 Gbit/s links: zccl compressed (the model's pick among the
 * compressed algorithms for the codec), zccl uncompressed (its pick among
 * the uncompressed ones) and OpenMPI's algorithms (the best of the
 * uncompressed descriptors OpenMPI's tuned component also has, on the same
 * alpha-beta link). No communicator, no network: zp_algo_t's cost functions
 * with a zp_link_t built here, as zccl-info --algos does.
 *
 *   zccl-scale [--data levitus_climatology.cdf:TEMP] [--json scale.json]
 *   zccl-scale --predict rows.json --gbps 1 --latency-us 50 --cpu-share 2
 *
 * --predict reads zccl-perf --json rows and prints, for every row, the
 * model's time for its method beside the measured one (docs/performance.md,
 * "Scale model").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zc_szp.h"
#include "zccl_data.h"
#include "zd_device.h"
#include "zp_algo.h"
#include "zu_param.h"
#include "zu_time.h"

/* ---- options ------------------------------------------------------------------- */
#define MAX_LIST 32

typedef struct {
  size_t min_bytes, max_bytes;
  double factor;
  int ranks[MAX_LIST], nranks_list;
  double gbps[MAX_LIST], latency_us[MAX_LIST];
  int ngbps, nlatency;
  double cpu_share;
  const char* codec;
  double eb_rel;
  const char* data_spec;
  int fill_zero, is_double;
  int colls[ZP_NUM_COLLS], ncolls;
  int kinds; /* 1: cpu rows, 2: gpu rows, 3: both */
  double gpu[4]; /* compress, decompress, hop, reduce: GB/s */
  int quick;
  size_t measure_bytes;
  const char* csv_path;
  const char* json_path;
  const char* predict_path;
  double fanout, incast; /* --predict: the calibrated factors (zp_link_t); 0: N-1 and 1 */
} opts_t;

/* The GPU codec's rates when --gpu-speeds does not give them, in GB/s of
 * raw values: zccl's own CUDA kernels (which write the host codec's
 * streams byte for byte) on levitus TEMP, float32, REL 1e-3, on an H200
 * (docs/measurements/cuda.md, "Kernel throughput"); cuSZp2's paper
 * (Huang et al., SC'24) reports faster compression and decompression on an
 * A100, which --gpu-speeds can take instead (docs/performance.md). The
 * uncompressed sum: two thirds of a device copy's rate on that GPU (a sum
 * moves three bytes per byte, a copy two). Assumptions, labelled as such
 * in every row. */
static const double gpu_default[4] = {230, 108, 69, 1350};

static void usage(FILE* out) {
  fprintf(out,
          "usage: zccl-scale [options]          predict collectives' times at scale\n"
          "       zccl-scale --predict ROWS.json [options]   the model beside zccl-perf's rows\n"
          "  -b SIZE, -e SIZE, -f FACTOR  sizes (default 128M..128M, x2; K/M/G suffixes): the\n"
          "              collective's largest buffer, as zccl-perf counts it (the N-block buffer\n"
          "              for allgather, reducescatter, gather, scatter, alltoall)\n"
          "  --ranks LIST      rank counts (default 4,8,16,32,64,128,256,512,1024)\n"
          "  --gbps LIST       link bandwidths in Gbit/s (default 1,10,100,400)\n"
          "  --latency-us LIST link latency per message in us, one for all links or one per\n"
          "              --gbps entry (default 20 up to 10 Gbit/s (TCP), 2 above (verbs))\n"
          "  --cpu-share S     ranks per core for the cpu rows (default 1; zp_link_t.cpu_share)\n"
          "  --colls LIST      collectives (default allreduce,broadcast,allgather,reducescatter,reduce;\n"
          "              also gather, scatter, alltoall)\n"
          "  --speeds cpu|gpu|both  codec rates: measured here (cpu), assumed (gpu; default both)\n"
          "  --gpu-speeds C,D,H[,R]  GPU compress, decompress, homomorphic hop [, uncompressed\n"
          "              sum] in GB/s of raw values (default 230,108,69,1350: zccl's CUDA kernels\n"
          "              on an H200, docs/measurements/cuda.md; a REL bound's range scan at R);\n"
          "              the cpu share does not apply\n"
          "  --codec NAME      codec measured and priced (default hz)\n"
          "  --eb-rel X        REL error bound (default 1e-3)\n"
          "  --data SPEC       file.f32, file.f64 or file.nc:VAR (default: a synthetic smooth field)\n"
          "  --fill keep|zero  keep fill values or set them to 0 (default zero, as zccl-perf)\n"
          "  -d float|double   value type (default float)\n"
          "  --measure-mib M   values measured per rate (default 32 MiB)\n"
          "  --quick           measure on 1 MiB, fewer repeats (a smoke test)\n"
          "  --csv FILE, --json FILE  write the rows\n"
          "  --predict ROWS.json  zccl-perf --json rows: each row's method as the model prices it\n"
          "              (the first --gbps and --latency-us; compressed rows with their own\n"
          "              measured ratio), the measured time and the relative error\n"
          "  --fanout F, --all-to-all F  with --predict: the link's fan-out and all-to-all\n"
          "              factors as the library calibrated them (its TUNING calibration line;\n"
          "              zp_link_t.fanout, .incast; default N-1 and 1)\n");
}

/* Comma-separated numbers into v (at most MAX_LIST); their count, -1: bad. */
static int parse_list(const char* s, double* v) {
  int n = 0;
  while (*s && n < MAX_LIST) {
    char* end;
    double x = strtod(s, &end);
    if (end == s || !(x > 0) || (*end && *end != ',')) return -1;
    v[n++] = x;
    s = *end ? end + 1 : end;
  }
  return *s ? -1 : n;
}

static size_t parse_size(const char* s) {
  int64_t v = 0;
  return zu_parse_size(s, &v) == 0 && v > 0 ? (size_t)v : 0;
}

/* The collectives by their zccl-perf names. */
static const struct {
  const char* name;
  zp_coll_id_t coll;
  int blocked; /* the size is N blocks, count per rank (zccl-perf's convention) */
} colls[] = {{"allreduce", ZP_COLL_ALLREDUCE, 0},    {"broadcast", ZP_COLL_BROADCAST, 0},
             {"allgather", ZP_COLL_ALLGATHER, 1},    {"reducescatter", ZP_COLL_REDUCESCATTER, 1},
             {"reduce", ZP_COLL_REDUCE, 0},          {"gather", ZP_COLL_GATHER, 1},
             {"scatter", ZP_COLL_SCATTER, 1},        {"alltoall", ZP_COLL_ALLTOALL, 1}};
#define NUM_COLLS ((int)(sizeof colls / sizeof colls[0]))

static int coll_by_name(const char* s, size_t len) {
  for (int c = 0; c < NUM_COLLS; c++)
    if (strlen(colls[c].name) == len && strncmp(s, colls[c].name, len) == 0) return c;
  return -1;
}

static int parse_args(int argc, char** argv, opts_t* o) {
  *o = (opts_t){.min_bytes = (size_t)128 << 20, .max_bytes = (size_t)128 << 20, .factor = 2, .cpu_share = 1,
                .codec = "hz", .eb_rel = 1e-3, .fill_zero = 1, .kinds = 3, .measure_bytes = (size_t)32 << 20};
  memcpy(o->gpu, gpu_default, sizeof o->gpu);
  const int ranks[] = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
  o->nranks_list = (int)(sizeof ranks / sizeof ranks[0]);
  memcpy(o->ranks, ranks, sizeof ranks);
  const double gbps[] = {1, 10, 100, 400};
  o->ngbps = 4;
  memcpy(o->gbps, gbps, sizeof gbps);
  for (int c = 0; c < 5; c++) o->colls[o->ncolls++] = c; /* the first five of colls[] */
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return 1;
    if (strcmp(a, "--quick") == 0) {
      o->quick = 1;
      continue;
    }
    const char* v = i + 1 < argc ? argv[++i] : NULL;
    if (v == NULL) return fprintf(stderr, "zccl-scale: %s needs a value\n", a), -1;
    double list[MAX_LIST];
    int n = 0;
    if (strcmp(a, "-b") == 0) o->min_bytes = parse_size(v);
    else if (strcmp(a, "-e") == 0) o->max_bytes = parse_size(v);
    else if (strcmp(a, "-f") == 0) o->factor = atof(v);
    else if (strcmp(a, "--ranks") == 0) {
      if ((n = parse_list(v, list)) <= 0) return fprintf(stderr, "zccl-scale: --ranks 4,8,...\n"), -1;
      for (int k = 0; k < n; k++) {
        if (list[k] < 2 || list[k] > 1 << 20 || list[k] != floor(list[k]))
          return fprintf(stderr, "zccl-scale: --ranks: whole numbers from 2\n"), -1;
        o->ranks[k] = (int)list[k];
      }
      o->nranks_list = n;
    } else if (strcmp(a, "--gbps") == 0) {
      if ((o->ngbps = parse_list(v, o->gbps)) <= 0) return fprintf(stderr, "zccl-scale: --gbps 1,10,...\n"), -1;
    } else if (strcmp(a, "--latency-us") == 0) {
      if ((o->nlatency = parse_list(v, o->latency_us)) <= 0)
        return fprintf(stderr, "zccl-scale: --latency-us 20 or a list\n"), -1;
    } else if (strcmp(a, "--cpu-share") == 0) {
      if (!((o->cpu_share = atof(v)) >= 1)) return fprintf(stderr, "zccl-scale: --cpu-share >= 1\n"), -1;
    } else if (strcmp(a, "--colls") == 0) {
      o->ncolls = 0;
      for (const char* p = v; *p;) {
        const char* e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int c = coll_by_name(p, len);
        if (c < 0 || o->ncolls == ZP_NUM_COLLS)
          return fprintf(stderr, "zccl-scale: --colls: allreduce, broadcast, allgather, reducescatter, reduce, "
                                 "gather, scatter, alltoall\n"), -1;
        o->colls[o->ncolls++] = c;
        p = e ? e + 1 : p + len;
      }
      if (o->ncolls == 0) return fprintf(stderr, "zccl-scale: --colls: none given\n"), -1;
    } else if (strcmp(a, "--speeds") == 0) {
      o->kinds = strcmp(v, "cpu") == 0 ? 1 : strcmp(v, "gpu") == 0 ? 2 : strcmp(v, "both") == 0 ? 3 : 0;
      if (!o->kinds) return fprintf(stderr, "zccl-scale: --speeds cpu|gpu|both\n"), -1;
    } else if (strcmp(a, "--gpu-speeds") == 0) {
      if ((n = parse_list(v, list)) < 3 || n > 4)
        return fprintf(stderr, "zccl-scale: --gpu-speeds C,D,H[,R] in GB/s\n"), -1;
      memcpy(o->gpu, list, (size_t)n * sizeof(double));
    } else if (strcmp(a, "--codec") == 0) o->codec = v;
    else if (strcmp(a, "--eb-rel") == 0) {
      if (!((o->eb_rel = atof(v)) > 0)) return fprintf(stderr, "zccl-scale: --eb-rel > 0\n"), -1;
    } else if (strcmp(a, "--data") == 0) o->data_spec = v;
    else if (strcmp(a, "--fill") == 0) o->fill_zero = strcmp(v, "keep") != 0;
    else if (strcmp(a, "-d") == 0) {
      if (strcmp(v, "float") == 0 || strcmp(v, "float32") == 0) o->is_double = 0;
      else if (strcmp(v, "double") == 0 || strcmp(v, "float64") == 0) o->is_double = 1;
      else return fprintf(stderr, "zccl-scale: -d float|double\n"), -1;
    } else if (strcmp(a, "--measure-mib") == 0) {
      o->measure_bytes = (size_t)(atof(v) * (1 << 20));
      if (o->measure_bytes < 4096) return fprintf(stderr, "zccl-scale: --measure-mib too small\n"), -1;
    } else if (strcmp(a, "--csv") == 0) o->csv_path = v;
    else if (strcmp(a, "--json") == 0) o->json_path = v;
    else if (strcmp(a, "--predict") == 0) o->predict_path = v;
    else if (strcmp(a, "--fanout") == 0) {
      if (!((o->fanout = atof(v)) >= 1)) return fprintf(stderr, "zccl-scale: --fanout >= 1\n"), -1;
    } else if (strcmp(a, "--all-to-all") == 0) {
      if (!((o->incast = atof(v)) >= 1)) return fprintf(stderr, "zccl-scale: --all-to-all >= 1\n"), -1;
    } else return fprintf(stderr, "zccl-scale: unknown option %s\n", a), -1;
  }
  if (o->min_bytes == 0 || o->max_bytes < o->min_bytes || !(o->factor > 1))
    return fprintf(stderr, "zccl-scale: need 0 < -b <= -e and -f > 1\n"), -1;
  if (o->nlatency > 1 && o->nlatency != o->ngbps)
    return fprintf(stderr, "zccl-scale: --latency-us: one value, or one per --gbps entry\n"), -1;
  if (o->quick) o->measure_bytes = (size_t)1 << 20;
  return 0;
}

/* A link's latency in seconds: the option's, else TCP's order up to 10
 * Gbit/s and verbs' above. */
static double link_alpha(const opts_t* o, int k) {
  if (o->nlatency) return o->latency_us[o->nlatency > 1 ? k : 0] * 1e-6;
  return (o->gbps[k] <= 10 ? 20 : 2) * 1e-6;
}

/* ---- codec rates, measured here ------------------------------------------------ */
/* A smooth synthetic field when no --data is given (zccl-perf's). */
static void synthetic_field(zccl_data_t* d, int is_double) {
  memset(d, 0, sizeof *d);
  d->count = 1 << 20;
  d->is_double = is_double;
  d->values = malloc(d->count * (is_double ? 8 : 4));
  for (size_t i = 0; d->values && i < d->count; i++) {
    double x = (double)i / 1024.0;
    double v = 10.0 * sin(x * 0.37) * cos(x * 0.011) + 0.5 * sin(x * 3.1);
    if (is_double) ((double*)d->values)[i] = v;
    else ((float*)d->values)[i] = (float)v;
  }
  snprintf(d->source, sizeof d->source, "synthetic smooth field");
}

typedef struct {
  zp_speeds_t s;   /* what the model takes */
  int has_hop;     /* the codec adds streams (else the hop figures are unused) */
  int has_fused;   /* hop_values measured (else 1/(1/C + 1/H)) */
  double eb_abs;
  int checksum;
  char source[1100];
} measured_t;

/* What is timed: the codec's operations, the uncompressed sum and the range scan. */
typedef enum { OP_ENCODE, OP_DECODE, OP_HOP, OP_HOP_VALUES, OP_REDUCE, OP_RANGE } op_t;
typedef struct {
  const zc_codec_info_t* ci;
  zc_params_t p;
  zd_dev_t* dev;
  void *x, *x2, *y, *s, *s2, *o;
  size_t n, cap, size, size2;
} bench_t;

static int run_op(bench_t* b, op_t op) {
  size_t got = 0, out = 0;
  switch (op) {
    case OP_ENCODE: return b->ci->ops->encode(&b->p, b->x, b->n, b->s, b->cap, &b->size) != zcclSuccess;
    case OP_DECODE: return b->ci->ops->decode(b->s, b->size, b->y, b->n, &got) != zcclSuccess || got != b->n;
    case OP_HOP:
      return b->ci->ops->reduce(zcclSum, b->s, b->size, b->s2, b->size2, b->o, b->cap, &out) != zcclSuccess;
    case OP_HOP_VALUES:
      return zc_hop_values(zcclSum, &b->p, b->x, b->n, b->s2, b->size2, b->o, b->cap, &out) != zcclSuccess;
    case OP_REDUCE:
      return zd_reduce(b->dev, b->y, b->x, b->x2, b->n, b->p.dtype, zcclSum) != zcclSuccess ||
             zd_sync(b->dev) != zcclSuccess;
    case OP_RANGE: {
      double lo = 0, hi = 0;
      zc_value_range(b->x, b->n, b->p.dtype, b->p.has_fill, b->p.fill, &lo, &hi, &got);
      return 0;
    }
  }
  return 1;
}

/* Bytes of raw values per second of each op, the fastest of reps rounds
 * that run every op in turn (as a collective alternates them: no op runs
 * with the caches and predictors the same op just left); the fastest
 * filters out another process's time slices best. 0: it failed. */
static void rates(bench_t* b, const op_t* ops, int nops, int reps, double* bps) {
  double best[8];
  for (int k = 0; k < nops; k++) best[k] = HUGE_VAL;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < nops; k++) {
      double t0 = zu_now();
      if (run_op(b, ops[k])) best[k] = -1;
      double t = zu_now() - t0;
      if (best[k] >= 0 && t < best[k]) best[k] = t;
    }
  double bytes = (double)(b->n * zu_dtype_size(b->p.dtype));
  for (int k = 0; k < nops; k++) bps[k] = best[k] > 0 ? bytes / best[k] : 0;
}

static int measure(const opts_t* o, measured_t* m) {
  memset(m, 0, sizeof *m);
  const zc_codec_info_t* ci = zc_codec_by_name(o->codec);
  if (!ci || !ci->ops || !ci->built || !(ci->caps & (ZC_CAP_LOSSY | ZC_CAP_LOSSLESS))) {
    fprintf(stderr, "zccl-scale: --codec %s: not a codec this build has (zccl-info --codecs)\n", o->codec);
    return -1;
  }
  zccl_data_t d;
  char err[512];
  if (o->data_spec) {
    if (zccl_data_load(o->data_spec, o->is_double, &d, err, sizeof err) != 0)
      return fprintf(stderr, "zccl-scale: %s\n", err), -1;
  } else {
    synthetic_field(&d, o->is_double);
    if (!d.values) return fprintf(stderr, "zccl-scale: out of memory\n"), -1;
  }
  if (o->fill_zero) zccl_data_replace_fill(&d, 0.0), d.has_fill = 0;
  snprintf(m->source, sizeof m->source, "%s", d.source);
  /* One core: the codec ops run on the calling thread; the host device's
   * sum is told to use one thread before it is made. */
  setenv("ZCCL_REDUCE_THREADS", "1", 1);
  zu_param_reload();
  bench_t b = {.ci = ci};
  zcclDataType_t dt = o->is_double ? zcclFloat64 : zcclFloat32;
  size_t es = zu_dtype_size(dt);
  b.n = o->measure_bytes / es;
  size_t vbytes = b.n * es;
  double lo = 0, hi = 0;
  size_t valid = 0;
  int rc = -1;
  if (zd_dev_create(ZD_HOST, &b.dev) != zcclSuccess) {
    fprintf(stderr, "zccl-scale: %s\n", zcclGetLastError(NULL));
    goto out_data;
  }
  b.x = malloc(vbytes), b.x2 = malloc(vbytes), b.y = malloc(vbytes);
  if (!b.x || !b.x2 || !b.y) goto oom;
  zccl_data_tile(&d, 0, b.x, b.n);
  zccl_data_tile(&d, d.count / 2, b.x2, b.n); /* another rank's part of the field */
  zc_value_range(b.x, b.n, dt, d.has_fill, d.fill, &lo, &hi, &valid);
  /* Chunk checksums as the collectives write them (ZCCL_CHECKSUM). */
  b.p = (zc_params_t){.dtype = dt, .eb = o->eb_rel * (hi > lo ? hi - lo : 1), .has_fill = d.has_fill,
                      .fill = d.fill, .checksum = zu_param_int_or_default(ZU_PARAM_CHECKSUM) != 0};
  m->checksum = b.p.checksum;
  m->eb_abs = b.p.eb;
  b.cap = ci->ops->bound(&b.p, b.n);
  b.s = malloc(b.cap), b.s2 = malloc(b.cap), b.o = malloc(b.cap);
  if (!b.s || !b.s2 || !b.o) goto oom;
  /* Page everything in before timing. */
  memset(b.y, 0, vbytes);
  memset(b.o, 0, b.cap);
  if (ci->ops->encode(&b.p, b.x2, b.n, b.s2, b.cap, &b.size2) != zcclSuccess) {
    fprintf(stderr, "zccl-scale: %s cannot encode this field: %s\n", ci->name, zcclGetLastError(NULL));
    goto out;
  }
  int reps = o->quick ? 3 : 7, nops = 0;
  op_t ops[6];
  double bps[6] = {0};
  ops[nops++] = OP_ENCODE, ops[nops++] = OP_DECODE, ops[nops++] = OP_REDUCE, ops[nops++] = OP_RANGE;
  m->has_hop = ci->ops->reduce != NULL;
  if (m->has_hop) ops[nops++] = OP_HOP;
  /* The fused step exists for zccl's own homomorphic stream (zc_hop_values). */
  m->has_fused = (ci->caps & ZC_CAP_HOMOMORPHIC) && (ci->caps & ZC_CAP_STREAM);
  if (m->has_fused) ops[nops++] = OP_HOP_VALUES;
  rates(&b, ops, nops, reps, bps);
  m->s.compress_bps = bps[0], m->s.decompress_bps = bps[1], m->s.reduce_bps = bps[2], m->s.range_bps = bps[3];
  if (m->has_hop) m->s.hop_bps = bps[4];
  if (m->has_fused) m->s.hop_values_bps = bps[5];
  m->s.ratio = b.size ? (double)vbytes / (double)b.size : 0;
  if (!(m->s.compress_bps > 0 && m->s.decompress_bps > 0 && m->s.reduce_bps > 0 && m->s.range_bps > 0 &&
        m->s.ratio > 0) ||
      (m->has_hop && !(m->s.hop_bps > 0)) || (m->has_fused && !(m->s.hop_values_bps > 0))) {
    fprintf(stderr, "zccl-scale: measuring %s failed: %s\n", ci->name, zcclGetLastError(NULL));
    goto out;
  }
  if (!m->has_hop) m->s.hop_bps = m->s.compress_bps; /* unused: no homomorphic algorithm takes this codec */
  if (!m->has_fused) m->s.hop_values_bps = 1 / (1 / m->s.compress_bps + 1 / m->s.hop_bps);
  rc = 0;
  goto out;
oom:
  fprintf(stderr, "zccl-scale: out of memory for %zu bytes\n", vbytes);
out:
  free(b.x), free(b.x2), free(b.y), free(b.s), free(b.s2), free(b.o);
  zd_dev_destroy(b.dev);
out_data:
  zccl_data_free(&d);
  return rc;
}

/* The GPU's rates (GB/s given), the ratio measured here: the streams are
 * the same bytes on either side. No fused step is assumed: a hop costs a
 * compression and a homomorphic sum. The range scan, like the sum, is one
 * pass over device memory: priced at the sum's rate. */
static zp_speeds_t gpu_speeds(const opts_t* o, double ratio) {
  zp_speeds_t s = {.compress_bps = o->gpu[0] * 1e9, .decompress_bps = o->gpu[1] * 1e9, .hop_bps = o->gpu[2] * 1e9,
                   .reduce_bps = o->gpu[3] * 1e9, .ratio = ratio};
  s.range_bps = s.reduce_bps;
  s.hop_values_bps = 1 / (1 / s.compress_bps + 1 / s.hop_bps);
  return s;
}

/* ---- the model -------------------------------------------------------------------- */
/* OpenMPI's tuned component chooses among ring, recursive doubling,
 * Rabenseifner, Bruck, binomial and pipelined (chain) trees, van de
 * Geijn's scatter-allgather and linear exchanges (its "basic linear"
 * broadcast is the root sending to every rank at once): zccl's
 * uncompressed descriptors of the same algorithms. Left out: the direct
 * allreduce and allgather (every rank to every rank in one round), which
 * OpenMPI's tuned component does not have. */
static int mpi_like(const zp_algo_t* al) {
  return al->needs == 0 && !(strcmp(al->name, "direct") == 0 && al->coll != ZP_COLL_BROADCAST);
}

/* The cheapest OpenMPI-like algorithm for the call (named: that one only);
 * no pool limit (OpenMPI allocates what it needs), only what the
 * algorithm needs of the count. NULL: none. */
static const zp_algo_t* mpi_best(const zp_ctx_t* ctx, const zp_coll_args_t* a, const char* name, double* t) {
  const zp_algo_t* best = NULL;
  for (size_t k = 0; k < zp_algo_count(); k++) {
    const zp_algo_t* al = zp_algo_at(k);
    if (al->coll != a->coll || !mpi_like(al) || (name && strcmp(al->name, name) != 0)) continue;
    if (al->usable && !al->usable(ctx, a, SIZE_MAX)) continue;
    double ti = al->cost(ctx, a);
    if (best == NULL || ti < *t) best = al, *t = ti;
  }
  return best;
}

/* The descriptor of that name for the call's codec (zcclCodecNone: the
 * uncompressed one), NULL: none. */
static const zp_algo_t* named_algo(const zp_coll_args_t* a, const char* name) {
  const zc_codec_info_t* ci = zc_codec_info(a->compression.codec);
  for (size_t k = 0; k < zp_algo_count(); k++) {
    const zp_algo_t* al = zp_algo_at(k);
    if (al->coll != a->coll || strcmp(al->name, name) != 0) continue;
    if (a->compression.codec == zcclCodecNone ? al->needs == 0 : ci && (al->needs & ci->caps)) return al;
  }
  return NULL;
}

typedef struct {
  const zp_algo_t *comp, *plain, *mpi;
  double t_comp, t_plain, t_mpi;
} predicted_t;

/* One call's three times; a kind the call has no algorithm for is NULL,
 * its time NaN. */
static void predict(const zp_ctx_t* ctx, const zp_coll_args_t* a, int codec, predicted_t* p) {
  memset(p, 0, sizeof *p);
  zp_coll_args_t c = *a;
  c.compression.codec = codec;
  if (!(p->comp = zp_algo_select(ctx, &c, NULL, &p->t_comp, NULL))) p->t_comp = NAN;
  c.compression.codec = zcclCodecNone;
  if (!(p->plain = zp_algo_select(ctx, &c, NULL, &p->t_plain, NULL))) p->t_plain = NAN;
  if (!(p->mpi = mpi_best(ctx, &c, NULL, &p->t_mpi))) p->t_mpi = NAN;
}

static zp_coll_args_t call_args(int c, size_t bytes, int N, int is_double) {
  zcclDataType_t dt = is_double ? zcclFloat64 : zcclFloat32;
  size_t count = bytes / zu_dtype_size(dt);
  if (colls[c].blocked) count /= (size_t)N;
  zp_coll_args_t a = {.coll = colls[c].coll, .count = count, .datatype = dt, .op = zcclSum, .nranks = N};
  a.compression.mode = zcclErrorRel;
  return a;
}

/* ---- the scale table ----------------------------------------------------------------- */
static void print_speeds(const char* what, const zp_speeds_t* s, const char* note) {
  printf("# %-15s compress %7.2f  decompress %7.2f  hop %7.2f  fused hop %7.2f  sum %7.2f  range %7.2f GB/s; "
         "ratio %.2f%s\n",
         what, s->compress_bps / 1e9, s->decompress_bps / 1e9, s->hop_bps / 1e9, s->hop_values_bps / 1e9,
         s->reduce_bps / 1e9, s->range_bps / 1e9, s->ratio, note);
}

/* v with fmt, or `none` (JSON null, an empty CSV field) where it is NaN. */
static const char* num(char* buf, size_t len, const char* fmt, double v, const char* none) {
  if (isfinite(v)) snprintf(buf, len, fmt, v);
  else snprintf(buf, len, "%s", none);
  return buf;
}
#define NAME(al) ((al) ? (al)->name : "-")

static int scale_table(const opts_t* o, const measured_t* m, zd_dev_t* dev) {
  const zc_codec_info_t* ci = zc_codec_by_name(o->codec);
  FILE *csv = NULL, *json = NULL;
  if (o->csv_path && !(csv = fopen(o->csv_path, "w")))
    return fprintf(stderr, "zccl-scale: cannot write %s\n", o->csv_path), 1;
  if (o->json_path && !(json = fopen(o->json_path, "w"))) {
    if (csv) fclose(csv);
    return fprintf(stderr, "zccl-scale: cannot write %s\n", o->json_path), 1;
  }
  zp_speeds_t kinds[2] = {m->s, gpu_speeds(o, m->s.ratio)};
  const char* kind_names[2] = {"cpu", "gpu (assumed)"};
  if (csv)
    fprintf(csv, "collective,bytes,nranks,gbps,latency_us,speeds,compress_gbs,decompress_gbs,hop_gbs,reduce_gbs,ratio,"
                 "compressed_algo,compressed_us,uncompressed_algo,uncompressed_us,mpi_algo,mpi_us,"
                 "speedup_uncompressed,speedup_mpi\n");
  if (json) {
    fprintf(json, "{\"codec\": \"%s\", \"eb_rel\": %g, \"data\": \"%s\", \"cpu_share\": %g, \"speeds\": [", ci->name,
            o->eb_rel, m->source, o->cpu_share);
    for (int k = 0; k < 2; k++)
      fprintf(json, "%s\n  {\"speeds\": \"%s\", \"compress_gbs\": %.4f, \"decompress_gbs\": %.4f, \"hop_gbs\": %.4f, "
                    "\"hop_values_gbs\": %.4f, \"reduce_gbs\": %.4f, \"range_gbs\": %.4f, \"ratio\": %.4f}",
              k ? "," : "", kind_names[k], kinds[k].compress_bps / 1e9, kinds[k].decompress_bps / 1e9,
              kinds[k].hop_bps / 1e9, kinds[k].hop_values_bps / 1e9, kinds[k].reduce_bps / 1e9,
              kinds[k].range_bps / 1e9, kinds[k].ratio);
    fprintf(json, "],\n\"rows\": [");
  }
  printf("# %-13s %10s %5s %5s %-13s %-18s %11s %-18s %11s %-18s %11s %7s %7s\n", "collective", "bytes", "ranks",
         "gbps", "speeds", "compressed", "time(us)", "uncompressed", "time(us)", "mpi best", "time(us)", "x unc",
         "x mpi");
  int rows = 0;
  for (int ic = 0; ic < o->ncolls; ic++) {
    int c = o->colls[ic];
    for (double bytes = (double)o->min_bytes; bytes <= (double)o->max_bytes; bytes *= o->factor)
      for (int ir = 0; ir < o->nranks_list; ir++)
        for (int il = 0; il < o->ngbps; il++)
          for (int k = 0; k < 2; k++) {
            if (!(o->kinds & (1 << k))) continue;
            int N = o->ranks[ir];
            zp_coll_args_t a = call_args(c, (size_t)bytes, N, o->is_double);
            if (a.count == 0) continue; /* fewer values than ranks */
            /* A network: the root's link carries a fan-out's N-1 copies;
             * incast is not modelled. The GPU's codec shares no core
             * (zp_codec_rate). */
            zp_link_t link = {.alpha = link_alpha(o, il), .bandwidth = o->gbps[il] * 1e9 / 8, .fanout = N - 1,
                              .incast = 1, .cpu_share = k ? 1 : o->cpu_share, .speeds = kinds[k]};
            zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = N};
            predicted_t p;
            predict(&ctx, &a, ci->id, &p);
            /* Speedups: NaN where either side has no algorithm. */
            double su = p.t_plain / p.t_comp, sm = p.t_mpi / p.t_comp;
            printf("  %-13s %10.0f %5d %5g %-13s %-18s %11.1f %-18s %11.1f %-18s %11.1f %7.2f %7.2f\n",
                   colls[c].name, bytes, N, o->gbps[il], kind_names[k], NAME(p.comp), p.t_comp * 1e6,
                   NAME(p.plain), p.t_plain * 1e6, NAME(p.mpi), p.t_mpi * 1e6, su, sm);
            char f[5][32];
            const char* none = csv ? "" : "null";
            if (csv)
              fprintf(csv, "%s,%.0f,%d,%g,%g,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%s,%s,%s,%s,%s,%s,%s,%s\n", colls[c].name,
                      bytes, N, o->gbps[il], link.alpha * 1e6, kind_names[k], kinds[k].compress_bps / 1e9,
                      kinds[k].decompress_bps / 1e9, kinds[k].hop_bps / 1e9, kinds[k].reduce_bps / 1e9,
                      kinds[k].ratio, NAME(p.comp), num(f[0], 32, "%.3f", p.t_comp * 1e6, none), NAME(p.plain),
                      num(f[1], 32, "%.3f", p.t_plain * 1e6, none), NAME(p.mpi),
                      num(f[2], 32, "%.3f", p.t_mpi * 1e6, none), num(f[3], 32, "%.4f", su, none),
                      num(f[4], 32, "%.4f", sm, none));
            none = "null";
            if (json)
              fprintf(json,
                      "%s\n  {\"collective\": \"%s\", \"bytes\": %.0f, \"nranks\": %d, \"gbps\": %g, "
                      "\"latency_us\": %g, \"speeds\": \"%s\", \"compressed_algo\": \"%s\", \"compressed_desc\": "
                      "\"%s\", \"compressed_us\": %s, \"uncompressed_algo\": \"%s\", \"uncompressed_us\": %s, "
                      "\"mpi_algo\": \"%s\", \"mpi_us\": %s, \"speedup_uncompressed\": %s, \"speedup_mpi\": %s}",
                      rows ? "," : "", colls[c].name, bytes, N, o->gbps[il], link.alpha * 1e6, kind_names[k],
                      NAME(p.comp), p.comp ? p.comp->desc : "-", num(f[0], 32, "%.3f", p.t_comp * 1e6, none),
                      NAME(p.plain), num(f[1], 32, "%.3f", p.t_plain * 1e6, none), NAME(p.mpi),
                      num(f[2], 32, "%.3f", p.t_mpi * 1e6, none), num(f[3], 32, "%.4f", su, none),
                      num(f[4], 32, "%.4f", sm, none));
            rows++;
          }
  }
  if (json) fprintf(json, "\n]}\n");
  int bad = (csv && fclose(csv) != 0) | (json && fclose(json) != 0);
  if (bad) fprintf(stderr, "zccl-scale: writing the output files failed\n");
  return bad;
}

/* ---- --predict: zccl-perf's rows beside the model ------------------------------------- */
/* zccl-perf --json writes an array of flat objects whose values are
 * strings without escapes, numbers or null; this reads that much JSON. */
typedef struct {
  char collective[32], method[32], codec[16], algo[32], type[16];
  double bytes, nranks, time_us, ratio;
} perf_row_t;

static const char* skip_ws(const char* s) {
  while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t') s++;
  return s;
}

/* A string at s (after its quote) into buf; the text after it, NULL: bad. */
static const char* read_string(const char* s, char* buf, size_t len) {
  size_t n = 0;
  for (; *s && *s != '"'; s++) {
    if (*s == '\\' && s[1]) s++;
    if (n + 1 < len) buf[n++] = *s;
  }
  buf[n] = 0;
  return *s == '"' ? s + 1 : NULL;
}

/* One object at s (after its brace) into r; the text after it, NULL: bad. */
static const char* read_row(const char* s, perf_row_t* r) {
  memset(r, 0, sizeof *r);
  r->ratio = 1;
  for (;;) {
    s = skip_ws(s);
    if (*s == '}') return s + 1;
    char key[64], sval[64] = "";
    double num = NAN;
    if (*s != '"' || !(s = read_string(s + 1, key, sizeof key))) return NULL;
    s = skip_ws(s);
    if (*s != ':') return NULL;
    s = skip_ws(s + 1);
    if (*s == '"') {
      if (!(s = read_string(s + 1, sval, sizeof sval))) return NULL;
    } else if (strncmp(s, "null", 4) == 0) s += 4;
    else {
      char* end;
      num = strtod(s, &end);
      if (end == s) return NULL;
      s = end;
    }
    if (strcmp(key, "collective") == 0) snprintf(r->collective, sizeof r->collective, "%s", sval);
    else if (strcmp(key, "method") == 0) snprintf(r->method, sizeof r->method, "%s", sval);
    else if (strcmp(key, "codec") == 0) snprintf(r->codec, sizeof r->codec, "%s", sval);
    else if (strcmp(key, "algo") == 0) snprintf(r->algo, sizeof r->algo, "%s", sval);
    else if (strcmp(key, "type") == 0) snprintf(r->type, sizeof r->type, "%s", sval);
    else if (strcmp(key, "bytes") == 0) r->bytes = num;
    else if (strcmp(key, "nranks") == 0) r->nranks = num;
    else if (strcmp(key, "time_us") == 0) r->time_us = num;
    else if (strcmp(key, "ratio") == 0) r->ratio = num;
    s = skip_ws(s);
    if (*s == ',') s++;
    else if (*s != '}') return NULL;
  }
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char* buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) {
      char* bigger = realloc(buf, cap *= 2);
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

/* The model's time for one zccl-perf row, as the library would run it:
 * mpi: the best OpenMPI-like algorithm ("default") or the one named;
 * zccl: the cost model's pick ("auto") or the named algorithm;
 * zccl-compressed: the same among the codec's algorithms as the library
 * chose them (its default codec figures), priced with the row's measured
 * ratio, uncompressed below the default threshold, and codec=auto taking
 * the cheaper of compressed and not as the library saw them. Returns NULL
 * when the model has no algorithm for the row. */
static const zp_algo_t* predict_row(const zp_ctx_t* ctx, const perf_row_t* r, int c, double* t) {
  zp_coll_args_t a = call_args(c, (size_t)r->bytes, ctx->nranks, strcmp(r->type, "double") == 0);
  const char* name = strcmp(r->algo, "auto") == 0 || strcmp(r->algo, "default") == 0 ? NULL : r->algo;
  if (strcmp(r->method, "mpi") == 0) return mpi_best(ctx, &a, name, t);
  const zc_codec_info_t* ci = zc_codec_by_name(r->codec);
  zcclCompression_t dflt = ZCCL_COMPRESSION_INITIALIZER;
  int compress = strcmp(r->method, "zccl-compressed") == 0 && ci && ci->id != zcclCodecNone &&
                 a.count * zu_dtype_size(a.datatype) >= dflt.minBytes;
  if (compress) {
    /* The library chose before any stream was made: on the link it
     * measured and the model's default codec figures (a communicator
     * leaves zp_speeds_t at 0). That choice is priced with the figures
     * measured here and the row's ratio. */
    zp_link_t lib_link = *ctx->link;
    memset(&lib_link.speeds, 0, sizeof lib_link.speeds);
    zp_ctx_t lib = *ctx;
    lib.link = &lib_link;
    zp_coll_args_t cmp = a;
    cmp.compression.codec = ci->id; /* auto's row prices hz's algorithms */
    double t_lib = 0, tp_lib = 0;
    const zp_algo_t* al = name ? named_algo(&cmp, name) : zp_algo_select(&lib, &cmp, NULL, &t_lib, NULL);
    if (al && name) t_lib = al->cost(&lib, &cmp);
    if (al) *t = al->cost(ctx, &cmp);
    if (al && ci->id != zcclCodecAuto) return al;
    const zp_algo_t* plain = zp_algo_select(&lib, &a, NULL, &tp_lib, NULL);
    if (!al || (plain && tp_lib < t_lib)) return *t = plain ? plain->cost(ctx, &a) : 0, plain;
    return al;
  }
  if (name) {
    const zp_algo_t* al = named_algo(&a, name);
    if (al) *t = al->cost(ctx, &a);
    return al;
  }
  return zp_algo_select(ctx, &a, NULL, t, NULL);
}

static int predict_file(const opts_t* o, const measured_t* m, zd_dev_t* dev) {
  char* text = read_file(o->predict_path);
  if (!text) return fprintf(stderr, "zccl-scale: cannot read %s\n", o->predict_path), 2;
  const char* s = skip_ws(text);
  if (*s != '[') {
    free(text);
    return fprintf(stderr, "zccl-scale: %s: not a JSON array of zccl-perf rows\n", o->predict_path), 2;
  }
  FILE* csv = o->csv_path ? fopen(o->csv_path, "w") : NULL;
  if (o->csv_path && !csv) {
    free(text);
    return fprintf(stderr, "zccl-scale: cannot write %s\n", o->csv_path), 1;
  }
  if (csv) fprintf(csv, "collective,method,codec,algo,bytes,nranks,model_algo,model_us,measured_us,rel_err\n");
  printf("# link %g Gbit/s, %g us; cpu share %g; host codec rates measured here, each compressed row with its own "
         "ratio\n",
         o->gbps[0], link_alpha(o, 0) * 1e6, o->cpu_share);
  printf("# %-13s %-16s %-5s %-10s %10s %5s %-18s %11s %11s %8s\n", "collective", "method", "codec", "algo", "bytes",
         "ranks", "model algo", "model(us)", "measured", "error");
  double worst = 0, sum_abs = 0;
  int n = 0, skipped = 0, bad = 0;
  s = skip_ws(s + 1);
  while (*s == '{') {
    perf_row_t r;
    if (!(s = read_row(s + 1, &r))) {
      bad = 1;
      break;
    }
    s = skip_ws(s);
    if (*s == ',') s = skip_ws(s + 1);
    int c = coll_by_name(r.collective, strlen(r.collective));
    if (c < 0 || !(r.nranks >= 2) || !(r.time_us > 0) || !(r.bytes > 0)) {
      skipped++; /* point to point, one rank, or not measured */
      continue;
    }
    double most = r.nranks - 1; /* both factors are at most N-1 (zp_calibrate) */
    zp_link_t link = {.alpha = link_alpha(o, 0), .bandwidth = o->gbps[0] * 1e9 / 8,
                      .fanout = o->fanout > 0 && o->fanout < most ? o->fanout : most,
                      .incast = o->incast > 0 ? (o->incast < most ? o->incast : most) : 1,
                      .cpu_share = o->cpu_share, .speeds = m->s};
    if (strcmp(r.method, "zccl-compressed") == 0 && r.ratio > 0) link.speeds.ratio = r.ratio;
    zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = (int)r.nranks};
    double t = 0;
    const zp_algo_t* al = predict_row(&ctx, &r, c, &t);
    if (!al) {
      printf("  %-13s %-16s %-5s %-10s %10.0f %5.0f %-18s\n", r.collective, r.method, r.codec, r.algo, r.bytes,
             r.nranks, "(no such algorithm)");
      skipped++;
      continue;
    }
    double err = (t * 1e6 - r.time_us) / r.time_us;
    if (fabs(err) > fabs(worst)) worst = err;
    sum_abs += fabs(err);
    n++;
    printf("  %-13s %-16s %-5s %-10s %10.0f %5.0f %-18s %11.1f %11.1f %+7.1f%%\n", r.collective, r.method, r.codec,
           r.algo, r.bytes, r.nranks, al->name, t * 1e6, r.time_us, err * 100);
    if (csv)
      fprintf(csv, "%s,%s,%s,%s,%.0f,%.0f,%s,%.3f,%.3f,%.5f\n", r.collective, r.method, r.codec, r.algo, r.bytes,
              r.nranks, al->name, t * 1e6, r.time_us, err);
  }
  free(text);
  if (csv) fclose(csv);
  if (bad || (*s != ']')) return fprintf(stderr, "zccl-scale: %s: malformed JSON\n", o->predict_path), 2;
  if (n == 0) return fprintf(stderr, "zccl-scale: %s: no collective rows to predict\n", o->predict_path), 1;
  printf("# %d rows (%d skipped): worst error %+.1f%%, mean |error| %.1f%%\n", n, skipped, worst * 100,
         sum_abs / n * 100);
  return 0;
}

int main(int argc, char** argv) {
  opts_t o;
  int pr = parse_args(argc, argv, &o);
  if (pr) {
    usage(pr > 0 ? stdout : stderr);
    return pr > 0 ? 0 : 2;
  }
  measured_t m;
  if (measure(&o, &m) != 0) return 1;
  printf("# %s, %s, REL %g (eb %.4g), %s values, %zu MiB measured, one core, chunk checksums %s\n", m.source,
         o.codec, o.eb_rel, m.eb_abs, o.is_double ? "double" : "float", o.measure_bytes >> 20,
         m.checksum ? "on" : "off");
  print_speeds("cpu (measured)", &m.s, m.has_fused ? "" : " (no fused hop: compress + hop)");
  if (!o.predict_path && (o.kinds & 2)) {
    zp_speeds_t g = gpu_speeds(&o, m.s.ratio);
    print_speeds("gpu (assumed)", &g, " (ratio as measured; fused hop = compress + hop)");
  }
  zd_dev_t* dev = NULL;
  if (zd_dev_create(ZD_HOST, &dev) != zcclSuccess) return fprintf(stderr, "zccl-scale: no host device\n"), 1;
  int rc = o.predict_path ? predict_file(&o, &m, dev) : scale_table(&o, &m, dev);
  zd_dev_destroy(dev);
  return rc;
}
