#!/usr/bin/env bash
# Runs one of zccl's application examples end to end (examples/README.md):
#   examples/run.sh image_stacking   stacking real image frames by AllReduce (C, MPI + zccl)
#   examples/run.sh ddp_training     PyTorch DDP training with zccl's gradient hook
# Each installs what it needs, builds, uses the emulated cluster (scripts/
# netlab) when run as root and falls back to shared memory otherwise, and
# writes its tables and pictures under out/<example>/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  image_stacking | ddp_training) exec "$here/$1/run.sh" ;;
  *)
    sed -n '2,4p' "$0" | sed 's/^# //'
    exit 2
    ;;
esac
