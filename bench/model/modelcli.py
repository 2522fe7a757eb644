"""What bench/model/validate.py and project.py share: running equarx-model, its measured codec
rates, and their command line (--model BINARY --out DIR)."""
import argparse
import os
import re
import subprocess


def run_model(model, args):
    """equarx-model's standard output for these arguments (a failure raises)."""
    return subprocess.run([model] + args, check=True, capture_output=True, text=True).stdout


def calibration_elements(size_bytes, dtype):
    """The buffer size at which to measure the codec for a message of size_bytes: the message's
    own element count, within what equarx-model --calibrate-elements takes (16 Ki .. 16 Mi
    here: past 16 Mi elements, 32-64 MiB, every cache is long exceeded)."""
    return min(max(size_bytes // (4 if dtype == "f32" else 2), 1 << 14), 1 << 24)


def calibrate(model, extra=(), elements=1 << 20):
    """The codec rates equarx-model --calibrate measures on this machine on buffers of
    `elements` elements (G elements/s per thread, as text) and the SIMD target:
    {dae, decode, add, rotate, target}."""
    text = run_model(model, ["--calibrate", "--calibrate-elements", str(elements), "--hosts", "2",
                             "-b", "64K", "-e", "64K"] + list(extra))
    m = re.search(r"dae ([\d.]+) decode ([\d.]+) add ([\d.]+) rotate ([\d.]+) \(measured, (\w+)\)", text)
    return dict(zip(("dae", "decode", "add", "rotate", "target"), m.groups()))


def rate_args(rates):
    """The flags that give equarx-model those rates."""
    return ["--dae-gelems", rates["dae"], "--decode-gelems", rates["decode"],
            "--add-gelems", rates["add"], "--rotate-gelems", rates["rotate"]]


def parse_args(doc):
    """--model and --out of either script; creates the output directory."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return a
