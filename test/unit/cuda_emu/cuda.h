/* The driver API part the device layer uses: in cuda_runtime.h here. */
#include "cuda_runtime.h"
