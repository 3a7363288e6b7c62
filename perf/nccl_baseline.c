/* NCCL loaded at run time for the GPU benchmarks (nccl_baseline.h). */
#include "nccl_baseline.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl.h's ABI: results and enums are ints, ncclUniqueId 128 bytes passed
 * by value, communicators and streams pointers. */
typedef struct {
  char internal[NCCL_BASELINE_ID_BYTES];
} nccl_id_t;
enum { NCCL_SUCCESS = 0, NCCL_FLOAT32 = 7, NCCL_SUM = 0 };

static struct {
  void* lib;
  int (*get_version)(int*);
  int (*get_unique_id)(nccl_id_t*);
  int (*comm_init_rank)(void**, int, nccl_id_t, int);
  int (*comm_destroy)(void*);
  const char* (*error_string)(int);
  int (*all_reduce)(const void*, void*, size_t, int, int, void*, void*);
  int (*all_gather)(const void*, void*, size_t, int, void*, void*);
  int (*broadcast)(const void*, void*, size_t, int, int, void*, void*);
  int (*reduce_scatter)(const void*, void*, size_t, int, int, void*, void*);
  int (*send)(const void*, size_t, int, int, void*, void*);
  int (*recv)(void*, size_t, int, int, void*, void*);
  int (*group_start)(void);
  int (*group_end)(void);
} nc;

int nccl_baseline_load(int* version, char* err, size_t errlen) {
  if (nc.lib == NULL) {
    const char* path = getenv("ZCCL_PERF_NCCL_LIB");
    void* lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
      snprintf(err, errlen, "%s", dlerror());
      return -1;
    }
    struct {
      const char* name;
      void** fn;
    } want[] = {{"ncclGetVersion", (void**)&nc.get_version},
                {"ncclGetUniqueId", (void**)&nc.get_unique_id},
                {"ncclCommInitRank", (void**)&nc.comm_init_rank},
                {"ncclCommDestroy", (void**)&nc.comm_destroy},
                {"ncclGetErrorString", (void**)&nc.error_string},
                {"ncclAllReduce", (void**)&nc.all_reduce},
                {"ncclAllGather", (void**)&nc.all_gather},
                {"ncclBroadcast", (void**)&nc.broadcast},
                {"ncclReduceScatter", (void**)&nc.reduce_scatter},
                {"ncclSend", (void**)&nc.send},
                {"ncclRecv", (void**)&nc.recv},
                {"ncclGroupStart", (void**)&nc.group_start},
                {"ncclGroupEnd", (void**)&nc.group_end}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
      *want[i].fn = dlsym(lib, want[i].name);
      if (*want[i].fn == NULL) {
        snprintf(err, errlen, "NCCL library without %s", want[i].name);
        dlclose(lib);
        memset(&nc, 0, sizeof nc);
        return -1;
      }
    }
    nc.lib = lib;
  }
  *version = 0;
  nc.get_version(version);
  return 0;
}

static int failed(int r, const char* what, char* err, size_t errlen) {
  if (r == NCCL_SUCCESS) return 0;
  snprintf(err, errlen, "%s: %s (ncclResult_t %d)", what, nc.error_string(r), r);
  return -1;
}

int nccl_baseline_get_id(unsigned char id[NCCL_BASELINE_ID_BYTES], char* err, size_t errlen) {
  nccl_id_t u;
  if (failed(nc.get_unique_id(&u), "ncclGetUniqueId", err, errlen)) return -1;
  memcpy(id, u.internal, sizeof u.internal);
  return 0;
}

int nccl_baseline_init(void** comm, int nranks, int rank, const unsigned char id[NCCL_BASELINE_ID_BYTES],
                       int own_host, char* err, size_t errlen) {
  if (own_host && getenv("NCCL_HOSTID") == NULL) {
    char host[64];
    snprintf(host, sizeof host, "zccl-perf-rank-%d", rank);
    setenv("NCCL_HOSTID", host, 1);
  }
  nccl_id_t u;
  memcpy(u.internal, id, sizeof u.internal);
  *comm = NULL;
  return failed(nc.comm_init_rank(comm, nranks, u, rank), "ncclCommInitRank", err, errlen);
}

int nccl_baseline_coll(void* comm, int coll, int nranks, int rank, const float* in, float* out, size_t blk,
                       void* stream, char* err, size_t errlen) {
  int r = NCCL_SUCCESS;
  switch (coll) {
    case NCCL_BASELINE_ALLREDUCE: r = nc.all_reduce(in, out, blk, NCCL_FLOAT32, NCCL_SUM, comm, stream); break;
    case NCCL_BASELINE_ALLGATHER: r = nc.all_gather(in, out, blk, NCCL_FLOAT32, comm, stream); break;
    case NCCL_BASELINE_BROADCAST: r = nc.broadcast(in, out, blk, NCCL_FLOAT32, 0, comm, stream); break;
    case NCCL_BASELINE_REDUCESCATTER: r = nc.reduce_scatter(in, out, blk, NCCL_FLOAT32, NCCL_SUM, comm, stream); break;
    default: /* scatter from rank 0, alltoall: grouped point-to-point */
      r = nc.group_start();
      for (int p = 0; p < nranks && r == NCCL_SUCCESS; p++) {
        if (coll == NCCL_BASELINE_ALLTOALL || rank == 0)
          r = nc.send(in + (size_t)p * blk, blk, NCCL_FLOAT32, p, comm, stream);
        if (r == NCCL_SUCCESS && coll == NCCL_BASELINE_ALLTOALL)
          r = nc.recv(out + (size_t)p * blk, blk, NCCL_FLOAT32, p, comm, stream);
      }
      if (r == NCCL_SUCCESS && coll == NCCL_BASELINE_SCATTER) r = nc.recv(out, blk, NCCL_FLOAT32, 0, comm, stream);
      {
        int e = nc.group_end();
        if (r == NCCL_SUCCESS) r = e;
      }
      break;
  }
  return failed(r, "NCCL collective", err, errlen);
}

void nccl_baseline_destroy(void* comm) {
  if (comm && nc.comm_destroy) nc.comm_destroy(comm);
}
