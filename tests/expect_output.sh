#!/usr/bin/env bash
# A CTest test that must both exit as expected and print an expected line. CTest's own
# PASS_REGULAR_EXPRESSION ignores the exit status (a crash at teardown, or a sanitizer abort
# after the PASS line, would still pass), so the top-level CMakeLists.txt refuses it; tests
# that check their output run through this script instead:
#
#   tests/expect_output.sh [--fail] REGEX -- COMMAND [ARG...]
#
# Runs COMMAND (its output is passed through, stdout and stderr together), then passes only
# when its exit status is 0 (with --fail: not 0, for a command that must be refused) AND a
# line of its output matches REGEX (grep -E). Exit status: 0 pass, 1 fail, 2 bad usage.
set -uo pipefail
usage() { echo "usage: expect_output.sh [--fail] REGEX -- COMMAND [ARG...]" >&2; exit 2; }
want_fail=0
if [ "${1:-}" = --fail ]; then want_fail=1; shift; fi
[ $# -ge 3 ] && [ "$2" = -- ] || usage
regex=$1
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
fail() { echo "expect_output.sh: FAIL: $*" >&2; exit 1; }
if [ "$want_fail" = 1 ]; then
  [ "$rc" -ne 0 ] || fail "'$1' exited 0, but it must fail"
else
  [ "$rc" -eq 0 ] || fail "'$1' exited with status $rc"
fi
grep -E -q -- "$regex" "$out" || fail "no line of the output matches '$regex'"
echo "expect_output.sh: exit status $rc and a line matching '$regex': pass"
