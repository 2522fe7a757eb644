#!/usr/bin/env bash
# bench/soak.sh — the soak of issue 13 item 5: mpi_soak (tests/mpi/soak.cc) on 4 ranks over
# equarx's sockets, --calls random calls (size 1 B … --max-bytes, every dtype, algorithm, codec
# and option; each checked for rank agreement and the error bound; RSS sampled after the
# warm-up and every 500 calls), once per seed, one run after the other. A call's draw and
# inputs depend only on the seed and its index, so each seed is a distinct set of calls and
# the same seed the same calls again. Saves each run's raw output under
# bench/results/reliability/soak/ (the log, the JSONL rows, the environment: commit,
# equarx-info, load) and, unless --no-docs, regenerates the "Soak" section of
# docs/reliability.md (between <!-- generated:soak:begin/end -->) from this invocation's runs
# (bench/plot/soak_table.py). Exit status: 0 when every run passed, else the last failing
# run's mpi_soak status.
#
#   bash bench/soak.sh --seeds 1-4 [--calls 20000] [--max-bytes 64M] [--warmup 1000] [--no-docs]
#     --seeds LIST   the seed of each run: a comma list of numbers and ranges (1-4, or 5,9);
#                    --seed S is one run. No default: every run names its seed.
#
# Builds build/release (mpi_soak, equarx-info) if needed. The figures are only worth
# recording from a committed revision: the environment file says when the tree differs.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=20000
SEEDS=""
MAX_BYTES=64M
WARMUP=""
DOCS=1
usage() { echo "usage: bench/soak.sh --seeds LIST [--calls N] [--max-bytes B] [--warmup N] [--no-docs]" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "bench/soak.sh: $1 needs a value" >&2; usage; }; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --calls) need_value "$@"; CALLS=$2; shift ;;
    --seed|--seeds) need_value "$@"; SEEDS=$2; shift ;;
    --max-bytes) need_value "$@"; MAX_BYTES=$2; shift ;;
    --warmup) need_value "$@"; WARMUP=$2; shift ;;
    --no-docs) DOCS=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench/soak.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
[[ -n $SEEDS ]] || { echo "bench/soak.sh: name the seed of each run (--seeds 1-4, or --seed S)" >&2; usage; }
[[ $CALLS =~ ^[1-9][0-9]*$ ]] || { echo "bench/soak.sh: --calls must be a positive integer" >&2; exit 2; }
# The seed list: numbers and ranges A-B, each seed once.
SEED_LIST=()
IFS=, read -r -a parts <<<"$SEEDS"
for part in "${parts[@]}"; do
  if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]] && (( BASH_REMATCH[1] <= BASH_REMATCH[2] )); then
    for ((x = BASH_REMATCH[1]; x <= BASH_REMATCH[2]; x++)); do SEED_LIST+=("$x"); done
  elif [[ $part =~ ^[0-9]+$ ]]; then
    SEED_LIST+=("$part")
  else
    echo "bench/soak.sh: --seeds: '$part' is not a seed or a range A-B (A <= B)" >&2; exit 2
  fi
done
dup=$(printf '%s\n' "${SEED_LIST[@]}" | sort -n | uniq -d | head -1)
[[ -z $dup ]] || { echo "bench/soak.sh: --seeds names seed $dup twice (the same calls again)" >&2; exit 2; }
# Warm-up: 1000 calls, or a fifth of a shorter run (mpi_soak judges RSS from 1000 calls after it).
[[ -n $WARMUP ]] || WARMUP=$(( CALLS >= 5000 ? 1000 : CALLS / 5 ))
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "bench/soak.sh: --warmup must be a non-negative integer" >&2; exit 2; }

B=build/release
[[ -f $B/build.ninja ]] || cmake --preset release >/dev/null
cmake --build --preset release --target mpi_soak equarx-info >/dev/null
RES=bench/results/reliability/soak
mkdir -p "$RES"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
DIRTY=""
git diff --quiet HEAD -- src include tools tests CMakeLists.txt || DIRTY=" (+ uncommitted changes)"
PREFIXES=()
RC=0
SAMPLER=""
trap '[[ -z $SAMPLER ]] || kill $SAMPLER 2>/dev/null || true' EXIT
for SEED in "${SEED_LIST[@]}"; do
  TAG=calls${CALLS}_seed${SEED}_max${MAX_BYTES}_$(git rev-parse --short=7 HEAD)
  LOG=$RES/$TAG.log
  JSONL=$RES/$TAG.jsonl
  ENV=$RES/${TAG}_env.txt
  LOAD=$RES/${TAG}_load.txt
  CMD=(mpirun --oversubscribe --bind-to none -np 4
       --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
       -x EQUARX_DATA_PATH=sockets -x EQUARX_TIMEOUT_MS=600000
       "$B/tests/mpi/mpi_soak" --calls "$CALLS" --seed "$SEED" --max-bytes "$MAX_BYTES"
       --warmup "$WARMUP" --report-every 500 --out "$JSONL")
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$DIRTY"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    echo "command: ${CMD[*]}"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "--- equarx-info"
    "$B/tools/info/equarx-info"
  } >"$ENV"
  # The machine's load once a minute while the soak runs (other work may share it).
  ( while sleep 60; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) >"$LOAD" &
  SAMPLER=$!
  echo "==== bench/soak.sh: seed $SEED ($CALLS calls): $LOG"
  START=$(date +%s)
  set +e
  "${CMD[@]}" 2>&1 | tee "$LOG"
  rc=${PIPESTATUS[0]}
  set -e
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$ENV"
  echo "wall seconds (mpirun): $(( $(date +%s) - START )); exit status: $rc" >>"$ENV"
  kill $SAMPLER 2>/dev/null || true
  SAMPLER=""
  [[ $rc -eq 0 ]] || RC=$rc
  PREFIXES+=("$RES/$TAG")
done

if [[ $DOCS == 1 ]]; then
  python3 bench/plot/soak_table.py "${PREFIXES[@]}" --splice docs/reliability.md &&
    echo "docs/reliability.md: Soak section updated"
fi
exit "$RC"
