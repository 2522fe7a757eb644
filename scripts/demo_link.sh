#!/usr/bin/env bash
# The main job's second part (scripts/demo.sh): what quantizing buys on a link, measured.
#
# As root where network namespaces work (the README's machine): 4 emulated hosts with 1 Gbit/s
# links (bench/netem/run.sh: one rank per network namespace, equarx's TCP data path), 16 MiB
# per rank, the unquantized bf16 ring against int8 full_bidir and two_shot (bf16 data) and
# against Open MPI's MPI_Allreduce (f32, the same element count): median times, the speedup
# over the bf16 ring beside the byte ratio. The namespaces are removed on exit, on failure too
# (run.sh's trap). Elsewhere: the cost model's projection (equarx-model, the library's own plans
# and bytes) for the in-process demo's 8 ranks as 8 hosts at 1, 10 and 25 Gbit/s, labelled as a
# projection.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release
project() {
  echo "no emulated link here ($1): the cost model's projection instead (equarx-model; 8 hosts, one rank each,"
  echo "16 MiB of bf16 per rank, codec rates measured on this machine; not a measurement of a network):"
  for gbit in 1 10 25; do
    "$B/tools/model/equarx-model" --hosts 8 -b 16M -e 16M -d bf16 --link-gbit "$gbit" --calibrate \
      --algo ring,full_bidir,two_shot --csv |
      python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
ring = next(float(r["time_us"]) for r in rows if r["algo"] == "ring")
for r in rows:
    t = float(r["time_us"])
    print(f"  {sys.argv[1]:>3} Gbit/s  {r[\"algo\"]:>10}: {t / 1000:8.1f} ms  speedup over the bf16 ring {ring / t:4.2f}x")
' "$gbit"
  done
}
if [[ $(id -u) -ne 0 ]]; then project "not root"; exit 0; fi
bash scripts/apt_install.sh iproute2 ethtool >/dev/null || true
probe="eqxdemo-probe-$$"
if ! ip netns add "$probe" 2>/dev/null; then project "network namespaces are not available"; exit 0; fi
ip netns del "$probe"
out=out/demo_link
rm -rf "$out"
mkdir -p out
echo "emulated link: 4 hosts (network namespaces), 1 Gbit/s each, 16 MiB per rank (about a minute)..."
bash bench/netem/run.sh --hosts 4 --rates 1gbit --configs bf16,mpi --algos full_bidir,two_shot --phases rs+ag \
  --block 64 -b 16M -e 16M -n 5 -w 1 --check 0 --prefix "eqxdemo-$$" --out "$out" >"$out.log" 2>&1 ||
  { echo "the emulated run failed (log: $out.log)" >&2; exit 1; }
python3 - "$out/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"type":"header"' not in l]
ring = next(r for r in rows if r["algo"] == "ring" and r["dtype"] == "bf16")
print(f"  {'configuration':<28} {'median ms':>9} {'speedup':>8} {'bytes vs ring':>14}")
for r in rows:
    name = {"ring": "bf16 ring (unquantized)", "mpi": "Open MPI MPI_Allreduce (f32)"}.get(
        r["algo"], f"int8 {r['algo']} (bf16 data)")
    if r["algo"] == "mpi":  # f32: twice the bytes of the same elements in bf16
        ratio = "-"
    else:
        ratio = f"{ring['wire_bytes'] / r['wire_bytes']:.2f}x" if r["wire_bytes"] else "-"
    print(f"  {name:<28} {r['time_us'] / 1000:9.1f} {ring['time_us'] / r['time_us']:7.2f}x {ratio:>14}")
best = max(ring["time_us"] / r["time_us"] for r in rows if r["algo"] not in ("ring", "mpi"))
print(f"measured on this machine's emulated 1 Gbit/s links: int8 is {best:.2f}x as fast as the bf16 ring, "
      "for about half its bytes")
PY
