#!/usr/bin/env bash
# Replays every file of the given corpus and regression directories through a fuzz harness
# (libFuzzer or replay_main.cc: both run each file named once and exit non-zero on a crash or a
# failed invariant). Fails when the directories hold no input at all, so that a lost corpus
# cannot pass silently. Usage: fuzz/replay.sh HARNESS DIR...
set -euo pipefail
harness="$1"; shift
files=()
for d in "$@"; do
  [ -d "$d" ] || continue
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$d" -type f ! -name '.*' -print0 | sort -z)
done
if [ ${#files[@]} -eq 0 ]; then
  echo "replay.sh: no inputs in $*" >&2
  exit 1
fi
echo "replaying ${#files[@]} inputs through $(basename "$harness")"
# In batches, to stay under the argument-length limit.
for ((i = 0; i < ${#files[@]}; i += 500)); do
  "$harness" "${files[@]:i:500}"
done
