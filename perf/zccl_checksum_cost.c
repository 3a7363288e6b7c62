/* What chunk checksums (docs/format.md, ZCCL_CHECKSUM) cost the host codec:
 * compress, decompress and hsum of one field tiled to 64 MiB, one thread,
 * with and without, alternating, the fastest of R runs of each (the
 * minimum filters out a shared machine's busy moments better than a mean).
 *   zccl-checksum-cost [FIELD] [REL eb] [R]
 *   defaults: levitus_climatology.cdf:TEMP 1e-3 9; fill points set to 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zc_simd.h"
#include "zc_szp.h"
#include "zccl_data.h"
#include "zu_time.h"

int main(int argc, char** argv) {
  const char* field = argc > 1 ? argv[1] : "levitus_climatology.cdf:TEMP";
  double rel = argc > 2 ? atof(argv[2]) : 1e-3;
  int reps = argc > 3 ? atoi(argv[3]) : 9;
  zccl_data_t d;
  char err[512];
  if (zccl_data_load(field, 0, &d, err, sizeof err) != 0) return fprintf(stderr, "%s\n", err), 1;
  zccl_data_replace_fill(&d, 0.0);
  size_t n = (64u << 20) / 4, cap = zc_compress_bound(n, zcclFloat32, 0), got, on;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  uint8_t *s[2] = {malloc(cap), malloc(cap)}, *o = malloc(cap);
  if (!x || !y || !s[0] || !s[1] || !o) return fprintf(stderr, "out of memory\n"), 1;
  zccl_data_tile(&d, 0, x, n);
  double lo = 0, hi = 0, t[3][2];
  size_t valid, size[2];
  zc_value_range(x, n, zcclFloat32, 0, 0, &lo, &hi, &valid);
  for (int k = 0; k < 3; k++) t[k][0] = t[k][1] = 1e30;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) {
      zc_params_t p = {.dtype = zcclFloat32, .eb = rel * (hi > lo ? hi - lo : 1), .checksum = k};
      double t0 = zu_now(), t1, t2, t3;
      if (zc_compress(&p, x, n, s[k], cap, &size[k], NULL, NULL) != zcclSuccess) return 2;
      t1 = zu_now();
      if (zc_decompress(s[k], size[k], y, n, &got, NULL, NULL) != zcclSuccess) return 3;
      t2 = zu_now();
      if (zc_hop(zcclSum, s[k], size[k], s[k], size[k], o, cap, &on) != zcclSuccess) return 4;
      t3 = zu_now();
      double dt[3] = {t1 - t0, t2 - t1, t3 - t2};
      for (int j = 0; j < 3; j++) t[j][k] = dt[j] < t[j][k] ? dt[j] : t[j][k];
    }
  const char* what[3] = {"compress", "decompress", "hsum"};
  printf("%s REL %g, kernels %s, ratio %.2f without, %.2f with; GB/s of values, fastest of %d\n", field, rel,
         zc_simd_name(zc_simd_get()), n * 4.0 / size[0], n * 4.0 / size[1], reps);
  for (int j = 0; j < 3; j++)
    printf("  %-10s %6.2f -> %6.2f GB/s (%+.1f%% time)\n", what[j], n * 4 / t[j][0] / 1e9, n * 4 / t[j][1] / 1e9,
           100 * (t[j][1] / t[j][0] - 1));
  zccl_data_free(&d);
  return 0;
}
