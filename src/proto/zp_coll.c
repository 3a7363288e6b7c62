#include "zp_coll.h"

#include "zu_error.h"

static const struct {
  const char* name;
  int reduces;
  int rooted;
} zp_colls[ZP_NUM_COLLS] = {
    [ZP_COLL_ALLREDUCE] = {"AllReduce", 1, 0},   [ZP_COLL_BROADCAST] = {"Broadcast", 0, 1},
    [ZP_COLL_REDUCE] = {"Reduce", 1, 1},         [ZP_COLL_ALLGATHER] = {"AllGather", 0, 0},
    [ZP_COLL_REDUCESCATTER] = {"ReduceScatter", 1, 0}, [ZP_COLL_ALLTOALL] = {"AlltoAll", 0, 0},
    [ZP_COLL_GATHER] = {"Gather", 0, 1},         [ZP_COLL_SCATTER] = {"Scatter", 0, 1},
    [ZP_COLL_SEND] = {"Send", 0, 1},             [ZP_COLL_RECV] = {"Recv", 0, 1},
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
                  "zccl%s is not built yet in zccl %d.%d.%d: no algorithm exists until the "
                  "collectives work lands; nothing was sent",
                  zp_coll_name(args->coll), ZCCL_MAJOR, ZCCL_MINOR, ZCCL_PATCH);
}
