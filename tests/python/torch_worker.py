"""Child of test_torch.py: one rank of a gloo process group on 127.0.0.1.

    python torch_worker.py SCENARIO RANK WORLD PORT OUTDIR

Writes what it computed to OUTDIR/SCENARIO_rRANK_*.npy (the parent compares), and for the
error scenarios OUTDIR/SCENARIO_rRANK.txt with the exception's type and message.
"""

import pathlib
import sys
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

import equarx.torch as et

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch_worker_configs  # noqa: E402

scenario, rank, world, port, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], pathlib.Path(sys.argv[5])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                        timeout=timedelta(seconds=60))
torch.manual_seed(0)

CONFIGS = torch_worker_configs.CONFIGS


def inputs(cfg, r):
    x = np.random.default_rng(100 + r).standard_normal(cfg["count"]).astype(np.float32)
    return torch.from_numpy(x).to(getattr(torch, cfg["dtype"]))


def save(name, t):
    a = t.detach().float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    np.save(out / f"{scenario}_r{rank}_{name}.npy", a)


if scenario == "bitwise":
    for i, cfg in enumerate(CONFIGS):
        t = inputs(cfg, rank)
        opts = {k: v for k, v in cfg.items() if k not in ("dtype", "count")}
        et.all_reduce(t, **opts)
        # bf16 results are exactly representable in f32: saving as f32 keeps every bit.
        save(f"c{i}", t)

elif scenario == "feedback":
    # Three calls with error feedback on the same inputs; the residual carries over.
    x = inputs(dict(dtype="float32", count=6001), rank)
    res = np.zeros(6001, np.float32)
    for k in range(3):
        t = x.clone()
        et.all_reduce(t, codec="int4", residual=res)
        save(f"y{k}", t)
        save(f"res{k}", res.copy())

elif scenario == "hook":
    # The same DDP training twice from the same weights and batches: plain (f32 AllReduce)
    # and with the hook (int8, stochastic rounding, error feedback).
    def train(hook):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        state = et.HookState(codec="int8", rounding="stochastic", seed=3, error_feedback=True)
        if hook:
            ddp.register_comm_hook(state, et.allreduce_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(1000 + rank)
        w = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
        losses = []
        for step in range(40):
            xb = torch.randn(64, 16, generator=g)
            loss = torch.nn.functional.mse_loss(ddp(xb), xb @ w)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return model, losses, state
    _, base_losses, _ = train(False)
    model, losses, state = train(True)
    save("params", torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    save("losses", np.array(losses))
    save("base_losses", np.array(base_losses))
    save("bytes", np.array([state.bytes_sent, state.step]))

elif scenario == "errors":
    msgs = []
    def attempt(what, fn):
        try:
            fn()
            msgs.append(f"{what}: no error")
        except Exception as e:  # noqa: BLE001 - the parent checks type and message
            msgs.append(f"{what}: {type(e).__name__}: {e}")
    # Shapes that differ between ranks: every rank must raise MismatchError.
    attempt("shape", lambda: et.all_reduce(torch.ones(100 + rank)))
    attempt("codec", lambda: et.all_reduce(torch.ones(64), codec="int8" if rank else "int4"))
    # Local argument errors (no communication happens).
    attempt("dtype", lambda: et.all_reduce(torch.ones(8, dtype=torch.float64)))
    attempt("layout", lambda: et.all_reduce(torch.ones(8, 8).t()))
    attempt("badcodec", lambda: et.all_reduce(torch.ones(8), codec="int3"))
    attempt("sr_fp8", lambda: et.all_reduce(torch.ones(8), codec="fp8_e5m2", rounding="stochastic"))
    attempt("residual", lambda: et.all_reduce(torch.ones(8), residual=np.zeros(7, np.float32)))
    # Still usable afterwards.
    t = torch.full((10,), float(rank + 1))
    et.all_reduce(t, codec="int8")
    msgs.append(f"after: {t[0].item()}")
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")

dist.barrier()
dist.destroy_process_group()
