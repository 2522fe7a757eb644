#!/usr/bin/env bash
# bench/compare_local_path.sh — ranks of one host: the same equarx-perf launch over each data
# path a communicator created from MPI can take (sockets: TCP over loopback; host: equarx's
# host-aware transport, here all rings with TCP doorbells; shm: equarx's shared-memory rings
# alone; mpi: Open MPI point-to-point over its shared-memory BTL, vader), alternating the paths
# (sockets, host, shm, mpi, then again) so that drift in the machine's load hits each. N = 2 and 4 ranks, bf16, 1/8/64 MiB, the unquantized ring and full_bidir
# int8 (rs+ag). Median of 10 timed calls per row (equarx-perf). Writes raw rows to
# bench/results/local_path/ and regenerates the table in docs/benchmarks.md between its
# <!-- localpath:begin --> and <!-- localpath:end --> markers. About 5 minutes on 2 cores.
#
# Usage: bash bench/compare_local_path.sh [--table-only]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/compare_path_lib.sh
table_only_option compare_local_path.sh "$@"
res=bench/results/local_path
perf=build/release/tools/perf/equarx-perf
if [[ $run -eq 1 ]]; then
  [[ -x $perf ]] || { echo "compare_local_path.sh: build first ($perf missing)" >&2; exit 2; }
  mkdir -p "$res"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
  {
    echo "date: $(date -Is)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include tools || echo ' (dirty)')"
    echo "cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    build/release/tools/info/equarx-info | head -5
  } >"$res/env.txt"
  for np in 2 4; do for rep in 1 2; do for dp in sockets host shm mpi; do
    timeout 600 mpirun --oversubscribe --bind-to none -np $np --mca btl self,vader,tcp \
      -x EQUARX_DATA_PATH=$dp "$perf" -b 1M -e 64M -f 8 -n 10 -w 2 -c 0 -d bf16 \
      --algo ring,full_bidir --phases rs+ag --block 64 --scale f32 -J "$res/N$np-$dp-$rep.jsonl" >/dev/null
    echo "N=$np $dp run $rep done, load $(cut -d' ' -f1 /proc/loadavg)" >>"$res/env.txt"
  done; done; done
fi
table=$(/usr/bin/env python3 - "$res" <<'PY'
import json, sys
res = sys.argv[1]
lines = ["| N | size | algo | sockets (ms) | host (ms) | shm (ms) | mpi (ms) | host vs sockets | host vs mpi |",
         "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
def times(np_, dp):
    t = {}
    for rep in (1, 2):
        for l in open(f"{res}/N{np_}-{dp}-{rep}.jsonl"):
            r = json.loads(l)
            if r.get("type") == "header": continue
            t.setdefault((r["size_bytes"], r["algo"]), []).append(r["time_us"] / 1e3)
    return {k: min(v) for k, v in t.items()}  # the better of the two runs' medians
for np_ in (2, 4):
    T = {dp: times(np_, dp) for dp in ("sockets", "host", "shm", "mpi")}
    for (size, algo) in sorted(T["host"]):
        s, h, m, p = (T[dp][(size, algo)] for dp in ("sockets", "host", "shm", "mpi"))
        name = "ring (bf16)" if algo == "ring" else f"{algo} int8"
        lines.append(f"| {np_} | {size >> 20}M | {name} | {s:.1f} | {h:.1f} | {m:.1f} | {p:.1f} | {s / h:.2f}x | {p / h:.2f}x |")
env = open(f"{res}/env.txt").read()
lines.append("")
head = env.splitlines()[:3]
lines.append("Run: " + " · ".join(l for l in head if not l.startswith("commit:")) +
             ". Each cell: the better of two runs' medians.")
lines.append("")
lines.append("Provenance: " + " · ".join(l for l in head if l.startswith("commit:")) + ".")
print("\n".join(lines))
PY
)
splice_table localpath docs/benchmarks.md "$table"
