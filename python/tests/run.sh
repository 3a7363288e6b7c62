#!/bin/sh
# Runs a Python test under mpirun with the given python3 and libzccl.so;
# exits 77 (skipped) naming the module when one is missing.
#   run.sh PYTHON3 LIBZCCL MPIRUN "MODULES" NRANKS SCRIPT [SCRIPT ARGS...]
# PRELOAD (environment): a library the ranks preload (libzccl-mpi.so);
# ZCCL_COMPRESSION and ZCCL_MPI_UNCOMPRESSED, when set, reach the ranks.
set -eu
py=$1 lib=$2 mpirun=$3 modules=$4 np=$5 script=$6
shift 6
for m in $modules; do
  if ! "$py" -c "import $m" 2>/dev/null; then
    echo "skipped: $py has no module $m (scripts/install-deps.sh installs it)"
    exit 77
  fi
done
set -- "$py" "$script" "$@"
[ -n "${ZCCL_COMPRESSION:-}" ] && set -- -x ZCCL_COMPRESSION "$@"
[ -n "${ZCCL_MPI_UNCOMPRESSED:-}" ] && set -- -x ZCCL_MPI_UNCOMPRESSED "$@"
[ -n "${PRELOAD:-}" ] && set -- -x LD_PRELOAD="$PRELOAD" "$@"
exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" -x ZCCL_LIBRARY="$lib" \
  -x OMP_NUM_THREADS=1 "$@"
