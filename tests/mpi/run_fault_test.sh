#!/usr/bin/env bash
# Runs fault_test under mpirun with one rank killed (SIGKILL) or stopped (SIGSTOP)
# mid-collective and checks that every survivor reported a timeout or remote error in time,
# that the next call on its failed communicator failed at once saying so, and that the whole
# job ended (no hang; a stopped victim taken down with it).
# Usage: run_fault_test.sh MPIEXEC FAULT_TEST NP PATH [kill|stop|stop-idle]
#   PATH  sockets  equarx's own TCP connections over loopback (EQUARX_DATA_PATH=sockets)
#         shm      equarx's own shared-memory rings (EQUARX_DATA_PATH=shm)
#         mpi-shm  MPI point-to-point over shared memory (--mca btl self,vader)
#         mpi-tcp  MPI point-to-point over Open MPI's TCP BTL: not run by CTest, since Open
#                  MPI 4.1 may abort or spin the rank that sees the reset (docs/errors.md)
#   kill  survivors must fail within the deadline + 4 s (a closed connection fails them early);
#         mpirun runs with --enable-recovery so that the death alone does not end the job
#   stop  the victim's connections stay open, so survivors must time out: each failing call
#         must take 0.5x to 1.5x the deadline; the job must then end with a non-zero status
#         (the survivors' MPI_Abort) and the stopped victim must be gone
#   stop-idle  the victim stops between collectives and the survivors wait in a tool's own
#         MPI barrier (tools::MpiBarrier): it must end the job after its deadline, naming itself
set -u
mpiexec=$1 bin=$2 np=$3 path=${4:-sockets} mode=${5:-kill}
deadline_ms=3000
limit=${FAULT_TEST_TIMEOUT_S:-120}
out=$(mktemp)
victim_pid=
# Alive: the process exists and is not a zombie (a dead rank may wait, unreaped, for an
# init that does not reap).
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# mpirun can exit before the ranks it killed are gone: allow them 10 s.
gone() { for _ in $(seq 100); do alive "$1" || return 0; sleep 0.1; done; return 1; }
state() { awk '{print "state " $3}' "/proc/$1/stat" 2>/dev/null; }
cleanup() {  # a victim left stopped by a failed run: ours to end
  if [ -n "$victim_pid" ] && alive "$victim_pid"; then kill -KILL "$victim_pid"; fi
  rm -f "$out"
}
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
case $path in
  sockets) mca=(--mca btl self,vader,tcp --mca btl_tcp_if_include lo -x EQUARX_DATA_PATH=sockets) ;;
  shm) mca=(--mca btl self,vader --mca btl_vader_single_copy_mechanism none -x EQUARX_DATA_PATH=shm) ;;
  mpi-shm) mca=(--mca btl self,vader --mca btl_vader_single_copy_mechanism none -x EQUARX_DATA_PATH=mpi) ;;
  mpi-tcp) mca=(--mca btl self,tcp --mca btl_tcp_if_include lo -x EQUARX_DATA_PATH=mpi) ;;
  *) echo "unknown path $path"; exit 2 ;;
esac
case $mode in
  kill) recovery=(--enable-recovery) ;;
  stop|stop-idle) recovery=() ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
start=$(date +%s)
timeout "$limit" "$mpiexec" --oversubscribe --bind-to none -np "$np" "${recovery[@]}" \
  --mca oob_tcp_if_include lo "${mca[@]}" \
  "$bin" $((np - 1)) "$deadline_ms" "$mode" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
victim_pid=$(sed -n 's/^VICTIM pid=\([0-9]*\).*/\1/p' "$out" | head -1)
grep -v '^\s*$' "$out" | head -40
if [ "$rc" -eq 124 ]; then echo "FAIL: mpirun hung (killed after $limit s)"; exit 1; fi
want=$((np - 1))
if [ "$mode" != kill ] && [ -z "$victim_pid" ]; then echo "FAIL: the victim never reported its pid"; exit 1; fi
if [ "$mode" = stop-idle ]; then
  if grep -q '^BARRIER' "$out"; then echo "FAIL: a barrier completed without the stopped rank"; exit 1; fi
  if ! grep -q "MPI_Barrier did not complete within ${deadline_ms} ms; ending the job" "$out"; then
    echo "FAIL: no survivor ended the job from its barrier"; exit 1
  fi
  if [ "$rc" -eq 0 ] || ! gone "$victim_pid"; then echo "FAIL: status $rc, or the victim outlived the job by 10 s"; exit 1; fi
  echo "PASS ($path, stop-idle): the barrier ended the job in ${elapsed} s with status $rc, victim gone"
  exit 0
fi
survivors=$(grep -c '^FAULT rank=.* status=\(timeout\|remote_error\)' "$out")
if [ "$survivors" -ne "$want" ]; then
  echo "FAIL: $survivors of $want survivors reported timeout/remote_error"; exit 1
fi
# Every survivor's next call must fail at once (< 100 ms) and say why.
later=$(grep '^LATER rank=.* status=\(timeout\|remote_error\)' "$out" | grep 'this communicator is unusable: call' |
        awk -F'call_ms=' '{split($2, a, " "); if (a[1] < 100) n++} END {print n + 0}')
if [ "$later" -ne "$want" ]; then
  echo "FAIL: $later of $want survivors' later calls failed at once as unusable"; exit 1
fi
if [ "$mode" = kill ]; then
  # The elapsed time covers the good calls before the failure too, a few hundred ms each.
  worst=$(grep -o 'elapsed_ms=[0-9]*' "$out" | cut -d= -f2 | sort -n | tail -1)
  if [ "$worst" -gt $((deadline_ms + 4000)) ]; then
    echo "FAIL: a survivor took ${worst} ms (deadline ${deadline_ms} ms)"; exit 1
  fi
  echo "PASS ($path, kill): $want survivors returned an error status, slowest after ${worst} ms; job ended in ${elapsed} s"
  exit 0
fi
calls=$(grep '^FAULT rank=' "$out" | grep -o 'call_ms=[0-9]*' | cut -d= -f2 | sort -n)
lo=$(echo "$calls" | head -1) hi=$(echo "$calls" | tail -1)
if [ "$lo" -lt $((deadline_ms / 2)) ] || [ "$hi" -gt $((deadline_ms * 3 / 2)) ]; then
  echo "FAIL: failing calls took ${lo}..${hi} ms, outside 0.5x..1.5x the ${deadline_ms} ms deadline"; exit 1
fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job ended with status 0 after a failed collective"; exit 1; fi
if ! gone "$victim_pid"; then echo "FAIL: the stopped victim (pid $victim_pid, $(state "$victim_pid")) outlived the job by 10 s"; exit 1; fi
echo "PASS ($path, stop): $want survivors timed out after ${lo}..${hi} ms (deadline ${deadline_ms} ms), later calls refused at once; job ended in ${elapsed} s with status $rc, victim gone"
