#!/usr/bin/env bash
# Installs what equarx needs to build and test on Debian 12 (as root), then configures and
# builds the release preset. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake ninja-build pkg-config libhwy-dev libgtest-dev libgmock-dev
      libbenchmark-dev libssl-dev openmpi-bin libopenmpi-dev python3 iproute2)
bash scripts/apt_install.sh "${PKGS[@]}"

cmake --preset release >/dev/null
cmake --build --preset release
