/* Custom reduction ops: NCCL's pre-multiplied sums (zcclRedOpCreatePreMulSum).
 * An op is a slot in its communicator's table, numbered from zcclNumOps up;
 * a collective that names one runs as a sum of each rank's input times its
 * scalar (proto's zp_premul_run). The table never moves (one allocation of
 * ZCCL_MAX_REDOPS slots at the first op), so a call reads its slot without
 * a lock while another thread creates or destroys others. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zccl_core.h"
#include "zu_dtype.h"

struct zccl_redop {
  atomic_int live;
  zcclDataType_t dtype;
  zcclScalarResidence_t residence;
  const void* at;  /* zcclScalarDevice: read when the collective runs */
  uint64_t bits;   /* zcclScalarHostImmediate: the value, taken at creation */
};

/* Creation and destruction of slots, any communicator (rare calls). */
static pthread_mutex_t zccl_redop_lock = PTHREAD_MUTEX_INITIALIZER;

zcclResult_t zcclRedOpCreatePreMulSum(zcclRedOp_t* op, void* scalar, zcclDataType_t datatype,
                                      zcclScalarResidence_t residence, zcclComm_t comm) {
  static const char* fn = "zcclRedOpCreatePreMulSum";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF(op == NULL || scalar == NULL, zcclInvalidArgument, "%s: NULL %s", fn, op ? "scalar" : "op");
  ZU_RETURN_ERR_IF(zu_dtype_size(datatype) == 0, zcclInvalidArgument, "%s: invalid datatype %d", fn, (int)datatype);
  ZU_RETURN_ERR_IF(residence != zcclScalarDevice && residence != zcclScalarHostImmediate, zcclInvalidArgument,
                   "%s: residence %d is neither zcclScalarDevice (0) nor zcclScalarHostImmediate (1)", fn,
                   (int)residence);
  zcclResult_t res = zcclSuccess;
  pthread_mutex_lock(&zccl_redop_lock);
  if (comm->redops == NULL) comm->redops = calloc(ZCCL_MAX_REDOPS, sizeof *comm->redops);
  int slot = -1;
  for (int i = 0; comm->redops && i < ZCCL_MAX_REDOPS && slot < 0; i++)
    if (!atomic_load(&comm->redops[i].live)) slot = i;
  if (comm->redops == NULL) {
    res = ZU_ERROR(zcclSystemError, "%s: out of memory", fn);
  } else if (slot < 0) {
    res = ZU_ERROR(zcclInvalidUsage, "%s: the communicator holds %d ops already (zcclRedOpDestroy those done with)",
                   fn, ZCCL_MAX_REDOPS);
  } else {
    struct zccl_redop* r = &comm->redops[slot];
    r->dtype = datatype;
    r->residence = residence;
    r->at = residence == zcclScalarDevice ? scalar : NULL;
    r->bits = 0;
    if (residence == zcclScalarHostImmediate) memcpy(&r->bits, scalar, zu_dtype_size(datatype));
    atomic_store(&r->live, 1); /* after the fields: a reader that sees it live sees them */
    *op = (zcclRedOp_t)(zcclNumOps + slot);
  }
  pthread_mutex_unlock(&zccl_redop_lock);
  return res;
}

static struct zccl_redop* zccl_redop_find(zcclComm_t comm, zcclRedOp_t op) {
  long slot = (long)op - zcclNumOps;
  if (comm->redops == NULL || slot < 0 || slot >= ZCCL_MAX_REDOPS) return NULL;
  return atomic_load(&comm->redops[slot].live) ? &comm->redops[slot] : NULL;
}

zcclResult_t zcclRedOpDestroy(zcclRedOp_t op, zcclComm_t comm) {
  static const char* fn = "zcclRedOpDestroy";
  ZCCL_HOLD(fn, comm);
  ZU_RETURN_ERR_IF((int)op >= 0 && op < zcclNumOps, zcclInvalidArgument,
                   "%s: op %d is built in (%s), not one zcclRedOpCreatePreMulSum made", fn, (int)op,
                   zu_op_name(op));
  pthread_mutex_lock(&zccl_redop_lock);
  struct zccl_redop* r = zccl_redop_find(comm, op);
  if (r) atomic_store(&r->live, 0);
  pthread_mutex_unlock(&zccl_redop_lock);
  ZU_RETURN_ERR_IF(r == NULL, zcclInvalidArgument, "%s: op %d is not a live op of this communicator", fn, (int)op);
  return zcclSuccess;
}

zcclResult_t zccl_redop_resolve(zcclComm_t comm, const char* fn, zp_coll_args_t* a) {
  a->premul = 0;
  if ((int)a->op >= 0 && a->op < zcclNumOps) return zcclSuccess;
  const struct zccl_redop* r = zccl_redop_find(comm, a->op);
  ZU_RETURN_ERR_IF(r == NULL, zcclInvalidArgument,
                   "%s: invalid reduction op %d (sum, prod, max, min, avg, or a live op of this communicator from "
                   "zcclRedOpCreatePreMulSum)", fn, (int)a->op);
  ZU_RETURN_ERR_IF(r->dtype != a->datatype, zcclInvalidArgument,
                   "%s: op %d was made for %s, the call is on %s", fn, (int)a->op, zu_dtype_name(r->dtype),
                   zu_dtype_name(a->datatype));
  a->op = zcclSum;
  a->premul = 1;
  a->scalar_at = r->at;
  a->scalar_bits = r->bits;
  return zcclSuccess;
}

void zccl_redops_free(zcclComm_t comm) {
  free(comm->redops);
  comm->redops = NULL;
}
