#!/usr/bin/env python3
"""The speedups of the quantized schedules over the bf16 ring without the rotation and with
the library's default one (Hadamard for int8), from two emulated-network runs of the same
configurations: bench/model_rerun.sh's rerun (--rotation none) and the second benchmark round
(bench/run_benchmarks.sh, default options). Both ran from committed builds with nothing else on
the machine, but in different launches, so a ratio of their speedups carries both runs' noise
(about 1-2% per configuration, docs/scale.md "Validation").

  bench/plot/rotation_cost_table.py [--splice docs/benchmarks.md]

prints a markdown table (bf16 data, rs+ag, 1 MiB and up) and with --splice replaces the text
between <!-- rotation_cost:begin --> and <!-- rotation_cost:end --> in that file.
"""
import argparse
import csv
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RES = os.path.join(ROOT, "bench", "results")
RUNS = {  # H: (rotation none, default rotation)
    4: ("model_rerun/sweep_h4/rows.csv", "netem_sweep_h4.csv"),
    8: ("model_rerun/sweep_h8/rows.csv", "netem_sweep_h8.csv"),
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


def commit(path):
    env = os.path.join(os.path.dirname(os.path.join(RES, path)), "env.txt")
    if not os.path.exists(env):
        env = os.path.join(RES, path.replace(".csv", "_env.txt"))
    with open(env) as f:
        for line in f:
            if line.startswith("commit: "):
                return line.split()[1][:7]
    return "?"


def table():
    lines = ["| H | links | size | " + " | ".join(
                 "%s: none | default | ratio" % a for a in ALGOS) + " |",
             "|---|---|---:|" + "---:|---:|---:|" * len(ALGOS)]
    for hosts, (none_path, dflt_path) in RUNS.items():
        a, b = times(none_path), times(dflt_path)
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
    head = ("Speedup over the bf16 ring in the same launch, rotation none (`bench/results/%s`, "
            "%s; `bench/results/%s`, %s) and the default rotation (`bench/results/%s`, %s; "
            "`bench/results/%s`, %s); ratio = default / none." % (
                RUNS[4][0], commit(RUNS[4][0]), RUNS[8][0], commit(RUNS[8][0]),
                RUNS[4][1], commit(RUNS[4][1]), RUNS[8][1], commit(RUNS[8][1])))
    return head + "\n\n" + "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splice", metavar="FILE")
    a = p.parse_args()
    text = table()
    if not a.splice:
        print(text)
        return
    begin, end = "<!-- rotation_cost:begin -->", "<!-- rotation_cost:end -->"
    doc = open(a.splice).read()
    if begin not in doc or end not in doc:
        raise SystemExit("%s: markers %s / %s not found" % (a.splice, begin, end))
    pre, rest = doc.split(begin, 1)
    _, post = rest.split(end, 1)
    with open(a.splice, "w") as f:
        f.write(pre + begin + "\n" + text + "\n" + end + post)


if __name__ == "__main__":
    main()
