/* Group nesting. Calls inside a group are checked and issued as they come;
 * deferring them to the outermost zcclGroupEnd (to pair sends and receives
 * without deadlock) arrives with point-to-point over UCX. */
#include "zccl_core.h"

static _Thread_local int zccl_group_depth;

zcclResult_t zcclGroupStart(void) {
  zccl_group_depth++;
  ZU_TRACE(ZU_LOG_COLL, "zcclGroupStart depth %d", zccl_group_depth);
  return zcclSuccess;
}

zcclResult_t zcclGroupEnd(void) {
  ZU_RETURN_ERR_IF(zccl_group_depth == 0, zcclInvalidUsage,
                   "zcclGroupEnd: not inside a group (no matching zcclGroupStart)");
  zccl_group_depth--;
  ZU_TRACE(ZU_LOG_COLL, "zcclGroupEnd depth %d", zccl_group_depth);
  return zcclSuccess;
}
