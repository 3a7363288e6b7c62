/* zd_cuda.cu on the host emulation of CUDA (cuda_runtime.h beside this file). */
#include "zd_cuda.cu"
