#!/usr/bin/env bash
# Runs fault_test under mpirun with one rank (the last) killed (SIGKILL) or stopped (SIGSTOP)
# at a chosen point and checks that every survivor reported a timeout or remote error in time,
# that the next call on its failed communicator failed at once saying so, and that the whole
# job ended non-zero (no hang; the victim gone with it).
# Usage: run_fault_test.sh MPIEXEC FAULT_TEST NP PATH [kill|stop|stop-idle] [POINT] [SEED]
#   PATH  sockets  equarx's own TCP connections (EQUARX_DATA_PATH=sockets)
#         shm      equarx's own shared-memory rings (EQUARX_DATA_PATH=shm)
#         host     equarx's host-aware mix: rings to this host's ranks, TCP to others (=host)
#         mpi-shm  MPI point-to-point over shared memory (--mca btl self,vader)
#         mpi-tcp  MPI point-to-point over Open MPI's TCP BTL: not run by CTest, since Open
#                  MPI 4.1 may abort or spin the rank that sees the reset (docs/errors.md)
#   POINT setup | rs | ag | between | new-shape | new-shape-rd | random (default rs; fault_test.cc says what each means);
#         SEED (default 1) draws random's point, the set-up stage and the message
#   kill  survivors must fail within the deadline + FAULT_KILL_SLACK_MS (a closed connection
#         fails them early); mpirun runs with --enable-recovery so that the death alone does not
#         end the job
#   stop  the victim's connections stay open, so survivors must time out: each failing call
#         (or set-up) must take 0.5x to 1.5x the deadline
#   both  every survivor must then end the job itself (MPI_Abort, saying why), the job must end
#         (stop: with a non-zero status; kill: under --enable-recovery Open MPI 4.1's mpirun
#         exits 0 even so, recorded but not checked) and the victim must be gone; after a
#         failed call each survivor's next call must be refused in < 100 ms
#   stop-idle  the victim stops between collectives and the survivors wait in a tool's own
#         MPI barrier (tools::MpiBarrier): it must end the job after its deadline, naming itself
# Environment (all optional): FAULT_DEADLINE_MS (3000: the calls' and the set-up's deadline),
#   FAULT_TEST_TIMEOUT_S (120: the outer limit; hitting it is a failure), FAULT_ELEMENTS
#   (f32 elements per call; default the program's), FAULT_KILL_SLACK_MS (1500),
#   FAULT_IFACE (lo: Open MPI's TCP interfaces, a name or a CIDR), FAULT_SOCKET_IFNAME
#   (EQUARX_SOCKET_IFNAME for the ranks), FAULT_SUMMARY (a file: one JSON line per run is
#   appended), FAULT_LOG (a file: the run's whole output is kept there),
#   FAULT_WHERE (a label for the summary: host or ns).
set -u
if [ $# -lt 4 ] || [ $# -gt 7 ]; then
  echo "usage: run_fault_test.sh MPIEXEC FAULT_TEST NP PATH [kill|stop|stop-idle] [POINT] [SEED]" >&2; exit 2
fi
mpiexec=$1 bin=$2 np=$3 path=$4 mode=${5:-kill} point=${6:-rs} seed=${7:-1}
deadline_ms=${FAULT_DEADLINE_MS:-3000}
limit=${FAULT_TEST_TIMEOUT_S:-120}
kill_slack=${FAULT_KILL_SLACK_MS:-1500}
iface=${FAULT_IFACE:-lo}
for n in "$np" "$seed" "$deadline_ms" "$limit" "$kill_slack"; do
  case $n in ''|*[!0-9]*) echo "run_fault_test.sh: '$n' is not a non-negative integer" >&2; exit 2 ;; esac
done
[ "$np" -ge 2 ] || { echo "run_fault_test.sh: NP must be at least 2" >&2; exit 2; }
case $point in setup|rs|ag|between|new-shape|new-shape-rd|random) ;; *) echo "run_fault_test.sh: unknown point $point" >&2; exit 2 ;; esac
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
  if [ -n "${FAULT_LOG:-}" ]; then cp "$out" "$FAULT_LOG"; fi
  rm -f "$out"
}
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
case $path in
  sockets) mca=(--mca btl self,vader,tcp --mca btl_tcp_if_include "$iface" -x EQUARX_DATA_PATH=sockets) ;;
  shm) mca=(--mca btl self,vader --mca btl_vader_single_copy_mechanism none -x EQUARX_DATA_PATH=shm) ;;
  # MPI (set-up only) must reach other hosts too: over namespaces the ranks share no memory.
  host) mca=(--mca btl self,vader,tcp --mca btl_tcp_if_include "$iface" --mca btl_vader_single_copy_mechanism none
             -x EQUARX_DATA_PATH=host) ;;
  mpi-shm) mca=(--mca btl self,vader --mca btl_vader_single_copy_mechanism none -x EQUARX_DATA_PATH=mpi) ;;
  mpi-tcp) mca=(--mca btl self,tcp --mca btl_tcp_if_include "$iface" -x EQUARX_DATA_PATH=mpi) ;;
  *) echo "run_fault_test.sh: unknown path $path" >&2; exit 2 ;;
esac
if [ -n "${FAULT_SOCKET_IFNAME:-}" ]; then mca+=(-x "EQUARX_SOCKET_IFNAME=$FAULT_SOCKET_IFNAME"); fi
case $mode in
  kill) recovery=(--enable-recovery) ;;
  stop|stop-idle) recovery=() ;;
  *) echo "run_fault_test.sh: unknown mode $mode" >&2; exit 2 ;;
esac
args=($((np - 1)) "$deadline_ms" "$mode" "$point" "$seed")
if [ -n "${FAULT_ELEMENTS:-}" ]; then args+=("$FAULT_ELEMENTS"); fi
start_ns=$(date +%s%N)
timeout -k 5 "$limit" "$mpiexec" --oversubscribe --bind-to none -np "$np" "${recovery[@]}" \
  --mca oob_tcp_if_include "$iface" "${mca[@]}" \
  "$bin" "${args[@]}" >"$out" 2>&1
rc=$?
job_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
victim_pid=$(sed -n 's/^VICTIM pid=\([0-9]*\).*/\1/p' "$out" | head -1)
drawn=$(sed -n 's/^POINT point=\([a-z-]*\).*/\1/p' "$out" | head -1)
detail=$(sed -n 's/^SIGNAL rank=[0-9]* point=[a-z-]* detail=\([^ ]*\).*/\1/p' "$out" | head -1)
grep -v '^\s*$' "$out" | head -40

# One line per run for the matrix: what was run, what the survivors saw, the verdict.
want=$((np - 1)) n_ok=0 lo= hi= later_hi= reason=
summary() {  # summary pass|fail
  [ -n "${FAULT_SUMMARY:-}" ] || return 0
  printf '{"where":"%s","path":"%s","np":%d,"signal":"%s","point":"%s","asked":"%s","seed":%d,"detail":"%s","deadline_ms":%d,"result":"%s","reason":"%s","survivors_ok":%d,"survivors":%d,"min_ms":%s,"max_ms":%s,"later_max_ms":%s,"job_ms":%d,"rc":%d}\n' \
    "${FAULT_WHERE:-host}" "$path" "$np" "$mode" "${drawn:-?}" "$point" "$seed" "${detail:-}" "$deadline_ms" "$1" \
    "$(echo "$reason" | tr -d '"\\')" "$n_ok" "$want" "${lo:-null}" "${hi:-null}" "${later_hi:-null}" "$job_ms" "$rc" \
    >>"$FAULT_SUMMARY"
}
fail() { reason=$1; echo "FAIL: $1"; summary fail; exit 1; }
pass() { echo "PASS ($path, $mode, ${drawn:-?}${detail:+ at $detail}): $1"; summary pass; exit 0; }

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "mpirun hung (killed after $limit s)"; fi
[ -n "$victim_pid" ] || fail "the victim never reported its pid"
[ -n "$detail" ] || fail "the victim never reached its fault point (no SIGNAL line)"
if [ "$mode" = stop-idle ]; then
  if grep -q '^BARRIER' "$out"; then fail "a barrier completed without the stopped rank"; fi
  if ! grep -q "MPI_Barrier did not complete within ${deadline_ms} ms; ending the job" "$out"; then
    fail "no survivor ended the job from its barrier"
  fi
  if [ "$rc" -eq 0 ] || ! gone "$victim_pid"; then fail "status $rc, or the victim outlived the job by 10 s"; fi
  pass "the barrier ended the job in ${job_ms} ms with status $rc, victim gone"
fi
where=call
if [ "$drawn" = setup ]; then where=setup; fi
victim=$((np - 1))
# The survivors' lines only: mpirun resumes a stopped victim (SIGCONT) as it ends the job.
faults=$(grep "^FAULT rank=[0-9]* where=$where status=\(timeout\|remote_error\) " "$out" | grep -v "^FAULT rank=$victim ")
n_ok=$(printf '%s' "$faults" | grep -c '^FAULT')
calls=$(printf '%s\n' "$faults" | grep -o 'call_ms=[0-9]*' | cut -d= -f2 | sort -n)
lo=$(echo "$calls" | head -1) hi=$(echo "$calls" | tail -1)
if [ "$n_ok" -ne "$want" ]; then fail "$n_ok of $want survivors reported timeout/remote_error (where=$where)"; fi
if [ "$where" = call ]; then
  # Every survivor's next call must fail at once (< 100 ms) and say why.
  later_hi=$(grep '^LATER rank=' "$out" | grep -v "^LATER rank=$victim " | grep -o 'call_ms=[0-9]*' | cut -d= -f2 | sort -n | tail -1)
  later=$(grep '^LATER rank=.* status=\(timeout\|remote_error\)' "$out" | grep -v "^LATER rank=$victim " |
          grep 'this communicator is unusable: call' |
          awk -F'call_ms=' '{split($2, a, " "); if (a[1] < 100) n++} END {print n + 0}')
  if [ "$later" -ne "$want" ]; then fail "$later of $want survivors' later calls failed at once as unusable"; fi
fi
if [ "$mode" = kill ]; then
  if [ "$hi" -gt $((deadline_ms + kill_slack)) ]; then
    fail "a survivor took ${hi} ms (deadline ${deadline_ms} ms + ${kill_slack} ms)"
  fi
else
  if [ "$lo" -lt $((deadline_ms / 2)) ] || [ "$hi" -gt $((deadline_ms * 3 / 2)) ]; then
    fail "failing calls took ${lo}..${hi} ms, outside 0.5x..1.5x the ${deadline_ms} ms deadline"
  fi
fi
# Every survivor must have ended the job itself (MPI_Abort, after printing why).
enders=$(grep -o 'mpi_fault_test: rank [0-9]*: .*ending the job' "$out" | sed 's/^mpi_fault_test: rank \([0-9]*\):.*/\1/' |
         grep -vx "$victim" | sort -u | wc -l)
if [ "$enders" -ne "$want" ]; then fail "$enders of $want survivors ended the job themselves"; fi
# Under --enable-recovery (kill) MPI_Abort ends only its caller and Open MPI 4.1's mpirun then
# exits 0 (measured); without it (stop) the job's status must be non-zero.
if [ "$mode" != kill ] && [ "$rc" -eq 0 ]; then fail "the job ended with status 0 after a failed collective"; fi
if ! gone "$victim_pid"; then fail "the victim (pid $victim_pid, $(state "$victim_pid")) outlived the job by 10 s"; fi
pass "$want survivors failed ($where) after ${lo}..${hi} ms (deadline ${deadline_ms} ms)${later_hi:+, later calls refused within ${later_hi} ms}; job ended in ${job_ms} ms with status $rc, victim gone"
