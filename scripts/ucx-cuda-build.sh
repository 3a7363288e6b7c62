#!/usr/bin/env bash
# Builds UCX with CUDA support (cuda_copy, cuda_ipc, gdr_copy where found)
# from Debian's own source package of the UCX zccl links against, into a
# prefix, so that on a GPU machine UCX moves device memory itself and zccl
# skips staging through host memory (docs/cuda.md, "UCX with CUDA").
# Debian's UCX has no CUDA support; this one is the same version (the same
# libucp.so.0 ABI), so it replaces Debian's through LD_LIBRARY_PATH.
#   scripts/ucx-cuda-build.sh [PREFIX=.gpu/ucx-cuda]
#   CUDA_HOME=/usr/local/cuda
# Needs root the first time (it adds Debian's source index and dpkg-dev).
# The prefix (ignored by git) is what scripts/gpu-bundle.sh carries.
set -euo pipefail
PREFIX=${1:-.gpu/ucx-cuda}
CUDA=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
[ -x "$CUDA/bin/nvcc" ] || { echo "ucx-cuda-build: no CUDA toolkit at $CUDA (set CUDA_HOME)" >&2; exit 1; }
# UCX's CUDA transports need NVML's header and library (CUDA's
# cuda-nvml-dev component; the driver brings libnvidia-ml.so.1 at run time).
if [ ! -f "$CUDA/include/nvml.h" ]; then
  echo "ucx-cuda-build: $CUDA/include/nvml.h missing: UCX's CUDA support needs NVML's development files" \
    "(NVIDIA's cuda-nvml-dev, not in Debian main); install them into the toolkit and rerun" >&2
  exit 1
fi
version=$(dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null || true)
[ -n "$version" ] || { echo "ucx-cuda-build: libucx-dev is not installed (scripts/install-deps.sh)" >&2; exit 1; }
if [ -f "$PREFIX/VERSION" ] && [ "$(cat "$PREFIX/VERSION")" = "$version" ] && [ -e "$PREFIX/lib/libucp.so.0" ]; then
  echo "ucx-cuda-build: $PREFIX already holds UCX $version with CUDA"
  exit 0
fi

# Debian's source index for the archive the binaries come from.
if ! apt-get source --print-uris ucx >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "ucx-cuda-build: needs root once to add Debian's source index" >&2; exit 1; }
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >/etc/apt/sources.list.d/zccl-deb-src.sources
  apt-get update -q >/dev/null
fi
# What unpacking and regenerating its build system takes.
tools=()
for p in dpkg-dev autoconf automake libtool pkg-config; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || tools+=("$p")
done
if [ ${#tools[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "ucx-cuda-build: needs root once to install ${tools[*]}" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${tools[@]}" >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -q "ucx=$version" >/dev/null 2>&1)
src=$(find "$work" -maxdepth 1 -type d -name 'ucx-*' | head -n 1)
echo "ucx-cuda-build: building $(basename "$src") with CUDA from $CUDA into $PREFIX (some minutes)"
cd "$src"
[ -x ./configure ] || ./autogen.sh >"$PREFIX/autogen.log" 2>&1 || { tail -20 "$PREFIX/autogen.log"; exit 1; }
./configure --prefix="$PREFIX" --with-cuda="$CUDA" --without-rocm --without-java --without-go \
  --disable-doxygen-doc --enable-optimizations --disable-logging --disable-debug --disable-assertions \
  --disable-params-check >"$PREFIX/configure.log" 2>&1 || { tail -20 "$PREFIX/configure.log"; exit 1; }
grep -q "cuda_copy\|cuda" "$PREFIX/configure.log" || echo "ucx-cuda-build: warning: configure did not mention CUDA"
make -j "$(nproc)" >"$PREFIX/build.log" 2>&1 || { tail -30 "$PREFIX/build.log"; exit 1; }
make install >>"$PREFIX/build.log" 2>&1
echo "$version" >"$PREFIX/VERSION"
ls "$PREFIX"/lib/ucx/libuct_cuda*.so* >/dev/null 2>&1 || { echo "ucx-cuda-build: no CUDA transport module built" >&2; exit 1; }
echo "ucx-cuda-build: $PREFIX/lib (UCX $version; CUDA modules: $(cd "$PREFIX/lib/ucx" && ls libuct_cuda*.so | tr '\n' ' '))"
