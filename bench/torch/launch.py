"""The start shared by the torch benchmarks: this process's rank from the launcher
(RANK/WORLD_SIZE under torchrun, OMPI_COMM_WORLD_RANK/SIZE under mpirun), the "equarx" process
group (under torchrun through its store, env://; else over MASTER_ADDR:MASTER_PORT), and a gloo
group from the same store."""

import datetime
import os
import sys

import torch.distributed as dist

import equarx.torch  # noqa: F401 - registers the "equarx" backend


def init(timeout_s, who):
    """(rank, world, gloo group); exits with a message naming `who` when no launcher set a rank."""
    env = os.environ
    torchrun = "TORCHELASTIC_RUN_ID" in env
    if torchrun:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    else:
        rank = int(env.get("OMPI_COMM_WORLD_RANK", env.get("RANK", "-1")))
        world = int(env.get("OMPI_COMM_WORLD_SIZE", env.get("WORLD_SIZE", "-1")))
    if rank < 0 or world < 1:
        sys.exit(f"{who}: no rank: run under mpirun or torchrun (RANK, WORLD_SIZE)")
    timeout = datetime.timedelta(seconds=timeout_s)
    if torchrun:  # the rendezvous torchrun made: env://, its store
        dist.init_process_group("equarx", timeout=timeout)
    else:
        dist.init_process_group("equarx", init_method=f"tcp://{env.get('MASTER_ADDR', '127.0.0.1')}:"
                                f"{env.get('MASTER_PORT', '29533')}", rank=rank, world_size=world, timeout=timeout)
    return rank, world, dist.new_group(backend="gloo", timeout=timeout)
