#include <hwloc.h>

#include "zd_device.h"
#include "zu_log.h"

int zd_host_ncores(void) {
  hwloc_topology_t topo;
  int n = 0;
  if (hwloc_topology_init(&topo) != 0) return 1;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    /* Cores the process is bound to (taskset, mpirun --bind-to). */
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      int depth = hwloc_get_type_depth(topo, HWLOC_OBJ_CORE);
      n = hwloc_get_nbobjs_inside_cpuset_by_depth(topo, set, depth);
    } else {
      n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  ZU_TRACE(ZU_LOG_DEVICE, "hwloc: %d cores available", n);
  return n > 0 ? n : 1;
}
