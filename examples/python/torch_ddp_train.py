"""DDP training on 4 CPU ranks with equarx's compressed AllReduce as the communication hook.

    .venv-torch/bin/python examples/python/torch_ddp_train.py [--ranks 4] [--steps 400]
        [--png docs/img/torch_ddp_loss.png] [--md bench/results/torch_ddp/table.md]

Task: a character-level language model on real English text (the GNU GPL v3, which every
Debian system has at /usr/share/common-licenses/GPL-3): from the previous 16 characters
predict the next one. Model: character embeddings (24) -> 384 -> 384 -> vocabulary, ~0.3 M
parameters, trained with DistributedDataParallel over a gloo group of N processes (each rank
its own batches), SGD with momentum; the hook (equarx.torch.allreduce_hook) sets up its
equarx communicator through the gloo group's store. The same run, from the same weights and batches, once per
gradient AllReduce:

  f32        torch.distributed's own AllReduce (exact)
  int8       equarx two-shot, int8 block 64 (f32 scales), round to nearest even
  int8 SR    ... stochastic rounding (seeded, unbiased)
  int8 EF    ... round to nearest, error feedback (residual per bucket)
  int4       equarx two-shot, int4 block 64 (f32 scales), round to nearest
  int4 EF    ... error feedback

Prints, and writes as a markdown table: final training loss (mean of the last 10% of steps),
held-out loss and next-character accuracy on the last 10% of the text, and the bytes one rank
sends per step (the f32 figure is a ring AllReduce's 2(N-1)/N of the gradient). Loss curves
go to a PNG.
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import equarx.torch as et

TEXT = pathlib.Path("/usr/share/common-licenses/GPL-3")
CONFIGS = [
    ("f32", None),
    ("int8", dict(codec="int8")),
    ("int8 SR", dict(codec="int8", rounding="stochastic", seed=1)),
    ("int8 EF", dict(codec="int8", error_feedback=True)),
    ("int4", dict(codec="int4")),
    ("int4 EF", dict(codec="int4", error_feedback=True)),
]
CTX, EMB, HID, BATCH, LR = 16, 24, 384, 64, 0.05


def data():
    text = TEXT.read_text(encoding="utf-8")
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    split = int(len(ids) * 0.9)
    return ids[:split], ids[split:], len(chars)


def model(vocab):
    return torch.nn.Sequential(
        torch.nn.Embedding(vocab, EMB), torch.nn.Flatten(),
        torch.nn.Linear(CTX * EMB, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, vocab))


def windows(ids, starts):
    idx = starts[:, None] + np.arange(CTX + 1)[None, :]
    w = torch.from_numpy(ids[idx])
    return w[:, :CTX], w[:, CTX]


def train_step(net, opt, train, rng):
    """One step on a random batch of `train` (drawn from `rng`): forward, backward, optimizer
    step; returns the loss tensor."""
    x, y = windows(train, rng.integers(0, len(train) - CTX - 1, BATCH))
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def worker(rank, world, port, steps, outdir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    train, held, vocab = data()
    results = {}
    for name, opts in CONFIGS:
        torch.manual_seed(0)
        net = model(vocab)
        ddp = torch.nn.parallel.DistributedDataParallel(net)
        state = None
        if opts is not None:
            state = et.HookState(algorithm="two_shot", block=64, scale="f32", rotation="none", **opts)
            ddp.register_comm_hook(state, et.allreduce_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=0.9)
        rng = np.random.default_rng(1000 + rank)  # the same batches for every configuration
        losses = []
        t0 = time.perf_counter()
        for _ in range(steps):
            losses.append(train_step(ddp, opt, train, rng).item())
        seconds = time.perf_counter() - t0
        # Held-out loss and accuracy (every rank computes the same; rank 0 reports).
        with torch.no_grad():
            x, y = windows(held, np.arange(0, len(held) - CTX - 1))
            logits = net(x)
            held_loss = torch.nn.functional.cross_entropy(logits, y).item()
            acc = (logits.argmax(1) == y).float().mean().item()
        nparams = sum(p.numel() for p in net.parameters())
        sent = state.bytes_sent / steps if state else 2 * (world - 1) / world * 4 * nparams
        # Every rank must end with the same weights (checked, not assumed).
        flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        every = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(every, flat)
        same = all(torch.equal(every[0], e) for e in every)
        results[name] = dict(losses=losses, held_loss=held_loss, acc=acc, bytes=sent, seconds=seconds,
                             same=same, nparams=nparams)
    if rank == 0:
        torch.save(results, os.path.join(outdir, "results.pt"))
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--png", default="docs/img/torch_ddp_loss.png")
    ap.add_argument("--md", default="", help="also write the table to this markdown file")
    args = ap.parse_args()
    if not TEXT.exists():
        sys.exit(f"{TEXT} not found (Debian's base-files package provides it)")
    with tempfile.TemporaryDirectory() as tmp:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(worker, args=(args.ranks, port, args.steps, tmp), nprocs=args.ranks, join=True)
        results = torch.load(os.path.join(tmp, "results.pt"))

    tail = max(1, args.steps // 10)
    f32 = results["f32"]["bytes"]
    lines = [f"DDP, {args.ranks} CPU ranks (gloo), char-level LM on {TEXT} ({results['f32']['nparams']} "
             f"parameters), {args.steps} steps of {BATCH} windows per rank, SGD lr {LR} momentum 0.9",
             "",
             "| AllReduce | final train loss | held-out loss | held-out accuracy | bytes/rank/step | f32 bytes / these | ranks identical |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {np.mean(r['losses'][-tail:]):.4f} | {r['held_loss']:.4f} | {100 * r['acc']:.2f}% "
                     f"| {r['bytes'] / 1e6:.3f} MB | {f32 / r['bytes']:.2f}x | {'yes' if r['same'] else 'NO'} |")
    table = "\n".join(lines)
    print(table)
    if args.md:
        pathlib.Path(args.md).write_text(table + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG written")
        return
    fig, (ax, dx) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, height_ratios=[3, 2])
    k = 20
    smooth = {name: np.convolve(r["losses"], np.ones(k) / k, mode="valid") for name, r in results.items()}
    steps = np.arange(k, args.steps + 1)
    for name, r in results.items():
        ax.plot(steps, smooth[name], label=f"{name} (held-out {r['held_loss']:.3f})")
        dx.plot(steps, smooth[name] - smooth["f32"], label=name)
    ax.set_ylabel(f"training loss (mean of {k} steps)")
    ax.set_title(f"DDP on {args.ranks} CPU ranks: gradient AllReduce f32 vs equarx int8/int4")
    ax.legend()
    dx.set_ylabel("difference from f32")
    dx.set_xlabel("step")
    dx.axhline(0, color="black", lw=0.5)
    for a in (ax, dx):
        a.grid(alpha=0.3)
    fig.tight_layout()
    pathlib.Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
