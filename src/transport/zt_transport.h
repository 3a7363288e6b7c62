/* Transport layer (zt_): moves bytes between ranks over UCX UCP. May use
 * util; never codec, device or proto. */
#ifndef ZT_TRANSPORT_H_
#define ZT_TRANSPORT_H_

#include "zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char version[32];      /* UCX library version */
  int cuda_memory;       /* 1 when UCX can send from/receive into CUDA memory */
  char memory_types[128];/* memory types UCX's context reports, e.g. "host,rdma" */
} zt_ucx_info_t;

/* Creates a throw-away UCP context to learn what this UCX build supports. */
zcclResult_t zt_ucx_query(zt_ucx_info_t* info);

/* RDMA devices libibverbs finds (0 when none or no driver). */
int zt_verbs_ndevices(void);

#ifdef __cplusplus
}
#endif

#endif /* ZT_TRANSPORT_H_ */
