#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs the
# whole CTest suite, then the unit tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer, then the fuzzers
# (label fuzz) for a bounded time in a clang build.
#   scripts/test.sh            everything
#   ZCCL_TEST_JOBS=N           parallel build/test jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${ZCCL_TEST_JOBS:-$(nproc)}

scripts/install-deps.sh

# mpirun refuses root and more ranks than cores unless told; tests run as
# root in CI and oversubscribe 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

total_pass=0 total_fail=0 total_skip=0 status=0

# run_suite <name> <build dir> <ctest label regex or ""> <cmake args...>
run_suite() {
  local name=$1 dir=$2 label=$3
  shift 3
  echo "==== [$name] configure + build ($dir)"
  mkdir -p "$dir"
  cmake -S "$ROOT" -B "$dir" -DZCCL_WERROR=ON "$@" >"$dir/zccl-configure.log" 2>&1 \
    || { cat "$dir/zccl-configure.log"; echo "[$name] configure failed"; status=1; return; }
  if ! cmake --build "$dir" -j "$JOBS" >"$dir/zccl-build.log" 2>&1; then
    grep -E "error|warning" "$dir/zccl-build.log" | head -50 || true
    tail -20 "$dir/zccl-build.log"
    echo "[$name] build failed"; status=1; return
  fi
  echo "==== [$name] ctest ${label:+-L $label}"
  local junit="$dir/ctest-junit.xml"
  (cd "$dir" && env ${SUITE_ENV:-} ctest --output-on-failure -j "$JOBS" ${label:+-L "$label"} \
    ${SUITE_EXCLUDE:+-LE "$SUITE_EXCLUDE"} --output-junit "$junit") || status=1
  if [ -f "$junit" ]; then
    local t f s
    t=$(grep -m1 -o 'tests="[0-9]*"' "$junit" | grep -o '[0-9]*')
    f=$(grep -m1 -o 'failures="[0-9]*"' "$junit" | grep -o '[0-9]*')
    s=$(grep -m1 -o 'skipped="[0-9]*"' "$junit" | grep -o '[0-9]*')
    total_pass=$((total_pass + t - f - s)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
  fi
}

run_suite release "$ROOT/build" "" -DCMAKE_BUILD_TYPE=Release
# One GPU architecture here: the release build compiles the kernels for
# both (sm_80, sm_90); this build is for the host code, and each
# architecture costs minutes of nvcc.
run_suite asan-ubsan "$ROOT/build-asan" unit -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DZCCL_SANITIZE=address,undefined -DZCCL_BUILD_PERF=OFF -DCMAKE_CUDA_ARCHITECTURES=80
# The thread build also covers ZCCL_CUDA=OFF. UCX's memory hooks (libucm
# patches mmap/madvise) crash inside ThreadSanitizer's interceptors when a
# thread exits; turning the hooks off is UCX's documented switch. Tests
# that start no thread (label nothreads) have nothing for it to check.
SUITE_ENV="UCX_MEM_MMAP_HOOK_MODE=none" SUITE_EXCLUDE=nothreads run_suite tsan "$ROOT/build-tsan" unit -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DZCCL_SANITIZE=thread -DZCCL_BUILD_PERF=OFF -DZCCL_CUDA=OFF
# libFuzzer (clang) over the decoders and parsers, a bounded time each.
run_suite fuzz "$ROOT/build-fuzz" fuzz -DCMAKE_BUILD_TYPE=Debug -DZCCL_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DZCCL_CUDA=OFF -DZCCL_BUILD_PERF=OFF

echo "zccl: $total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
