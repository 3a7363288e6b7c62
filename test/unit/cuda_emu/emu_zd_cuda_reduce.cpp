/* zd_cuda_reduce.cu on the host emulation of CUDA (cuda_runtime.h beside this file). */
#include "zd_cuda_reduce.cu"
