"""Child of test_torch.py, started by torchrun (python -m torch.distributed.run): the way
PyTorch users launch jobs. Takes its rank from torchrun's environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT: init_method env://), starts the "equarx" backend, and checks
dist.all_reduce against the C++ in-process AllReduce of every rank's input (each rank can make
every input: they are seeded by rank). Writes OUTDIR/torchrun_rRANK.txt: "ok" or what differed.

    python -m torch.distributed.run --nproc_per_node N torchrun_worker.py OUTDIR
"""

import os
import pathlib
import sys

import numpy as np
import torch
import torch.distributed as dist

import equarx
import equarx.torch as et

out = pathlib.Path(sys.argv[1])
dist.init_process_group("equarx")  # env:// from torchrun
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
xs = [np.random.default_rng(500 + r).standard_normal(30001).astype(np.float32) for r in range(world)]
problems = []
for opts in (dict(), dict(algorithm="two_shot", codec="int4"), dict(algorithm="ring")):
    t = torch.from_numpy(xs[rank].copy())
    with et.options(**opts):
        dist.all_reduce(t)
    want = equarx.allreduce(xs, **opts)[0]
    if not np.array_equal(t.numpy().view(np.uint32), want.view(np.uint32)):
        problems.append(f"{opts}: differs from the C++ AllReduce")
(out / f"torchrun_r{rank}.txt").write_text("ok\n" if not problems else "\n".join(problems) + "\n")
dist.barrier()
dist.destroy_process_group()
