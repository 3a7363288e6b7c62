#!/usr/bin/env bash
# The README's main job: installs what is needed, builds (Release), brings up
# 4 emulated hosts linked at 1 Gbit/s (scripts/netlab: network namespaces,
# tc tbf), and runs AllReduce, AllGather and Broadcast sweeps (1 MiB ... 128
# MiB) on a real climate field, OpenMPI beside zccl uncompressed and zccl
# compressed (homomorphic for allreduce) at REL 1e-3 on the same buffers.
# Prints the tables with speedups and errors, writes PNG plots, tears down.
# Without root or network namespaces it runs the same over UCX shared memory
# on this machine and says so.
#   ZCCL_DEMO_MAX=128M   largest message (default 128M)
#   ZCCL_DEMO_RATE=1gbit link rate of the emulated hosts
#   ZCCL_DEMO_DATA=...   field (default levitus_climatology.cdf:TEMP)
#   ZCCL_DEMO_EB=1e-3    REL error bound of the compressed rows
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MAX=${ZCCL_DEMO_MAX:-128M}
RATE=${ZCCL_DEMO_RATE:-1gbit}
DATA=${ZCCL_DEMO_DATA:-levitus_climatology.cdf:TEMP}
EB=${ZCCL_DEMO_EB:-1e-3}
OUT=$ROOT/out/demo
NP=4

scripts/install-deps.sh
echo "==== build (Release) in build/"
mkdir -p build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build/zccl-configure.log 2>&1 \
  || { cat build/zccl-configure.log; exit 1; }
cmake --build build -j "$(nproc)" --target zccl-perf zccl-info >build/zccl-build.log 2>&1 \
  || { tail -30 build/zccl-build.log; exit 1; }
build/tools/zccl-info

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export NETLAB_PREFIX=zd$$ NETLAB_NET=10.203.85
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.csv "$OUT"/*.png
where="$NP emulated hosts, $RATE links (netlab; UCX and OpenMPI over TCP)"
netlab_up=0
trap '[ "$netlab_up" = 1 ] && scripts/netlab down >/dev/null 2>&1' EXIT
if [ "$(id -u)" = 0 ] && scripts/netlab up "$NP" "$RATE" >"$OUT/netlab.log" 2>&1; then
  netlab_up=1
else
  where="$NP ranks on this machine over UCX shared memory"
  echo "demo: no emulated cluster (needs root and network namespaces; see $OUT/netlab.log): running over shared memory instead"
fi

for coll in allreduce allgather broadcast; do
  echo
  echo "==== $coll: $where"
  args=("$coll" -b 1M -e "$MAX" -f 2 -n 5 -w 1 --data "$DATA" --baseline mpi
        --compression "codec=hz,mode=rel,eb=$EB" --json "$OUT/$coll.json" --csv "$OUT/$coll.csv")
  if [ "$netlab_up" = 1 ]; then
    scripts/netlab run -- "$ROOT/build/perf/zccl-perf" "${args[@]}"
  else
    mpirun -np $NP --bind-to none build/perf/zccl-perf "${args[@]}"
  fi
done
if [ "$netlab_up" = 1 ]; then
  scripts/netlab down >/dev/null 2>&1 || true
  netlab_up=0
fi

echo
echo "==== summary: $where; busbw in GB/s (x OpenMPI's time); zccl-compressed at REL $EB"
/usr/bin/python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
for coll in ("allreduce", "allgather", "broadcast"):
    rows = json.load(open(os.path.join(out, coll + ".json")))
    by = {}
    for r in rows:
        by.setdefault(r["bytes"], {})[r["method"]] = r
    print(f"\n{coll}")
    print(f"{'size':>9} {'OpenMPI':>9} {'zccl':>15} {'zccl-compressed':>17} {'ratio':>6} {'max err':>9} {'bound':>9} {'RMSE':>9} {'PSNR':>6} {'wrong':>5}")
    for b in sorted(by):
        m = by[b]
        mpi, z, zc = m.get("mpi"), m.get("zccl"), m.get("zccl-compressed")
        def col(r):
            if not r: return "-"
            sp = mpi["time_us"] / r["time_us"] if mpi else float("nan")
            return f"{r['busbw_gbps']:.3f} ({sp:.2f}x)"
        size = f"{b >> 20} MiB"
        wrong = sum(r["wrong"] or 0 for r in m.values() if r["wrong"] is not None)
        print(f"{size:>9} {mpi['busbw_gbps'] if mpi else float('nan'):>9.3f} {col(z):>15} {col(zc):>17} "
              f"{zc['ratio'] if zc else 1:>6.2f} {zc['max_abs_err'] if zc else 0:>9.3g} "
              f"{(zc['eb_abs'] * (4 if coll == 'allreduce' else 1)) if zc else 0:>9.3g} "
              f"{(zc.get('rmse') or 0) if zc else 0:>9.3g} {(zc['psnr'] or 0) if zc else 0:>6.1f} {wrong:>5}")
EOF
echo
/usr/bin/python3 scripts/plot "$OUT"/allreduce.json "$OUT"/allgather.json "$OUT"/broadcast.json --outdir "$OUT" --prefix demo \
  || echo "demo: no plots (scripts/plot failed)"
ls "$OUT"/*.png 2>/dev/null | sed 's/^/plot: /' || true
echo "rows: $OUT/{allreduce,allgather,broadcast}.{json,csv}"
