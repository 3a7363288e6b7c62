/* Proto layer (zp_): the algorithms, one file per family, written only
 * against zt_ (transport) and zd_ (device). This header describes one
 * collective call as the core hands it down. */
#ifndef ZP_COLL_H_
#define ZP_COLL_H_

#include <stddef.h>
#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ZP_COLL_ALLREDUCE,
  ZP_COLL_BROADCAST,
  ZP_COLL_REDUCE,
  ZP_COLL_ALLGATHER,
  ZP_COLL_REDUCESCATTER,
  ZP_COLL_ALLTOALL,
  ZP_COLL_GATHER,
  ZP_COLL_SCATTER,
  ZP_COLL_SEND,
  ZP_COLL_RECV,
  ZP_NUM_COLLS
} zp_coll_id_t;

typedef struct {
  zp_coll_id_t coll;
  const void* sendbuff;
  void* recvbuff;
  size_t count;        /* as the API call names it (per-rank for allgather, ...) */
  zcclDataType_t datatype;
  zcclRedOp_t op;      /* reductions only */
  int root;            /* rooted collectives; the peer for send/recv */
  int rank, nranks;    /* of the communicator */
  zcclStream_t stream;
  zcclCompression_t compression; /* in force for this call */
} zp_coll_args_t;

/* The API function's name: "zcclAllReduce", ... */
const char* zp_coll_name(zp_coll_id_t coll);
/* 1 for collectives that take a reduction op. */
int zp_coll_reduces(zp_coll_id_t coll);
/* 1 for collectives and p2p calls that take a root (or peer). */
int zp_coll_rooted(zp_coll_id_t coll);

/* Runs one (already validated) call to completion. */
zcclResult_t zp_coll_run(const zp_coll_args_t* args);

#ifdef __cplusplus
}
#endif

#endif /* ZP_COLL_H_ */
