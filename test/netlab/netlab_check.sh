#!/usr/bin/env bash
# The emulated cluster works: 2 hosts at 1 Gbit/s, iperf3 between them within
# 10% of the rate, and an MPI job of zccl-perf across them whose bytes show
# up in the shaped links' tc counters; then zccl's own communicators across
# them (UCX over TCP, one rank per namespace), brought up through PMIx and
# through a unique id in a file, running the point-to-point test, with their
# bytes in the counters too; last, NETLAB_BURST (refused when not bytes,
# a 4 KiB one shaping the link). Skipped (77) without root or network namespaces.
#   netlab_check.sh <scripts/netlab> <zccl-perf> <test_p2p>
set -u
NETLAB=$1
PERF=$2
P2P=$3
export NETLAB_PREFIX=zt$$ NETLAB_NET=10.203.78
[ "$(id -u)" = 0 ] || { echo "SKIP: netlab needs root"; exit 77; }
ip netns add "${NETLAB_PREFIX}probe" 2>/dev/null || { echo "SKIP: no network namespaces here"; exit 77; }
ip netns delete "${NETLAB_PREFIX}probe"
trap '"$NETLAB" down >/dev/null 2>&1' EXIT
fail=0
# iperf3 from h1 to h0 for 3 s must carry LO..HI Mbit/s; an empty or
# non-numeric figure (iperf3 or its JSON having failed) fails too.
#   iperf_check RATE LO HI [WHAT]
iperf_check() {
  local mbps
  "$NETLAB" exec 0 -- iperf3 -s -1 -D || exit 1
  sleep 0.5
  mbps=$("$NETLAB" exec 1 -- iperf3 -c "$("$NETLAB" addr 0)" -t 3 -J | python3 -c \
    'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))')
  echo "iperf3 h1 -> h0${4:-}: $mbps Mbit/s (rate $1)"
  case "$mbps" in
    ''|*[!0-9]*) echo "FAIL: no iperf3 figure"; fail=1 ;;
    *) if [ "$mbps" -lt "$2" ] || [ "$mbps" -gt "$3" ]; then echo "FAIL: not within $2-$3 Mbit/s"; fail=1; fi ;;
  esac
}
"$NETLAB" up 2 1gbit || exit 1
iperf_check 1000 900 1100
before=$("$NETLAB" stats | awk '{s += $4} END {print s}')
"$NETLAB" run -- "$PERF" allreduce -b 1M -e 2M -n 2 -w 1 --data levitus_climatology.cdf:TEMP || { echo "FAIL: job"; fail=1; }
after=$("$NETLAB" stats | awk '{s += $4} END {print s}')
echo "bytes through the shaped links during the job: $((after - before))"
# 2 ranks, allreduce of 1 and 2 MiB, 3 runs each: at least a few MiB each way.
if [ $((after - before)) -lt $((4 * 1048576)) ]; then echo "FAIL: the job's bytes did not cross the links"; fail=1; fi
# zccl across the hosts: every byte of the point-to-point test crosses a
# shaped link (UCX_TLS=tcp,self: no shared memory between namespaces).
for boot in pmix tcp; do
  idfile=$(mktemp -u /tmp/zccl-netlab-XXXXXX.id)
  before=$("$NETLAB" stats | awk '{s += $4} END {print s}')
  if [ $boot = pmix ]; then
    ZCCL_BOOTSTRAP=pmix "$NETLAB" run -- "$P2P" pmix-env || { echo "FAIL: test_p2p (PMIx) across hosts"; fail=1; }
  else
    ZCCL_BOOTSTRAP=tcp "$NETLAB" run -- "$P2P" id-file "$idfile" || { echo "FAIL: test_p2p (unique id) across hosts"; fail=1; }
  fi
  rm -f "$idfile"
  after=$("$NETLAB" stats | awk '{s += $4} END {print s}')
  echo "zccl test_p2p ($boot bootstrap): $((after - before)) bytes through the shaped links"
  # The ring alone moves 2 x 4 MiB each way.
  if [ $((after - before)) -lt $((8 * 1048576)) ]; then echo "FAIL: zccl's bytes did not cross the links"; fail=1; fi
done
# NETLAB_BURST: a burst that is not a byte count is refused; a 4 KiB one
# still shapes the link and carries most of the rate (about 180 Mbit/s
# here: TCP waits on a bucket that holds under three segments).
"$NETLAB" down
if NETLAB_BURST=12 "$NETLAB" up 2 200mbit 2>/dev/null; then echo "FAIL: NETLAB_BURST=12 accepted"; fail=1; fi
NETLAB_BURST=4096 "$NETLAB" up 2 200mbit || exit 1
iperf_check 200 150 220 " with a 4096-byte burst"
exit $fail
