#!/usr/bin/env bash
# examples/image_stacking/run.sh: builds image_stacking (Release, in build/),
# stacks the 12 monthly ocean-temperature volumes of ferret-datasets'
# ocean_atlas_subset.nc on 4 ranks with MPI_Allreduce and zcclAllReduce
# (uncompressed; hz and szp at ABS and REL 1e-4), first on 4 emulated hosts
# linked at 1 Gbit/s (scripts/netlab; needs root and network namespaces,
# otherwise it says so and skips them), then on this machine over shared
# memory, and draws the composites (plot.py). Outputs under
# out/image_stacking/{netlab,shm}/. Exits non-zero if any element of any run
# is over its error bound.
#   IMAGE_STACKING_DATA=FILE:VAR  another field (default the ocean atlas TEMP)
#   IMAGE_STACKING_REPS=20        timed calls per row
#   IMAGE_STACKING_RATE=1gbit     link rate of the emulated hosts
# Standalone, or through examples/run.sh image_stacking.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/out/image_stacking
NP=4
DEFAULT_DATA=/usr/share/ferret-vis/data/ocean_atlas_subset.nc:TEMP
DATA=${IMAGE_STACKING_DATA:-$DEFAULT_DATA}
REPS=${IMAGE_STACKING_REPS:-20}
RATE=${IMAGE_STACKING_RATE:-1gbit}
PY=/usr/bin/python3 # Debian's, with numpy and matplotlib

# shellcheck source=examples/common.sh
. examples/common.sh
ex_build image_stacking
BIN=$ROOT/build/examples/image_stacking/image_stacking

args=(--data "$DATA" --warmup 2 --reps "$REPS" --abs 1e-4 --rel 1e-4 --codecs "hz,szp" --ops "sum,avg")
# The ocean atlas's TEMP has no units attribute; it is in degrees Celsius.
[ "$DATA" = "$DEFAULT_DATA" ] && args+=(--units "deg C")

ex_mpi_env zi$$ 10.203.86
mkdir -p "$OUT"
case "$RATE" in
  *gbit) rate_text="${RATE%gbit} Gbit/s" ;;
  *mbit) rate_text="${RATE%mbit} Mbit/s" ;;
  *) rate_text=$RATE ;;
esac

# (1) 4 emulated hosts: where the links, not the cores, set the pace.
dirs=()
if ex_netlab_up "$NP" "$RATE" "$OUT/netlab.log"; then
  echo
  echo "==== $NP emulated hosts, $rate_text links (netlab; MPI and UCX over TCP)"
  rm -rf "$OUT/netlab"
  ZCCL_EXAMPLE_WHERE="$NP emulated hosts, $rate_text (netlab)" \
    scripts/netlab run -- "$BIN" "${args[@]}" --out "$OUT/netlab" --csv "$OUT/netlab.csv" || status=$?
  ex_netlab_down
  dirs+=("$OUT/netlab")
else
  echo "image_stacking: no emulated cluster (needs root and network namespaces; see $OUT/netlab.log):" \
    "falling back to shared memory only"
fi

# (2) the same on this machine over shared memory.
echo
echo "==== $NP ranks on this machine ($(nproc) cores), shared memory"
rm -rf "$OUT/shm"
ZCCL_EXAMPLE_WHERE="$NP ranks on one machine ($(nproc) cores), shared memory" \
  mpirun -np "$NP" --bind-to none "$BIN" "${args[@]}" --out "$OUT/shm" --csv "$OUT/shm.csv" || status=$?
dirs+=("$OUT/shm")

# (3) pictures.
echo
for d in "${dirs[@]}"; do
  [ -f "$d/meta.json" ] || continue
  "$PY" examples/image_stacking/plot.py "$d" >/dev/null || echo "image_stacking: plot.py failed on $d"
done
pictures=0
for f in "$OUT"/*/*.png; do
  [ -f "$f" ] && echo "picture: $f" && pictures=$((pictures + 1))
done
[ "$pictures" -gt 0 ] || echo "image_stacking: no pictures (see plot.py's message)"
[ "$status" = 0 ] || echo "image_stacking: FAILED (exit $status): an element over its bound, or a run that did not finish"
exit "$status"
