#!/usr/bin/env bash
# The README's main job: installs what is needed, builds (Release), and runs
# the compressed-vs-plain collective bandwidth sweep on a real climate field
# with 4 ranks under mpirun, OpenMPI beside zccl on the same buffers.
#
# Until zccl's transport and collectives land, zccl's rows say why they did
# not run and the table holds the OpenMPI baseline (see README "Status").
#   ZCCL_DEMO_MAX=16M   largest message (default 16M)
#   ZCCL_DEMO_DATA=...  field (default levitus_climatology.cdf:TEMP)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MAX=${ZCCL_DEMO_MAX:-16M}
DATA=${ZCCL_DEMO_DATA:-levitus_climatology.cdf:TEMP}
OUT=$ROOT/out/demo
NP=4

scripts/install-deps.sh
echo "==== build (Release) in build/"
mkdir -p build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build/zccl-configure.log 2>&1 \
  || { cat build/zccl-configure.log; exit 1; }
cmake --build build -j "$(nproc)" --target zccl-perf zccl-info >build/zccl-build.log 2>&1 \
  || { tail -30 build/zccl-build.log; exit 1; }
build/tools/zccl-info

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$OUT"
for coll in allreduce allgather broadcast; do
  echo
  echo "==== $coll, $NP ranks (UCX shared memory / OpenMPI defaults on this machine)"
  mpirun -np $NP --bind-to none build/perf/zccl-perf "$coll" -b 1M -e "$MAX" -f 2 -n 5 -w 1 \
    --data "$DATA" --baseline mpi --compression codec=hz,mode=rel,eb=1e-3 \
    --json "$OUT/$coll.json" --csv "$OUT/$coll.csv"
done
echo
echo "rows written to $OUT/{allreduce,allgather,broadcast}.{json,csv}"
