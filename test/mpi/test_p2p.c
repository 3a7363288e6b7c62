/* Communicators of several processes, started by mpirun or srun (no MPI
 * calls: rank and size come from the launcher's environment, the ranks meet
 * through zccl's own bootstrap):
 *
 *   test_p2p pmix-env        ZCCL_BOOTSTRAP=pmix, no id shared at all
 *   test_p2p id-file FILE    rank 0 writes zcclGetUniqueId's id to FILE, the
 *                            others read it (TCP root, or PMIx when the
 *                            communicator spans the job and ZCCL_BOOTSTRAP=auto)
 *   test_p2p singleton       no launcher: a 1-rank communicator
 *
 * then point-to-point of every size class and datatype around a ring, many
 * concurrent messages in a group, mismatched sizes, split, and creating and
 * destroying communicators in a loop. Add `big` to send 256 MiB between
 * ranks 0 and 1. Every element is checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static int rank, nranks;

static int env_int(const char* name, int def) {
  const char* v = getenv(name);
  return v ? atoi(v) : def;
}

static size_t dtype_size(zcclDataType_t t) {
  switch (t) {
    case zcclInt8: case zcclUint8: case zcclFloat8e4m3: case zcclFloat8e5m2: return 1;
    case zcclFloat16: case zcclBfloat16: return 2;
    case zcclInt32: case zcclUint32: case zcclFloat32: return 4;
    default: return 8;
  }
}

/* The byte pattern rank src sends in message k: every byte depends on all. */
static void fill(uint8_t* p, size_t bytes, int src, int dst, int k) {
  uint32_t x = 2166136261u ^ ((uint32_t)src * 7919u + (uint32_t)dst * 104729u + (uint32_t)k * 15485863u);
  for (size_t i = 0; i < bytes; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (uint8_t)x;
  }
}

static long mismatches(const uint8_t* p, size_t bytes, int src, int dst, int k) {
  uint8_t* want = malloc(bytes ? bytes : 1);
  fill(want, bytes, src, dst, k);
  long bad = 0;
  for (size_t i = 0; i < bytes; i++) bad += p[i] != want[i];
  free(want);
  return bad;
}

static zcclResult_t get_comm(const char* mode, const char* file, zcclComm_t* comm) {
  zcclUniqueId id;
  memset(&id, 0, sizeof id);
  if (strcmp(mode, "id-file") == 0) {
    if (rank == 0) {
      zcclResult_t r = zcclGetUniqueId(&id);
      if (r != zcclSuccess) return r;
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s.tmp", file);
      FILE* f = fopen(tmp, "wb");
      if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, file) != 0) {
        fprintf(stderr, "cannot write %s\n", file);
        return zcclSystemError;
      }
    } else {
      for (int tries = 0;; tries++) { /* rank 0 writes it: wait, bounded */
        FILE* f = fopen(file, "rb");
        if (f && fread(&id, sizeof id, 1, f) == 1) {
          fclose(f);
          break;
        }
        if (f) fclose(f);
        if (tries > 3000) {
          fprintf(stderr, "rank %d: %s never appeared\n", rank, file);
          return zcclSystemError;
        }
        usleep(10000);
      }
    }
  }
  return zcclCommInitRank(comm, nranks, id, rank);
}

static const zcclDataType_t all_types[] = {zcclInt8,    zcclUint8,   zcclInt32,     zcclUint32,
                                           zcclInt64,   zcclUint64,  zcclFloat16,   zcclFloat32,
                                           zcclFloat64, zcclBfloat16, zcclFloat8e4m3, zcclFloat8e5m2};

/* Each rank sends to its right neighbour and receives from its left. */
static void test_ring(zcclComm_t comm) {
  const size_t counts[] = {0, 1, 4095, 4096, (1u << 20) + 7};
  int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  int k = 0;
  for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++) {
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++, k++) {
      zcclDataType_t dt = all_types[t];
      /* The biggest size in two types is enough; every type gets the rest. */
      if (counts[c] > 4096 && dt != zcclFloat32 && dt != zcclInt8) continue;
      size_t bytes = counts[c] * dtype_size(dt);
      uint8_t* s = malloc(bytes + 1);
      uint8_t* r = malloc(bytes + 1);
      fill(s, bytes, rank, right, k);
      memset(r, 0xee, bytes + 1);
      CHECK_RES(zcclGroupStart(), zcclSuccess);
      CHECK_RES(zcclSend(s, counts[c], dt, right, comm, NULL), zcclSuccess);
      CHECK_RES(zcclRecv(r, counts[c], dt, left, comm, NULL), zcclSuccess);
      CHECK_RES(zcclGroupEnd(), zcclSuccess);
      long bad = mismatches(r, bytes, left, rank, k);
      if (bad) fprintf(stderr, "rank %d: type %d count %zu: %ld wrong bytes\n", rank, (int)dt, counts[c], bad);
      CHECK(bad == 0);
      CHECK(r[bytes] == 0xee); /* nothing past the end */
      free(s);
      free(r);
    }
  }
  /* Without a group, an ordered exchange: even ranks send first. */
  if (nranks % 2 == 0) {
    uint8_t s[64], r[64];
    fill(s, sizeof s, rank, rank ^ 1, 999);
    if (rank % 2 == 0) {
      CHECK_RES(zcclSend(s, 64, zcclUint8, rank ^ 1, comm, NULL), zcclSuccess);
      CHECK_RES(zcclRecv(r, 64, zcclUint8, rank ^ 1, comm, NULL), zcclSuccess);
    } else {
      CHECK_RES(zcclRecv(r, 64, zcclUint8, rank ^ 1, comm, NULL), zcclSuccess);
      CHECK_RES(zcclSend(s, 64, zcclUint8, rank ^ 1, comm, NULL), zcclSuccess);
    }
    CHECK(mismatches(r, 64, rank ^ 1, rank, 999) == 0);
  }
}

/* K messages of different sizes to and from every peer, all in one group,
 * calls interleaved differently on every rank: they still pair in order. */
static void test_many(zcclComm_t comm) {
  enum { K = 24 };
  int n = nranks;
  uint8_t** sbuf = calloc((size_t)n * K, sizeof *sbuf);
  uint8_t** rbuf = calloc((size_t)n * K, sizeof *rbuf);
  size_t* sz = calloc((size_t)n * n * K, sizeof *sz);
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++)
      for (int k = 0; k < K; k++) sz[((size_t)a * n + b) * K + k] = (size_t)((a * 31 + b * 17 + k * 977) % 20000);
  /* A per-rank shuffle of (peer, k, send/recv), keeping k order per pair. */
  int total = 2 * n * K, *order = malloc(sizeof(int) * (size_t)total);
  for (int i = 0; i < total; i++) order[i] = i;
  uint32_t x = 12345u + (uint32_t)rank * 777u;
  for (int i = total - 1; i > 0; i--) {
    x = x * 1103515245u + 12345u;
    int j = (int)((x >> 8) % (uint32_t)(i + 1)), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  int* next = calloc((size_t)2 * n, sizeof(int)); /* next k per (peer, dir) */
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  for (int i = 0; i < total; i++) {
    int peer = (order[i] / 2) % n, dir = order[i] % 2;
    int k = next[2 * peer + dir]++;
    if (dir == 0) {
      size_t bytes = sz[((size_t)rank * n + peer) * K + k];
      uint8_t* s = sbuf[peer * K + k] = malloc(bytes + 1);
      fill(s, bytes, rank, peer, 5000 + k);
      CHECK_RES(zcclSend(s, bytes, zcclUint8, peer, comm, NULL), zcclSuccess);
    } else {
      size_t bytes = sz[((size_t)peer * n + rank) * K + k];
      uint8_t* r = rbuf[peer * K + k] = malloc(bytes + 1);
      CHECK_RES(zcclRecv(r, bytes, zcclUint8, peer, comm, NULL), zcclSuccess);
    }
  }
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  long bad = 0;
  for (int peer = 0; peer < n; peer++)
    for (int k = 0; k < K; k++) {
      long b = mismatches(rbuf[peer * K + k], sz[((size_t)peer * n + rank) * K + k], peer, rank, 5000 + k);
      if (b) {
        uint8_t want[8];
        fill(want, 8, peer, rank, 5000 + k);
        const uint8_t* g = rbuf[peer * K + k];
        fprintf(stderr, "rank %d: message %d from rank %d (%zu bytes): %ld wrong: got %02x%02x%02x%02x want %02x%02x%02x%02x\n", rank, k, peer,
                     sz[((size_t)peer * n + rank) * K + k], b, g[0], g[1], g[2], g[3], want[0], want[1], want[2], want[3]);
      }
      bad += b;
    }
  CHECK(bad == 0);
  for (int i = 0; i < n * K; i++) free(sbuf[i]), free(rbuf[i]);
  free(sbuf), free(rbuf), free(sz), free(order), free(next);
}

/* Rank 0 sends 1000 floats, rank 1 posts 10: rank 1 gets an error naming
 * both sizes and nothing is written past its buffer; then the other way
 * round; the communicator still works afterwards. */
static void test_mismatch(zcclComm_t comm) {
  if (rank > 1) return;
  float big[1000], small[10 + 1];
  for (int i = 0; i < 1000; i++) big[i] = (float)i;
  small[10] = -7.0f;
  if (rank == 0) {
    CHECK_RES(zcclSend(big, 1000, zcclFloat32, 1, comm, NULL), zcclSuccess);
    CHECK_RES(zcclSend(big, 10, zcclFloat32, 1, comm, NULL), zcclSuccess);
  } else {
    CHECK_RES(zcclRecv(small, 10, zcclFloat32, 0, comm, NULL), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("10 x float32 (40 bytes)");
    CHECK_LAST_ERROR_HAS("sent 4000 bytes");
    CHECK(small[10] == -7.0f);
    CHECK_RES(zcclRecv(big, 1000, zcclFloat32, 0, comm, NULL), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("sent 40 bytes");
  }
  /* In a group: the mismatch is reported, the group's other message still
   * arrives. */
  int tail_out = 4242, tail_in = 0;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  if (rank == 0) {
    CHECK_RES(zcclSend(big, 1000, zcclFloat32, 1, comm, NULL), zcclSuccess);
    CHECK_RES(zcclSend(&tail_out, 1, zcclInt32, 1, comm, NULL), zcclSuccess);
    CHECK_RES(zcclGroupEnd(), zcclSuccess);
  } else {
    CHECK_RES(zcclRecv(small, 10, zcclFloat32, 0, comm, NULL), zcclSuccess);
    CHECK_RES(zcclRecv(&tail_in, 1, zcclInt32, 0, comm, NULL), zcclSuccess);
    CHECK_RES(zcclGroupEnd(), zcclInvalidUsage);
    CHECK_LAST_ERROR_HAS("sent 4000 bytes");
    CHECK(tail_in == 4242);
    CHECK(small[10] == -7.0f);
  }
  zcclResult_t async;
  CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclSuccess);
  CHECK(async == zcclSuccess);
  /* Still in step. */
  float v = (float)rank, w = -1;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(&v, 1, zcclFloat32, 1 - rank, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(&w, 1, zcclFloat32, 1 - rank, comm, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK(w == (float)(1 - rank));
}

/* A ring in sub: each rank sends its parent rank to the right; returns what
 * came from the left (its rank and size in sub through sr, sn). */
static int sub_ring(zcclComm_t sub, int* sr, int* sn) {
  int out = rank, in = -1;
  *sr = -1, *sn = -1;
  CHECK_RES(zcclCommUserRank(sub, sr), zcclSuccess);
  CHECK_RES(zcclCommCount(sub, sn), zcclSuccess);
  if (*sn < 1) return in;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(&out, 1, zcclInt32, (*sr + 1) % *sn, sub, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(&in, 1, zcclInt32, (*sr + *sn - 1) % *sn, sub, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  return in;
}

/* Odd and even ranks in two communicators, ranks reversed by key; the
 * last rank (when there are 3 or more) takes no color. */
static void test_split(zcclComm_t comm) {
  int color = rank % 2;
  if (nranks >= 3 && rank == nranks - 1) color = ZCCL_SPLIT_NOCOLOR;
  zcclComm_t sub = (zcclComm_t)1;
  CHECK_RES(zcclCommSplit(comm, color, -rank, &sub, NULL), zcclSuccess);
  if (color == ZCCL_SPLIT_NOCOLOR) {
    CHECK(sub == NULL);
    return;
  }
  int members = 0, before = 0, order[nranks]; /* the members' parent ranks in the new order */
  for (int r = nranks - 1; r >= 0; r--) {
    int c = (nranks >= 3 && r == nranks - 1) ? ZCCL_SPLIT_NOCOLOR : r % 2;
    if (c != color) continue;
    order[members++] = r;
    before += r > rank; /* larger parent rank = smaller key = earlier */
  }
  int sr, sn, in = sub_ring(sub, &sr, &sn);
  CHECK(sn == members);
  CHECK(sr == before);
  /* the left neighbour's parent rank (index guarded: sn and sr checked above) */
  CHECK(sn == members && sr >= 0 && sr < sn && in == order[(sr + sn - 1) % sn]);
  CHECK_RES(zcclCommDestroy(sub), zcclSuccess);
}

static void test_big(zcclComm_t comm) {
  if (rank > 1 || nranks < 2) return;
  size_t bytes = (size_t)256 << 20;
  uint8_t* s = malloc(bytes);
  uint8_t* r = malloc(bytes);
  fill(s, bytes, rank, 1 - rank, 77);
  memset(r, 0, bytes);
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(s, bytes, zcclUint8, 1 - rank, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(r, bytes, zcclUint8, 1 - rank, comm, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK(mismatches(r, bytes, 1 - rank, rank, 77) == 0);
  free(s);
  free(r);
}

/* A rank that cannot set up its part of a split (here an invalid
 * ZCCL_TIMEOUT, read when the new communicator starts) still takes part in
 * the exchange: it fails at once, the others of its color fail with a
 * message naming it (not after their timeout), another color's
 * communicator works, and so does the parent. */
static void test_split_failure(zcclComm_t comm) {
  int color = rank % 2;
  char keep[64] = "";
  const char* old = getenv("ZCCL_TIMEOUT");
  if (old) snprintf(keep, sizeof keep, "%s", old);
  if (rank == 1) setenv("ZCCL_TIMEOUT", "0", 1);
  zcclComm_t sub = (zcclComm_t)1;
  zcclResult_t r = zcclCommSplit(comm, color, rank, &sub, NULL);
  if (rank == 1) {
    if (keep[0]) setenv("ZCCL_TIMEOUT", keep, 1);
    else unsetenv("ZCCL_TIMEOUT");
  }
  if (color == 1) {
    CHECK_RES(r, zcclInvalidArgument);
    CHECK(sub == NULL);
    if (rank != 1) CHECK_LAST_ERROR_HAS("rank 1 of the parent could not set up");
  } else {
    CHECK_RES(r, zcclSuccess);
    if (r == zcclSuccess) {
      int sr, sn, w = sub_ring(sub, &sr, &sn);
      CHECK(sn >= 1 && w == 2 * ((sr + sn - 1) % sn)); /* even ranks, in order */
      CHECK_RES(zcclCommDestroy(sub), zcclSuccess);
    }
  }
  test_ring(comm); /* the parent is unharmed */
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "pmix-env";
  const char* file = argc > 2 ? argv[2] : "";
  int big = argc > 3 && strcmp(argv[3], "big") == 0;
  rank = env_int("OMPI_COMM_WORLD_RANK", env_int("SLURM_PROCID", 0));
  nranks = env_int("OMPI_COMM_WORLD_SIZE", env_int("SLURM_NTASKS", 1));
  if (strcmp(mode, "singleton") == 0) {
    CHECK(getenv("OMPI_COMM_WORLD_SIZE") == NULL && getenv("SLURM_NTASKS") == NULL);
    setenv("ZCCL_BOOTSTRAP", "pmix", 1); /* singleton: PMIx says 1 process */
  }
  zcclComm_t comm = NULL;
  CHECK_RES(get_comm(mode, file, &comm), zcclSuccess);
  if (comm == NULL) TEST_DONE();
  int r = -1, n = -1;
  CHECK_RES(zcclCommUserRank(comm, &r), zcclSuccess);
  CHECK_RES(zcclCommCount(comm, &n), zcclSuccess);
  CHECK(r == rank && n == nranks);

  test_ring(comm);
  test_many(comm);
  if (nranks >= 2) test_mismatch(comm);
  if (nranks >= 2) test_split(comm);
  if (nranks >= 2) test_split_failure(comm);
  if (big) test_big(comm);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);

  /* Creating and destroying again and again (PMIx bootstrap only: the id
   * file is written once). */
  if (strcmp(mode, "pmix-env") == 0) {
    for (int i = 0; i < 20; i++) {
      zcclComm_t c = NULL;
      CHECK_RES(get_comm(mode, file, &c), zcclSuccess);
      int v = rank, w = -1, right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
      CHECK_RES(zcclGroupStart(), zcclSuccess);
      CHECK_RES(zcclSend(&v, 1, zcclInt32, right, c, NULL), zcclSuccess);
      CHECK_RES(zcclRecv(&w, 1, zcclInt32, left, c, NULL), zcclSuccess);
      CHECK_RES(zcclGroupEnd(), zcclSuccess);
      CHECK(w == left);
      CHECK_RES(zcclCommDestroy(c), zcclSuccess);
    }
  }
  if (test_failures) fprintf(stderr, "rank %d: %d of %d checks failed\n", rank, test_failures, test_checks);
  TEST_DONE();
}
