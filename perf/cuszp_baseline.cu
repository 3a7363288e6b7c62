/* zccl-cuszp-baseline: cuSZp2's 1D "plain" kernels (the fixed-length
 * codec with deltas that ghZCCL and the cuSZp2 paper measure against) on the
 * same field, tiling, sizes and REL bounds as zccl-gpu-codec, timed the same
 * way (CUDA events around the kernel alone, median of --reps after a
 * warm-up) beside cudaMemcpy device to device in the same run, so that the
 * two programs' rows compare (docs/cuda.md, "cuSZp2 beside zccl's
 * kernels"). Every decompressed element is checked against the bound.
 * Built only when CMake is given ZCCL_CUSZP_DIR (a cuSZp build from its
 * public source, scripts/cuszp-build.sh; never part of this repository).
 *   zccl-cuszp-baseline [--data SPEC] [--eb REL[,REL...]] [--mib N]
 *                       [--reps R] [--f64] [--json FILE]
 * Fill values are replaced by 0 (cuSZp has no fill value): run
 * zccl-gpu-codec with --fill-zero for the same data. Exits 77 without a
 * usable GPU, 1 when a check fails. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

extern "C" {
#include "zccl_data.h"
}

/* cuSZp's 1D kernels (include/cuSZp/cuSZp_kernels_1D_*.h, declared here:
 * the two headers cannot share a file) and their launch shape, which the
 * library fixes: 32 threads per CTA, 1024 values per thread. */
__global__ void cuSZp_compress_kernel_1D_plain_f32(const float* const __restrict__, unsigned char* const __restrict__,
                                                   volatile unsigned int* const __restrict__,
                                                   volatile unsigned int* const __restrict__,
                                                   volatile int* const __restrict__, const float, const size_t);
__global__ void cuSZp_decompress_kernel_1D_plain_f32(float* const __restrict__, const unsigned char* const __restrict__,
                                                     volatile unsigned int* const __restrict__,
                                                     volatile unsigned int* const __restrict__,
                                                     volatile int* const __restrict__, const float, const size_t);
__global__ void cuSZp_compress_kernel_1D_plain_f64(const double* const __restrict__, unsigned char* const __restrict__,
                                                   volatile unsigned int* const __restrict__,
                                                   volatile unsigned int* const __restrict__,
                                                   volatile int* const __restrict__, const double, const size_t);
__global__ void cuSZp_decompress_kernel_1D_plain_f64(double* const __restrict__, const unsigned char* const __restrict__,
                                                     volatile unsigned int* const __restrict__,
                                                     volatile unsigned int* const __restrict__,
                                                     volatile int* const __restrict__, const double, const size_t);
enum { kCta = 32, kPerThread = 1024 };

#define CU(call)                                                                                        \
  do {                                                                                                  \
    cudaError_t e_ = (call);                                                                            \
    if (e_ != cudaSuccess) {                                                                            \
      fprintf(stderr, "zccl-cuszp-baseline: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                          \
    }                                                                                                   \
  } while (0)

struct Args {
  const char* data = "levitus_climatology.cdf:TEMP";
  const char* json = nullptr;
  size_t mib = 256;
  int reps = 20, f64 = 0;
  std::vector<double> ebs{1e-2, 1e-3, 1e-4};
};

/* The buffers of one run, and the offsets cuSZp's kernels zero-start from. */
struct Gpu {
  void *in = nullptr, *out = nullptr; /* out: decompressed values, and the copy's destination */
  unsigned char* cmp = nullptr;
  unsigned int *cmp_off = nullptr, *loc_off = nullptr;
  int* flag = nullptr;
  size_t count = 0, bytes = 0, grid = 0;
  cudaStream_t st;
  cudaEvent_t e0, e1;
};

static void reset(const Gpu& g) { /* before every launch, outside the timing */
  CU(cudaMemsetAsync(g.cmp_off, 0, sizeof(unsigned int) * (g.grid + 1), g.st));
  CU(cudaMemsetAsync(g.loc_off, 0, sizeof(unsigned int) * (g.grid + 1), g.st));
  CU(cudaMemsetAsync(g.flag, 0, sizeof(int) * (g.grid + 1), g.st));
}

static void compress(const Gpu& g, int f64, double eb) {
  if (f64)
    cuSZp_compress_kernel_1D_plain_f64<<<g.grid, kCta, 2 * sizeof(unsigned int), g.st>>>(
        (const double*)g.in, g.cmp, g.cmp_off, g.loc_off, g.flag, eb, g.count);
  else
    cuSZp_compress_kernel_1D_plain_f32<<<g.grid, kCta, 2 * sizeof(unsigned int), g.st>>>(
        (const float*)g.in, g.cmp, g.cmp_off, g.loc_off, g.flag, (float)eb, g.count);
}

static void decompress(const Gpu& g, int f64, double eb) {
  if (f64)
    cuSZp_decompress_kernel_1D_plain_f64<<<g.grid, kCta, 2 * sizeof(unsigned int), g.st>>>(
        (double*)g.out, g.cmp, g.cmp_off, g.loc_off, g.flag, eb, g.count);
  else
    cuSZp_decompress_kernel_1D_plain_f32<<<g.grid, kCta, 2 * sizeof(unsigned int), g.st>>>(
        (float*)g.out, g.cmp, g.cmp_off, g.loc_off, g.flag, (float)eb, g.count);
}

/* Median GB/s of reps timed runs of op (after one warm-up), raw bytes. */
template <typename Op>
static double rate(const Gpu& g, int reps, int resets, Op op) {
  std::vector<float> ms;
  for (int r = 0; r <= reps; r++) {
    if (resets) reset(g);
    CU(cudaEventRecord(g.e0, g.st));
    op();
    CU(cudaEventRecord(g.e1, g.st));
    CU(cudaEventSynchronize(g.e1));
    float t = 0;
    CU(cudaEventElapsedTime(&t, g.e0, g.e1));
    if (r > 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return g.bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

/* The compressed size, as cuSZp's own entry computes it: the offsets'
 * total plus one byte per 32 values of the padded length (the blocks'
 * width bytes). */
static size_t cmp_size(const Gpu& g) {
  unsigned int total = 0;
  CU(cudaMemcpy(&total, g.cmp_off + g.grid, sizeof total, cudaMemcpyDeviceToHost));
  size_t padded = g.grid * (size_t)kCta * kPerThread;
  return (size_t)total + padded / 32;
}

static int parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (strcmp(s, "--f64") == 0) a->f64 = 1;
    else if (strcmp(s, "--fill-zero") == 0) continue; /* always: zccl-gpu-codec's flag, accepted */
    else if (v && strcmp(s, "--data") == 0) a->data = v, i++;
    else if (v && strcmp(s, "--json") == 0) a->json = v, i++;
    else if (v && strcmp(s, "--mib") == 0) a->mib = strtoull(v, nullptr, 10), i++;
    else if (v && strcmp(s, "--reps") == 0) a->reps = atoi(v), i++;
    else if (v && strcmp(s, "--eb") == 0) {
      a->ebs.clear();
      char* end = (char*)v;
      while (*end) {
        double e = strtod(end, &end);
        if (!(e > 0) || (*end && *end != ',')) return -1;
        a->ebs.push_back(e);
        if (*end == ',') end++;
      }
      i++;
    } else return -1;
  }
  return a->mib > 0 && a->reps > 0 && !a->ebs.empty() ? 0 : -1;
}

/* Elements off by more than eb (the bound, plus one rounding of the value). */
static long check(const void* want, const void* got, size_t n, int f64, double eb, double* max_err) {
  long wrong = 0;
  *max_err = 0;
  for (size_t i = 0; i < n; i++) {
    double w = f64 ? ((const double*)want)[i] : ((const float*)want)[i];
    double v = f64 ? ((const double*)got)[i] : ((const float*)got)[i];
    double e = fabs(v - w);
    if (!(e <= eb + fabs(w) * (f64 ? 2.3e-16 : 1.2e-7))) wrong++;
    if (e > *max_err || e != e) *max_err = e;
  }
  return wrong;
}

int main(int argc, char** argv) {
  Args a;
  if (parse(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: zccl-cuszp-baseline [--data SPEC] [--eb REL[,REL...]] [--mib N] [--reps R] [--f64] "
                    "[--json FILE]\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    printf("zccl-cuszp-baseline: skipped: no usable GPU\n");
    return 77;
  }
  zccl_data_t d;
  char err[512];
  if (zccl_data_load(a.data, a.f64, &d, err, sizeof err) != 0) {
    fprintf(stderr, "zccl-cuszp-baseline: %s\n", err);
    return 1;
  }
  zccl_data_replace_fill(&d, 0.0);
  Gpu g;
  size_t es = a.f64 ? 8 : 4;
  g.bytes = a.mib << 20, g.count = g.bytes / es;
  g.grid = (g.count + (size_t)kCta * kPerThread - 1) / ((size_t)kCta * kPerThread);
  std::vector<unsigned char> host(g.bytes), back(g.bytes);
  zccl_data_tile(&d, 0, host.data(), g.count);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < g.count; i++) {
    double v = a.f64 ? ((double*)host.data())[i] : ((float*)host.data())[i];
    lo = fmin(lo, v), hi = fmax(hi, v);
  }
  CU(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
  CU(cudaEventCreate(&g.e0));
  CU(cudaEventCreate(&g.e1));
  CU(cudaMalloc(&g.in, g.bytes));
  CU(cudaMalloc(&g.out, g.bytes));
  CU(cudaMalloc((void**)&g.cmp, g.bytes + g.bytes / 8)); /* cuSZp's examples allocate the raw size; an eighth more of room */
  CU(cudaMalloc((void**)&g.cmp_off, sizeof(unsigned int) * (g.grid + 1)));
  CU(cudaMalloc((void**)&g.loc_off, sizeof(unsigned int) * (g.grid + 1)));
  CU(cudaMalloc((void**)&g.flag, sizeof(int) * (g.grid + 1)));
  CU(cudaMemcpy(g.in, host.data(), g.bytes, cudaMemcpyHostToDevice));
  FILE* js = a.json ? fopen(a.json, "w") : nullptr;
  if (a.json && !js) return fprintf(stderr, "zccl-cuszp-baseline: cannot write %s\n", a.json), 1;
  if (js) fprintf(js, "[\n");
  printf("# zccl-cuszp-baseline: cuSZp2 1D plain kernels, %s (fill set to 0), %s, %zu MiB, median of %d runs\n",
         d.source, a.f64 ? "f64" : "f32", a.mib, a.reps);
  printf("%8s %7s %9s %9s %6s %9s %6s %10s %6s\n", "rel_eb", "ratio", "memcpy", "comp", "x", "decomp", "x", "max_err",
         "check");
  int failed = 0;
  for (size_t k = 0; k < a.ebs.size(); k++) {
    double eb = a.ebs[k] * (hi - lo);
    if (!(eb > 0)) eb = a.ebs[k];
    reset(g);
    compress(g, a.f64, eb);
    CU(cudaStreamSynchronize(g.st));
    size_t csize = cmp_size(g);
    reset(g); /* decompression finds the blocks' offsets itself, from zeroed counters as cuSZp's entry starts it */
    decompress(g, a.f64, eb);
    CU(cudaStreamSynchronize(g.st));
    CU(cudaMemcpy(back.data(), g.out, g.bytes, cudaMemcpyDeviceToHost));
    double max_err;
    long wrong = check(host.data(), back.data(), g.count, a.f64, a.f64 ? eb : (double)(float)eb, &max_err);
    failed |= wrong != 0;
    double mc = rate(g, a.reps, 0, [&] { CU(cudaMemcpyAsync(g.out, g.in, g.bytes, cudaMemcpyDeviceToDevice, g.st)); });
    double c = rate(g, a.reps, 1, [&] { compress(g, a.f64, eb); });
    double dc = rate(g, a.reps, 1, [&] { decompress(g, a.f64, eb); });
    double ratio = (double)g.bytes / (double)csize;
    printf("%8.0e %7.2f %9.1f %9.1f %6.3f %9.1f %6.3f %10.3g %6s\n", a.ebs[k], ratio, mc, c, c / mc, dc, dc / mc,
           max_err, wrong ? "FAIL" : "ok");
    if (js)
      fprintf(js,
              "%s  {\"codec\": \"cuSZp2-plain\", \"dtype\": \"%s\", \"rel_eb\": %g, \"eb\": %.17g, \"ratio\": %.4f, "
              "\"memcpy_GBps\": %.2f, \"compress_GBps\": %.2f, \"decompress_GBps\": %.2f, \"max_err\": %.6g, "
              "\"wrong\": %ld}",
              k ? ",\n" : "", a.f64 ? "f64" : "f32", a.ebs[k], eb, ratio, mc, c, dc, max_err, wrong);
  }
  if (js) fprintf(js, "\n]\n"), fclose(js);
  zccl_data_free(&d);
  return failed ? 1 : 0;
}
