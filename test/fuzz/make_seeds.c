/* Writes the seed streams of fuzz/corpus/{decompress,hop,rle}: run from test/fuzz
 * as build/test/make_seeds after a format change, then commit the files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zc_rle.h"
#include "zc_szp.h"
static size_t make(uint8_t* out, int kind, size_t n, zcclDataType_t dt, int fill, unsigned lg) {
  double* x = malloc(n * 8); float* xf = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    double v = kind == 0 ? sin(i * 0.05) * 10 : kind == 1 ? (i % 7 == 0 ? NAN : i % 5 == 0 ? -1e34 : i * 0.3) : (rand() % 1000) * 0.01;
    x[i] = v; xf[i] = (float)v;
  }
  zc_params_t p = {dt, 1e-2, fill, -1e34, lg, 0};
  size_t size; zc_compress(&p, dt == zcclFloat32 ? (void*)xf : (void*)x, n, out, zc_compress_bound(n, dt, lg), &size, 0, 0);
  free(x); free(xf); return size;
}
int main(void) {
  static uint8_t a[1 << 20], b[1 << 20];
  char path[256]; int k = 0;
  for (int kind = 0; kind < 3; kind++) for (int dt = 0; dt < 2; dt++) {
    zcclDataType_t t = dt ? zcclFloat64 : zcclFloat32;
    size_t n = kind == 2 ? 100 : 300;
    size_t an = make(a, kind, n, t, kind == 1, 6);
    snprintf(path, sizeof path, "corpus/decompress/s%d", k);
    FILE* f = fopen(path, "wb"); fwrite(a, 1, an, f); fclose(f);
    size_t bn = make(b, (kind + 1) % 3, n, t, kind == 1, 6);
    snprintf(path, sizeof path, "corpus/hop/h%d", k++);
    f = fopen(path, "wb"); uint8_t op = (uint8_t)kind; uint32_t al = (uint32_t)an;
    fwrite(&op, 1, 1, f); fwrite(&al, 4, 1, f); fwrite(a, 1, an, f); fwrite(b, 1, bn, f); fclose(f);
  }
  { /* RLE: float32 with runs, float64 with lone negative zeros; first byte = op */
    float xf[200];
    double xd[50];
    for (int i = 0; i < 200; i++) xf[i] = i % 9 < 5 ? 0.0f : (float)i;
    for (int i = 0; i < 50; i++) xd[i] = i % 4 == 0 ? -0.0 : i * 0.5;
    size_t rn;
    zc_rle_encode(zcclFloat32, xf, 200, a + 1, sizeof a - 1, &rn);
    a[0] = 0;
    FILE* f = fopen("corpus/rle/r0", "wb"); fwrite(a, 1, rn + 1, f); fclose(f);
    zc_rle_encode(zcclFloat64, xd, 50, a + 1, sizeof a - 1, &rn);
    a[0] = 2;
    f = fopen("corpus/rle/r1", "wb"); fwrite(a, 1, rn + 1, f); fclose(f);
  }
  return 0;
}
