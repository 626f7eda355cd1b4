#!/usr/bin/env bash
# The main job: stream 1080p-sized frames over RDMA (Soft-RoCE in two QEMU
# guests when this machine has no RDMA device) and print what moved.
# Usage: scripts/demo.sh [--topology one|two] [--frames N] [--mode auto|host|guest]
set -euo pipefail
cd "$(dirname "$0")/.."
topology=two frames=30 mode=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --topology) topology=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
bash scripts/build.sh
check=$PWD/${RDMASTREAM_BUILD_DIR:-build}/tests/rdma-ring-check
frame=3110400 # one 1920x1080 I420 frame
echo "demo: streaming $frames frames of $frame bytes (1080p I420) over RDMA, topology $topology"
scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout 600 \
  --node0 "$check --role receiver --addr \$RDMABED_SERVER_ADDR --slots 4 --slot-size $((frame + 64)) --frames $frames --min-payload $frame" \
  --node1 "$check --role sender --addr \$RDMABED_SERVER_ADDR --frames $frames --min-payload $frame"
