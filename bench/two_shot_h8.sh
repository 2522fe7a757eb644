#!/usr/bin/env bash
# bench/two_shot_h8.sh [LAUNCHES] — two_shot vs full_bidir (int8 rs+ag, bf16, 64 MiB) at H = 8
# emulated hosts, 1 Gbit/s, sockets data path, in LAUNCHES separate launches (default 3): on 2
# cores with 8 ranks a single launch varies by ±10%, so the ratio is read as a median over
# launches. Prints one line per launch and the median; rows in bench/results/two_shot_h8/.
# Needs root, like bench/netem/run.sh. About 1.5 minutes per launch.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3}
RES=bench/results/two_shot_h8
mkdir -p "$RES"
for ((i = 1; i <= N; i++)); do
  bash bench/netem/run.sh --hosts 8 --rates 1gbit --configs bf16 --algos full_bidir,two_shot \
    --phases rs+ag -b 64M -e 64M -n 10 -w 2 --check 0 --data-path sockets \
    --out "out/two_shot_h8/$i" >"out/two_shot_h8-$i.log" 2>&1
  cp "out/two_shot_h8/$i/rows.jsonl" "$RES/launch$i.jsonl"
done
/usr/bin/env python3 - "$RES" "$N" <<'PY'
import json, statistics, sys
res, n = sys.argv[1], int(sys.argv[2])
ratios = []
for i in range(1, n + 1):
    t = {r["algo"]: r["time_us"] for r in map(json.loads, open(f"{res}/launch{i}.jsonl")) if "algo" in r}
    ratios.append(t["full_bidir"] / t["two_shot"])
    print(f"launch {i}: ring {t['ring'] / 1e3:.0f} ms, full_bidir {t['full_bidir'] / 1e3:.0f} ms, "
          f"two_shot {t['two_shot'] / 1e3:.0f} ms: two_shot speed {ratios[-1]:.3f}x of full_bidir")
print(f"median over {n} launches: {statistics.median(ratios):.3f}x")
PY
