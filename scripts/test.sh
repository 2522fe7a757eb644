#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine if needed, builds, and runs
# the whole test suite (CTest: unit, codec, collective and tool tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --preset release -j2 --timeout 900 "$@"
