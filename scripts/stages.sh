# Sourced by scripts/test.sh, test_python.sh, sanitize.sh and fuzz.sh: each part of the test
# command is a stage with a banner (its start, and how long into the whole run), an end line
# with its elapsed time and counts (tests, passed, skipped), and a row in $EQUARX_STAGES
# (tab-separated: stage, tests, passed, skipped, seconds, result), which scripts/test.sh prints
# as its final table. Under CI=true a stage that skipped a test fails: CI runs every test.
#   stage_begin NAME
#   stage_end RC [TESTS PASSED SKIPPED]        (returns 1 when the stage failed)
#   run_stage NAME COMMAND...                  (a stage that runs no tests: a build, a download)
#   run_ctest NAME CTEST_ARGS...               (a stage: ctest with JUnit output, counted)
#   run_pytest NAME PYTHON PYTEST_ARGS...      (a stage: python -m pytest, counted)
#   stage_table                                (prints $EQUARX_STAGES)
#   stages_standalone                          (a script run on its own prints its table at exit)
STAGES_T0=${STAGES_T0:-$(date +%s)}
export STAGES_T0

stage_clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

stage_begin() {
  STAGE=$1
  STAGE_START=$(date +%s)
  printf '\n==== %s: started %s (%s into the run)\n' "$STAGE" "$(date +%T)" \
    "$(stage_clock $((STAGE_START - STAGES_T0)))"
}

stage_end() {
  local rc=$1 tests=${2:--} passed=${3:--} skipped=${4:--} result=passed
  local secs=$(($(date +%s) - STAGE_START))
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit status $rc)"
  elif [ "$skipped" != - ] && [ "$skipped" -gt 0 ] && [ "${CI:-}" = true ]; then
    result="FAILED ($skipped skipped under CI=true)"
    rc=1
  fi
  printf '==== %s: %s in %s; tests %s, passed %s, skipped %s\n' "$STAGE" "$result" "$(stage_clock "$secs")" \
    "$tests" "$passed" "$skipped"
  if [ -n "${EQUARX_STAGES:-}" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$STAGE" "$tests" "$passed" "$skipped" "$secs" "$result" >>"$EQUARX_STAGES"
  fi
  [ "$rc" -eq 0 ]
}

run_stage() {
  local name=$1 rc=0
  shift
  stage_begin "$name"
  "$@" || rc=$?
  stage_end "$rc"
}

# "TESTS PASSED SKIPPED FAILED" from a JUnit XML file (CTest's --output-junit, pytest's
# --junitxml): skipped includes CTest's disabled tests, failed pytest's errors.
junit_counts() {
  python3 - "$1" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
tests = skipped = failed = 0
for s in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
    tests += int(s.get("tests", 0))
    skipped += int(s.get("skipped", 0)) + int(s.get("disabled", 0))
    failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
print(tests, tests - skipped - failed, skipped, failed)
EOF
}

# Runs a counted command that writes JUnit XML to $junit; ends the stage with its counts.
stage_counted() {
  local junit=$1 rc=$2 counts
  if [ -s "$junit" ] && counts=$(junit_counts "$junit"); then
    # shellcheck disable=SC2086
    set -- $counts
    rm -f "$junit"
    stage_end "$rc" "$1" "$2" "$3"
  else
    rm -f "$junit"
    echo "stages.sh: $STAGE wrote no test results" >&2
    stage_end $((rc ? rc : 1))
  fi
}

run_ctest() {
  local name=$1 junit rc=0
  shift
  stage_begin "$name"
  junit=$(mktemp --suffix=.xml)
  ctest "$@" --output-junit "$junit" || rc=$?
  stage_counted "$junit" "$rc"
}

run_pytest() {
  local name=$1 py=$2 junit rc=0
  shift 2
  stage_begin "$name"
  junit=$(mktemp --suffix=.xml)
  "$py" -m pytest -q -rsxX --junitxml="$junit" "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "stages.sh: pytest collected no tests" >&2
    rc=1
  fi
  stage_counted "$junit" "$rc"
}

stage_table() {
  [ -s "${EQUARX_STAGES:-}" ] || return 0
  printf '\n%-40s %6s %7s %8s %8s  %s\n' stage tests passed skipped minutes result
  local name tests passed skipped secs result
  while IFS=$'\t' read -r name tests passed skipped secs result; do
    printf '%-40s %6s %7s %8s %8s  %s\n' "$name" "$tests" "$passed" "$skipped" \
      "$(awk -v s="$secs" 'BEGIN { printf "%.1f", s / 60 }')" "$result"
  done <"$EQUARX_STAGES"
  printf '%-40s %6s %7s %8s %8s\n' "total (wall clock)" "" "" "" \
    "$(awk -v s="$(($(date +%s) - STAGES_T0))" 'BEGIN { printf "%.1f", s / 60 }')"
}

stages_standalone() {
  [ -z "${EQUARX_STAGES:-}" ] || return 0
  EQUARX_STAGES=$(mktemp)
  export EQUARX_STAGES
  trap 'stage_table; rm -f "$EQUARX_STAGES"' EXIT
}
