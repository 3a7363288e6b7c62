/* zccl-gpu-codec: the CUDA stream codec's kernels on a real field, timed with
 * CUDA events beside cudaMemcpy device-to-device of the same bytes in the
 * same run: compression, decompression, the homomorphic sum of two streams
 * (ghZ, one kernel) and decompress-add-compress (DOC: two decompressions, a
 * reduction and a compression, the path without homomorphic reduction).
 * Every figure is the median of --reps timed runs after a warm-up; GB/s
 * count the field's raw bytes (one operand for the sum). Before timing, each
 * result is checked: the GPU streams byte for byte against the CPU codec
 * (zc_compress, zc_hop) and every decompressed element against the bound.
 *   zccl-gpu-codec [--data SPEC] [--eb REL[,REL...]] [--mib N] [--reps R]
 *                  [--f64] [--fill-zero] [--json FILE] [--persist] [--checksum]
 * --checksum: streams with chunk checksums (ZCCL_CHECKSUM=1's), written
 * and verified by the kernels; run with and without to see their cost.
 * --persist: instead, the persistent kernel (ZCCL_PERSISTENT_KERNEL) beside
 * launches, host wall time per compression (no stream gates: the kernel
 * alone): one at a time, a burst of 256 queued back to back, and one of
 * the whole buffer, for half and for all of the SMs' CTAs.
 * SPEC: file.nc:VAR or a raw .f32/.f64 file (default
 * levitus_climatology.cdf:TEMP), tiled to N MiB (default 256); the second
 * operand is the field tiled from a third of the way in. Exits 77 without
 * a usable GPU (or without a CUDA build), 1 when a check fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_util.h"
#include "zc_szp.h"
#include "zccl_data.h"
#include "zd_device.h"
#include "zu_time.h"

#ifndef ZCCL_PERF_CUDA
int main(void) {
  zd_cuda_info_t info;
  zd_cuda_query(&info);
  printf("zccl-gpu-codec: skipped: zccl was built without CUDA (%s)\n", info.status);
  return 77;
}
#else
#include <cuda_runtime_api.h>

#include "zd_cuda_kernels.h"

#define CU(call)                                                                                      \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "zccl-gpu-codec: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)
#define ZR(call)                                                                                      \
  do {                                                                                                \
    zcclResult_t r_ = (call);                                                                         \
    if (r_ != zcclSuccess) {                                                                          \
      fprintf(stderr, "zccl-gpu-codec: %s: %s\n", #call, zcclGetLastError(NULL));                     \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

typedef struct {
  const char* data;
  double ebs[8];
  int nebs;
  size_t mib;
  int reps, f64, fill_zero, persist, checksum;
  const char* json;
} args_t;

/* The device side of one run: operands, streams, scratch, size and status words. */
typedef struct {
  cudaStream_t st;
  cudaEvent_t e0, e1;
  void *a, *b, *va, *vb, *sa, *sb, *sc, *scratch, *hscratch;
  size_t count, bytes, cap, scratch_bytes, hscratch_bytes;
  uint64_t* sizes; /* [0] a's stream, [1] b's, [2] the result's */
  int* status;
} gpu_t;

typedef enum { OP_COPY, OP_COMP, OP_DECOMP, OP_HOP, OP_DOC, NOPS } op_t;
static const char* op_names[NOPS] = {"memcpy", "comp", "decomp", "hsum", "doc"};

static void enqueue(gpu_t* g, const zc_params_t* p, op_t op) {
  zd_cuda_stream_t s = (zd_cuda_stream_t)g->st;
  switch (op) {
    case OP_COPY: CU(cudaMemcpyAsync(g->va, g->a, g->bytes, cudaMemcpyDeviceToDevice, g->st)); break;
    case OP_COMP:
      ZR(zd_cuda_compress(p, g->a, g->count, g->sa, g->cap, &g->sizes[0], g->scratch, g->scratch_bytes, g->status, s));
      break;
    case OP_DECOMP: ZR(zd_cuda_decompress(g->sa, &g->sizes[0], g->va, g->count, g->status, s)); break;
    case OP_HOP:
      ZR(zd_cuda_hop(zcclSum, g->sa, &g->sizes[0], g->sb, &g->sizes[1], g->sc, g->cap, &g->sizes[2], g->hscratch,
                     g->hscratch_bytes, g->status, s));
      break;
    case OP_DOC: /* what a reduction does without homomorphic streams */
      ZR(zd_cuda_decompress(g->sa, &g->sizes[0], g->va, g->count, g->status, s));
      ZR(zd_cuda_decompress(g->sb, &g->sizes[1], g->vb, g->count, g->status, s));
      ZR(zd_cuda_reduce(g->va, g->va, g->vb, g->count, p->dtype, zcclSum, p->has_fill, p->fill, s));
      ZR(zd_cuda_compress(p, g->va, g->count, g->sc, g->cap, &g->sizes[2], g->scratch, g->scratch_bytes, g->status,
                          s));
      break;
    default: break;
  }
}

static int cmp_float(const void* x, const void* y) {
  float a = *(const float*)x, b = *(const float*)y;
  return (a > b) - (a < b);
}

/* Median milliseconds of reps runs of op, each between two events. */
static double time_op(gpu_t* g, const zc_params_t* p, op_t op, int reps) {
  float* ms = calloc((size_t)reps, sizeof *ms);
  enqueue(g, p, op); /* warm-up */
  for (int r = 0; r < reps; r++) {
    CU(cudaEventRecord(g->e0, g->st));
    enqueue(g, p, op);
    CU(cudaEventRecord(g->e1, g->st));
    CU(cudaEventSynchronize(g->e1));
    CU(cudaEventElapsedTime(&ms[r], g->e0, g->e1));
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp_float);
  double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  free(ms);
  return med;
}

static int status_ok(gpu_t* g, const char* what) {
  int st;
  CU(cudaStreamSynchronize(g->st));
  CU(cudaMemcpy(&st, g->status, sizeof st, cudaMemcpyDeviceToHost));
  if (st != zcclSuccess) fprintf(stderr, "zccl-gpu-codec: %s: the kernel reported %d\n", what, st);
  return st == zcclSuccess;
}

/* GPU stream (size at sizes[k]) against the CPU's bytes. */
static int same_stream(gpu_t* g, const void* dstream, int k, const uint8_t* cpu, size_t cpu_size, const char* what) {
  uint64_t n;
  CU(cudaMemcpy(&n, &g->sizes[k], sizeof n, cudaMemcpyDeviceToHost));
  uint8_t* h = malloc(n ? n : 1);
  CU(cudaMemcpy(h, dstream, n, cudaMemcpyDeviceToHost));
  int same = n == cpu_size && memcmp(h, cpu, n) == 0;
  if (!same) fprintf(stderr, "zccl-gpu-codec: %s: GPU stream (%llu bytes) differs from the CPU's (%zu bytes)\n", what,
                     (unsigned long long)n, cpu_size);
  free(h);
  return same;
}

/* Microseconds per compression of n values, median of reps: burst items
 * queued back to back, then waited for; by the persistent kernel P, or
 * launched on the stream when P is NULL. */
static double persist_time(gpu_t* g, const zc_params_t* p, zd_cuda_persist_t* P, size_t n, int burst, int reps) {
  double* t = calloc((size_t)reps, sizeof *t);
  for (int r = -1; r < reps; r++) {
    double t0 = zu_now();
    uint64_t seq = 0;
    for (int b = 0; b < burst; b++) {
      if (P)
        ZR(zd_cuda_persist_compress(P, p, g->a, n, g->sa, g->cap, &g->sizes[0], g->scratch, g->scratch_bytes,
                                    g->status, NULL, 0, &seq));
      else
        ZR(zd_cuda_compress(p, g->a, n, g->sa, g->cap, &g->sizes[0], g->scratch, g->scratch_bytes, g->status,
                            (zd_cuda_stream_t)g->st));
    }
    if (P)
      ZR(zd_cuda_persist_wait(P, seq));
    else
      CU(cudaStreamSynchronize(g->st));
    if (r >= 0) t[r] = (zu_now() - t0) * 1e6 / burst;
  }
  qsort(t, (size_t)reps, sizeof *t, perf_cmp_double);
  double med = t[reps / 2];
  free(t);
  return med;
}

static int persist_table(gpu_t* g, const zc_params_t* p, int reps) {
  printf("# persistent kernel vs a launch per compression: host wall time per compression, us (median of %d)\n",
         reps);
  printf("%12s %10s %10s %10s\n", "", "1 x 16 KiB", "256 x 16 KiB", "1 x whole");
  const size_t small = 4096;
  for (int k = 0; k < 3; k++) {
    zd_cuda_persist_t* P = NULL;
    const char* name = k == 0 ? "launch" : k == 1 ? "persist/2" : "persist/1";
    if (k > 0) ZR(zd_cuda_persist_create(2000, k == 1 ? 0 : 1 << 16, &P));
    double one = persist_time(g, p, P, small, 1, reps);
    double burst = persist_time(g, p, P, small, 256, reps < 5 ? reps : 5);
    double whole = persist_time(g, p, P, g->count, 1, reps < 5 ? reps : 5);
    printf("%12s %10.1f %10.1f %10.1f\n", name, one, burst, whole);
    if (P) printf("%12s launched %llu times, %d CTAs\n", "", zd_cuda_persist_launches(P), zd_cuda_persist_ctas(P));
    zd_cuda_persist_destroy(P);
  }
  return status_ok(g, "persistent compressions") ? 0 : 1;
}

static int parse(int argc, char** argv, args_t* a) {
  *a = (args_t){.data = "levitus_climatology.cdf:TEMP", .mib = 256, .reps = 20};
  a->ebs[0] = 1e-2, a->ebs[1] = 1e-3, a->ebs[2] = 1e-4, a->nebs = 3;
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--f64") == 0) a->f64 = 1;
    else if (strcmp(s, "--fill-zero") == 0) a->fill_zero = 1;
    else if (strcmp(s, "--persist") == 0) a->persist = 1;
    else if (strcmp(s, "--checksum") == 0) a->checksum = 1;
    else if (v && strcmp(s, "--data") == 0) a->data = v, i++;
    else if (v && strcmp(s, "--json") == 0) a->json = v, i++;
    else if (v && strcmp(s, "--mib") == 0) a->mib = strtoull(v, NULL, 10), i++;
    else if (v && strcmp(s, "--reps") == 0) a->reps = atoi(v), i++;
    else if (v && strcmp(s, "--eb") == 0) {
      char* end = (char*)v;
      a->nebs = 0;
      while (*end && a->nebs < 8) {
        double e = strtod(end, &end);
        if (!(e > 0) || (*end && *end != ',')) return -1;
        a->ebs[a->nebs++] = e;
        if (*end == ',') end++;
      }
      i++;
    } else return -1;
  }
  return a->mib > 0 && a->reps > 0 && a->nebs > 0 ? 0 : -1;
}

int main(int argc, char** argv) {
  args_t a;
  if (parse(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: zccl-gpu-codec [--data SPEC] [--eb REL[,REL...]] [--mib N] [--reps R] [--f64] "
                    "[--fill-zero] [--json FILE] [--persist] [--checksum]\n");
    return 2;
  }
  zd_cuda_info_t info;
  zd_cuda_query(&info);
  if (info.ndevices < 1) {
    printf("zccl-gpu-codec: skipped: %s\n", info.status);
    return 77;
  }
  zccl_data_t d;
  char err[512];
  if (zccl_data_load(a.data, a.f64, &d, err, sizeof err) != 0) {
    fprintf(stderr, "zccl-gpu-codec: %s\n", err);
    return 1;
  }
  if (a.fill_zero) zccl_data_replace_fill(&d, 0.0), d.has_fill = 0;
  size_t es = a.f64 ? 8 : 4;
  gpu_t g = {.bytes = a.mib << 20};
  g.count = g.bytes / es;
  zcclDataType_t t = a.f64 ? zcclFloat64 : zcclFloat32;
  void *ha = malloc(g.bytes), *hb = malloc(g.bytes), *hv = malloc(g.bytes);
  zccl_data_tile(&d, 0, ha, g.count);
  zccl_data_tile(&d, d.count / 3, hb, g.count);
  g.cap = zc_compress_bound(g.count, t, 0);
  g.scratch_bytes = zd_cuda_codec_scratch_bytes(g.count, t, 0);
  g.hscratch_bytes = zd_cuda_hop_scratch_bytes(g.cap);
  CU(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
  CU(cudaEventCreate(&g.e0));
  CU(cudaEventCreate(&g.e1));
  void** bufs[] = {&g.a, &g.b, &g.va, &g.vb};
  for (int i = 0; i < 4; i++) CU(cudaMalloc(bufs[i], g.bytes));
  CU(cudaMalloc(&g.sa, g.cap));
  CU(cudaMalloc(&g.sb, g.cap));
  CU(cudaMalloc(&g.sc, g.cap));
  CU(cudaMalloc(&g.scratch, g.scratch_bytes));
  CU(cudaMalloc(&g.hscratch, g.hscratch_bytes));
  CU(cudaMalloc((void**)&g.sizes, 4 * sizeof(uint64_t)));
  CU(cudaMalloc((void**)&g.status, sizeof(int)));
  CU(cudaMemcpy(g.a, ha, g.bytes, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(g.b, hb, g.bytes, cudaMemcpyHostToDevice));
  uint8_t *ca = malloc(g.cap), *cb = malloc(g.cap), *cc = malloc(g.cap);
  if (a.persist) {
    double lo, hi;
    size_t valid;
    zc_value_range(ha, g.count, t, d.has_fill, d.fill, &lo, &hi, &valid);
    zc_params_t p = {
        .dtype = t, .eb = a.ebs[0] * (hi - lo), .has_fill = d.has_fill, .fill = d.fill, .checksum = a.checksum};
    CU(cudaMemset(g.status, 0, sizeof(int)));
    return persist_table(&g, &p, a.reps);
  }

  FILE* js = a.json ? fopen(a.json, "w") : NULL;
  if (a.json && !js) return fprintf(stderr, "zccl-gpu-codec: cannot write %s\n", a.json), 1;
  if (js) fprintf(js, "[\n");
  printf("# zccl-gpu-codec: %s (%s, %zu values in the file), %s, %zu MiB, chunk checksums %s, median of %d runs, %s\n",
         d.source, d.has_fill ? "fill kept" : "no fill", d.count, a.f64 ? "f64" : "f32", a.mib,
         a.checksum ? "on" : "off", a.reps, info.status);
  printf("# GB/s of the field's raw bytes; x: the op's rate over cudaMemcpy D2D of the same bytes\n");
  printf("%8s %7s %9s %9s %6s %9s %6s %9s %6s %9s %6s %8s %6s\n", "rel_eb", "ratio", "memcpy", "comp", "x", "decomp",
         "x", "hsum", "x", "doc", "x", "hsum/doc", "check");
  int failed = 0;
  double lo, hi; /* REL bounds are relative to this range */
  size_t valid;
  zc_value_range(ha, g.count, t, d.has_fill, d.fill, &lo, &hi, &valid);
  for (int k = 0; k < a.nebs; k++) {
    zc_params_t p = {
        .dtype = t, .eb = a.ebs[k] * (hi - lo), .has_fill = d.has_fill, .fill = d.fill, .checksum = a.checksum};
    if (!(p.eb > 0)) p.eb = a.ebs[k];
    /* Checks first: both operands' streams, the decompressed values, the sum. */
    size_t na, nb, nc;
    ZR(zc_compress(&p, ha, g.count, ca, g.cap, &na, NULL, NULL));
    ZR(zc_compress(&p, hb, g.count, cb, g.cap, &nb, NULL, NULL));
    ZR(zc_hop(zcclSum, ca, na, cb, nb, cc, g.cap, &nc));
    CU(cudaMemset(g.status, 0, sizeof(int)));
    zd_cuda_stream_t s = (zd_cuda_stream_t)g.st;
    ZR(zd_cuda_compress(&p, g.b, g.count, g.sb, g.cap, &g.sizes[1], g.scratch, g.scratch_bytes, g.status, s));
    enqueue(&g, &p, OP_COMP);
    int ok = status_ok(&g, "compress") && same_stream(&g, g.sa, 0, ca, na, "compress a") &&
             same_stream(&g, g.sb, 1, cb, nb, "compress b");
    enqueue(&g, &p, OP_HOP);
    ok = ok && status_ok(&g, "hsum") && same_stream(&g, g.sc, 2, cc, nc, "hsum");
    enqueue(&g, &p, OP_DECOMP);
    ok = ok && status_ok(&g, "decompress");
    CU(cudaMemcpy(hv, g.va, g.bytes, cudaMemcpyDeviceToHost));
    size_t over = 0;
    double worst = 0;
    for (size_t i = 0; i < g.count; i++) {
      double x = a.f64 ? ((double*)ha)[i] : ((float*)ha)[i], y = a.f64 ? ((double*)hv)[i] : ((float*)hv)[i];
      if (!isfinite(x) || (d.has_fill && x == d.fill)) {
        over += memcmp((char*)ha + i * es, (char*)hv + i * es, es) != 0;
        continue;
      }
      double e = fabs(x - y);
      worst = e > worst ? e : worst;
      over += !(e <= p.eb);
    }
    if (over) fprintf(stderr, "zccl-gpu-codec: %zu decompressed values beyond the bound %g\n", over, p.eb);
    ok = ok && over == 0;
    failed |= !ok;

    double ms[NOPS];
    for (int o = 0; o < NOPS; o++) ms[o] = time_op(&g, &p, (op_t)o, a.reps);
    ok = ok && status_ok(&g, "timed runs");
    double gbs[NOPS];
    for (int o = 0; o < NOPS; o++) gbs[o] = (double)g.bytes / (ms[o] * 1e6);
    double ratio = (double)g.bytes / (double)na;
    printf("%8.0e %7.2f %9.1f %9.1f %6.3f %9.1f %6.3f %9.1f %6.3f %9.1f %6.3f %8.2f %6s\n", a.ebs[k], ratio,
           gbs[OP_COPY], gbs[OP_COMP], ms[OP_COPY] / ms[OP_COMP], gbs[OP_DECOMP], ms[OP_COPY] / ms[OP_DECOMP],
           gbs[OP_HOP], ms[OP_COPY] / ms[OP_HOP], gbs[OP_DOC], ms[OP_COPY] / ms[OP_DOC], ms[OP_DOC] / ms[OP_HOP],
           ok ? "ok" : "FAIL");
    if (js) {
      fprintf(js, "  {\"data\": \"%s\", \"dtype\": \"%s\", \"fill\": %s, \"mib\": %zu, \"rel_eb\": %g, \"eb\": %.17g, "
                  "\"ratio\": %.4f, \"max_err\": %.17g, \"checked\": %s",
              d.source, a.f64 ? "f64" : "f32", d.has_fill ? "true" : "false", a.mib, a.ebs[k], p.eb, ratio, worst,
              ok ? "true" : "false");
      for (int o = 0; o < NOPS; o++) fprintf(js, ", \"%s_ms\": %.5f, \"%s_gbs\": %.2f", op_names[o], ms[o], op_names[o], gbs[o]);
      fprintf(js, ", \"hsum_over_doc\": %.4f, \"device\": \"%s\"}%s\n", ms[OP_DOC] / ms[OP_HOP], info.status,
              k + 1 < a.nebs ? "," : "");
    }
  }
  if (js) fprintf(js, "]\n"), fclose(js);
  return failed ? 1 : 0;
}
#endif
