#!/usr/bin/env bash
# Rate-distortion of the szp codec beside ZFP fixed accuracy and fixed rate
# (the baseline) on levitus TEMP and SALT, fill points set to 0: PSNR vs bits
# per value. Writes out/codec/rd.jsonl and out/codec/rate_distortion.png and
# prints a table.   perf/rate_distortion.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CODEC=$BUILD/tools/zccl-codec
OUT=out/codec
mkdir -p "$OUT"
: >"$OUT/rd.jsonl"
for field in TEMP SALT; do
  src=levitus_climatology.cdf:$field
  for eb in 1e-1 3e-2 1e-2 3e-3 1e-3 3e-4 1e-4 3e-5 1e-5; do
    for codec in szp zfp-acc; do
      "$CODEC" stats "$src" --dtype f32 --mode rel --eb "$eb" --fill-zero --reps 1 --codec "$codec" --json \
        >>"$OUT/rd.jsonl"
    done
  done
  for rate in 1 2 3 4 6 8 12 16; do
    "$CODEC" stats "$src" --dtype f32 --mode rel --eb 1e-3 --fill-zero --reps 1 --codec zfp-rate --rate "$rate" \
      --json >>"$OUT/rd.jsonl"
  done
done
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3 # Debian's, with matplotlib
"$PY" scripts/plot_rd.py "$OUT/rd.jsonl" "$OUT/rate_distortion.png"
