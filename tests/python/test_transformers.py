"""Hugging Face transformers' tensor parallelism over the "equarx" backend, with the real model.

The project's Gemma 3 270M (scripts/fetch_model.sh) becomes a checkpoint transformers can split
(examples/python/gemma3_tp_checkpoint.py, made once into this environment's models/ folder).
Three runs of a 32-token prompt and 12 greedy tokens:
  - one process, no AllReduce (examples/python/transformers_tp.py without torchrun): the reference;
  - TP = 2 over gloo (the same example under torchrun, --backend gloo): the exact peer;
  - TP = 2 over equarx (transformers_worker.py under torchrun), with the default call and with
    int8 two_shot, every AllReduce checked against the f64 sum of the gathered inputs and the
    documented bound (equarx.error_bound), and against gloo's sum.
Runs under PyTorch 2.x only (transformers needs it); a missing transformers, checkpoint or
model skips, or fails under CI=true.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import _deps

torch = _deps.import_or_missing("torch")
if int(torch.__version__.split(".")[0]) < 2:
    _deps.missing(f"transformers needs PyTorch 2.x, this is {torch.__version__}")
_deps.import_or_missing("transformers")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "examples" / "python"
GGUF = pathlib.Path(os.environ.get("EQUARX_GEMMA3_MODEL", ROOT / ".venv" / "models" / "gemma-3-270m-q4_k_m.gguf"))
CHECKPOINT = pathlib.Path(sys.prefix) / "models" / "gemma3-270m-tp"
TOKENS, PROMPT = 12, 32  # as transformers_worker.py
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def run(cmd, limit=600):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=limit)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{p.stdout}\n{p.stderr[-6000:]}"
    return p


def torchrun(world, script, *args):
    from test_torch import free_port  # noqa: PLC0415 - test_torch imports torch at module level
    return run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world),
                "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script), *map(str, args)])


@pytest.fixture(scope="module")
def checkpoint():
    if not GGUF.is_file():
        _deps.missing(f"no Gemma 3 model at {GGUF} (scripts/fetch_model.sh, or set EQUARX_GEMMA3_MODEL)")
    run([sys.executable, str(EXAMPLES / "gemma3_tp_checkpoint.py"), "--gguf", str(GGUF), "--out", str(CHECKPOINT)])
    return CHECKPOINT


def example(tmp_path, name, world=1, *args):
    out = tmp_path / f"{name}.json"
    cmd = [EXAMPLES / "transformers_tp.py", "--model", CHECKPOINT, "--prompt-tokens", PROMPT, "--tokens", TOKENS,
           "--json", out, "--logits", *args]
    if world == 1:
        run([sys.executable, *map(str, cmd)])
    else:
        torchrun(world, *cmd)
    return json.loads(out.read_text())


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32), np.asarray(b, np.float32).view(np.uint32))


def test_tp2_over_equarx_gives_the_reference_tokens_and_every_call_is_within_its_bound(checkpoint, tmp_path):
    ref = example(tmp_path, "tp1")
    gloo = example(tmp_path, "gloo", 2, "--backend", "gloo")
    torchrun(2, HERE / "transformers_worker.py", tmp_path, checkpoint)
    ranks = [json.loads((tmp_path / f"transformers_r{r}.json").read_text()) for r in range(2)]
    layers = json.loads((checkpoint / "config.json").read_text())["num_hidden_layers"]
    assert len(ref["tokens"]) == TOKENS and gloo["tokens"] == ref["tokens"]
    for name in ("default", "int8"):
        for r, rep in enumerate(ranks):
            got = rep[name]
            # 2 row-split layers per decoder layer, one forward per token
            assert got["calls"] == 2 * layers * TOKENS and got["unchecked"] == 0, (name, r, got)
            assert got["outside"] == 0, (name, r, got["worst_error_over_bound"])
            assert got["tokens"] == ref["tokens"], (name, r)
            assert same_bits(got["last_prompt_logits"], ranks[0][name]["last_prompt_logits"]), (name, r)
    # The default call on one host is the exact f32 sum: every call is gloo's, and so are the logits.
    assert all(rep["default"]["differ_from_gloo"] == 0 for rep in ranks)
    assert same_bits(ranks[0]["default"]["last_prompt_logits"], gloo["last_prompt_logits"])
    # int8 two_shot quantized every call (none came back equal to the exact sum).
    assert all(rep["int8"]["differ_from_gloo"] == rep["int8"]["calls"] for rep in ranks)
