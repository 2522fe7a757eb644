# bench/gemma3_lib.sh — sourced by bench/gemma3_quality.sh and bench/gemma3_speed.sh after their
# options: MODEL, the GGUF both run, and BIN, the release build's equarx-gemma3; exits 2 (naming
# the script) when the model is missing.
MODEL=.venv/models/gemma-3-270m-q4_k_m.gguf
BIN=build/release/apps/gemma3/equarx-gemma3
[[ -f $MODEL ]] || { echo "${0##*/}: no model; run scripts/fetch_model.sh" >&2; exit 2; }
