#!/usr/bin/env bash
# bench/compare_data_path.sh — the same bf16 launch over both data paths, alternating
# (mpi, sockets, mpi, sockets) so that drift in the machine's load hits both: H = 4 and 8
# emulated hosts, 1 Gbit/s links, 16 and 64 MiB, ring and every quantized algorithm, rs+ag.
# Writes out/dp/H<H>-<path>-<rep>/ and prints the speedup table of docs/benchmarks.md
# ("Data path"). Needs root, like bench/netem/run.sh. About 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
for H in 4 8; do for rep in 1 2; do for dp in mpi sockets; do
  bash bench/netem/run.sh --hosts $H --rates 1gbit --configs bf16 -b 16M -e 64M -f 4 -n 5 -w 1 \
    --phases rs+ag --check 0 --data-path $dp --out out/dp/H$H-$dp-$rep >"out/dp-H$H-$dp-$rep.log" 2>&1
done; done; done
/usr/bin/env python3 - <<'PY'
import json
print("| H | size | data path | run | bf16 ring (ms) | full_bidir | full | semi | two_shot |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|")
for H in (4, 8):
    for sz in (16 << 20, 64 << 20):
        for dp in ("mpi", "sockets"):
            for rep in (1, 2):
                rows = [json.loads(l) for l in open(f"out/dp/H{H}-{dp}-{rep}/rows.jsonl")]
                t = {r["algo"]: r["time_us"] for r in rows if r.get("size_bytes") == sz}
                cells = " | ".join(f"{t[a] / 1e3:.0f} ({t['ring'] / t[a]:.2f}x)" for a in ("full_bidir", "full", "semi", "two_shot"))
                print(f"| {H} | {sz >> 20}M | {dp} | {rep} | {t['ring'] / 1e3:.0f} | {cells} |")
PY
