# bench/model_lib.sh — sourced by bench/model_report.sh and bench/model_auto.sh: goes to the
# repository root, sets OUT (bench/results/model, created) and MODEL (the release build's
# equarx-model) and builds this revision's equarx-model.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/results/model
MODEL=build/release/tools/model/equarx-model
cmake --preset release >/dev/null
cmake --build --preset release --target equarx-model >/dev/null
mkdir -p "$OUT"
