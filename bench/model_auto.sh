#!/usr/bin/env bash
# bench/model_auto.sh — what algorithm=auto chooses without a tune file (the cost model's table,
# src/algo/cost_model.h ModelTuneTable), per network, ranks and message size:
#   1. builds this revision's equarx-model (release preset);
#   2. equarx-model --algo auto (auto resolves as the library's would with EQUARX_LINK_GBIT,
#      EQUARX_STEP_US and EQUARX_MESSAGE_US set to the run's --link-gbit, --alpha-us and
#      --per-message-us) for 2, 4, 8 and 64 ranks, one per host, bf16, every power of two from
#      16 B to 16 GiB, at 1, 25 and 100 Gbit/s and the library's default step and message costs
#      (as equarx-info lists them), into bench/results/model/auto_<link>gbit.csv;
#   3. the sizes where the choice changes, as a table between docs/scale.md's
#      <!-- model:auto --> markers (and bench/results/model/auto_choices.md).
#
#   bash bench/model_auto.sh
#
# A few seconds; nothing is measured (the model's built-in kernel rates, as the library's auto).
set -euo pipefail
source "$(dirname "$0")/model_lib.sh"
LINKS="1 25 100"
cmake --build --preset release --target equarx-info >/dev/null
knob() { build/release/tools/info/equarx-info | awk -v k="$1" '$1 == k { print $4 }'; }
STEP_US=$(knob EQUARX_STEP_US) MESSAGE_US=$(knob EQUARX_MESSAGE_US)
for g in $LINKS; do
  "$MODEL" --hosts 2,4,8,64 -b 16 -e 16G -f 2 -d bf16 --algo auto --link-gbit "$g" --alpha-us "$STEP_US" \
    --per-message-us "$MESSAGE_US" --csv >"$OUT/auto_${g}gbit.csv"
done
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo ' (dirty)')"
python3 - "$OUT" "$commit" "$STEP_US" "$MESSAGE_US" $LINKS <<'PYEOF'
import csv, re, sys
out, commit, step_us, message_us, links = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def size(b):
    for unit, n in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << n:
            return "%d %s" % (b >> n, unit)
    return "%d B" % b
lines = ["| link | ranks | auto's choice by message size (bf16) |", "|---|---:|---|"]
for g in links:
    rows = list(csv.DictReader(open(f"{out}/auto_{g}gbit.csv")))
    for hosts in sorted({int(r["hosts"]) for r in rows}):
        steps, prev = [], None
        for r in rows:
            if int(r["hosts"]) == hosts and r["algo"] != prev:
                prev = r["algo"]
                steps.append(("from %s " % size(int(r["size_bytes"])) if steps else "") + prev)
        lines.append("| %s Gbit/s | %d | %s |" % (g, hosts, ", ".join(steps)))
lines += ["", "One rank per host, %s us a step and %s us a message (the library's defaults), the built-in "
          "kernel rates and one codec thread; " % (step_us, message_us) +
          "every size from 16 B to 16 GiB; rows in `bench/results/model/auto_*gbit.csv`.",
          "", "Provenance: build of %s." % commit]
table = "\n".join(lines)
open(f"{out}/auto_choices.md", "w").write(table + "\n")
doc = open("docs/scale.md").read()
pat = re.compile(r"(<!-- model:auto -->\n)(?:.*?\n)?(<!-- /model:auto -->)", re.S)
if not pat.search(doc):
    sys.exit("docs/scale.md has no <!-- model:auto --> markers")
open("docs/scale.md", "w").write(pat.sub(lambda m: m.group(1) + table + "\n" + m.group(2), doc))
print(table)
PYEOF
