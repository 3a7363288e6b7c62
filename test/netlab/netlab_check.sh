#!/usr/bin/env bash
# The emulated cluster works: 2 hosts at 1 Gbit/s, iperf3 between them within
# 10% of the rate, and an MPI job of zccl-perf across them whose bytes show
# up in the shaped links' tc counters. Skipped (77) without root or network
# namespaces.   netlab_check.sh <scripts/netlab> <zccl-perf>
set -u
NETLAB=$1
PERF=$2
export NETLAB_PREFIX=zt$$ NETLAB_NET=10.203.78
[ "$(id -u)" = 0 ] || { echo "SKIP: netlab needs root"; exit 77; }
ip netns add "${NETLAB_PREFIX}probe" 2>/dev/null || { echo "SKIP: no network namespaces here"; exit 77; }
ip netns delete "${NETLAB_PREFIX}probe"
trap '"$NETLAB" down >/dev/null 2>&1' EXIT
fail=0
"$NETLAB" up 2 1gbit || exit 1
"$NETLAB" exec 0 -- iperf3 -s -1 -D || exit 1
sleep 0.5
mbps=$("$NETLAB" exec 1 -- iperf3 -c "$("$NETLAB" addr 0)" -t 3 -J | python3 -c \
  'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))')
echo "iperf3 h1 -> h0: $mbps Mbit/s (rate 1000)"
if [ "$mbps" -lt 900 ] || [ "$mbps" -gt 1100 ]; then echo "FAIL: not within 10% of 1 Gbit/s"; fail=1; fi
before=$("$NETLAB" stats | awk '{s += $4} END {print s}')
"$NETLAB" run -- "$PERF" allreduce -b 1M -e 2M -n 2 -w 1 --data levitus_climatology.cdf:TEMP || { echo "FAIL: job"; fail=1; }
after=$("$NETLAB" stats | awk '{s += $4} END {print s}')
echo "bytes through the shaped links during the job: $((after - before))"
# 2 ranks, allreduce of 1 and 2 MiB, 3 runs each: at least a few MiB each way.
if [ $((after - before)) -lt $((4 * 1048576)) ]; then echo "FAIL: the job's bytes did not cross the links"; fail=1; fi
exit $fail
