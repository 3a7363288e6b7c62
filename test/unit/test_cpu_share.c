/* zccl_cpu_share: the most ranks per core on any machine of the table, at
 * least 1, from the node id and core count each rank's slot carries at its
 * end (what codec=auto divides the host codec's rate by); zccl_node_ranks:
 * the ranks on one rank's machine (what the host device divides its cores
 * by for its threads). */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "zccl_core.h"

static void put(uint8_t* table, int r, uint64_t node, uint32_t cores) {
  uint8_t* end = table + (size_t)(r + 1) * ZCCL_ADDR_SLOT;
  memcpy(end - 12, &node, sizeof node);
  memcpy(end - 4, &cores, sizeof cores);
}

int main(void) {
  uint8_t* t = calloc(8, ZCCL_ADDR_SLOT);
  CHECK(t != NULL);
  /* The emulated cluster: 4 ranks, one kernel, 2 cores. */
  for (int r = 0; r < 4; r++) put(t, r, 42, 2);
  CHECK(zccl_cpu_share(t, 4) == 2.0);
  for (int r = 0; r < 4; r++) CHECK(zccl_node_ranks(t, 4, r) == 4);
  /* Two machines, each with more cores than ranks: no sharing. */
  for (int r = 0; r < 4; r++) put(t, r, r < 2 ? 1 : 2, 16);
  CHECK(zccl_cpu_share(t, 4) == 1.0);
  /* The busiest machine decides: 6 ranks on 2 cores beside 2 on 8. */
  for (int r = 0; r < 8; r++) put(t, r, r < 6 ? 7 : 9, r < 6 ? 2 : 8);
  CHECK(zccl_cpu_share(t, 8) == 3.0);
  CHECK(zccl_node_ranks(t, 8, 0) == 6 && zccl_node_ranks(t, 8, 5) == 6);
  CHECK(zccl_node_ranks(t, 8, 6) == 2 && zccl_node_ranks(t, 8, 7) == 2);
  /* One rank; a slot that says 0 cores counts as 1. */
  put(t, 0, 5, 0);
  CHECK(zccl_cpu_share(t, 1) == 1.0);
  CHECK(zccl_node_ranks(t, 1, 0) == 1);
  free(t);
  TEST_DONE();
}
