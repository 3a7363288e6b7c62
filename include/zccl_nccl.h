/*
 * zccl_nccl.h: NCCL's names as inline wrappers over libzccl, for programs
 * that mix them with zccl's own calls and link libzccl alone. A program
 * written for NCCL wants zccl's nccl.h and libnccl.so.2 instead (NCCL's
 * ABI: real functions, NCCL's types; docs/nccl.md). Do not include both.
 *
 * Types and constants are the same values; each function is a thin inline
 * call of its zccl twin (see zccl.h for semantics). Not provided: NCCL's
 * custom reduction ops, shrink, revoke, group simulation, user buffer
 * registration and the NVLS/CollNet tuning knobs (zccl's nccl.h and
 * libnccl.so.2 have them all); programs using them will not compile here.
 */
#ifndef ZCCL_NCCL_H_
#define ZCCL_NCCL_H_

#include "zccl.h"

/* nccl.h includes cuda_runtime.h and programs rely on it; do the same when
 * the CUDA headers are on the include path. */
#if defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define ZCCL_NCCL_HAVE_CUDA_RUNTIME 1
#endif
#endif
#ifndef ZCCL_NCCL_HAVE_CUDA_RUNTIME
typedef struct CUstream_st* cudaStream_t; /* as cuda_runtime_api.h declares it */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0
#define NCCL_SUFFIX "-zccl"
#define NCCL_VERSION(X, Y, Z) ((X) <= 2 && (Y) <= 8 ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

#define NCCL_UNIQUE_ID_BYTES ZCCL_UNIQUE_ID_BYTES
#define NCCL_CONFIG_UNDEF_INT ZCCL_CONFIG_UNDEF_INT
#define NCCL_CONFIG_UNDEF_PTR ZCCL_CONFIG_UNDEF_PTR
#define NCCL_SPLIT_NOCOLOR ZCCL_SPLIT_NOCOLOR
#define NCCL_COMM_NULL ZCCL_COMM_NULL
#define NCCL_CONFIG_INITIALIZER ZCCL_CONFIG_INITIALIZER

typedef zcclComm_t ncclComm_t;
typedef zcclUniqueId ncclUniqueId;
typedef zcclConfig_t ncclConfig_t;
typedef zcclResult_t ncclResult_t;
typedef zcclDataType_t ncclDataType_t;
typedef zcclRedOp_t ncclRedOp_t;

/* Constants are macros for zccl's enumerators, so they keep their enum
 * types (C++ does not convert int to an enum). */
#define ncclSuccess zcclSuccess
#define ncclUnhandledCudaError zcclUnhandledCudaError
#define ncclSystemError zcclSystemError
#define ncclInternalError zcclInternalError
#define ncclInvalidArgument zcclInvalidArgument
#define ncclInvalidUsage zcclInvalidUsage
#define ncclRemoteError zcclRemoteError
#define ncclInProgress zcclInProgress
#define ncclNumResults zcclNumResults
#define ncclInt8 zcclInt8
#define ncclChar zcclChar
#define ncclUint8 zcclUint8
#define ncclInt32 zcclInt32
#define ncclInt zcclInt
#define ncclUint32 zcclUint32
#define ncclInt64 zcclInt64
#define ncclUint64 zcclUint64
#define ncclFloat16 zcclFloat16
#define ncclHalf zcclHalf
#define ncclFloat32 zcclFloat32
#define ncclFloat zcclFloat
#define ncclFloat64 zcclFloat64
#define ncclDouble zcclDouble
#define ncclBfloat16 zcclBfloat16
#define ncclFloat8e4m3 zcclFloat8e4m3
#define ncclFloat8e5m2 zcclFloat8e5m2
#define ncclNumTypes zcclNumTypes
#define ncclSum zcclSum
#define ncclProd zcclProd
#define ncclMax zcclMax
#define ncclMin zcclMin
#define ncclAvg zcclAvg
#define ncclNumOps zcclNumOps
#define ncclMaxRedOp zcclMaxRedOp

static inline const char* ncclGetErrorString(ncclResult_t result) { return zcclGetErrorString(result); }
static inline const char* ncclGetLastError(ncclComm_t comm) { return zcclGetLastError(comm); }

static inline ncclResult_t ncclGetVersion(int* version) {
  return zcclGetVersion(version);
}
static inline ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return zcclGetUniqueId(uniqueId);
}
static inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return zcclCommInitRank(comm, nranks, commId, rank);
}
static inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  return zcclCommInitRankConfig(comm, nranks, commId, rank, config);
}
static inline ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return zcclCommFinalize(comm);
}
static inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return zcclCommDestroy(comm);
}
static inline ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return zcclCommAbort(comm);
}
static inline ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return zcclCommSplit(comm, color, key, newcomm, config);
}
static inline ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return zcclCommGetAsyncError(comm, asyncError);
}
static inline ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return zcclCommCount(comm, count);
}
static inline ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return zcclCommCuDevice(comm, device);
}
static inline ncclResult_t ncclMemAlloc(void** ptr, size_t size) { return zcclMemAlloc(ptr, size); }
static inline ncclResult_t ncclMemFree(void* ptr) { return zcclMemFree(ptr); }
static inline ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return zcclCommUserRank(comm, rank);
}
static inline ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return zcclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return zcclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return zcclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return zcclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return zcclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return zcclAlltoAll(sendbuff, recvbuff, count, datatype, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return zcclGather(sendbuff, recvbuff, count, datatype, root, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return zcclScatter(sendbuff, recvbuff, count, datatype, root, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream) {
  return zcclSend(sendbuff, count, datatype, peer, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream) {
  return zcclRecv(recvbuff, count, datatype, peer, comm, (zcclStream_t)stream);
}
static inline ncclResult_t ncclGroupStart(void) {
  return zcclGroupStart();
}
static inline ncclResult_t ncclGroupEnd(void) {
  return zcclGroupEnd();
}
/* NCCL's in-place broadcast (deprecated there, still used). */
static inline ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  return zcclBroadcast(buff, buff, count, datatype, root, comm, (zcclStream_t)stream);
}

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_NCCL_H_ */
