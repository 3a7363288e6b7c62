/* NCCL drop-in: with this directory on the include path, `#include <nccl.h>`
 * gives NCCL's API implemented by zccl. */
#include "zccl_nccl.h"
