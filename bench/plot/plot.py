#!/usr/bin/env python3
"""Plots and markdown tables from bench/netem/run.sh results (rows.jsonl).

    .venv/bin/python bench/plot/plot.py --img-dir docs/img --md out/tables.md RUN/rows.jsonl ...

Every row carries hosts, rate, launch (bf16, f32, mpi_ring, gloo, overlap_*), size_bytes, dtype,
algo, phases, mode, time_us, busbw_gbs (on logical bytes), wire_bytes. Speedups are ratios of
median times at the same size, same H and same rate; the bf16-data ratios come from one launch
(every configuration interleaved per size), the f32 ones against MPI default too, while
MPI-ring and Gloo ran in their own launches right after.

Writes PNGs (busbw vs size per H and rate; speedup vs size per H, one line per link rate)
into --img-dir and a markdown fragment (targets, crossover, per-size tables) to --md.
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

# (key, label) in display order. key = (dtype, algo, phases)
PEERS = [
    (("bf16", "ring", "-"), "equarx ring bf16 (unquantized)"),
    (("f32", "ring", "-"), "equarx ring f32 (unquantized)"),
    (("f32", "mpi", "-"), "MPI_Allreduce f32 (Open MPI default)"),
    (("f32", "mpi_ring", "-"), "MPI_Allreduce f32 (Open MPI ring)"),
    (("f32", "gloo_ring", "-"), "Gloo ring f32"),
]
QUANT_ALGOS = ["full_bidir", "full", "semi", "two_shot"]
QUANT_PHASES = ["rs+ag", "rs", "ag"]

TARGETS = [
    # (label, numerator key (slow), denominator key (fast), target)
    ("int8 full_bidir rs+ag vs bf16 ring", ("bf16", "ring", "-"), ("bf16", "full_bidir", "rs+ag"), 1.85),
    ("int8 semi rs+ag vs bf16 ring", ("bf16", "ring", "-"), ("bf16", "semi", "rs+ag"), 1.7),
    ("int8 full rs+ag vs bf16 ring (for reference)", ("bf16", "ring", "-"), ("bf16", "full", "rs+ag"), None),
    # Issue 6: two_shot within 5% of full_bidir's speed on a switched network (ratio >= 0.95).
    ("int8 two_shot rs+ag vs full_bidir rs+ag (same data)", ("bf16", "full_bidir", "rs+ag"), ("bf16", "two_shot", "rs+ag"), 0.95),
    ("int8 full_bidir rs+ag (f32 data) vs MPI_Allreduce default", ("f32", "mpi", "-"), ("f32", "full_bidir", "rs+ag"), 3.6),
    ("int8 full_bidir rs+ag (f32 data) vs MPI_Allreduce ring", ("f32", "mpi_ring", "-"), ("f32", "full_bidir", "rs+ag"), 3.6),
    ("int8 full_bidir rs+ag (f32 data) vs Gloo ring", ("f32", "gloo_ring", "-"), ("f32", "full_bidir", "rs+ag"), 3.6),
]


def label(key):
    for k, name in PEERS:
        if k == key:
            return name
    dt, algo, ph = key
    return f"EQuARX int8 {algo} {ph} ({dt} data)"


def human(n):
    for unit, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f}{unit}"
    return str(n)


def rate_gbs(rate):
    """Line rate in GB/s for a tc rate string, None when unshaped."""
    if rate == "none":
        return None
    num = float("".join(c for c in rate if c.isdigit() or c == "."))
    unit = rate.lstrip("0123456789.").lower()
    mult = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}.get(unit, 1.0)
    return num * mult / 8 / 1e9


def rate_name(rate):
    if rate == "none":
        return "unshaped"
    g = rate_gbs(rate) * 8
    return f"{g:g} Gbit/s"


def rate_order(rate):
    g = rate_gbs(rate)
    return math.inf if g is None else g


def load(paths):
    rows, headers = [], []
    for p in paths:
        checked = True
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if r.get("type") == "header":
                    headers.append(r)
                    # equarx-perf -c 0 measured no error: show none rather than zeros.
                    checked = " -c 0 " not in r.get("command", "") + " "
                    continue
                if not checked and r.get("transport") != "gloo-tcp":
                    r["rel_rms_err"] = None
                rows.append(r)
    return rows, headers


def index(rows):
    """t[(H, rate)][key][size] = time_us (normal mode only); also busbw and wire."""
    t = defaultdict(lambda: defaultdict(dict))
    bw = defaultdict(lambda: defaultdict(dict))
    wire = defaultdict(lambda: defaultdict(dict))
    err = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if r.get("mode", "normal") != "normal" or r["launch"].startswith("overlap") or r["launch"] in ("formats", "auto"):
            continue
        key = (r["dtype"], r["algo"], r["phases"])
        hr = (r["hosts"], r["rate"])
        t[hr][key][r["size_bytes"]] = r["time_us"]
        bw[hr][key][r["size_bytes"]] = r["busbw_gbs"]
        wire[hr][key][r["size_bytes"]] = r["wire_bytes"]
        err[hr][key][r["size_bytes"]] = r["rel_rms_err"]
    return t, bw, wire, err


def speedup(t, slow, fast, size):
    a, b = t.get(slow, {}).get(size), t.get(fast, {}).get(size)
    return a / b if a and b else None


def crossover(t, slow, fast):
    """Smallest size s such that fast beats slow at s and every larger measured size."""
    sizes = sorted(set(t.get(slow, {})) & set(t.get(fast, {})))
    if not sizes:
        return None, sizes
    cross = None
    for s in reversed(sizes):
        if t[fast][s] < t[slow][s]:
            cross = s
        else:
            break
    return cross, sizes


def fmt(x, nd=2):
    return "–" if x is None else f"{x:.{nd}f}"


def plots(t, bw, img_dir, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    styles = {
        ("bf16", "ring", "-"): dict(color="black", ls="-", marker="o"),
        ("f32", "ring", "-"): dict(color="gray", ls="-", marker="o"),
        ("f32", "mpi", "-"): dict(color="tab:red", ls="--", marker="s"),
        ("f32", "mpi_ring", "-"): dict(color="tab:orange", ls="--", marker="s"),
        ("f32", "gloo_ring", "-"): dict(color="tab:brown", ls="--", marker="^"),
        ("bf16", "full_bidir", "rs+ag"): dict(color="tab:blue", ls="-", marker="D"),
        ("bf16", "full", "rs+ag"): dict(color="tab:cyan", ls="-", marker="v"),
        ("bf16", "semi", "rs+ag"): dict(color="tab:green", ls="-", marker="P"),
        ("f32", "full_bidir", "rs+ag"): dict(color="tab:purple", ls=":", marker="D"),
        ("f32", "semi", "rs+ag"): dict(color="tab:olive", ls=":", marker="P"),
    }
    for (h, rate) in sorted(bw, key=lambda x: (x[0], rate_order(x[1]))):
        fig, ax = plt.subplots(figsize=(8, 5))
        for key, st in styles.items():
            d = bw[(h, rate)].get(key)
            if not d:
                continue
            xs = sorted(d)
            ax.plot(xs, [d[x] for x in xs], label=label(key), **st)
        line = rate_gbs(rate)
        if line:
            ax.axhline(line, color="k", lw=0.8, ls=":", label=f"line rate {line:.3f} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s, logical bytes)")
        ax.set_title(f"AllReduce busbw, H = {h} hosts, links {rate_name(rate)}")
        xt = sorted({x for d in bw[(h, rate)].values() for x in d})
        ax.set_xticks(xt)
        ax.set_xticklabels([human(x) for x in xt], rotation=45, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        name = f"{prefix}busbw_H{h}_{rate}.png"
        fig.savefig(os.path.join(img_dir, name), dpi=110)
        plt.close(fig)
        files.append(((h, rate, "busbw"), name))

    for h in sorted({h for h, _ in t}):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
        rates = sorted({r for hh, r in t if hh == h}, key=rate_order)
        colors = ["tab:blue", "tab:green", "tab:red", "tab:purple", "tab:orange"]
        for i, rate in enumerate(rates):
            tt = t[(h, rate)]
            c = colors[i % len(colors)]
            for ax, slow, fast, ls in (
                (axes[0], ("bf16", "ring", "-"), ("bf16", "full_bidir", "rs+ag"), "-"),
                (axes[0], ("bf16", "ring", "-"), ("bf16", "semi", "rs+ag"), "--"),
                (axes[0], ("bf16", "ring", "-"), ("bf16", "full", "rs+ag"), ":"),
                (axes[1], ("f32", "mpi_ring", "-"), ("f32", "full_bidir", "rs+ag"), "-"),
                (axes[1], ("f32", "gloo_ring", "-"), ("f32", "full_bidir", "rs+ag"), "--"),
            ):
                xs = sorted(set(tt.get(slow, {})) & set(tt.get(fast, {})))
                if not xs:
                    continue
                ys = [tt[slow][x] / tt[fast][x] for x in xs]
                who = f"{fast[1]} {fast[2]} vs {label(slow).split(' (')[0] if slow[1] != 'ring' else 'bf16 ring'}"
                if slow[1] in ("mpi_ring", "gloo_ring"):
                    who = f"{fast[1]} vs {'MPI ring' if slow[1] == 'mpi_ring' else 'Gloo ring'}"
                ax.plot(xs, ys, color=c, ls=ls, marker="o", ms=3, label=f"{rate_name(rate)}: {who}")
        for ax, title, tgt in ((axes[0], "bf16 data: EQuARX int8 vs our bf16 ring", 1.85),
                               (axes[1], "f32 data: EQuARX int8 vs MPI / Gloo f32", 3.6)):
            ax.axhline(1.0, color="k", lw=0.8)
            ax.axhline(tgt, color="k", lw=0.8, ls=":", label=f"target {tgt}x")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("speedup (time ratio)")
            ax.set_title(f"H = {h}: {title}", fontsize=10)
            xt = sorted({x for (hh, _), d in t.items() if hh == h for k in d.values() for x in k})
            if xt:
                ax.set_xticks(xt)
                ax.set_xticklabels([human(x) for x in xt], rotation=45, fontsize=7)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"{prefix}speedup_H{h}.png"
        fig.savefig(os.path.join(img_dir, name), dpi=110)
        plt.close(fig)
        files.append(((h, None, "speedup"), name))
    return files


def markdown(t, bw, wire, err, rows, img_files, img_rel, target_size):
    out = []
    w = out.append
    hrs = sorted(t, key=lambda x: (x[0], rate_order(x[1])))

    # Targets.
    w("### Targets (issues 4 and 6) at %s\n" % human(target_size))
    w("Speedup = median time of the slower peer / median time of EQuARX, same size, same run.\n")
    w("| H | links | comparison | target | measured | verdict |")
    w("|---|---|---|---:|---:|---|")
    for (h, rate) in hrs:
        for name, slow, fast, tgt in TARGETS:
            s = speedup(t[(h, rate)], slow, fast, target_size)
            if s is None:
                continue
            if tgt is None:
                w(f"| {h} | {rate_name(rate)} | {name} | – | {s:.2f}x | (no target) |")
                continue
            if rate == "none" or rate_order(rate) > 0.2:
                verdict = "(not a target: memory/CPU-bound)" if rate == "none" else "(not a target rate)"
            else:
                verdict = "met" if s >= tgt else f"**missed** by {100 * (1 - s / tgt):.0f}%"
            w(f"| {h} | {rate_name(rate)} | {name} | {tgt:.2f}x | {s:.2f}x | {verdict} |")
    w("")

    # Crossover.
    w("### Crossover: the size below which quantization does not pay\n")
    w("Smallest measured size from which the quantized AllReduce is faster than the unquantized "
      "one at that size and every larger size (sizes are powers of two; \"< min\" = faster at "
      "every size measured, \"none\" = never faster up to the largest size).\n")
    pairs = [
        ("full_bidir rs+ag vs bf16 ring", ("bf16", "ring", "-"), ("bf16", "full_bidir", "rs+ag")),
        ("semi rs+ag vs bf16 ring", ("bf16", "ring", "-"), ("bf16", "semi", "rs+ag")),
        ("full rs+ag vs bf16 ring", ("bf16", "ring", "-"), ("bf16", "full", "rs+ag")),
        ("full_bidir rs+ag vs f32 ring (f32 data)", ("f32", "ring", "-"), ("f32", "full_bidir", "rs+ag")),
    ]
    w("| H | links | " + " | ".join(p[0] for p in pairs) + " |")
    w("|---|---|" + "---|" * len(pairs))
    for (h, rate) in hrs:
        cells = []
        for _, slow, fast in pairs:
            c, sizes = crossover(t[(h, rate)], slow, fast)
            if not sizes:
                cells.append("–")
            elif c is None:
                cells.append("none")
            elif c == sizes[0]:
                cells.append(f"< {human(c)}")
            else:
                cells.append(human(c))
        w(f"| {h} | {rate_name(rate)} | " + " | ".join(cells) + " |")
    w("")

    # Per (H, rate): the target-size table and the sweep.
    for (h, rate) in hrs:
        tt, bb, ww, ee = t[(h, rate)], bw[(h, rate)], wire[(h, rate)], err[(h, rate)]
        line = rate_gbs(rate)
        w(f"### H = {h}, links {rate_name(rate)}" + (f" (line rate {line:.4f} GB/s)" if line else "") + "\n")
        for key, name in img_files:
            if key == (h, rate, "busbw"):
                w(f"![busbw H={h} {rate}]({img_rel}/{name})\n")
        sizes_all = sorted({s for d in tt.values() for s in d})
        ts = target_size if target_size in sizes_all else (sizes_all[-1] if sizes_all else None)
        if ts is None:
            continue
        w(f"At {human(ts)}:\n")
        w("| configuration | time (ms) | busbw (GB/s) | wire MiB/rank | rel. RMS err | vs bf16 ring | vs f32 ring | vs MPI ring | vs Gloo |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        keys = [k for k, _ in PEERS] + [(dt, a, p) for dt in ("bf16", "f32") for a in QUANT_ALGOS for p in QUANT_PHASES]
        for key in keys:
            if ts not in tt.get(key, {}):
                continue
            vs = []
            for ref in (("bf16", "ring", "-"), ("f32", "ring", "-"), ("f32", "mpi_ring", "-"), ("f32", "gloo_ring", "-")):
                # Each configuration is compared with peers on the same data type only.
                s = speedup(tt, ref, key, ts) if ref[0] == key[0] else None
                vs.append("–" if s is None else f"{s:.2f}x")
            wb = ww[key].get(ts)
            wtxt = f"{wb / 2**20:.1f}" if wb else "–"
            e = ee[key].get(ts)
            w(f"| {label(key)} | {tt[key][ts] / 1e3:.1f} | {bb[key][ts]:.4f} | {wtxt} | "
              f"{'–' if e is None else f'{e:.2g}'} | " + " | ".join(vs) + " |")
        w("")
        # Sweep: busbw of rs+ag configurations and the peers by size.
        cols = [k for k, _ in PEERS] + [("bf16", a, "rs+ag") for a in QUANT_ALGOS] + [("f32", a, "rs+ag") for a in QUANT_ALGOS]
        cols = [c for c in cols if tt.get(c)]
        short = {("bf16", "ring", "-"): "ring bf16", ("f32", "ring", "-"): "ring f32",
                 ("f32", "mpi", "-"): "MPI dflt", ("f32", "mpi_ring", "-"): "MPI ring",
                 ("f32", "gloo_ring", "-"): "Gloo"}
        def sh(c):
            return short.get(c) or f"{c[1]} {c[0]}"
        w("busbw (GB/s) by size, rs+ag for the quantized ones:\n")
        w("| size | " + " | ".join(sh(c) for c in cols) + " |")
        w("|---:|" + "---:|" * len(cols))
        for s in sizes_all:
            w(f"| {human(s)} | " + " | ".join(fmt(bb[c].get(s), 4) for c in cols) + " |")
        w("")
    for key, name in img_files:
        if key[2] == "speedup":
            w(f"![speedup H={key[0]}]({img_rel}/{name})\n")
    return "\n".join(out)


def overlap_md(rows):
    """Overlap rows: full vs wire-only vs codec-only per (H, rate, size, algo, phases)."""
    g = defaultdict(dict)
    for r in rows:
        if not r["launch"].startswith("overlap"):
            continue
        g[(r["hosts"], r["rate"], r["size_bytes"], r["dtype"], r["algo"], r["phases"].split("/")[0])][r["mode"]] = r["time_us"]
    out = ["| H | links | size | dtype | algorithm | full (ms) | wire only (ms) | codec only (ms) | max(wire, codec) / full |",
           "|---|---|---:|---|---|---:|---:|---:|---:|"]
    for k in sorted(g, key=lambda k: (k[0], rate_order(k[1]), k[2], k[4])):
        d = g[k]
        if not all(m in d for m in ("normal", "wire", "codec")):
            continue
        full, wire, codec = d["normal"], d["wire"], d["codec"]
        out.append(f"| {k[0]} | {rate_name(k[1])} | {human(k[2])} | {k[3]} | {k[4]} {k[5]} | {full / 1e3:.1f} | "
                   f"{wire / 1e3:.1f} | {codec / 1e3:.1f} | {100 * max(wire, codec) / full:.0f}% |")
    return "\n".join(out) if len(out) > 2 else ""


def formats_md(rows):
    """Formats rows (one launch: the bf16 ring and every codec x algorithm, interleaved per size):
    time, speedup over the bf16 ring of the same launch, wire bytes and relative RMS error."""
    g = defaultdict(dict)
    for r in rows:
        if r["launch"] != "formats" or r.get("mode", "normal") != "normal":
            continue
        codec = r["codec"] if r["algo"] != "ring" else "-"
        g[(r["hosts"], r["rate"], r["size_bytes"])][(r["algo"], codec)] = r
    out = ["| H | links | size | algorithm | codec | time (ms) | vs bf16 ring | wire MB/rank | rel RMS error |",
           "|---|---|---:|---|---|---:|---:|---:|---:|"]
    for k in sorted(g, key=lambda k: (k[0], rate_order(k[1]), k[2])):
        d = g[k]
        ring = d.get(("ring", "-"))
        for (algo, codec), r in sorted(d.items(), key=lambda kv: (kv[0][0] != "ring", kv[0][0], kv[0][1])):
            sp = f"{ring['time_us'] / r['time_us']:.2f}x" if ring else "-"
            e = r.get("rel_rms_err")
            out.append(f"| {k[0]} | {rate_name(k[1])} | {human(k[2])} | {algo} | {codec} | {r['time_us'] / 1e3:.1f} | "
                       f"{sp} | {r['wire_bytes'] / 1e6:.2f} | {'-' if e is None else f'{e:.2e}'} |")
    return "\n".join(out) if len(out) > 2 else ""


def auto_md(rows):
    """Auto rows (one launch: ring, the quantized algorithms and algorithm=auto on a table that
    equarx-tune measured just before): per size, auto against the fastest configuration."""
    g = defaultdict(dict)
    for r in rows:
        if r["launch"] == "auto" and r.get("mode", "normal") == "normal":
            g[(r["hosts"], r["rate"], r["size_bytes"])][r["algo"]] = r
    out = ["| H | links | size | ring (ms) | fastest fixed (ms) | auto (ms) | auto sent | auto / fastest | auto / ring |",
           "|---|---|---:|---:|---|---:|---|---:|---:|"]
    for k in sorted(g, key=lambda k: (k[0], rate_order(k[1]), k[2])):
        d = g[k]
        if "auto" not in d or "ring" not in d:
            continue
        fixed = {a: r for a, r in d.items() if a != "auto"}
        best = min(fixed, key=lambda a: fixed[a]["time_us"])
        au, ring = d["auto"], d["ring"]
        sent = "unquantized" if au["wire_bytes"] == ring["wire_bytes"] else "quantized"
        out.append(f"| {k[0]} | {rate_name(k[1])} | {human(k[2])} | {ring['time_us'] / 1e3:.2f} | "
                   f"{best} {fixed[best]['time_us'] / 1e3:.2f} | {au['time_us'] / 1e3:.2f} | {sent} | "
                   f"{au['time_us'] / fixed[best]['time_us']:.2f} | {au['time_us'] / ring['time_us']:.2f} |")
    return "\n".join(out) if len(out) > 2 else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--img-dir", default="docs/img")
    ap.add_argument("--img-rel", default="img", help="image path as the markdown file sees it")
    ap.add_argument("--md", default="-", help="markdown output file (default stdout)")
    ap.add_argument("--overlap-md", default=None, help="write the overlap table here")
    ap.add_argument("--formats-md", default=None, help="write the codec (formats) table here")
    ap.add_argument("--auto-md", default=None, help="write the algorithm=auto table here")
    ap.add_argument("--target-size", default=64 << 20, type=int)
    ap.add_argument("--prefix", default="netem_")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    rows, _ = load(a.jsonl)
    t, bw, wire, err = index(rows)
    files = []
    if not a.no_plots and t:
        os.makedirs(a.img_dir, exist_ok=True)
        files = plots(t, bw, a.img_dir, a.prefix)
    md = markdown(t, bw, wire, err, rows, files, a.img_rel, a.target_size)
    if a.md == "-":
        sys.stdout.write(md + "\n")
    else:
        with open(a.md, "w") as f:
            f.write(md + "\n")
    if a.overlap_md:
        with open(a.overlap_md, "w") as f:
            f.write(overlap_md(rows) + "\n")
    if a.formats_md:
        with open(a.formats_md, "w") as f:
            f.write(formats_md(rows) + "\n")
    if a.auto_md:
        with open(a.auto_md, "w") as f:
            f.write(auto_md(rows) + "\n")


if __name__ == "__main__":
    main()
