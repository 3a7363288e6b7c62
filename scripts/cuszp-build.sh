#!/usr/bin/env bash
# Builds cuSZp2's 1D kernels from its public source into a prefix, for the
# baseline zccl's GPU codec is measured against (perf/cuszp_baseline.cu,
# docs/cuda.md). The source and the build stay outside git: the default
# prefix is .gpu/cuszp (ignored), which scripts/gpu-bundle.sh then carries.
#   scripts/cuszp-build.sh CUSZP_SRC [PREFIX=.gpu/cuszp]
#   CUSZP_ARCHS="80 90"   GPU architectures
# CUSZP_SRC: a checkout of https://github.com/szcompressor/cuSZp. Then:
#   cmake -S . -B build -DZCCL_CUSZP_DIR=$PWD/.gpu/cuszp && cmake --build build --target zccl-cuszp-baseline
set -euo pipefail
SRC=$(cd "${1:?usage: cuszp-build.sh CUSZP_SRC [PREFIX]}" && pwd)
PREFIX=${2:-.gpu/cuszp}
mkdir -p "$PREFIX/lib" "$PREFIX/include"
PREFIX=$(cd "$PREFIX" && pwd)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
gencode=()
for a in ${CUSZP_ARCHS:-80 90}; do
  gencode+=(--generate-code="arch=compute_$a,code=[compute_$a,sm_$a]")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in kernels_1D_f32 kernels_1D_f64; do
  [ -f "$SRC/src/cuSZp_$f.cu" ] || { echo "cuszp-build: $SRC/src/cuSZp_$f.cu missing (not a cuSZp checkout?)" >&2; exit 1; }
  echo "cuszp-build: $f"
  "$NVCC" -O3 -std=c++17 "${gencode[@]}" -Xcompiler -fPIC -I"$SRC/include" -I"$SRC/include/cuSZp" \
    -c "$SRC/src/cuSZp_$f.cu" -o "$tmp/$f.o"
done
ar rcs "$PREFIX/lib/libcuSZp_kernels.a" "$tmp"/*.o
cp -r "$SRC/include/." "$PREFIX/include/"
git -C "$SRC" log -1 --format='%H %cd' >"$PREFIX/VERSION" 2>/dev/null || echo "unknown" >"$PREFIX/VERSION"
echo "cuszp-build: $PREFIX/lib/libcuSZp_kernels.a ($(cat "$PREFIX/VERSION"))"
