#!/usr/bin/env bash
# bench/model_report.sh — the cost model's validation and projections (docs/scale.md):
#   1. builds the release tree (cmake --preset release) so that equarx-model is this revision's;
#   2. bench/model/validate.py: the model against every emulated-network row in bench/results;
#   3. bench/model/project.py: 64 ... 4096 ranks at 8 ranks per host, 25/100/400 Gbit/s;
#   4. writes bench/results/model/ (rows, summaries, env.txt) and regenerates the tables of
#      docs/scale.md between its <!-- model:NAME --> markers (the run's commit on a Provenance
#      line below its env block).
# With --splice only step 4's docs/scale.md, from the files bench/results/model/ holds.
#
#   bash bench/model_report.sh [--splice]
#
# About a minute. The codec rates are measured on this machine: run it on a quiet one.
set -euo pipefail
SPLICE_ONLY=0
case "${1:-}:$#" in
  :0) ;;
  --splice:1) SPLICE_ONLY=1 ;;
  *) echo "usage: bash bench/model_report.sh [--splice]" >&2; exit 2 ;;
esac
source "$(dirname "$0")/model_lib.sh"
if (( ! SPLICE_ONLY )); then
{
  echo "date: $(date -u +%FT%T%:z)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include tools bench/model || echo ' (dirty)')"
  echo "simd: $(build/release/tools/info/equarx-info 2>/dev/null | sed -n 's/^kernels use: //p')"
  echo "cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commands: python3 bench/model/validate.py --model $MODEL --out $OUT;" \
       "python3 bench/model/project.py --model $MODEL --out $OUT"
} > "$OUT/env.txt"
python3 bench/model/validate.py --model "$MODEL" --out "$OUT"
python3 bench/model/project.py --model "$MODEL" --out "$OUT" >/dev/null
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/env.txt"
fi

# The tables of docs/scale.md: each generated file replaces what stands between its markers.
python3 - "$OUT" <<'PYEOF'
import re, sys
sys.path.insert(0, "bench/plot")
from codec_speed_table import commit_below
out = sys.argv[1]
doc = open("docs/scale.md").read()
parts = {
    "validation": open(f"{out}/summary.txt").read().rstrip("\n"),
    "projections": open(f"{out}/projections.md").read().rstrip("\n"),
    "ranks_per_host": open(f"{out}/ranks_per_host.md").read().rstrip("\n"),
    "env": open(f"{out}/env.txt").read().rstrip("\n"),
}
for name, text in parts.items():
    provenance = ""
    if name == "env":  # the commit goes on a Provenance line of its own, below the block
        text, provenance = commit_below(text)
    if name not in ("projections", "ranks_per_host"):
        text = "```\n" + text + "\n```" + provenance
    pat = re.compile(r"(<!-- model:%s -->\n)(?:.*?\n)?(<!-- /model:%s -->)" % (name, name), re.S)
    if not pat.search(doc):
        sys.exit(f"docs/scale.md has no <!-- model:{name} --> markers")
    doc = pat.sub(lambda m: m.group(1) + text + "\n" + m.group(2), doc)
open("docs/scale.md", "w").write(doc)
PYEOF
echo "model_report.sh: wrote $OUT and docs/scale.md"
