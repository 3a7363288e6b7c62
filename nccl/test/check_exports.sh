#!/bin/sh
# The functions libnccl.so.2 exports against those NCCL 2.28's nccl.h
# declares (each as nccl* and pnccl*): the same set, but for the ones
# listed as not built yet (docs/nccl.md), which must be absent, not stubs.
#   check_exports.sh LIBNCCL NCCL_H "PENDING NAMES"
set -eu
lib=$1 header=$2 pending=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $NF}' | grep -E '^p?nccl[A-Z]' | sort -u >"$tmp/have"
# Declarations in the header: "<type> [p]ncclName(" at a line's start.
grep -oE '^(ncclResult_t|const char ?\*|void) +p?nccl[A-Za-z]+ *\(' "$header" \
  | sed -E 's/^.*[ *](p?nccl[A-Za-z]+) *\($/\1/' | sort -u >"$tmp/declared"
: >"$tmp/pending"
for f in $pending; do printf '%s\np%s\n' "$f" "$f" >>"$tmp/pending"; done
sort -u -o "$tmp/pending" "$tmp/pending"
comm -23 "$tmp/declared" "$tmp/pending" >"$tmp/want"
echo "$(wc -l <"$tmp/declared") functions declared by $header, $(wc -l <"$tmp/pending") not built yet"
status=0
if ! cmp -s "$tmp/want" "$tmp/have"; then
  echo "missing from $lib:"; comm -23 "$tmp/want" "$tmp/have" | sed 's/^/  /'
  echo "exported but not expected:"; comm -13 "$tmp/want" "$tmp/have" | sed 's/^/  /'
  status=1
fi
echo "$(wc -l <"$tmp/have") exported"
exit $status
