#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs everything rdmastream needs on Debian 12, from Debian packages only,
# and prepares the Soft-RoCE test bed's guest kernel. Quick when all is there.
# Usage: scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config git
  # the Debian package (scripts/package.sh): man pages from --help; dpkg-shlibdeps
  help2man dpkg-dev
  # tests/package runs man on the installed pages
  man-db
  # rdma-core: verbs, rdma_cm, providers (rxe), tools, perftest for reference runs
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core ibverbs-utils rdmacm-utils perftest
  # FFmpeg
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavdevice-dev ffmpeg
  # GStreamer 1.22
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-base-apps # gst-play-1.0: rdma:// URIs played as a user would (rdma.gst_playbin_from_rdmasend)
  gstreamer1.0-libav # avenc_mpeg4: small encoded frames in the holding-downstream tests
  gstreamer1.0-x # pango: textoverlay burns frame numbers and latency into the demo
  # libraries we use instead of hand-written code, and the test framework
  libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  # the keyed MAC of the pre-shared key handshake (transport/src/peer_auth.cpp)
  libsodium-dev
  # --metrics' HTTP server (common/src/metrics_exporter.cpp), the parser its test checks the text
  # with, and curl, which scrapes it in the guest (Python takes seconds to start there)
  libcpp-httplib-dev python3-prometheus-client curl
  # fuzzing (tests/fuzz/run.sh): clang's libFuzzer and sanitizer runtimes
  clang-16 libclang-rt-16-dev llvm-16
  # the Soft-RoCE test bed: QEMU guests booting Debian's kernel with rdma_rxe
  qemu-system-x86 busybox-static iproute2 kmod cpio
  # the benchmark (bench/): per-side CPU, system calls per frame, the plot
  time strace gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
    missing+=("$p")
  fi
done

SUDO=
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
fi
