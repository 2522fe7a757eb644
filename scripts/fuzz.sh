#!/usr/bin/env bash
# Runs the libFuzzer harnesses of fuzz/ (clang-14 with ASan + UBSan: the asan preset, built
# here if needed) one after the other, each for the given time, starting from its committed
# seed corpus (fuzz/corpus/NAME) and its regression inputs (fuzz/regressions/NAME). New
# inputs go to build/asan/fuzz/work/NAME (the committed corpus is not modified), crashes to
# build/asan/fuzz/artifacts/NAME/. Prints and appends to build/asan/fuzz/runs.tsv the
# executions of every harness; exits 1 if any harness crashed or broke one of its invariants
# (then add the artifact to fuzz/regressions/NAME/ with the fix: docs/reliability.md), or,
# with --seed, stopped short of its number of inputs.
#   scripts/fuzz.sh [--minutes M | --seconds S] [--seed N --runs-scale F] [HARNESS...]
#     (default: 20 s each, all, a random seed). With --seed, every harness runs a fixed number
#     of inputs (its CI_RUNS below times F) from that seed: the same inputs on every machine, so
#     a run that passed here passes anywhere. The time limit then guards against a hang; since
#     libFuzzer exits 0 when -max_total_time runs out, a harness that ran fewer inputs than it
#     was given fails here ("stopped short").
# CI runs it that way, briefly (scripts/sanitize.sh); `--minutes 60` is a long exploratory run.
# The run is a stage of the test command (scripts/stages.sh; tests = harnesses).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/stages.sh
source scripts/stages.sh
SECONDS_EACH=20
SEED=""
SCALE=1
NAMES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) SECONDS_EACH=$(( $2 * 60 )); shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --runs-scale) SCALE="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
ALL=(codec npy gguf tokenizer socket_frames handshake tune_table options)
# Inputs per harness with --seed: about 10 s each on the 2-core CI machine, a tenth or less of
# the 120 s that CI allows each (measured rates, docs/reliability.md).
declare -A CI_RUNS=([codec]=4000 [npy]=900000 [gguf]=400000 [tokenizer]=50000
                    [socket_frames]=100000 [handshake]=120000 [tune_table]=250000 [options]=150000)
if [ -n "$SEED" ] && ! [[ $SEED =~ ^[0-9]+$ && $SCALE =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: --seed and --runs-scale take non-negative integers" >&2; exit 2
fi
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL[@]}")
for name in "${NAMES[@]}"; do
  [ -n "${CI_RUNS[$name]:-}" ] || { echo "fuzz.sh: unknown harness '$name' (${ALL[*]})" >&2; exit 2; }
done
[[ $SECONDS_EACH =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --minutes/--seconds take a positive integer" >&2; exit 2; }
stages_standalone
stage_begin "fuzz (libFuzzer, ASan + UBSan${SEED:+, seed $SEED})"

bash scripts/apt_install.sh clang-14 libclang-rt-14-dev
BUILD=build/asan
if [ ! -f "$BUILD/CMakeCache.txt" ]; then cmake --preset asan >/dev/null; fi
cmake --build "$BUILD" --target $(printf 'fuzz_%s ' "${NAMES[@]}")

OUT="$BUILD/fuzz"
mkdir -p "$OUT"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=0
passed=0
total=0
printf '%-14s %12s %12s %10s %8s  %s\n' harness executions requested exec/s seconds result
for name in "${NAMES[@]}"; do
  work="$OUT/work/$name" art="$OUT/artifacts/$name"
  mkdir -p "$work" "$art"
  log="$OUT/$name.log"
  dirs=("$work" "fuzz/corpus/$name")
  [ -d "fuzz/regressions/$name" ] && dirs+=("fuzz/regressions/$name")
  set +e
  fixed=()
  want=-
  if [ -n "$SEED" ]; then
    rm -rf "$work" && mkdir -p "$work"  # the same starting corpus every time
    want=$(( ${CI_RUNS[$name]} * SCALE ))
    fixed=(-seed="$SEED" -runs="$want")
  fi
  "$BUILD/fuzz/fuzz_$name" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2560 \
    "${fixed[@]}" -print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  execs=${execs:-0}
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="CRASH (rc $rc): $(ls "$art" | head -3 | tr '\n' ' ')see $log"
    failed=1
    grep -m3 -E 'ERROR: |runtime error|fuzz invariant failed' "$log" >&2 || true
  elif [ "$want" != - ] && [ "$execs" -lt "$want" ]; then
    result="STOPPED SHORT: $execs of $want inputs within the ${SECONDS_EACH} s limit (see $log)"
    failed=1
  else
    passed=$((passed + 1))
  fi
  total=$((total + execs))
  printf '%-14s %12s %12s %10s %8s  %s\n' "$name" "$execs" "$want" "${rate:-0}" "$SECONDS_EACH" "$result"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$(git rev-parse --short HEAD)" "$name" \
    "$execs" "$SECONDS_EACH" "$result" >> "$OUT/runs.tsv"
done
echo "total executions: $total (log: $OUT/runs.tsv)"
stage_end "$failed" "${#NAMES[@]}" "$passed" 0
