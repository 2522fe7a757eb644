#!/usr/bin/env bash
# bench/latency.sh — small messages on emulated hosts: equarx's default call (algorithm auto,
# no options) beside Open MPI's default MPI_Allreduce, Open MPI's ring and Gloo, p50 and p99
# (docs/benchmarks.md, "Small messages"). Two sweeps, each through bench/netem/run.sh (one rank
# per network namespace, equarx's TCP data path):
#   latency   16 B .. 1 MiB (x4), f32 and bf16, at --hosts and --rates (default 2,4,8 hosts at
#             1 Gbit/s and unshaped), -n 500 timed calls per size;
#   sweep     every power of two from 1 KiB to 64 MiB, f32, 4 hosts at 1 Gbit/s (-n 300 below
#             1 MiB in 7 launches, -n 8 from there on): the target "no slower than the fastest
#             peer at any size". Each launch also runs run.sh's tuned config: equarx-tune
#             measures the schedules below on these links and auto is timed on its table.
# equarx's rows: auto (the default call) and the schedules it chooses from (the ring,
# one_shot_raw, recursive_doubling, one_shot, two_shot, full_bidir), each at the library's
# defaults (its scale format and block, the codec's rotation). Results: bench/results/latency/latency/ and bench/results/latency/sweep/
# {small,large}/ (each rows.jsonl, env.txt, raw/); bench/plot/latency_table.py --splice
# docs/benchmarks.md draws the tables.
#
#   bash bench/latency.sh [--hosts 2,4,8] [--rates 1gbit,none] [--iters 500] [--sweep-launches 7]
#                         [--only latency|sweep|sweep-small]
#
# The sweep below 1 MiB runs --sweep-launches launches (its table: each size's median);
# --only sweep-small runs that part alone (about 12 minutes) and the tables keep the rest.
# Needs root (as bench/netem/run.sh) and the release build. About 45 minutes with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=2,4,8 RATES=1gbit,none ITERS=500 ONLY= SWEEP_LAUNCHES=7
source bench/options_lib.sh
bench_options "bench/latency.sh [--hosts LIST] [--rates LIST] [--iters N] [--sweep-launches L] [--only latency|sweep|sweep-small]" \
  --hosts=HOSTS --rates=RATES --iters=ITERS --sweep-launches=SWEEP_LAUNCHES --only=ONLY -- "$@"
RES=bench/results/latency
ALGOS=auto,one_shot_raw,recursive_doubling,one_shot,two_shot,full_bidir
common=(--configs f32,bf16,mpi,mpi_ring,gloo --algos "$ALGOS" --phases rs+ag --block 0 --scale default --check 1)
if [[ -z $ONLY || $ONLY == latency ]]; then
  rm -rf "$RES/latency"
  bash bench/netem/run.sh --hosts "$HOSTS" --rates "$RATES" "${common[@]}" -b 16 -e 1M -f 4 \
    -n "$ITERS" -w 50 --out "$RES/latency"
fi
if [[ -z $ONLY || $ONLY == sweep* ]]; then
  sweep=(--hosts 4 --rates 1gbit --configs f32,mpi,mpi_ring,gloo,tuned --algos "$ALGOS" --f32-phases rs+ag
         --block 0 --scale default --check 1)
  # Below 1 MiB one launch's p50 moves by up to 2x (4 emulated hosts share 2 cores): the table
  # takes each size's median over $SWEEP_LAUNCHES launches, every launch side by side.
  rm -rf "$RES/sweep/small"
  mkdir -p "$RES/sweep/small"
  for i in $(seq "$SWEEP_LAUNCHES"); do
    bash bench/netem/run.sh "${sweep[@]}" -b 1K -e 512K -f 2 -n 300 -w 30 --out "$RES/sweep/small/launch$i"
    sed -e "s|^{|{\"sweep_launch\":$i,|" "$RES/sweep/small/launch$i/rows.jsonl" >>"$RES/sweep/small/rows.jsonl"
  done
  cp "$RES/sweep/small/launch1/env.txt" "$RES/sweep/small/env.txt"
  if [[ $ONLY != sweep-small ]]; then
    rm -rf "$RES/sweep/large"
    bash bench/netem/run.sh "${sweep[@]}" -b 1M -e 64M -f 2 -n 8 -w 2 --out "$RES/sweep/large"
  fi
fi
rm -rf "$RES"/*/run "$RES"/*/*/run "$RES"/*/*/*/run "$RES"/*/bin "$RES"/*/*/bin "$RES"/*/*/*/bin
python3 bench/plot/latency_table.py --splice docs/benchmarks.md
