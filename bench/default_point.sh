#!/usr/bin/env bash
# bench/default_point.sh — what each block-scale point at int8's byte budget costs in speed
# where the default call runs it: 16 and 64 MiB calls of bf16 at 1 Gbit/s over 4 emulated hosts
# (bench/netem/run.sh; root), two_shot rs+ag int8 with the library's default rotation (auto's
# pick on that network for bf16 calls from 16 KiB: `equarx-model --hosts 4 --algo auto`), at blocks 32, 64 and
# 128 with f32, bf16 and two-level scales, beside the bf16 ring, medians of 7, in --rounds
# launches one after the other (each point once per launch, so that a drift of the machine
# spreads over every point). The table (bench/plot/codec_speed_table.py default) puts each
# point's time over the B64 f32 point's (one-level scales at their default block) beside its wire bytes,
# medians over the launches, and is spliced into docs/performance.md ("The default point");
# docs/gemma3.md has the same points' quality.
#
#   bash bench/default_point.sh [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3
source bench/options_lib.sh
bench_options "bench/default_point.sh [--rounds N]" --rounds=ROUNDS -- "$@"
RES=bench/results/default_point
rm -rf "$RES/netem_1gbit_h4"
mkdir -p "$RES/netem_1gbit_h4"
for ((r = 1; r <= ROUNDS; ++r)); do
  bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs link,bf16 -b 16M -e 64M -f 4 -n 7 -w 1 \
    --algos two_shot --phases rs+ag --block 32,64,128 --scale f32,bf16,two_level --data-path sockets \
    --out "$RES/netem_1gbit_h4/round$r"
  rm -rf "$RES/netem_1gbit_h4/round$r/bin"  # the run's copies of the binaries
done
/usr/bin/python3 bench/plot/codec_speed_table.py default "$RES" --splice docs/performance.md
