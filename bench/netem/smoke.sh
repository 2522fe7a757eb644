#!/usr/bin/env bash
# bench/netem/smoke.sh — fast (< 1 min) check that the netem harness works and always cleans up.
#
#   bash bench/netem/smoke.sh [BUILD_DIR]      (default build/release; needs root)
#
# 1. A 2-host run at 1 Gbit/s on tiny sizes: our bf16 ring and int8 full_bidir, f32 + MPI
#    default, Gloo when libgloo-dev is installed, and the MPI test binary; every expected row
#    must be there, with ranks identical and busbw > 0.
# 2. A launch that fails (an unknown algorithm): the harness must exit non-zero.
# 3. A run stopped with SIGTERM while ranks are running.
# After each: no namespace with the run's prefix and no process of the run may remain.
# Exit 0 = pass, 1 = fail, 77 = skipped (not root, or network namespaces unavailable; under
# CI=true that is a failure, 1).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
BUILD=${1:-build/release}
RUN=bench/netem/run.sh
TMP=$(mktemp -d /tmp/eqx-smoke.XXXXXX)
P=eqxs-$$
fails=0
trap 'rm -rf "$TMP"' EXIT

skip() {
  if [[ ${CI:-} == true ]]; then echo "FAIL (CI=true: no skips): $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root"
command -v mpirun >/dev/null || skip "no mpirun"
[[ -x $BUILD/tools/perf/equarx-perf ]] || skip "no $BUILD/tools/perf/equarx-perf"
ip netns add "$P-probe" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "$P-probe"

check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails + 1)); fi; }
clean() {   # no namespace named PREFIX-*, no process running from the run's directory
  ! ip netns list | awk '{print $1}' | grep -q "^$1-" && ! pgrep -f "$2/bin/" >/dev/null
}

# 1. A small run.
cfg=link,bf16,f32,mpi,mpitest
[[ -f /usr/include/gloo/allreduce.h ]] && command -v g++ >/dev/null && cfg+=,gloo
start=$(date +%s)
bash $RUN --hosts 2 --rates 1gbit --configs "$cfg" -b 64K -e 256K -f 4 -n 2 -w 1 \
  --algos full_bidir --phases rs+ag --build "$BUILD" --prefix "$P-a" --out "$TMP/a" \
  --launch-timeout 60 >"$TMP/a.log" 2>&1
rc=$?
check "2-host run exits 0 (log: tail below on failure)" "[[ $rc -eq 0 ]]" || true
[[ $rc -eq 0 ]] || tail -20 "$TMP/a.log"
rows=$(grep -vc '"type":"header"' "$TMP/a/rows.jsonl" 2>/dev/null || echo 0)
want=$((2 * 2 + 2 * 3))   # bf16: ring, full_bidir; f32: ring, full_bidir, mpi; x 2 sizes
[[ $cfg == *gloo* ]] && want=$((want + 2))
check "$want rows in rows.jsonl (got $rows)" "[[ $rows -eq $want ]]"
check "every row: ranks identical" "! grep -v '\"type\":\"header\"' '$TMP/a/rows.jsonl' | grep -q '\"ranks_identical\":false'"
check "every row: busbw > 0" "! grep -q '\"busbw_gbs\":0.000000' '$TMP/a/rows.jsonl'"
check "rows.csv written" "[[ -s $TMP/a/rows.csv ]]"
check "mpi_test passed over TCP between namespaces" "grep -q 'mpitest: PASS' '$TMP/a/env.txt'"
check "namespaces and processes gone after a normal exit" "clean $P-a $TMP/a"

# 2. A failing launch.
bash $RUN --hosts 2 --rates none --configs bf16 -b 64K -e 64K -n 1 -w 0 --algos bogus \
  --build "$BUILD" --prefix "$P-b" --out "$TMP/b" --launch-timeout 30 >"$TMP/b.log" 2>&1
rc=$?
check "a failing launch makes the harness exit non-zero (got $rc)" "[[ $rc -ne 0 ]] && grep -q 'FAILED (exit' '$TMP/b.log'"
check "namespaces and processes gone after a failure" "clean $P-b $TMP/b"

# 3. SIGTERM in the middle of a run (rates low enough that it is still running).
bash $RUN --hosts 2 --rates 100mbit --configs bf16 -b 64M -e 64M -n 20 -w 0 --algos full \
  --phases rs+ag --check 0 --build "$BUILD" --prefix "$P-c" --out "$TMP/c" >"$TMP/c.log" 2>&1 &
pid=$!
for _ in $(seq 1 40); do pgrep -f "$TMP/c/bin/equarx-perf" >/dev/null && break; sleep 0.25; done
sleep 1
kill -TERM $pid
for _ in $(seq 1 40); do kill -0 $pid 2>/dev/null || break; sleep 0.25; done
wait $pid; rc=$?
check "SIGTERM: the harness exits 143 (got $rc)" "[[ $rc -eq 143 ]]"
check "namespaces and processes gone after SIGTERM" "clean $P-c $TMP/c"

echo "netem smoke: $(($(date +%s) - start)) s"
if [[ $fails -eq 0 ]]; then echo "smoke: 1 passed, 0 failed"; exit 0; fi
echo "smoke: 0 passed, 1 failed"
exit 1
