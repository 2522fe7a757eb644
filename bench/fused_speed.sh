#!/usr/bin/env bash
# bench/fused_speed.sh — the issue target "fused DecodeAccumulateEncode >= 50% of single-core
# memcpy on L2-resident data, on every dispatched SIMD target": the int8 kernels (Encode,
# DecodeAccumulateEncode with f32 and bf16 local data, B = 64 and 128) beside memcpy at 16 Ki
# and 64 Ki elements (64 KiB and 256 KiB of f32), forced to each SIMD target the CPU has (but
# SCALAR and SSSE3), medians of --reps repetitions, into bench/results/fused_kernel/.
# With --before DIR (a release build of an earlier revision, e.g. a git worktree's build
# directory) the same benchmarks of that build run too, target by target, alternating with
# this build's, into bench/results/fused_kernel/before/. The table
# (bench/plot/codec_speed_table.py fused) is spliced into docs/performance.md.
#
#   bash bench/fused_speed.sh [--reps 9] [--before DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=9
BEFORE=
source bench/options_lib.sh
bench_options "bench/fused_speed.sh [--reps N] [--before BUILD_DIR]" --reps=REPS --before=BEFORE -- "$@"
source bench/codec_speed_lib.sh
RES=bench/results/fused_kernel
FILTER='(Memcpy|Int8Encode<(64|128), F32>|Int8DecodeAccumulateEncode<(64|128), (F32|BF16)>)/(16384|65536)$'
if [[ -n $BEFORE && ! -x $BEFORE/bench/codec/equarx_codec_bench ]]; then
  echo "fused_speed.sh: $BEFORE/bench/codec/equarx_codec_bench not found (build it first)" >&2
  exit 2
fi
mkdir -p "$RES"
rm -rf "$RES/before"
rm -f "$RES"/codec_*.json
speed_env "$RES/env.txt"
if [[ -n $BEFORE ]]; then
  mkdir -p "$RES/before"
  echo "before: $(before_revision "$BEFORE")" >>"$RES/env.txt"
fi
for target in $(codec_targets); do
  if [[ -n $BEFORE ]]; then
    echo "== $target, before" >&2
    codec_bench "$BEFORE" "$target" "$FILTER" "$RES/before/codec_${target}.json" --benchmark_repetitions="$REPS"
  fi
  echo "== $target" >&2
  codec_bench "$B" "$target" "$FILTER" "$RES/codec_${target}.json" --benchmark_repetitions="$REPS"
done
load_after "$RES/env.txt"
/usr/bin/python3 bench/plot/codec_speed_table.py fused "$RES" --splice docs/performance.md
