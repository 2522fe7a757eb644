#!/usr/bin/env bash
# A tool under mpirun must never hang on a stopped or dead rank: runs TOOL on NP ranks over
# equarx's sockets with a 3000 ms deadline, stops (SIGSTOP) or kills (SIGKILL) the last rank
# once the job is running, at a random moment, and checks that the whole job ends with a
# non-zero status, that a rank said why it ended it (stop: "ending the job"), and that the
# victim is gone. The moment varies from run to run: most stops land inside an AllReduce
# (survivors time out and end the job within seconds); a stop between collectives is caught
# by the tools' own MPI steps (tools/common/job.h), which end the job after their deadline.
#
# Usage: run_stop_tool_test.sh MPIEXEC stop|kill NP [--setup "CMD"] TOOL ARGS...
#   @DIR@ in CMD and ARGS is replaced by a scratch directory (e.g. for a model file).
set -u
mpiexec=$1 mode=$2 np=$3
shift 3
dir=$(mktemp -d)
victim=
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# mpirun can exit before the ranks it killed are gone: allow them 10 s.
gone() { for _ in $(seq 100); do alive "$1" || return 0; sleep 0.1; done; return 1; }
state() { awk '{print "state " $3}' "/proc/$1/stat" 2>/dev/null; }
cleanup() {
  if [ -n "$victim" ] && alive "$victim"; then kill -KILL "$victim"; fi
  rm -rf "$dir"
}
trap cleanup EXIT
if [ "${1:-}" = --setup ]; then
  eval "${2//@DIR@/$dir}" || { echo "FAIL: setup failed"; exit 1; }
  shift 2
fi
args=()
for a in "$@"; do args+=("${a//@DIR@/$dir}"); done
case $mode in stop) sig=STOP ;; kill) sig=KILL ;; *) echo "unknown mode $mode"; exit 2 ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
tag="stoptest-$$-$RANDOM"
limit=${STOP_TEST_TIMEOUT_S:-150}
start=$(date +%s)
timeout "$limit" "$mpiexec" --oversubscribe --bind-to none -np "$np" \
  --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  -x EQUARX_DATA_PATH=sockets -x EQUARX_TIMEOUT_MS=3000 -x STOP_TEST_TAG="$tag" \
  "${args[@]}" >"$dir/out" 2>&1 &
job=$!
# Find the last rank's process by the tag mpirun gave it.
for _ in $(seq 300); do
  for p in $(pgrep -f "$(basename "${args[0]}")"); do
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    if grep -qx "STOP_TEST_TAG=$tag" <<<"$env" && grep -qx "OMPI_COMM_WORLD_RANK=$((np - 1))" <<<"$env"; then
      victim=$p
    fi
  done
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { echo "FAIL: rank $((np - 1)) never started"; cat "$dir/out"; exit 1; }
delay_ms=$((1500 + RANDOM % 1500))  # set-up is over by then; the tool is in its loop
sleep "$(awk -v m=$delay_ms 'BEGIN {print m / 1000}')"
kill -"$sig" "$victim"
wait "$job"
rc=$?
elapsed=$(( $(date +%s) - start ))
grep -v '^\s*$' "$dir/out" | grep -v '^\[vm\|PMIX' | tail -15
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung after SIG$sig of rank $((np - 1)) (killed after $limit s)"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job ended with status 0"; exit 1; fi
if [ "$mode" = stop ] && ! grep -q "ending the job" "$dir/out"; then echo "FAIL: no rank said why it ended the job"; exit 1; fi
if ! gone "$victim"; then echo "FAIL: the victim (pid $victim, $(state "$victim")) outlived the job by 10 s"; exit 1; fi
echo "PASS: SIG$sig of rank $((np - 1)) after ${delay_ms} ms: the job ended in ${elapsed} s with status $rc"
