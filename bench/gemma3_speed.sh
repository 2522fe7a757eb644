#!/usr/bin/env bash
# bench/gemma3_speed.sh — Gemma 3 270M prefill at TP = 4 over the emulated network (one rank per
# network namespace, equarx's sockets data path), bf16 ring vs the int8 EQuARX schedules, for
# 512 / 1024 / 2048-token prompts at each link rate (each with a 625 KB egress queue); then the same binary at TP = 1 in one
# process (no AllReduce, both cores) as the compute-only reference. Prints the speed table of
# docs/gemma3.md and keeps the rows in bench/results/gemma3_speed/.
#
#   bash bench/gemma3_speed.sh [--rates 100mbit,1gbit] [--reps 3] [--tokens 512,1024,2048]
#
# Needs root (like bench/netem/run.sh), the release build and the model (scripts/fetch_model.sh).
# About 20 minutes with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=100mbit,1gbit REPS=3 TOKENS=512,1024,2048
source bench/options_lib.sh
bench_options "bench/gemma3_speed.sh [--rates LIST] [--reps N] [--tokens LIST]" \
  --rates=RATES --reps=REPS --tokens=TOKENS -- "$@"
source bench/gemma3_lib.sh
RES=bench/results/gemma3_speed
OUT=out/gemma3_speed/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES" "$OUT"
: >"$RES/rows.jsonl"
: >"$RES/env.txt"
for rate in ${RATES//,/ }; do
  # Every rate gets the same egress queue in bytes, the 625 KB that run.sh's default 5 ms
  # holds at 1 Gbit/s: a 5 ms queue at 100 Mbit/s (62 KB, seven jumbo frames) drops packets
  # whenever more than one flow leaves a host.
  if [[ $rate =~ ^([0-9]+)mbit$ ]]; then mbit=${BASH_REMATCH[1]}
  elif [[ $rate =~ ^([0-9]+)gbit$ ]]; then mbit=$((BASH_REMATCH[1] * 1000))
  else echo "gemma3_speed.sh: rates are Nmbit or Ngbit, not $rate" >&2; exit 2; fi
  latency_us=$((5000 * 1000 / mbit))
  bash bench/netem/run.sh --hosts 4 --rates "$rate" --configs link,gemma3 --data-path sockets \
    --tbf-latency "${latency_us}us" --gemma3-model "$MODEL" --gemma3-tokens "$TOKENS" \
    --gemma3-reps "$REPS" --out "$OUT/netem-$rate"
  cat "$OUT/netem-$rate/rows.jsonl" >>"$RES/rows.jsonl"
  cat "$OUT/netem-$rate/env.txt" >>"$RES/env.txt"
done
"$BIN" bench --model "$MODEL" --tp 1 --tokens "$TOKENS" --reps "$REPS" \
  --json "$OUT/tp1.jsonl"
cp "$OUT/tp1.jsonl" "$RES/tp1.jsonl"
/usr/bin/env python3 bench/plot/gemma3_table.py "$RES/rows.jsonl" "$RES/tp1.jsonl" | tee "$RES/table.md"
