# bench/compare_path_lib.sh — sourced by bench/compare_data_path.sh and
# bench/compare_local_path.sh: their one option and the table they splice into a document.
#
#   table_only_option SCRIPT ARGS...  run=0 with --table-only, else run=1; any other argument
#                                     is an error (exit 2, SCRIPT naming the script)
#   splice_table MARKER DOC TABLE     puts TABLE between DOC's <!-- MARKER:begin --> and
#                                     <!-- MARKER:end --> lines (exit 1 without them) and prints it

table_only_option() {
  local script=$1 a
  shift
  run=1
  for a in "$@"; do
    case $a in
      --table-only) run=0 ;;
      *) echo "$script: unknown option $a (expected --table-only)" >&2; exit 2 ;;
    esac
  done
}

splice_table() {
  /usr/bin/env python3 - "$@" <<'PY'
import re, sys
marker, doc, table = sys.argv[1:]
text = open(doc).read()
pat = re.compile(r"(<!-- %s:begin -->\n).*?(<!-- %s:end -->)" % (marker, marker), re.S)
if not pat.search(text):
    sys.exit(f"{doc} has no <!-- {marker}:begin --> ... <!-- {marker}:end --> markers")
open(doc, "w").write(pat.sub(lambda m: m.group(1) + table + "\n" + m.group(2), text))
print(table)
PY
}
