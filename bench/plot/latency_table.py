#!/usr/bin/env python3
"""Small messages on emulated hosts (bench/latency.sh): equarx's default call (algorithm auto,
no options) beside Open MPI's default MPI_Allreduce, Open MPI's ring and Gloo.

  bench/plot/latency_table.py [RESULTS_DIR] [--splice docs/benchmarks.md]

RESULTS_DIR (default bench/results/latency) holds latency/ (16 B .. 1 MiB, f32 and bf16, per
host count and link) and sweep/{small,large}/ (f32, 4 hosts, 1 Gbit/s, 1 KiB .. 64 MiB), each a
bench/netem/run.sh output (rows.jsonl, env.txt). Times are the median (p50) and p99 over the
run's calls of the slowest rank's time per call. "auto ran" names the schedule whose wire bytes
per rank equal auto's at that size (one of the fixed schedules timed beside it). With --splice
the text between <!-- generated:latency:begin --> and <!-- generated:latency:end --> in that
file is replaced.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, env_of, split_splice  # noqa: E402

PLOT = "bench/plot/latency_table.py"
PEERS = (("mpi", "Open MPI default"), ("mpi_ring", "Open MPI ring"), ("gloo_ring", "Gloo ring"))
FIXED = ("ring", "one_shot_raw", "recursive_doubling", "one_shot", "two_shot", "full_bidir")


def rows_of(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "header" and r.get("mode", "normal") == "normal":
            out.append(r)
    return out


def size_text(b):
    for unit, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s} {unit}"
    return f"{b} B"


def us(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def index(rows):
    """(hosts, rate, dtype, size, algo) -> row; a key of several launches' rows (the sweep's
    sweep_launch) -> its row of the median p50 (a launch's p50 and p99 beside it)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["hosts"], r["rate"], r["dtype"], r["size_bytes"], r["algo"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["time_us"])
        mid = dict(rs[len(rs) // 2])
        mid["time_us"] = statistics.median(r["time_us"] for r in rs)
        mid["launches"] = len(rs)
        out[key] = mid
    return out


def ran(idx, key, algo="auto"):
    auto = idx.get(key + (algo,))
    if not auto:
        return "?"
    same = [a for a in FIXED if (idx.get(key + (a,)) or {}).get("wire_bytes") == auto["wire_bytes"]]
    return "/".join(same) if same else "?"


def latency_table(idx, hosts, rate, dtype):
    sizes = sorted({k[3] for k in idx if k[:3] == (hosts, rate, dtype)})
    if not sizes:
        return []
    peers = [(a, name) for a, name in PEERS if dtype == "f32"]
    head = "| size | auto ran | equarx default p50 / p99 (us) | bf16 ring p50 (us) |" if dtype == "bf16" else \
        "| size | auto ran | equarx default p50 / p99 (us) | " + " | ".join(f"{n} p50 / p99" for _, n in peers) + \
        " | equarx / fastest peer (p50) |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for s in sizes:
        key = (hosts, rate, dtype, s)
        a = idx.get(key + ("auto",))
        if not a:
            continue
        cells = [size_text(s), ran(idx, key), f"{us(a['time_us'])} / {us(a.get('time_p99_us', 0))}"]
        if dtype == "bf16":
            ring = idx.get(key + ("ring",))
            cells.append(us(ring["time_us"]) if ring else "-")
        else:
            best = None
            for p, _ in peers:
                r = idx.get((hosts, rate, "f32", s, p))
                cells.append(f"{us(r['time_us'])} / {us(r.get('time_p99_us', 0))}" if r else "-")
                if r and (best is None or r["time_us"] < best):
                    best = r["time_us"]
            cells.append(f"{a['time_us'] / best:.2f}" if best else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def sweep_target(idx, key, row, mpi="mpi"):
    """(fastest peer's time / row's, whether the sweep's target is met, a note); Open MPI's
    default from the rows named `mpi` (the launch the row's call ran in)."""
    peers = [idx.get(key + (mpi if p == "mpi" else p,)) for p, _ in PEERS]
    best = min((r["time_us"] for r in peers if r), default=None)
    if not row or not best:
        return None, False, ""
    speed = best / row["time_us"]
    ok, note = speed >= 1.0, ""
    ring = idx.get(key + ("mpi_ring",))
    if key[3] == 64 << 20 and ring:
        ring_x = ring["time_us"] / row["time_us"]
        ok = ok and ring_x >= 3.5
        note = f" ({ring_x:.2f}x Open MPI's ring, target 3.5x)"
    return speed, ok, note


def sweep_table(idx):
    """The default call (auto on the cost model's table) against the peers, and where the run
    has them (run.sh's tuned config), auto's rows on the table equarx-tune measured in the same
    launch (auto_tuned) against Open MPI's default interleaved with them (mpi_beside_tuned) and
    the other peers."""
    sizes = sorted({k[3] for k in idx if k[:3] == (4, "1gbit", "f32")})
    out = ["| size | auto ran | equarx default p50 (us) | Open MPI default | Open MPI ring | Gloo ring | "
           "fastest peer / equarx | target | auto on equarx-tune's table: ran, p50 (us) | Open MPI default beside it "
           "| fastest peer / it | target |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    met = total = met_tuned = total_tuned = 0
    for s in sizes:
        key = (4, "1gbit", "f32", s)
        a = idx.get(key + ("auto",))
        if not a:
            continue
        speed, ok, note = sweep_target(idx, key, a)
        met += ok
        total += 1
        cells = [size_text(s), ran(idx, key), us(a["time_us"])] + \
            [us(r["time_us"]) if r else "-" for r in (idx.get(key + (p,)) for p, _ in PEERS)] + \
            [f"{speed:.2f}x" if speed else "-", ("met" if ok else "missed") + note]
        t = idx.get(key + ("auto_tuned",))
        if t:
            tspeed, tok, tnote = sweep_target(idx, key, t, mpi="mpi_beside_tuned")
            beside = idx.get(key + ("mpi_beside_tuned",))
            met_tuned += tok
            total_tuned += 1
            cells += [f"{ran(idx, key, 'auto_tuned')}, {us(t['time_us'])}", us(beside["time_us"]) if beside else "-",
                      f"{tspeed:.2f}x" if tspeed else "-", ("met" if tok else "missed") + tnote]
        else:
            cells += ["-", "-", "-", "-"]
        out.append("| " + " | ".join(cells) + " |")
    return out, met, total, met_tuned, total_tuned


def header(env):
    commit = env.get("commit", "?")
    dirty = " (+ uncommitted changes)" if "dirty" in commit else ""
    return (f"Provenance: generated by `bash bench/latency.sh` (`{PLOT}`) on {env.get('date', '?')}, commit "
            f"{commit[:7]}{dirty}; {env.get('kernel', '?')}; load at end: {env.get('load at end', '?')}.")


def main():
    args, splice = split_splice(sys.argv[1:])
    res = args[0] if args else "bench/results/latency"
    lat = rows_of(os.path.join(res, "latency", "rows.jsonl"))
    sweep = rows_of(os.path.join(res, "sweep", "small", "rows.jsonl")) + \
        rows_of(os.path.join(res, "sweep", "large", "rows.jsonl"))
    env = env_of(os.path.join(res, "latency", "env.txt"))
    text = [header(env), ""]
    idx = index(lat)
    for hosts in sorted({k[0] for k in idx}):
        for rate in sorted({k[1] for k in idx if k[0] == hosts}):
            for dtype in ("f32", "bf16"):
                t = latency_table(idx, hosts, rate, dtype)
                if not t:
                    continue
                link = "unshaped links" if rate == "none" else f"{rate.replace('gbit', ' Gbit/s')} links"
                text += [f"**{hosts} hosts, {link}, {dtype}** (`latency/raw/H{hosts}_{rate}_*`):", ""] + t + [""]
    if sweep:
        sidx = index(sweep)
        t, met, total, met_tuned, total_tuned = sweep_table(sidx)
        small = max((r["launches"] for r in sidx.values() if r["size_bytes"] < 1 << 20), default=1)
        tuned = (f"; on the table `equarx-tune` measured in the same launch, {met_tuned} of {total_tuned} sizes"
                 if total_tuned else "")
        text += [f"**Every power of two, 4 hosts at 1 Gbit/s, f32** (`sweep/`; below 1 MiB each time is "
                 f"the median of {small} launches' p50s, every launch side by side; fastest peer / equarx "
                 f"above 1 means equarx's default call is the fastest): {met} of {total} sizes met{tuned}.",
                 ""] + t
        parts = []
        for part in ("small", "large"):
            penv = env_of(os.path.join(res, "sweep", part, "env.txt"))
            parts.append(f"`sweep/{part}/`: {penv.get('date', '?')}, commit {penv.get('commit', '?')[:7]}")
        text += ["", "Provenance: " + "; ".join(parts) + "."]
    emit("\n".join(text).rstrip() + "\n", splice, "latency")


if __name__ == "__main__":
    main()
