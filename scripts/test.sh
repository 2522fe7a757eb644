#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine if needed, builds, and runs
# the whole test suite: CTest (unit, codec, collective, tool and mpirun tests), then the
# Python package's pytest suite (numpy, mpi4py, JAX and PyTorch; scripts/test_python.sh).
# EQUARX_SKIP_PYTHON=1 runs CTest only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --preset release -j2 --timeout 900 "$@"
if [ "${EQUARX_SKIP_PYTHON:-0}" != 1 ]; then
  EQUARX_REQUIRE_TOOLS=1 bash scripts/test_python.sh
fi
