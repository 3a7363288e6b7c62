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
# UCX's CUDA transports need NVML's header and a library to link (the
# driver brings libnvidia-ml.so.1 at run time). Where the toolkit lacks
# them (CUDA's cuda-nvml-dev component), they come from Debian's non-free
# archive: libnvidia-ml-dev (the header) and libnvidia-ml1 (the library,
# for the link only), downloaded with a private source list and unpacked
# here, nothing installed.
nvml_flags=()
if [ ! -f "$CUDA/include/nvml.h" ]; then
  nf=$work/nonfree
  mkdir -p "$nf/lists/partial" "$nf/debs" "$nf/root" "$nf/lib"
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  echo "deb http://deb.debian.org/debian $suite non-free" >"$nf/sources.list"
  o=(-o Dir::Etc::SourceList="$nf/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$nf/lists")
  apt-get "${o[@]}" update -q >/dev/null 2>&1 &&
    (cd "$nf/debs" && apt-get "${o[@]}" download libnvidia-ml-dev libnvidia-ml1 >/dev/null 2>&1) || {
    echo "ucx-cuda-build: $CUDA/include/nvml.h missing, and NVML's development files could not be fetched from" \
      "Debian's non-free archive (libnvidia-ml-dev, libnvidia-ml1)" >&2
    exit 1
  }
  for d in "$nf"/debs/*.deb; do dpkg -x "$d" "$nf/root"; done
  ml=$(find "$nf/root" -name 'libnvidia-ml.so.[0-9]*.*' | head -n 1)
  [ -f "$nf/root/usr/include/nvml.h" ] && [ -n "$ml" ] || { echo "ucx-cuda-build: the NVML packages lack nvml.h or libnvidia-ml" >&2; exit 1; }
  ln -s "$ml" "$nf/lib/libnvidia-ml.so"
  nvml_flags=(CPPFLAGS="-I$nf/root/usr/include" LDFLAGS="-L$nf/lib")
  echo "ucx-cuda-build: NVML from Debian's non-free archive ($(cd "$nf/debs" && ls | tr '\n' ' '))"
fi
(cd "$work" && apt-get source -q "ucx=$version" >/dev/null 2>&1)
src=$(find "$work" -maxdepth 1 -type d -name 'ucx-*' | head -n 1)
rm -f "$PREFIX/build.log"
echo "ucx-cuda-build: building $(basename "$src") with CUDA from $CUDA into $PREFIX (some minutes)"
cd "$src"
[ -x ./configure ] || ./autogen.sh >"$PREFIX/autogen.log" 2>&1 || { tail -20 "$PREFIX/autogen.log"; exit 1; }
./configure --prefix="$PREFIX" --with-cuda="$CUDA" --without-rocm --without-java --without-go \
  --disable-doxygen-doc --enable-optimizations --disable-logging --disable-debug --disable-assertions \
  --disable-params-check "${nvml_flags[@]}" >"$PREFIX/configure.log" 2>&1 || { tail -20 "$PREFIX/configure.log"; exit 1; }
grep -q "cuda_copy\|cuda" "$PREFIX/configure.log" || echo "ucx-cuda-build: warning: configure did not mention CUDA"
# The libraries, their modules and ucx_info only: UCX 1.13's test
# programs (test/apps) call cuCtxCreate with the arguments CUDA 13 no
# longer takes.
for d in src/ucm src/ucs src/uct src/ucp src/tools/info; do
  { make -C "$d" -j "$(nproc)" && make -C "$d" install; } >>"$PREFIX/build.log" 2>&1 ||
    { tail -30 "$PREFIX/build.log"; exit 1; }
done
echo "$version" >"$PREFIX/VERSION"
ls "$PREFIX"/lib/ucx/libuct_cuda*.so* >/dev/null 2>&1 || { echo "ucx-cuda-build: no CUDA transport module built" >&2; exit 1; }
echo "ucx-cuda-build: $PREFIX/lib (UCX $version; CUDA modules: $(cd "$PREFIX/lib/ucx" && ls libuct_cuda*.so | tr '\n' ' '))"
