#!/usr/bin/env bash
# Uncompressed collectives beside OpenMPI: zccl-perf allreduce, allgather and
# broadcast with 4 ranks over shared memory (mpirun on this machine) and over
# 4 netlab hosts at RATE (tc tbf, UCX and OpenMPI on TCP), OpenMPI measured in
# the same runs with its default choice and with each of its algorithms
# forced (coll_tuned_use_dynamic_rules). Prints one Markdown table: bus
# bandwidth (GB/s, nccl-tests' definitions) per size, zccl against the best
# OpenMPI variant. Rows of 1 MiB and more where zccl's median falls below
# the best variant's figure are measured again head to head (the "rematch":
# COLL_REMATCH runs, default 3, of that size alone, zccl and that variant in
# the same zccl-perf run, 9 iterations each): the sweep sets one rank
# median against the luckiest of 7 OpenMPI runs, which on a shared 2-core
# machine reads noise as a gap. Builds nothing; rows and logs go to out/coll/.
#   perf/coll_table.sh [build dir] [rate] [max size]
# Environment: COLL_ROUNDS (default 1) sweeps of every variant, each
# OpenMPI variant then counting the median of its rounds and zccl the
# median of all its runs; COLL_TIMING each|loop (zccl-perf --timing;
# default each); COLL_MIN (default 1M) the netlab sweep's smallest size;
# COLL_ITERS (default 5) timed iterations a size; COLL_WHERE (default
# "shm netlab") which of the two to run. For example, back to
# back from 64 KiB in five rounds:
#   COLL_ROUNDS=5 COLL_TIMING=loop COLL_MIN=64K COLL_ITERS=200 perf/coll_table.sh build 10gbit 4M
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
RATE=${2:-1gbit}
MAXSZ=${3:-64M}
PERF=$BUILD/perf/zccl-perf
NETLAB=$PWD/scripts/netlab
OUT=$PWD/out/coll
STEP=${COLL_TIMEOUT:-600}
REMATCH=${COLL_REMATCH:-3}
ROUNDS=${COLL_ROUNDS:-1}
TIMING=${COLL_TIMING:-each}
MINSZ=${COLL_MIN:-1M}
ITERS=${COLL_ITERS:-5}
WHERE=${COLL_WHERE:-shm netlab}
case "$TIMING" in each | loop) ;; *) echo "coll_table: COLL_TIMING is each or loop" >&2; exit 2 ;; esac
case "$ROUNDS$ITERS" in *[!0-9]*) echo "coll_table: COLL_ROUNDS and COLL_ITERS are whole numbers" >&2; exit 2 ;; esac
RM_ITERS=9 # a rematch's iterations (back to back: as many as the sweep's)
[ "$TIMING" = loop ] && [ "$ITERS" -gt 9 ] && RM_ITERS=$ITERS
[ -x "$PERF" ] || { echo "coll_table: no $PERF (build first)" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.log
LOAD="$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NETLAB_PREFIX=zc$$ NETLAB_NET=10.203.80
netlab_up=0
trap '[ "$netlab_up" = 1 ] && "$NETLAB" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

# OpenMPI 4.1's coll_tuned algorithm numbers worth forcing per collective.
declare -A ALGOS=([allreduce]="2:nonoverlapping 3:recursive_doubling 4:ring 5:segmented_ring 6:rabenseifner"
                  [allgather]="2:bruck 3:recursive_doubling 4:ring 5:neighbor_exchange"
                  [broadcast]="5:binary_tree 6:binomial 7:knomial 8:scatter_allgather 9:scatter_allgather_ring 3:pipeline")
declare -A MCA=([allreduce]=allreduce [allgather]=allgather [broadcast]=bcast)

launch() { # launch WHERE LOG [ENV...] -- CMD...: 4 ranks of CMD there, output to LOG (appended)
  local where=$1 log=$2 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if [ "$where" = shm ]; then
    env "${envs[@]}" timeout -k 10 "$STEP" mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 "$@" \
      >>"$log" 2>&1 </dev/null
  else # (stdin closed: mpirun would read what the caller's loop reads)
    env "${envs[@]}" timeout -k 10 "$STEP" "$NETLAB" run -- "$@" >>"$log" 2>&1 </dev/null
  fi
}

run() { # run WHERE COLL TAG ROUND [ENV...]: one zccl-perf sweep, rows to $OUT/WHERE_COLL_TAG@ROUND.json
  local where=$1 coll=$2 tag=$3 round=$4 sizes warm=1
  shift 4
  if [ "$where" = shm ]; then sizes=(-b 1K -e "$MAXSZ" -f 4); else sizes=(-b "$MINSZ" -e "$MAXSZ" -f 4); fi
  [ "$TIMING" = loop ] && warm=$((ITERS / 10 + 1))
  launch "$where" "$OUT/${where}_${coll}_$tag.log" "$@" -- "$PERF" "$coll" "${sizes[@]}" -n "$ITERS" -w "$warm" \
    --timing "$TIMING" --data levitus_climatology.cdf:TEMP --json "$OUT/${where}_${coll}_$tag@$round.json" ||
    echo "coll_table: $where $coll $tag failed (see $OUT/${where}_${coll}_$tag.log)" >&2
}

for where in $WHERE; do
  if [ "$where" = netlab ]; then
    if [ "$(id -u)" != 0 ] || ! "$NETLAB" up 4 "$RATE" >"$OUT/netlab.log" 2>&1; then
      echo "coll_table: no netlab here (needs root and network namespaces); shared memory only" >&2
      break
    fi
    netlab_up=1
  fi
  for ((round = 0; round < ROUNDS; round++)); do
    for coll in allreduce allgather broadcast; do
      run "$where" "$coll" default "$round"
      for a in ${ALGOS[$coll]}; do
        run "$where" "$coll" "mpi${a%%:*}" "$round" OMPI_MCA_coll_tuned_use_dynamic_rules=1 \
          "OMPI_MCA_coll_tuned_${MCA[$coll]}_algorithm=${a%%:*}"
      done
    done
  done
done

summary() { # summary MODE: the Markdown table, or (candidates) the rows to rematch
  /usr/bin/python3 - "$1" "$OUT" "$RATE" "$LOAD" "$ROUNDS" "$TIMING" "$ITERS" "$RM_ITERS" <<'EOF'
import glob, json, os, sys
mode, out, rate, load, rounds, timing, iters, rm_iters = sys.argv[1:9]
names = {"allreduce": dict(a.split(":") for a in "2:nonoverlapping 3:recursive_doubling 4:ring 5:segmented_ring 6:rabenseifner".split()),
         "allgather": dict(a.split(":") for a in "2:bruck 3:recursive_doubling 4:ring 5:neighbor_exchange".split()),
         "broadcast": dict(a.split(":") for a in "5:binary_tree 6:binomial 7:knomial 8:scatter_allgather 9:scatter_allgather_ring 3:pipeline".split())}
rows, tags = {}, {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    if os.path.basename(f).startswith("rematch_"):
        continue
    where, coll, tag = os.path.basename(f)[:-5].split("@")[0].split("_", 2)
    try:
        data = json.load(open(f))
    except Exception:
        continue
    for r in data:
        key = (where, coll, r["bytes"])
        d = rows.setdefault(key, {"zccl": [], "mpi": {}})
        if r["method"] == "zccl":
            d["zccl"].append(r["busbw_gbps"])
        elif r["method"] == "mpi":
            label = "default" if tag == "default" else names[coll].get(tag[3:], tag)
            d["mpi"].setdefault(label, []).append(r["busbw_gbps"])
            tags[(where, coll, label)] = tag
        d["wrong"] = d.get("wrong", 0) + r["wrong"]
def median(v):
    return sorted(v)[len(v) // 2]

def standing(d):
    """zccl's median over the sweep's runs and OpenMPI's best variant (label, the median of its rounds)."""
    return median(d["zccl"]), max(((k, median(v)) for k, v in d["mpi"].items()), key=lambda kv: kv[1])

def rematch(where, coll, size):
    """Same-run ratios zccl / OpenMPI of the rematch runs of this row."""
    ratios = []
    for f in sorted(glob.glob(os.path.join(out, f"rematch_{where}_{coll}_{size}_*.json"))):
        try:
            data = json.load(open(f))
        except Exception:
            continue
        z = [r["busbw_gbps"] for r in data if r["method"] == "zccl"]
        m = [r["busbw_gbps"] for r in data if r["method"] == "mpi"]
        if z and m and m[0] > 0:
            ratios.append(z[0] / m[0])
    return sorted(ratios)

if mode == "candidates":  # rows worth a rematch: where coll bytes tag
    for (where, coll, size), d in sorted(rows.items()):
        if not d["zccl"] or not d["mpi"] or size < 1 << 20:
            continue
        z, best = standing(d)
        if best[1] and z / best[1] < 1.0:
            print(where, coll, size, tags[(where, coll, best[0])])
    sys.exit(0)
print("| where | collective | size | zccl busbw | OpenMPI default | OpenMPI best (forced) | zccl / best | rematch: zccl / best, same run |")
print("|---|---|---|---|---|---|---|---|")
wrong = 0
for (where, coll, size), d in sorted(rows.items(), key=lambda kv: (kv[0][0] != "shm", kv[0][1], kv[0][2])):
    if not d["zccl"] or not d["mpi"]:
        continue
    z, best = standing(d)
    size_s = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    wh = "shm" if where == "shm" else f"netlab {rate}"
    rm = rematch(where, coll, size)
    rm_s = (f"{median(rm):.2f} ({', '.join(f'{x:.2f}' for x in rm)})" if rm else "")
    print(f"| {wh} | {coll} | {size_s} | {z:.3f} | {median(d['mpi'].get('default', [float('nan')])):.3f} | "
          f"{best[1]:.3f} ({best[0]}) | {z / best[1] if best[1] else float('nan'):.2f} | {rm_s} |")
    wrong += d.get("wrong", 0)
for f in glob.glob(os.path.join(out, "rematch_*.json")):
    try:
        wrong += sum(max(r["wrong"], 0) for r in json.load(open(f)))
    except Exception:
        pass
how = "median of" if timing == "each" else "back to back, the mean of"
print(f"\nbusbw in GB/s (nccl-tests' factors), {how} {iters} iterations; {rounds} round(s): OpenMPI's figures "
      f"are each variant's median over the rounds, zccl's the median over all runs of the sweep; rematch: median "
      f"(all runs) of zccl / the best variant in the same run, that size alone, {rm_iters} iterations. Link rate of netlab: "
      f"{rate}. machine: {load}. elements wrong, all runs: {wrong}")
sys.exit(1 if wrong else 0)
EOF
}

# Rematches, run while netlab (if any) is still up.
summary candidates | while read -r where coll bytes tag; do
  envs=()
  [ "$tag" != default ] && envs=(OMPI_MCA_coll_tuned_use_dynamic_rules=1
                                 "OMPI_MCA_coll_tuned_${MCA[$coll]}_algorithm=${tag#mpi}")
  for ((i = 0; i < REMATCH; i++)); do
    launch "$where" "$OUT/rematch.log" "${envs[@]}" -- "$PERF" "$coll" -b "$bytes" -e "$bytes" -n "$RM_ITERS" -w 1 \
      --timing "$TIMING" --data levitus_climatology.cdf:TEMP --json "$OUT/rematch_${where}_${coll}_${bytes}_$i.json" ||
      echo "coll_table: rematch $where $coll $bytes failed (see $OUT/rematch.log)" >&2
  done
done
summary table
