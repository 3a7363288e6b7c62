#!/usr/bin/env bash
# Installs every Debian package zccl needs to build, test and benchmark.
# Idempotent: when everything is present it installs nothing and touches no
# package list. Must run as root (or through sudo) on Debian 12.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git
  # runtime dependencies (DESIGN.md: transport, bootstrap, topology)
  libucx-dev ucx-utils libpmix-dev libhwloc-dev hwloc
  libibverbs-dev librdmacm-dev
  # libcrypto: HMAC-SHA256 for the unique id's challenge-response
  libssl-dev
  # launcher and the baseline to beat; MPICH beside it for libzccl-mpi's
  # second ABI (OpenMPI stays the default mpirun/mpicc: higher priority)
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # real data and the ZFP baseline codec
  libnetcdf-dev netcdf-bin libzfp-dev ferret-datasets
  # the stream codec's chunk checksums (XXH3)
  libxxhash-dev
  # emulated cluster; a one-node Slurm for srun --mpi=pmix (scripts/slurm-local)
  iproute2 iperf3 slurmctld slurmd slurm-client munge
  # plots; the Python package (python/) and its tests: mpi4py, PyTorch (CPU, Gloo)
  python3 python3-numpy python3-matplotlib python3-mpi4py python3-torch python3-scipy
  # examples/ddp_training's data set (scikit-learn's bundled digits)
  python3-sklearn
  # sanitizer and fuzzer runtimes (clang's libFuzzer), leak checks
  clang libclang-rt-14-dev valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
