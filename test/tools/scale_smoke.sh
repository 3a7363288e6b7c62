#!/usr/bin/env bash
# zccl-scale's quick run: exit 0 and a row for every collective, rank count,
# link and codec-speed kind, each with an algorithm and a time for all three
# methods; --json readable; --predict prices zccl-perf-shaped rows (made up
# here: the times are not measurements) and reports the worst error; and
# perf/scale_plot.py writes a PNG when python3 has matplotlib.
#   test/tools/scale_smoke.sh SOURCE_DIR ZCCL_SCALE WORK_DIR
set -uo pipefail
SRC=$1
SCALE=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
fail() { echo "scale_smoke: $*" >&2; exit 1; }

"$SCALE" --ranks 4,64 --gbps 1,100 --quick --json "$WORK/scale.json" --csv "$WORK/scale.csv" >"$WORK/out.txt" 2>&1
rc=$?
cat "$WORK/out.txt"
[ $rc = 0 ] || fail "exit $rc"
grep -q '^# cpu (measured)' "$WORK/out.txt" || fail "no measured codec rates"
grep -q '^# gpu (assumed)' "$WORK/out.txt" || fail "no assumed GPU rates"
# 2 rank counts x 2 links x (cpu, gpu) = 8 rows per collective, each naming
# three algorithms and three finite times.
for c in allreduce broadcast allgather reducescatter reduce; do
  n=$(grep -cE "^  $c +134217728 +(4|64) +(1|100) +(cpu|gpu \(assumed\)) +[a-z_]+ +[0-9.]+ +[a-z_]+ +[0-9.]+ +[a-z_]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" "$WORK/out.txt")
  [ "$n" = 8 ] || fail "$c: $n complete rows, expected 8"
done
[ "$(wc -l <"$WORK/scale.csv")" = 41 ] || fail "scale.csv: not a header and 40 rows"
if command -v python3 >/dev/null; then
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["rows"]) == 40, len(d["rows"])' \
    "$WORK/scale.json" || fail "scale.json: not 40 rows of JSON"
fi

row() { # row COLL METHOD CODEC ALGO BYTES TIME RATIO [RANKS, default 4]
  printf '{"collective": "%s", "method": "%s", "codec": "%s", "algo": "%s", "bytes": %s, "count": 1, "type": "float", "redop": "-", "nranks": %s, "time_us": %s, "speedup": null, "ratio": %s, "psnr": null, "wrong": 0}' \
    "$1" "$2" "$3" "$4" "$5" "${8:-4}" "$6" "$7"
}
{
  echo "["
  row allreduce mpi none default 1048576 20000 1; echo ","
  row allreduce zccl none auto 1048576 20000 1; echo ","
  row allreduce zccl-compressed hz auto 1048576 5000 8.1; echo ","
  row broadcast zccl none chain 4194304 30000 1; echo ","
  row pingpong zccl none - 8 30 1
  echo "]"
} >"$WORK/rows.json"
"$SCALE" --predict "$WORK/rows.json" --gbps 1 --latency-us 50 --quick >"$WORK/predict.txt" 2>&1
rc=$?
cat "$WORK/predict.txt"
[ $rc = 0 ] || fail "--predict: exit $rc"
[ "$(grep -cE '^  (allreduce|broadcast) .*%$' "$WORK/predict.txt")" = 4 ] || fail "--predict: not 4 predicted rows"
grep -qE '^# 4 rows \(1 skipped\): worst error' "$WORK/predict.txt" || fail "--predict: no summary line"

# The rows priced as the library chose: a compressed broadcast by the pick
# at the library's default codec figures (the chain here, where the row's
# ratio of 10.7 would price the tree lower), and an allgather by the
# calibrated all-to-all factor (all to all 3x the ring: the ring, not the
# direct round the factor 1 gives).
{
  echo "["
  row broadcast zccl-compressed hz auto 4194304 20000 10.7 8; echo ","
  row allgather zccl none auto 16777216 20000 1
  echo "]"
} >"$WORK/rows2.json"
for a2a in 1 3; do
  "$SCALE" --predict "$WORK/rows2.json" --gbps 0.13 --latency-us 193 --cpu-share 4 --fanout 3 --all-to-all $a2a \
    --quick >"$WORK/predict_a2a$a2a.txt" 2>&1 || fail "--predict --all-to-all $a2a: exit $?"
  cat "$WORK/predict_a2a$a2a.txt"
  grep -qE '^  broadcast +zccl-compressed +hz +auto +4194304 +8 chain ' "$WORK/predict_a2a$a2a.txt" ||
    fail "--predict: the compressed broadcast not priced as the library's chain"
done
grep -qE '^  allgather +zccl +none +auto +16777216 +4 direct ' "$WORK/predict_a2a1.txt" ||
  fail "--predict --all-to-all 1: the allgather not the direct round"
grep -qE '^  allgather +zccl +none +auto +16777216 +4 ring ' "$WORK/predict_a2a3.txt" ||
  fail "--predict --all-to-all 3: the allgather not the ring"

python3 "$SRC/perf/scale_plot.py" -o "$WORK/scale.png" "$WORK/scale.json" >"$WORK/plot.log" 2>&1
rc=$?
if [ $rc = 3 ]; then
  echo "scale_smoke: no matplotlib, plot not checked"
else
  cat "$WORK/plot.log"
  [ $rc = 0 ] || fail "scale_plot.py: exit $rc"
  [ "$(head -c 8 "$WORK/scale.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
fi
echo "scale_smoke: ok"
