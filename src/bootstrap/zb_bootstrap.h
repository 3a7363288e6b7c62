/* Bootstrap layer (zb_): exchanges addresses and a shared secret between the
 * ranks of a new communicator, then gets out of the way. May use util. */
#ifndef ZB_BOOTSTRAP_H_
#define ZB_BOOTSTRAP_H_

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the PMIx client library. */
const char* zb_pmix_version(void);

/* 1 when the environment says a PMIx launcher (mpirun, srun --mpi=pmix)
 * started this process; *nspace and *rank then describe it (either may be
 * NULL). Reads only the environment the launcher sets; connects to nothing. */
int zb_pmix_launched(const char** nspace, int* rank);

/* The zcclUniqueId's contents: a magic, the format version, how ranks meet,
 * and a random 128-bit secret that peers must prove before they are let in. */
typedef enum { ZB_ID_KIND_NONE = 0, ZB_ID_KIND_TCP = 1, ZB_ID_KIND_PMIX = 2 } zb_id_kind_t;

/* Fills id with a fresh secret. Starting rank 0's listener (kind TCP) comes
 * with the TCP bootstrap; until then the id has kind NONE. */
zcclResult_t zb_id_create(zcclUniqueId* id);
/* zcclSuccess when id was made by zb_id_create (of this format version);
 * *kind receives how ranks meet. zcclInvalidArgument otherwise. */
zcclResult_t zb_id_check(const zcclUniqueId* id, zb_id_kind_t* kind);

#ifdef __cplusplus
}
#endif

#endif /* ZB_BOOTSTRAP_H_ */
