#!/usr/bin/env bash
# Runs fault_test under mpirun with one rank killed mid-collective and checks that every
# survivor reported a timeout or remote error within the deadline plus slack, and that the
# whole job ended (no hang). Usage: run_fault_test.sh MPIEXEC FAULT_TEST NP
set -u
mpiexec=$1 bin=$2 np=$3
deadline_ms=3000
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
start=$(date +%s)
timeout 120 "$mpiexec" --oversubscribe --bind-to none -np "$np" --enable-recovery \
  --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  "$bin" $((np - 1)) "$deadline_ms" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out" | grep -v '^\s*$' | head -40
if [ "$rc" -eq 124 ]; then echo "FAIL: mpirun hung (killed after 120 s)"; exit 1; fi
survivors=$(grep -c '^FAULT rank=.* status=\(timeout\|remote_error\)' "$out")
want=$((np - 1))
if [ "$survivors" -ne "$want" ]; then
  echo "FAIL: $survivors of $want survivors reported timeout/remote_error"; exit 1
fi
# Each survivor's failing call must end within the deadline + 2 s of slack (the elapsed time
# covers the good calls before the failure too, at most a few hundred ms each here).
worst=$(grep -o 'elapsed_ms=[0-9]*' "$out" | cut -d= -f2 | sort -n | tail -1)
if [ "$worst" -gt $((deadline_ms + 4000)) ]; then
  echo "FAIL: a survivor took ${worst} ms (deadline ${deadline_ms} ms)"; exit 1
fi
echo "PASS: $want survivors returned an error status, slowest after ${worst} ms; job ended in ${elapsed} s"
