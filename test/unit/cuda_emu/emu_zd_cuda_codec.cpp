/* zd_cuda_codec.cu on the host emulation of CUDA (cuda_runtime.h beside this file). */
#include "zd_cuda_codec.cu"
