#!/usr/bin/env bash
# The codec's table: levitus TEMP and SALT, REL 1e-2/1e-3/1e-4, tiled to
# 64 MiB, fill points set to 0 (and kept exactly, for comparison), 1 thread
# and all threads; throughput beside memcpy of the same buffer in the same
# run. Prints a Markdown table; rows go to out/codec/codec.jsonl.
#   perf/codec_table.sh [build dir] [reps]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
REPS=${2:-7}
CODEC=$BUILD/tools/zccl-codec
OUT=out/codec
mkdir -p "$OUT"
: >"$OUT/codec.jsonl"
for field in TEMP SALT; do
  for eb in 1e-2 1e-3 1e-4; do
    for fill in --fill-zero ""; do
      for threads in 1 0; do
        [ -z "$fill" ] && [ "$threads" = 0 ] && continue
        "$CODEC" stats "levitus_climatology.cdf:$field" --dtype f32 --mode rel --eb "$eb" $fill \
          --tile 64M --reps "$REPS" --threads "$threads" --json >>"$OUT/codec.jsonl"
      done
    done
  done
done
python3 - "$OUT/codec.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| field | REL eb | fill | threads | ratio | bits/value | max err / eb | PSNR (uniform) | memcpy GB/s | compress GB/s (x memcpy) | decompress GB/s (x) | hsum GB/s (x) | hsum / DOC | compress+hsum fused GB/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    m = r["memcpy_gbps"]
    print("| %s | %g | %s | %d | %.2f | %.2f | %.4f | %.1f (%.1f) | %.2f | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) | %.2f | %.2f |" % (
        r["source"].split(":")[-1], r["eb"], "kept" if r["fill"] else "zeroed", r["threads"], r["ratio"],
        r["bits_per_value"], r["max_err_over_eb"], r["psnr"], r["psnr_uniform"], m, r["comp_gbps"],
        r["comp_gbps"] / m, r["decomp_gbps"], r["decomp_gbps"] / m, r["hsum_gbps"], r["hsum_gbps"] / m,
        r["hsum_gbps"] / r["doc_gbps"], r["compress_hsum_gbps"]))
# Speedups are measured in the all-threads run itself: each round times the
# same work on one thread too (zccl-codec stats), so both sides share the
# machine's moments.
print("\n| field | REL eb | threads | compress speedup | decompress speedup | hsum speedup |")
print("|---|---|---|---|---|---|")
for r in rows:
    if r.get("comp_speedup") is None or r["fill"]:
        continue
    print("| %s | %g | %d vs 1 | %.2f | %.2f | %.2f |" % (r["source"].split(":")[-1], r["eb"], r["threads"],
          r["comp_speedup"], r["decomp_speedup"], r["hsum_speedup"]))
bad = sum(r["outside_bound"] for r in rows)
print("\nelements outside the bound, all rows: %d" % bad)
PY
