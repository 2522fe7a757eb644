#!/usr/bin/env bash
# bench/model_rerun.sh — measures again, with nothing else running and from a committed build, every
# configuration of our own algorithms that the cost model's validation reads from
# bench/results: the first benchmark round (bench/run_benchmarks.sh: the sweep_h4, sweep_h8,
# formats and auto runs, docs/benchmarks.md), the rotation run (docs/performance.md) and the
# two hierarchical runs (docs/benchmarks.md, "Several ranks per host"). Same bench/netem/run.sh
# options (hosts, ranks per host, rates, sizes, iterations, block 128, the rotation the run
# had: none in the first round, whose builds had none) but only equarx's own rows (no MPI or
# Gloo launches, which the validation leaves out) and an iperf3 link check in every run. The
# first round ran while other builds and tests used the same 2 cores, on builds with
# uncommitted changes; these runs refuse a dirty tree and record the load (which counts their
# own launches: run nothing else meanwhile).
#
#   bash bench/model_rerun.sh [--only NAME[,NAME..]]
#       NAME: sweep_h4 sweep_h8 formats auto rotation hier_h2x2 hier_h4x2 (default: all)
#
# Rows go to bench/results/model_rerun/NAME/ (rows.csv, rows.jsonl, env.txt); then run
# bench/model_report.sh, whose validation reads them as datasets "rerun_NAME". About 20 minutes
# here; needs root (network namespaces) and the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
ONLY=sweep_h4,sweep_h8,formats,auto,rotation,hier_h2x2,hier_h4x2
source bench/options_lib.sh
bench_options "bench/model_rerun.sh [--only NAME,...]" --only=ONLY -- "$@"
if ! git diff --quiet HEAD -- src include tools apps bench/netem; then
  echo "model_rerun.sh: uncommitted changes under src include tools apps bench/netem: commit first" >&2
  exit 2
fi
cmake --build --preset release >/dev/null
COMMON=(--keep-going)
FIRST="--rotation none --data-path sockets"
declare -A RUN=(
  [sweep_h4]="--hosts 4 --rates 1gbit,2.5gbit,none --configs link,bf16,f32 -b 64K -e 64M -f 2 -n 5 -w 1 $FIRST"
  [sweep_h8]="--hosts 8 --rates 1gbit,none --configs link,bf16,f32 -b 1M -e 64M -f 4 -n 5 -w 1 --phases rs+ag --check 0 $FIRST"
  [formats]="--hosts 4 --rates 1gbit --configs link,formats -b 4M -e 64M -f 4 -n 5 -w 1 $FIRST"
  [auto]="--hosts 4,8 --rates 1gbit --configs link,auto -b 64K -e 64M -f 4 -n 5 -w 1 --check 0 $FIRST"
  [rotation]="--hosts 4 --rates 1gbit --configs link,bf16 -b 16M -e 64M -f 4 --algos full_bidir,two_shot --phases rs+ag --rotation none,hadamard --data-path sockets"
  [hier_h2x2]="--hosts 2 --ranks-per-host 2 --rates 1gbit --configs link,hier -b 16M -e 64M -f 4 -n 5 -w 2 --data-path host"
  [hier_h4x2]="--hosts 4 --ranks-per-host 2 --rates 1gbit --configs link,hier --hier-inner two_shot,full_bidir -b 16M -e 64M -f 4 -n 5 -w 2 --data-path host"
)
RES=bench/results/model_rerun
for name in ${ONLY//,/ }; do
  [[ -n ${RUN[$name]:-} ]] || { echo "model_rerun.sh: unknown run $name" >&2; exit 2; }
done
for name in ${ONLY//,/ }; do
  out=out/model_rerun/$name
  rm -rf "$out"
  # shellcheck disable=SC2086
  bash bench/netem/run.sh ${RUN[$name]} "${COMMON[@]}" --out "$out"
  mkdir -p "$RES/$name"
  cp "$out/rows.csv" "$out/rows.jsonl" "$RES/$name/"
  sed "s|$PWD/||g" "$out/env.txt" >"$RES/$name/env.txt"
done
echo "model_rerun.sh: rows in $RES; now: bash bench/model_report.sh" >&2
