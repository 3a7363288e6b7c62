#!/usr/bin/env bash
# The point-to-point table: zccl-perf pingpong and sendrecv (zccl beside
# OpenMPI on the same buffers) from 8 B to 64 MiB over shared memory (mpirun
# -np 2 on this machine) and, as root with network namespaces, over TCP
# between two netlab hosts (UCX_TLS=tcp,self, OpenMPI's tcp BTL); ucx_perftest
# with the same UCX_TLS as a third reference (tag_lat 8 B, tag_bw 64 MiB).
# Builds nothing. Prints one Markdown table; the runs' rows and logs go to
# out/p2p/. Exit 1 when a zccl-perf run failed or found a wrong element.
#   perf/p2p_table.sh [build dir] [netlab rate]
# The rate defaults to 100gbit, which tbf never reaches here (veth TCP is
# CPU-bound well below it), so the link is not the limit.
set -uo pipefail # not -e: a step that fails leaves n/a and the rest goes on
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
RATE=${2:-100gbit}
PERF=$BUILD/perf/zccl-perf
NETLAB=$PWD/scripts/netlab
OUT=$PWD/out/p2p
STEP=${P2P_TIMEOUT:-120} # seconds, every step
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2)
SWEEP=(-b 8 -e 64M -f 2)
[ -x "$PERF" ] || { echo "p2p_table: no $PERF (build first)" >&2; exit 2; }
command -v ucx_perftest >/dev/null || echo "p2p_table: no ucx_perftest (ucx-utils): its column stays n/a" >&2
mkdir -p "$OUT"
# Busy-polling ranks share the cores with whatever else runs: say how loaded the machine was.
LOAD="$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
rm -f "$OUT"/*.json "$OUT"/*.log "$OUT"/*.ucx

# A cluster of our own (prefix, addresses) so a netlab test beside us is untouched.
export NETLAB_PREFIX=zp$$ NETLAB_NET=10.203.79
netlab_up=0
servers=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  local p
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done
  [ "$netlab_up" = 1 ] && "$NETLAB" down >/dev/null 2>&1
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail=0
step() { # step NAME CMD...: runs CMD under the timeout, output to out/p2p/NAME.log
  local name=$1 rc
  shift
  timeout -k 10 "$STEP" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || echo "p2p_table: $name: exit $rc (see $OUT/$name.log)" >&2
  return "$rc"
}

# perf TRANSPORT LAUNCHER...: pingpong and sendrecv, zccl and MPI rows.
perf() {
  local tr=$1 mode
  shift
  for mode in pingpong sendrecv; do
    step "${tr}_$mode" "$@" "$PERF" "$mode" "${SWEEP[@]}" --json "$OUT/${tr}_$mode.json" || fail=1
  done
}

# ucx TRANSPORT SERVER_HOST "SERVER PREFIX" "CLIENT PREFIX": tag_lat 8 B and
# tag_bw 64 MiB; each "Final:" line goes to out/p2p/TRANSPORT_TEST.ucx.
ucx() {
  local tr=$1 host=$2 test size iters port ok
  local -a srv cli
  read -ra srv <<<"$3"
  read -ra cli <<<"$4"
  command -v ucx_perftest >/dev/null || return 0
  for test in tag_lat tag_bw; do
    if [ "$test" = tag_lat ]; then size=8 iters=10000; else size=67108864 iters=20; fi
    port=$((20000 + RANDOM % 10000))
    timeout -k 5 "$STEP" "${srv[@]}" ucx_perftest -p "$port" >"$OUT/${tr}_${test}_server.log" 2>&1 &
    servers+=($!)
    ok=0
    for _ in 1 2 3; do # the server may not be listening yet
      sleep 1
      step "${tr}_${test}" "${cli[@]}" ucx_perftest "$host" -p "$port" -t "$test" -s "$size" -n "$iters" &&
        ok=1 && break
    done
    grep '^Final:' "$OUT/${tr}_${test}.log" >"$OUT/${tr}_${test}.ucx"
    [ "$ok" = 1 ] || kill "${servers[-1]}" 2>/dev/null # no client came: do not wait out its timeout
    wait "${servers[-1]}" 2>/dev/null
  done
}

echo "p2p_table: shared memory (mpirun -np 2, this machine)" >&2
perf shm "${MPIRUN[@]}"
ucx shm 127.0.0.1 "" ""

transports=shm
if [ "$(id -u)" != 0 ]; then
  echo "p2p_table: not root: no TCP (netlab) rows" >&2
elif ! ip netns add "${NETLAB_PREFIX}probe" 2>/dev/null; then
  echo "p2p_table: no network namespaces here: no TCP (netlab) rows" >&2
else
  ip netns delete "${NETLAB_PREFIX}probe"
  netlab_up=1
  if step netlab_up "$NETLAB" up 2 "$RATE"; then
    echo "p2p_table: TCP between 2 netlab hosts at $RATE" >&2
    transports="shm tcp"
    perf tcp "$NETLAB" run -np 2 --
    tcp_env="env UCX_TLS=tcp,self UCX_NET_DEVICES=eth0"
    ucx tcp "$("$NETLAB" addr 1)" "$NETLAB exec 1 -- $tcp_env" "$NETLAB exec 0 -- $tcp_env"
  else
    fail=1
  fi
  "$NETLAB" down >/dev/null 2>&1
  netlab_up=0
fi

# shellcheck disable=SC2086 # one argument per transport
python3 - "$OUT" "$RATE" "$LOAD" $transports <<'PY' || fail=1
import json, os, sys
out, rate, load, transports = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
GB = 1e9

def rows(tr, mode):
    try:
        return json.load(open(os.path.join(out, "%s_%s.json" % (tr, mode))))
    except (OSError, ValueError):
        return []

def ucx(tr, test):  # Final: iters p50 avg overall bw_avg bw_overall(MB/s = MiB/s) rate_avg rate_overall
    try:
        f = open(os.path.join(out, "%s_%s.ucx" % (tr, test))).read().split()
        return float(f[2]) if test == "tag_lat" else float(f[6]) * 1048576 / GB
    except (OSError, IndexError, ValueError):
        return None

def why_no_zccl(tr, mode):
    try:
        for line in open(os.path.join(out, "%s_%s.log" % (tr, mode))):
            if line.startswith("# zccl:") or line.startswith("# zccl-compressed:"):
                return line[2:].strip()
    except OSError:
        pass
    return None

def fmt(v):
    return "n/a" if v is None else "%.2f" % v

names = {"shm": "shm (mpirun -np 2)", "tcp": "TCP (netlab, %s)" % rate}
print("| transport | test | size | metric | zccl | mpi | ucx_perftest | zccl/best |")
print("|---|---|---|---|---|---|---|---|")
wrong, notes = 0, []
for tr in transports:
    for mode in ("pingpong", "sendrecv"):
        rs = rows(tr, mode)
        wrong += sum(max(r["wrong"], 0) for r in rs)
        for size in (8, 65536, 1 << 20, 64 << 20):
            lat = size == 8
            def val(method):
                r = [r for r in rs if r["method"] == method and r["bytes"] == size]
                return None if not r else r[0]["time_us"] if lat else r[0]["algbw_gbps"]
            z, m = val("zccl"), val("mpi")
            u = None
            if mode == "pingpong" and size in (8, 64 << 20):
                u = ucx(tr, "tag_lat" if lat else "tag_bw")
            refs = [v for v in (m, u) if v is not None]
            best = (min(refs) if lat else max(refs)) if refs else None
            ratio = None if z is None or best is None else (best / z if lat else z / best)
            label = "%d B" % size if size < 1024 else "%d KiB" % (size >> 10) if size < (1 << 20) else "%d MiB" % (size >> 20)
            print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                names[tr], mode, label, "latency us" if lat else "GB/s", fmt(z), fmt(m),
                "-" if mode != "pingpong" or size not in (8, 64 << 20) else fmt(u), fmt(ratio)))
        w = why_no_zccl(tr, mode)
        if w and w not in notes:
            notes.append(w)
print()
print("pingpong: latency = half a round trip (median); bandwidth = bytes / half round trip. "
      "sendrecv: every rank sends to the next and receives from the previous, bytes / time. "
      "ucx_perftest: tag_lat 50th percentile, tag_bw overall (same UCX_TLS as the run). "
      "zccl/best: zccl against the better of mpi and ucx_perftest, > 1 when zccl is faster.")
for n in notes:
    print(n)
print("machine: %s (the ranks poll: figures hold only on an otherwise idle machine)" % load)
print("elements received wrong, all runs: %d" % wrong)
sys.exit(1 if wrong else 0)
PY
exit $fail
