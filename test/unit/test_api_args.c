/* API argument validation: every bad argument gets zcclInvalidArgument with
 * a message naming it; calls that cannot work yet get zcclInvalidUsage;
 * waits that cannot end well end with an error;
 * nothing crashes and nothing pretends to succeed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static zcclUniqueId zero_id;

static void test_init_args(void) {
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(NULL, 1, zero_id, 0), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("comm is NULL");
  CHECK_RES(zcclCommInitRank(&comm, 0, zero_id, 0), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("nranks=0");
  CHECK_RES(zcclCommInitRank(&comm, -3, zero_id, 0), zcclInvalidArgument);
  CHECK_RES(zcclCommInitRank(&comm, 2, zero_id, 2), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("rank=2 is outside");
  CHECK_RES(zcclCommInitRank(&comm, 2, zero_id, -1), zcclInvalidArgument);
  CHECK(comm == NULL);

  /* A multi-rank communicator with an id not from zcclGetUniqueId. */
  CHECK_RES(zcclCommInitRank(&comm, 2, zero_id, 0), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("not made by zcclGetUniqueId");
  /* With a real id, and the other rank never coming: a bounded wait, then
   * an error that says why. */
  setenv("ZCCL_BOOTSTRAP_TIMEOUT", "2", 1);
  zcclUniqueId id;
  CHECK_RES(zcclGetUniqueId(NULL), zcclInvalidArgument);
  CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  zcclUniqueId id2;
  CHECK_RES(zcclGetUniqueId(&id2), zcclSuccess);
  CHECK(memcmp(&id, &id2, sizeof id) != 0); /* fresh secret each time */
  CHECK_RES(zcclCommInitRank(&comm, 2, id, 1), zcclRemoteError);
  CHECK_LAST_ERROR_HAS("ZCCL_BOOTSTRAP_TIMEOUT");
  CHECK(comm == NULL);
  unsetenv("ZCCL_BOOTSTRAP_TIMEOUT");

  /* Config header and fields. */
  zcclConfig_t cfg = ZCCL_CONFIG_INITIALIZER;
  cfg.magic = 0;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_CONFIG_INITIALIZER");
  zcclConfig_t cfg2 = ZCCL_CONFIG_INITIALIZER;
  cfg2.blocking = 7;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg2), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("blocking");
  zcclConfig_t cfg3 = ZCCL_CONFIG_INITIALIZER;
  cfg3.compression.codec = zcclCodecHz;
  cfg3.compression.eb = -1.0;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg3), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("eb=-1");
  cfg3.compression.eb = 1e-3;
  cfg3.compression.codec = 42;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg3), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("invalid codec 42");
  CHECK(comm == NULL);
}

static void test_singleton(void) {
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  CHECK(comm != NULL);
  int n = -1, r = -1, dev = -2;
  CHECK_RES(zcclCommCount(comm, &n), zcclSuccess);
  CHECK(n == 1);
  CHECK_RES(zcclCommUserRank(comm, &r), zcclSuccess);
  CHECK(r == 0);
  CHECK_RES(zcclCommCuDevice(comm, &dev), zcclSuccess);
  CHECK(dev >= -1);
  CHECK_RES(zcclCommCount(comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommUserRank(comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommCuDevice(comm, NULL), zcclInvalidArgument);
  /* Device memory: argument errors always; without a device, a clear
   * zcclInvalidUsage rather than a crash (with one, a real allocation). */
  void* mem = (void*)&n;
  CHECK_RES(zcclMemAlloc(NULL, 64), zcclInvalidArgument);
  CHECK_RES(zcclMemAlloc(&mem, 0), zcclInvalidArgument);
  CHECK(mem == NULL);
  CHECK_RES(zcclMemFree(NULL), zcclSuccess);
  if (dev < 0) {
    CHECK_RES(zcclMemAlloc(&mem, 64), zcclInvalidUsage);
    CHECK(mem == NULL);
  } else {
    CHECK_RES(zcclMemAlloc(&mem, 64), zcclSuccess);
    CHECK(mem != NULL);
    CHECK_RES(zcclMemFree(mem), zcclSuccess);
  }
  zcclResult_t async = zcclInternalError;
  CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclSuccess);
  CHECK(async == zcclSuccess);
  CHECK_RES(zcclCommGetAsyncError(comm, NULL), zcclInvalidArgument);

  /* Split: NOCOLOR gives NULL, a color gives a new 1-rank comm. */
  zcclComm_t sub = (zcclComm_t)(uintptr_t)1;
  CHECK_RES(zcclCommSplit(comm, ZCCL_SPLIT_NOCOLOR, 0, &sub, NULL), zcclSuccess);
  CHECK(sub == NULL);
  CHECK_RES(zcclCommSplit(comm, -5, 0, &sub, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommSplit(comm, 0, 0, NULL, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommSplit(NULL, 0, 0, &sub, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommSplit(comm, 3, 9, &sub, NULL), zcclSuccess);
  CHECK(sub != NULL && sub != comm);
  CHECK_RES(zcclCommCount(sub, &n), zcclSuccess);
  CHECK(n == 1);
  CHECK_RES(zcclCommDestroy(sub), zcclSuccess);

  CHECK_RES(zcclCommFinalize(comm), zcclSuccess);
  float x = 1.0f;
  CHECK_RES(zcclAllReduce(&x, &x, 1, zcclFloat32, zcclSum, comm, NULL), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("finalized");
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  CHECK_RES(zcclCommDestroy(NULL), zcclSuccess);
  CHECK_RES(zcclCommAbort(NULL), zcclSuccess);

  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  CHECK_RES(zcclCommAbort(comm), zcclSuccess);
}

static void test_coll_args(void) {
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {0};

  /* NULL / garbage communicator. */
  CHECK_RES(zcclAllReduce(a, b, 8, zcclFloat32, zcclSum, NULL, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("zcclAllReduce: comm is NULL");
  struct {
    uint32_t junk[16];
  } fake = {{0}};
  CHECK_RES(zcclAllReduce(a, b, 8, zcclFloat32, zcclSum, (zcclComm_t)(void*)&fake, NULL),
            zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("not a live communicator");

  /* Datatype and op. */
  CHECK_RES(zcclAllReduce(a, b, 8, (zcclDataType_t)zcclNumTypes, zcclSum, comm, NULL),
            zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("invalid datatype 12");
  CHECK_RES(zcclAllReduce(a, b, 8, (zcclDataType_t)-1, zcclSum, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclAllReduce(a, b, 8, zcclFloat32, (zcclRedOp_t)zcclNumOps, comm, NULL),
            zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("invalid reduction op 5");
  CHECK_RES(zcclReduceScatter(a, b, 8, zcclFloat32, (zcclRedOp_t)-2, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclReduce(a, b, 8, zcclInt32, (zcclRedOp_t)77, 0, comm, NULL), zcclInvalidArgument);
  /* An op is not looked at where none is taken. */
  CHECK_RES(zcclAllGather(a, b, 0, zcclFloat32, comm, NULL), zcclSuccess);

  /* Roots and peers. */
  CHECK_RES(zcclBroadcast(a, b, 8, zcclFloat32, 1, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("root 1 is outside");
  CHECK_RES(zcclReduce(a, b, 8, zcclFloat32, zcclSum, -1, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclGather(a, b, 8, zcclFloat32, 3, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclScatter(a, b, 8, zcclFloat32, 3, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclSend(a, 8, zcclFloat32, 1, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("peer 1 is outside");
  CHECK_RES(zcclRecv(b, 8, zcclFloat32, -1, comm, NULL), zcclInvalidArgument);

  /* NULL buffers with elements to move; fine with count 0. */
  CHECK_RES(zcclAllReduce(NULL, b, 8, zcclFloat32, zcclSum, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("sendbuff is NULL with count 8");
  CHECK_RES(zcclAllReduce(a, NULL, 8, zcclFloat32, zcclSum, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("recvbuff is NULL with count 8");
  CHECK_RES(zcclAllGather(NULL, b, 8, zcclFloat64, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclReduceScatter(a, NULL, 2, zcclFloat64, zcclMax, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclAlltoAll(NULL, b, 2, zcclInt8, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclSend(NULL, 2, zcclInt8, 0, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclRecv(NULL, 2, zcclInt8, 0, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclAllReduce(NULL, NULL, 0, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
  CHECK_RES(zcclBroadcast(NULL, NULL, 0, zcclFloat32, 0, comm, NULL), zcclSuccess);

  /* AlltoAll is out of place only. */
  CHECK_RES(zcclAlltoAll(a, a, 2, zcclFloat32, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("in-place AlltoAll");

  /* Sizes that overflow the address space. */
  CHECK_RES(zcclAllReduce(a, b, SIZE_MAX / 2, zcclFloat64, zcclSum, comm, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("overflows");

  /* Valid calls on one rank: copies, and AVG of one input is itself. */
  CHECK_RES(zcclAllReduce(a, b, 8, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
  CHECK(memcmp(a, b, sizeof b) == 0);
  CHECK_RES(zcclAllReduce(a, a, 8, zcclFloat32, zcclAvg, comm, NULL), zcclSuccess);
  CHECK(b[7] == 8.0f && a[7] == 8.0f);
  memset(b, 0, sizeof b);
  CHECK_RES(zcclBroadcast(a, b, 8, zcclFloat32, 0, comm, NULL), zcclSuccess);
  CHECK(memcmp(a, b, sizeof b) == 0);
  /* Point-to-point with itself works on one rank (paired in a group). */
  float c[8] = {0};
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(a, 8, zcclFloat32, 0, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(c, 8, zcclFloat32, 0, comm, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK(memcmp(a, c, sizeof c) == 0);
  /* A bad call inside a group fails the group, and nothing is issued. */
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclSend(a, 8, zcclFloat32, 0, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(c, 8, zcclFloat32, 3, comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclGroupEnd(), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("nothing was issued");

  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  /* A destroyed communicator is recognised (its memory is freed, so this
   * only holds while the allocator has not reused it; don't rely on it). */
}

/* Calls on a destroyed or aborted communicator, and a second destroy, are
 * zcclInvalidArgument without touching the freed memory (the ASan build of
 * this test reports a use-after-free otherwise). */
static void test_stale_handles(void) {
  for (int aborted = 0; aborted < 2; aborted++) {
    zcclComm_t comm = NULL;
    CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
    if (comm == NULL) return;
    CHECK_RES(aborted ? zcclCommAbort(comm) : zcclCommDestroy(comm), zcclSuccess);
    float x = 1.0f;
    int n = 0;
    zcclResult_t async;
    zcclComm_t sub = NULL;
    zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
    uint64_t raw, wire;
    CHECK_RES(zcclAllReduce(&x, &x, 1, zcclFloat32, zcclSum, comm, NULL), zcclInvalidArgument);
    CHECK_LAST_ERROR_HAS("not a live communicator");
    CHECK_RES(zcclSend(&x, 1, zcclFloat32, 0, comm, NULL), zcclInvalidArgument);
    CHECK_RES(zcclCommCount(comm, &n), zcclInvalidArgument);
    CHECK_RES(zcclCommUserRank(comm, &n), zcclInvalidArgument);
    CHECK_RES(zcclCommCuDevice(comm, &n), zcclInvalidArgument);
    CHECK_RES(zcclCommGetAsyncError(comm, &async), zcclInvalidArgument);
    CHECK_RES(zcclCommSetCompression(comm, &c), zcclInvalidArgument);
    CHECK_RES(zcclCommGetCompression(comm, &c), zcclInvalidArgument);
    CHECK_RES(zcclCommCompressionStats(comm, &raw, &wire), zcclInvalidArgument);
    CHECK_RES(zcclCommSplit(comm, 0, 0, &sub, NULL), zcclInvalidArgument);
    CHECK_RES(zcclCommFinalize(comm), zcclInvalidArgument);
    CHECK(zcclGetLastError(comm) != NULL);
    CHECK_RES(zcclCommDestroy(comm), zcclInvalidArgument);
    CHECK_LAST_ERROR_HAS("destroyed");
    CHECK_RES(zcclCommAbort(comm), zcclInvalidArgument);
    /* Inside a group too: recorded calls are checked as they are made. */
    CHECK_RES(zcclGroupStart(), zcclSuccess);
    CHECK_RES(zcclRecv(&x, 1, zcclFloat32, 0, comm, NULL), zcclInvalidArgument);
    CHECK_RES(zcclGroupEnd(), zcclInvalidArgument);
  }
}

static void test_groups(void) {
  CHECK_RES(zcclGroupEnd(), zcclInvalidUsage);
  CHECK_LAST_ERROR_HAS("no matching zcclGroupStart");
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclInvalidUsage);
}

int main(void) {
  test_init_args();
  test_singleton();
  test_coll_args();
  test_stale_handles();
  test_groups();
  TEST_DONE();
}
