#!/usr/bin/env python3
"""Are outliers on a side channel worth their bytes? A numpy model of two_shot with the integer
codecs (int8, int6, int5, int4: Q = 127, 31, 15, 7) on real AllReduce operands (equarx-gemma3 eval
--dump-activations), with and without the randomized Hadamard rotation, and with the k largest
|values| of every block (k = 0, 1, 2, 4) sent on a side channel in bf16 with their position in
the block (16 + log2(B) bits each) while the rest is quantized against the reduced absmax.

Each rank's own contribution stays f32, the others' are quantized once, the f32 sum is quantized
once (as two_shot does). Scales: two-level (a bf16 scale per block of 128, a 4-bit multiplier per
8 values; the rotation works on blocks of 16, as the library's), or one f32 scale per block of
64 (the rotation on blocks of 64). Prints, per setting, the bytes per value relative to the bf16
ring's 2 and the pooled squared error over a model of the bf16 ring (inputs rounded to bf16,
every partial sum rounded to bf16): the docs/gemma3.md tables show mean KL following this ratio
(int8 B128 two-level with the rotation: about 3 here, KL 2.8x at TP = 4). Last, the entropy of the
two-level codes given their sub-block's multiplier: what an ideal entropy coder of these codes
would need per value.

    .venv/bin/python bench/outlier_sim.py out/activations/tp4 > bench/results/frontier/outlier_sim.txt
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_formats_sim import hadamard_rotate  # noqa: E402
from two_level_sim import bf16_nearest, one_call, operand_groups  # noqa: E402

CODECS = [("int8", 127.0, 8), ("int6", 31.0, 6), ("int5", 15.0, 5), ("int4", 7.0, 4)]
OUTLIERS = [0, 1, 2, 4]
# label, block, rotation block, two-level
SCHEMES = [("two_level B128", 128, 16, True), ("f32 B64", 64, 64, False)]


def split_outliers(b, k):
    """The k largest |values| of every row of b (kept in bf16) and the rest (outliers zeroed)."""
    if k == 0:
        return np.zeros_like(b), b
    idx = np.argpartition(-np.abs(b), k - 1, axis=1)[:, :k]
    mask = np.zeros(b.shape, bool)
    np.put_along_axis(mask, idx, True, axis=1)
    return np.where(mask, bf16_nearest(b), 0.0).astype(np.float32), np.where(mask, 0.0, b).astype(np.float32)


def quantize(x, q, block, two_level, k, hist=None):
    """x through one encode and decode: block scales (f32, or bf16 + 4-bit multipliers per 8).
    hist (an array of 16 x (2q + 1) counts), when given, gains the two-level codes by multiplier."""
    b = x.reshape(-1, block).astype(np.float32)
    side, rest = split_outliers(b, k)
    a = np.abs(rest).max(axis=1)
    if two_level:
        s = bf16_up((a / q).astype(np.float32))[:, None]
        parts = rest.reshape(b.shape[0], block // 8, 8)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.nan_to_num(np.abs(parts).max(axis=2) / s * (16 / q))
        c = np.clip(np.ceil(t) - 1, 0, 15)
        step = (s * (c + 1) / 16)[:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            codes = np.where(step > 0, np.clip(np.rint(parts / step), -q, q), 0)
        if hist is not None:
            idx = (np.broadcast_to(c[:, :, None], codes.shape) * (2 * q + 1) + codes + q).astype(np.int64)
            hist += np.bincount(idx.reshape(-1), minlength=hist.size).reshape(hist.shape)
        out = (codes * step).reshape(b.shape)
    else:
        s = (a / q)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            codes = np.where(s > 0, np.clip(np.rint(rest / s), -q, q), 0)
        out = codes * s
    return (out + side).reshape(-1).astype(np.float32)


def conditional_entropy(hist):
    """Bits per value of the codes given their sub-block's multiplier, H(code | multiplier)."""
    n = hist.sum()
    p_joint = hist / n
    p_c = hist.sum(axis=1, keepdims=True) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-np.nansum(np.where(hist > 0, p_joint * np.log2(p_joint / p_c), 0.0)))


def bf16_up(s):
    """f32 scales rounded up to bf16 (docs/wire_format.md, "Scale storage")."""
    b = s.view(np.uint32)
    return np.where(b & 0xFFFF, (b + 0x10000) & 0xFFFF0000, b).astype(np.uint32).view(np.float32)


def bytes_per_value(bits, block, two_level, k):
    scale = 2 / block + 0.5 / 8 if two_level else 4 / block
    return bits / 8 + scale + k * (16 + np.log2(block)) / 8 / block


def main():
    act_dir, groups = operand_groups("outliers on a side channel, on dumped operands")
    rng = np.random.default_rng(1)
    keys = [(c, s, rot, k) for c in CODECS for s in SCHEMES for rot in (False, True) for k in OUTLIERS]
    err = {key: 0.0 for key in keys}
    # Code histograms of the two-level rows with the rotation and no outliers, by codec.
    hists = {name: np.zeros((16, 2 * int(q) + 1)) for name, q, _ in CODECS}
    ring = 0.0
    for g in groups.values():
        xs, n, exact, ring_sq = one_call(g)
        ring += ring_sq
        for (name, q, bits), (label, block, rot_block, two_level), rot, k in keys:
            signs = rng.choice(np.array([-1.0, 1.0], np.float32), size=rot_block)
            r = [hadamard_rotate(x, rot_block, signs) for x in xs] if rot else xs
            hist = hists[name] if two_level and rot and k == 0 else None
            total = r[0].copy()  # the owner's own contribution, f32
            for y in r[1:]:
                total = total + quantize(y, q, block, two_level, k, hist)
            out = quantize(total.astype(np.float32), q, block, two_level, k, hist)
            if rot:
                out = hadamard_rotate(out, rot_block, np.ones(rot_block, np.float32)) * np.tile(signs, n // rot_block)
            err[((name, q, bits), (label, block, rot_block, two_level), rot, k)] += float(np.sum((out - exact) ** 2))
    print(f"two_shot, {len(groups)} AllReduce calls of {len(xs)} ranks from {act_dir}")
    print("| codec | scales | rotation | outliers per block | bytes / bf16 ring's | MSE / bf16 ring model |")
    print("|---|---|---|---:|---:|---:|")
    for key in keys:
        (name, q, bits), (label, block, rot_block, two_level), rot, k = key
        print(f"| {name} | {label} | {'hadamard' if rot else 'none'} | {k} | "
              f"{bytes_per_value(bits, block, two_level, k) / 2:.3f} | {err[key] / ring:.2f} |")
    print()
    print("Entropy of the codes given their sub-block's 4-bit multiplier, two_level B128 with the rotation, "
          "no outliers (pooled over every encode), against the bits each code takes on the wire:")
    print()
    print("| codec | bits per code | H(code given multiplier), bits |")
    print("|---|---:|---:|")
    for name, q, bits in CODECS:
        print(f"| {name} | {bits} | {conditional_entropy(hists[name]):.3f} |")


if __name__ == "__main__":
    main()
