#!/usr/bin/env bash
# bench/compare_data_path.sh — the same bf16 launch over both data paths, alternating
# (mpi, sockets, mpi, sockets) so that drift in the machine's load hits both: H = 4 and 8
# emulated hosts, 1 Gbit/s links, 16 and 64 MiB, ring and every quantized algorithm, rs+ag.
# This is the measurement behind the default data path (sockets; docs/benchmarks.md, "Data
# path"). Writes the launches to out/dp/, copies their rows and environment to
# bench/results/data_path/, and regenerates the table in docs/benchmarks.md between its
# <!-- datapath:begin --> and <!-- datapath:end --> markers. Needs root, like
# bench/netem/run.sh. About 5 minutes.
#
# Usage: bash bench/compare_data_path.sh [--table-only]
#   --table-only  regenerate the table from bench/results/data_path/ without running
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/compare_path_lib.sh
table_only_option compare_data_path.sh "$@"
res=bench/results/data_path
if [[ $run -eq 1 ]]; then
  mkdir -p out/dp "$res"
  for H in 4 8; do for rep in 1 2; do for dp in mpi sockets; do
    rm -rf "out/dp/H$H-$dp-$rep"
    bash bench/netem/run.sh --hosts $H --rates 1gbit --configs bf16 -b 16M -e 64M -f 4 -n 5 -w 1 \
      --phases rs+ag --check 0 --data-path $dp --out "out/dp/H$H-$dp-$rep" >"out/dp-H$H-$dp-$rep.log" 2>&1
    cp "out/dp/H$H-$dp-$rep/rows.jsonl" "$res/H$H-$dp-$rep.jsonl"
    cp "out/dp/H$H-$dp-$rep/env.txt" "$res/H$H-$dp-${rep}_env.txt"
  done; done; done
fi
table=$(/usr/bin/env python3 - "$res" <<'PY'
import json, re, sys
res = sys.argv[1]
lines = ["| H | size | data path | run | bf16 ring (ms) | full_bidir | full | semi | two_shot |",
         "|---|---:|---|---|---:|---:|---:|---:|---:|"]
for H in (4, 8):
    for sz in (16 << 20, 64 << 20):
        for dp in ("mpi", "sockets"):
            for rep in (1, 2):
                rows = [json.loads(l) for l in open(f"{res}/H{H}-{dp}-{rep}.jsonl")]
                t = {r["algo"]: r["time_us"] for r in rows if r.get("size_bytes") == sz}
                cells = " | ".join(f"{t[a] / 1e3:.0f} ({t['ring'] / t[a]:.2f}x)"
                                   for a in ("full_bidir", "full", "semi", "two_shot"))
                lines.append(f"| {H} | {sz >> 20}M | {dp} | {rep} | {t['ring'] / 1e3:.0f} | {cells} |")
envs = []
for H in (4, 8):
    for dp in ("mpi", "sockets"):
        for rep in (1, 2):
            env = open(f"{res}/H{H}-{dp}-{rep}_env.txt").read()
            m = re.search(r"^commit: (\S+)(.*)$", env, re.M)
            d = re.search(r"^date: (\S+)", env, re.M)
            l = re.search(r"load at start: (\S+)", env)
            envs.append((d.group(1) if d else "?", (m.group(1)[:7] + m.group(2)) if m else "?", l.group(1) if l else "?"))
dates = sorted(e[0] for e in envs)
commits = sorted({e[1] for e in envs})
loads = sorted(float(e[2]) for e in envs if e[2] != "?")
lines.append("")
lines.append(f"Runs {dates[0]} … {dates[-1]}, 1-minute load at the launches' start "
             f"{loads[0]:.1f}–{loads[-1]:.1f}.")
lines.append("")
lines.append(f"Provenance: build of {', '.join(commits)}.")
print("\n".join(lines))
PY
)
splice_table datapath docs/benchmarks.md "$table"
