#!/usr/bin/env bash
# The option and environment tables of docs/configuration.md come from the library's own
# tables (equarx-info --markdown): this script writes them between the doc's
# <!-- generated:options|knobs:begin/end --> markers; with --check it only compares (exit 1 and
# a diff when the doc's differ: the CTest test docs.configuration_tables).
#
#   bash scripts/config_tables.sh [--check] [--info PATH_TO_EQUARX_INFO]
set -euo pipefail
cd "$(dirname "$0")/.."
check=0 info=build/release/tools/info/equarx-info
while [[ $# -gt 0 ]]; do
  case $1 in
    --check) check=1 ;;
    --info) info=$2; shift ;;
    *) echo "usage: scripts/config_tables.sh [--check] [--info PATH]" >&2; exit 2 ;;
  esac
  shift
done
doc=docs/configuration.md
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
"$info" --markdown >"$fresh.tables"  # the built-in defaults, whatever the environment says
python3 - "$doc" "$fresh.tables" "$fresh" <<'PY'
import re, sys
doc, tables, out = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
for name in ("options", "knobs"):
    block = re.search(rf"<!-- generated:{name}:begin -->.*?<!-- generated:{name}:end -->", tables, re.S).group(0)
    pat = re.compile(rf"<!-- generated:{name}:begin -->.*?<!-- generated:{name}:end -->", re.S)
    if not pat.search(doc):
        sys.exit(f"{sys.argv[1]}: no generated:{name} markers")
    doc = pat.sub(lambda m: block, doc)
open(out, "w").write(doc)
PY
rm -f "$fresh.tables"
if [[ $check -eq 1 ]]; then
  diff -u "$doc" "$fresh" || { echo "docs/configuration.md's tables differ from the library's: bash scripts/config_tables.sh" >&2; exit 1; }
else
  cp "$fresh" "$doc"
fi
