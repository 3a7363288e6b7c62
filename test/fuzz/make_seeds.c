/* Writes the seed streams of fuzz/corpus/{decompress,header,hop,rle}: run from test/fuzz
 * as build/test/make_seeds after a format change, then commit the files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zc_rle.h"
#include "zc_szp.h"
static size_t make_sum(uint8_t* out, int kind, size_t n, zcclDataType_t dt, int fill, unsigned lg, int checksum) {
  double* x = malloc(n * 8); float* xf = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    double v = kind == 0 ? sin(i * 0.05) * 10 : kind == 1 ? (i % 7 == 0 ? NAN : i % 5 == 0 ? -1e34 : i * 0.3) : (rand() % 1000) * 0.01;
    x[i] = v; xf[i] = (float)v;
  }
  zc_params_t p = {dt, 1e-2, fill, -1e34, lg, checksum};
  size_t size; zc_compress(&p, dt == zcclFloat32 ? (void*)xf : (void*)x, n, out, zc_compress_bound(n, dt, lg), &size, 0, 0);
  free(x); free(xf); return size;
}
static size_t make(uint8_t* out, int kind, size_t n, zcclDataType_t dt, int fill, unsigned lg) {
  return make_sum(out, kind, n, dt, fill, lg, 0);
}
static void put(const char* path, const void* s, size_t n) {
  FILE* f = fopen(path, "wb"); fwrite(s, 1, n, f); fclose(f);
}
/* A bare header: count values, 2^lg per chunk, nchunks chunks (issue 35's
 * wrap: 2^64 - 1 values "in 0 chunks"). */
static void bare(const char* path, uint64_t count, unsigned lg, uint32_t nchunks) {
  uint8_t s[ZC_HEADER_BYTES] = {'Z', 'C', 'C', 'S', 1, 1, 0, (uint8_t)lg};
  double eb = 1e-3; uint32_t one = 1;
  memcpy(s + 8, &count, 8); memcpy(s + 16, &eb, 8); memcpy(s + 32, &nchunks, 4); memcpy(s + 36, &one, 4);
  put(path, s, sizeof s);
}
static void header_seeds(uint8_t* a) {
  bare("corpus/header/wrap_count_max_lg5", UINT64_MAX, 5, 0);
  bare("corpus/header/wrap_count_lg16", UINT64_MAX - 65534, 16, 0);
  bare("corpus/header/empty", 0, 12, 0);
  /* checksummed: count one more, into the last block's padding and past the chunks */
  size_t an = make_sum(a, 0, 95, zcclFloat32, 0, 5, 1);
  put("corpus/header/sum_valid", a, an);
  uint64_t c = 96; memcpy(a + 8, &c, 8);
  put("corpus/header/sum_count_into_padding", a, an);
  an = make_sum(a, 0, 64, zcclFloat32, 0, 5, 1);
  c = 65; memcpy(a + 8, &c, 8);
  put("corpus/header/sum_count_past_chunks", a, an);
  an = make_sum(a, 1, 300, zcclFloat64, 1, 6, 0);
  put("corpus/header/plain_fill", a, an);
  an = make_sum(a, 1, 300, zcclFloat64, 1, 6, 1);
  put("corpus/header/sum_fill", a, an);
  put("corpus/decompress/c0", a, an);
  { /* a hop of two checksummed streams: op byte, a's size, a, b */
    static uint8_t h[1 << 16];
    size_t bn = make_sum(h + 5 + an, 2, 300, zcclFloat64, 1, 6, 1);
    uint32_t al = (uint32_t)an;
    h[0] = 0; memcpy(h + 1, &al, 4); memcpy(h + 5, a, an);
    put("corpus/hop/c0", h, 5 + an + bn);
  }
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
  header_seeds(a); /* last: its rand() calls leave the seeds above as they were */
  return 0;
}
