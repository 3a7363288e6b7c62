/* Small helpers the perf tools share: a monotonic clock and a comparator
 * for the medians. */
#ifndef ZCCL_PERF_UTIL_H
#define ZCCL_PERF_UTIL_H

#include <time.h>

static inline double perf_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int perf_cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

#endif
