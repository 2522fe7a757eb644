"""Child of test_torch.py: one rank of a torch.distributed job on 127.0.0.1.

    python torch_worker.py SCENARIO RANK WORLD PORT OUTDIR

Most scenarios start the "equarx" backend (dist.init_process_group("equarx")); "gloo_side"
starts gloo and uses equarx.torch's functions on it; "bootstrap_size" builds no process group,
only a TCPStore and equarx.bootstrap.from_store with a world size that differs between ranks.
Writes what it computed to OUTDIR/SCENARIO_rRANK_*.npy (the parent compares), and for the
error scenarios OUTDIR/SCENARIO_rRANK.txt with "what: ExceptionType: message" lines.
"""

import os
import pathlib
import signal
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

import equarx
import equarx.bootstrap
import equarx.torch as et

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch_worker_configs  # noqa: E402

scenario, rank, world, port, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], pathlib.Path(sys.argv[5])
TIMEOUT = timedelta(seconds=int(os.environ.get("WORKER_TIMEOUT_S", "60")))
CONFIGS = torch_worker_configs.CONFIGS
msgs = []


def init(backend="equarx"):
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=TIMEOUT)
    torch.manual_seed(0)


def inputs(cfg, r):
    x = np.random.default_rng(100 + r).standard_normal(cfg["count"]).astype(np.float32)
    return torch.from_numpy(x).to(getattr(torch, cfg["dtype"]))


def save(name, t):
    a = t.detach().float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    np.save(out / f"{scenario}_r{rank}_{name}.npy", a)


def attempt(what, fn):
    try:
        r = fn()
        msgs.append(f"{what}: no error{'' if r is None else ' ' + str(r)}")
    except Exception as e:  # noqa: BLE001 - the parent checks type and message
        msgs.append(f"{what}: {type(e).__name__}: {' '.join(str(e).split())}")


def options_of(cfg):
    return {k: v for k, v in cfg.items() if k not in ("dtype", "count")}


def train(hook, state=None, steps=40):
    """A small regression trained with DDP from fixed weights and per-rank batches."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if hook:
        ddp.register_comm_hook(state, et.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1000 + rank)
    w = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
    losses = []
    for _ in range(steps):
        xb = torch.randn(64, 16, generator=g)
        loss = torch.nn.functional.mse_loss(ddp(xb), xb @ w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


if scenario == "bitwise":
    # dist.all_reduce through the backend with the group's options set by et.options, and
    # et.all_reduce with the same options per call: both must give the C++ bits.
    init()
    for i, cfg in enumerate(CONFIGS):
        t = inputs(cfg, rank)
        with et.options(**options_of(cfg)):
            dist.all_reduce(t)
        save(f"c{i}", t)  # bf16/f16 results are exact in f32: saving as f32 keeps every bit
        u = inputs(cfg, rank)
        et.all_reduce(u, **options_of(cfg))
        save(f"p{i}", u)
    # AVG divides the sum by the group's size.
    t = inputs(CONFIGS[1], rank)
    with et.options(**options_of(CONFIGS[1])):
        dist.all_reduce(t, op=dist.ReduceOp.AVG) if hasattr(dist.ReduceOp, "AVG") else et.all_reduce(t, average=True)
    save("avg", t)
    # Async calls complete in order; the work objects and their futures report completion.
    ts = [inputs(CONFIGS[1], rank) * (k + 1) for k in range(4)]
    with et.options(**options_of(CONFIGS[1])):
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        futs = [w.get_future() for w in works]
        for w in works:
            w.wait()
    assert all(w.is_completed() and w.is_success() for w in works)
    assert all(f.done() for f in futs)
    for k, t in enumerate(ts):
        save(f"async{k}", t)
    # The other collectives go through gloo.
    b = torch.tensor([float(rank) + 5.0])
    dist.broadcast(b, 0)
    gathered = [torch.zeros(3) for _ in range(world)]
    dist.all_gather(gathered, torch.full((3,), float(rank)))
    dist.barrier()
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    save("fallback", torch.cat([b] + gathered + [torch.tensor([float(o["rank"]) for o in objs])]))
    save("backend", np.array([dist.get_backend() == "equarx"], np.float32))

elif scenario == "feedback":
    # Three calls with error feedback on the same inputs; the residual carries over.
    init()
    x = inputs(dict(dtype="float32", count=6001), rank)
    res = np.zeros(6001, np.float32)
    for k in range(3):
        t = x.clone()
        et.all_reduce(t, algorithm="two_shot", codec="int4", residual=res)
        save(f"y{k}", t)
        save(f"res{k}", res.copy())

elif scenario in ("hook", "gloo_side"):
    # The same DDP training twice from the same weights and batches: plain (the group's own
    # all_reduce: f32 through equarx's unquantized ring, or gloo) and with the hook (two_shot
    # int8, stochastic rounding, error feedback; `auto` would keep this small model's buckets
    # on one host unquantized).
    init("equarx" if scenario == "hook" else "gloo")
    if scenario == "hook":
        et.options(algorithm="ring")  # DDP's own all_reduce: unquantized
    _, base_losses = train(False)
    state = et.HookState(algorithm="two_shot", codec="int8", rounding="stochastic", seed=3, error_feedback=True)
    model, losses = train(True, state)
    save("params", torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    save("losses", np.array(losses))
    save("base_losses", np.array(base_losses))
    save("bytes", np.array([state.bytes_sent, state.step]))

elif scenario == "errors":
    init()
    # Shapes, dtypes or options that differ between ranks: every rank must raise MismatchError.
    attempt("shape", lambda: dist.all_reduce(torch.ones(100 + rank)))
    attempt("dtype_mismatch", lambda: dist.all_reduce(torch.ones(64, dtype=torch.float32 if rank else torch.bfloat16)))
    attempt("codec", lambda: et.all_reduce(torch.ones(64), codec="int8" if rank else "int4"))
    # Local argument errors (no communication happens).
    attempt("dtype", lambda: dist.all_reduce(torch.ones(8, dtype=torch.float64)))
    attempt("layout", lambda: dist.all_reduce(torch.ones(8, 8).t()))
    attempt("op", lambda: dist.all_reduce(torch.ones(8), op=dist.ReduceOp.MAX))
    attempt("badcodec", lambda: et.all_reduce(torch.ones(8), codec="int3"))
    attempt("badoption", lambda: et.options(codecs="int8"))
    attempt("sr_fp8", lambda: et.all_reduce(torch.ones(8), codec="fp8_e5m2", rounding="stochastic"))
    attempt("residual", lambda: et.all_reduce(torch.ones(8), residual=np.zeros(7, np.float32)))
    attempt("two_tensors", lambda: dist.distributed_c10d._get_default_group().allreduce([torch.ones(2), torch.ones(2)]))
    # Still usable afterwards.
    t = torch.full((10,), float(rank + 1))
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    with et.options(algorithm="ring"):
        u = torch.full((10,), float(rank + 1))
        dist.all_reduce(u)
    msgs.append(f"after: {u[0].item()}")

elif scenario == "kill":
    # Rank world-1 dies after the first call; every survivor's next call must raise, in time.
    init()
    t = torch.ones(1 << 16)
    dist.all_reduce(t)
    if rank == world - 1:
        os._exit(0)
    time.sleep(0.5)
    t0 = time.monotonic()
    attempt("dead", lambda: dist.all_reduce(torch.ones(1 << 16)))
    msgs.append(f"seconds: {time.monotonic() - t0:.3f}")
    attempt("later", lambda: dist.all_reduce(torch.ones(8)))
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    os._exit(0)  # no barrier: a rank is gone

elif scenario == "stop":
    # Rank world-1 stops (SIGSTOP) after the first call: alive but silent. Every survivor's
    # next call must raise by the group's timeout (the parent kills the stopped rank).
    init()
    dist.all_reduce(torch.ones(1 << 16))
    if rank == world - 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    t0 = time.monotonic()
    attempt("stopped", lambda: dist.all_reduce(torch.ones(1 << 16)))
    msgs.append(f"seconds: {time.monotonic() - t0:.3f}")
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    os._exit(0)

elif scenario == "ddp_kill":
    # DDP without a hook (the reducer calls the backend's all_reduce from C++): rank world-1
    # dies after two steps; every survivor's next backward must raise, not crash or hang.
    init()
    et.options(algorithm="ring")
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    ddp = torch.nn.parallel.DistributedDataParallel(model)

    def step():
        loss = ddp(torch.randn(16, 64)).square().mean()
        loss.backward()

    for _ in range(2):
        step()
    if rank == world - 1:
        os._exit(0)
    time.sleep(0.5)
    t0 = time.monotonic()
    attempt("dead", step)
    msgs.append(f"seconds: {time.monotonic() - t0:.3f}")
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    os._exit(0)  # no barrier: a rank is gone

elif scenario == "bootstrap_size":
    # No process group: a TCPStore, and equarx's bootstrap with the last rank told world+1.
    store = dist.TCPStore("127.0.0.1", int(port), world, rank == 0, timedelta(seconds=30))
    size = world + 1 if rank == world - 1 else world
    attempt("size", lambda: equarx.bootstrap.from_store(store, rank, size, timeout=5.0))
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    sys.exit(0)

if msgs:
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
dist.barrier()
dist.destroy_process_group()
