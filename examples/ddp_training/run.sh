#!/usr/bin/env bash
# examples/ddp_training/run.sh: trains one model with PyTorch DDP on 4 ranks,
# gradients averaged by Gloo, by zccl's hook uncompressed, and compressed at
# several REL bounds with and without error feedback (train.py; README.md
# here). First on 4 emulated hosts linked at 1 Gbit/s (scripts/netlab; needs
# root and network namespaces): the full run, whose loss and accuracy curves
# are drawn; then the same hosts unshaped, for time per epoch only (a few
# epochs). Without netlab it runs the full set over this machine's loopback
# and shared memory and says so. Outputs under out/ddp_training/.
#   DDP_EPOCHS=6          epochs of the full run
#   DDP_TIMING_EPOCHS=2   epochs of the unshaped run (the first warms up)
#   DDP_METHODS=...       train.py --methods (default below)
#   DDP_RATE=1gbit        link rate of the emulated hosts
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/out/ddp_training
NP=4
EPOCHS=${DDP_EPOCHS:-6}
TIMING_EPOCHS=${DDP_TIMING_EPOCHS:-2}
METHODS=${DDP_METHODS:-gloo,zccl,hz:rel:1e-3,hz:rel:1e-2,hz:rel:1e-2:ef,hz:rel:5e-2:ef}
RATE=${DDP_RATE:-1gbit}
PY=/usr/bin/python3 # Debian's, with torch, mpi4py, scikit-learn, matplotlib

# shellcheck source=examples/common.sh
. examples/common.sh
ex_build zccl
export ZCCL_LIBRARY=$ROOT/build/libzccl.so
TRAIN=(-x OMP_NUM_THREADS=1 "$PY" "$ROOT/examples/ddp_training/train.py" --methods "$METHODS")

ex_mpi_env zt$$ 10.203.88
mkdir -p "$OUT"

# One run on the emulated hosts at link rate $1 into $2 for $3 epochs.
on_netlab() {
  local rate=$1 dir=$2 epochs=$3 where=$4
  ex_netlab_up "$NP" "$rate" "$OUT/netlab.log" || return 1
  echo
  echo "==== $where"
  rm -rf "$dir"
  # Gloo binds the interface it is given (GLOO_SOCKET_IFNAME), and
  # the process group's store listens on host 0's address.
  ZCCL_EXAMPLE_WHERE="$where" scripts/netlab run -- "${TRAIN[@]}" --epochs "$epochs" \
    --master-addr "$(scripts/netlab addr 0)" --ifname eth0 --out "$dir" || status=$?
  ex_netlab_down
}

dirs=()
if on_netlab "$RATE" "$OUT/netlab" "$EPOCHS" "$NP emulated hosts, $RATE links (netlab)"; then
  dirs+=("$OUT/netlab")
  on_netlab unshaped "$OUT/unshaped" "$TIMING_EPOCHS" "$NP emulated hosts, unshaped links (netlab; time only)" \
    && dirs+=("$OUT/unshaped")
else
  echo "ddp_training: no emulated cluster (needs root and network namespaces; see $OUT/netlab.log):" \
    "running on this machine over loopback (Gloo) and shared memory (zccl) instead"
  echo
  echo "==== $NP ranks on this machine ($(nproc) cores)"
  rm -rf "$OUT/local"
  ZCCL_EXAMPLE_WHERE="$NP ranks on one machine" mpirun -np "$NP" --bind-to none "${TRAIN[@]}" \
    --epochs "$EPOCHS" --out "$OUT/local" || status=$?
  dirs+=("$OUT/local")
fi

echo
"$PY" examples/ddp_training/plot.py "${dirs[@]}" || echo "ddp_training: plot.py failed"
[ "$status" = 0 ] || echo "ddp_training: FAILED (exit $status)"
exit "$status"
