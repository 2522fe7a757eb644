"""Child of test_transformers.py, started by torchrun: transformers' tensor parallelism over the
"equarx" backend, with every AllReduce it makes checked against an independent sum.

    python -m torch.distributed.run --nproc_per_node N transformers_worker.py OUTDIR MODEL_DIR

The model is loaded once with DistributedConfig(tp_plan="auto") and generates greedily
(examples/python/transformers_tp.py's load and generate) under two option sets of the group:
  default   no options: the library's default call;
  int8      algorithm two_shot, codec int8: quantized, whatever the size and hosts.
torch.distributed.all_reduce, which transformers' row-split layers call, is wrapped: before
equarx sums a tensor, every rank's input is gathered over a separate gloo group, and gloo's own
sum of it is taken. After the call the result must be
  - within equarx.error_bound (the documented bound, for the options, ranks and
    ranks_per_host of this call) of the f64 sum of the gathered inputs, element by element;
  - under `default`, bit for bit gloo's sum (every rank is on this host, where the default call
    is the unquantized f32 sum, and with two ranks both sums are x0 + x1 in f32).
Writes OUTDIR/transformers_rRANK.json: per option set the tokens, the prompt's last logits, and
counts of checked calls, calls outside the bound, calls differing from gloo's sum, and the
largest error as a fraction of its bound.
"""

import json
import pathlib
import sys

import numpy as np
import torch
import torch.distributed as dist

import equarx
import equarx.torch as et

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
import transformers_tp as example  # noqa: E402 - after the path

out, model_dir = pathlib.Path(sys.argv[1]), sys.argv[2]
TOKENS, PROMPT = 12, 32
CONFIGS = {"default": {}, "int8": {"algorithm": "two_shot", "codec": "int8"}}

dist.init_process_group("equarx")
rank, world = dist.get_rank(), dist.get_world_size()
side = dist.new_group(backend="gloo")
native = dist.all_reduce
stats = {}
active = {"name": None}


def checked(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    s = stats[active["name"]]
    if dist.get_backend(group) != "equarx" or tensor.dtype != torch.float32 or op != dist.ReduceOp.SUM or async_op:
        s["unchecked"] += 1
        return native(tensor, op=op, group=group, async_op=async_op)
    parts = [torch.empty_like(tensor) for _ in range(world)]
    dist.all_gather(parts, tensor.contiguous(), group=side)
    glo = tensor.clone()
    native(glo, group=side)
    work = native(tensor, op=op, group=group)
    xs = [p.numpy().reshape(-1) for p in parts]
    exact = np.sum(np.stack([x.astype(np.float64) for x in xs]), axis=0)
    comm = et._communicator(group)
    bound = equarx.error_bound(xs, hosts=comm.comm.ranks_per_host, **comm.defaults)
    got = tensor.numpy().reshape(-1)
    err = np.abs(got.astype(np.float64) - exact)
    s["calls"] += 1
    s["outside"] += int(np.any(err > bound))
    s["differ_from_gloo"] += int(not np.array_equal(got.view(np.uint32), glo.numpy().reshape(-1).view(np.uint32)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
    s["worst_error_over_bound"] = max(s["worst_error_over_bound"], float(ratio.max()))
    return work


dist.all_reduce = checked
model, tok = example.load(model_dir, True)
ids = example.prompt_ids(tok, PROMPT)
report = {"world": world}
for name, opts in CONFIGS.items():
    active["name"] = name
    stats[name] = {"calls": 0, "unchecked": 0, "outside": 0, "differ_from_gloo": 0, "worst_error_over_bound": 0.0}
    with et.options(**opts):
        got, logits, _, _ = example.generate(model, ids, TOKENS, dist.barrier)
    report[name] = dict(stats[name], tokens=got, last_prompt_logits=logits.tolist())
dist.all_reduce = native
(out / f"transformers_r{rank}.json").write_text(json.dumps(report) + "\n")
dist.barrier()
dist.destroy_process_group()
