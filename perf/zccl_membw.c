/* zccl-membw: memcpy bandwidth of this machine with 1..N threads, the
 * ceiling for the codec's thread scaling (its work is streaming memory).
 *   zccl-membw [MiB=64] [threads=nproc] [reps=5] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zu_time.h"

typedef struct {
  char *src, *dst;
  size_t len;
  int reps;
} part_t;

static void* copy_part(void* arg) {
  part_t* p = arg;
  for (int r = 0; r < p->reps; r++) memcpy(p->dst, p->src, p->len);
  return NULL;
}

int main(int argc, char** argv) {
  size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
  int maxt = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  if (bytes == 0 || maxt < 1 || reps < 1) {
    fprintf(stderr, "usage: zccl-membw [MiB] [threads] [reps]\n");
    return 2;
  }
  char *src = malloc(bytes), *dst = malloc(bytes);
  if (!src || !dst) return 1;
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  double one = 0;
  printf("# memcpy of %zu MiB, %d reps, best of 3 runs\n# threads   GB/s   x 1 thread\n", bytes >> 20, reps);
  for (int t = 1; t <= maxt; t++) {
    double best = 1e30;
    for (int run = 0; run < 3; run++) {
      pthread_t th[256];
      part_t parts[256];
      double t0 = zu_now();
      for (int i = 0; i < t; i++) {
        size_t lo = bytes * (size_t)i / (size_t)t, hi = bytes * (size_t)(i + 1) / (size_t)t;
        parts[i] = (part_t){src + lo, dst + lo, hi - lo, reps};
        if (i > 0) pthread_create(&th[i], NULL, copy_part, &parts[i]);
      }
      copy_part(&parts[0]);
      for (int i = 1; i < t; i++) pthread_join(th[i], NULL);
      double dt = zu_now() - t0;
      best = dt < best ? dt : best;
    }
    double gbps = (double)bytes * reps / best / 1e9;
    if (t == 1) one = gbps;
    printf("  %7d %6.2f   %.2f\n", t, gbps, gbps / one);
  }
  free(src);
  free(dst);
  return 0;
}
