#!/usr/bin/env bash
# bench/scale_speed.sh — what the block-scale formats cost in speed: the int8 codec kernels at
# block 128 with f32, bf16 and two-level scales side by side (Google Benchmark, every SIMD target
# the CPU has, L2-resident and 64 MiB data, with the rotation over 128 and over 16 beside them),
# and whole in-process calls, N = 8 ranks x 64 MiB bf16, rs+ag int8 with the rotation, at
# B64 f32 scales, B32 bf16 scales and B128 two-level scales side by side in one equarx-perf run
# (medians of --iters); with --netem also 16 and 64 MiB calls at 1 Gbit/s over 4 emulated hosts
# (bench/netem/run.sh; root), B128 f32 against B128 two-level scales beside the bf16 ring. Raw
# output goes to bench/results/scale_formats/; the tables (bench/plot/codec_speed_table.py) are
# spliced into docs/performance.md ("Scale formats").
#
#   bash bench/scale_speed.sh [--iters 5] [--netem]
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=5 NETEM=0
source bench/options_lib.sh
bench_options "bench/scale_speed.sh [--iters N] [--netem]" --iters=ITERS --netem=NETEM=1 -- "$@"
source bench/codec_speed_lib.sh
RES=bench/results/scale_formats
env_and_kernels "$RES" speed_env.txt \
  '(Memcpy|Int8(Encode|Decode|DecodeAccumulateEncode)<128(, F32)?(, S(BF16|2L))?>|Rotate(Forward|Inverse)<(16|128), BF16>)/(16384|16777216)$'
echo "== in-process calls" >&2
: >"$RES/perf_n8_64m.jsonl"
for cfg in "64 f32" "32 bf16" "128 two_level"; do
  set -- $cfg
  "$B/tools/perf/equarx-perf" -b 64M -e 64M -n "$ITERS" -w 1 -c 0 -d bf16 --ranks 8 \
    --algo full_bidir,two_shot --rotation hadamard --block "$1" --scale "$2" -J "$RES/perf_tmp.jsonl"
  cat "$RES/perf_tmp.jsonl" >>"$RES/perf_n8_64m.jsonl"
done | tee "$RES/perf_n8_64m.txt"
rm -f "$RES/perf_tmp.jsonl"
load_after "$RES/speed_env.txt"
if (( NETEM )); then
  rm -rf "$RES/netem_1gbit_h4"
  bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs link,bf16 -b 16M -e 64M -f 4 \
    --algos full_bidir,two_shot --phases rs+ag --scale f32,two_level --data-path sockets \
    --out "$RES/netem_1gbit_h4"
  rm -rf "$RES/netem_1gbit_h4/bin"  # the run's copies of the binaries
fi
/usr/bin/python3 bench/plot/codec_speed_table.py scales "$RES" --splice docs/performance.md
