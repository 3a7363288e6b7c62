/* The NCCL drop-in program of test_nccl_dropin.c, compiled as C++ (NCCL
 * programs usually are): enum types and the config initializer must work
 * without C's implicit conversions. */
#include "test_nccl_dropin.c"
