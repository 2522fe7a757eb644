#!/usr/bin/env bash
# The README's main job: sets up a fresh Debian 12 machine if needed, builds, runs the 8-rank
# in-process demo (every EQuARX configuration next to the unquantized baseline: in process the
# bytes are free, so it shows the codec's cost and the errors), then what quantizing buys on a
# link: a short run on 4 emulated hosts at 1 Gbit/s (as root, with network namespaces), or
# without them the cost model's projection (scripts/demo_link.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/release/tools/demo/equarx-demo "$@"
echo
bash scripts/demo_link.sh
