#!/usr/bin/env bash
# bench/packed_speed.sh — what the packed integer codecs (int6, int5) cost in speed, and whether
# their bytes buy their speed on a bandwidth-bound link: the Encode and fused
# DecodeAccumulateEncode kernels of int8, int6, int5 and int4 at block 128 beside memcpy (Google
# Benchmark, every SIMD target the CPU has but SCALAR and SSSE3, L2-resident and 64 MiB data,
# medians of 5), and with --netem 16 and 64 MiB calls at 1 Gbit/s over 4 emulated hosts
# (bench/netem/run.sh; root): two_shot and full_bidir rs+ag with int8, int6 and int5 at block 128
# with f32 and with two-level scales and the rotation, beside the bf16 ring. Raw output goes to
# bench/results/packed_speed/; the tables (bench/plot/codec_speed_table.py packed) are spliced
# into docs/performance.md ("Packed codecs").
#
#   bash bench/packed_speed.sh [--netem]
set -euo pipefail
cd "$(dirname "$0")/.."
NETEM=0
source bench/options_lib.sh
bench_options "bench/packed_speed.sh [--netem]" --netem=NETEM=1 -- "$@"
source bench/codec_speed_lib.sh
RES=bench/results/packed_speed
env_and_kernels "$RES" env.txt '(Memcpy|Block(Encode|DecodeAccumulateEncode)<I[8654], RNE, false>)/(16384|16777216)$'
load_after "$RES/env.txt"
if (( NETEM )); then
  rm -rf "$RES/netem_1gbit_h4"
  bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs link,formats -b 16M -e 64M -f 4 -n 5 -w 1 \
    --format-algos two_shot,full_bidir --codecs int8,int6,int5 --block 128 --scale f32,two_level \
    --rotation hadamard --data-path sockets --out "$RES/netem_1gbit_h4"
  rm -rf "$RES/netem_1gbit_h4/bin"  # the run's copies of the binaries
fi
/usr/bin/python3 bench/plot/codec_speed_table.py packed "$RES" --splice docs/performance.md
