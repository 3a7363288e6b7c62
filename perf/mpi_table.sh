#!/usr/bin/env bash
# libzccl-mpi.so against plain OpenMPI, in the same runs: zccl-mpi-osu
# (MPI_Allreduce and MPI_Bcast, 8 B .. MAXSZ) with the library preloaded,
# each call timed beside the same call through PMPI, on 4 ranks over shared
# memory and over 4 netlab hosts at RATE, uncompressed and with
# ZCCL_COMPRESSION=$COMP. Prints each run's table; CSVs and logs go to
# out/mpi/. Builds nothing.
#   perf/mpi_table.sh [build dir] [rate] [max size]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
RATE=${2:-1gbit}
MAXSZ=${3:-64M}
COMP=${MPI_TABLE_COMPRESSION:-codec=hz,mode=rel,eb=1e-3}
OSU=$BUILD/perf/zccl-mpi-osu
LIB=$BUILD/mpi/libzccl-mpi.so
NETLAB=$PWD/scripts/netlab
OUT=$PWD/out/mpi
[ -x "$OSU" ] && [ -f "$LIB" ] || { echo "mpi_table: build zccl-mpi-osu and libzccl-mpi.so first" >&2; exit 2; }
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NETLAB_PREFIX=zm$$ NETLAB_NET=10.203.81
netlab_up=0
trap '[ "$netlab_up" = 1 ] && "$NETLAB" down >/dev/null 2>&1' EXIT
echo "# libzccl-mpi.so vs OpenMPI ($(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
for where in shm "$RATE"; do
  if [ "$where" != shm ]; then
    if [ "$(id -u)" != 0 ]; then echo "mpi_table: netlab needs root; shared memory only" >&2; break; fi
    "$NETLAB" up 4 "$RATE" >/dev/null && netlab_up=1 || { echo "mpi_table: netlab up failed" >&2; break; }
  fi
  for comp in off "$COMP"; do
    tag=${where}_$( [ "$comp" = off ] && echo plain || echo compressed)
    echo; echo "## $where, ZCCL_COMPRESSION=$comp"
    # The preload reaches the ranks only (env runs on each host), not mpirun.
    # plain: ZCCL_MPI_UNCOMPRESSED=1 makes zccl take the calls it would not compress
    cmd=(env LD_PRELOAD="$LIB" ZCCL_MPI_UNCOMPRESSED=1 ZCCL_COMPRESSION="$( [ "$comp" = off ] && echo off || echo "$comp")"
         "$OSU" -b 8 -e "$MAXSZ" -r 5 --csv "$OUT/$tag.csv")
    if [ "$where" = shm ]; then
      timeout -k 10 1200 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 "${cmd[@]}" \
        2>"$OUT/$tag.log" </dev/null
    else
      timeout -k 10 1200 "$NETLAB" run -- "${cmd[@]}" 2>"$OUT/$tag.log" </dev/null
    fi || echo "mpi_table: $tag failed (see $OUT/$tag.log)" >&2
  done
done
