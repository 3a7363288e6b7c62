#!/usr/bin/env bash
# Small-message latency beside OpenMPI over shared memory (this machine):
# zccl-perf pingpong (8 B to 4 KiB, 2 ranks) and allreduce (8 B to 4 KiB, 2
# and 4 ranks), each zccl row against OpenMPI's in the same run, ROUNDS
# rounds interleaved. The allreduce also runs with ZCCL_CHECK_CALLS=0 (no
# call signature sent beside each collective) to show what the check costs.
# Prints one Markdown table: median over rounds of each time and of the
# ratio zccl / OpenMPI, and whether it is within the target (pingpong 2x,
# allreduce 1.2x). Builds nothing; rows and logs go to out/latency/.
#   perf/latency_table.sh [build dir] [rounds]
# Exit 1 when a run failed or found a wrong element, 0 otherwise (a ratio
# over its target is a finding, printed, not a failure).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
ROUNDS=${2:-5}
PERF=$BUILD/perf/zccl-perf
OUT=$PWD/out/latency
[ -x "$PERF" ] || { echo "latency_table: no $PERF (build first)" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.log
LOAD="$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
SIZES=(-b 8 -e 4K -f 8)
fail=0
run() { # run NAME NP COLL ITERS [ENV...]
  local name=$1 np=$2 coll=$3 iters=$4
  shift 4
  env "$@" timeout -k 10 180 mpirun --bind-to none -np "$np" "$PERF" "$coll" "${SIZES[@]}" -n "$iters" -w 200 \
    --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1 ||
    { echo "latency_table: $name failed (see $OUT/$name.log)" >&2; fail=1; }
}
for r in $(seq 1 "$ROUNDS"); do
  echo "latency_table: round $r of $ROUNDS" >&2
  run "pingpong_np2_r$r" 2 pingpong 20
  for np in 2 4; do
    run "allreduce_np${np}_r$r" "$np" allreduce 3000
    run "allreduce_np${np}_unchecked_r$r" "$np" allreduce 3000 ZCCL_CHECK_CALLS=0
  done
done

python3 - "$OUT" "$ROUNDS" "$LOAD" <<'PY' || fail=1
import json, os, statistics, sys
out, rounds, load = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TARGET = {"pingpong": 2.0, "allreduce": 1.2}

def rows(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        return []

def times(name, method):  # {bytes: [time_us per round]}, and the wrong elements seen
    t, wrong = {}, 0
    for r in range(1, rounds + 1):
        for row in rows("%s_r%d" % (name, r)):
            if row["method"] != method:
                continue
            t.setdefault(row["bytes"], []).append(row["time_us"])
            wrong += max(row["wrong"], 0)
    return t, wrong

def ratios(name, zname):  # per size: median of zccl/mpi over the rounds where both ran
    out_ = {}
    for r in range(1, rounds + 1):
        mpi = {row["bytes"]: row["time_us"] for row in rows("%s_r%d" % (name, r)) if row["method"] == "mpi"}
        for row in rows("%s_r%d" % (zname, r)):
            if row["method"] == "zccl" and row["bytes"] in mpi and mpi[row["bytes"]] > 0:
                out_.setdefault(row["bytes"], []).append(row["time_us"] / mpi[row["bytes"]])
    return {b: statistics.median(v) for b, v in out_.items()}

med = lambda v: statistics.median(v) if v else None
fmt = lambda v, f="%.1f": f % v if v is not None else "n/a"
print("Small-message latency over shared memory (%s; median of %d rounds; ratio = zccl / OpenMPI)\n" % (load, rounds))
print("| test | ranks | bytes | OpenMPI us | zccl us | ratio | target | within | zccl unchecked us | ratio unchecked |")
print("|---|---|---|---|---|---|---|---|---|---|")
bad = 0
for coll, np_ in (("pingpong", 2), ("allreduce", 2), ("allreduce", 4)):
    name = "%s_np%d" % (coll, np_)
    mpi, w1 = times(name, "mpi")
    zc, w2 = times(name, "zccl")
    unchecked, w3 = times(name + "_unchecked", "zccl") if coll == "allreduce" else ({}, 0)
    bad += w1 + w2 + w3
    rz = ratios(name, name)
    ru = ratios(name, name + "_unchecked") if coll == "allreduce" else {}
    for b in sorted(set(mpi) | set(zc)):
        r = rz.get(b)
        ok = "yes" if r is not None and r <= TARGET[coll] else "no" if r is not None else "n/a"
        print("| %s | %d | %d | %s | %s | %s | %.1fx | %s | %s | %s |" % (
            coll, np_, b, fmt(med(mpi.get(b, []))), fmt(med(zc.get(b, []))), fmt(r, "%.2f"), TARGET[coll], ok,
            fmt(med(unchecked.get(b, []))) if coll == "allreduce" else "-",
            fmt(ru.get(b), "%.2f") if coll == "allreduce" else "-"))
if bad:
    print("\n%d wrong elements (see %s)" % (bad, out))
sys.exit(1 if bad else 0)
PY
exit $fail
