#!/usr/bin/env python3
"""Validates equarx-model against the emulated-network measurements committed in bench/results.

For every measured row of our own algorithms (the sockets data path; 1 and 2.5 Gbit/s links
and the unshaped one), the model predicts the time from the library's plan for that row's
options, the link rate measured by the run's own iperf3 check (its env.txt; the nominal rate
where a run has none), the tbf burst of bench/netem/run.sh (2 ms of the rate), and the codec's
rates measured on this machine (equarx-model --calibrate). The machine the rows were measured
on ran all H emulated hosts on its 2 cores: cores per host = 2 / H.

The rows come from three rounds: the original runs (the first benchmark round of 2026-12-03,
kept in bench/results/first_round/, then the rotation and hierarchical runs; most on builds with
uncommitted changes, the first round while other builds and tests used the same 2 cores),
bench/model_rerun.sh's rerun of every one of their configurations (datasets "rerun_*") and the
second benchmark round of bench/run_benchmarks.sh (datasets "second_*", bench/results/netem_*):
the last two with nothing else running, from committed builds. Three constants
are fitted on the calibration set (the rerun's H = 4, bf16: the ring, full and two_shot at
1 Gbit/s, the ring on the unshaped link), by a grid and a ten times finer grid around its best
point: alpha (per schedule step), the time per message and the network stack's CPU per byte.
Every other row is held out. auto rows are left out (they repeat another
algorithm's row; which one depends on that build's tune table), counted in the summary. The
summary gives the errors over all rows and per round, and how far two measurements of the same
configuration in different runs are apart, the data's own repeatability.

  bench/model/validate.py --model build/release/tools/model/equarx-model --out DIR
writes DIR/validation.csv (one row per point), DIR/summary.txt and DIR/ranks_per_host.md (the
points with several ranks per host, as a table).
"""
import csv
import os
import re
import statistics
import sys

from modelcli import calibrate, calibration_elements, parse_args, rate_args, run_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RES = os.path.join(ROOT, "bench", "results")
# (dataset name, rows file, env file); the rows files are the runs' own CSV/JSONL output.
DATASETS = [
    ("sweep_h4", "first_round/netem_sweep_h4.csv", "first_round/netem_sweep_h4_env.txt"),
    ("sweep_h8", "first_round/netem_sweep_h8.csv", "first_round/netem_sweep_h8_env.txt"),
    ("formats", "first_round/netem_formats.csv", "first_round/netem_formats_env.txt"),
    ("auto", "first_round/netem_auto.csv", "first_round/netem_auto_env.txt"),
    ("rotation", "rotation/netem_1gbit_h4_avx2/rows.csv", "rotation/netem_1gbit_h4_avx2/env.txt"),
    # Several ranks per host (2 and 4 hosts x 2 ranks; shared-memory rings inside a host, TCP
    # between): hierarchical beside the flat schedules over the same ranks.
    ("hier_h2x2", "hier_h2x2/rows.csv", "hier_h2x2/env.txt"),
    ("hier_h4x2", "hier_h4x2/rows.csv", "hier_h4x2/env.txt"),
] + [  # the same configurations measured again, nothing else running (bench/model_rerun.sh)
    ("rerun_" + n, "model_rerun/%s/rows.csv" % n, "model_rerun/%s/env.txt" % n)
    for n in ("sweep_h4", "sweep_h8", "formats", "auto", "rotation", "hier_h2x2", "hier_h4x2")
] + [  # the second benchmark round (bench/run_benchmarks.sh, 2026-12-06), MPI and Gloo rows too
    ("second_" + n, "netem_%s.csv" % n, "netem_%s_env.txt" % n)
    for n in ("sweep_h4", "sweep_h8", "formats", "auto")
]
# The first benchmark round (2026-12-03: builds with uncommitted changes, other builds and
# tests on the same 2 cores; kept in bench/results/first_round/), the runs after it (rotation,
# hierarchical), the rerun of all of them (bench/model_rerun.sh) and the second benchmark
# round (bench/run_benchmarks.sh): the last two from committed builds, nothing else running.
FIRST_ROUND = {"sweep_h4", "sweep_h8", "formats", "auto"}
ROUNDS = ("first", "later", "rerun", "second")


def round_of(dataset):
    if dataset.startswith("rerun_"):
        return "rerun"
    if dataset.startswith("second_"):
        return "second"
    return "first" if dataset in FIRST_ROUND else "later"

OURS = {"ring", "full", "full_bidir", "semi", "two_shot", "hierarchical"}
CORES = 2  # the measuring machine's cores, shared by all emulated hosts


def link_rates(env_path):
    """{(hosts, rate): Gbit/s} from the run's iperf3 link checks."""
    out = {}
    with open(env_path) as f:
        for line in f:
            m = re.match(r"H=(\d+) rate=(\S+) link check .*: ([\d.]+) (M|G)bits/sec", line)
            if m:
                v = float(m.group(3)) / (1000.0 if m.group(4) == "M" else 1.0)
                out[(int(m.group(1)), m.group(2))] = v
    return out


def nominal_gbit(rate):
    m = re.fullmatch(r"([\d.]+)(m|g)bit", rate)
    return float(m.group(1)) / (1000.0 if m.group(2) == "m" else 1.0)


def options_of(row):
    """The row's options as key=value text; rows from before options were recorded ran
    without rotation (the builds had none) at their recorded codec and block, with f32 scales
    (the builds had no other)."""
    if row.get("options"):
        return row["options"]
    algo = row["algo"]
    if algo == "ring":
        return "algorithm=ring,rotation=none"
    return "algorithm=%s,phases=%s,codec=%s,block=%s,scale=f32,rotation=none" % (
        algo, row["phases"], row["codec"], row["block"])


def config_key(p):
    """What makes two rows the same measurement: the topology, link, dtype, size and the
    schedule's options that change its time (not the recorded defaults of options it ignores)."""
    o = dict(kv.split("=", 1) for kv in p["options"].split(","))
    sched = (o["algorithm"],) if o["algorithm"] == "ring" else tuple(
        o.get(k, d) for k, d in (("algorithm", ""), ("phases", ""), ("codec", ""), ("block", ""),
                                 ("rotation", "none"), ("scale", "f32"), ("inner", "auto")))
    return (p["hosts"], p["rph"], p["rate"], p["dtype"], p["size"]) + sched


def calibrate_cached(model, cache, codec, block, scale, dtype, elements):
    key = (codec, block, scale, dtype, elements)
    if key not in cache:
        cache[key] = calibrate(model, ["--codec", codec, "--block", str(block), "--scale", scale, "-d", dtype],
                               elements)
    return cache[key]


def rates_text(cache):
    """The measured rates of each codec, block and dtype at its smallest, 1 Mi and largest
    calibration sizes."""
    out = []
    for k in sorted({key[:4] for key in cache}):
        sizes = sorted(e for c, b, sc, d, e in cache if (c, b, sc, d) == k)
        shown = sorted({sizes[0], sizes[-1]} | ({1 << 20} & set(sizes)))
        out.append("%s B%s %s %s: %s" % (k + (" ".join(
            "%s %s" % (x, "/".join(cache[k + (e,)][x] for e in shown))
            for x in ("dae", "decode", "add", "rotate")),)) +
            " at %s elements" % "/".join("%d Ki" % (e >> 10) for e in shown))
    return "; ".join(out)


def burst_ms(rate, gbit):
    """bench/netem/run.sh's tbf burst (2 ms of the nominal rate, at least 64 KiB) in ms of the
    link's measured rate; an unshaped link ("none") has none."""
    if rate == "none":
        return 0.0
    nominal = nominal_gbit(rate) * 1e9 / 8
    kib = max(64, int(nominal * 0.002 / 1024))
    return kib * 1024 / (gbit * 1e9 / 8) * 1e3


def predict(model, p, alpha_us, per_message_us, stack_ns):
    r = p["rates"]
    text = run_model(model, [
        "--csv", "--hosts", str(p["hosts"]), "--ranks-per-host", str(p["rph"]), "--link-gbit", "%.6g" % p["gbit"],
        "--burst-ms", "%.6g" % burst_ms(p["rate"], p["gbit"]), "--stack-ns-per-byte", "%.6g" % stack_ns,
        "--alpha-us", "%.6g" % alpha_us, "--per-message-us", "%.6g" % per_message_us,
        "--cores-per-host", "%.6g" % (CORES / p["hosts"]), "-d", p["dtype"], "-b", str(p["size"]),
        "-e", str(p["size"]), "--options", p["options"]] + rate_args(r))
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == 1, text
    return rows[0]


def model_time(r, hosts, alpha_us, per_message_us, stack_ns):
    """The model's total (src/algo/cost_model.h) from its parts: what the fit varies."""
    micro = int(re.search(r"microshards=(\d+)", r["options"]).group(1))
    stack = 2 * int(r["host_egress_bytes"]) * stack_ns / 1000.0 / (CORES / hosts)
    cpu = float(r["codec_us"]) + stack
    paced = float(r["paced_us"])
    work = max(paced, float(r["memory_us"]), cpu) + min(paced, cpu) / micro
    return max(float(r["network_us"]),
               int(r["steps"]) * alpha_us + int(r["messages"]) * per_message_us + work)


def main():
    a = parse_args(__doc__)

    points, skipped = [], {"auto": 0, "not ours": 0, "other mode": 0}
    for name, rows_file, env_file in DATASETS:
        rates = link_rates(os.path.join(RES, env_file))
        with open(os.path.join(RES, rows_file)) as f:
            for row in csv.DictReader(f):
                if row["algo"] == "auto":
                    skipped["auto"] += 1
                    continue
                if row["algo"] not in OURS:
                    skipped["not ours"] += 1
                    continue
                if row.get("mode", "normal") != "normal":
                    skipped["other mode"] += 1
                    continue
                hosts = int(row["hosts"])
                rph = int(row.get("ranks_per_host") or 1)
                # A run without its own link check (the formats run): the nominal rate.
                key = (hosts, row["rate"])
                gbit = rates[key] if key in rates else nominal_gbit(row["rate"])
                points.append(dict(dataset=name, round=round_of(name), hosts=hosts, rph=rph, rate=row["rate"],
                                   gbit=gbit, dtype=row["dtype"],
                                   algo=row["algo"], phases=row["phases"], codec=row["codec"],
                                   block=row["block"], size=int(row["size_bytes"]),
                                   options=options_of(row), measured_us=float(row["time_us"]),
                                   measured_wire=int(row["wire_bytes"])))

    cache = {}
    for p in points:
        codec = p["codec"] if p["codec"] != "-" else "int8"
        block = p["block"] if p["block"] not in ("0", "-") else "128"
        scale = dict(kv.split("=", 1) for kv in p["options"].split(",")).get("scale", "f32")
        p["rates"] = calibrate_cached(a.model, cache, codec, block, scale, p["dtype"],
                                      calibration_elements(p["size"], p["dtype"]))

    # Fit alpha (per step), the time of one message and the stack's CPU per byte on the
    # calibration set: least squares of the relative error over a grid.
    # The ring-shaped plans send a fixed number of messages per step, so on them alone the time
    # per step and the time per message are one constant: two_shot (2 steps, 2 (N - 1)
    # microshards of messages) tells them apart.
    def in_calibration(p):
        return (p["dataset"] == "rerun_sweep_h4" and p["dtype"] == "bf16" and p["phases"] in ("-", "rs+ag")
                and ((p["rate"] == "1gbit" and p["algo"] in ("ring", "full", "two_shot")) or
                     (p["rate"] == "none" and p["algo"] == "ring")))
    calib = [p for p in points if in_calibration(p)]
    parts = [(p, predict(a.model, p, 0, 0, 0)) for p in calib]
    def fit(stacks, alphas, msgs):
        best = None
        for stack in stacks:
            for alpha in alphas:
                for msg in msgs:
                    e = sum(((model_time(r, p["hosts"], alpha, msg, stack) - p["measured_us"]) /
                             p["measured_us"]) ** 2 for p, r in parts)
                    if best is None or e < best[0]:
                        best = (e, alpha, msg, stack)
        return best
    # A coarse grid, then a grid ten times finer around its best point.
    _, alpha, per_message, stack = fit([x * 0.1 for x in range(0, 61)], [x * 4.0 for x in range(0, 76)],
                                       [x * 1.0 for x in range(0, 61)])
    _, alpha, per_message, stack = fit(
        [max(0.0, stack + x * 0.01) for x in range(-10, 11)],
        [max(0.0, alpha + x * 0.4) for x in range(-10, 11)],
        [max(0.0, per_message + x * 0.1) for x in range(-10, 11)])

    for p in points:
        r = predict(a.model, p, alpha, per_message, stack)
        if p["algo"] != "hierarchical":  # model_time is the flat total (the fit's rows)
            assert abs(float(r["time_us"]) - model_time(r, p["hosts"], alpha, per_message, stack)) < 0.01, r
        p["predicted_us"] = float(r["time_us"])
        p["predicted_wire"] = int(r["wire_bytes_per_rank"])
        p["err_pct"] = 100.0 * (p["predicted_us"] - p["measured_us"]) / p["measured_us"]
        p["set"] = "calibration" if p in calib else "held-out"

    fields = ["set", "dataset", "hosts", "rph", "rate", "gbit", "dtype", "algo", "phases", "codec", "block",
              "size", "measured_us", "predicted_us", "err_pct", "measured_wire", "predicted_wire",
              "options"]
    with open(os.path.join(a.out, "validation.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for p in points:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in p.items()})

    def summary(sel, label):
        e = [abs(p["err_pct"]) for p in sel]
        if not e:
            return "%-40s   (none)" % label
        return "%-40s n=%4d  median |err| %5.1f%%  p90 %5.1f%%  worst %5.1f%%" % (
            label, len(e), statistics.median(e), sorted(e)[int(0.9 * (len(e) - 1))], max(e))

    held = [p for p in points if p["set"] == "held-out"]
    lines = ["fitted on %d calibration points (the rerun's H = 4, bf16: ring, full and two_shot at 1 "
             "Gbit/s, ring on the unshaped link): alpha %.1f us per step, %.1f us per message, network stack "
             "%.2f ns per byte" % (len(calib), alpha, per_message, stack),
             "codec rates (G elements/s, one thread, %s, measured at each message's element count; "
             "here at the smallest / 1 Mi / the largest): %s" % (
                 next(iter(cache.values()))["target"], rates_text(cache)),
             "left out: " + ", ".join("%s %d" % kv for kv in skipped.items()),
             summary(points, "all points"), summary(held, "held-out points"),
             summary([p for p in held if p["size"] >= (1 << 20)], "held-out, >= 1 MiB"),
             summary([p for p in held if p["size"] < (1 << 20)], "held-out, < 1 MiB")]
    for rnd in ROUNDS:
        sel = [p for p in points if p["round"] == rnd]
        lines.append(summary(sel, "all points, round = %s" % rnd))
        if rnd in ("rerun", "second"):
            lines.append(summary([p for p in sel if p["size"] >= (1 << 20)], "all points, %s, >= 1 MiB" % rnd))
            lines.append(summary([p for p in sel if p["size"] < (1 << 20)], "all points, %s, < 1 MiB" % rnd))
    for key in ("dataset", "algo", "rate", "hosts", "rph"):
        for v in sorted({str(p[key]) for p in held}):
            lines.append(summary([p for p in held if str(p[key]) == v], "held-out, %s = %s" % (key, v)))
    # Repeatability of the measurements themselves: the same configuration (hosts, ranks per
    # host, rate, dtype, schedule, size) measured in two runs, per pair of rounds (within a
    # round: its auto run repeats the sweep's bf16 rows).
    by_key = {}
    for p in points:
        by_key.setdefault(config_key(p), []).append(p)
    rep = {}
    for group in by_key.values():
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                if x["dataset"] != y["dataset"]:
                    pair = " vs ".join(sorted((x["round"], y["round"])))
                    u, v = x["measured_us"], y["measured_us"]
                    rep.setdefault(pair, []).append(100.0 * abs(u - v) / min(u, v))
    for pair, r in sorted(rep.items()):
        lines.append("repeatability, %s: %d configurations measured in two runs differ by median "
                     "%.1f%%, p90 %.1f%%, worst %.1f%% (the slower over the faster)" % (
                         pair, len(r), statistics.median(r), sorted(r)[int(0.9 * (len(r) - 1))], max(r)))
    # Wire bytes: the rows record what rank 0 handed to its transport. Rows from builds whose
    # argument-check descriptor had another size differ by (N - 1) times that difference.
    exact = [p for p in points if p["measured_wire"] == p["predicted_wire"]]
    diffs = sorted({(p["hosts"], p["measured_wire"] - p["predicted_wire"]) for p in points
                    if p["measured_wire"] != p["predicted_wire"]})
    lines.append("wire bytes equal to the model's: %d of %d rows; the others differ by %s bytes "
                 "(hosts, measured - model)" % (len(exact), len(points), diffs))
    text = "\n".join(lines) + "\n"
    # Every point with several ranks per host, as a table (docs/scale.md).
    table = ["| run | hosts x ranks | algorithm | size | measured | model | error | wire bytes (rank 0) = model's |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for p in sorted((p for p in points if p["rph"] > 1),
                    key=lambda p: (p["round"] != "later", p["hosts"], p["size"], p["algo"], p["measured_us"])):
        table.append("| %s | %d x %d | %s | %d MiB | %.1f ms | %.1f ms | %+.1f%% | %s |" % (
            "rerun" if p["round"] == "rerun" else "original", p["hosts"], p["rph"],
            p["algo"] + ("" if p["phases"] == "-" else " " + p["phases"]),
            p["size"] >> 20, p["measured_us"] / 1e3, p["predicted_us"] / 1e3, p["err_pct"],
            "yes" if p["measured_wire"] == p["predicted_wire"] else
            "%+d (descriptor)" % (p["measured_wire"] - p["predicted_wire"])))
    with open(os.path.join(a.out, "ranks_per_host.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
