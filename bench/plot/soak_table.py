#!/usr/bin/env python3
"""The soak's results (docs/reliability.md, "Soak") from the raw files of bench/soak.sh runs:
a row per run (its seed, calls, mismatches, elements outside the bound, refusals, RSS growth,
time, verdict), a provenance line (each run's build), the distinct random calls they add up to,
the per-rank figures and the command. A run is named by its files' common prefix, e.g.
bench/results/reliability/soak/calls20000_seed1_max64M_41b3b84 (.log, .jsonl, _env.txt).
Runs with the same seed and settings ran the same calls: they count once among the distinct
calls. With --splice FILE it replaces the text between <!-- generated:soak:begin --> and
<!-- generated:soak:end --> in FILE.

    python3 bench/plot/soak_table.py RUN_PREFIX... [--splice docs/reliability.md]
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_speed_table import emit, env_of, split_splice  # noqa: E402


def load(prefix):
    rows = [json.loads(l) for l in open(prefix + ".jsonl")]
    head = next(r for r in rows if r["type"] == "header")
    summ = next((r for r in rows if r["type"] == "summary"), None)
    if summ is None:
        sys.exit(f"soak_table.py: no summary row in {prefix}.jsonl (the run did not finish)")
    env = env_of(prefix + "_env.txt")
    status = re.search(r"exit status: (\d+)", env.get("wall seconds (mpirun)", ""))
    warm = next((r for r in rows if r["type"] == "warmup_end"), None)
    last = [r for r in rows if r["type"] == "interval"][-1]
    return dict(prefix=prefix, head=head, summ=summ, env=env, warm=warm, last=last,
                rc=status.group(1) if status else "?")


def arrows(a, b):
    return ", ".join(f"{x:,} → {y:,}" for x, y in zip(a, b))


def main():
    args, splice = split_splice(sys.argv[1:])
    if not args or any(a.startswith("-") for a in args):
        sys.exit("usage: soak_table.py RUN_PREFIX... [--splice FILE]")
    runs = [load(p) for p in args]
    out = ["<!-- written by bench/soak.sh (bench/plot/soak_table.py) from the raw files named "
           "below; do not edit by hand -->",
           "| seed | random calls | mismatched | elements outside the bound (checked) | refused "
           "| RSS growth after warm-up, trimmed (raw) | time | result |",
           "|---|---|---|---|---|---|---|---|"]
    distinct = {}
    for r in runs:
        h, s = r["head"], r["summ"]
        judged = "judged" if s["rss_judged"] else "not judged"
        out.append(
            f"| {h['seed']} | {s['calls']:,} (+ {s['warmup_phase1_calls']} warm-up at {h['max_bytes']:,} B, "
            f"{s['warmup_phase1_failures']} failed) | **{s['mismatched']}** | **{s['outside_bound']}** "
            f"({s['checked_elements']:,} of {s['elements']:,}) | {s['refused']} ({s['bad_refusals']} disagreeing) "
            f"| **{s['growth_pct']:+.3f}%** ({judged}; raw {s.get('raw_growth_pct', float('nan')):+.3f}%) "
            f"| {s['seconds']:.0f} s | {'**pass**' if s['pass'] else '**FAIL**'} (exit status {r['rc']}) |")
        distinct[(h["seed"], h["max_bytes"], h["ranks"])] = max(
            s["calls"], distinct.get((h["seed"], h["max_bytes"], h["ranks"]), 0))
    by_build = {}  # each build's seeds, in run order: every commit named once
    for r in runs:
        by_build.setdefault(r["env"].get("commit", "?")[:7], []).append(str(r["head"]["seed"]))
    out += ["", "Provenance: " + "; ".join(f"seed{'s' if len(v) > 1 else ''} {', '.join(v)}: build of {c}"
                                          for c, v in by_build.items()) + "."]
    seeds = sorted({r["head"]["seed"] for r in runs})
    out += ["", f"Distinct random calls: **{sum(distinct.values()):,}** from {len(seeds)} seed"
            f"{'s' if len(seeds) > 1 else ''} ({', '.join(map(str, seeds))}) in {len(runs)} run"
            f"{'s' if len(runs) > 1 else ''} on {runs[0]['head']['ranks']} ranks over sockets, sizes 1 B … "
            f"{runs[0]['head']['max_bytes']:,} B (a call's draw and inputs depend only on the seed and "
            "its index: runs of one seed repeat the same calls). Per rank, after warm-up → end:", ""]
    for r in runs:
        s, w, last = r["summ"], r["warm"], r["last"]
        heap = (arrows(w["heap_used_kib"], last["heap_used_kib"]) + " KiB"
                if w and "heap_used_kib" in w else "not sampled")
        out.append(f"- seed {r['head']['seed']}: trimmed RSS {arrows(s['rss_warm_kib'], s['rss_end_kib'])} KiB; "
                   f"raw RSS {arrows(s.get('raw_rss_warm_kib', []), s.get('raw_rss_end_kib', []))} KiB; "
                   f"allocator's memory in use {heap}; SIMD target "
                   f"{r['env'].get('kernels use', '?').split()[0] if r['env'].get('kernels use') else '?'}; "
                   f"{r['env'].get('date', '?')}. Raw: `{r['prefix']}.log`, `.jsonl`, `_env.txt`, `_load.txt`")
    h = runs[0]["head"]
    m = re.search(r"_max([^_]+)_", os.path.basename(runs[0]["prefix"]))
    max_bytes = m.group(1) if m else str(h["max_bytes"])
    out += ["", "```sh",
            f"bash bench/soak.sh --calls {h['calls']} --seeds {','.join(map(str, seeds))} --max-bytes {max_bytes}",
            "# each run:", runs[0]["env"].get("command", "?"), "```"]
    # Raw file names and the run's command carry the build's commit: docs keep commits to the
    # Provenance line, so elsewhere it reads <commit>.
    commits = {r["env"].get("commit", "")[:7] for r in runs} - {""}
    for i, line in enumerate(out):
        if not line.startswith("Provenance: "):
            for c in commits:
                out[i] = out[i].replace(c, "<commit>")
    emit("\n".join(out), splice, "soak")


if __name__ == "__main__":
    main()
