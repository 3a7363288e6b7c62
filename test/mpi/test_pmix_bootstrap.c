/* The PMIx bootstrap, pure PMIx (no MPI calls), under mpirun -np 2/4/8: rank
 * and size agree with the launcher's OMPI_COMM_WORLD_* variables; successive
 * allgathers with different keys and lengths (and one in place) return every
 * rank's bytes; a rank that publishes under another key or another length is
 * named in a prompt error, after which the job can still bootstrap; a rank
 * that never arrives is a time-out error; init and finalize are refcounted.
 * With the argument `singleton`, run without a launcher: rank 0 of 1 at once,
 * PMIx untouched, allgather copies. */
#include <pmix.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "zb_bootstrap.h"
#include "zu_time.h"

/* Rank r's distinct bytes for round `round`. */
static uint8_t pattern(int r, int round, size_t i) { return (uint8_t)(r * 131 + round * 17 + (int)i * 7 + 1); }

static void fill(uint8_t* buf, int r, int round, size_t len) {
  for (size_t i = 0; i < len; i++) buf[i] = pattern(r, round, i);
}

/* table holds every rank's pattern for the round. */
static int table_ok(const uint8_t* table, int size, int round, size_t len) {
  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < len; i++)
      if (table[(size_t)r * len + i] != pattern(r, round, i)) {
        fprintf(stderr, "round %d: rank %d's byte %zu is %u, expected %u\n", round, r, i,
                table[(size_t)r * len + i], pattern(r, round, i));
        return 0;
      }
  return 1;
}

/* One allgather of len bytes under key; checks the table on success. */
static zcclResult_t gather(const char* key, int rank, int size, int round, size_t len, double timeout) {
  uint8_t* blob = malloc(len);
  uint8_t* table = malloc((size_t)size * len);
  fill(blob, rank, round, len);
  memset(table, 0xee, (size_t)size * len);
  zcclResult_t res = zb_pmix_allgather(key, blob, len, table, timeout);
  if (res == zcclSuccess) CHECK(table_ok(table, size, round, len));
  free(blob);
  free(table);
  return res;
}

static int singleton(void) {
  CHECK(!zb_pmix_launched(NULL, NULL)); /* run it without mpirun */
  uint8_t blob[32], table[32];
  fill(blob, 0, 1, sizeof blob);
  CHECK_RES(zb_pmix_allgather("k", blob, sizeof blob, table, 5), zcclInternalError); /* before init */

  int rank = -1, size = -1, single = -1;
  double t0 = zu_now();
  CHECK_RES(zb_pmix_init(&rank, &size, &single), zcclSuccess);
  CHECK(zu_now() - t0 < 1.0);
  CHECK(single == 1 && rank == 0 && size == 1);
  CHECK(!PMIx_Initialized()); /* a later MPI_Init must find PMIx untouched */
  CHECK_RES(zb_pmix_init(&rank, &size, &single), zcclSuccess);
  CHECK(single == 1 && rank == 0 && size == 1);

  memset(table, 0, sizeof table);
  CHECK_RES(zb_pmix_allgather("zb-single-a", blob, sizeof blob, table, 5), zcclSuccess);
  CHECK(memcmp(table, blob, sizeof blob) == 0);
  fill(blob, 0, 2, 7);
  memset(table, 0, sizeof table);
  CHECK_RES(zb_pmix_allgather("zb-single-b", blob, 7, table, 5), zcclSuccess);
  CHECK(memcmp(table, blob, 7) == 0 && table[7] == 0);
  CHECK_RES(zb_pmix_allgather("zb-single-c", blob, 7, table, 0), zcclInvalidArgument);
  CHECK_RES(zb_pmix_allgather("", blob, 7, table, 5), zcclInternalError);

  zb_pmix_finalize();
  CHECK_RES(zb_pmix_allgather("zb-single-d", blob, 7, table, 5), zcclSuccess); /* one reference left */
  zb_pmix_finalize();
  CHECK_RES(zb_pmix_allgather("zb-single-e", blob, 7, table, 5), zcclInternalError);
  zb_pmix_finalize(); /* unbalanced: ignored */
  TEST_DONE();
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "singleton") == 0) return singleton();

  const char* env_rank = getenv("OMPI_COMM_WORLD_RANK");
  const char* env_size = getenv("OMPI_COMM_WORLD_SIZE");
  if (!env_rank || !env_size) {
    fprintf(stderr, "run under mpirun (or pass `singleton`)\n");
    return 1;
  }
  int rank = -1, size = -1, single = -1;
  CHECK_RES(zb_pmix_init(&rank, &size, &single), zcclSuccess);
  CHECK(single == 0);
  CHECK(rank == atoi(env_rank));
  CHECK(size == atoi(env_size));
  CHECK(size >= 2);
  int rank2 = -1, size2 = -1, single2 = -1;
  CHECK_RES(zb_pmix_init(&rank2, &size2, &single2), zcclSuccess); /* second reference */
  CHECK(rank2 == rank && size2 == size && single2 == 0);
  if (test_failures) {
    fprintf(stderr, "rank %s: init failed, stopping\n", env_rank);
    return 1;
  }

  /* Different keys, different lengths: each table holds this round's bytes. */
  CHECK_RES(gather("zb-test-a", rank, size, 1, 40, 30), zcclSuccess);
  CHECK_RES(gather("zb-test-b", rank, size, 2, 1000, 30), zcclSuccess);

  /* In place: the blob is already this rank's slot of the table. */
  uint8_t* inplace = calloc((size_t)size, 8);
  fill(inplace + (size_t)rank * 8, rank, 3, 8);
  CHECK_RES(zb_pmix_allgather("zb-test-inplace", inplace + (size_t)rank * 8, 8, inplace, 30), zcclSuccess);
  CHECK(table_ok(inplace, size, 3, 8));
  free(inplace);

  /* The last rank publishes under another key (another unique id): everyone
   * still meets in the fence, and every rank's error names a rank that did not
   * publish its key, long before the time-out. */
  int odd = size - 1;
  double t0 = zu_now();
  zcclResult_t res = gather(rank == odd ? "zb-test-other" : "zb-test-c", rank, size, 4, 16, 30);
  double took = zu_now() - t0;
  CHECK_RES(res, zcclInvalidUsage);
  CHECK(took < 5.0);
  CHECK_LAST_ERROR_HAS("published nothing under");
  CHECK_LAST_ERROR_HAS("did every rank pass the same unique id?");
  char who[32];
  snprintf(who, sizeof who, "rank %d of %d", rank == odd ? 0 : odd, size);
  CHECK_LAST_ERROR_HAS(who);
  if (rank == 0) printf("missing key: error in %.3f s: %s\n", took, zcclGetLastError(NULL));

  /* Rank 0 publishes a different length. */
  res = gather("zb-test-len", rank, size, 5, rank == 0 ? 16 : 24, 30);
  CHECK_RES(res, zcclInvalidUsage);
  snprintf(who, sizeof who, "rank %d of %d published %d bytes", rank == 0 ? 1 : 0, size, rank == 0 ? 24 : 16);
  CHECK_LAST_ERROR_HAS(who);

  /* Those errors left the fences paired: the job still bootstraps. */
  zb_pmix_finalize(); /* drops the second reference only */
  CHECK(PMIx_Initialized());
  CHECK_RES(gather("zb-test-d", rank, size, 6, 64, 30), zcclSuccess);

  /* Last, because a timed-out fence leaves the fences unpaired: the last rank
   * stays away (long enough for the others to give up), the others time out. */
  if (rank == odd) {
    sleep(5);
  } else {
    t0 = zu_now();
    res = gather("zb-test-late", rank, size, 7, 16, 2);
    took = zu_now() - t0;
    CHECK_RES(res, zcclRemoteError);
    CHECK_LAST_ERROR_HAS("not every rank reached the fence");
    CHECK(took > 1.5 && took < 4.5);
    if (rank == 0) printf("absent rank: error in %.3f s: %s\n", took, zcclGetLastError(NULL));
  }

  zb_pmix_finalize();
  CHECK(!PMIx_Initialized());
  printf("rank %d of %d: ", rank, size);
  TEST_DONE();
}
