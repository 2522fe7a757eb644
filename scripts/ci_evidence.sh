#!/usr/bin/env bash
# The evidence of CI for the committed head (docs/reliability.md, "What CI runs"): clones HEAD
# into a fresh directory, runs CI there exactly as CI does (`CI=true bash .ci/run`) and keeps
# its summary in bench/results/reliability/ci_last_fresh_clone.txt: the commit, the machine,
# the load, the exit status and wall time, every stage's end line (tests, passed, skipped),
# the fuzz harnesses' executions and the final stage table; the whole log in
# bench/results/reliability/ci_last_fresh_clone.log. The summary also goes, in a code block, between the
# generated:ci markers of docs/reliability.md ("How long CI takes"). Run it at the end of a
# change that touches tests or CI, with nothing else running; commit both.
# The summary's commit line goes on a Provenance line below the code block. With --splice it
# only puts the committed summary between the markers again.
#   bash scripts/ci_evidence.sh [CLONE_DIR]        (default /tmp/equarx-ci-<commit>)
#   bash scripts/ci_evidence.sh --splice
set -uo pipefail
cd "$(dirname "$0")/.."
out=bench/results/reliability/ci_last_fresh_clone.txt
log=bench/results/reliability/ci_last_fresh_clone.log
splice() {
  python3 - "$out" <<'EOF'
import sys
sys.path.insert(0, "bench/plot")
from codec_speed_table import commit_below, emit
text, provenance = commit_below(open(sys.argv[1]).read().rstrip("\n"))
emit(f"From `{sys.argv[1]}`:\n\n```text\n{text}\n```{provenance}", "docs/reliability.md", "ci")
EOF
}
if [[ $# -eq 1 && $1 == --splice ]]; then
  splice
  exit
fi
if [[ $# -gt 1 || ${1:-} == -* ]]; then
  echo "usage: bash scripts/ci_evidence.sh [CLONE_DIR] | --splice" >&2
  exit 2
fi
sha=$(git rev-parse --short HEAD)
dir=${1:-/tmp/equarx-ci-$sha}
if ! git diff --quiet HEAD -- . ':!bench/results'; then
  echo "ci_evidence.sh: the checkout has uncommitted changes; CI runs the commit, so commit first" >&2
  exit 2
fi
rm -rf "$dir"
git clone -q . "$dir" || exit 1
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
start=$(date -u +%FT%TZ)
(cd "$dir" && CI=true bash .ci/run) >"$dir.log" 2>&1
rc=$?
cp "$dir.log" "$log"
secs=$(($(date +%s) - t0))
{
  echo "# CI=true bash .ci/run on a fresh clone (bash scripts/ci_evidence.sh)"
  echo "commit: $(git rev-parse HEAD) ($(git log -1 --format=%cI HEAD))"
  echo "started: $start; wall clock: $((secs / 60)) min $((secs % 60)) s; exit status: $rc"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -r); load at start: $load0; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "full log: $log"
  echo
  echo "## stage end lines"
  grep -E '^==== .*: (passed|FAILED)' "$log"
  echo
  echo "## fuzz harnesses"
  grep -E '^(harness +executions|[a-z_0-9]+ +[0-9]+ +[0-9-]+ +[0-9]+ +[0-9]+  |total executions)' "$log"
  echo
  echo "## final table"
  sed -n '/^stage  *tests  *passed/,$p' "$log"
} >"$out"
cat "$out"
splice
exit "$rc"
