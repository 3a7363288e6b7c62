#!/usr/bin/env bash
# test_p2p under `srun --mpi=pmix` on a one-node Slurm brought up for the
# run (scripts/slurm-local), through both bootstraps. Skipped (77) when not
# root or Slurm is not installed.   slurm_p2p.sh <slurm-local> <test_p2p> <n>
set -u
SL=$1 P2P=$2 N=$3
[ "$(id -u)" = 0 ] || { echo "SKIP: slurm-local needs root"; exit 77; }
for b in slurmctld slurmd srun munged; do
  command -v $b >/dev/null || [ -x /usr/sbin/$b ] || { echo "SKIP: $b not installed"; exit 77; }
done
export ZCCL_SLURM_DIR=/tmp/zccl-slurm-test.$$
trap '"$SL" down >/dev/null 2>&1' EXIT
"$SL" up || exit 1
fail=0
ZCCL_BOOTSTRAP=pmix "$SL" run -- srun --mpi=pmix -n "$N" "$P2P" pmix-env || { echo "FAIL: pmix"; fail=1; }
idf=$ZCCL_SLURM_DIR/p2p.id
ZCCL_BOOTSTRAP=tcp "$SL" run -- srun --mpi=pmix -n "$N" "$P2P" id-file "$idf" || { echo "FAIL: unique id"; fail=1; }
exit $fail
