#!/usr/bin/env bash
# bench/gemma3_generate.sh — Gemma 3 270M greedy decode in one process (ranks as threads) at
# TP = 1, 2 and 4: time to first token, prefill tokens/s and decode tokens/s (median and p99 per
# token) for a 512-token prompt (BOS and the first 511 tokens of apps/gemma3/data/prompt.txt)
# and 128 new tokens, with the unquantized f32 and bf16 rings and int8 two_shot, each run's
# tokens compared with the exact run's (TP 1, no AllReduce). Keeps the raw output (text and
# JSON lines, with the command and the machine's load before and after) in
# bench/results/gemma3_generate/ for docs/gemma3.md.
#
#   bash bench/gemma3_generate.sh [--tp 1,2,4] [--prompt-tokens 512] [--tokens 128]
#
# Needs the release build (of a committed revision, for figures that name one) and the model
# (scripts/fetch_model.sh). About 5 minutes on the 2-core build machine.
set -euo pipefail
cd "$(dirname "$0")/.."
TPS=1,2,4 PROMPT=512 TOKENS=128
source bench/options_lib.sh
bench_options "bench/gemma3_generate.sh [--tp LIST] [--prompt-tokens N] [--tokens N]" \
  --tp=TPS --prompt-tokens=PROMPT --tokens=TOKENS -- "$@"
source bench/gemma3_lib.sh
RES=bench/results/gemma3_generate
mkdir -p "$RES"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include apps || echo ' (+ uncommitted changes)')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RES/env.txt"
# run NAME ARGS...: one generate run, its command first in NAME.txt, its rows in NAME.jsonl
run() {
  local name=$1
  shift
  local cmd=("$BIN" generate --model "$MODEL" --prompt-tokens "$PROMPT" --tokens "$TOKENS" "$@"
             --json "$RES/$name.jsonl")
  { echo "\$ ${cmd[*]}"; echo "# load average before: $(cut -d" " -f1-3 /proc/loadavg)"; } | tee "$RES/$name.txt"
  "${cmd[@]}" | tee -a "$RES/$name.txt"
}
for tp in ${TPS//,/ }; do
  if [[ $tp -eq 1 ]]; then
    run tp1 --tp 1
  else
    run "tp${tp}_ring" --tp "$tp" --algo ring --dtype f32,bf16 --compare-exact
    run "tp${tp}_two_shot" --tp "$tp" --algo two_shot --compare-exact
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/env.txt"
