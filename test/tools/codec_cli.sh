#!/usr/bin/env bash
# zccl-codec's CLI contract: compress/decompress/hsum/stats on a NetCDF field,
# the JSON fields scripts rely on, and clear non-zero exits on bad input.
# usage: codec_cli.sh <zccl-codec> <work dir>
set -u
CODEC=$1
WORK=$2
CORPUS=$(cd "$(dirname "$0")/../fuzz/corpus" && pwd)
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
fail=0
check() { # check <description> <expected exit> <command...>
  local what=$1 want=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; cat out.txt err.txt; fail=1
  else
    echo "ok: $what"
  fi
}
VAR=levitus_climatology.cdf:TEMP
check "compress" 0 "$CODEC" compress $VAR t.zcs --dtype f32 --mode rel --eb 1e-3
check "decompress" 0 "$CODEC" decompress t.zcs t.f32
[ "$(stat -c %s t.f32)" = $((360 * 180 * 20 * 4)) ] || { echo "FAIL: decompressed size"; fail=1; }
check "stats on the decompressed raw file" 0 "$CODEC" stats t.f32 --dtype f32 --mode abs --eb 0.01 --reps 1
check "hsum" 0 "$CODEC" hsum t.zcs t.zcs sum.zcs
check "decompress the sum" 0 "$CODEC" decompress sum.zcs sum.f32
check "stats --json, 2 threads" 0 "$CODEC" stats $VAR --dtype f32 --mode rel --eb 1e-3 --threads 2 --reps 1 --json
for key in ratio max_abs_err eb_abs psnr comp_gbps decomp_gbps memcpy_gbps hsum_gbps compress_hsum_gbps comp_speedup decomp_speedup '"outside_bound": 0'; do
  grep -q "$key" out.txt || { echo "FAIL: stats JSON lacks $key"; fail=1; }
done
check "f64 with an explicit fill" 0 "$CODEC" stats coads_climatology.cdf:SST --dtype f64 --mode abs --eb 0.05 --fill -1e34 --reps 1
check "missing --eb" 1 "$CODEC" compress $VAR x.zcs --dtype f32 --mode rel
grep -q "eb is required" err.txt || { echo "FAIL: no message for missing --eb"; fail=1; }
check "unknown command" 2 "$CODEC" squash $VAR
check "missing file" 1 "$CODEC" compress nosuch.cdf:TEMP x.zcs --dtype f32 --mode abs --eb 1
check "missing variable" 1 "$CODEC" compress levitus_climatology.cdf:NOPE x.zcs --dtype f32 --mode abs --eb 1
head -c 100 t.zcs >trunc.zcs
check "truncated stream" 1 "$CODEC" decompress trunc.zcs x.f32
grep -q "stream:" err.txt || { echo "FAIL: no stream message for a truncated stream"; fail=1; }
check "hsum of mismatched streams" 1 "$CODEC" hsum t.zcs trunc.zcs x.zcs
# 2^64-1 values in 0 chunks: its nchunks check wrapped, and hsum exited 0.
check "hsum of a header claiming 2^64-1 values" 1 "$CODEC" hsum "$CORPUS/header/wrap_count_max_lg5" \
  "$CORPUS/header/wrap_count_max_lg5" x.zcs
grep -q "0 chunks for 18446744073709551615 values" err.txt || { echo "FAIL: no message for the wrapped count"; fail=1; }
# Chunk checksums by default; --no-checksum leaves them out (4 bytes a chunk).
check "compress --no-checksum" 0 "$CODEC" compress $VAR n.zcs --dtype f32 --mode rel --eb 1e-3 --no-checksum
[ "$(stat -c %s t.zcs)" -gt "$(stat -c %s n.zcs)" ] || { echo "FAIL: no checksum bytes in t.zcs"; fail=1; }
check "decompress without checksums" 0 "$CODEC" decompress n.zcs n.f32
cmp -s t.f32 n.f32 || { echo "FAIL: checksums changed the values"; fail=1; }
cp t.zcs flip.zcs
printf '\x55' | dd of=flip.zcs bs=1 seek=5000 conv=notrunc status=none
check "a corrupted checksummed stream" 1 "$CODEC" decompress flip.zcs x.f32
grep -q "fails its checksum" err.txt || { echo "FAIL: no checksum message for a corrupted stream"; fail=1; }
exit $fail
