#!/usr/bin/env python3
"""Markdown tables of the codec speed scripts' raw output, in three modes:
  scales    bench/scale_speed.sh (bench/results/scale_formats/): the codec kernels by block-scale
            format on every SIMD target, in-process calls by format, 1 Gbit/s calls (B128 f32 vs
            two-level) when the netem run is there;
  rotation  bench/rotation_speed.sh (bench/results/rotation/): the kernels beside the rotation,
            in-process calls with rotation none vs hadamard, 1 Gbit/s calls when the netem run
            is there;
  fused     bench/fused_speed.sh (bench/results/fused_kernel/): the int8 kernels beside memcpy
            on L2-resident data, each as a share of memcpy in the same run, on every SIMD
            target, and the same of an earlier build (before/) where the run made one;
  packed    bench/packed_speed.sh (bench/results/packed_speed/): the integer codecs' kernels
            (int8, int6, int5, int4) beside memcpy on every SIMD target, and 1 Gbit/s calls by
            codec against the bf16 ring, with the speedup the byte ratio predicts;
  default   bench/default_point.sh (bench/results/default_point/): 1 Gbit/s two_shot calls at
            each block and scale format, their time over the B64 f32 point's.
With --splice FILE it replaces the text between <!-- generated:scale_speed:begin --> and
<!-- generated:scale_speed:end --> (rotation: rotation_speed, fused: fused_speed, packed:
packed_speed, default: default_point) in FILE.

    python3 bench/plot/codec_speed_table.py scales|rotation|fused|packed|default [RESULTS_DIR] [--splice docs/performance.md]
"""
import glob
import json
import os
import re
import statistics
import sys

SCALE_KERNELS = [  # (label, benchmark name without the size)
    ("memcpy", "BM_Memcpy"),
    ("Encode, f32 scales", "BM_Int8Encode<128, F32>"),
    ("Encode, bf16 scales", "BM_Int8Encode<128, F32, SBF16>"),
    ("Encode, two-level", "BM_Int8Encode<128, F32, S2L>"),
    ("Decode, f32 scales", "BM_Int8Decode<128>"),
    ("Decode, two-level", "BM_Int8Decode<128, S2L>"),
    ("DecodeAccumulateEncode, f32 scales", "BM_Int8DecodeAccumulateEncode<128, F32>"),
    ("DecodeAccumulateEncode, bf16 scales", "BM_Int8DecodeAccumulateEncode<128, F32, SBF16>"),
    ("DecodeAccumulateEncode, two-level", "BM_Int8DecodeAccumulateEncode<128, F32, S2L>"),
    ("RotateForward over 128 (bf16 in)", "BM_RotateForward<128, BF16>"),
    ("RotateForward over 16 (bf16 in)", "BM_RotateForward<16, BF16>"),
    ("RotateInverse over 128 (bf16 out)", "BM_RotateInverse<128, BF16>"),
    ("RotateInverse over 16 (bf16 out)", "BM_RotateInverse<16, BF16>"),
]
ROTATION_KERNELS = [
    ("memcpy", "BM_Memcpy"),
    ("int8 Encode (f32)", "BM_Int8Encode<64, F32>"),
    ("int8 DecodeAccumulateEncode (f32)", "BM_Int8DecodeAccumulateEncode<64, F32>"),
    ("int8 DecodeAccumulateEncode (bf16)", "BM_Int8DecodeAccumulateEncode<64, BF16>"),
    ("RotateForward (f32 → f32)", "BM_RotateForward<64, F32>"),
    ("RotateForward (bf16 → f32)", "BM_RotateForward<64, BF16>"),
    ("RotateInverse (f32 → f32)", "BM_RotateInverse<64, F32>"),
    ("RotateInverse (f32 → bf16)", "BM_RotateInverse<64, BF16>"),
]
FUSED_KERNELS = [
    ("memcpy", "BM_Memcpy"),
    ("Encode B64 (f32)", "BM_Int8Encode<64, F32>"),
    ("Encode B128 (f32)", "BM_Int8Encode<128, F32>"),
    ("DecodeAccumulateEncode B64 (f32)", "BM_Int8DecodeAccumulateEncode<64, F32>"),
    ("DecodeAccumulateEncode B128 (f32)", "BM_Int8DecodeAccumulateEncode<128, F32>"),
    ("DecodeAccumulateEncode B64 (bf16)", "BM_Int8DecodeAccumulateEncode<64, BF16>"),
    ("DecodeAccumulateEncode B128 (bf16)", "BM_Int8DecodeAccumulateEncode<128, BF16>"),
]
PACKED_KERNELS = [("memcpy", "BM_Memcpy")] + [
    (f"{codec} {label}", f"BM_Block{kernel}<{fmt}, RNE, false>")
    for kernel, label in (("Encode", "Encode"), ("DecodeAccumulateEncode", "DecodeAccumulateEncode"))
    for codec, fmt in (("int8", "I8"), ("int6", "I6"), ("int5", "I5"), ("int4", "I4"))]
TARGET_ORDER = ["AVX3", "AVX2", "SSE4"]
PLOT = "bench/plot/codec_speed_table.py"


def option(row, key):
    m = re.search(rf"(?:^|,){key}=([^,]*)", row.get("options", ""))
    return m.group(1) if m else None


def medians(res):
    """({(target, benchmark run name): GB/s median}, the targets in TARGET_ORDER) of
    res/codec_<TARGET>.json."""
    gbs = {}
    paths = glob.glob(os.path.join(res, "codec_*.json"))
    targets = sorted((re.search(r"codec_(\w+)\.json$", p).group(1) for p in paths),
                     key=lambda t: TARGET_ORDER.index(t) if t in TARGET_ORDER else 99)
    for t in targets:
        with open(os.path.join(res, f"codec_{t}.json")) as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("aggregate_name") == "median":
                    gbs[(t, b["run_name"])] = b["bytes_per_second"] / 1e9
    return gbs, targets


def fused_kernels(res):
    """Per target (and per build, where res/before/ holds an earlier build's run): GB/s at
    16 Ki / 64 Ki elements, each kernel also as a share of the same run's memcpy; then the
    fused kernel's smallest share per target and build."""
    runs = [("", res)]
    if os.path.isdir(os.path.join(res, "before")):
        runs = [("before", os.path.join(res, "before")), ("after", res)]
    data = [(label, *medians(path)) for label, path in runs]
    targets = data[-1][2]
    cols = [(t, label, gbs) for t in targets for label, gbs, _ in data]
    out = ["| kernel, 64 KiB / 256 KiB of f32 input | " +
           " | ".join(f"{t} {label}".strip() for t, label, _ in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    sizes = (16384, 65536)
    def cell(gbs, t, name):
        vals = [gbs.get((t, f"{name}/{n}")) for n in sizes]
        mem = [gbs.get((t, f"BM_Memcpy/{n}")) for n in sizes]
        if None in vals or None in mem:
            return "-"
        if name == "BM_Memcpy":
            return " / ".join(f"{v:.1f}" for v in vals)
        return " / ".join(f"{v:.1f} ({100 * v / m:.0f}%)" for v, m in zip(vals, mem))
    for label, name in FUSED_KERNELS:
        out.append(f"| {label} | " + " | ".join(cell(g, t, name) for t, _, g in cols) + " |")
    worst = []
    for t, label, gbs in cols:
        shares = [gbs[(t, f"{name}/{n}")] / gbs[(t, f"BM_Memcpy/{n}")]
                  for _, name in FUSED_KERNELS if "DecodeAccumulateEncode" in name and "F32" in name
                  for n in sizes if (t, f"{name}/{n}") in gbs and (t, f"BM_Memcpy/{n}") in gbs]
        if shares:
            worst.append(f"{t} {label}".strip() + f" {100 * min(shares):.0f}%")
    out += ["", "Smallest share of memcpy of the fused kernel with f32 local data (B64 and B128, "
            "both sizes): " + ", ".join(worst) + "."]
    return out


def kernels(res, table):
    gbs, targets = medians(res)
    head = "kernel (B = 64)" if table is ROTATION_KERNELS else "kernel (B = 128 unless named)"
    out = [f"| {head} | " + " | ".join(targets) + " |",
           "|---|" + "---:|" * len(targets)]
    for label, name in table:
        cells = []
        for t in targets:
            small, big = gbs.get((t, f"{name}/16384")), gbs.get((t, f"{name}/16777216"))
            cells.append(f"{small:.1f} / {big:.1f}" if small and big else "-")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def in_process(res, columns, key):
    """Times of the in-process calls per algorithm, one column per (label, match) of `columns`,
    `key(row)` giving the row's match; the last column is the second over the first."""
    rows = [json.loads(l) for l in open(os.path.join(res, "perf_n8_64m.jsonl"))]
    rows = [r for r in rows if r.get("type") != "header"]
    t = {(r["algo"], key(r)): r["time_us"] / 1e3 for r in rows}
    algos = list(dict.fromkeys(r["algo"] for r in rows))
    (l0, m0), (l1, m1) = columns[0], columns[-1]
    out = ["| algorithm | " + " | ".join(l for l, _ in columns) + f" | {l1} / {l0} |",
           "|---|" + "---:|" * (len(columns) + 1)]
    for a in algos:
        cells = [f"{t[(a, m)]:.1f} ms" for _, m in columns]
        out.append(f"| {a} | " + " | ".join(cells) + f" | {t[(a, m1)] / t[(a, m0)]:.2f}x |")
    return out


def netem(res, variants, key, ring_of_variant=True):
    """1 Gbit/s rows: per size and algorithm, each variant's (label, match) time and speedup
    over the bf16 ring, and the last variant's time over the first's. The ring is the one of
    the same sweep pass (ring_of_variant; where the variant does not change the ring, as the
    scale format) or the first variant's (the rotation, which an explicit hadamard applies to
    the ring too: the baseline stays the plain ring)."""
    path = os.path.join(res, "netem_1gbit_h4", "rows.jsonl")
    if not os.path.exists(path):
        return []
    rows = [json.loads(l) for l in open(path)]
    rows = [r for r in rows if r.get("type") != "header" and r.get("launch") == "bf16"]
    t = {(r["size_bytes"], r["algo"], key(r)): r["time_us"] / 1e3 for r in rows}
    sizes = sorted({r["size_bytes"] for r in rows})
    algos = [a for a in ("full_bidir", "two_shot") if any(r["algo"] == a for r in rows)]
    head = " | ".join(f"{l}: time | speedup" for l, _ in variants)
    (l0, m0), (l1, m1) = variants[0], variants[-1]
    out = [f"| size, H = 4 | algorithm | {head} | {l1} / {l0} |",
           "|---|---|" + "---:|---:|" * len(variants) + "---:|"]
    for n in sizes:
        for a in algos:
            cells = []
            for _, m in variants:
                ring = t[(n, "ring", m if ring_of_variant else m0)]
                cells.append(f"{t[(n, a, m)]:.1f} ms | {ring / t[(n, a, m)]:.2f}x")
            out.append(f"| {n >> 20} MiB | {a} rs+ag | " + " | ".join(cells) +
                       f" | {t[(n, a, m1)] / t[(n, a, m0)]:.3f} |")
    return out


def packed_netem(res):
    """1 Gbit/s rows of bench/packed_speed.sh: per size, algorithm, scale format and codec the
    time, the speedup over the bf16 ring of the same sweep pass, the speedup the wire bytes
    predict (the ring's bytes over this row's) and the measured speedup over the predicted one."""
    path = os.path.join(res, "netem_1gbit_h4", "rows.jsonl")
    if not os.path.exists(path):
        return []
    rows = [json.loads(l) for l in open(path)]
    rows = [r for r in rows if r.get("type") != "header" and r.get("launch") == "formats"]
    ring = {(r["size_bytes"], option(r, "scale")): r for r in rows if r["algo"] == "ring"}
    out = ["| size, H = 4 | algorithm | scales | codec | time | speedup | bytes ratio | speedup / bytes ratio |",
           "|---|---|---|---|---:|---:|---:|---:|"]
    for r in sorted((r for r in rows if r["algo"] != "ring"),
                    key=lambda r: (r["size_bytes"], r["algo"], option(r, "scale"), -r["wire_bytes"])):
        g = ring[(r["size_bytes"], option(r, "scale"))]
        speedup, predicted = g["time_us"] / r["time_us"], g["wire_bytes"] / r["wire_bytes"]
        out.append(f"| {r['size_bytes'] >> 20} MiB | {r['algo']} rs+ag | {option(r, 'scale')} | {r['codec']} | "
                   f"{r['time_us'] / 1e3:.1f} ms | {speedup:.2f}x | {predicted:.2f}x | {speedup / predicted:.3f} |")
    return out


def default_netem(res):
    """1 Gbit/s rows of bench/default_point.sh: per size and point (block, scale format) of
    two_shot rs+ag int8, its wire bytes over the bf16 ring's, and medians over the launches
    (netem_1gbit_h4/round*/) of its time, its speedup over the bf16 ring of the same sweep pass
    and its time over the same launch's B64 f32 point's (the one-level scales' default block)."""
    key = lambda r: (r["size_bytes"], int(option(r, "block")), option(r, "scale"))
    runs = []
    for d in sorted(glob.glob(os.path.join(res, "netem_1gbit_h4", "round*"))):
        rows = [r for r in netem_rows(d) if r.get("type") != "header" and r.get("launch") == "bf16"]
        runs.append(({key(r): r for r in rows if r["algo"] == "ring"},
                     {key(r): r for r in rows if r["algo"] == "two_shot"}))
    med = statistics.median
    out = ["| size, H = 4 | block, scales | wire / bf16 ring | time | speedup | time / B64 f32's, per launch | median |",
           "|---|---|---:|---:|---:|---|---:|"]
    first = runs[0][1]
    for k in sorted(first, key=lambda k: (k[0], first[k]["wire_bytes"], k[1])):
        d = (k[0], 64, "f32")
        ratios = [p[k]["time_us"] / p[d]["time_us"] for _, p in runs]
        name = f"B{k[1]} {k[2]}"
        out.append(f"| {k[0] >> 20} MiB | {name} | {first[k]['wire_bytes'] / runs[0][0][k]['wire_bytes']:.3f} | "
                   f"{med([p[k]['time_us'] for _, p in runs]) / 1e3:.1f} ms | "
                   f"{med([g[k]['time_us'] / p[k]['time_us'] for g, p in runs]):.2f}x | "
                   + " ".join(f"{x:.3f}" for x in ratios) + f" | {med(ratios):.3f} |")
    return out, len(runs)


def netem_provenance(nenv, where="netem_1gbit_h4/"):
    """The provenance line of a results directory's 1 Gbit/s run `where` (its env.txt)."""
    return (f"Provenance: `{where}`: {nenv.get('date', '?')}, commit {nenv.get('commit', '?')[:7]}, "
            f"{nenv.get('kernel', '?')}.")


def commit_below(text):
    """(text without its "commit: X" lines, those lines as Provenance lines to put below the
    code block the text goes into): docs keep commits to Provenance lines."""
    lines = text.split("\n")
    rest = "\n".join(l for l in lines if not l.startswith("commit: "))
    return rest, "".join(f"\n\nProvenance: commit {l[len('commit: '):]}." for l in lines if l.startswith("commit: "))


def env_of(path):
    if not os.path.exists(path):
        return {}
    return dict(l.split(": ", 1) for l in open(path).read().splitlines() if ": " in l)


MODES = {
    "scales": dict(
        dir="bench/results/scale_formats", env="speed_env.txt", marker="scale_speed",
        script="bash bench/scale_speed.sh", kernels=SCALE_KERNELS,
        calls=([("B64 f32", "64 f32"), ("B32 bf16", "32 bf16"), ("B128 two_level", "128 two_level")],
               lambda r: f"{r['block']} {option(r, 'scale')}"),
        calls_text="rs+ag int8 with the rotation",
        net=([("B128 f32", "f32"), ("B128 two-level", "two_level")], lambda r: option(r, "scale")),
        net_text="B = 128, the library's default rotation (hadamard for int8)"),
    "rotation": dict(
        dir="bench/results/rotation", env="env.txt", marker="rotation_speed",
        script="bash bench/rotation_speed.sh", kernels=ROTATION_KERNELS,
        calls=([("rotation none", "none"), ("hadamard", "hadamard")], lambda r: r["rotation"]),
        calls_text="rs+ag int8 B = 64",
        net=([("none", "none"), ("hadamard", "hadamard")], lambda r: r["rotation"], False),
        net_text="B = 128, rotation none and hadamard; the baseline is the unrotated bf16 ring"),
    "fused": dict(dir="bench/results/fused_kernel", env="env.txt", marker="fused_speed",
                  script="bash bench/fused_speed.sh"),
    "packed": dict(dir="bench/results/packed_speed", env="env.txt", marker="packed_speed",
                   script="bash bench/packed_speed.sh --netem", kernels=PACKED_KERNELS),
    "default": dict(dir="bench/results/default_point", env="netem_1gbit_h4/round1/env.txt", marker="default_point",
                    script="bash bench/default_point.sh"),
}


def split_option(argv, flag, what):
    """(the arguments without `flag VALUE`, VALUE or None); exits when the value is missing
    (`what` names it in the message)."""
    args = list(argv)
    if flag not in args:
        return args, None
    i = args.index(flag)
    if i + 1 >= len(args):
        sys.exit(f"{flag} needs {what}")
    return args[:i] + args[i + 2:], args[i + 1]


def split_splice(argv):
    """(the arguments without --splice FILE, FILE or None)."""
    return split_option(argv, "--splice", "a file")


def one_results_dir(argv, script):
    """(RESULTS_DIR, FILE or None) of a table script's `RESULTS_DIR [--splice FILE]`; exits with
    the usage of `script` otherwise."""
    args, splice = split_splice(argv)
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit(f"usage: {script} RESULTS_DIR [--splice FILE]")
    return args[0], splice


def netem_rows(res):
    """Every row of a bench/netem/run.sh results directory (its rows.jsonl)."""
    return [json.loads(l) for l in open(os.path.join(res, "rows.jsonl")) if l.strip()]


def generated_line(made_by, plot, env):
    """The first line of a generated table, a Provenance line: what made it (`made_by`, already quoted), the
    script `plot` that drew it, and the run's env.txt facts (a commit with uncommitted
    changes says so)."""
    commit = env.get("commit", "?")
    dirty = " (+ uncommitted changes)" if "uncommitted" in commit else ""
    return (f"Provenance: generated by {made_by} (`{plot}`) on {env.get('date', '?')}, commit {commit[:7]}{dirty}, "
            f"{env.get('machine', '?')}; dispatched target: {env.get('kernels use', '?')}; "
            f"load {env.get('load before', '?')} before, {env.get('load after', '?')} after.")


def main():
    args, splice = split_splice(sys.argv[1:])
    if not args or args[0] not in MODES:
        sys.exit("usage: codec_speed_table.py scales|rotation|fused|packed|default [RESULTS_DIR] [--splice FILE]")
    mode = MODES[args[0]]
    res = args[1] if len(args) > 1 else mode["dir"]
    env = env_of(os.path.join(res, mode["env"]))
    if args[0] == "fused":
        before = (" The `before` columns are an earlier build (provenance below), run target by "
                  "target just before this build's (`before/codec_<TARGET>.json`)." if "before" in env else "")
        text = [generated_line(f"`{mode['script']}`", PLOT, env),
                "",
                "GB/s of f32-equivalent input, single thread, medians of the run's repetitions, "
                "each SIMD target forced in turn (`codec_<TARGET>.json`); in brackets the share of "
                "memcpy of the same size in the same run." + before, ""] + fused_kernels(res)
        if "before" in env:
            text += ["", f"Provenance: the `before` columns: build of commit {env['before'][:7]}"
                     f"{' (+ uncommitted changes)' if 'uncommitted' in env['before'] else ''}."]
        return emit("\n".join(text), splice, mode["marker"])
    if args[0] == "default":
        table, launches = default_netem(res)
        text = [f"Generated by `{mode['script']}` (`{PLOT}`) from `netem_1gbit_h4/round*/`.", "",
                "**At 1 Gbit/s**, 4 emulated hosts, one rank each, equarx's TCP data path, bf16 data, "
                "two_shot rs+ag int8 with the default rotation, median of 7 calls per launch, "
                f"{launches} launches; time and speedup (the bf16 ring's time in the same sweep pass / this "
                "row's) are medians over the launches; each point's time is also given over the B64 f32 "
                "point's of the same launch:",
                ""] + table + [""]
        for d in sorted(glob.glob(os.path.join(res, "netem_1gbit_h4", "round*"))):
            nenv = env_of(os.path.join(d, "env.txt"))
            text.append(netem_provenance(nenv, f"netem_1gbit_h4/{os.path.basename(d)}/"))
        return emit("\n".join(text), splice, mode["marker"])
    if args[0] == "packed":
        nenv = env_of(os.path.join(res, "netem_1gbit_h4", "env.txt"))
        text = [generated_line(f"`{mode['script']}`", PLOT, env), "",
                "**Kernels**, GB/s of f32-equivalent input, median of 5, L2-resident (16 Ki elements) / "
                "64 MiB, B = 128, f32 scales, each SIMD target forced in turn (`codec_<TARGET>.json`):",
                ""] + kernels(res, mode["kernels"])
        net = packed_netem(res)
        if net:
            text += ["", "**At 1 Gbit/s**, 4 emulated hosts, one rank each, equarx's TCP data path, bf16 data, "
                     "B = 128 with f32 or two-level scales and the rotation, median of 5 (`netem_1gbit_h4/`); "
                     "speedup = the bf16 ring's time / this row's, bytes ratio = the ring's wire bytes / "
                     "this row's:", ""] + net + ["", netem_provenance(nenv)]
        return emit("\n".join(text), splice, mode["marker"])
    text = [generated_line(f"`{mode['script']}`", PLOT, env),
            "",
            "**Kernels**, GB/s of f32-equivalent input, median of 5, L2-resident (16 Ki elements) / "
            "64 MiB, each SIMD target forced in turn (`codec_<TARGET>.json`):",
            ""] + kernels(res, mode["kernels"]) + [
            "",
            "**Whole calls in process**, 8 ranks (threads on the 2 cores), 64 MiB of bf16 each, "
            f"{mode['calls_text']}, median of 5 (`perf_n8_64m.txt`):",
            ""] + in_process(res, *mode["calls"])
    net = netem(res, *mode["net"])
    if net:
        nenv = env_of(os.path.join(res, "netem_1gbit_h4", "env.txt"))
        text += ["", "**At 1 Gbit/s**, 4 emulated hosts, one rank each, equarx's TCP data path, "
                 f"{mode['net_text']}, median of 5 (`netem_1gbit_h4/`); speedup = the bf16 ring's time / "
                 "this row's:", ""] + net + ["", netem_provenance(nenv)]
    emit("\n".join(text), splice, mode["marker"])


def emit(block, splice, marker):
    """Prints `block`, or with a file name `splice` puts it between that file's
    <!-- generated:MARKER:begin --> and <!-- generated:MARKER:end --> lines."""
    if splice is None:
        print(block)
        return
    begin, end = f"<!-- generated:{marker}:begin -->", f"<!-- generated:{marker}:end -->"
    doc = open(splice).read()
    if begin not in doc or end not in doc:
        sys.exit(f"{splice}: markers {begin} / {end} not found")
    a, rest = doc.split(begin, 1)
    _, b = rest.split(end, 1)
    open(splice, "w").write(f"{a}{begin}\n{block}\n{end}{b}")


if __name__ == "__main__":
    main()
