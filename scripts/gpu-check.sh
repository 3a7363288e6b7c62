#!/usr/bin/env bash
# The checks that need a GPU, in one short run, from a build with CUDA:
# the gpu tests, the hazard probe, the codec kernels' figures and
# compute-sanitizer on them. Every step has a time limit (a stuck one is
# killed and the next runs); everything goes to OUT/log.txt (the terminal
# is spared the expected warnings of the error-path tests), the
# benchmark rows to OUT/*.json.
#   scripts/gpu-check.sh [BUILD=build] [OUT=gpu-check]
#   GPU_CHECK_QUICK=1   the tests and the probe only (about a minute)
#   GPU_CHECK_PROFILE=1 Nsight Compute on one launch of each codec kernel,
#                       zccl's and cuSZp2's, into OUT/profile.txt
#   GPU_CHECK_CODEC=1   the codec kernels only: gpu_codec (every stream
#                       byte for byte the CPU codec's) and their figures,
#                       float32 and float64, with each kernel's registers
#                       and CTAs per SM (a few minutes); the same for
#                       variants bundled beside them (gpu-bundle.sh), and
#                       cuSZp2's kernels beside them on the same data when
#                       the build has zccl-cuszp-baseline
# Run it from the repository root (the codec benchmark and test read
# levitus_climatology.cdf, found there or in the ferret data directory).
set -uo pipefail
B=${1:-build}
OUT=${2:-gpu-check}
mkdir -p "$OUT"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
L=$B/../lib # a bundle's extra libraries (scripts/gpu-bundle.sh)

step() { # step <seconds> <command...>
  local t=$1
  shift
  echo "=== $* (limit ${t}s) $(date +%T)"
  timeout -k 5 "$t" "$@"
  local rc=$?
  echo "=== rc=$rc $(date +%T)"
  return $rc
}

# The codec kernels' figures: beside cuSZp2's, then zccl's alone, then
# bundled variants.
codec_figures() {
  # cuSZp2's kernels beside zccl's on the same data (fill values 0 for
  # both: cuSZp has none), levitus TEMP and SALT, float32 and float64, REL
  # 1e-2, 1e-3, 1e-4 (docs/cuda.md, "cuSZp2 beside zccl's kernels")
  if [ -x "$B/perf/zccl-cuszp-baseline" ]; then
    for var in TEMP SALT; do
      for t in f32 f64; do
        local f=()
        [ "$t" = f64 ] && f=(--f64)
        step 150 "$B/perf/zccl-gpu-codec" --data "levitus_climatology.cdf:$var" --fill-zero --mib 256 --reps 20 \
          "${f[@]}" --json "$OUT/side_zccl_${var}_$t.json"
        step 120 "$B/perf/zccl-cuszp-baseline" --data "levitus_climatology.cdf:$var" --mib 256 --reps 20 \
          "${f[@]}" --json "$OUT/side_cuszp_${var}_$t.json"
      done
    done
  fi
  step 150 env ZCCL_DEBUG=INFO ZCCL_DEBUG_SUBSYS=DEVICE "$B/perf/zccl-gpu-codec" --mib 256 --reps 20 \
    --json "$OUT/codec_f32.json"
  step 150 "$B/perf/zccl-gpu-codec" --mib 256 --reps 20 --f64 --json "$OUT/codec_f64.json"
  # chunk checksums' cost: the same float32 rows with them (ZCCL_CHECKSUM=1's streams)
  step 150 "$B/perf/zccl-gpu-codec" --mib 256 --reps 20 --checksum --json "$OUT/codec_f32_checksum.json"
  # Variants of the kernels built otherwise (scripts/gpu-bundle.sh's
  # ALT_BUILDs: zccl-gpu-codec-ctaN beside zccl-gpu-codec), float32 rows.
  for alt in "$B"/perf/zccl-gpu-codec-*; do
    [ -x "$alt" ] || continue
    step 150 env ZCCL_DEBUG=INFO ZCCL_DEBUG_SUBSYS=DEVICE "$alt" --mib 256 --reps 20 \
      --json "$OUT/codec_f32_${alt##*/zccl-gpu-codec-}.json"
  done
}

# Nsight Compute's view of one launch of each codec kernel, zccl's and
# cuSZp2's, on the same field (64 MiB, REL 1e-3): throughput against the
# device's peaks, where warps stall, occupancy; for the next kernel work.
if [ -n "${GPU_CHECK_PROFILE:-}" ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -n 1 || echo ncu)
  sec=(--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
       --section Occupancy --section LaunchStats --section SchedulerStats)
  {
    for k in zd_compress_kernel zd_decompress_kernel zd_hop_kernel; do
      step 60 "$NCU" "${sec[@]}" -k "regex:^$k" -c 1 "$B/perf/zccl-gpu-codec" --mib 64 --reps 1 --eb 1e-3
    done
    if [ -x "$B/perf/zccl-cuszp-baseline" ]; then
      for k in cuSZp_compress_kernel_1D_plain_f32 cuSZp_decompress_kernel_1D_plain_f32; do
        step 60 "$NCU" "${sec[@]}" -k "$k" -c 1 "$B/perf/zccl-cuszp-baseline" --mib 64 --reps 1 --eb 1e-3
      done
    fi
  } 2>&1 | tee "$OUT/profile.txt" | grep --line-buffered -v "zccl WARN"
  exit 0
fi

if [ -n "${GPU_CHECK_CODEC:-}" ]; then
  {
    nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
    step 300 "$B/test/gpu_codec"
    for alt in "$B"/test/gpu_codec-*; do [ -x "$alt" ] && step 300 "$alt"; done
    codec_figures
  } 2>&1 | tee "$OUT/log.txt" | grep --line-buffered -v "zccl WARN"
  exit 0
fi

# The full run, ordered so that a run cut short (the device machine's
# time is short) has measured what matters most first: the codec kernels
# against cuSZp2 and a device copy, then the collectives on device buffers
# against host buffers and NVIDIA's NCCL, the small call's fixed cost, the
# asynchronous stream order, nccl-tests on zccl's libnccl.so.2, and last
# the tests and probes that earlier runs passed.
{
  nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
  step 20 "$B/tools/zccl-info"
  step 240 "$B/test/gpu_codec"
  [ -z "${GPU_CHECK_QUICK:-}" ] && codec_figures
  step 150 "$B/test/gpu_coll" 2
  # A short limit: it has hung on a GPU (docs/cuda.md, "Not built yet").
  step 60 env ZCCL_STREAM_MODE=async "$B/test/gpu_coll" 2
  if [ -z "${GPU_CHECK_QUICK:-}" ]; then
    # Collectives on device buffers beside host buffers and NCCL (2 ranks
    # on the GPU; NCCL rows when libnccl.so.2 loads: ZCCL_PERF_NCCL_LIB).
    step 240 "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 64M --reps 5 --memory device,host,nccl --json "$OUT/coll.json"
    # The small call's fixed cost: 1 MiB AllReduces on device buffers
    # (uncompressed and compressed rows, 20 reps each), with each rank's
    # count of device operations, marks and the host's waits for them (and
    # the time in those waits) when its device goes.
    step 120 env ZCCL_DEBUG=INFO ZCCL_DEBUG_SUBSYS=DEVICE "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 1M --reps 20 \
      --memory device --colls allreduce
    # UCX moving device memory itself (cuda_copy, cuda_ipc: the bundle's
    # lib/ucx-cuda, scripts/ucx-cuda-build.sh) against the staged rows
    # above: zccl-info says whether UCX reports CUDA memory, then the
    # tests and the same device rows.
    uc=$L/ucx-cuda
    if [ -e "$uc/libucp.so.0" ]; then
      ucx_cuda=(env LD_LIBRARY_PATH="$uc:${LD_LIBRARY_PATH:-}" UCX_MODULE_DIR="$uc/ucx")
      step 20 "${ucx_cuda[@]}" "$B/tools/zccl-info"
      step 90 "${ucx_cuda[@]}" "$B/test/gpu_coll" 2
      step 180 "${ucx_cuda[@]}" "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 64M -f 4 --reps 5 --memory device \
        --colls allreduce,allgather,broadcast,reducescatter --json "$OUT/coll_ucx_cuda.json"
    fi
    # The asynchronous stream order on the same device rows (the default
    # is blocking; async becomes it only if faster).
    step 90 env ZCCL_STREAM_MODE=async "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 64M -f 4 --reps 5 --memory device \
      --colls allreduce,allgather,broadcast,reducescatter --json "$OUT/coll_async.json"
    # NVIDIA's nccl-tests, unmodified, on zccl's libnccl.so.2 (when bundled,
    # gpu-bundle.sh's NCCL_TESTS): 2 ranks on the one GPU (NVIDIA's NCCL
    # takes two ranks on one GPU only as two hosts: its rows are
    # zccl-gpu-coll's nccl rows above), plain and compressed, every result
    # checked (-c 1). Built with MPI, 2 processes under MPICH's launcher,
    # both on GPU 0 (NCCL_TESTS_DEVICE; nccl-tests' own rule gives process
    # r GPU r); else 2 threads of one process (which needs 2 GPUs).
    zn=$L/zccl-nccl
    launch=()
    ranks=(-t 2)
    if [ -x "$B/nccl-tests/mpiexec.hydra" ]; then
      launch=("$B/nccl-tests/mpiexec.hydra" -launcher fork -n 2)
      ranks=(-t 1)
      export NCCL_TESTS_DEVICE=0 PATH="$B/nccl-tests:$PATH"
    fi
    if [ -d "$B/nccl-tests" ] && [ -e "$zn/libnccl.so.2" ]; then
      # A run that outlives its limit (124: stuck) ends the series.
      for t in all_reduce all_gather broadcast; do
        for comp in off codec=hz,mode=rel,eb=1e-3; do
          step 90 env LD_LIBRARY_PATH="$zn:${LD_LIBRARY_PATH:-}" ZCCL_COMPRESSION="$comp" \
            "${launch[@]}" "$B/nccl-tests/${t}_perf" -b 1M -e 256M -f 4 "${ranks[@]}" -g 1 -c 1 -n 10 -w 2
          [ $? -eq 124 ] && break 2
        done
      done
    fi
    # The same device rows on one stream per device (default: 4).
    step 180 env ZCCL_DEVICE_STREAMS=1 "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 64M --reps 5 --memory device \
      --colls allreduce,scatter,alltoall --json "$OUT/coll_1stream.json"
    step 150 "$B/test/gpu_coll" 4
  fi
  step 60 "$B/test/gpu_selftest"
  step 60 "$B/test/cuda_runtime"
  step 120 "$B/test/gpu_device"
  step 120 "$B/test/device"
  # The INFO banner comes before the fork: it must leave CUDA usable.
  step 60 env ZCCL_DEBUG=INFO "$B/test/gpu_coll" 2
  step 200 "$B/tools/zccl-cuda-probe" 2
  step 150 env ZCCL_STREAM_MODE=async ZCCL_TEST_PINNED_COPY=1 "$B/test/gpu_coll" 2
  # The codec work in the persistent kernel (ZCCL_PERSISTENT_KERNEL=1).
  step 120 env ZCCL_PERSISTENT_KERNEL=1 "$B/test/gpu_device"
  step 150 env ZCCL_PERSISTENT_KERNEL=1 "$B/test/gpu_coll" 2
  if [ -z "${GPU_CHECK_QUICK:-}" ]; then
    # The persistent kernel alone (one process, no gates) against launches,
    # then in the collectives (two processes share the GPU).
    step 120 "$B/perf/zccl-gpu-codec" --persist --mib 64 --reps 21
    step 180 env ZCCL_PERSISTENT_KERNEL=1 "$B/perf/zccl-gpu-coll" --ranks 2 -b 1M -e 64M --reps 5 --memory device \
      --colls allreduce,reducescatter,allgather --json "$OUT/coll_persistent.json"
    step 120 "$CS" --tool memcheck --leak-check no "$B/perf/zccl-gpu-codec" --mib 8 --reps 1 --eb 1e-3
    step 120 "$CS" --tool racecheck "$B/perf/zccl-gpu-codec" --mib 2 --reps 1 --eb 1e-3
  fi
} 2>&1 | tee "$OUT/log.txt" | grep --line-buffered -v "zccl WARN"
