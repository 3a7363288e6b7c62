/* Bootstrap layer (zb_): exchanges addresses and a shared secret between the
 * ranks of a new communicator, then gets out of the way. May use util. */
#ifndef ZB_BOOTSTRAP_H_
#define ZB_BOOTSTRAP_H_

#include <stddef.h>
#include <stdint.h>

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

/* Refcounted PMIx_Init (thread-safe). A process started by a PMIx launcher gets
 * its rank (from PMIx_Init's proc; PMIX_RANK via PMIx_Get is not provided by these
 * launchers) and the job size (PMIX_JOB_SIZE, from the job-level wildcard proc).
 * A process started without a launcher (PMIx_Init returns PMIX_ERR_UNREACH or
 * similar) is a singleton: *singleton=1, rank 0, size 1, success. */
zcclResult_t zb_pmix_init(int* rank, int* size, int* singleton);
/* Every process of the job publishes len bytes under key (PMIx_Put PMIX_GLOBAL,
 * PMIx_Commit), a PMIx_Fence over the whole namespace with data collection and
 * a timeout, then PMIx_Get of key from every rank into table[rank*len]. Errors name
 * the rank that is missing or sent a different length ("did every rank pass the same
 * unique id?"), and time-outs (timeout seconds) are errors, never hangs.
 * A singleton just copies its blob. */
zcclResult_t zb_pmix_allgather(const char* key, const void* blob, size_t len, void* table, double timeout);
/* Drops one reference taken by zb_pmix_init; PMIx_Finalize at zero. */
void zb_pmix_finalize(void);

/* The zcclUniqueId's contents: a magic, the format version, how ranks meet,
 * and a random 128-bit secret that peers must prove before they are let in. */
typedef enum { ZB_ID_KIND_NONE = 0, ZB_ID_KIND_TCP = 1, ZB_ID_KIND_PMIX = 2 } zb_id_kind_t;

/* ZB_ID_FLAG_PMIX_JOB: made in a process a PMIx launcher started; a
 * communicator over the whole job may meet through PMIx instead of the
 * TCP root (which is then stopped). */
#define ZB_ID_FLAG_PMIX_JOB 1u
void zb_id_set_flags(zcclUniqueId* id, unsigned flags);
unsigned zb_id_flags(const zcclUniqueId* id);
void zb_id_set_kind(zcclUniqueId* id, zb_id_kind_t kind);

/* Fills id with a fresh secret (kind NONE until a root is attached). */
zcclResult_t zb_id_create(zcclUniqueId* id);
/* The TCP root in an id (address and port in network order). */
void zb_id_set_tcp(zcclUniqueId* id, uint32_t ip, uint16_t port);
int zb_id_get_tcp(const zcclUniqueId* id, uint32_t* ip, uint16_t* port);
void zb_id_secret(const zcclUniqueId* id, uint8_t secret[16]);

/* TCP bootstrap (zb_tcp.c). zb_tcp_root_start makes id (kind TCP) and starts
 * the root thread listening on ifname (NULL or "": the first up non-loopback
 * IPv4 interface, else loopback); the root serves one communicator's ranks
 * (every connection at once; a rank proves the id's secret by HMAC over the
 * root's nonce, and the root its answer over the rank's), then exits, or
 * gives up after timeout seconds. zb_tcp_allgather: rank sends len bytes and
 * receives every rank's, rank-ordered, into table (nranks * len); errors
 * name the cause (refused, timed out, an answer that is not the root's). */
zcclResult_t zb_tcp_root_start(const char* ifname, double timeout, zcclUniqueId* id);
/* Ends the root this process started for id, if any: one that has not
 * formed a job stops at once (the ranks met another way, or there is only
 * one); one that has finishes answering its ranks. When it returns the root
 * thread has been joined and its socket closed. Also joins the roots that
 * ended on their own (job formed, or timed out). */
void zb_tcp_root_stop(const zcclUniqueId* id);
zcclResult_t zb_tcp_allgather(const zcclUniqueId* id, int rank, int nranks, const void* blob, size_t len,
                              void* table, double timeout);
/* zcclSuccess when id was made by zb_id_create (of this format version);
 * *kind receives how ranks meet. zcclInvalidArgument otherwise. */
zcclResult_t zb_id_check(const zcclUniqueId* id, zb_id_kind_t* kind);

#ifdef __cplusplus
}
#endif

#endif /* ZB_BOOTSTRAP_H_ */
