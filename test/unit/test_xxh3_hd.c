/* zc_xxh3.h, the CUDA kernels' XXH3-64 (chunk checksums, docs/format.md),
 * must give libxxhash's XXH3_64bits_withSeed for every length path (0,
 * 1-3, 4-8, 9-16, 17-128, 129-240, and the long one with its block and
 * partial-block edges), any seed (0, small, the chunk seeds' wrap near
 * 2^64) and any alignment; and its lanes, each run on its own as the
 * kernels' threads run them, must merge to the same hash. */
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "test_util.h"
#include "zc_xxh3.h"

static int check_one(const uint8_t* p, size_t n, uint64_t seed) {
  const uint64_t want = XXH3_64bits_withSeed(p, n, seed), got = zc_xxh3_64(p, n, seed);
  if (want != got) {
    fprintf(stderr, "length %zu seed 0x%016llx: libxxhash 0x%016llx, zc_xxh3_64 0x%016llx\n", n,
            (unsigned long long)seed, (unsigned long long)want, (unsigned long long)got);
    return 1;
  }
  if (n > ZC_XXH3_MIDSIZE_MAX) { /* lanes in reverse order, as separate threads would finish them */
    uint64_t acc[ZC_XXH3_LANES];
    for (int i = ZC_XXH3_LANES - 1; i >= 0; i--) acc[i] = zc_xxh3_lane(p, n, seed, (unsigned)i);
    if (zc_xxh3_merge(acc, n, seed) != want) {
      fprintf(stderr, "length %zu: the lanes merge to another hash\n", n);
      return 1;
    }
  }
  return 0;
}

int main(void) {
  enum { MAX = 70000 };
  uint8_t* buf = malloc(MAX + 16);
  uint64_t rng = 0x243f6a8885a308d3ull;
  for (size_t i = 0; i < MAX + 16; i++) buf[i] = (uint8_t)test_xorshift(&rng);
  const uint64_t seeds[] = {0, 1, 0x9e3779b97f4a7c15ull, UINT64_MAX, UINT64_MAX - 3, 0xffffffffull};
  int bad = 0;
  /* every length through three long blocks and a bit, every seed */
  for (size_t n = 0; n <= 3 * 1024 + 200 && bad < 10; n++)
    for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) bad += check_one(buf + (n % 7), n, seeds[s]);
  /* random lengths up to the largest chunk (2^16 float64 values compress to
   * under 70,000 bytes here), random seeds and offsets */
  for (int t = 0; t < 400 && bad < 10; t++) {
    size_t n = (size_t)(test_xorshift(&rng) % MAX), off = (size_t)(test_xorshift(&rng) % 16);
    bad += check_one(buf + off, n, test_xorshift(&rng));
  }
  /* block edges exactly: a multiple of 1024 and one either side */
  for (size_t b = 1; b <= 64 && bad < 10; b++)
    for (int d = -1; d <= 1; d++) bad += check_one(buf, 1024 * b + (size_t)d, 77 + b);
  CHECK(bad == 0);
  free(buf);
  TEST_DONE();
}
