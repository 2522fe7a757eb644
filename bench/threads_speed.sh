#!/usr/bin/env bash
# bench/threads_speed.sh — the codec on several threads (option `threads`): the 64 MiB int8
# Encode and DecodeAccumulateEncode cut into T parts on a worker pool of T = 1 and 2 threads
# (Google Benchmark, wall-clock, medians of 11 randomly interleaved repetitions, every SIMD
# target the CPU has, memcpy beside them), and whole
# in-process calls, 2 ranks x 64 MiB bf16, rs+ag int8, threads 1 and 2 side by side in one
# equarx-perf run (medians of --iters). Raw output goes to bench/results/threads/; the tables
# (bench/plot/threads_table.py) are spliced into docs/performance.md ("Codec threads").
#
#   [ITERS=11] bash bench/threads_speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 0 ]] || { echo "usage: [ITERS=N] bash bench/threads_speed.sh" >&2; exit 2; }
ITERS=${ITERS:-11}
source bench/codec_speed_lib.sh
RES=bench/results/threads
mkdir -p "$RES"
speed_env "$RES/env.txt"
echo "iters: $ITERS" >>"$RES/env.txt"
# 11 repetitions, randomly interleaved, so that 1 and 2 threads meet the same machine state.
codec_kernels "$RES" '^BM_MemcpyThreads|^BM_Int8Threads' \
  '--benchmark_repetitions=11 --benchmark_enable_random_interleaving=true'
echo "== in-process calls" >&2
"$B/tools/perf/equarx-perf" -b 64M -e 64M -n "$ITERS" -w 1 -c 0 -d bf16 --ranks 2 \
  --algo full_bidir,two_shot --threads 1,2 --block 64 --scale f32 -J "$RES/perf_n2_64m.jsonl" | tee "$RES/perf_n2_64m.txt"
load_after "$RES/env.txt"
/usr/bin/python3 bench/plot/threads_table.py "$RES" --splice docs/performance.md
