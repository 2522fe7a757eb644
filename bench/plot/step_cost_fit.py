#!/usr/bin/env python3
"""bench/plot/step_cost_fit.py — fits the cost model's latency terms to whole calls measured on
the emulated hosts (bench/step_costs.sh): for every pinned equarx schedule and size of a run's
rows.jsonl, equarx-model gives the plan's steps, messages and host egress bytes (the library's
own plan, at the run's options), and a least-squares fit, in relative error (each row weighted
by 1 / its measured time, so that the kilobyte rows count as much as the megabyte ones), of

    measured p50 - egress / link rate = a * steps + m * messages

gives a (the latency of a step) and m (the cost of a message) with the bytes charged at the
line rate, as the model behind auto charges them. Rounded, a and m are what EQUARX_STEP_US and
EQUARX_MESSAGE_US default to (src/common/env.h). The table
of measured and fitted times goes between docs/benchmarks.md's <!-- generated:step_costs -->
markers with --splice, with the ring's, two_shot's and full_bidir's times at the library's
microshards (by size) beside those with 4 microshards, measured in the same launch.

    python3 bench/plot/step_cost_fit.py RESULTS_DIR [--splice docs/benchmarks.md]
"""
import json
import os
import subprocess
import sys

MODEL = "build/release/tools/model/equarx-model"
ALGOS = ("ring", "one_shot_raw", "one_shot", "two_shot", "full_bidir")


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


def size(b):
    for unit, n in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << n:
            return "%d %s" % (b >> n, unit)
    return "%d B" % b


def main():
    args = sys.argv[1:]
    splice = None
    if "--splice" in args:
        i = args.index("--splice")
        splice = args[i + 1]
        del args[i:i + 2]
    res = args[0]
    rows = [json.loads(l) for l in open(os.path.join(res, "rows.jsonl"))]
    header = next(r for r in rows if r.get("type") == "header")
    def micro(r):
        return int(dict(kv.split("=") for kv in r["options"].split(","))["microshards"])
    runs = [r for r in rows if r.get("type") != "header" and r.get("launch") == "f32" and r["algo"] in ALGOS]
    data = [r for r in runs if micro(r) == 0]
    four = {(r["algo"], r["size_bytes"]): r["time_us"] for r in runs if micro(r) == 4}
    hosts = header["hosts"]
    link_gbit = {"1gbit": 1.0, "2500mbit": 2.5, "100mbit": 0.1}[header["rate"]]
    sizes = sorted({r["size_bytes"] for r in data})
    # The library's plans for the run's calls: steps, messages, host egress (no latency terms).
    cmd = [MODEL, "--hosts", str(hosts), "-d", "f32", "-b", str(sizes[0]), "-e", str(sizes[-1]), "-f", "2",
           "--algo", ",".join(ALGOS), "--block", "0", "--scale", "default", "--link-gbit", str(link_gbit),
           "--alpha-us", "0", "--per-message-us", "0", "--csv"]
    plan = {}
    import csv
    import io
    for p in csv.DictReader(io.StringIO(subprocess.check_output(cmd, text=True))):
        plan[(p["algo"], int(p["size_bytes"]))] = p
    fit_rows, table = [], []
    for r in data:
        p = plan.get((r["algo"], r["size_bytes"]))
        if p is None:
            continue
        wire_us = int(p["host_egress_bytes"]) / (link_gbit * 1e9 / 8) * 1e6
        t = r["time_us"]
        x = (int(p["steps"]), int(p["messages"]), wire_us, t)
        fit_rows.append((x[0] / t, x[1] / t, (t - wire_us) / t))
        table.append((r["size_bytes"], r["algo"], x))
    a, m = solve(fit_rows)
    b = 1.0
    lines = ["Fit over %d rows (%d hosts, %s, f32, every pinned schedule from %s to %s, the bytes at the line "
             "rate): **a step %.1f us, a message %.1f us**." %
             (len(fit_rows), hosts, header["rate"], size(sizes[0]), size(sizes[-1]), a, m), "",
             "| size | schedule | steps | messages | egress at line rate (us) | measured p50 (us) | fitted (us) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for s, algo, (st, ms, w, t) in sorted(table, key=lambda x: (x[0], ALGOS.index(x[1]))):
        lines.append("| %s | %s | %d | %d | %.0f | %.0f | %.0f |" % (size(s), algo, st, ms, w, t, a * st + m * ms + b * w))
    lines += ["", "**Microshards by size** (the library's default: one per 64 Ki elements of a shard, at most 4; "
              "here 1 at every size) against 4 microshards, the same launch, p50 in us:", "",
              "| size | " + " | ".join("%s by size / 4" % a for a in ("ring", "two_shot", "full_bidir")) + " |",
              "|---|" + "---:|" * 3]
    by_size = {(algo, s): x[3] for s, algo, x in table}
    for s in sizes:
        cells = []
        for a in ("ring", "two_shot", "full_bidir"):
            t0, t4 = by_size.get((a, s)), four.get((a, s))
            cells.append("%.0f / %.0f" % (t0, t4) if t0 and t4 else "-")
        lines.append("| %s | %s |" % (size(s), " | ".join(cells)))
    text = "\n".join(lines)
    print(text)
    if splice:
        begin, end = "<!-- generated:step_costs:begin -->", "<!-- generated:step_costs:end -->"
        doc = open(splice).read()
        i, j = doc.index(begin), doc.index(end)
        env = open(os.path.join(res, "env.txt")).read() if os.path.exists(os.path.join(res, "env.txt")) else ""
        commit = next((l.split(":", 1)[1].strip() for l in env.splitlines() if l.startswith("commit")), "?")
        prov = "Provenance: generated by `bash bench/step_costs.sh` (`bench/plot/step_cost_fit.py`) from `%s/rows.jsonl`, build of %s." % (res, commit)
        open(splice, "w").write(doc[:i + len(begin)] + "\n" + text + "\n\n" + prov + "\n" + doc[j:])


if __name__ == "__main__":
    main()
