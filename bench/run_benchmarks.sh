#!/usr/bin/env bash
# bench/run_benchmarks.sh — regenerates docs/benchmarks.md, its PNGs (docs/img/netem_*.png),
# the "Overlap" figures at the end of docs/performance.md and bench/results/.
#
#   bash bench/run_benchmarks.sh            # full sweep (about 20 min on a quiet 2-core machine)
#   bash bench/run_benchmarks.sh --quick    # H=4 only, 1 Gbit/s and unshaped, 1M..16M (~5 min)
#   bash bench/run_benchmarks.sh --data-path sockets   # equarx's data over its own TCP
#                                                      # connections (default mpi)
#   bash bench/run_benchmarks.sh --from DIR...   # re-plot earlier bench/netem/run.sh results
#                                                # (the overlap block comes from the run
#                                                # whose --configs include overlap)
#
# Needs root (network namespaces). Builds build/release if the binaries are missing, installs
# libgloo-dev and iperf3 with apt-get when absent, makes .venv/ with matplotlib when absent.
# Only the text between the "generated" markers in the two documents is replaced.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

MODE=full FROM=() DATA_PATH=mpi
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) MODE=quick ;;
    --data-path) DATA_PATH=$2; shift ;;
    --from) MODE=from; shift; FROM=("$@"); break ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "run_benchmarks.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

if [[ $MODE != from ]]; then
  if [[ ! -x build/release/tools/perf/equarx-perf || ! -x build/release/tests/mpi/mpi_test ]]; then
    log "building the release preset"
    cmake --preset release >/dev/null && cmake --build --preset release
  fi
  missing=()
  [[ -f /usr/include/gloo/allreduce.h ]] || missing+=(libgloo-dev)
  command -v iperf3 >/dev/null || missing+=(iperf3)
  command -v ethtool >/dev/null || missing+=(ethtool)
  if [[ ${#missing[@]} -gt 0 ]]; then
    log "apt-get install ${missing[*]}"
    apt-get install -y "${missing[@]}" >/dev/null || { apt-get update >/dev/null && apt-get install -y "${missing[@]}" >/dev/null; }
  fi
fi
if ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  log "making .venv with matplotlib"
  PY=/usr/bin/python3; [[ -x $PY ]] || PY=$(command -v python3)
  [[ -x .venv/bin/python ]] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q matplotlib
fi

STAMP=$(date +%Y%m%d-%H%M%S)
# Each run: a name and bench/netem/run.sh's options. The H = 8 sweep is coarser (every 4x,
# rs+ag only): on 2 cores it is CPU-bound and takes about twice as long per size.
NAMES=() RUNS=()
add() { NAMES+=("$1"); shift; RUNS+=("$*"); }
COMMON="--configs link,bf16,f32,mpi,mpi_ring,gloo"
if [[ $MODE == full ]]; then
  add sweep_h4 --hosts 4 --rates 1gbit,2.5gbit,none $COMMON -b 64K -e 64M -f 2 -n 5 -w 1
  add sweep_h8 --hosts 8 --rates 1gbit,none $COMMON -b 1M -e 64M -f 4 -n 5 -w 1 --phases rs+ag --check 0
  add overlap --hosts 4,8 --rates 1gbit --configs link,overlap,mpitest,mpifault \
    --overlap-sizes 16M,64M --overlap-algos full_bidir,full,semi -n 5 -w 1 --check 0
  add formats --hosts 4 --rates 1gbit --configs formats -b 4M -e 64M -f 4 -n 5 -w 1
  add auto --hosts 4,8 --rates 1gbit --configs auto -b 64K -e 64M -f 4 -n 5 -w 1 --check 0
elif [[ $MODE == quick ]]; then
  add sweep_quick --hosts 4 --rates 1gbit,none $COMMON -b 1M -e 16M -f 4 -n 3 -w 1 --phases rs+ag
  add overlap_quick --hosts 4 --rates 1gbit --configs overlap,mpitest,mpifault --overlap-sizes 16M -n 3 -w 1
  add formats_quick --hosts 4 --rates 1gbit --configs formats -b 16M -e 16M -n 3 -w 1
  add auto_quick --hosts 4 --rates 1gbit --configs auto -b 256K -e 16M -f 8 -n 3 -w 1 --check 0
fi
DIRS=()
if [[ $MODE == from ]]; then
  DIRS=("${FROM[@]}")
else
  for i in "${!NAMES[@]}"; do
    d=out/bench/$STAMP/${NAMES[$i]}
    log "${NAMES[$i]}: bench/netem/run.sh ${RUNS[$i]} --out $d"
    # shellcheck disable=SC2086
    bash bench/netem/run.sh ${RUNS[$i]} --data-path "$DATA_PATH" --keep-going --out "$d" ||
      log "${NAMES[$i]}: some launches or tests failed, see $d/env.txt (results are kept)"
    DIRS+=("$d")
  done
fi
[[ ${#DIRS[@]} -gt 0 ]] || { echo "run_benchmarks.sh: no results" >&2; exit 2; }
D1=${DIRS[0]}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ENVS=() JSONS=()
for d in "${DIRS[@]}"; do ENVS+=("$d/env.txt"); JSONS+=("$d/rows.jsonl"); done

mkdir -p docs/img bench/results
rm -f docs/img/netem_*.png
.venv/bin/python bench/plot/plot.py --img-dir docs/img --img-rel img --md "$WORK/tables.md" \
  --overlap-md "$WORK/overlap.md" --formats-md "$WORK/formats.md" --auto-md "$WORK/auto.md" "${JSONS[@]}"
rm -f bench/results/netem_*
for d in "${DIRS[@]}"; do
  n=$(basename "$d")
  cp "$d/rows.jsonl" "bench/results/netem_$n.jsonl"
  [[ -f $d/rows.csv ]] && cp "$d/rows.csv" "bench/results/netem_$n.csv"
  sed "s|$REPO/||g" "$d/env.txt" >"bench/results/netem_${n}_env.txt"
done

facts() {   # the runs' commands, one example mpirun line, load and link checks
  echo "Commands (from the repository root, as root):"
  echo
  echo '```'
  sed -n 's/^command: /bash /p' "$@"
  echo '```'
  echo
  echo "Machine load (1-minute load average on $(nproc) cores; it counts the run's own launches,"
  echo "and anything else that ran beside them), link checks and per-launch tbf drops:"
  echo
  echo '```'
  grep -h -E "^(kernel|H=|load|note)" "$@" | sed "s|$REPO/||g"
  echo '```'
  echo
}
{
  echo "Generated by \`bash bench/run_benchmarks.sh\` on $(sed -n 's/^date: //p' "$D1/env.txt");"
  echo "raw rows in \`bench/results/\`."
  echo
  echo "Provenance: commit $(sed -n 's/^commit: //p' "$D1/env.txt")."
  echo
  facts "${ENVS[@]}"
  echo "Each launch is one \`mpirun\` inside the first host namespace, for example (H = 4):"
  echo
  echo '```'
  f=$(ls "$D1"/raw/H4_1gbit_bf16.cmd 2>/dev/null || ls "$D1"/raw/*.cmd | head -1)
  sed "s|$REPO/||g" "$f" | fold -w 100 -s
  echo '```'
  echo
  cat "$WORK/tables.md"
  if grep -q "^| [0-9]" "$WORK/formats.md"; then
    echo
    echo "### Codecs on the wire: int8, int4, fp8 (bf16 data, block 128, rs+ag)"
    echo
    echo "One launch per link rate: the bf16 ring and every codec x algorithm interleaved per size"
    echo '(the `formats` run). `vs bf16 ring` = ring time / this time at the same size;'
    echo '`rel RMS error` against the f64 sum (N(0,1) data).'
    echo
    cat "$WORK/formats.md"
  fi
  if grep -q "^| [0-9]" "$WORK/auto.md"; then
    echo
    echo "### algorithm=auto on a table measured by equarx-tune (bf16, rs+ag)"
    echo
    echo 'One launch of `equarx-tune` (ring vs full, full_bidir, semi, two_shot; a quantized schedule must'
    echo 'win by 5%), then one launch timing the ring, every quantized algorithm and `auto` on that'
    echo 'table, interleaved per size. `auto / fastest` = auto time / the fastest fixed configuration'
    echo 'at that size; `auto sent` = what auto moved (by its wire bytes).'
    echo
    cat "$WORK/auto.md"
  fi
} >"$WORK/benchmarks.md"
OVERLAP_ENV=${ENVS[-1]}   # the run that measured the overlap (not necessarily the last)
for e in "${ENVS[@]}"; do
  if grep -q '^command: .*--configs [^ ]*overlap' "$e"; then OVERLAP_ENV=$e; fi
done
{
  echo "Generated by \`bash bench/run_benchmarks.sh\` on $(sed -n 's/^date: //p' "$OVERLAP_ENV")."
  echo "Median of the iterations; \"wire only\" skips the codec (the same bytes go on the wire),"
  echo "\"codec only\" skips the transport (the same kernels on the same bytes)."
  echo
  cat "$WORK/overlap.md"
  echo
  facts "$OVERLAP_ENV"
} >"$WORK/overlap_block.md"

splice() {   # splice FILE BLOCK_FILE NAME: replace the text between the markers NAME
  /usr/bin/env python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, block, name = sys.argv[1:4]
begin, end = f"<!-- generated:{name}:begin -->", f"<!-- generated:{name}:end -->"
text = open(path).read()
new = open(block).read().rstrip("\n")
if begin not in text or end not in text:
    sys.exit(f"{path}: markers {begin} / {end} not found")
a, rest = text.split(begin, 1)
_, b = rest.split(end, 1)
open(path, "w").write(f"{a}{begin}\n{new}\n{end}{b}")
EOF
}
splice docs/benchmarks.md "$WORK/benchmarks.md" benchmarks
if grep -q "^| [0-9]" "$WORK/overlap.md"; then splice docs/performance.md "$WORK/overlap_block.md" overlap; fi
log "docs/benchmarks.md, docs/performance.md (Overlap), docs/img/netem_*.png and bench/results/ updated"
