#!/usr/bin/env bash
# bench/ab_speed.sh — this build's speed against an earlier build's, side by side, for a change
# that must not move it: the codec kernels a refactor touches (the rotation both ways, the raw
# bf16 conversions, the int8 encode and fused kernel on bf16 data) on every SIMD target the CPU
# has, and AllReduce over 4 emulated hosts at 1 Gbit/s (equarx-perf, f32: the unquantized ring
# and the default call at 16 and 64 MiB), the two builds alternating launch by launch. Medians;
# bench/plot/ab_table.py writes the table into docs/performance.md ("generated:ab_speed").
#
#   bash bench/ab_speed.sh --before BUILD_DIR [--launches N] [--targets LIST] [--out DIR]   (root)
#
# BUILD_DIR: the release build of the earlier revision (e.g. a git worktree's build/release);
# --targets: the SIMD targets of the kernels, comma-separated (default: every one the CPU has
# but SCALAR and SSSE3).
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=
LAUNCHES=2
TARGETS=
OUT=bench/results/ab_speed
source bench/options_lib.sh
bench_options "bench/ab_speed.sh --before BUILD_DIR [--launches N] [--targets LIST] [--out DIR]" \
  --before=BEFORE --launches=LAUNCHES --targets=TARGETS --out=OUT -- "$@"
source bench/codec_speed_lib.sh
if [[ -z $BEFORE || ! -x $BEFORE/bench/codec/equarx_codec_bench || ! -x $BEFORE/tools/perf/equarx-perf ]]; then
  echo "ab_speed.sh: --before must name a release build with equarx_codec_bench and equarx-perf" >&2
  exit 2
fi
FILTER='(Rotate(Forward|Inverse)<[0-9]+, [A-Z0-9]+>|RawBF16Encode|RawBF16Decode|Int8Encode<128, BF16>|Int8DecodeAccumulateEncode<128, BF16>)/'
rm -rf "$OUT"
mkdir -p "$OUT"
speed_env "$OUT/env.txt"
rev=$(before_revision "$BEFORE")
echo "before: $rev" >>"$OUT/env.txt"
# The command as a reader can repeat it: the earlier build named by its revision, not its path.
echo "command: bash bench/ab_speed.sh --before <release build of ${rev:0:7}> --launches $LAUNCHES${TARGETS:+ --targets $TARGETS} --out $OUT" >>"$OUT/env.txt"

for target in $(if [[ -n $TARGETS ]]; then echo "${TARGETS//,/ }"; else codec_targets; fi); do
  for side in before after; do
    echo "== kernels, $target, $side" >&2
    build=$([[ $side == before ]] && echo "$BEFORE" || echo "$B")
    codec_bench "$build" "$target" "$FILTER" "$OUT/kernels_${side}_${target}.json"
  done
done

for ((l = 1; l <= LAUNCHES; l++)); do
  for side in before after; do
    echo "== emulated hosts, launch $l, $side" >&2
    build=$([[ $side == before ]] && echo "$BEFORE" || echo "$B")
    bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs f32 -b 16M -e 64M -f 4 --algos full_bidir \
      --f32-phases rs+ag --build "$build" --out "$OUT/netem_${side}_$l" >"$OUT/netem_${side}_$l.log" 2>&1
  done
done
load_after "$OUT/env.txt"
python3 bench/plot/ab_table.py "$OUT" --splice docs/performance.md
