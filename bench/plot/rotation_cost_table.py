#!/usr/bin/env python3
"""The speedups of the quantized schedules over the bf16 ring without the rotation and with
the library's default one (Hadamard for int8), from two emulated-network runs of the same
configurations: bench/model_rerun.sh's rerun (--rotation none) and the second benchmark round
(bench/run_benchmarks.sh, default options). Both ran from committed builds with nothing else on
the machine, but in different launches, so a ratio of their speedups carries both runs' noise
(about 1-2% per configuration, docs/scale.md "Validation").

  bench/plot/rotation_cost_table.py [--splice docs/benchmarks.md]

prints a markdown table (bf16 data, rs+ag, 1 MiB and up) and with --splice replaces the text
between <!-- generated:rotation_cost:begin --> and <!-- generated:rotation_cost:end --> in that
file.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, env_of, split_splice  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RES = os.path.join(ROOT, "bench", "results")
RUNS = {  # H: ((rows, env) with rotation none, (rows, env) with the default rotation)
    4: (("model_rerun/sweep_h4/rows.csv", "model_rerun/sweep_h4/env.txt"),
        ("netem_sweep_h4.csv", "netem_sweep_h4_env.txt")),
    8: (("model_rerun/sweep_h8/rows.csv", "model_rerun/sweep_h8/env.txt"),
        ("netem_sweep_h8.csv", "netem_sweep_h8_env.txt")),
}
ALGOS = ("full_bidir", "semi", "two_shot")
RATES = (("1gbit", "1 Gbit/s"), ("2.5gbit", "2.5 Gbit/s"), ("none", "unshaped"))


def times(path):
    """{(rate, size, algo): time_us} of the bf16 rs+ag rows and the bf16 ring."""
    out = {}
    with open(os.path.join(RES, path)) as f:
        for r in csv.DictReader(f):
            if r["dtype"] == "bf16" and r["phases"] in ("-", "rs+ag"):
                out[(r["rate"], int(r["size_bytes"]), r["algo"])] = float(r["time_us"])
    return out


def named(run):
    """`rows`, the run's raw rows."""
    return "`bench/results/%s`" % run[0]


def commit_of(run):
    """The commit the run's env file names."""
    return env_of(os.path.join(RES, run[1])).get("commit", "?")[:7]


def table():
    lines = ["| H | links | size | " + " | ".join(
                 "%s: none | default | ratio" % a for a in ALGOS) + " |",
             "|---|---|---:|" + "---:|---:|---:|" * len(ALGOS)]
    for hosts, (none_run, dflt_run) in RUNS.items():
        a, b = times(none_run[0]), times(dflt_run[0])
        for rate, label in RATES:
            sizes = sorted({s for (r, s, _) in a if r == rate and s >= (1 << 20)} &
                           {s for (r, s, _) in b if r == rate})
            for s in sizes:
                cells = []
                for algo in ALGOS:
                    k, ring = (rate, s, algo), (rate, s, "ring")
                    if not all(x in d for d in (a, b) for x in (k, ring)):
                        cells.append("– | – | –")
                        continue
                    u, v = a[ring] / a[k], b[ring] / b[k]
                    cells.append("%.2fx | %.2fx | %.3f" % (u, v, v / u))
                lines.append("| %d | %s | %d MiB | %s |" % (hosts, label, s >> 20, " | ".join(cells)))
    head = ("Speedup over the bf16 ring in the same launch, rotation none (%s; %s) and the "
            "default rotation (%s; %s); ratio = default / none." % (
                named(RUNS[4][0]), named(RUNS[8][0]), named(RUNS[4][1]), named(RUNS[8][1])))
    def builds(i):  # the commits of one side's runs, each named once with its host counts
        by = {}
        for hosts in (4, 8):
            by.setdefault(commit_of(RUNS[hosts][i]), []).append("%d" % hosts)
        return ", ".join("%s (H = %s)" % (c, " and ".join(h)) for c, h in by.items())
    prov = "Provenance: rotation none: %s; default rotation: %s." % (builds(0), builds(1))
    return head + "\n\n" + "\n".join(lines) + "\n\n" + prov


def main():
    args, splice = split_splice(sys.argv[1:])
    if args:
        sys.exit("usage: rotation_cost_table.py [--splice FILE]")
    emit(table(), splice, "rotation_cost")


if __name__ == "__main__":
    main()
