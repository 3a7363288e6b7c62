/* Stand-ins for the codec kernels' launchers (zd_cuda_codec.cu) until they
 * are merged: the library links, and every codec operation on the cuda
 * device fails plainly when it is queued. Delete this file with the merge. */
#include "zd_cuda_kernels.h"
#include "zu_error.h"

extern "C" size_t zd_cuda_codec_scratch_bytes(size_t count, zcclDataType_t dtype, unsigned chunk_log2) {
  (void)count;
  (void)dtype;
  (void)chunk_log2;
  return 0;
}

extern "C" zcclResult_t zd_cuda_compress(const zc_params_t* p, const void* in, size_t count, void* out, size_t cap,
                                         uint64_t* out_size, void* scratch, size_t scratch_bytes, int* status,
                                         zd_cuda_stream_t stream) {
  (void)p, (void)in, (void)count, (void)out, (void)cap, (void)out_size, (void)scratch, (void)scratch_bytes,
      (void)status, (void)stream;
  return ZU_ERROR(zcclInvalidUsage, "zd_cuda_compress: CUDA codec kernels not built yet");
}

extern "C" zcclResult_t zd_cuda_decompress(const void* stream_bytes, const uint64_t* size, void* out, size_t count,
                                           int* status, zd_cuda_stream_t stream) {
  (void)stream_bytes, (void)size, (void)out, (void)count, (void)status, (void)stream;
  return ZU_ERROR(zcclInvalidUsage, "zd_cuda_decompress: CUDA codec kernels not built yet");
}

extern "C" zcclResult_t zd_cuda_hop(zcclRedOp_t op, const void* a, const uint64_t* a_size, const void* b,
                                    const uint64_t* b_size, void* out, size_t cap, uint64_t* out_size, void* scratch,
                                    size_t scratch_bytes, int* status, zd_cuda_stream_t stream) {
  (void)op, (void)a, (void)a_size, (void)b, (void)b_size, (void)out, (void)cap, (void)out_size, (void)scratch,
      (void)scratch_bytes, (void)status, (void)stream;
  return ZU_ERROR(zcclInvalidUsage, "zd_cuda_hop: CUDA codec kernels not built yet");
}
