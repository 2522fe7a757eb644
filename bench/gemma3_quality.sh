#!/usr/bin/env bash
# bench/gemma3_quality.sh — Gemma 3 270M quality with quantized AllReduce at scale: every
# algorithm with rs+ag x rotation none/hadamard x {int8 B64 f32 scales, int8 B32 bf16 scales,
# int4 B32 bf16 scales, fp8_e4m3 B32 bf16 scales, int8 and int4 B128 two-level scales, int8 B64
# two-level scales}, two_shot rs+ag with the rotation x int6 and int5 x {B64, B128} x {f32,
# two-level scales}, plus the unquantized f32 and bf16 rings, at
# TP = 2, 4 and 8, on one 512-token chunk (BOS + 511) from the start of each of six texts that
# every Debian 12 machine has (base-files): 6 x 511 = 3066 predicted positions per row.
# "Exact" is the TP-1 f32 forward pass. Writes the raw output (text and JSON) to
# bench/results/gemma3_quality/ and the markdown tables with the bytes-quality frontier
# (bench/plot/gemma3_quality_table.py) to its tables.md, into docs/gemma3.md and, as a plot, to
# docs/img/gemma3_frontier.png.
#
#   bash bench/gemma3_quality.sh [--tp 2,4,8] [--tokens 512] [--chunks 1] [--runs b64,b32,b128,b64tl,packed]
#
# --runs picks which of the five runs per TP to (re)make: b64 (int8 B64 f32 scales and the
# baselines), b32 (int8/int4/fp8_e4m3 B32 bf16 scales), b128 (int8/int4 B128 two-level scales,
# with the baselines again so that the file stands alone), b64tl (int8 B64 two-level scales,
# with the baselines again), packed (int6/int5, two_shot with the rotation, B64 and B128, f32
# and two-level scales, with the baselines again).
#
# Needs the release build and the model (scripts/fetch_model.sh). About 20 minutes per TP value
# on the 2-core build machine.
set -euo pipefail
cd "$(dirname "$0")/.."
TPS=2,4,8 TOKENS=512 CHUNKS=1 RUNS=b64,b32,b128,b64tl,packed
source bench/options_lib.sh
bench_options "bench/gemma3_quality.sh [--tp LIST] [--tokens T] [--chunks C] [--runs LIST]" \
  --tp=TPS --tokens=TOKENS --chunks=CHUNKS --runs=RUNS -- "$@"
source bench/gemma3_lib.sh
L=/usr/share/common-licenses
TEXTS=$L/GPL-3,$L/GPL-2,$L/LGPL-2.1,$L/Apache-2.0,$L/MPL-2.0,$L/GFDL-1.3
RES=bench/results/gemma3_quality
mkdir -p "$RES"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include apps || echo ' (+ uncommitted changes)')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "simd: $(build/release/tools/info/equarx-info | sed -n 3p)"
  echo "texts: $TEXTS"
} >"$RES/env_${RUNS//,/_}.txt"
ALGOS=full,full_bidir,semi,two_shot
# one_run NAME TEXT FLAGS...: when --runs names NAME, the run at this TP with these flags, into
# $RES/tp<TP>_NAME.{json,txt}
one_run() {
  local name=$1 text=$2
  shift 2
  [[ ,$RUNS, == *,$name,* ]] || return 0
  echo "== TP $tp: $text" >&2
  "$BIN" "${common[@]}" "$@" --json "$RES/tp${tp}_$name.json" | tee "$RES/tp${tp}_$name.txt"
}
for tp in ${TPS//,/ }; do
  common=(eval --model "$MODEL" --text "$TEXTS" --tp "$tp" --tokens "$TOKENS" --chunks "$CHUNKS" --quiet
          --phases rs+ag)
  every=(--algo "$ALGOS" --rotation none,hadamard)
  one_run b64 "int8 B64 f32 scales, and the baselines" "${every[@]}" --baselines --codec int8 --block 64 --scale f32
  one_run b32 "int8, int4, fp8_e4m3 at B32 with bf16 scales" "${every[@]}" --codec int8,int4,fp8_e4m3 \
    --block 32 --scale bf16
  one_run b64tl "int8 at B64 with two-level scales, and the baselines" \
    "${every[@]}" --baselines --codec int8 --block 64 --scale two_level
  one_run b128 "int8, int4 at B128 with two-level scales, and the baselines" \
    "${every[@]}" --baselines --codec int8,int4 --block 128 --scale two_level
  one_run packed "int6, int5: two_shot with the rotation, B64 and B128, f32 and two-level scales" \
    --algo two_shot --rotation hadamard --baselines --codec int6,int5 --block 64,128 --scale f32,two_level
done
/usr/bin/python3 bench/plot/gemma3_quality_table.py "$RES" >"$RES/tables.md"
# The tables and the frontier plot into docs/gemma3.md (matplotlib: scripts/test_python.sh's .venv-torch).
.venv-torch/bin/python bench/plot/gemma3_quality_table.py "$RES" --splice docs/gemma3.md \
  --png docs/img/gemma3_frontier.png
cat "$RES/tables.md"
