#!/usr/bin/env python3
"""Which block-scale formats earn a place on the wire: a numpy model of two_shot int8 (every
contribution quantized once on its own block scales, the f32 sum quantized once), with the
randomized Hadamard rotation, on real AllReduce operands (equarx-gemma3 eval
--dump-activations) and on N(0,1) data scaled like small gradients (1e-7). Scale formats at the
same 1.0625 bytes per value: B64 f32 (the library's default), B32 bf16 (the library's `scale =
bf16`), B32 f16, B16 e8m0 (a power of two, as the OCP MX formats); and B32 e8m0 (fewer bytes).
Every scale is rounded up, so no code overflows. Prints MSE relative to B64 f32 per dataset.

    .venv/bin/python bench/scale_formats_sim.py out/activations/tp4 > bench/results/scale_formats/sim.txt

The library implements f32 and bf16 (docs/wire_format.md); this model is why not f16 or e8m0.
"""
import glob
import os
import re
import sys

import numpy as np

Q = 127.0


def hadamard_rotate(x, block, rng_signs):
    """x: (n,) with n a multiple of block (a power of two); orthonormal rotation per block."""
    y = (x.reshape(-1, block) * rng_signs).copy()
    h = 1
    while h < block:
        y = y.reshape(-1, block // (2 * h), 2, h)
        a, b = y[:, :, 0, :].copy(), y[:, :, 1, :].copy()
        y[:, :, 0, :], y[:, :, 1, :] = a + b, a - b
        h *= 2
    return (y.reshape(-1, block) / np.sqrt(block)).reshape(-1)


def scale_of(a, fmt):
    s = (a / Q).astype(np.float32)
    if fmt == "f32":
        return s
    if fmt == "bf16":
        b = s.view(np.uint32)
        up = np.where(b & 0xFFFF, (b + 0x10000) & 0xFFFF0000, b).astype(np.uint32)
        return up.view(np.float32)
    if fmt == "f16":
        h = s.astype(np.float16)  # nearest, then up one step where it rounded down
        h = np.where(h.astype(np.float32) < s, np.nextafter(h, np.float16(np.inf)), h)
        return h.astype(np.float32)  # overflows to inf above 65504, flushes tiny scales to 0
    if fmt == "e8m0":
        with np.errstate(divide="ignore"):
            e = np.ceil(np.log2(np.where(s > 0, s, 1.0)))
        return np.where(s > 0, np.exp2(e), 0.0).astype(np.float32)
    raise ValueError(fmt)


def quantize(x, block, fmt):
    b = x.reshape(-1, block)
    s = scale_of(np.abs(b).max(axis=1), fmt)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.clip(np.rint(b / s), -Q, Q), 0.0)
    return (q * s).reshape(-1)


def two_shot(contribs, block, fmt, signs):
    rot = [hadamard_rotate(c, block, signs) for c in contribs]
    total = np.sum([quantize(r, block, fmt) for r in rot], axis=0).astype(np.float32)
    out = quantize(total, block, fmt)
    # inverse of the orthonormal rotation: the same butterflies, then the signs
    back = hadamard_rotate(out, block, np.ones(block, np.float32)) * np.tile(signs, len(out) // block)
    return back


CONFIGS = [("B64 f32", 64, "f32"), ("B32 bf16", 32, "bf16"), ("B32 f16", 32, "f16"),
           ("B16 e8m0", 16, "e8m0"), ("B32 e8m0 (1.031 B/value)", 32, "e8m0")]


def datasets(act_dir):
    if act_dir:
        groups = {}
        for path in sorted(glob.glob(os.path.join(act_dir, "*_rank*.npy"))):
            m = re.match(r"(.*)_rank(\d+)\.npy$", os.path.basename(path))
            groups.setdefault(m.group(1), {})[int(m.group(2))] = np.load(path)
        yield "Gemma 3 270M operands (%d calls)" % len(groups), [
            [g[r] for r in sorted(g)] for g in groups.values()]
    rng = np.random.default_rng(1)
    yield "N(0,1) x 1e-7 (small gradients), 4 ranks", [
        [(rng.standard_normal(1 << 16) * 1e-7).astype(np.float32) for _ in range(4)]]


def main():
    act_dir = sys.argv[1] if len(sys.argv) > 1 else None
    rng = np.random.default_rng(7)
    print("two_shot int8 with rotation; MSE relative to B64 f32 (lower is better); 'lost' = "
          "share of blocks whose scale the format cannot hold (overflow or flush to zero)\n")
    for name, calls in datasets(act_dir):
        print(f"## {name}")
        print("| scale format | MSE / B64 f32 | lost blocks |")
        print("|---|---:|---:|")
        base = None
        for label, block, fmt in CONFIGS:
            se = 0.0
            lost = 0
            blocks = 0
            for contribs in calls:
                contribs = [c.astype(np.float32).reshape(-1) for c in contribs]
                n = len(contribs[0]) // 64 * 64
                contribs = [c[:n] for c in contribs]
                exact = np.sum([c.astype(np.float64) for c in contribs], axis=0)
                signs = rng.choice(np.array([-1.0, 1.0], np.float32), size=block)
                got = two_shot(contribs, block, fmt, signs)
                se += float(np.sum((got - exact) ** 2))
                a = np.abs(exact.reshape(-1, block)).max(axis=1)
                s = scale_of(a, fmt)
                lost += int(np.sum(~np.isfinite(s) | ((s == 0) & (a > 0))))
                blocks += len(a)
            base = se if base is None else base
            print(f"| {label} | {se / base:.3f} | {lost / blocks:.1%} |")
        print()


if __name__ == "__main__":
    main()
