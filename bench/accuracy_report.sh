#!/usr/bin/env bash
# bench/accuracy_report.sh — regenerates docs/accuracy.md: dumps the AllReduce operands of
# Gemma 3 270M at TP = 4 (layers 0, 5, 11, 17; one 512-token chunk from each of two Debian
# texts) into out/activations/tp4 (gitignored, about 85 MB), then runs equarx-accuracy on the
# Table I setting and those real activations.
#
#   bash bench/accuracy_report.sh
#
# Needs the release build and the model (scripts/fetch_model.sh). About 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=.venv/models/gemma-3-270m-q4_k_m.gguf
[[ -f $MODEL ]] || { echo "accuracy_report.sh: no model; run scripts/fetch_model.sh" >&2; exit 2; }
ACT=out/activations/tp4
rm -rf "$ACT"
mkdir -p "$ACT"
L=/usr/share/common-licenses
build/release/apps/gemma3/equarx-gemma3 eval --model "$MODEL" --text "$L/GPL-3,$L/Apache-2.0" --tp 4 \
  --tokens 512 --dump-activations "$ACT" --dump-layers 0,5,11,17 --quiet >/dev/null
build/release/tools/accuracy/equarx-accuracy --activations "$ACT" --out docs/accuracy.md
