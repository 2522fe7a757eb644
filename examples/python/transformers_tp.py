"""Tensor-parallel generation with Hugging Face transformers over the equarx backend.

    # once: a checkpoint transformers can split (examples/python/gemma3_tp_checkpoint.py)
    .venv-torch2/bin/python examples/python/gemma3_tp_checkpoint.py \
        --gguf "$(bash scripts/fetch_model.sh)" --out .venv-torch2/models/gemma3-270m-tp
    # TP = 2 on this machine
    OMP_NUM_THREADS=1 .venv-torch2/bin/torchrun --nproc_per_node 2 examples/python/transformers_tp.py \
        --model .venv-torch2/models/gemma3-270m-tp --tokens 32
    # the same without torchrun: one process, no AllReduce (the reference)
    .venv-torch2/bin/python examples/python/transformers_tp.py --model .venv-torch2/models/gemma3-270m-tp

What a user does, in order:
1. `dist.init_process_group("equarx")` (importing equarx.torch registers the backend). It must
   come before `from_pretrained`: transformers starts a gloo group for CPU tensors itself when
   none exists.
2. `from_pretrained(..., distributed_config=DistributedConfig(tp_plan="auto"))`: each rank
   loads its shard of every split weight; the row-split layers (o_proj, down_proj) end with
   `dist.all_reduce` on the group, which is equarx's AllReduce (2 per layer per forward), and
   the column-split LM head gathers its logits with `all_gather` (forwarded to gloo).
3. Greedy decoding with the KV cache, here a plain loop (one forward per token) so that the
   time to the first token (the prompt's forward) and each decode step are timed apart.

Every rank computes the same tokens; the script checks that they agree (gathered on the group)
and rank 0 prints the text and the timings. --json writes rank 0's tokens and timings (and with
--logits the prompt's last logits) as one JSON line.

Options: --backend equarx|gloo (the group's backend; gloo to compare), --prompt-tokens N (the
beginning of apps/gemma3/data/prompt.txt, BOS first), --tokens M (new tokens), --repeat R
(the whole generation R times, after one untimed warm-up when R > 1; timings are medians),
--algorithm/--codec (equarx options for the group: equarx.torch.options).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM, AutoTokenizer, DistributedConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROMPT = ROOT / "apps" / "gemma3" / "data" / "prompt.txt"


def prompt_ids(tok, n):
    """BOS and the first n-1 tokens of the project's prompt text, as a [1, n] tensor."""
    ids = tok(PROMPT.read_text(), add_special_tokens=False)["input_ids"]
    if n - 1 > len(ids):
        raise SystemExit(f"--prompt-tokens {n}: the prompt text has {len(ids) + 1} tokens with BOS")
    return torch.tensor([[tok.bos_token_id] + ids[: n - 1]])


def load(model_dir, distributed):
    kw = {"distributed_config": DistributedConfig(tp_plan="auto")} if distributed else {}
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, **kw)
    model.eval()
    return model, AutoTokenizer.from_pretrained(model_dir)


@torch.no_grad()
def generate(model, ids, tokens, barrier=None):
    """Greedy decoding: the prompt's forward, then one forward per new token with the cache.
    Returns (new token ids, the prompt's last logits, seconds to the first token, seconds per
    later token)."""
    if barrier is not None:
        barrier()
    t0 = time.perf_counter()
    # logits_to_keep=1: the LM head runs on the last position only, as generate() does; all 512
    # positions' logits would be gathered over the group (262144 per position, split 4 ways).
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    first_logits = out.logits[0, -1].clone()
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    ttft = time.perf_counter() - t0
    got, steps = [int(nxt)], []
    cache = out.cache
    for _ in range(tokens - 1):
        t = time.perf_counter()
        out = model(input_ids=nxt, cache=cache, use_cache=True)
        cache = out.cache
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        steps.append(time.perf_counter() - t)
        got.append(int(nxt))
    return got, first_logits, ttft, steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="checkpoint directory (gemma3_tp_checkpoint.py)")
    ap.add_argument("--backend", default="equarx", choices=["equarx", "gloo"])
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--algorithm")
    ap.add_argument("--codec")
    ap.add_argument("--json", help="rank 0 writes its tokens and timings here, as one JSON line")
    ap.add_argument("--logits", action="store_true", help="--json also holds the prompt's last logits")
    args = ap.parse_args()
    if args.prompt_tokens < 1 or args.tokens < 1 or args.repeat < 1:
        raise SystemExit("--prompt-tokens, --tokens and --repeat must be at least 1")
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    distributed = "RANK" in os.environ  # started by torchrun
    rank, world = 0, 1
    if distributed:
        if args.backend == "equarx":
            import equarx.torch as et  # registers the backend
        dist.init_process_group(args.backend)
        rank, world = dist.get_rank(), dist.get_world_size()
        if args.backend == "equarx":
            opts = {k: v for k, v in (("algorithm", args.algorithm), ("codec", args.codec)) if v}
            if opts:
                et.options(**opts)
        elif args.algorithm or args.codec:
            raise SystemExit("--algorithm and --codec are equarx options (--backend equarx)")

    model, tok = load(args.model, distributed)
    ids = prompt_ids(tok, args.prompt_tokens)
    barrier = dist.barrier if distributed else None
    runs = [generate(model, ids, args.tokens, barrier) for _ in range(args.repeat + (args.repeat > 1))]
    runs = runs[1:] if args.repeat > 1 else runs  # the first of several is the warm-up
    got, logits = runs[0][0], runs[0][1]
    if any(r[0] != got for r in runs):
        raise SystemExit(f"rank {rank}: the repetitions gave different tokens")
    if distributed:
        every = [None] * world
        dist.all_gather_object(every, got)
        if any(e != got for e in every):
            raise SystemExit(f"ranks disagree on the tokens: {every}")
    ttft = statistics.median(r[2] for r in runs)
    step = statistics.median(statistics.median(r[3]) for r in runs) if args.tokens > 1 else None
    decode = statistics.median((args.tokens - 1) / sum(r[3]) for r in runs) if args.tokens > 1 else None
    if rank == 0:
        print(tok.decode(got))
        print(f"TP = {world} ({args.backend if distributed else 'one process'}), {args.prompt_tokens} prompt "
              f"tokens, {args.tokens} new: time to first token {ttft * 1e3:.1f} ms"
              + (f", decode {decode:.2f} tokens/s (median step {step * 1e3:.1f} ms)" if step else ""), file=sys.stderr)
        if args.json:
            row = {
                "type": "transformers_generate", "tp": world, "backend": args.backend if distributed else None,
                "algorithm": args.algorithm, "codec": args.codec,
                "prompt_tokens": args.prompt_tokens, "tokens": got, "repeat": args.repeat,
                "ttft_s": [r[2] for r in runs], "decode_tokens_per_s": [(args.tokens - 1) / sum(r[3]) for r in runs]
                if args.tokens > 1 else [], "median_step_s": step, "torch": torch.__version__}
            if args.logits:
                row["last_prompt_logits"] = logits.tolist()
            pathlib.Path(args.json).write_text(json.dumps(row) + "\n")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
