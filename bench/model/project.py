#!/usr/bin/env python3
"""Projects AllReduce times to 64 ... 4096 ranks with equarx-model: which schedule wins where.

8 ranks per host, links of 25, 100 and 400 Gbit/s, bf16 messages of 256 KiB ... 1 GiB, the
library's defaults for the quantized schedules (int8, block 64, the default rotation), the
codec rates measured on this machine (--calibrate, at each message's element count up to 16 Mi:
large messages run the codec at the memory's pace), one codec thread per rank and 4 (option
`threads`; the model divides the codec's time by the threads, an ideal scaling). The network constants are assumptions for a datacenter TCP
network, written in the output: they are not measured here.

  bench/model/project.py --model build/release/tools/model/equarx-model --out DIR
writes DIR/projections.csv (every prediction) and DIR/projections.md (the tables).
"""
import csv
import os

from modelcli import calibrate, calibration_elements, parse_args, rate_args, run_model

RANKS = [64, 512, 4096]
PER_HOST = 8
LINKS = [25, 100, 400]
SIZES = [(256 << 10) << (2 * i) for i in range(7)]  # 256 KiB ... 1 GiB, x4
ASSUMED = dict(alpha_us=20, per_message_us=2, stack_ns_per_byte=0.5, shm_gbs=10, cores_per_host=64)
# (label, algorithm flags, hierarchical?)
SCHEDULES = [
    ("bf16 ring", ["--algorithm", "ring"], False),
    ("hierarchical bf16 ring", ["--algorithm", "ring"], True),
    ("int8 full_bidir", ["--algorithm", "full_bidir", "--block", "64", "--scale", "f32"], False),
    ("int8 semi", ["--algorithm", "semi", "--block", "64", "--scale", "f32"], False),
    ("int8 two_shot", ["--algorithm", "two_shot", "--block", "64", "--scale", "f32"], False),
    ("hierarchical int8 full_bidir", ["--algorithm", "full_bidir", "--block", "64", "--scale", "f32"], True),
    ("hierarchical int8 two_shot", ["--algorithm", "two_shot", "--block", "64", "--scale", "f32"], True),
]


def fmt_size(b):
    for unit, v in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= v:
            return "%g %s" % (b / v, unit)
    return "%d B" % b


def cell(rows, threads, link, ranks, size):
    """The rows of one table cell, and the fastest unquantized (bf16) time among them."""
    sel = [r for r in rows if r["threads"] == threads and r["link_gbit"] == link and
           r["ranks"] == ranks and int(r["size_bytes"]) == size]
    return sel, min(float(r["time_us"]) for r in sel if "bf16" in r["label"])


def main():
    a = parse_args(__doc__)
    first_size = {}  # calibration elements -> the smallest message measured at them
    for size in SIZES:
        first_size.setdefault(calibration_elements(size, "bf16"), size)
    by_elements = {e: calibrate(a.model, ["--block", "64", "--scale", "f32"], elements=e) for e in first_size}
    target = next(iter(by_elements.values()))["target"]
    rates = {size: by_elements[calibration_elements(size, "bf16")] for size in SIZES}

    rows = []
    for threads in (1, 4):
        for link in LINKS:
            for label, flags, hier in SCHEDULES:
                args = ["--csv", "--hosts", ",".join(str(r // PER_HOST) for r in RANKS),
                        "--ranks-per-host", str(PER_HOST), "--link-gbit", str(link), "-d", "bf16",
                        "--alpha-us", str(ASSUMED["alpha_us"]),
                        "--per-message-us", str(ASSUMED["per_message_us"]),
                        "--stack-ns-per-byte", str(ASSUMED["stack_ns_per_byte"]),
                        "--shm-gbs", str(ASSUMED["shm_gbs"]),
                        "--cores-per-host", str(ASSUMED["cores_per_host"]), "--threads", str(threads)
                        ] + flags
                if hier:
                    args.append("--hierarchical")
                for size in SIZES:
                    sized = args + rate_args(rates[size]) + ["-b", str(size), "-e", str(size)]
                    for r in csv.DictReader(run_model(a.model, sized).splitlines()):
                        if (r["schedule"] == "hierarchical") != hier:
                            continue
                        r.update(label=label, threads=threads, link_gbit=link,
                                 ranks=int(r["hosts"]) * int(r["ranks_per_host"]))
                        rows.append(r)

    with open(os.path.join(a.out, "projections.csv"), "w", newline="") as f:
        fields = ["threads", "link_gbit", "ranks", "hosts", "ranks_per_host", "size_bytes", "label",
                  "steps", "wire_bytes_per_rank", "host_egress_bytes", "latency_us", "network_us",
                  "codec_us", "stack_us", "memory_us", "time_us"]
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)

    out = ["Assumed network (not measured): %s. Codec rates measured on this machine (%s, one "
           "thread, G elements/s, at each message's element count up to 16 Mi): %s." % (
               ", ".join("%s %s" % kv for kv in ASSUMED.items()), target,
               "; ".join("%s: %s" % (fmt_size(first_size[e]), ", ".join(
                   "%s %s" % (k, v) for k, v in r.items() if k != "target"))
                   for e, r in by_elements.items())), ""]
    sizes = sorted({int(r["size_bytes"]) for r in rows})
    for threads in (1, 4):
        out.append("**%d codec thread%s per rank%s.** Each cell: the fastest schedule, and its "
                   "speedup over the faster unquantized one (flat or hierarchical bf16 ring)." % (threads, "" if threads == 1 else "s",
                                                    "" if threads == 1 else " (option `threads = 4`, scaling assumed ideal)"))
        out.append("")
        out.append("| link | ranks | " + " | ".join(fmt_size(s) for s in sizes) + " |")
        out.append("|---|---:|" + "---|" * len(sizes))
        for link in LINKS:
            for ranks in RANKS:
                cells = []
                for s in sizes:
                    sel, ring = cell(rows, threads, link, ranks, s)
                    best = min(sel, key=lambda r: float(r["time_us"]))
                    cells.append("%s %.2fx" % (best["label"], ring / float(best["time_us"])))
                out.append("| %d Gbit/s | %d | %s |" % (link, ranks, " | ".join(cells)))
        out.append("")
    # Crossovers: the smallest size from which some quantized schedule beats the bf16 ring.
    out.append("Crossover: the smallest message from which the best quantized schedule is faster "
               "than the best unquantized one, at every larger size too (\"never\": not even at 1 GiB).")
    out.append("")
    out.append("| codec threads | link | " + " | ".join("%d ranks" % r for r in RANKS) + " |")
    out.append("|---:|---|" + "---|" * len(RANKS))
    for threads in (1, 4):
        for link in LINKS:
            cells = []
            for ranks in RANKS:
                wins = []
                for s in sizes:
                    sel, ring = cell(rows, threads, link, ranks, s)
                    q = min(float(r["time_us"]) for r in sel if "bf16" not in r["label"])
                    wins.append(q < ring)
                first = next((i for i in range(len(sizes)) if all(wins[i:])), None)
                cells.append("never" if first is None else fmt_size(sizes[first]))
            out.append("| %d | %d Gbit/s | %s |" % (threads, link, " | ".join(cells)))
    text = "\n".join(out) + "\n"
    with open(os.path.join(a.out, "projections.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
