#include <stdio.h>
#include <zccl.h>

int main(void) {
  int v = 0;
  zcclUniqueId id = {{0}};
  zcclComm_t comm;
  if (zcclGetVersion(&v) != zcclSuccess || v != ZCCL_VERSION_CODE) return 1;
  if (zcclCommInitRank(&comm, 1, id, 0) != zcclSuccess) return 1;
  if (zcclCommDestroy(comm) != zcclSuccess) return 1;
  printf("consumer ok: zccl %d\n", v);
  return 0;
}
