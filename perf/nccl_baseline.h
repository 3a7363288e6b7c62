/* NCCL as the baseline of the GPU benchmarks, loaded at run time
 * (dlopen of libnccl.so.2, or ZCCL_PERF_NCCL_LIB): the project neither
 * builds nor links against NCCL, and a machine without it still runs the
 * rest. Only the public ABI of nccl.h is used (its enum values and
 * prototypes, stable since NCCL 2.0).
 *
 * Ranks that share one GPU: NCCL refuses them ("Duplicate GPU detected")
 * unless each rank claims another host (NCCL_HOSTID), which makes NCCL move
 * the bytes through its network transport (sockets here) instead of CUDA
 * IPC. nccl_baseline_init sets NCCL_HOSTID per rank when asked to, unless the
 * caller has set it. */
#ifndef NCCL_BASELINE_H
#define NCCL_BASELINE_H

#include <stddef.h>

#define NCCL_BASELINE_ID_BYTES 128

/* Loads the library; 0, or -1 with why in err. version: NCCL's code
 * (e.g. 22803 for 2.28.3). */
int nccl_baseline_load(int* version, char* err, size_t errlen);
/* Rank 0 makes the id the ranks then share. */
int nccl_baseline_get_id(unsigned char id[NCCL_BASELINE_ID_BYTES], char* err, size_t errlen);
/* The communicator of this rank on the current CUDA device; own_host: set
 * NCCL_HOSTID so that ranks on one GPU are accepted. */
int nccl_baseline_init(void** comm, int nranks, int rank, const unsigned char id[NCCL_BASELINE_ID_BYTES],
                       int own_host, char* err, size_t errlen);
/* Float32 collectives, sum where they reduce, root 0; scatter and alltoall
 * as grouped sends and receives (as nccl-tests). in/out/blk as
 * zcclAllReduce...: blk the elements of one rank's block. */
enum {
  NCCL_BASELINE_ALLREDUCE,
  NCCL_BASELINE_ALLGATHER,
  NCCL_BASELINE_BROADCAST,
  NCCL_BASELINE_REDUCESCATTER,
  NCCL_BASELINE_SCATTER,
  NCCL_BASELINE_ALLTOALL
};
int nccl_baseline_coll(void* comm, int coll, int nranks, int rank, const float* in, float* out, size_t blk,
                       void* stream, char* err, size_t errlen);
void nccl_baseline_destroy(void* comm);

#endif
