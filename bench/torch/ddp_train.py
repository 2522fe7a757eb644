#!/usr/bin/env python3
"""DDP training over a real (emulated) network: gloo f32 against the "equarx" backend's hook
with int8 and int4, with and without error feedback; loss against step and wall-clock time.

One process per rank; started by bench/netem/run.sh (config `ddp`) with torchrun on every
emulated host (or with mpirun), or by any launcher that sets the ranks (RANK and WORLD_SIZE as
torchrun does, or OMPI_COMM_WORLD_RANK/SIZE with MASTER_ADDR/MASTER_PORT):

    torchrun --nnodes 4 --nproc_per_node 1 --node_rank H --master_addr HOST0 \
        bench/torch/ddp_train.py --steps 300 --eval-every 25 -J rows.jsonl

The task, model, batches and optimizer are examples/python/torch_ddp_train.py's (a character
model of the GPL v3 text, ~0.33 M parameters, SGD with momentum). The process group is
"equarx"; the f32 run trains DDP on a gloo group made from the same store (torch's own
AllReduce), the others register equarx.torch.allreduce_hook on the equarx group with full_bidir
rs+ag, block 64 with f32 scales pinned (the rotation: the library's default) and the codec. Every run
starts from the same weights and sees the same batches; the quantized runs go on for --extra
(default 0.5) times more steps than f32's, so that the time to reach f32's final held-out loss
is measured even where they reach it a little later by step. Timed: the training steps only (a
barrier before the first); the held-out loss is evaluated every --eval-every steps outside the
clock.

Rows (rank 0, JSON lines): per configuration {"type":"ddp", "config", "steps", "train_s":
[cumulative seconds after each step], "loss": [per step], "eval": [[step, seconds, held-out
loss, accuracy], ...], "bytes_per_step", "ranks_agree"}.
"""

import argparse
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import equarx.torch as et

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
import torch_ddp_train as ex  # noqa: E402
sys.path.insert(0, str(ROOT / "bench" / "torch"))
import launch  # noqa: E402

CONFIGS = [  # (name, hook options or None for gloo f32)
    ("gloo f32", None),
    ("int8", dict(algorithm="full_bidir", block=64, scale="f32", codec="int8")),
    ("int8 EF", dict(algorithm="full_bidir", block=64, scale="f32", codec="int8", error_feedback=True)),
    ("int4", dict(algorithm="full_bidir", block=64, scale="f32", codec="int4")),
    ("int4 EF", dict(algorithm="full_bidir", block=64, scale="f32", codec="int4", error_feedback=True)),
]


def evaluate(net, held):
    with torch.no_grad():
        x, y = ex.windows(held, np.arange(0, len(held) - ex.CTX - 1))
        logits = net(x)
        return torch.nn.functional.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--extra", type=float, default=0.5, help="quantized runs: this fraction more steps")
    ap.add_argument("--configs", default=",".join(n for n, _ in CONFIGS),
                    help="comma-separated names from: " + ", ".join(n for n, _ in CONFIGS))
    ap.add_argument("-J", default="", help="JSON lines output (rank 0)")
    args = ap.parse_args()
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    known = dict(CONFIGS)
    for n in names:
        if n not in known:
            ap.error(f"unknown config {n!r}")
    if args.steps < 1 or args.eval_every < 1 or args.extra < 0:
        ap.error("--steps and --eval-every must be positive, --extra not negative")
    rank, world, gloo = launch.init(600.0, "ddp_train.py")
    torch.set_num_threads(1)
    train, held, vocab = ex.data()
    out = open(args.J, "w") if args.J and rank == 0 else None
    for name in names:
        opts = known[name]
        torch.manual_seed(0)
        net = ex.model(vocab)
        if opts is None:
            ddp = torch.nn.parallel.DistributedDataParallel(net, process_group=gloo)
            state = None
        else:
            ddp = torch.nn.parallel.DistributedDataParallel(net)
            o = dict(opts)
            state = et.HookState(error_feedback=o.pop("error_feedback", False), **o)
            ddp.register_comm_hook(state, et.allreduce_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=ex.LR, momentum=0.9)
        rng = np.random.default_rng(1000 + rank)
        losses, clock, evals = [], [], []
        elapsed = 0.0
        dist.barrier(group=gloo)
        steps = args.steps if opts is None else int(round(args.steps * (1 + args.extra)))
        for step in range(1, steps + 1):
            t0 = time.perf_counter()
            losses.append(ex.train_step(ddp, opt, train, rng).item())
            elapsed += time.perf_counter() - t0
            clock.append(elapsed)
            if step % args.eval_every == 0 or step == steps:
                held_loss, acc = evaluate(net, held)
                evals.append([step, elapsed, held_loss, acc])
                dist.barrier(group=gloo)  # every rank resumes the clock together
        flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        every = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(every, flat, group=gloo)
        same = all(torch.equal(every[0], e) for e in every)
        nparams = flat.numel()
        sent = state.bytes_sent / steps if state else 2 * (world - 1) / world * 4 * nparams
        if out:
            out.write(json.dumps({"type": "ddp", "config": name, "ranks": world, "steps": steps,
                                  "train_s": clock, "loss": losses, "eval": evals, "bytes_per_step": sent,
                                  "nparams": nparams, "ranks_agree": same, "torch": torch.__version__}) + "\n")
            out.flush()
            print(f"{name}: {elapsed:.1f} s, held-out {evals[-1][2]:.4f}, ranks agree {same}", flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
