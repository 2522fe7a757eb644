#!/usr/bin/env bash
# bench/gemma3_generate.sh — Gemma 3 270M greedy decode in one process (ranks as threads) at
# TP = 1, 2 and 4: time to first token, prefill tokens/s and decode tokens/s (median and p99 per
# token) for a 512-token prompt (BOS and the first 511 tokens of apps/gemma3/data/prompt.txt)
# and 128 new tokens, with the unquantized f32 and bf16 rings and int8 two_shot, each run's
# tokens compared with the exact run's (TP 1, no AllReduce). Keeps the raw output of each run
# (text and JSON lines; the date, commit and command first, the CPU other processes took during
# it last) in bench/results/gemma3_generate/ for docs/gemma3.md; a run of some TPs replaces
# only theirs.
#
#   bash bench/gemma3_generate.sh [--tp 1,2,4] [--prompt-tokens 512] [--tokens 128]
#
# Needs the release build (of a committed revision, for figures that name one) and the model
# (scripts/fetch_model.sh). About 3 minutes on the 2-core build machine with nothing else running.
set -euo pipefail
cd "$(dirname "$0")/.."
TPS=1,2,4 PROMPT=512 TOKENS=128
source bench/options_lib.sh
bench_options "bench/gemma3_generate.sh [--tp LIST] [--prompt-tokens N] [--tokens N]" \
  --tp=TPS --prompt-tokens=PROMPT --tokens=TOKENS -- "$@"
source bench/gemma3_lib.sh
RES=bench/results/gemma3_generate
mkdir -p "$RES"
commit="$(git rev-parse HEAD)$(git diff --quiet HEAD -- src include apps || echo ' (+ uncommitted changes)')"
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
# CPU time of the whole machine so far, in clock ticks (user, nice, system, irq, softirq, steal).
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
# run NAME ARGS...: one generate run, its command first in NAME.txt, its rows in NAME.jsonl, and
# last the CPU time other processes took while it ran (the machine is shared: read a run whose
# neighbours took a core's worth or more as disturbed).
run() {
  local name=$1
  shift
  local cmd=("$BIN" generate --model "$MODEL" --prompt-tokens "$PROMPT" --tokens "$TOKENS" "$@"
             --json "$RES/$name.jsonl")
  { echo "# $(date -u +%FT%TZ), commit $commit, $machine"; echo "\$ ${cmd[*]}"; } | tee "$RES/$name.txt"
  local b0 b1 wall user sys
  b0=$(busy)
  /usr/bin/time -f "%e %U %S" -o "$RES/.time" "${cmd[@]}" | tee -a "$RES/$name.txt"
  b1=$(busy)
  read -r wall user sys <"$RES/.time"
  rm -f "$RES/.time"
  awk -v b=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN {
    o = b / hz - u - s; if (o < 0) o = 0
    printf "# other processes: %.1f s of CPU during this run'"'"'s %.1f s (%.2f cores on average)\n", o, w, o / w }' |
    tee -a "$RES/$name.txt"
}
for tp in ${TPS//,/ }; do
  if [[ $tp -eq 1 ]]; then
    run tp1 --tp 1
  else
    run "tp${tp}_ring" --tp "$tp" --algo ring --dtype f32,bf16 --compare-exact
    run "tp${tp}_two_shot" --tp "$tp" --algo two_shot --compare-exact
  fi
done
