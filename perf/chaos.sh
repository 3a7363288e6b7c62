#!/usr/bin/env bash
# The chaos run: the hostile and unlucky users' probes of issue 35, repeated,
# with one table at the end:
#   probe | tries | crashes | hangs | silent wrong | clean errors | worst
# - kill: a rank dies by SIGKILL in the middle of each collective (plain and
#   compressed, shared memory and TCP, 2, 4 and 8 ranks; test_kill_coll, a
#   try is one survivor's call); worst = seconds from the kill to its error,
#   against ZCCL_TIMEOUT (2 s there) + 10 MB/s for the buffer + 1 s.
# - bootstrap: 4 ranks form a job while 100 silent and 100 slow-drip
#   connections, 1,000 garbage or forged hellos, a secret holder with a
#   wrong nranks, an out-of-range rank and replayed hellos/answers hit the
#   root (bootstrap_attack; a try is one such run); worst = formation time.
# - leak: init + AllReduce + destroy cycles on one rank (unique id) and on
#   two and four ranks (--quick: two) under mpirun (PMIx and TCP
#   bootstraps; comm_leak, comm_leak_mpi); a
#   try is one cycle, "silent wrong" a run whose threads, fds or heap grew;
#   worst = the largest heap and RSS growth of a rank over its cycles.
# - corruption: single-bit flips of a compressed levitus TEMP stream with
#   and without chunk checksums (codec_integrity --flips); a try is one
#   flip, "silent wrong" one that decoded to changed values, "clean" one
#   the decoder refused.
# Builds nothing. Logs go to out/chaos/.
#   perf/chaos.sh [build dir] [--quick]
# --quick: fewer repetitions (a few minutes instead of about 8 here).
set -uo pipefail # not -e: a probe that fails is counted, and the rest goes on
cd "$(dirname "$0")/.." || exit 2
BUILD=$(cd "${1:-build}" && pwd) || exit 2
QUICK=0
[ "${2:-}" = "--quick" ] && QUICK=1
T=$BUILD/test
OUT=$PWD/out/chaos
mkdir -p "$OUT"
rm -f "$OUT"/*.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for b in test_kill_coll bootstrap_attack comm_leak comm_leak_mpi codec_integrity; do
  [ -x "$T/$b" ] || { echo "chaos: no $T/$b (build the tests first)" >&2; exit 2; }
done
ROWS=()
# row NAME TRIES CRASHES HANGS SILENT CLEAN WORST
row() { ROWS+=("$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$@")"); }

# ---- kill -------------------------------------------------------------------
kill_log=$OUT/kill.log
ranks=(2 4 8)
[ $QUICK = 1 ] && ranks=(4)
for tls in shm tcp; do
  for kind in plain compressed; do
    for n in "${ranks[@]}"; do
      if [ "$tls" = tcp ]; then export UCX_TLS=tcp; else unset UCX_TLS; fi
      timeout 900 "$T/test_kill_coll" all "$n" 8388608 "$kind" >>"$kill_log" 2>&1
      [ $? = 124 ] && echo "PROBE kill all rank -1: hang" >>"$kill_log"
    done
  done
done
unset UCX_TLS
# A survivor's line: "PROBE kill COLL KIND npN TLS rank R: clean|silent|other SECONDS s bound B"
read -r k_try k_crash k_hang k_silent k_clean k_worst k_over < <(awk '
  /^PROBE kill/ {
    if ($0 ~ /: hang/) { hang++; tries++; next }
    if ($0 ~ /: crash/) { crash++; tries++; next }
    tries++
    for (i = 1; i <= NF; i++) if ($i ~ /:$/) { out = $(i + 1); t = $(i + 2); b = $(i + 5) }
    if (out == "clean") clean++; else if (out == "silent") silent++
    if (t > worst) worst = t
    if (t > b) over++
  }
  END { printf "%d %d %d %d %d %.2f %d\n", tries, crash, hang, silent, clean, worst, over }' "$kill_log")
row "kill (SIGKILL mid-call, every collective)" "$k_try" "$k_crash" "$k_hang" "$k_silent" "$k_clean" \
  "${k_worst} s (${k_over} over the bound)"

# ---- bootstrap ----------------------------------------------------------------
b_log=$OUT/bootstrap.log
runs=10
[ $QUICK = 1 ] && runs=3
b_crash=0 b_hang=0 b_bad=0 b_clean=0
for ((i = 0; i < runs; i++)); do
  timeout 300 "$T/bootstrap_attack" >>"$b_log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then b_clean=$((b_clean + 1))
  elif [ $rc = 124 ]; then b_hang=$((b_hang + 1))
  elif [ $rc -gt 128 ]; then b_crash=$((b_crash + 1))
  else b_bad=$((b_bad + 1)); fi
done
b_worst=$(awk '/ranks formed in/ { for (i = 1; i <= NF; i++) if ($i == "in") { t = $(i + 1); if (t > w) w = t } }
  END { printf "%.3f", w }' "$b_log")
row "bootstrap attack (1,200 hostile connections + forged, replayed, wrong-nranks hellos a run)" "$runs" \
  "$b_crash" "$b_hang" "$b_bad" "$b_clean" "formed in ${b_worst} s"

# ---- leak -----------------------------------------------------------------------
l_log=$OUT/leak.log
cycles=1000 mcycles=1000
[ $QUICK = 1 ] && cycles=200 mcycles=100
l_crash=0 l_hang=0 l_bad=0 l_clean=0 l_tries=0
leak_run() {
  timeout 1200 "$@" >>"$l_log" 2>&1
  local rc=$?
  if [ $rc = 0 ]; then l_clean=$((l_clean + 1))
  elif [ $rc = 124 ]; then l_hang=$((l_hang + 1))
  elif [ $rc -gt 128 ]; then l_crash=$((l_crash + 1))
  else l_bad=$((l_bad + 1)); fi
}
leak_run "$T/comm_leak" "$cycles" 20
l_tries=$((l_tries + cycles))
lranks=(2 4)
[ $QUICK = 1 ] && lranks=(2)
for boot in pmix tcp; do
  for n in "${lranks[@]}"; do
    leak_run mpirun -np "$n" -x ZCCL_BOOTSTRAP=$boot "$T/comm_leak_mpi" "$mcycles" 20
    l_tries=$((l_tries + n * mcycles))
  done
done
# "..., heap A -> B (...), RSS C -> D kB (...)": the largest growth of any rank.
read -r l_heap l_rss < <(awk '/ heap / { for (i = 1; i <= NF; i++) {
    if ($i == "heap") { h = ($(i + 3) - $(i + 1)) / 1024; if (h > hw) hw = h }
    if ($i == "RSS") { r = $(i + 3) - $(i + 1); if (r > rw) rw = r } } }
  END { printf "%+.0f %+.0f\n", hw, rw }' "$l_log")
row "leak (cycles of init + AllReduce + destroy; 1 rank by id, 2 and 4 by PMIx and by TCP)" "$l_tries" "$l_crash" \
  "$l_hang" "$l_bad runs grew" "$l_clean runs flat" "heap ${l_heap} kB, RSS ${l_rss} kB in all"

# ---- corruption -------------------------------------------------------------------
c_log=$OUT/corruption.log
flips=10000
[ $QUICK = 1 ] && flips=2000
ZCCL_DEBUG=NONE timeout 1800 "$T/codec_integrity" --flips "$flips" >"$c_log" 2>&1
c_rc=$?
# "checksum on|off: N flips, R rejected, S same values, W silently changed values"
while read -r mode tries rejected same wrong; do
  crash=0 hang=0
  [ $c_rc -gt 128 ] && [ $c_rc != 124 ] && crash=1
  [ $c_rc = 124 ] && hang=1
  row "corruption, checksum $mode (single-bit flips of a TEMP stream; $same decoded unchanged)" "$tries" "$crash" \
    "$hang" "$wrong" "$rejected" "-"
done < <(sed -nE 's/^checksum (on|off) *: ([0-9]+) flips, ([0-9]+) rejected, ([0-9]+) same values, ([0-9]+) silently.*/\1 \2 \3 \4 \5/p' "$c_log")

echo "## Chaos run ($(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| probe | tries | crashes | hangs | silent wrong | clean errors | worst |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "logs: $OUT"
