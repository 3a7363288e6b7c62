#include "zp_coll.h"

#include "zu_error.h"

static const struct {
  const char* name;
  int reduces;
  int rooted;
} zp_colls[ZP_NUM_COLLS] = {
    [ZP_COLL_ALLREDUCE] = {"zcclAllReduce", 1, 0},   [ZP_COLL_BROADCAST] = {"zcclBroadcast", 0, 1},
    [ZP_COLL_REDUCE] = {"zcclReduce", 1, 1},         [ZP_COLL_ALLGATHER] = {"zcclAllGather", 0, 0},
    [ZP_COLL_REDUCESCATTER] = {"zcclReduceScatter", 1, 0}, [ZP_COLL_ALLTOALL] = {"zcclAlltoAll", 0, 0},
    [ZP_COLL_GATHER] = {"zcclGather", 0, 1},         [ZP_COLL_SCATTER] = {"zcclScatter", 0, 1},
    [ZP_COLL_SEND] = {"zcclSend", 0, 1},             [ZP_COLL_RECV] = {"zcclRecv", 0, 1},
};

const char* zp_coll_name(zp_coll_id_t coll) {
  return (coll >= 0 && coll < ZP_NUM_COLLS) ? zp_colls[coll].name : "invalid";
}

int zp_coll_reduces(zp_coll_id_t coll) { return coll < ZP_NUM_COLLS && zp_colls[coll].reduces; }
int zp_coll_rooted(zp_coll_id_t coll) { return coll < ZP_NUM_COLLS && zp_colls[coll].rooted; }

zcclResult_t zp_coll_run(const zp_coll_args_t* args) {
  /* The algorithm tables (ring, recursive doubling, trees, ...) arrive with
   * the collectives work; until then say so rather than pretend. */
  return ZU_ERROR(zcclInvalidUsage,
                  "%s is not built yet in zccl %d.%d.%d: no algorithm exists until the "
                  "collectives work lands; nothing was sent",
                  zp_coll_name(args->coll), ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH);
}
