#!/usr/bin/env bash
# Compressed collectives on netlab hosts (HOSTS, default 4) at RATE (default 1gbit): every
# collective zccl compresses, zccl-perf with OpenMPI's default beside zccl
# and zccl compressed (codec, REL bound) on a real field, plus OpenMPI's ring
# allreduce forced. Prints one Markdown table: time, speedup against each
# OpenMPI variant, the time over the compressed link time (the bytes each
# link must carry at the achieved ratio, over RATE: nccl-tests' bus factor
# times the size over the ratio; so time / link time = RATE x ratio /
# busbw), ratio, max error / bound, PSNR. Builds nothing; rows and logs go
# to out/ccoll/. Needs root (netlab).
#   perf/compressed_table.sh [build dir] [rate] [sizes: -b -e -f as one string] [specs]
# specs: one or more zccl-perf --compression SPEC[@ALGO], space separated; each
# is a row of its own (e.g. "codec=hz,mode=rel,eb=1e-3 codec=hz,mode=rel,eb=1e-3@rd").
# COLLS="allreduce allgather" limits the collectives (default: all 8).
# HOSTS=2 runs on 2 hosts: one rank per core of this 2-core machine, where 4
# share them (docs/measurements/compressed.md, "Where the 1 Gbit/s time goes").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
RATE=${2:-1gbit}
SIZES=${3:-"-b 4M -e 128M -f 4"}
SPEC=${4:-codec=hz,mode=rel,eb=1e-3}
HOSTS=${HOSTS:-4}
COMP=()
for s in $SPEC; do COMP+=(--compression "$s"); done
PERF=$BUILD/perf/zccl-perf
NETLAB=$PWD/scripts/netlab
OUT=$PWD/out/ccoll
[ -x "$PERF" ] || { echo "compressed_table: no $PERF (build first)" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.log
export NETLAB_PREFIX=zt$$ NETLAB_NET=10.203.87
trap '"$NETLAB" down >/dev/null 2>&1' EXIT
"$NETLAB" up "$HOSTS" "$RATE" >"$OUT/netlab.log" 2>&1 || { echo "compressed_table: netlab up failed (root?)" >&2; exit 2; }
run() { # run COLL TAG [ENV...]
  local coll=$1 tag=$2
  shift 2
  # shellcheck disable=SC2086
  env "$@" timeout -k 10 900 "$NETLAB" run -- "$PERF" "$coll" $SIZES -n 3 -w 1 \
    --data levitus_climatology.cdf:TEMP "${COMP[@]}" --json "$OUT/${coll}_$tag.json" \
    >"$OUT/${coll}_$tag.log" 2>&1 || echo "compressed_table: $coll $tag failed (see $OUT/${coll}_$tag.log)" >&2
}
for coll in ${COLLS:-allreduce reducescatter reduce allgather broadcast scatter gather alltoall}; do
  run "$coll" default
done
[[ " ${COLLS:-allreduce} " == *" allreduce "* ]] && run allreduce mpiring OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=4

/usr/bin/python3 - "$OUT" "$RATE" "$SPEC" "$HOSTS" <<'EOF'
import glob, json, os, re, sys
out, rate, spec, hosts = sys.argv[1:5]
m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate)
rate_Bps = float(m[1]) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m[2]] / 8 if m else float("nan")
rows = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    coll, tag = os.path.basename(f)[:-5].split("_", 1)
    for r in json.load(open(f)):
        d = rows.setdefault((coll, r["bytes"]), {})
        key = r["method"] if r["method"] != "mpi" else ("mpi" if tag == "default" else "mpi-" + tag[3:])
        if key in ("zccl", "zccl-compressed") and tag != "default":
            continue
        if key == "zccl-compressed":
            key = f"zccl-compressed {r['codec']} {r['algo']}"
        d[key] = r
print(f"netlab, {hosts} hosts at {rate}; levitus TEMP tiled; zccl-compressed {spec}; time in ms (median of 3)")
print("max err / eb: the largest error in units of the absolute bound eb (docs/compressed.md gives each "
      "algorithm's bound: N eb for a homomorphic SUM of N ranks)\n")
print("× link time: zccl compressed's time over the compressed link time (each link's bytes at the achieved "
      "ratio over the link rate)\n")
print("| collective | size | method | OpenMPI default | OpenMPI ring | zccl | zccl compressed | × default | × ring | × zccl | × link time | ratio | max err / eb | RMSE | PSNR | wrong |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
order = "allreduce reducescatter reduce allgather broadcast scatter gather alltoall".split()
wrong = 0
for (coll, b), d in sorted(rows.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
    m, ring, z = d.get("mpi"), d.get("mpi-ring"), d.get("zccl")
    w = sum((r["wrong"] or 0) for r in d.values() if r["wrong"] and r["wrong"] > 0)
    wrong += w
    for key in sorted(k for k in d if k.startswith("zccl-compressed")):
        zc = d[key]
        if not m:
            continue
        t = lambda r: f"{r['time_us'] / 1e3:.1f}" if r else "-"
        sp = lambda r: f"{r['time_us'] / zc['time_us']:.2f}" if r else "-"
        err_eb = zc["max_abs_err"] / zc["eb_abs"] if zc["eb_abs"] and zc["max_abs_err"] is not None else float("nan")
        xlink = rate_Bps * zc["ratio"] / (zc["busbw_gbps"] * 1e9) if zc["busbw_gbps"] else float("nan")
        print(f"| {coll} | {b >> 20} MiB | {key[16:]} | {t(m)} | {t(ring)} | {t(z)} | {t(zc)} | {sp(m)} | {sp(ring)} | "
              f"{sp(z)} | {xlink:.2f} | {zc['ratio']:.2f} | {err_eb:.3f} | {zc.get('rmse') or 0:.3g} | {zc['psnr'] or float('inf'):.1f} | "
              f"{zc['wrong']} |")
print(f"\nelements outside tolerance or bound, all rows: {wrong}")
EOF
