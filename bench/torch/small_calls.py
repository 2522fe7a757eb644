#!/usr/bin/env python3
"""Small all_reduce calls through torch.distributed: the "equarx" backend's default call
against gloo, N ranks on this machine under torchrun, side by side in one run.

    .venv-torch2/bin/python bench/torch/small_calls.py --out bench/results/torch_small_calls \\
        --splice docs/python.md

It starts torchrun (python -m torch.distributed.run, --nproc_per_node RANKS) on itself. Each
rank makes an "equarx" group (the default options: the library's auto) and a gloo group from
the same store, checks once that both sum a float32 tensor of small integers exactly (so both
results are equal, bit for bit, on every rank), then times REPS repetitions; in each, CALLS
back-to-back dist.all_reduce calls of one float32 tensor of BYTES through equarx, then as many
through gloo (the order alternates between repetitions), a gloo barrier before each batch. The
timed tensor holds zeros, so repeated sums stay in range; neither path's speed depends on the
values. Every call is timed on its own too (time.perf_counter around it).

Rows (OUT/rows.jsonl, rank 0): {"type": "batch", "backend", "rep", "calls", "bytes",
"seconds": the slowest rank's time for the batch, "per_call_us", "p50_us", "p99_us": rank 0's
single calls}; a header row with the environment; OUT/env.txt: date, commit, machine, load
before and after. With --splice FILE the table replaces the text between
<!-- generated:torch_small_calls:begin --> and <!-- generated:torch_small_calls:end -->;
--table DIR prints (or splices) the table of an earlier run without running anything.
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "plot"))
from codec_speed_table import emit, env_of  # noqa: E402 - the other tables' splicer
MARKER = "torch_small_calls"
SCRIPT = "bench/torch/small_calls.py"


def size_arg(text):
    mult = {"K": 1 << 10, "M": 1 << 20}
    t = text.strip().upper()
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def worker(args):
    import numpy as np
    import torch
    import torch.distributed as dist

    import equarx
    import equarx.torch  # noqa: F401 - registers "equarx"

    torch.set_num_threads(1)
    dist.init_process_group("equarx", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    n = args.bytes // 4

    # Both sum exactly: small integers in float32 give the same bits whatever the order.
    x = torch.from_numpy(np.random.default_rng(100 + rank).integers(-100, 101, n).astype(np.float32))
    a, b = x.clone(), x.clone()
    dist.all_reduce(a)
    dist.all_reduce(b, group=gloo)
    same = torch.tensor([int(torch.equal(a, b))], dtype=torch.int32)
    dist.all_reduce(same, op=dist.ReduceOp.MIN, group=gloo)

    t = torch.zeros(n)
    for backend in ("equarx", "gloo"):  # warm-up
        for _ in range(args.warmup):
            dist.all_reduce(t, group=None if backend == "equarx" else gloo)
    rows = []
    for rep in range(args.reps):
        order = ("equarx", "gloo") if rep % 2 == 0 else ("gloo", "equarx")
        for backend in order:
            group = None if backend == "equarx" else gloo
            singles = []
            dist.barrier(group=gloo)
            start = time.perf_counter()
            for _ in range(args.calls):
                c = time.perf_counter()
                dist.all_reduce(t, group=group)
                singles.append(time.perf_counter() - c)
            total = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(total, op=dist.ReduceOp.MAX, group=gloo)  # the slowest rank's batch
            singles.sort()
            rows.append({"type": "batch", "backend": backend, "rep": rep, "calls": args.calls, "bytes": args.bytes,
                         "seconds": total.item(), "per_call_us": total.item() / args.calls * 1e6,
                         "p50_us": singles[len(singles) // 2] * 1e6,
                         "p99_us": singles[min(len(singles) - 1, int(len(singles) * 0.99))] * 1e6})
    if rank == 0:
        with open(os.path.join(args.out, "rows.jsonl"), "w") as f:
            f.write(json.dumps({"type": "header", "ranks": world, "torch": torch.__version__,
                                "equarx": equarx.__version__, "options": equarx.canonical_options(),
                                "exact_and_equal": bool(same.item())}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    if not same.item():
        sys.exit("small_calls.py: the equarx and gloo sums differ")


def table(out):
    rows = [json.loads(line) for line in open(os.path.join(out, "rows.jsonl")) if line.strip()]
    head = next(r for r in rows if r["type"] == "header")
    batches = [r for r in rows if r["type"] == "batch"]
    env = env_of(os.path.join(out, "env.txt"))
    by = {b: [r for r in batches if r["backend"] == b] for b in ("equarx", "gloo")}
    med = {b: statistics.median(r["per_call_us"] for r in rs) for b, rs in by.items()}
    reps, calls, size = len(by["equarx"]), batches[0]["calls"], batches[0]["bytes"]
    lines = [f"Provenance: generated by `{SCRIPT}` from `{os.path.relpath(out, ROOT)}` ({env.get('date', '?')}, commit "
             f"{env.get('commit', '?')[:7]}{' + uncommitted changes' if 'dirty' in env.get('commit', '') else ''}, "
             f"{env.get('machine', '?')}; load {env.get('load before', '?')} before, {env.get('load after', '?')} after; "
             f"torch {head['torch']}): {head['ranks']} ranks on this machine under torchrun, {reps} repetitions of "
             f"{calls} back-to-back `dist.all_reduce` calls of a {size // 1024} KiB float32 tensor per backend, "
             "alternating; per call = the slowest rank's batch time / calls, then the median and the range over the "
             "repetitions; p50 and p99 of rank 0's single calls, medians over the repetitions. equarx runs its "
             f"default options (`{head['options'].split(',')[0]}`); both sums exact and equal on every rank: "
             f"{'yes' if head['exact_and_equal'] else 'NO'}.", "",
             "| backend | per call (median) | range over repetitions | single call p50 | single call p99 |",
             "|---|---:|---:|---:|---:|"]
    for b, label in (("equarx", "equarx (default call)"), ("gloo", "gloo")):
        rs = by[b]
        lines.append(f"| {label} | {med[b]:.1f} µs | {min(r['per_call_us'] for r in rs):.1f}–"
                     f"{max(r['per_call_us'] for r in rs):.1f} µs | "
                     f"{statistics.median(r['p50_us'] for r in rs):.1f} µs | "
                     f"{statistics.median(r['p99_us'] for r in rs):.1f} µs |")
    lines += ["", f"equarx's speed relative to gloo's (gloo's time per call / equarx's): "
                  f"**{med['gloo'] / med['equarx']:.2f}x** (median per call; per repetition: "
                  + ", ".join(f"{g['per_call_us'] / e['per_call_us']:.2f}x"
                              for e, g in zip(sorted(by['equarx'], key=lambda r: r['rep']),
                                              sorted(by['gloo'], key=lambda r: r['rep']))) + ")."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--calls", type=int, default=1000, help="calls per batch")
    ap.add_argument("--reps", type=int, default=7, help="batches per backend")
    ap.add_argument("--warmup", type=int, default=100, help="untimed calls per backend first")
    ap.add_argument("--bytes", type=size_arg, default=4096, help="tensor size in bytes (float32), e.g. 4K")
    ap.add_argument("--out", default="bench/results/torch_small_calls")
    ap.add_argument("--splice", default=None, help="a doc whose generated:torch_small_calls section to replace")
    ap.add_argument("--table", default=None, metavar="DIR", help="only make the table of the run in DIR")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.table:
        return emit(table(args.table), args.splice, MARKER)
    if args.ranks < 2 or args.calls < 1 or args.reps < 1 or args.warmup < 0 or args.bytes < 4 or args.bytes % 4:
        ap.error("need --ranks >= 2, --calls >= 1, --reps >= 1, --warmup >= 0, --bytes a positive multiple of 4")
    os.makedirs(args.out, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                      text=True).stdout.strip():
        commit += " (dirty)"
    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": commit,
           "machine": f"{platform.release()}; cpus: {os.cpu_count()}", "load before": load(),
           "command": " ".join([os.path.relpath(sys.executable, ROOT)] + sys.argv)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(args.ranks), "--master_addr",
           "127.0.0.1", "--master_port", str(29000 + os.getpid() % 1000), __file__, "--worker", "--calls",
           str(args.calls), "--reps", str(args.reps), "--warmup", str(args.warmup), "--bytes", str(args.bytes),
           "--out", args.out]
    p = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"))
    env["load after"] = load()
    with open(os.path.join(args.out, "env.txt"), "w") as f:
        f.write("".join(f"{k}: {v}\n" for k, v in env.items()))
    if p.returncode != 0:
        sys.exit(f"small_calls.py: torchrun exited with {p.returncode}")
    block = table(args.out)
    print(block)
    if args.splice:
        emit(block, args.splice, MARKER)


if __name__ == "__main__":
    main()
