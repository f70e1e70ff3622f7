#!/usr/bin/env bash
# Installs everything sp-opt needs to build and test, from Debian 12 packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PACKAGES=(
  build-essential cmake pkg-config python3 python3-jsonschema python3-numpy jq time
  libcli11-dev nlohmann-json3-dev libabsl-dev libsimdjson-dev libspdlog-dev catch2
  libopenblas-dev libopenmpi-dev openmpi-bin libprotobuf-dev protobuf-compiler libjemalloc-dev
  graphviz clang libclang-rt-14-dev chromium llvm-14-tools
)
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
