# shellcheck shell=bash
# Sourced by the examples' run.sh scripts, from the repository root: what
# they all do before running and around the emulated cluster.
#   ex_build TARGET            install dependencies, build TARGET (Release) in build/
#   ex_mpi_env PREFIX NET      mpirun as root on 2 cores; this run's netlab names
#   ex_netlab_up N RATE LOG    bring up N emulated hosts (root only); 1 if not
#   ex_netlab_down             bring them down (also on exit)
# Sets: status=0 (a run's failure goes there), ex_netlab=0|1.

ex_build() {
  local target=$1
  scripts/install-deps.sh
  echo "==== build $target (Release) in build/"
  mkdir -p build
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >"build/$target-configure.log" 2>&1 \
    || { cat "build/$target-configure.log"; exit 1; }
  cmake --build build -j "$(nproc)" --target "$target" >"build/$target-build.log" 2>&1 \
    || { tail -30 "build/$target-build.log"; exit 1; }
}

ex_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  export NETLAB_PREFIX=$1 NETLAB_NET=$2 # apart from other users of netlab
  trap ex_netlab_down EXIT
}

ex_netlab_up() {
  [ "$(id -u)" = 0 ] || { echo "netlab: needs root" >"$3"; return 1; }
  scripts/netlab up "$1" "$2" >"$3" 2>&1 || return 1
  ex_netlab=1
}

ex_netlab_down() {
  if [ "$ex_netlab" = 1 ]; then
    scripts/netlab down >/dev/null 2>&1 || true
    ex_netlab=0
  fi
}

# shellcheck disable=SC2034 # the sourcing script sets and reads it
status=0
ex_netlab=0
