#!/usr/bin/env bash
# The scale model against measurements: zccl-perf on 4, 8 and 16 netlab
# hosts (one rank each) at RATE, for allreduce, broadcast and allgather on a
# real field (OpenMPI's default, zccl uncompressed and zccl compressed in the
# same runs), then zccl-scale --predict on every row: the model's time for
# the row's method, on the link the library measured in that run, beside the
# measured one, and the relative error.
# Builds nothing; rows and logs go to out/scale/. Needs root (netlab).
#   perf/scale_validate.sh [build dir] [rate] [hosts] [sizes]
# SCALE_PREDICT_ONLY=1 skips the runs and predicts the rows already there.
# rate defaults to 200mbit: with every host on this machine's cores, 16
# hosts at 1 Gbit/s each would need more TCP processing than 2 cores do, and
# the measurement would time the machine, not the links (docs/performance.md,
# "Scale model"). hosts defaults to "4 8 16"; sizes to "-b 4M -e 64M -f 4".
# NETLAB_BURST=BYTES in the environment reaches netlab and sets the links'
# tbf burst (default netlab's, 32 kB at this rate). A 4 KiB burst keeps a
# compressed chain's small pieces from crossing at the veth's speed, but with 8 or 16
# hosts on 2 cores the links then carry a third to two thirds of the rate
# (docs/measurements/scale.md, "The tbf burst").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
RATE=${2:-200mbit}
HOSTS=${3:-"4 8 16"}
SIZES=${4:-"-b 4M -e 64M -f 4"}
CODEC=${SCALE_CODEC:-hz}
EB=${SCALE_EB_REL:-1e-3}
SPEC=codec=$CODEC,mode=rel,eb=$EB
# The links' latency where the library's own measurement is missing.
LAT=${SCALE_LATENCY_US:-50}
DATA=${SCALE_DATA:-levitus_climatology.cdf:TEMP}
PERF=$BUILD/perf/zccl-perf
SCALE=$BUILD/perf/zccl-scale
NETLAB=$PWD/scripts/netlab
OUT=$PWD/out/scale
for t in "$PERF" "$SCALE"; do [ -x "$t" ] || { echo "scale_validate: no $t (build first)" >&2; exit 2; }; done
# SCALE_PREDICT_ONLY=1: no runs; the model again beside the rows and logs
# already in out/scale (after a change to the model).
ONLY=${SCALE_PREDICT_ONLY:-0}
mkdir -p "$OUT"
export NETLAB_PREFIX=zs$$ NETLAB_NET=10.203.91
trap '"$NETLAB" down >/dev/null 2>&1' EXIT
# tc's rate in bit/s, for the model's link.
gbps=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$RATE'); \
print(float(m[1])*{'':1e-9,'k':1e-6,'m':1e-3,'g':1}[m[2]]) if m else sys.exit(1)") ||
  { echo "scale_validate: rate $RATE is not NUMBER[k|m|g]bit" >&2; exit 2; }
fail=0
for n in $HOSTS; do
  [ "$ONLY" = 1 ] && break
  # Only this host count's rows go: a run of "16" keeps the 4 and 8-host ones.
  rm -f "$OUT"/*_np"$n".json "$OUT"/*_np"$n".log
  "$NETLAB" down >/dev/null 2>&1
  "$NETLAB" up "$n" "$RATE" >"$OUT/netlab_$n.log" 2>&1 || { echo "scale_validate: netlab up $n failed (root?)" >&2; exit 2; }
  # The link as the library measures it when a communicator is created
  # (every call's TUNING line carries it): the model's latency and bandwidth.
  ZCCL_DEBUG=INFO ZCCL_DEBUG_SUBSYS=TUNING timeout -k 10 300 "$NETLAB" run -- "$PERF" allreduce -b 8 -e 8 -n 1 -w 0 \
    --baseline none >"$OUT/link_np$n.log" 2>&1 || { echo "scale_validate: link probe on $n hosts failed" >&2; fail=1; }
  for coll in allreduce broadcast allgather; do
    echo "scale_validate: $n hosts, $coll" >&2
    # shellcheck disable=SC2086 # SIZES is several arguments
    ZCCL_DEBUG=INFO ZCCL_DEBUG_SUBSYS=TUNING timeout -k 10 1200 "$NETLAB" run -- "$PERF" "$coll" $SIZES -n 3 -w 1 \
      --data "$DATA" --compression "$SPEC" \
      --json "$OUT/${coll}_np$n.json" >"$OUT/${coll}_np$n.log" 2>&1 ||
      { echo "scale_validate: $coll on $n hosts failed (see $OUT/${coll}_np$n.log)" >&2; fail=1; }
  done
done
"$NETLAB" down >/dev/null 2>&1
# Every rank shares this machine's cores: the model's cpu share is ranks / cores.
echo "scale_validate: the model beside the measurements" >&2
for n in $HOSTS; do
  share=$(python3 -c "print(max(1.0, $n / $(nproc)))")
  for coll in allreduce broadcast allgather; do
    f=$OUT/${coll}_np$n.json
    [ -s "$f" ] || continue
    # The link the library measured when that run created its communicator
    # ("calibration: latency 52.1 us, bandwidth 0.0237 GB/s": what it chose
    # that run's algorithms by); else the probe's; else the shaped rate. One
    # probe on crowded cores reads the latency anywhere from 1 to 5 ms on
    # 16 hosts (docs/measurements/scale.md).
    # Its fan-out and all-to-all factors too: they decide between the
    # direct round and the ring or tree.
    lat= bw= fan= a2a=
    for log in "$OUT/${coll}_np$n.log" "$OUT/link_np$n.log"; do
      read -r lat bw fan a2a < <(sed -n 's/.*calibration: latency \([0-9.]*\) us, bandwidth \([0-9.]*\) GB\/s.*ranks \([0-9.]*\)x one, all to all \([0-9.]*\)x.*/\1 \2 \3 \4/p' \
        "$log" 2>/dev/null | head -1)
      [ -n "${lat:-}" ] && [ -n "${bw:-}" ] && break
    done
    factors=()
    [ -n "${fan:-}" ] && factors=(--fanout "$fan" --all-to-all "$a2a")
    if [ -n "${lat:-}" ] && [ -n "${bw:-}" ]; then
      lgbps=$(python3 -c "print($bw * 8)")
    else
      echo "scale_validate: no measured link for $n hosts: the model takes $RATE and ${LAT} us" >&2
      lat=$LAT lgbps=$gbps
    fi
    "$SCALE" --predict "$f" --gbps "$lgbps" --latency-us "$lat" --cpu-share "$share" "${factors[@]}" --codec "$CODEC" \
      --eb-rel "$EB" --data "$DATA" >"$OUT/predict_${coll}_np$n.txt" 2>&1 || { echo "scale_validate: predict $f failed" >&2; fail=1; }
    cat "$OUT/predict_${coll}_np$n.txt"
  done
done
exit $fail
