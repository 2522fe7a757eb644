#!/usr/bin/env bash
# bench/fault_matrix.sh — the fault matrix of issue 13 (in the spirit of Gloo's transport tests).
#
# One rank (the last) SIGKILLs or SIGSTOPs itself at a point of its run: during set-up
# (CreateMpiCommunicator, at a set-up stage drawn per run), inside a call's reduce-scatter or
# all-gather (at a transport message drawn per run), or between two calls; see
# tests/mpi/fault_test.cc. Every cell of
#   signals {kill, stop} x points {setup, rs, ag, between} x N {2, 3, 4, 7}
#   x data paths {sockets, shm, host, mpi-shm, mpi-tcp}, one host (loopback)
# and, in network namespaces (one rank per emulated host, bench/netem/run.sh's topology, links
# unshaped), the subset N {2, 4} x data paths {sockets, mpi-tcp} (mpi-shm does not cross hosts)
# runs once, each run checked by tests/mpi/run_fault_test.sh: every survivor fails (kill:
# within the deadline + 1.5 s; stop: 0.5x..1.5x the deadline), its failed communicator
# refuses the next call at once, the job ends non-zero, the victim is gone, and the run's
# outer limit (--timeout) is not hit. Seeds: run i uses SEED+i (SEED printed and recorded).
#
# Output (--out DIR): runs.jsonl (one line per run), logs/ (the whole output of every failed
# run), env.txt (commit, equarx-info, date, load, the command), table.md (pass counts and
# the slowest survivor per cell); --docs FILE puts the table between the markers
# <!-- faultmatrix:begin --> and <!-- faultmatrix:end --> of FILE.
# The namespace part needs root, iproute2 and ethtool (bench/netem/run.sh).
# Needs: cmake --build --preset release --target mpi_fault_test equarx-info
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/fault_matrix.sh [options]
  --signals LIST     kill,stop (default both)
  --points LIST      setup,rs,ag,between (default all four)
  --ranks LIST       rank counts on one host (default 2,3,4,7)
  --paths LIST       data paths on one host: sockets,shm,host,mpi-shm,mpi-tcp (default all five;
                     none: no one-host runs)
  --ns-ranks LIST    rank counts in namespaces (default 2,4; none: no namespace runs)
  --ns-paths LIST    data paths in namespaces: sockets,host,mpi-tcp (default sockets,mpi-tcp)
  --deadline-ms MS   the calls' and the set-up's deadline (default 3000)
  --elements N       f32 elements per call (default 262144: 1 MiB)
  --seed S           base seed (default: from the clock; printed and recorded)
  --timeout S        outer limit of one run in seconds; hitting it fails the run (default 40)
  --build DIR        build directory (default build/release)
  --out DIR          results (default out/fault_matrix/YYYYmmdd-HHMMSS)
  --docs FILE        also write the table into FILE between the faultmatrix markers
  -h, --help
EOF
}

SIGNALS=kill,stop POINTS=setup,rs,ag,between RANKS=2,3,4,7 PATHS=sockets,shm,host,mpi-shm,mpi-tcp
NS_RANKS=2,4 NS_PATHS=sockets,mpi-tcp DEADLINE=3000 ELEMENTS=262144 SEED="" LIMIT=40
BUILD=build/release OUT="" DOCS="" NS_INNER=0
ORIG_ARGS="$*"
while [[ $# -gt 0 ]]; do
  case $1 in
    --signals) SIGNALS=$2; shift 2 ;;
    --points) POINTS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --paths) PATHS=$2; shift 2 ;;
    --ns-ranks) NS_RANKS=$2; shift 2 ;;
    --ns-paths) NS_PATHS=$2; shift 2 ;;
    --deadline-ms) DEADLINE=$2; shift 2 ;;
    --elements) ELEMENTS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --timeout) LIMIT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --docs) DOCS=$2; shift 2 ;;
    --ns-inner) NS_INNER=1; shift ;;  # internal: called back by bench/netem/run.sh
    -h|--help) usage; exit 0 ;;
    *) echo "fault_matrix.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
die() { echo "fault_matrix.sh: $*" >&2; exit 2; }
in_list() {  # in_list LIST ALLOWED...: every item of the comma list LIST is one of ALLOWED
  local item list=$1; shift
  [[ -n $list ]] || return 1
  for item in ${list//,/ }; do [[ " $* " == *" $item "* ]] || return 1; done
}
in_list "$SIGNALS" kill stop || die "--signals: kill and/or stop"
in_list "$POINTS" setup rs ag between || die "--points: setup, rs, ag, between"
in_list "$PATHS" sockets shm host mpi-shm mpi-tcp || [[ $PATHS == none ]] ||
  die "--paths: sockets, shm, host, mpi-shm, mpi-tcp or none"
in_list "$NS_PATHS" sockets host mpi-tcp || die "--ns-paths: sockets, host and/or mpi-tcp (shm does not cross hosts)"
for n in ${RANKS//,/ } ${NS_RANKS//,/ }; do
  [[ $n == none ]] || { [[ $n =~ ^[0-9]+$ && $n -ge 2 && $n -le 16 ]] || die "rank counts must be 2..16 (got $n)"; }
done
[[ $DEADLINE =~ ^[0-9]+$ && $DEADLINE -ge 100 ]] || die "--deadline-ms must be an integer >= 100"
[[ $ELEMENTS =~ ^[0-9]+$ && $ELEMENTS -ge 1024 ]] || die "--elements must be an integer >= 1024"
[[ $LIMIT =~ ^[0-9]+$ && $LIMIT -ge 5 ]] || die "--timeout must be an integer >= 5"
if [[ -z $SEED ]]; then SEED=$(( $(date +%s) % 1000000 )); fi
[[ $SEED =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"

REPO=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $BUILD ]] || die "no build directory $BUILD"
BUILD=$(cd "$BUILD" && pwd)
RUNNER=$REPO/tests/mpi/run_fault_test.sh
log() { printf '[fault-matrix %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# Runs every cell for NP ranks on PATHS with MPIEXEC; FAULT_WHERE labels the rows.
run_cells() {  # run_cells MPIEXEC WHERE NP PATHS
  local mpiexec=$1 where=$2 np=$3 paths=$4 path sig point i tag rc
  for path in ${paths//,/ }; do
    for sig in ${SIGNALS//,/ }; do
      for point in ${POINTS//,/ }; do
        i=$(( $(wc -l <"$OUT/runs.jsonl") ))
        tag="${where}_${path}_np${np}_${sig}_${point}"
        rc=0
        FAULT_DEADLINE_MS=$DEADLINE FAULT_TEST_TIMEOUT_S=$LIMIT FAULT_ELEMENTS=$ELEMENTS \
          FAULT_SUMMARY=$OUT/runs.jsonl FAULT_WHERE=$where FAULT_LOG=$OUT/run.log \
          bash "$RUNNER" "$mpiexec" "$BIN" "$np" "$path" "$sig" "$point" $((SEED + i)) >/dev/null 2>&1 || rc=$?
        if [[ $(wc -l <"$OUT/runs.jsonl") -ne $((i + 1)) ]]; then
          # The runner exited before writing its line (bad usage): record it as a failure.
          printf '{"where":"%s","path":"%s","np":%d,"signal":"%s","point":"%s","asked":"%s","seed":%d,"result":"fail","reason":"runner exited %d without a verdict"}\n' \
            "$where" "$path" "$np" "$sig" "$point" "$point" $((SEED + i)) "$rc" >>"$OUT/runs.jsonl"
        fi
        if [[ $rc -ne 0 ]]; then cp "$OUT/run.log" "$OUT/logs/$tag.log" 2>/dev/null || true; fi
        log "$(tail -1 "$OUT/runs.jsonl" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["where"], r["path"], "N=%d" % r["np"], r["signal"], r["point"], r.get("detail",""), r["result"].upper(), "%s..%s ms" % (r.get("min_ms"), r.get("max_ms")), r.get("reason",""))')"
      done
    done
  done
  rm -f "$OUT/run.log"
}

if [[ $NS_INNER -eq 1 ]]; then
  # Called by bench/netem/run.sh inside its topology: FAULT_NS_MPIEXEC launches across the
  # namespaces, FAULT_NS_NP ranks, one per namespace.
  [[ -n ${FAULT_NS_MPIEXEC:-} && -n ${FAULT_NS_NP:-} && -n $OUT ]] || die "--ns-inner is for bench/netem/run.sh"
  BIN=$OUT/bin/mpi_fault_test
  export FAULT_IFACE FAULT_SOCKET_IFNAME
  run_cells "$FAULT_NS_MPIEXEC" ns "$FAULT_NS_NP" "$NS_PATHS"
  exit 0
fi

OUT=${OUT:-out/fault_matrix/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs" "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT/logs/"*.log
: >"$OUT/runs.jsonl"
# Snapshot the binaries: others may rebuild the build directory while the matrix runs.
cp "$BUILD/tests/mpi/mpi_fault_test" "$OUT/bin/mpi_fault_test" || die "no $BUILD/tests/mpi/mpi_fault_test (build it first)"
BIN=$OUT/bin/mpi_fault_test
{
  echo "date: $(date -u -Is)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD)$(git -C "$REPO" diff --quiet HEAD -- src include tests bench || echo ' (dirty)')"
  echo "command: bench/fault_matrix.sh $ORIG_ARGS"
  echo "seed: $SEED; deadline_ms: $DEADLINE; elements: $ELEMENTS; outer limit: $LIMIT s"
  echo "kernel: $(uname -r); cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "equarx-info:"
  "$BUILD/tools/info/equarx-info" 2>&1 | sed 's/^/  /' || echo "  (equarx-info failed)"
} >"$OUT/env.txt"
log "seed $SEED, deadline $DEADLINE ms, results in $OUT"
t0=$SECONDS
if [[ $PATHS != none ]]; then
  for np in ${RANKS//,/ }; do
    [[ $np == none ]] || run_cells mpirun host "$np" "$PATHS"
  done
fi
echo "load after the one-host runs: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - t0)) s" >>"$OUT/env.txt"
if [[ $NS_RANKS != none ]]; then
  # bench/netem/run.sh builds the namespaces for each N and calls this script back (--ns-inner).
  inner="bash $REPO/bench/fault_matrix.sh --ns-inner --out $OUT --signals $SIGNALS --points $POINTS"
  inner+=" --ns-paths $NS_PATHS --deadline-ms $DEADLINE --elements $ELEMENTS --seed $SEED --timeout $LIMIT"
  rc=0
  bash "$REPO/bench/netem/run.sh" --hosts "$NS_RANKS" --rates none --configs faultmatrix \
    --fault-runner "$inner" --build "$BUILD" --out "$OUT/netem" >"$OUT/netem.log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    log "bench/netem/run.sh exited $rc (see $OUT/logs/netem.log)"
    cp "$OUT/netem.log" "$OUT/logs/netem.log"
    echo "namespaces: bench/netem/run.sh exited $rc" >>"$OUT/env.txt"
  fi
  grep -h "^H=\|^date\|^commit\|^kernel" "$OUT/netem/env.txt" 2>/dev/null | sed 's/^/netem: /' >>"$OUT/env.txt" || true
  rm -rf "$OUT/netem" "$OUT/netem.log"
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg); total $((SECONDS - t0)) s" >>"$OUT/env.txt"
rm -rf "$OUT/bin"

# The table: one row per (where, path, N), one column per (signal, point): passes/runs and
# the slowest survivor's failing call (ms); the worst case of each signal in the last line.
python3 - "$OUT/runs.jsonl" "$OUT/table.md" "$DEADLINE" "$SEED" "bench/fault_matrix.sh $ORIG_ARGS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
deadline, seed, cmd = int(sys.argv[3]), sys.argv[4], sys.argv[5]
sigs = [s for s in ("kill", "stop") if any(r["signal"] == s for r in rows)]
pts = [p for p in ("setup", "rs", "ag", "between") if any(r["asked"] == p for r in rows)]
cols = [(s, p) for s in sigs for p in pts]
keys = []
for r in rows:
    k = (r["where"], r["path"], r["np"])
    if k not in keys: keys.append(k)
out = []
out.append("| where | data path | N | " + " | ".join(f"{s} {p}" for s, p in cols) + " |")
out.append("|---|---|---|" + "---|" * len(cols))
for k in keys:
    cells = []
    for s, p in cols:
        rs = [r for r in rows if (r["where"], r["path"], r["np"]) == k and r["signal"] == s and r["asked"] == p]
        if not rs: cells.append("–"); continue
        ok = sum(r["result"] == "pass" for r in rs)
        worst = max((r.get("max_ms") or 0) for r in rs if r.get("max_ms") is not None) if any(r.get("max_ms") is not None for r in rs) else None
        txt = f"{ok}/{len(rs)}" + (f" ({worst} ms)" if worst is not None else "")
        cells.append(txt if ok == len(rs) else f"**{txt}**")
    out.append(f"| {'one host' if k[0] == 'host' else 'namespaces'} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
n, ok = len(rows), sum(r["result"] == "pass" for r in rows)
summ = [f"{ok} of {n} runs passed (deadline {deadline} ms, seed {seed})."]
for s in sigs:
    v = [r["max_ms"] for r in rows if r["signal"] == s and r.get("max_ms") is not None and r["result"] == "pass"]
    lo = [r["min_ms"] for r in rows if r["signal"] == s and r.get("min_ms") is not None and r["result"] == "pass"]
    if v: summ.append(f"{s}: survivors' failing call or set-up took {min(lo)}..{max(v)} ms in the passing runs.")
jobs = [r.get("job_ms") for r in rows if r.get("job_ms") is not None]
if jobs: summ.append(f"Longest run (mpirun start to end): {max(jobs) / 1000:.1f} s.")
fails = [r for r in rows if r["result"] != "pass"]
lines = ["Each cell: runs passed / runs, and in brackets the slowest survivor's failing call (or set-up) in ms.",
         "", *out, "", " ".join(summ)]
if fails:
    lines += ["", "Failed runs:", ""]
    for r in fails:
        lines.append(f"- {r['where']} {r['path']} N={r['np']} {r['signal']} {r['asked']} (seed {r['seed']}"
                     f"{', ' + r['detail'] if r.get('detail') else ''}): {r.get('reason', '')}")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
EOF
if [[ -n $DOCS ]]; then
  python3 - "$DOCS" "$OUT/table.md" <<'EOF'
import sys
doc, table = sys.argv[1], open(sys.argv[2]).read()
s = open(doc).read()
b, e = "<!-- faultmatrix:begin -->", "<!-- faultmatrix:end -->"
if b not in s or e not in s:
    sys.exit(f"fault_matrix.sh: {doc} has no {b} ... {e} markers")
s = s[: s.index(b) + len(b)] + "\n" + table + s[s.index(e):]
open(doc, "w").write(s)
EOF
fi
log "done: $(grep -c '"result":"pass"' "$OUT/runs.jsonl") of $(wc -l <"$OUT/runs.jsonl") runs passed; $OUT/table.md"
