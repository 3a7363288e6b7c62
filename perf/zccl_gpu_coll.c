/* zccl-gpu-coll: collectives on CUDA device buffers, timed beside the same
 * calls on host buffers in the same run, uncompressed and compressed, by
 * ranks that are processes of this program on one GPU (forked before any
 * CUDA call, met through the unique-id bootstrap: no launcher needed on a
 * GPU machine). A device row's time is the call plus cudaStreamSynchronize
 * of its stream (what a program that reads the result waits for), the
 * median of --reps after a warm-up, the slowest rank's; busbw uses
 * nccl-tests' factors. Every row is checked on every element: data movement
 * exactly and reductions within the float rounding of the reduction order
 * when uncompressed; compressed within the bound (eb for moved data, N x eb
 * for sums; REL eb is of the range of every rank's input).
 * With --memory ...,nccl the same uncompressed calls on device buffers go
 * through NCCL too (loaded at run time, nccl_baseline.h; ranks sharing the GPU
 * each claim a host, so NCCL moves the bytes through its socket transport),
 * and device rows show their time over NCCL's.
 *   zccl-gpu-coll [--ranks N] [--colls LIST] [-b SIZE] [-e SIZE] [-f F]
 *                 [--reps R] [--data SPEC] [--compression SPEC]
 *                 [--memory device,host,nccl] [--json FILE] [--timeout S]
 * LIST: allreduce,allgather,broadcast,reducescatter,scatter,alltoall (default
 * all; scatter and broadcast from rank 0); SIZE as
 * zccl-perf's (the largest buffer, K/M suffixes; default 1M .. 64M, x4);
 * SPEC: the field (default levitus_climatology.cdf:TEMP, fill points set to
 * 0), rank r's input tiled from r sevenths in; compression as
 * ZCCL_COMPRESSION (default codec=hz,mode=rel,eb=1e-3). Without a usable GPU
 * (or a CUDA build) the device rows are skipped, and the run exits 77 when
 * nothing else was asked; 1 when a check fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_baseline.h"
#include "perf_util.h"
#include "zccl.h"
#include "zccl_data.h"
#include "zccl_fork.h"
#include "zd_device.h"
#include "zu_time.h"

#ifdef ZCCL_PERF_CUDA
#include <cuda_runtime_api.h>
#endif

/* Numbered as nccl_baseline_coll numbers them. */
enum {
  C_ALLREDUCE = NCCL_BASELINE_ALLREDUCE,
  C_ALLGATHER = NCCL_BASELINE_ALLGATHER,
  C_BROADCAST = NCCL_BASELINE_BROADCAST,
  C_REDUCESCATTER = NCCL_BASELINE_REDUCESCATTER,
  C_SCATTER = NCCL_BASELINE_SCATTER,
  C_ALLTOALL = NCCL_BASELINE_ALLTOALL,
  NCOLLS
};
static const char* coll_names[NCOLLS] = {"allreduce", "allgather", "broadcast", "reducescatter", "scatter",
                                         "alltoall"};

typedef struct {
  int nranks, colls[NCOLLS], reps, mem_dev, mem_host, mem_nccl, timeout;
  size_t b, e;
  double f;
  const char *data, *compression, *json;
} opts_t;

static opts_t o = {.nranks = 2, .colls = {1, 1, 1, 1, 1, 1}, .reps = 10, .mem_dev = 1, .mem_host = 1, .timeout = 600,
                   .b = 1 << 20, .e = 64 << 20, .f = 4, .data = "levitus_climatology.cdf:TEMP",
                   .compression = "codec=hz,mode=rel,eb=1e-3"};
static int rank;
static zcclComm_t comm;
static zcclCompression_t zc = ZCCL_COMPRESSION_INITIALIZER; /* --compression, parsed in main */
static void* ncomm;                                            /* NCCL's communicator, when its rows run */
enum { MAX_REPS = 256 };

#define FAIL(...) (fprintf(stderr, "zccl-gpu-coll: rank %d: ", rank), fprintf(stderr, __VA_ARGS__), \
                   fprintf(stderr, "\n"), exit(1))
#define ZR(call)                                                                      \
  do {                                                                                \
    if ((call) != zcclSuccess) FAIL("%s: %s", #call, zcclGetLastError(NULL));          \
  } while (0)
#ifdef ZCCL_PERF_CUDA
#define CU(call)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) FAIL("%s: %s", #call, cudaGetErrorString(e_));               \
  } while (0)
#endif

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'k' || *end == 'K') v *= 1024;
  else if (*end == 'm' || *end == 'M') v *= 1 << 20;
  else if (*end == 'g' || *end == 'G') v *= 1 << 30;
  else if (*end) return 0;
  return v >= 1 ? (size_t)v : 0;
}

/* Elements of the call's input and output, and of one rank's block. */
static void shape(int c, size_t bytes, size_t* in_n, size_t* out_n, size_t* blk) {
  size_t n = bytes / sizeof(float), N = (size_t)o.nranks;
  *blk = c == C_ALLREDUCE || c == C_BROADCAST ? n : n / N;
  *in_n = c == C_ALLGATHER ? *blk : c == C_ALLREDUCE || c == C_BROADCAST ? n : *blk * N;
  *out_n = c == C_ALLGATHER || c == C_ALLTOALL ? *blk * N : *blk;
}

static zcclResult_t issue(int c, const float* in, float* out, size_t blk, zcclStream_t st) {
  switch (c) {
    case C_ALLREDUCE: return zcclAllReduce(in, out, blk, zcclFloat32, zcclSum, comm, st);
    case C_ALLGATHER: return zcclAllGather(in, out, blk, zcclFloat32, comm, st);
    case C_BROADCAST: return zcclBroadcast(in, out, blk, zcclFloat32, 0, comm, st);
    case C_SCATTER: return zcclScatter(in, out, blk, zcclFloat32, 0, comm, st);
    case C_ALLTOALL: return zcclAlltoAll(in, out, blk, zcclFloat32, comm, st);
    default: return zcclReduceScatter(in, out, blk, zcclFloat32, zcclSum, comm, st);
  }
}

/* The slowest rank's value (or the sum), through the communicator. */
static double across(double v, zcclRedOp_t op) {
  double r = 0;
  ZR(zcclAllReduce(&v, &r, 1, zcclFloat64, op, comm, NULL));
  return r;
}

enum { M_HOST, M_DEVICE, M_NCCL }; /* a row's memory: NCCL's rows are on device buffers */
static const char* mem_names[3] = {"host", "device", "nccl"};

typedef struct {
  int coll, compressed, device; /* device: M_* */
  size_t bytes;
  double time_us, busbw, max_err_over_bound;
  long wrong;
} row_t;

/* Rank r's input: the field tiled from r sevenths in. */
static void input_of(const zccl_data_t* d, int r, float* dst, size_t n) {
  zccl_data_tile(d, (d->count / 7) * (size_t)r, dst, n);
}

/* Wrong elements of out against the inputs of every rank (ins[r]). */
static long check(int c, float* const* ins, const float* out, size_t blk, int compressed, double eb_abs,
                  double* worst) {
  long wrong = 0;
  size_t out_n = c == C_ALLGATHER || c == C_ALLTOALL ? blk * (size_t)o.nranks : blk;
  *worst = 0;
  for (size_t i = 0; i < out_n; i++) {
    double ref = 0, mag = 0, bound;
    if (c == C_ALLREDUCE || c == C_REDUCESCATTER) {
      size_t at = c == C_REDUCESCATTER ? (size_t)rank * blk + i : i;
      for (int r = 0; r < o.nranks; r++) ref += ins[r][at], mag += fabs(ins[r][at]);
      bound = (compressed ? o.nranks * eb_abs : 0) + 1e-6 * mag + 1e-30;
    } else {
      ref = c == C_ALLGATHER  ? ins[i / blk][i % blk]
            : c == C_SCATTER  ? ins[0][(size_t)rank * blk + i]
            : c == C_ALLTOALL ? ins[i / blk][(size_t)rank * blk + i % blk]
                              : ins[0][i];
      bound = compressed ? eb_abs * (1 + 1e-6) : 0;
    }
    double err = fabs((double)out[i] - ref);
    if (!(err <= bound)) wrong++;
    if (bound > 0 && err / bound > *worst) *worst = err / bound;
  }
  return wrong;
}

enum { MAX_ROWS = 1024 };

static void run_rows(const zccl_data_t* d, int have_gpu, row_t* rows, int* nrows) {
  size_t N = (size_t)o.nranks;
  for (size_t bytes = o.b; bytes <= o.e; bytes = (size_t)((double)bytes * o.f)) {
    for (int c = 0; c < NCOLLS; c++) {
      if (!o.colls[c]) continue;
      size_t in_n, out_n, blk;
      shape(c, bytes, &in_n, &out_n, &blk);
      if (blk == 0) continue;
      float* ins[8];
      double lo = INFINITY, hi = -INFINITY;
      for (size_t r = 0; r < N; r++) {
        ins[r] = malloc(in_n * sizeof(float));
        input_of(d, (int)r, ins[r], in_n);
        for (size_t i = 0; i < in_n; i++) lo = fmin(lo, ins[r][i]), hi = fmax(hi, ins[r][i]);
      }
      float* hout = malloc(out_n * sizeof(float));
      for (int compressed = 0; compressed < 2; compressed++) {
        zcclCompression_t none = ZCCL_COMPRESSION_INITIALIZER;
        ZR(zcclCommSetCompression(comm, compressed ? &zc : &none));
        double eb_abs = zc.mode == zcclErrorRel ? zc.eb * (hi - lo) : zc.eb;
        static const int order[3] = {M_NCCL, M_DEVICE, M_HOST};
        for (int m = 0; m < 3; m++) {
          const int device = order[m];
          if (device == M_NCCL ? compressed || ncomm == NULL
              : device == M_DEVICE ? !(o.mem_dev && have_gpu)
                                   : !o.mem_host)
            continue;
          const float* in = ins[rank];
          float* out = hout;
          zcclStream_t st = NULL;
#ifdef ZCCL_PERF_CUDA
          float *din = NULL, *dout = NULL;
          if (device) {
            CU(cudaStreamCreateWithFlags((cudaStream_t*)&st, cudaStreamNonBlocking));
            CU(cudaMalloc((void**)&din, in_n * sizeof(float)));
            CU(cudaMalloc((void**)&dout, out_n * sizeof(float)));
            CU(cudaMemcpy(din, ins[rank], in_n * sizeof(float), cudaMemcpyHostToDevice));
            in = din, out = dout;
          }
#endif
          memset(hout, 0, out_n * sizeof(float));
          double t[MAX_REPS];
          int reps = o.reps;
          for (int k = -2; k < reps; k++) { /* two untimed first */
            across(0, zcclSum);             /* start together */
            double t0 = zu_now();
            if (device == M_NCCL) {
              char err[256];
              if (nccl_baseline_coll(ncomm, c, o.nranks, rank, in, out, blk, st, err, sizeof err)) FAIL("%s", err);
            } else {
              ZR(issue(c, in, out, blk, st));
            }
#ifdef ZCCL_PERF_CUDA
            if (device) CU(cudaStreamSynchronize((cudaStream_t)st));
#endif
            if (k >= 0) t[k] = zu_now() - t0;
          }
#ifdef ZCCL_PERF_CUDA
          if (device) {
            CU(cudaMemcpy(hout, dout, out_n * sizeof(float), cudaMemcpyDeviceToHost));
            CU(cudaFree(din));
            CU(cudaFree(dout));
            CU(cudaStreamDestroy((cudaStream_t)st));
          }
#endif
          zcclResult_t async = zcclSuccess;
          ZR(zcclCommGetAsyncError(comm, &async));
          if (async != zcclSuccess) FAIL("%s: asynchronous error %d: %s", coll_names[c], (int)async, zcclGetLastError(comm));
          qsort(t, (size_t)reps, sizeof *t, perf_cmp_double);
          double worst;
          long wrong = check(c, ins, hout, blk, compressed, eb_abs, &worst);
          if (*nrows == MAX_ROWS) FAIL("more than %d rows: fewer sizes or collectives", MAX_ROWS);
          row_t* w = &rows[(*nrows)++];
          *w = (row_t){.coll = c, .compressed = compressed, .device = device, .bytes = bytes};
          w->time_us = across(t[reps / 2], zcclMax) * 1e6;
          double factor = c == C_ALLREDUCE ? 2.0 * (double)(N - 1) / (double)N : c == C_BROADCAST ? 1.0 : (double)(N - 1) / (double)N;
          w->busbw = (double)bytes / (w->time_us * 1e-6) * factor / 1e9;
          w->wrong = (long)across((double)wrong, zcclSum);
          w->max_err_over_bound = across(worst, zcclMax);
        }
      }
      for (size_t r = 0; r < N; r++) free(ins[r]);
      free(hout);
    }
  }
}

static void report(const row_t* rows, int n, const char* gpu) {
  printf("zccl-gpu-coll: %d ranks on %s; compressed: %s; median of %d\n", o.nranks, gpu, o.compression, o.reps);
  printf("| collective | bytes | codec | memory | time us | busbw GB/s | device / host time | device / nccl time | "
         "max err / bound | wrong |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < n; i++) {
    const row_t* r = &rows[i];
    double ratio = NAN, vs_nccl = NAN;
    for (int k = 0; k < n; k++) {
      if (r->device != M_DEVICE || rows[k].coll != r->coll || rows[k].bytes != r->bytes) continue;
      if (rows[k].device == M_HOST && rows[k].compressed == r->compressed) ratio = r->time_us / rows[k].time_us;
      if (rows[k].device == M_NCCL) vs_nccl = r->time_us / rows[k].time_us;
    }
    char rs[32] = "-", ns[32] = "-";
    if (!isnan(ratio)) snprintf(rs, sizeof rs, "%.2f", ratio);
    if (!isnan(vs_nccl)) snprintf(ns, sizeof ns, "%.2f", vs_nccl);
    printf("| %s | %zu | %s | %s | %.1f | %.3f | %s | %s | %.3f | %ld |\n", coll_names[r->coll], r->bytes,
           r->compressed ? "compressed" : "none", mem_names[r->device], r->time_us, r->busbw, rs, ns,
           r->max_err_over_bound, r->wrong);
  }
  if (!o.json) return;
  FILE* f = fopen(o.json, "w");
  if (!f) FAIL("cannot write %s", o.json);
  fprintf(f, "[\n");
  for (int i = 0; i < n; i++) {
    const row_t* r = &rows[i];
    fprintf(f,
            "  {\"collective\": \"%s\", \"bytes\": %zu, \"codec\": \"%s\", \"memory\": \"%s\", \"ranks\": %d, "
            "\"time_us\": %.3f, \"busbw_gbps\": %.6f, \"max_err_over_bound\": %.6f, \"wrong\": %ld, \"gpu\": \"%s\"}%s\n",
            coll_names[r->coll], r->bytes, r->compressed ? o.compression : "none", mem_names[r->device],
            o.nranks, r->time_us, r->busbw, r->max_err_over_bound, r->wrong, gpu, i + 1 < n ? "," : "");
  }
  fprintf(f, "]\n");
  fclose(f);
}

/* NCCL's communicator beside zccl's (its id travels through zccl), or its
 * rows skipped on every rank with the reason. */
static void nccl_start(void) {
  char err[512] = "";
  int version = 0;
  unsigned char id[NCCL_BASELINE_ID_BYTES] = {0};
  int ok = nccl_baseline_load(&version, err, sizeof err) == 0;
  if (across(ok, zcclMin) < 1) {
    if (rank == 0) printf("zccl-gpu-coll: nccl rows skipped: %s\n", ok ? "not loaded on every rank" : err);
    return;
  }
  ok = rank != 0 || nccl_baseline_get_id(id, err, sizeof err) == 0;
  ZR(zcclBroadcast(id, id, sizeof id, zcclUint8, 0, comm, NULL));
  if (across(ok, zcclMin) < 1) {
    if (rank == 0) printf("zccl-gpu-coll: nccl rows skipped: %s\n", err);
    return;
  }
  ok = nccl_baseline_init(&ncomm, o.nranks, rank, id, 1, err, sizeof err) == 0;
  if (across(ok, zcclMin) < 1) {
    if (!ok) printf("zccl-gpu-coll: rank %d: nccl rows skipped: %s\n", rank, err);
    nccl_baseline_destroy(ncomm);
    ncomm = NULL;
    return;
  }
  if (rank == 0) printf("zccl-gpu-coll: NCCL %d, its ranks on one GPU as separate hosts (NCCL_HOSTID=%s)\n", version,
                        getenv("NCCL_HOSTID") ? getenv("NCCL_HOSTID") : "");
}

static int run_rank(int r, const zcclUniqueId* id, void* arg) {
  (void)arg;
  rank = r;
  int have_gpu = 0;
  char gpu[256] = "no GPU";
  if (o.mem_dev || o.mem_nccl) {
    zd_cuda_info_t info;
    if (zd_cuda_query(&info) == zcclSuccess && info.ndevices > 0) {
      have_gpu = 1;
#ifdef ZCCL_PERF_CUDA
      struct cudaDeviceProp p;
      CU(cudaSetDevice(0));
      CU(cudaGetDeviceProperties(&p, 0));
      snprintf(gpu, sizeof gpu, "%s", p.name);
#endif
    } else {
      if (rank == 0) printf("zccl-gpu-coll: device rows skipped: %s\n", info.status);
      if (!o.mem_host) return 77;
    }
  }
  zccl_data_t d;
  char err[512];
  if (zccl_data_load(o.data, 0, &d, err, sizeof err) != 0) FAIL("%s", err);
  zccl_data_replace_fill(&d, 0.0);
  ZR(zcclCommInitRank(&comm, o.nranks, *id, rank));
  if (o.mem_nccl && have_gpu) nccl_start();
  static row_t rows[MAX_ROWS];
  int n = 0;
  run_rows(&d, have_gpu, rows, &n);
  long wrong = 0;
  for (int i = 0; i < n; i++) wrong += rows[i].wrong;
  if (rank == 0) report(rows, n, gpu);
  nccl_baseline_destroy(ncomm);
  ZR(zcclCommDestroy(comm));
  zccl_data_free(&d);
  return wrong ? 1 : 0;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: zccl-gpu-coll [--ranks N] [--colls allreduce,allgather,broadcast,reducescatter,scatter,\n"
          "                     alltoall] [-b SIZE]\n"
          "                     [-e SIZE] [-f F] [--reps R] [--data SPEC] [--compression SPEC]\n"
          "                     [--memory device,host,nccl] [--json FILE] [--timeout S]\n");
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
    if (!v) return usage(stderr), 2;
    i++;
    if (!strcmp(a, "--ranks")) o.nranks = atoi(v);
    else if (!strcmp(a, "-b")) o.b = parse_size(v);
    else if (!strcmp(a, "-e")) o.e = parse_size(v);
    else if (!strcmp(a, "-f")) o.f = atof(v);
    else if (!strcmp(a, "--reps")) o.reps = atoi(v);
    else if (!strcmp(a, "--data")) o.data = v;
    else if (!strcmp(a, "--compression")) o.compression = v;
    else if (!strcmp(a, "--json")) o.json = v;
    else if (!strcmp(a, "--timeout")) o.timeout = atoi(v);
    else if (!strcmp(a, "--memory")) {
      o.mem_dev = strstr(v, "device") != NULL;
      o.mem_host = strstr(v, "host") != NULL;
      o.mem_nccl = strstr(v, "nccl") != NULL;
    } else if (!strcmp(a, "--colls")) {
      for (int c = 0; c < NCOLLS; c++) o.colls[c] = strstr(v, coll_names[c]) != NULL;
    } else {
      return usage(stderr), 2;
    }
  }
  if (o.nranks < 1 || o.nranks > 8 || o.b == 0 || o.e < o.b || o.f <= 1 || o.reps < 1 || o.reps > MAX_REPS ||
      o.timeout < 1 || !(o.mem_dev || o.mem_host || o.mem_nccl))
    return fprintf(stderr, "zccl-gpu-coll: bad option value (ranks 1..8, -b <= -e, -f > 1, reps 1..%d)\n", MAX_REPS),
           2;
  if (zcclCompressionFromString(o.compression, &zc) != zcclSuccess || zc.codec == zcclCodecNone)
    return fprintf(stderr, "zccl-gpu-coll: --compression %s: %s\n", o.compression, zcclGetLastError(NULL)), 2;
  /* No CUDA call in this process before the fork (its children could not
   * use CUDA after it). */
  return zccl_fork_ranks(o.nranks, run_rank, NULL, o.timeout);
}
