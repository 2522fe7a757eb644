#!/usr/bin/env bash
# bench/rotation_speed.sh — what the rotation (rotation = hadamard) costs: the transform kernels
# beside the fused codec kernel (Google Benchmark, every SIMD target the CPU has, L2-resident
# and 64 MiB data), and whole in-process calls, N = 8 ranks x 64 MiB bf16, rotation none vs
# hadamard side by side in one equarx-perf run (medians of --iters). Raw output goes to
# bench/results/rotation/; the tables (bench/plot/codec_speed_table.py rotation, with the
# 1 Gbit/s rows of bench/results/rotation/netem_1gbit_h4/ made by the bench/netem/run.sh command
# given in docs/performance.md) are spliced into docs/performance.md ("Rotation").
#
#   bash bench/rotation_speed.sh [--iters 5]
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=5
source bench/options_lib.sh
bench_options "bench/rotation_speed.sh [--iters N]" --iters=ITERS -- "$@"
source bench/codec_speed_lib.sh
RES=bench/results/rotation
env_and_kernels "$RES" env.txt \
  '(Memcpy|Int8Encode<64, F32>|Int8DecodeAccumulateEncode<64, (F32|BF16)>|Rotate(Forward|Inverse)<64, (F32|BF16)>)/(16384|16777216)$'
echo "== in-process calls" >&2
"$B/tools/perf/equarx-perf" -b 64M -e 64M -n "$ITERS" -w 1 -c 0 -d bf16 --ranks 8 \
  --algo full_bidir,semi,two_shot --rotation none,hadamard --block 64 --scale f32 -J "$RES/perf_n8_64m.jsonl" \
  | tee "$RES/perf_n8_64m.txt"
load_after "$RES/env.txt"
/usr/bin/python3 bench/plot/codec_speed_table.py rotation "$RES" --splice docs/performance.md
