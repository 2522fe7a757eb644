#!/usr/bin/env python3
"""bench/plot/step_cost_fit.py — fits the cost model's latency terms to whole calls measured on
the emulated hosts (bench/step_costs.sh). For every pinned equarx schedule and size, the median
p50 over the launches given is the measured time, and equarx-model gives the plan's steps,
messages and host egress bytes (the library's own plan, at the run's options). A least-squares
fit, in relative error (each row weighted by 1 / its measured time, so that the kilobyte rows
count as much as the larger ones), of

    measured - egress / link rate = a * steps + m * messages,    a >= 0, m >= 0

gives a (the latency of a step) and m (the cost of a message) with the bytes charged at the
line rate, as the model behind auto charges them. Rounded to 0.5 us, a and m are what
EQUARX_STEP_US and EQUARX_MESSAGE_US default to (src/common/env.h). The table of measured and
fitted times goes between docs/benchmarks.md's <!-- generated:step_costs --> markers with
--splice, with the ring's, two_shot's and full_bidir's times at the library's microshards (by
size) beside those with 4 microshards, measured in the same launches.

    python3 bench/plot/step_cost_fit.py LAUNCH_DIR... [--splice docs/benchmarks.md]
"""
import csv
import io
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, split_splice  # noqa: E402

MODEL = "build/release/tools/model/equarx-model"
ALGOS = ("ring", "one_shot_raw", "recursive_doubling", "one_shot", "two_shot", "full_bidir")
RATES = {"1gbit": 1.0, "2500mbit": 2.5, "100mbit": 0.1}


def solve(rows):
    """Least squares of y = X w over rows [(x..., y)] by the normal equations (Gauss-Jordan)."""
    k = len(rows[0]) - 1
    a = [[sum(r[i] * r[j] for r in rows) for j in range(k)] + [sum(r[i] * r[k] for r in rows)] for i in range(k)]
    for c in range(k):
        p = max(range(c, k), key=lambda i: abs(a[i][c]))
        a[c], a[p] = a[p], a[c]
        for i in range(k):
            if i != c:
                f = a[i][c] / a[c][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[c])]
    return [a[i][k] / a[i][i] for i in range(k)]


def fit(rows):
    """(a, m) >= 0 minimising the squares of rows [(steps, messages, y)]: the free fit, else the
    best with one of them held at 0."""
    a, m = solve(rows)
    if a >= 0 and m >= 0:
        return a, m
    sq = lambda a, m: sum((r[0] * a + r[1] * m - r[2]) ** 2 for r in rows)
    only_m = (0.0, max(0.0, solve([(r[1], r[2]) for r in rows])[0]))
    only_a = (max(0.0, solve([(r[0], r[2]) for r in rows])[0]), 0.0)
    return min(only_m, only_a, key=lambda w: sq(*w))


def size(b):
    for unit, n in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << n:
            return "%d %s" % (b >> n, unit)
    return "%d B" % b


def microshards(r):
    return int(dict(kv.split("=") for kv in r["options"].split(","))["microshards"])


def main():
    args, splice = split_splice(sys.argv[1:])
    if not args:
        sys.exit("usage: step_cost_fit.py LAUNCH_DIR... [--splice FILE]")
    times, header, commits = {}, None, set()
    for d in args:
        for line in open(os.path.join(d, "rows.jsonl")):
            r = json.loads(line)
            if r.get("type") == "header":
                header = r
                continue
            if r.get("launch") == "f32" and r["algo"] in ALGOS:
                times.setdefault((r["algo"], r["size_bytes"], microshards(r)), []).append(r["time_us"])
        env = os.path.join(d, "env.txt")
        if os.path.exists(env):
            commits |= {l.split()[1][:7] + (" (dirty)" if "dirty" in l else "") for l in open(env)
                        if l.startswith("commit:")}
    med = {k: statistics.median(v) for k, v in times.items()}
    hosts, link_gbit = header["hosts"], RATES[header["rate"]]
    sizes = sorted({k[1] for k in med})
    # The library's plans for the run's calls: steps, messages, host egress (no latency terms).
    cmd = [MODEL, "--hosts", str(hosts), "-d", "f32", "-b", str(sizes[0]), "-e", str(sizes[-1]), "-f", "2",
           "--algo", ",".join(ALGOS), "--block", "0", "--scale", "default", "--link-gbit", str(link_gbit),
           "--alpha-us", "0", "--per-message-us", "0", "--csv"]
    plan = {(p["algo"], int(p["size_bytes"])): p
            for p in csv.DictReader(io.StringIO(subprocess.check_output(cmd, text=True)))}
    table, fit_rows = [], []
    for (algo, s, m), t in med.items():
        if m != 0 or (algo, s) not in plan:
            continue
        p = plan[(algo, s)]
        wire_us = int(p["host_egress_bytes"]) / (link_gbit * 1e9 / 8) * 1e6
        steps, messages = int(p["steps"]), int(p["messages"])
        fit_rows.append((steps / t, messages / t, (t - wire_us) / t))
        table.append((s, algo, steps, messages, wire_us, t))
    a, m = fit(fit_rows)
    lines = ["Fit over %d schedules and sizes (%d hosts, %s, f32, from %s to %s, the median of %d launches; the "
             "bytes at the line rate): **a step %.1f us, a message %.1f us**." %
             (len(fit_rows), hosts, header["rate"], size(sizes[0]), size(sizes[-1]), len(args), a, m), "",
             "| size | schedule | steps | messages | egress at line rate (us) | measured p50 (us) | fitted (us) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for s, algo, steps, messages, w, t in sorted(table, key=lambda x: (x[0], ALGOS.index(x[1]))):
        lines.append("| %s | %s | %d | %d | %.0f | %.0f | %.0f |" % (size(s), algo, steps, messages, w, t,
                                                                   w + a * steps + m * messages))
    lines += ["", "**Microshards by size** (the library's default: one per 16 Ki elements of a shard, 1 to 4) "
              "against 4 microshards, the same launches, median p50 in us:", "",
              "| size | " + " | ".join("%s by size / 4" % x for x in ("ring", "two_shot", "full_bidir")) + " |",
              "|---|" + "---:|" * 3]
    for s in sizes:
        cells = []
        for x in ("ring", "two_shot", "full_bidir"):
            t0, t4 = med.get((x, s, 0)), med.get((x, s, 4))
            cells.append("%.0f / %.0f" % (t0, t4) if t0 and t4 else "-")
        lines.append("| %s | %s |" % (size(s), " | ".join(cells)))
    lines += ["", "Provenance: generated by `bash bench/step_costs.sh` (`bench/plot/step_cost_fit.py`) from "
              "`bench/results/step_costs/launch*/rows.jsonl`, build of %s." % ", ".join(sorted(commits))]
    emit("\n".join(lines), splice, "step_costs")


if __name__ == "__main__":
    main()
