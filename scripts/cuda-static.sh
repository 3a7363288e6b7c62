#!/usr/bin/env bash
# Static figures of CUDA kernels, without a GPU: registers, stack (local
# memory), spills, static shared memory per kernel as ptxas reports them,
# and the occupancy those allow on an sm_90 SM (docs/cuda.md, "Static
# figures"). Compiles zccl's kernel files with the flags of a configured
# build and, given its source, cuSZp's 1D kernels beside them.
#   scripts/cuda-static.sh [BUILD=build] [CUSZP_SRC]
#   CUDA_STATIC_ARCH=sm_90   target
# CUSZP_SRC: a checkout of https://github.com/szcompressor/cuSZp (never
# part of this repository). Prints a Markdown table.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
CUSZP=${2:-}
ARCH=${CUDA_STATIC_ARCH:-sm_90}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
DIR=$B/src/device/cuda
[ -f "$DIR/CMakeFiles/zccl_device_cuda.dir/flags.make" ] || { echo "cuda-static: $B is not a CUDA build" >&2; exit 1; }
CTA=$(sed -n 's/^ZCCL_CUDA_CODEC_CTA:STRING=//p' "$B/CMakeCache.txt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ptxas -v of one file: "FILE|CTA|" before each of its lines.
report() { # report LABEL CTA NVCC-ARGS...
  local label=$1 cta=$2
  shift 2
  "$NVCC" -O3 -arch="$ARCH" -Xptxas -v -c -o "$tmp/o.o" "$@" 2>&1 | sed "s/^/$label|$cta|/"
}
(
  cd "$DIR"
  for f in zd_cuda_codec zd_cuda_reduce zd_cuda_stream zd_cuda; do
    report "zccl $f.cu" "$CTA" -DZD_T="$CTA" -D_GNU_SOURCE -DZCCL_CUDA_ARCHS=\"90\" \
      --options-file CMakeFiles/zccl_device_cuda.dir/includes_CUDA.rsp "$ROOT/src/device/cuda/$f.cu"
  done
  if [ -n "$CUSZP" ]; then
    for f in 1D_f32 1D_f64; do # 32 threads per CTA: the library's fixed block size
      report "cuSZp kernels_$f.cu" 32 -std=c++17 -I"$CUSZP/include" -I"$CUSZP/include/cuSZp" \
        "$CUSZP/src/cuSZp_kernels_$f.cu"
    done
  fi
) >"$tmp/ptxas.txt"
/usr/bin/python3 - "$tmp/ptxas.txt" "$ARCH" <<'PY'
import re, subprocess, sys
rows, cur, props = [], None, None
for line in open(sys.argv[1]):
    src, cta, text = line.rstrip("\n").split("|", 2)
    m = re.search(r"Compiling entry function '([^']+)'", text)
    if m:
        cur = {"src": src, "cta": int(cta), "name": m.group(1), "stack": 0, "st": 0, "ld": 0, "regs": 0, "smem": 0}
        rows.append(cur)
        continue
    m = re.search(r"Function properties for (\S+)", text)
    if m:  # ptxas also lists the device functions an entry calls
        props = m.group(1)
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text)
    if m and cur is not None and props == cur["name"]:
        cur["stack"], cur["st"], cur["ld"] = map(int, m.groups())
    m = re.search(r"Used (\d+) registers", text)
    if m and cur is not None:
        cur["regs"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", text)
        cur["smem"] = int(s.group(1)) if s else 0
names = subprocess.run(["c++filt", "-p"], input="\n".join(r["name"] for r in rows), capture_output=True,
                       text=True).stdout.split("\n")


def occupancy(r):
    """CTAs per SM and the share of its 64 warps on sm_90: 64K registers
    (per warp in 256s), 32 CTAs, 228 KB shared memory (1 KB reserved per CTA)."""
    warps = max(1, r["cta"] // 32)
    per_warp = -(-max(r["regs"], 1) * 32 // 256) * 256
    ctas = min((65536 // per_warp) // warps, (228 * 1024) // (r["smem"] + 1024), 32, 64 // warps)
    return ctas, 100 * ctas * warps / 64


print("| file | kernel | registers | stack B | spill st/ld B | smem B | CTA | CTAs/SM | occupancy |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
small = {}
for r, n in zip(rows, names):
    ctas, occ = occupancy(r)
    r["occ"] = occ
    if r["regs"] <= 64 and not r["st"] and not r["stack"]:  # the element-wise kernels: one line per file
        small.setdefault(r["src"], []).append(r)
        continue
    print(f"| {r['src']} | `{n}` | {r['regs']} | {r['stack']} | {r['st']}/{r['ld']} | {r['smem']} | {r['cta']} | "
          f"{ctas} | {occ:.0f}% |")
for src, rs in small.items():
    regs = sorted(x["regs"] for x in rs)
    occ = sorted(x["occ"] for x in rs)
    print(f"| {src} | {len(rs)} other kernels | {regs[0]}-{regs[-1]} | 0 | 0/0 | "
          f"{max(x['smem'] for x in rs)} max | {rs[0]['cta']} | | {occ[0]:.0f}-{occ[-1]:.0f}% |")
PY
