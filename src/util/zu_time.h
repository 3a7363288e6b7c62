/* Monotonic time for deadlines and measurements. */
#ifndef ZU_TIME_H_
#define ZU_TIME_H_

#include <time.h>

/* Seconds on the monotonic clock (unaffected by wall-clock changes). */
static inline double zu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif /* ZU_TIME_H_ */
