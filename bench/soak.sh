#!/usr/bin/env bash
# bench/soak.sh — the soak of issue 13 item 5: mpi_soak (tests/mpi/soak.cc) on 4 ranks over
# equarx's sockets, --calls random calls (size 1 B … --max-bytes, every dtype, algorithm, codec
# and option; each checked for rank agreement and the error bound; RSS sampled after the
# warm-up and every 500 calls). Saves the raw output under bench/results/reliability/soak/
# (the log, the JSONL rows, the environment: commit, equarx-info, load) and, unless
# --no-docs, regenerates the "Soak" section of docs/reliability.md (between the markers
# soak:begin / soak:end) from them. Exit status: mpi_soak's (0 = every check passed).
#
#   bash bench/soak.sh [--calls 20000] [--seed 1] [--max-bytes 64M] [--warmup 1000] [--no-docs]
#
# Builds build/release (mpi_soak, equarx-info) if needed. The figures are only worth
# recording from a committed revision: the environment file says when the tree differs.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=20000
SEED=1
MAX_BYTES=64M
WARMUP=""
DOCS=1
usage() { echo "usage: bench/soak.sh [--calls N] [--seed S] [--max-bytes B] [--warmup N] [--no-docs]" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "bench/soak.sh: $1 needs a value" >&2; usage; }; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --calls) need_value "$@"; CALLS=$2; shift ;;
    --seed) need_value "$@"; SEED=$2; shift ;;
    --max-bytes) need_value "$@"; MAX_BYTES=$2; shift ;;
    --warmup) need_value "$@"; WARMUP=$2; shift ;;
    --no-docs) DOCS=0 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench/soak.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
[[ $CALLS =~ ^[1-9][0-9]*$ ]] || { echo "bench/soak.sh: --calls must be a positive integer" >&2; exit 2; }
[[ $SEED =~ ^[0-9]+$ ]] || { echo "bench/soak.sh: --seed must be a non-negative integer" >&2; exit 2; }
# Warm-up: 1000 calls, or a fifth of a shorter run (mpi_soak judges RSS from 1000 calls after it).
[[ -n $WARMUP ]] || WARMUP=$(( CALLS >= 5000 ? 1000 : CALLS / 5 ))
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "bench/soak.sh: --warmup must be a non-negative integer" >&2; exit 2; }

B=build/release
[[ -f $B/build.ninja ]] || cmake --preset release >/dev/null
cmake --build --preset release --target mpi_soak equarx-info >/dev/null
RES=bench/results/reliability/soak
TAG=calls${CALLS}_seed${SEED}_max${MAX_BYTES}_$(git rev-parse --short=7 HEAD)
mkdir -p "$RES"
LOG=$RES/$TAG.log
JSONL=$RES/$TAG.jsonl
ENV=$RES/${TAG}_env.txt
LOAD=$RES/${TAG}_load.txt
CMD=(mpirun --oversubscribe --bind-to none -np 4
     --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
     -x EQUARX_DATA_PATH=sockets -x EQUARX_TIMEOUT_MS=600000
     "$B/tests/mpi/mpi_soak" --calls "$CALLS" --seed "$SEED" --max-bytes "$MAX_BYTES"
     --warmup "$WARMUP" --report-every 500 --out "$JSONL")
DIRTY=""
git diff --quiet HEAD -- src include tools tests CMakeLists.txt || DIRTY=" (+ uncommitted changes)"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$DIRTY"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "command: ${CMD[*]}"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "--- equarx-info"
  "$B/tools/info/equarx-info"
} >"$ENV"
# The machine's load once a minute while the soak runs (other work may share it).
( while sleep 60; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) >"$LOAD" &
SAMPLER=$!
trap 'kill $SAMPLER 2>/dev/null || true' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
START=$(date +%s)
set +e
"${CMD[@]}" 2>&1 | tee "$LOG"
RC=${PIPESTATUS[0]}
set -e
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$ENV"
echo "wall seconds (mpirun): $(( $(date +%s) - START )); exit status: $RC" >>"$ENV"
kill $SAMPLER 2>/dev/null || true

if [[ $DOCS == 1 ]]; then
  python3 - "$LOG" "$JSONL" "$ENV" "$RC" <<'EOF'
import json, re, sys
log, jsonl, env, rc = sys.argv[1:]
rows = [json.loads(l) for l in open(jsonl)]
head = next(r for r in rows if r["type"] == "header")
summ = next((r for r in rows if r["type"] == "summary"), None)
if summ is None:
    sys.exit("bench/soak.sh: no summary row in %s (the run did not finish): docs not changed" % jsonl)
envt = open(env).read()
field = lambda k: re.search(r"^%s: (.*)$" % k, envt, re.M).group(1)
simd = re.search(r"^kernels use: *(\S+)", envt, re.M)
simd = simd.group(1) if simd else "see " + env
commit = field("commit")
warm, end = summ["rss_warm_kib"], summ["rss_end_kib"]
w = summ["worst_rank"]
secs = summ["seconds"]
soak_line = next(l for l in open(log) if l.startswith("SOAK "))
wrow = next((r for r in rows if r["type"] == "warmup_end"), None)
last = [r for r in rows if r["type"] == "interval"][-1]
heap = "not sampled"
if wrow and "heap_used_kib" in wrow:
    heap = ", ".join(f"{a:,} → {b:,}" for a, b in zip(wrow["heap_used_kib"], last["heap_used_kib"])) + " KiB"
trimmed, raw = "", ""
if "raw_growth_pct" in summ:  # since the judged RSS is sampled after malloc_trim(0)
    trimmed = ", after `malloc_trim(0)`"
    rw, rv, re_ = summ["raw_worst_rank"], summ["raw_rss_warm_kib"], summ["raw_rss_end_kib"]
    raw = (f"\n| raw RSS after warm-up → end, before the trim (rank {rw}, not judged) | {rv[rw]:,} KiB → "
           f"{re_[rw]:,} KiB: {summ['raw_growth_pct']:+.3f}% (every rank: "
           + ", ".join(f"{a:,} → {b:,}" for a, b in zip(rv, re_)) + " KiB) |")
pct = 100.0 * summ["checked_elements"] / summ["elements"] if summ["elements"] else 0
sec = f"""<!-- soak:begin -->
<!-- written by bench/soak.sh from {log}; do not edit by hand -->
| | |
|---|---|
| calls (after a warm-up of {head['warmup']}) | {summ['calls']:,} random calls on {head['ranks']} ranks over sockets, sizes 1 B … {head['max_bytes']:,} B, plus {summ['warmup_phase1_calls']} warm-up calls at the largest size (failures among them: {summ['warmup_phase1_failures']}) |
| mismatched (ranks' outputs differ) | **{summ['mismatched']}** |
| elements outside the error bound | **{summ['outside_bound']}** (of {summ['checked_elements']:,} checked, {pct:.1f}% of the {summ['elements']:,} output elements; the largest calls checked on a spread subset of whole blocks) |
| refused (same code on every rank) | {summ['refused']} ({100.0 * summ['refused'] / summ['calls']:.1f}%); refusals that disagreed or were not invalid_argument: {summ['bad_refusals']} |
| RSS after warm-up → end{trimmed} (rank {w}, the largest growth) | {warm[w]:,} KiB → {end[w]:,} KiB: **{summ['growth_pct']:+.3f}%** ({'judged' if summ['rss_judged'] else 'not judged'}; every rank: {', '.join(f'{a:,} → {b:,}' for a, b in zip(warm, end))} KiB) |{raw}
| allocator's memory in use (mallinfo2), after warm-up → end, every rank | {heap} |
| duration | {secs:.0f} s ({secs / 60:.1f} min) |
| result | {'**pass**' if summ['pass'] else '**FAIL**'} (exit status {rc}) |
| commit | `{commit[:7]}`{commit[40:]} |
| SIMD target | {simd} |
| date | {field('date')} |

```sh
bash bench/soak.sh --calls {head['calls']} --seed {head['seed']}
# which runs:
{field('command')}
```

Summary line: `{soak_line.strip()}`. Raw: `{log}`, `{jsonl}` (a row per 500 calls), `{env}`
(commit, `equarx-info`, load before and after), `{env.replace('_env.txt', '_load.txt')}` (load once a minute).
<!-- soak:end -->"""
doc = open("docs/reliability.md").read()
a, b = doc.index("<!-- soak:begin -->"), doc.index("<!-- soak:end -->") + len("<!-- soak:end -->")
open("docs/reliability.md", "w").write(doc[:a] + sec + doc[b:])
print("docs/reliability.md: Soak section updated")
EOF
fi
exit "$RC"
