#!/usr/bin/env python3
"""gemma3_table.py ROWS.jsonl [TP1.jsonl] — the speed table of docs/gemma3.md.

ROWS: `equarx-gemma3 bench --sweep` rows from bench/netem/run.sh (config gemma3), tagged with
the link rate. For every rate and prompt length: median prefill seconds of the bf16 ring and of
each int8 EQuARX configuration, the share of the pass spent inside AllReduce (mean over ranks),
and the speedup over the bf16 ring. TP1: the same lengths at TP = 1 (no AllReduce).
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    rows = load(sys.argv[1])
    tp1 = {r["tokens"]: r["prefill_s"] for r in load(sys.argv[2])} if len(sys.argv) > 2 else {}
    algos = ["ring", "full_bidir", "semi", "two_shot"]
    print("| link | tokens | bf16 ring s (AR share) | full_bidir rs+ag int8 | semi rs+ag int8 "
          "| two_shot rs+ag int8 | TP-1, no AllReduce |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rates = sorted({r["rate"] for r in rows}, key=lambda s: float(s.rstrip("mgbit") or 0) *
                   (1000 if "gbit" in s else 1))
    for rate in rates:
        for tokens in sorted({r["tokens"] for r in rows if r["rate"] == rate}):
            by = {r["algo"]: r for r in rows if r["rate"] == rate and r["tokens"] == tokens}
            if "ring" not in by:
                continue
            ring = by["ring"]["prefill_s"]
            cells = []
            for a in algos:
                if a not in by:
                    cells.append("–")
                    continue
                r = by[a]
                share = 100 * r["reduce_s"] / r["prefill_s"]
                agree = "" if r["ranks_agree"] else " ranks DISAGREE"
                if a == "ring":
                    cells.append(f"{r['prefill_s']:.2f} ({share:.0f}%){agree}")
                else:
                    cells.append(f"{r['prefill_s']:.2f} ({share:.0f}%) **{ring / r['prefill_s']:.2f}x**{agree}")
            t1 = f"{tp1[tokens]:.2f}" if tokens in tp1 else "–"
            print(f"| {rate} | {tokens} | " + " | ".join(cells) + f" | {t1} |")


if __name__ == "__main__":
    main()
