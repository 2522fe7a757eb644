#!/usr/bin/env python3
"""Markdown tables of bench/threads_speed.sh's raw output (bench/results/threads/): the int8
kernels on 1 and 2 threads per SIMD target (codec_<TARGET>.json) and the in-process calls with
threads 1 and 2 (perf_n2_64m.jsonl; left out where the run made none, as a kernels-only run
whose env.txt names its `command:`). With --splice FILE it replaces the text between
<!-- generated:MARKER:begin --> and <!-- generated:MARKER:end --> in FILE, MARKER being
threads_speed unless --marker names another.

    python3 bench/plot/threads_table.py [RESULTS_DIR] [--marker NAME] [--splice docs/performance.md]
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, env_of, generated_line, split_option, split_splice  # noqa: E402

KERNELS = [  # (label, benchmark name without the arguments)
    ("memcpy (the memory's limit)", "BM_MemcpyThreads"),
    ("DecodeAccumulateEncode B64, f32 local", "BM_Int8Threads<64, F32, true>"),
    ("DecodeAccumulateEncode B128, f32 local", "BM_Int8Threads<128, F32, true>"),
    ("DecodeAccumulateEncode B128, bf16 local", "BM_Int8Threads<128, BF16, true>"),
    ("Encode B64, f32 in", "BM_Int8Threads<64, F32, false>"),
    ("Encode B128, bf16 in", "BM_Int8Threads<128, BF16, false>"),
]
TARGET_ORDER = ["AVX3", "AVX2", "SSE4"]
BIG = 16777216


def kernels(res):
    gbs = {}
    paths = glob.glob(os.path.join(res, "codec_*.json"))
    targets = sorted((re.search(r"codec_(\w+)\.json$", p).group(1) for p in paths),
                     key=lambda t: TARGET_ORDER.index(t) if t in TARGET_ORDER else 99)
    for t in targets:
        for b in json.load(open(os.path.join(res, f"codec_{t}.json")))["benchmarks"]:
            if b.get("aggregate_name") == "median":
                gbs[(t, b["run_name"])] = b["bytes_per_second"] / 1e9
    out = ["| kernel, 64 MiB of f32-equivalent input | " +
           " | ".join(f"{t}: 1 thread | 2 threads | speedup" for t in targets) + " |",
           "|---|" + "---:|---:|---:|" * len(targets)]
    for label, name in KERNELS:
        cells = []
        for t in targets:
            one = gbs.get((t, f"{name}/{BIG}/1/real_time"))
            two = gbs.get((t, f"{name}/{BIG}/2/real_time"))
            cells.append(f"{one:.1f} | {two:.1f} | {two / one:.2f}x" if one and two else "- | - | -")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def calls(res):
    rows = [json.loads(l) for l in open(os.path.join(res, "perf_n2_64m.jsonl"))]
    rows = [r for r in rows if r.get("type") != "header"]
    threads = lambda r: int(re.search(r"(?:^|,)threads=(\d+)", r["options"]).group(1))
    t = {(r["algo"], threads(r)): r["time_us"] / 1e3 for r in rows}
    out = ["| algorithm | threads = 1 | threads = 2 | 1 / 2 |", "|---|---:|---:|---:|"]
    for a in dict.fromkeys(r["algo"] for r in rows):
        out.append(f"| {a} rs+ag int8 | {t[(a, 1)]:.1f} ms | {t[(a, 2)]:.1f} ms | "
                   f"{t[(a, 1)] / t[(a, 2)]:.2f}x |")
    return out


def main():
    args, splice = split_splice(sys.argv[1:])
    args, marker = split_option(args, "--marker", "a name")
    if len(args) > 1 or any(a.startswith("-") for a in args):
        sys.exit("usage: threads_table.py [RESULTS_DIR] [--marker NAME] [--splice FILE]")
    res = args[0] if args else "bench/results/threads"
    env = env_of(os.path.join(res, "env.txt"))
    made_by = f"`{env['command']}`" if "command" in env else "`bash bench/threads_speed.sh`"
    text = [generated_line(made_by, "bench/plot/threads_table.py", env),
            "",
            "**Kernels on T threads**, GB/s of f32-equivalent input (wall-clock), median of 11 "
            "randomly interleaved repetitions: the "
            "64 MiB buffer cut into T parts (`codec::PartOf`) on a worker pool of T threads, as a "
            "call with `threads = T` runs them (`codec_<TARGET>.json`):",
            ""] + kernels(res)
    if os.path.exists(os.path.join(res, "perf_n2_64m.jsonl")):
        text += ["",
                 "**Whole calls in process**, 2 ranks (threads of one process on the 2 cores), 64 MiB "
                 f"of bf16 each, median of {env.get('iters', '?')} (`perf_n2_64m.txt`):",
                 ""] + calls(res)
    emit("\n".join(text), splice, marker or "threads_speed")

if __name__ == "__main__":
    main()
