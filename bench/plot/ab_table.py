#!/usr/bin/env python3
"""The table of bench/ab_speed.sh: this build against an earlier one, side by side.

    python3 bench/plot/ab_table.py RESULTS_DIR [--splice docs/performance.md]

Kernels: GB/s medians of kernels_<before|after>_<TARGET>.json (equarx_codec_bench, 5
repetitions each). Emulated hosts: per algorithm and size, the median over every launch of a
side of equarx-perf's time (netem_<side>_<launch>/rows.jsonl); after/before is the ratio of
speeds (above 1: this build is faster).
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import (TARGET_ORDER, emit, env_of, generated_line, netem_rows,  # noqa: E402
                               one_results_dir)
from plot import human  # noqa: E402

PLOT = "bench/plot/ab_table.py"


def kernel_medians(res, side):
    """{(target, benchmark): GB/s} of one side's kernel files."""
    out = {}
    for path in glob.glob(os.path.join(res, f"kernels_{side}_*.json")):
        target = re.search(rf"kernels_{side}_(\w+)\.json$", path).group(1)
        for b in json.load(open(path))["benchmarks"]:
            if b.get("aggregate_name") == "median":
                out[(target, b["run_name"])] = b["bytes_per_second"] / 1e9
    return out


def kernels_table(res):
    before, after = kernel_medians(res, "before"), kernel_medians(res, "after")
    keys = sorted(set(before) & set(after),
                  key=lambda k: (TARGET_ORDER.index(k[0]) if k[0] in TARGET_ORDER else 99, k[1]))
    rows = ["| target | kernel | before GB/s | after GB/s | after/before |", "|---|---|---:|---:|---:|"]
    for t, name in keys:
        rows.append(f"| {t} | `{name}` | {before[(t, name)]:.2f} | {after[(t, name)]:.2f} | "
                    f"{after[(t, name)] / before[(t, name)]:.3f} |")
    return rows


def netem_times(res, side):
    """{(algo, size_bytes): [time_us of every launch's rows]} of one side."""
    out = {}
    for d in sorted(glob.glob(os.path.join(res, f"netem_{side}_*"))):
        if not os.path.isdir(d):
            continue
        for r in netem_rows(d):
            if r.get("type") == "header" or "time_us" not in r:
                continue
            out.setdefault((r["algo"], r["size_bytes"]), []).append(r["time_us"])
    return out


def netem_table(res):
    before, after = netem_times(res, "before"), netem_times(res, "after")
    rows = ["| algorithm | size | before ms (launches) | after ms | after/before speed |",
            "|---|---:|---:|---:|---:|"]
    for key in sorted(set(before) & set(after), key=lambda k: (k[0], k[1])):
        b, a = statistics.median(before[key]), statistics.median(after[key])
        rows.append(f"| {key[0]} | {human(key[1])} | {b / 1e3:.1f} ({len(before[key])}) | {a / 1e3:.1f} "
                    f"({len(after[key])}) | {b / a:.3f} |")
    return rows


def main():
    res, splice = one_results_dir(sys.argv[1:], PLOT)
    env = env_of(os.path.join(res, "env.txt"))
    before = env.get("before", "?")
    text = [generated_line(f"`{env.get('command', 'bash bench/ab_speed.sh')}`", PLOT, env), "",
            "The `before` build is an earlier revision (provenance below). Kernels: GB/s of f32-equivalent input, single thread, median of 5, each SIMD target forced "
            "in turn, the builds one after the other (`kernels_<side>_<TARGET>.json`):", ""]
    text += kernels_table(res)
    text += ["", "**4 emulated hosts at 1 Gbit/s**, one rank each, f32 data, equarx's TCP data path, the "
             "builds in alternating launches (`netem_<side>_<launch>/`); `full_bidir` is the default "
             "call's pick at these sizes, `ring` the unquantized ring; the median over launches of "
             "each launch's time (equarx-perf's median of its repetitions):", ""]
    text += netem_table(res)
    text += ["", f"Provenance: the `before` build: commit {before[:7]}"
             f"{' (+ uncommitted changes)' if 'uncommitted' in before else ''}."]
    emit("\n".join(text), splice, "ab_speed")


if __name__ == "__main__":
    main()
