#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs into one archive, for a machine
# that has a GPU but not this one's libraries (the tool library's device
# machine, which gets the working tree and the paths it is told to carry):
# the GPU tests, tools and benchmarks of a CUDA build, the shared libraries
# they load (all but the C library's and the CUDA driver's), UCX's
# transport modules, the levitus field and gpu-check.sh itself (and
# zccl-cuszp-baseline, cuSZp2's kernels, when the build has it).
#   [NCCL_TESTS=DIR] scripts/gpu-bundle.sh [BUILD=build] [OUT=.gpu] [ALT_BUILD ...]
# writes OUT/bundle.tar.xz. Each ALT_BUILD (a CUDA build with another
# ZCCL_CUDA_CODEC_CTA, say) adds its codec test and benchmark as
# gpu_codec-ctaN and zccl-gpu-codec-ctaN, which gpu-check.sh runs beside
# the main build's, so one device run compares the kernels' variants.
# On the GPU machine, from the repository root:
#   tar -xJf .gpu/bundle.tar.xz -C /tmp && /tmp/zccl-gpu/run.sh OUTDIR
# runs gpu-check.sh there (GPU_CHECK_QUICK / GPU_CHECK_CODEC pass through)
# with the bundle's libraries, its results in OUTDIR.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
OUT=${2:-.gpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BINS="tools/zccl-info tools/zccl-cuda-probe test/gpu_selftest test/cuda_runtime test/gpu_device test/device
      test/gpu_coll test/gpu_codec perf/zccl-gpu-codec perf/zccl-gpu-coll"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
S=$tmp/zccl-gpu
mkdir -p "$S/build/tools" "$S/build/test" "$S/build/perf" "$S/lib/ucx"
for b in $BINS; do
  [ -x "$B/$b" ] || { echo "gpu-bundle: $B/$b missing (a build with CUDA and perf?)" >&2; exit 1; }
  cp "$B/$b" "$S/build/$b"
done
# cuSZp2's kernels beside zccl's, when the build has them (ZCCL_CUSZP_DIR,
# scripts/cuszp-build.sh): gpu-check.sh then runs both on the same data.
[ -x "$B/perf/zccl-cuszp-baseline" ] && cp "$B/perf/zccl-cuszp-baseline" "$S/build/perf/"
# NVIDIA's nccl-tests built against zccl's nccl.h (docs/nccl.md), when
# NCCL_TESTS names their build directory: their *_perf programs, and zccl's
# libnccl.so.2 (lib/zccl-nccl) that gpu-check.sh runs them on.
if [ -n "${NCCL_TESTS:-}" ]; then
  mkdir -p "$S/build/nccl-tests" "$S/lib/zccl-nccl"
  for t in all_reduce all_gather broadcast reduce_scatter; do
    cp "$NCCL_TESTS/${t}_perf" "$S/build/nccl-tests/"
  done
  cp -L "$B/nccl/libnccl.so.2" "$S/lib/zccl-nccl/"
  # Built with MPI (MPI=1, against MPICH): one process a rank, which is how
  # two ranks share one GPU (NCCL_TESTS_DEVICE=0); MPICH's launcher and its
  # proxy go along (its fork launcher needs nothing else).
  if ldd "$NCCL_TESTS/all_reduce_perf" | grep -q libmpi; then
    cp "$(command -v mpiexec.hydra)" "$(command -v hydra_pmi_proxy)" "$S/build/nccl-tests/"
  fi
fi
for alt in "${@:3}"; do
  cta=$(sed -n 's/^ZCCL_CUDA_CODEC_CTA:[A-Z]*=//p' "$alt/CMakeCache.txt" 2>/dev/null || true)
  [ -n "$cta" ] || { echo "gpu-bundle: $alt: no ZCCL_CUDA_CODEC_CTA in its CMakeCache.txt" >&2; exit 1; }
  for b in test/gpu_codec perf/zccl-gpu-codec; do
    [ -x "$alt/$b" ] || { echo "gpu-bundle: $alt/$b missing" >&2; exit 1; }
    cp "$alt/$b" "$S/build/$b-cta$cta"
  done
done
# UCX built with CUDA (scripts/ucx-cuda-build.sh; UCX_CUDA names its
# prefix, default .gpu/ucx-cuda when there): its libraries and modules in
# lib/ucx-cuda, which gpu-check.sh puts first for the runs where UCX moves
# device memory itself, beside the staged path on Debian's UCX.
UCX_CUDA=${UCX_CUDA:-$ROOT/.gpu/ucx-cuda}
if [ -e "$UCX_CUDA/lib/libucp.so.0" ]; then
  mkdir -p "$S/lib/ucx-cuda/ucx"
  cp -P "$UCX_CUDA"/lib/libuc[mpst]*.so* "$S/lib/ucx-cuda/"
  cp -P "$UCX_CUDA"/lib/ucx/*.so* "$S/lib/ucx-cuda/ucx/" 2>/dev/null || true
fi
UCXMOD=$(find /usr/lib /usr/lib64 -maxdepth 3 -type d -name ucx 2>/dev/null | head -n 1 || true)
[ -n "$UCXMOD" ] && cp -L "$UCXMOD"/*.so* "$S/lib/ucx/" 2>/dev/null || true
# The libraries every binary and UCX module loads, but glibc's (the GPU
# machine has its own, and mixing them breaks), the driver's, and NVIDIA's
# NCCL (200 MB; nccl-tests run on zccl's, in lib/zccl-nccl).
for f in "$S"/build/*/* "$S"/lib/ucx/* "$S"/lib/zccl-nccl/* "$S"/lib/ucx-cuda/ucx/*; do
  ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libcuda|libnvidia[^/]*|libnccl)\.so' |
  grep -v "^$UCX_CUDA/" | # its own UCX libraries are in lib/ucx-cuda: not over Debian's in lib
  while read -r l; do cp -L "$l" "$S/lib/"; done
data=$(ls "$ROOT/levitus_climatology.cdf" /usr/share/ferret-vis/data/levitus_climatology.cdf 2>/dev/null | head -n 1 || true)
[ -n "$data" ] && cp -L "$data" "$S/"
cp "$ROOT/scripts/gpu-check.sh" "$S/"
cat > "$S/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs gpu-check.sh on the bundled build (see scripts/gpu-bundle.sh).
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/out}" && cd "${1:-$here/out}" && pwd)
cd "$here"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$here/lib/ucx" UCX_MEM_MMAP_HOOK_MODE=none
# NVIDIA's NCCL for zccl-gpu-coll's nccl rows: the bundle leaves it out, so
# take the machine's own (a system library, or the one PyTorch's
# nvidia-nccl wheel installs), unless ZCCL_PERF_NCCL_LIB names one.
if [ -z "${ZCCL_PERF_NCCL_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
  n=$(find /opt /usr -path '*/nvidia/nccl/lib/libnccl.so.2' 2>/dev/null | head -n 1)
  [ -n "$n" ] && export ZCCL_PERF_NCCL_LIB=$n
fi
echo "run.sh: NVIDIA NCCL for the baseline rows: ${ZCCL_PERF_NCCL_LIB:-libnccl.so.2 on the library path}"
exec bash "$here/gpu-check.sh" "$here/build" "$out"
EOF
chmod +x "$S/run.sh"
mkdir -p "$OUT"
tar -cJf "$OUT/bundle.tar.xz" -C "$tmp" zccl-gpu
echo "gpu-bundle: $OUT/bundle.tar.xz ($(du -h "$OUT/bundle.tar.xz" | cut -f1)): $(ls "$S/build"/*/* | wc -l) programs, $(ls "$S/lib" | wc -l) libraries"
