#!/usr/bin/env bash
# The README's main job: sets up a fresh Debian 12 machine if needed, builds, and runs the
# 8-rank in-process demo (every EQuARX configuration next to the unquantized baseline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/release/tools/demo/equarx-demo "$@"
