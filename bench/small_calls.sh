#!/usr/bin/env bash
# bench/small_calls.sh — where the time of a small AllReduce goes (docs/performance.md, "Small
# calls"), on this machine, 4 ranks:
#   pieces   equarx_small_call_bench (Google Benchmark): the resolver, the descriptor, one_shot's
#            codec work per rank, and one message's one-way latency over each transport with the
#            wait spinning (EQUARX_SPIN_US's default) or sleeping at once;
#   calls    equarx-perf, 16 B .. 64 KiB (x4), f32, 2000 timed calls per size, p50 and p99:
#            the default call (auto) and the schedules it chooses from, each with the argument
#            check on and off, and the default again with EQUARX_SPIN_US=0 (waits sleep at once);
#            in process (ranks as threads), and one rank per process under mpirun over the
#            shared-memory rings (shm), TCP over loopback (sockets) and MPI point-to-point (mpi),
#            with Open MPI's own MPI_Allreduce beside them;
#   targets  the default call at 4 KiB in process and over the shared-memory rings, 5 launches
#            of 2000 calls each, for the issue's targets: one launch's p50 moves by more than the
#            schedules differ (4 rank threads share 2 cores), the median of the launches' p50s
#            does less so.
# Raw output: bench/results/small_calls/ (env.txt, pieces.json, calls.jsonl, targets.jsonl,
# raw_*.txt); then
# bench/plot/small_calls_table.py --splice docs/performance.md. About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/options_lib.sh
bench_options "bench/small_calls.sh" -- "$@"
B=build/release
RES=bench/results/small_calls
rm -rf "$RES"
mkdir -p "$RES"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
  echo "date: $(date -Is)"
  # The binaries' sources (the results this script rewrites do not count).
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include tools bench/latency || echo ' (dirty)')"
  echo "kernel: $(uname -r); cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "simd: $($B/tools/info/equarx-info | grep -m1 'kernels use')"
} >"$RES/env.txt"
"$B/bench/latency/equarx_small_call_bench" --benchmark_min_time=0.5 --benchmark_format=json \
  --benchmark_out="$RES/pieces.json" --benchmark_out_format=json >/dev/null
PERF=(-b 16 -e 64K -f 4 -n 2000 -w 200 -d f32 -c 1)
ALGOS=auto,one_shot_raw,recursive_doubling,one_shot,ring,two_shot
run() {  # NAME LAUNCH...: equarx-perf with every variant, rows into calls_NAME.jsonl
  local name=$1
  shift
  for variant in check nocheck sleep; do
    local extra=() spin=50
    [ $variant = nocheck ] && extra=(--validate=0)
    [ $variant = sleep ] && spin=0
    local algos=$ALGOS
    [ $variant = sleep ] && algos=auto
    EQUARX_SPIN_US=$spin "$@" "${PERF[@]}" --algo "$algos" "${extra[@]}" -J "$RES/raw_${name}_$variant.jsonl" \
      >"$RES/raw_${name}_$variant.txt"
    sed -e "s|^{|{\"setting\":\"$name\",\"variant\":\"$variant\",|" "$RES/raw_${name}_$variant.jsonl" >>"$RES/calls.jsonl"
    rm "$RES/raw_${name}_$variant.jsonl"
  done
}
# 4 processes on this machine's cores (Open MPI's shared-memory BTL, vader, for its own calls).
MPI4=(mpirun -np 4 --oversubscribe --bind-to none --mca btl self,vader,tcp --mca mpi_yield_when_idle 1
      -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)
run inproc "$B/tools/perf/equarx-perf" --ranks 4
for path in shm sockets mpi; do
  run "$path" "${MPI4[@]}" -x EQUARX_DATA_PATH=$path -x EQUARX_SPIN_US "$B/tools/perf/equarx-perf"
done
# The targets: the default call at 4 KiB, one launch after the other.
for launch in 1 2 3 4 5; do
  for setting in inproc shm; do
    cmd=("$B/tools/perf/equarx-perf" --ranks 4)
    [ $setting = shm ] && cmd=("${MPI4[@]}" -x EQUARX_DATA_PATH=shm "$B/tools/perf/equarx-perf")
    "${cmd[@]}" -b 4K -e 4K -n 2000 -w 200 -d f32 -c 1 --algo auto -J "$RES/raw_target.jsonl" >/dev/null
    sed -e "s|^{|{\"setting\":\"$setting\",\"launch\":$launch,|" "$RES/raw_target.jsonl" >>"$RES/targets.jsonl"
    rm "$RES/raw_target.jsonl"
  done
done
# Open MPI's own MPI_Allreduce on the same ranks.
"${MPI4[@]}" "$B/tools/perf/equarx-perf" "${PERF[@]}" --algo mpi -J "$RES/raw_openmpi.jsonl" >"$RES/raw_openmpi.txt"
sed -e 's|^{|{"setting":"openmpi","variant":"check",|' "$RES/raw_openmpi.jsonl" >>"$RES/calls.jsonl"
rm "$RES/raw_openmpi.jsonl"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/env.txt"
python3 bench/plot/small_calls_table.py --splice docs/performance.md
