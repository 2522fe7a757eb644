#!/usr/bin/env python3
"""What is left to gain inside int8's byte budget: a numpy model of two_shot int8 with two-level
scales (docs/wire_format.md: a bf16 scale per block, a 4-bit multiplier per sub-block) and the
randomized Hadamard rotation, on real AllReduce operands (equarx-gemma3 eval
--dump-activations). Each rank's own contribution stays f32, the others' are quantized once, the
f32 sum is quantized once (as two_shot does). Variants: the rotation block, an encoder that
searches the multiplier for the least squared error instead of taking the smallest that holds
the absmax, and a finer sub-block for the all-gather's sum only. Prints the pooled squared error
over the library's B64 two-level row and over a model of the bf16 ring (inputs rounded to bf16,
every partial sum rounded to bf16), with the bytes per value across both phases.

    .venv/bin/python bench/two_level_sim.py out/activations/tp4 > bench/results/scale_formats/two_level_sim.txt
"""
import argparse
import glob
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_formats_sim import hadamard_rotate, scale_of  # noqa: E402

Q = 127.0


def bf16_nearest(x):
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)).view(np.float32)


def two_level(x, block, sub, search=False):
    """int8 codes with a bf16 scale per `block` and a 4-bit multiplier per `sub` elements."""
    b = x.reshape(-1, block).astype(np.float32)
    s = scale_of(np.abs(b).max(axis=1), "bf16")[:, None]
    parts = b.reshape(b.shape[0], block // sub, sub)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.nan_to_num(np.abs(parts).max(axis=2) / s * (16 / Q))

    def decode(c):
        step = (s * (c + 1) / 16)[:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(step > 0, np.clip(np.rint(parts / step), -Q, Q), 0)
        return q * step

    c = np.clip(np.ceil(t) - 1, 0, 15)
    best = decode(c)
    if search:  # a smaller multiplier clips the absmax but refines the rest
        err = ((best - parts) ** 2).sum(axis=2)
        for d in (1, 2, 3):
            trial = decode(np.clip(c - d, 0, 15))
            e = ((trial - parts) ** 2).sum(axis=2)
            better = e < err
            best = np.where(better[:, :, None], trial, best)
            err = np.where(better, e, err)
    return best.reshape(-1)


def operand_groups(description):
    """The command line's folder of dumped operands (equarx-gemma3 eval --dump-activations) and
    its {call name: {rank: .npy path}}; a usage error if it holds none."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("activations", help="a folder of equarx-gemma3 eval --dump-activations files")
    act_dir = parser.parse_args().activations
    groups = {}
    for path in sorted(glob.glob(os.path.join(act_dir, "*_rank*.npy"))):
        m = re.match(r"(.*)_rank(\d+)\.npy$", os.path.basename(path))
        groups.setdefault(m.group(1), {})[int(m.group(2))] = path
    if not groups:
        parser.error(f"no *_rank*.npy operands in {act_dir}")
    return act_dir, groups


def one_call(g):
    """The ranks' f32 operands of one call (cut to a multiple of 512 values), their count, the
    exact f64 sum and the squared error of the bf16 ring model (inputs rounded to bf16, every
    partial sum rounded to bf16)."""
    xs = [np.load(g[r]).astype(np.float32).reshape(-1) for r in sorted(g)]
    n = len(xs[0]) // 512 * 512
    xs = [x[:n] for x in xs]
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    acc = bf16_nearest(xs[0])
    for x in xs[1:]:
        acc = bf16_nearest(acc + bf16_nearest(x))
    return xs, n, exact, float(np.sum((acc - exact) ** 2))


def bytes_per_value(block, sub):
    return 1 + 2 / block + 0.5 / sub


# label, rotation block, (block, sub, search) of the reduce-scatter, of the all-gather
CONFIGS = [
    ("B64 sub 8, rotation 16 (the library)", 16, (64, 8, False), (64, 8, False)),
    ("rotation 8", 8, (64, 8, False), (64, 8, False)),
    ("rotation 32", 32, (64, 8, False), (64, 8, False)),
    ("rotation 64", 64, (64, 8, False), (64, 8, False)),
    ("multiplier searched", 16, (64, 8, True), (64, 8, True)),
    ("RS B512 sub 8, AG B512 sub 4", 16, (512, 8, False), (512, 4, False)),
    ("RS B128 sub 8, AG B128 sub 4", 16, (128, 8, False), (128, 4, False)),
    ("B64 sub 4 both", 16, (64, 4, False), (64, 4, False)),
]


def main():
    act_dir, groups = operand_groups("two_shot int8 two-level variants on dumped operands")
    rng = np.random.default_rng(1)
    err = {label: 0.0 for label, *_ in CONFIGS}
    ring = 0.0
    for g in groups.values():
        xs, n, exact, ring_sq = one_call(g)
        ring += ring_sq
        for label, rot, rs, ag in CONFIGS:
            signs = rng.choice(np.array([-1.0, 1.0], np.float32), size=rot)
            r = [hadamard_rotate(x, rot, signs) for x in xs]
            total = r[0].copy()  # the owner's own contribution, f32
            for y in r[1:]:
                total = total + two_level(y, *rs)
            out = two_level(total.astype(np.float32), *ag)
            back = hadamard_rotate(out, rot, np.ones(rot, np.float32)) * np.tile(signs, n // rot)
            err[label] += float(np.sum((back - exact) ** 2))
    base = err[CONFIGS[0][0]]
    print(f"two_shot int8, two-level scales, {len(groups)} AllReduce calls of {len(xs)} ranks from {act_dir}")
    print("| variant | bytes per value (RS, AG) | MSE / the library's | MSE / bf16 ring model |")
    print("|---|---|---:|---:|")
    for label, rot, rs, ag in CONFIGS:
        print(f"| {label} | {bytes_per_value(rs[0], rs[1]):.4f}, {bytes_per_value(ag[0], ag[1]):.4f} "
              f"| {err[label] / base:.3f} | {err[label] / ring:.2f} |")


if __name__ == "__main__":
    main()
