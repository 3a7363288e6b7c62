/* zd_cuda_queue.cu (the persistent kernel's host queue) on the host emulation of CUDA. */
#include "zd_cuda_queue.cu"
