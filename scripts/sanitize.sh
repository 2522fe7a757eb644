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
#   scripts/sanitize.sh [asan] [fuzz] [tsan]        (default: all three, in that order)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan fuzz tsan)
bash scripts/apt_install.sh build-essential cmake ninja-build pkg-config libhwy-dev libgtest-dev libssl-dev \
  libgmock-dev openmpi-bin libopenmpi-dev clang-14 libclang-rt-14-dev
for step in "${steps[@]}"; do
  start=$(date +%s)
  case "$step" in
    asan)
      cmake --preset asan >/dev/null
      cmake --build --preset asan
      ctest --preset asan -j2 --timeout 1800 ;;
    fuzz)
      bash scripts/fuzz.sh --seed 1 --seconds 120 ;;
    tsan)
      cmake --preset tsan >/dev/null
      cmake --build --preset tsan
      ctest --preset tsan -j2 --timeout 1800 ;;
    *) echo "sanitize.sh: unknown step '$step' (asan, fuzz, tsan)" >&2; exit 2 ;;
  esac
  echo "sanitize.sh: $step passed in $(( $(date +%s) - start )) s"
done
