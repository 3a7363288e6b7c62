/* What the perf tools share beyond the library's helpers (zu_now in
 * zu_time.h for the clock): the comparator for their medians. */
#ifndef ZCCL_PERF_UTIL_H
#define ZCCL_PERF_UTIL_H

static inline int perf_cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

#endif
