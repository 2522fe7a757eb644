#!/usr/bin/env python3
"""torch.distributed all_reduce side by side: the "equarx" backend (int8 and the unquantized
bf16 ring, both through dist.all_reduce on bfloat16 tensors) and gloo's all_reduce on float32
tensors of the same element count, in one launch, interleaved per iteration, medians.

One process per rank; started by bench/netem/run.sh (config `torch`) under mpirun across the
emulated hosts, or by any launcher that sets the ranks (OMPI_COMM_WORLD_RANK/SIZE, or
RANK/WORLD_SIZE as torchrun does) and MASTER_ADDR/MASTER_PORT:

    python bench/torch/allreduce_bench.py -b 1M -e 64M -f 4 -n 5 -w 1 -J rows.jsonl

Sizes are bytes of the bf16 tensor (gloo's f32 tensor has the same elements, twice the
bytes). Rows (rank 0, JSON lines): {"type":"torch_allreduce", "algo": name, "bytes": bf16
bytes, "elements", "median_s", "min_s", "times_s": [...], "options", "torch", "iters"}; the
first line is a header with the environment. Every rank checks that its int8 and ring results
equal rank 0's (bitwise) and reports it in the header.
"""

import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist

import equarx
import equarx.torch as et

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch  # noqa: E402


def size_arg(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


CONFIGS = [  # (row name, backend, options)
    ("equarx_int8_full_bidir", "equarx", dict(algorithm="full_bidir", phases="rs+ag", codec="int8", block=64, scale="f32")),
    ("equarx_int8_two_shot", "equarx", dict(algorithm="two_shot", phases="rs+ag", codec="int8", block=64, scale="f32")),
    ("equarx_bf16_ring", "equarx", dict(algorithm="ring")),
    ("gloo_f32", "gloo", None),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-b", type=size_arg, default=1 << 20, help="smallest size, bytes of bf16")
    ap.add_argument("-e", type=size_arg, default=64 << 20, help="largest size")
    ap.add_argument("-f", type=int, default=4, help="size factor")
    ap.add_argument("-n", type=int, default=5, help="timed iterations")
    ap.add_argument("-w", type=int, default=1, help="warm-up iterations")
    ap.add_argument("-J", default="", help="JSON lines output (rank 0)")
    ap.add_argument("--timeout", type=float, default=600.0, help="the process group's timeout, seconds")
    args = ap.parse_args()
    if args.f < 2 or args.b < 2 or args.e < args.b or args.n < 1 or args.w < 0:
        ap.error("need -f >= 2, 2 <= -b <= -e, -n >= 1, -w >= 0")
    rank, world, gloo = launch.init(args.timeout, "allreduce_bench.py")
    torch.set_num_threads(1)

    sizes = []
    s = args.b
    while s <= args.e:
        sizes.append(s)
        s *= args.f
    out = open(args.J, "w") if args.J and rank == 0 else None
    agree = True
    for size in sizes:
        n = max(1, size // 2)
        g = torch.Generator().manual_seed(1000 + rank)
        base = torch.randn(n, generator=g)
        inputs = {"equarx": base.to(torch.bfloat16), "gloo": base.clone()}
        times = {name: [] for name, _, _ in CONFIGS}
        results = {}
        for it in range(args.w + args.n):
            for name, backend, opts in CONFIGS:
                t = inputs[backend].clone()
                dist.barrier(group=gloo)
                t0 = time.perf_counter()
                if backend == "equarx":
                    with et.options(**opts):
                        dist.all_reduce(t)
                else:
                    dist.all_reduce(t, group=gloo)
                dt = time.perf_counter() - t0
                if it >= args.w:
                    times[name].append(dt)
                results[name] = t
        # Every rank's equarx results equal rank 0's (bitwise).
        for name, backend, _ in CONFIGS:
            if backend != "equarx":
                continue
            r = results[name].float()  # bf16 -> f32 is exact; gloo broadcasts f32
            r0 = r.clone()
            dist.broadcast(r0, 0, group=gloo)
            agree &= bool(torch.equal(r, r0))
        if out:
            for name, backend, opts in CONFIGS:
                ts = times[name]
                out.write(json.dumps({
                    "type": "torch_allreduce", "algo": name, "backend": backend, "bytes": n * 2, "elements": n,
                    "dtype": "bf16" if backend == "equarx" else "f32", "median_s": statistics.median(ts),
                    "min_s": min(ts), "times_s": ts, "iters": args.n,
                    "options": equarx.canonical_options(**opts) if opts else ""}) + "\n")
            out.flush()
            print(f"{n * 2:>12} B  " + "  ".join(f"{name} {statistics.median(times[name]) * 1e3:9.1f} ms"
                                                for name, _, _ in CONFIGS), flush=True)
    flags = torch.tensor([1 if agree else 0], dtype=torch.int32)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN, group=gloo)
    if out:
        out.write(json.dumps({"type": "header", "ranks": world, "host": socket.gethostname(),
                              "torch": torch.__version__, "equarx": equarx.__version__,
                              "ranks_agree": bool(flags.item())}) + "\n")
        out.close()
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    if not flags.item():
        sys.exit("allreduce_bench.py: ranks disagree")


if __name__ == "__main__":
    main()
