/* zccl-reduce-bench: GB/s of the host device's zd_reduce (SUM) for float32,
 * float64 and bfloat16, on 1 thread and on every thread, beside memcpy in
 * the same run. A reduction moves 3 x bytes (two reads, one write), memcpy
 * 2 x bytes; both are reported as bytes moved per second.
 *   zccl-reduce-bench [max MiB=256] [min KiB=1]
 * "N thr" forces the split at every size (ZCCL_REDUCE_SPLIT_BYTES=0) so the
 * two columns show where threading starts to pay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zd_device.h"
#include "zu_dtype.h"
#include "zu_param.h"
#include "zu_time.h"

typedef struct {
  zd_dev_t* dev; /* NULL: memcpy */
  zcclDataType_t dtype;
  char *d, *a, *b;
  size_t bytes;
} job_t;

static void run_once(const job_t* j) {
  if (j->dev == NULL) {
    memcpy(j->d, j->a, j->bytes);
    return;
  }
  size_t n = j->bytes / zu_dtype_size(j->dtype);
  if (zd_reduce(j->dev, j->d, j->a, j->b, n, j->dtype, zcclSum) != zcclSuccess) {
    fprintf(stderr, "zd_reduce failed\n");
    exit(1);
  }
}

/* Best of 3 batches of ~20 ms each, in GB/s of `moved` bytes per call. */
static double measure(const job_t* j, size_t moved) {
  run_once(j);
  double t0 = zu_now();
  run_once(j);
  double one = zu_now() - t0;
  long reps = one > 0.02 ? 1 : (long)(0.02 / (one > 1e-9 ? one : 1e-9)) + 1;
  double best = 1e30;
  for (int batch = 0; batch < 3; batch++) {
    t0 = zu_now();
    for (long r = 0; r < reps; r++) run_once(j);
    double dt = (zu_now() - t0) / (double)reps;
    if (dt < best) best = dt;
  }
  return (double)moved / best / 1e9;
}

static zd_dev_t* make_dev(const char* threads, const char* split) {
  setenv("ZCCL_REDUCE_THREADS", threads, 1);
  setenv("ZCCL_REDUCE_SPLIT_BYTES", split, 1);
  zu_param_reload(); /* a device made without a communicator */
  zd_dev_t* dev = NULL;
  if (zd_dev_create(ZD_HOST, &dev) != zcclSuccess) {
    fprintf(stderr, "zd_dev_create failed\n");
    exit(1);
  }
  return dev;
}

int main(int argc, char** argv) {
  size_t maxb = (size_t)(argc > 1 ? atol(argv[1]) : 256) << 20;
  size_t minb = (size_t)(argc > 2 ? atol(argv[2]) : 1) << 10;
  if (maxb == 0 || minb == 0 || minb > maxb) {
    fprintf(stderr, "usage: zccl-reduce-bench [max MiB] [min KiB]\n");
    return 2;
  }
  char *d = aligned_alloc(64, maxb), *a = aligned_alloc(64, maxb), *b = aligned_alloc(64, maxb);
  if (!d || !a || !b) return 1;
  /* Small values keep every type finite; the page faults happen here. */
  for (size_t i = 0; i < maxb / 4; i++) {
    ((float*)a)[i] = (float)(i % 100) * 0.25f;
    ((float*)b)[i] = 1.0f;
  }
  memset(d, 0, maxb);
  zd_dev_t* one = make_dev("1", "0");
  zd_dev_t* all = make_dev("0", "0");
  unsetenv("ZCCL_REDUCE_THREADS");
  unsetenv("ZCCL_REDUCE_SPLIT_BYTES");
  zu_param_reload();
  static const zcclDataType_t types[] = {zcclFloat32, zcclFloat64, zcclBfloat16};
  printf("# zd_reduce SUM on the host device, GB/s (reduce: 3 x bytes moved, memcpy: 2 x bytes)\n");
  printf("# 1 thr: ZCCL_REDUCE_THREADS=1; N thr: all cores (hwloc), split at every size\n");
  printf("%12s %9s", "bytes", "memcpy");
  for (int t = 0; t < 3; t++) printf("  %7s 1thr %7s Nthr", zu_dtype_name(types[t]), zu_dtype_name(types[t]));
  printf("\n");
  for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
    job_t mc = {NULL, zcclFloat32, d, a, b, bytes};
    printf("%12zu %9.2f", bytes, measure(&mc, 2 * bytes));
    for (int t = 0; t < 3; t++) {
      job_t j1 = {one, types[t], d, a, b, bytes}, jn = {all, types[t], d, a, b, bytes};
      printf("  %12.2f %12.2f", measure(&j1, 3 * bytes), measure(&jn, 3 * bytes));
    }
    printf("\n");
    fflush(stdout);
  }
  zd_dev_destroy(one);
  zd_dev_destroy(all);
  free(d);
  free(a);
  free(b);
  return 0;
}
