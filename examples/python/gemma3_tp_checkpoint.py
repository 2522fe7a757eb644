"""Makes a Hugging Face checkpoint of the project's Gemma 3 270M that transformers can split
for tensor parallelism, from the GGUF file scripts/fetch_model.sh fetches.

    .venv-torch2/bin/python examples/python/gemma3_tp_checkpoint.py \
        --gguf .venv/models/gemma-3-270m-q4_k_m.gguf --out .venv-torch2/models/gemma3-270m-tp

Why: Gemma 3 270M has 4 query heads and 1 key/value head. transformers' `tp_plan="auto"` splits
k_proj and v_proj by output rows (colwise), so with TP > 1 every rank would need a fraction of
one head, and loading fails, whatever the backend. Grouped-query attention uses each key/value
head for num_attention_heads / num_key_value_heads query heads; storing that head once per
query head (k_proj's and v_proj's rows repeated, num_key_value_heads = num_attention_heads)
computes the same attention: each query head reads the same keys and values as before. The
checkpoint then splits at TP = 1, 2 and 4.

What it does: transformers reads the GGUF file (its Q4_K_M/Q6_K weights dequantized to f32:
every value is exact in f32) and its tokenizer; k_proj and v_proj get their rows repeated;
the config says num_key_value_heads = num_attention_heads and loses the GGUF quantization
entry; the model is saved as f32 safetensors (about 1.1 GB) with the tokenizer. Before saving
it runs a probe prompt through both models and prints the largest logit difference (the repeated
heads change which GEMM shapes run, so the sums can round differently; it prints, it does not
decide). A second run with the output present does nothing.
"""

import argparse
import json
import pathlib
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

STAMP = "equarx-tp-checkpoint.json"


def replicate_kv_heads(model):
    """Stores each key/value head once per query head that reads it (see the module doc)."""
    cfg = model.config
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    if heads % kv:
        raise SystemExit(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    rep = heads // kv
    for layer in model.model.layers:
        attn = layer.self_attn
        for proj in (attn.k_proj, attn.v_proj):
            w = proj.weight.data  # [kv * head_dim, hidden]
            w = w.view(kv, cfg.head_dim, -1).repeat_interleave(rep, dim=0).reshape(heads * cfg.head_dim, -1)
            proj.weight = torch.nn.Parameter(w.contiguous(), requires_grad=False)
            proj.out_features = w.shape[0]
            if proj.bias is not None:
                raise SystemExit("k_proj/v_proj with a bias: not a Gemma 3 checkpoint this script knows")
        attn.num_key_value_groups = 1
    cfg.num_key_value_heads = heads
    return rep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True, help="the .gguf file (scripts/fetch_model.sh prints its path)")
    ap.add_argument("--out", required=True, help="directory for the checkpoint")
    args = ap.parse_args()
    gguf = pathlib.Path(args.gguf).resolve()
    out = pathlib.Path(args.out)
    if not gguf.is_file():
        raise SystemExit(f"no GGUF file at {gguf} (run scripts/fetch_model.sh)")
    stamp = {"gguf": gguf.name, "size": gguf.stat().st_size}
    if (out / STAMP).is_file() and json.loads((out / STAMP).read_text()) == stamp:
        print(out)
        return
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.eval()
    probe = tok("The capital of France is Paris, and the capital of Italy is", return_tensors="pt")
    with torch.no_grad():
        before = model(**probe).logits
        rep = replicate_kv_heads(model)
        after = model(**probe).logits
    diff = (after - before).abs().max().item()
    print(f"key/value heads repeated {rep}x; probe logits: largest difference {diff:.3g}, "
          f"same argmax at every position: {bool((after.argmax(-1) == before.argmax(-1)).all())}",
          file=sys.stderr)
    # The weights are plain f32 tensors now; only the loader's GGUF bookkeeping says otherwise.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / STAMP).write_text(json.dumps(stamp) + "\n")
    print(out)


if __name__ == "__main__":
    main()
