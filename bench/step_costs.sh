#!/usr/bin/env bash
# bench/step_costs.sh — what a schedule step and a message cost on the emulated hosts, fitted
# from whole calls (docs/benchmarks.md, "Steps, messages and microshards"). Every schedule auto
# chooses from (the ring, one_shot_raw, recursive_doubling, one_shot, two_shot, full_bidir),
# pinned, at the library's defaults (microshards by size) and with 4 microshards, f32,
# 1 KiB .. 512 KiB, on 4 hosts at 1 Gbit/s, through bench/netem/run.sh (one rank per network
# namespace, equarx's TCP data path, Open MPI's MPI_Allreduce beside them), in 3 launches.
# bench/plot/step_cost_fit.py
# then fits the step and message costs that EQUARX_STEP_US and EQUARX_MESSAGE_US default to
# from the rows at the library's defaults, sets them beside the rows with 4 microshards, and
# splices both tables into docs/benchmarks.md. Raw rows: bench/results/step_costs/launch<i>/
# (rows.jsonl, env.txt, raw/).
#
#   bash bench/step_costs.sh
#
# Needs root (as bench/netem/run.sh) and the release build. About 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
RES=bench/results/step_costs LAUNCHES=3
rm -rf "$RES"
for i in $(seq 1 $LAUNCHES); do
  bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs f32,mpi --algos one_shot_raw,recursive_doubling,one_shot,two_shot,full_bidir \
    --f32-phases rs+ag --block 0 --scale default --check 1 --microshards 0,4 -b 1K -e 512K -f 2 -n 300 -w 30 \
    --out "$RES/launch$i"
  rm -rf "$RES/launch$i/run" "$RES/launch$i/bin"
done
python3 bench/plot/step_cost_fit.py "$RES"/launch* --splice docs/benchmarks.md
