#include <nccl.h>
#include <stdio.h>

int main(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return 1;
  printf("nccl-compat consumer ok: %d\n", v);
  return 0;
}
