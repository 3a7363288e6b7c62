#!/usr/bin/env bash
# scripts/plot writes its PNGs from a small zccl-perf-shaped JSON (mpi, zccl
# and zccl-compressed rows, two collectives), leaves out the error plot when
# no compressed row exists, and refuses rows that lack a contract field.
# Exit 77 (CTest: skipped) when no python3 with matplotlib is found.
#   test/tools/plot_smoke.sh SOURCE_DIR WORK_DIR
set -uo pipefail
SRC=$1
WORK=$2
PLOT=$SRC/scripts/plot
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
fail() { echo "plot_smoke: $*" >&2; exit 1; }

row() { # row COLL METHOD CODEC BYTES TIME SPEEDUP RATIO ERR EB
  printf '{"collective": "%s", "method": "%s", "codec": "%s", "algo": "auto", "bytes": %s, "count": %s, "type": "float", "redop": "sum", "nranks": 4, "time_us": %s, "algbw_gbps": %s, "busbw_gbps": %s, "speedup": %s, "ratio": %s, "max_abs_err": %s, "eb_abs": %s, "psnr": null, "wrong": 0}' \
    "$1" "$2" "$3" "$4" $(($4 / 4)) "$5" "$(awk "BEGIN{print $4/$5/1e3}")" "$(awk "BEGIN{print 1.5*$4/$5/1e3}")" "$6" "$7" "$8" "$9"
}
{
  echo "["
  sep=""
  for coll in allreduce alltoall; do
    for b in 4096 65536 1048576; do
      printf '%s%s' "$sep" "$(row $coll mpi none $b 100 1 1 0 0)"; sep=$',\n'
      printf '%s%s' "$sep" "$(row $coll zccl none $b 80 1.25 1 0 0)"
      printf '%s%s' "$sep" "$(row $coll zccl-compressed szp $b 40 2.5 6.5 0.0009 0.001)"
    done
  done
  echo; echo "]"
} >"$WORK/rows.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$WORK/rows.json" || fail "the test's own JSON is invalid"

"$PLOT" -o "$WORK/out" --prefix t "$WORK/rows.json" >"$WORK/plot.log" 2>&1
rc=$?
[ $rc = 3 ] && { cat "$WORK/plot.log"; exit 77; }
[ $rc = 0 ] || { cat "$WORK/plot.log"; fail "exit $rc"; }
for p in busbw speedup error; do
  f=$WORK/out/t-$p.png
  [ -s "$f" ] || fail "no $f"
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f is not a PNG"
done

# Uncompressed rows only: no error plot, still exit 0.
grep -v zccl-compressed "$WORK/rows.json" | sed -z 's/,\n\]/\n]/' >"$WORK/plain.json"
"$PLOT" -o "$WORK/plain" "$WORK/plain.json" >"$WORK/plain.log" 2>&1 || { cat "$WORK/plain.log"; fail "plain rows: exit $?"; }
[ -s "$WORK/plain/zccl-perf-busbw.png" ] || fail "plain rows: no busbw plot"
[ -e "$WORK/plain/zccl-perf-error.png" ] && fail "plain rows: an error plot without compressed rows"

# A row without a contract field is an error (exit 2), not a silent gap.
echo '[{"collective": "allreduce", "method": "zccl", "bytes": 8}]' >"$WORK/bad.json"
"$PLOT" -o "$WORK/bad" "$WORK/bad.json" >"$WORK/bad.log" 2>&1
rc=$?
[ $rc = 2 ] || { cat "$WORK/bad.log"; fail "a row lacking fields: exit $rc, want 2"; }
echo "plot_smoke: ok"
