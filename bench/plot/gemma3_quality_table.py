#!/usr/bin/env python3
"""Markdown tables of bench/gemma3_quality.sh's raw JSON (one table per TP degree), with the
targets checked against the unquantized bf16 ring of the same positions, and the bytes-quality
frontier: per TP the rows no other row beats in both wire bytes and mean KL (the Pareto front),
as a table and (--png) a plot of mean KL over the bf16 ring's against wire bytes.

    python3 bench/plot/gemma3_quality_table.py bench/results/gemma3_quality [--splice docs/gemma3.md] \
        [--png docs/img/gemma3_frontier.png]

--splice puts the tables between the file's generated:gemma3_quality markers instead of printing
them; --png needs matplotlib (.venv-torch/bin/python has it).
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, option, split_option, split_splice  # noqa: E402


def load(res):
    """Rows per TP in file order (b32, b64, b128, b64tl, packed); a row measured again in a later file (the
    baselines, which are deterministic) is kept once, and must agree with the first."""
    by_tp = {}
    for path in sorted(glob.glob(os.path.join(res, "tp*_*.json")), key=run_order):
        with open(path) as f:
            doc = json.load(f)
        rows = by_tp.setdefault(doc["tp"], [])
        seen = {r["config"]: r for r in rows}
        for r in doc["results"]:
            if r["config"] in seen:
                assert seen[r["config"]]["kl_mean"] == r["kl_mean"], (path, r["config"])
                continue
            rows.append(r)
    return by_tp


def run_order(path):
    m = re.search(r"tp(\d+)_(\w+)\.json$", path)
    return (int(m.group(1)), {"b32": 0, "b64": 1, "b128": 2, "b64tl": 3, "packed": 4}.get(m.group(2), 5))


def is_ring(r, dtype):
    return r["algo"] == "ring" and r["dtype"] == dtype


def target_table(title, r, bf16, top1_pts, dppl_pct, kl_x):
    """The targets of one row against the bf16 ring: top-1 within top1_pts points, |Δppl| within
    dppl_pct %, and (kl_x not None) mean KL within kl_x times the ring's."""
    d_top1 = 100 * (r["top1"] - bf16["top1"])
    dppl = (r["ppl"] / r["ppl_exact"] - 1) * 100
    kl = r["kl_mean"] / bf16["kl_mean"]
    checks = [(f"top-1 within {top1_pts:g} points of the bf16 ring ({100 * bf16['top1']:.2f}%)",
               f"{d_top1:+.2f} points", d_top1 >= -top1_pts),
              (f"|Δppl| ≤ {dppl_pct:g}%", f"{dppl:+.3f}%", abs(dppl) <= dppl_pct)]
    if kl_x is not None:
        checks.append((f"mean KL ≤ {kl_x:g}x the bf16 ring's", f"{kl:.1f}x", kl <= kl_x))
    out = [title + "\n", "| target | measured | met |", "|---|---|---|"]
    out += [f"| {name} | {got} | {'yes' if ok else 'no'} |" for name, got, ok in checks]
    return out + [""]


def front(rows):
    """The quantized rows no other quantized row beats in both wire bytes and mean KL, by bytes."""
    q = sorted((r for r in rows if r["algo"] != "ring"), key=lambda r: (r["wire_vs_bf16_ring"], r["kl_mean"]))
    out = []
    for r in q:
        if not out or r["kl_mean"] < out[-1]["kl_mean"]:
            out.append(r)
    return out


def plot(by_tp, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tps = sorted(by_tp)
    fig, axes = plt.subplots(1, len(tps), figsize=(5.5 * len(tps), 4.8), squeeze=False)
    for ax, tp in zip(axes[0], tps):
        rows = by_tp[tp]
        bf16 = next(r for r in rows if is_ring(r, "bf16"))
        quantized = [r for r in rows if r["algo"] != "ring"]
        for codec in dict.fromkeys(option(r, "codec") for r in quantized):
            pts = [r for r in quantized if option(r, "codec") == codec]
            ax.scatter([r["wire_vs_bf16_ring"] for r in pts], [r["kl_mean"] / bf16["kl_mean"] for r in pts],
                       s=14, label=codec)
        f = front(rows)
        ax.plot([r["wire_vs_bf16_ring"] for r in f], [r["kl_mean"] / bf16["kl_mean"] for r in f],
                "k-", lw=1, label="Pareto front")
        ax.axhline(3.0, color="grey", ls=":", lw=1)
        ax.set_yscale("log")
        ax.set_xlabel("wire bytes / bf16 ring's")
        ax.set_ylabel("mean KL / bf16 ring's")
        ax.set_title(f"Gemma 3 270M, TP = {tp}")
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    args, splice = split_splice(sys.argv[1:])
    args, png = split_option(args, "--png", "a file")
    if len(args) > 1 or any(a.startswith("-") for a in args):
        sys.exit("usage: gemma3_quality_table.py [RESULTS_DIR] [--splice FILE] [--png FILE]")
    res = args[0] if args else "bench/results/gemma3_quality"
    by_tp = load(res)
    out = []
    for tp in sorted(by_tp):
        rows = by_tp[tp]
        bf16 = next(r for r in rows if is_ring(r, "bf16"))
        pos = bf16["positions"]
        out.append(f"### TP = {tp} ({pos} predicted positions per row)\n")
        out.append("| config | ppl | Δppl % | top-1 % | mean KL | KL / bf16 ring | wire / bf16 ring | ranks agree |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---|")
        best = None
        for r in rows:
            dppl = (r["ppl"] / r["ppl_exact"] - 1) * 100
            kl_ratio = r["kl_mean"] / bf16["kl_mean"]
            out.append(f"| {r['config']} | {r['ppl']:.4f} | {dppl:+.3f} | {100 * r['top1']:.2f} | "
                       f"{r['kl_mean']:.2e} | {kl_ratio:.1f}x | {r['wire_vs_bf16_ring']:.3f} | "
                       f"{'yes' if r['ranks_agree'] else 'NO'} |")
            if r["algo"] != "ring" and "int8" in r["config"] and r["wire_vs_bf16_ring"] <= 0.55:
                if best is None or r["kl_mean"] < best["kl_mean"]:
                    best = r
        out.append("")
        if best:
            out += target_table(
                f"Best int8 schedule with ≤ 0.55x the bf16 ring's wire bytes, by mean KL: "
                f"**{best['config']}** (wire {best['wire_vs_bf16_ring']:.3f}x).", best, bf16, 0.3, 0.2, 3.0)
        # The frontier's byte budgets below int8's (issue targets), among every quantized row.
        for budget, top1_pts, dppl_pct, kl_x in ((0.42, 0.3, 0.2, 3.0), (0.32, 1.0, 1.0, None)):
            pick = [r for r in rows if r["algo"] != "ring" and r["wire_vs_bf16_ring"] <= budget]
            if not pick:
                continue
            r = min(pick, key=lambda r: r["kl_mean"])
            out += target_table(f"Best row with ≤ {budget}x the bf16 ring's wire bytes, by mean KL: "
                                f"**{r['config']}** (wire {r['wire_vs_bf16_ring']:.3f}x).",
                                r, bf16, top1_pts, dppl_pct, kl_x)
        out.append(f"The bytes–quality front at TP = {tp} (rows no other row beats in both wire bytes "
                   f"and mean KL):\n")
        out.append("| wire / bf16 ring | config | mean KL / bf16 ring | top-1 % | Δppl % |")
        out.append("|---:|---|---:|---:|---:|")
        for r in front(rows):
            out.append(f"| {r['wire_vs_bf16_ring']:.3f} | {r['config']} | {r['kl_mean'] / bf16['kl_mean']:.1f}x "
                       f"| {100 * r['top1']:.2f} | {(r['ppl'] / r['ppl_exact'] - 1) * 100:+.3f} |")
        out.append("")
    emit("\n".join(out).rstrip(), splice, "gemma3_quality")
    if png:
        plot(by_tp, png)


if __name__ == "__main__":
    main()
