#!/usr/bin/env bash
# The sanitizer part of the README's test command (scripts/test.sh runs it; docs/reliability.md
# has what it found and how long it takes):
#   asan  clang-14 with ASan + UBSan (preset asan, build/asan; every report is fatal): the
#         whole CTest suite, mpirun tests and fuzz-corpus replays included;
#   fuzz  every libFuzzer harness of fuzz/ on the same build, a fixed number of inputs from a
#         fixed seed (scripts/fuzz.sh --seed 1: the same inputs on every machine, about 10 s
#         each here; at most 120 s each);
#   tsan  clang-14 with TSan (preset tsan, build/tsan): the transport tests (label unit: the
#         in-process, socket and shared-memory transports, socket setup under attack, frames) and the
#         collective tests (label collective: every algorithm on thread ranks).
# Suppressions (scripts/sanitizers/*.supp) are for third-party code only, each with its reason.
# Each build and each test run is a stage (scripts/stages.sh: banner, time, counts; under
# CI=true a skipped test fails); the first failure ends the script.
#   scripts/sanitize.sh [asan] [fuzz] [tsan]        (default: all three, in that order)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stages.sh
source scripts/stages.sh
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan fuzz tsan)
for step in "${steps[@]}"; do
  case "$step" in
    asan|fuzz|tsan) ;;
    *) echo "sanitize.sh: unknown step '$step' (asan, fuzz, tsan)" >&2; exit 2 ;;
  esac
done
stages_standalone
bash scripts/apt_install.sh build-essential cmake ninja-build pkg-config libhwy-dev libgtest-dev libssl-dev \
  libgmock-dev openmpi-bin libopenmpi-dev clang-14 libclang-rt-14-dev
build() { cmake --preset "$1" >/dev/null && cmake --build --preset "$1"; }
for step in "${steps[@]}"; do
  case "$step" in
    asan)
      run_stage "asan: build (clang-14, ASan + UBSan)" build asan
      run_ctest "ctest asan (ASan + UBSan)" --preset asan -j2 --timeout 1800 ;;
    fuzz)
      bash scripts/fuzz.sh --seed 1 --seconds 120 ;;
    tsan)
      run_stage "tsan: build (clang-14, TSan)" build tsan
      run_ctest "ctest tsan (labels unit, collective)" --preset tsan -j2 --timeout 1800 ;;
  esac
done
