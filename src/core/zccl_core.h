/* Core (public API) internals: the communicator and the helpers every API
 * file uses. Core may include every layer below it. */
#ifndef ZCCL_CORE_H_
#define ZCCL_CORE_H_

#include <stdint.h>

#include "zccl.h"
#include "zu_error.h"

#define ZCCL_COMM_MAGIC 0x636f6d6du /* "comm" */

struct zcclComm {
  uint32_t magic;          /* ZCCL_COMM_MAGIC while alive; catches garbage handles */
  int rank, nranks;
  int cuda_dev;            /* -1: host only */
  int blocking;
  int finalized;
  char name[64];
  zcclCompression_t compression;
  zcclResult_t async_error;
  char async_msg[256];
};

/* Logs the library banner once (ZCCL_DEBUG=VERSION and above). */
void zccl_init_once(void);

/* zcclSuccess when comm is a live communicator; sets this thread's log rank. */
zcclResult_t zccl_comm_check(const char* fn, zcclComm_t comm);

/* Checks a compression setting; fn names the caller in the message. */
zcclResult_t zccl_compression_check(const char* fn, const zcclCompression_t* c);

#endif /* ZCCL_CORE_H_ */
