"""Child of test_torch.py: one rank of a torch.distributed job on 127.0.0.1.

    python torch_worker.py SCENARIO RANK WORLD PORT OUTDIR

Most scenarios start the "equarx" backend (dist.init_process_group("equarx")); "gloo_side"
starts gloo and uses equarx.torch's functions on it; "bootstrap_size" builds no process group,
only a TCPStore and equarx.bootstrap.from_store with a world size that differs between ranks.
Writes what it computed to OUTDIR/SCENARIO_rRANK_*.npy (the parent compares), and for the
error scenarios OUTDIR/SCENARIO_rRANK.txt with "what: ExceptionType: message" lines.
"""

import faulthandler
import gc
import os
import pathlib
import signal
import sys
import threading
import time
import warnings
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
if os.environ.get("WORKER_HANG_S"):  # a rank still running then prints every thread's stack and exits
    faulthandler.dump_traceback_later(float(os.environ["WORKER_HANG_S"]), exit=True)
TIMEOUT = timedelta(seconds=int(os.environ.get("WORKER_TIMEOUT_S", "60")))
CONFIGS = torch_worker_configs.CONFIGS
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
msgs = []


def init(backend="equarx", store=None):
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=TIMEOUT)
    else:
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=TIMEOUT)
    torch.manual_seed(0)


def shared_store():
    """One store for several groups in turn (torch 2.x re-initialises over one store, as under
    torchrun)."""
    return dist.TCPStore("127.0.0.1", int(port), world, rank == 0, TIMEOUT)


def resources():
    """[OS threads, open fds, live equarx worker threads] of this process."""
    return [len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd")),
            sum(t.name.startswith("equarx-") for t in threading.enumerate())]


def equarx_comm(pg=None):
    """The equarx communicator under a group of the "equarx" backend (None: the default group)."""
    pg = pg or dist.distributed_c10d._get_default_group()
    if isinstance(pg, et.ProcessGroupEquarx):
        return pg.equarx_communicator
    return pg._get_backend(torch.device("cpu")).equarx_communicator


def outcome(fn):
    """None, or the error `fn()` raised as "Type: message"."""
    try:
        fn()
        return None
    except Exception as e:  # noqa: BLE001 - compared by the parent
        return f"{type(e).__name__}: {' '.join(str(e).split())}"


def save_exact(name, t):
    """Saves a tensor with every bit: bf16 as f32 (exact), other dtypes as they are."""
    t = t.detach()
    np.save(out / f"{scenario}_r{rank}_{name}.npy", (t.float() if t.dtype == torch.bfloat16 else t).numpy())


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
    # A pinned algorithm: on one host auto would keep the exact schedules (hook_defaults).
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
    # Local argument errors (no communication happens). dist.all_reduce forwards float64 and
    # MAX to gloo (dtypes); equarx.torch.all_reduce, the equarx call with options, refuses them.
    attempt("dtype", lambda: et.all_reduce(torch.ones(8, dtype=torch.float64)))
    attempt("layout", lambda: dist.all_reduce(torch.ones(8, 8).t()))
    attempt("op", lambda: et.all_reduce(torch.ones(8), op=dist.ReduceOp.MAX))
    attempt("run_dtype", lambda: et.all_reduce(torch.ones(8), dtype="int8"))
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

elif scenario == "reinit":
    # init_process_group / all_reduce / destroy_process_group 10 times in this process; after
    # each destroy the process's threads and fds are what they were before the first init.
    # torch 2.x: every incarnation over one store, as under torchrun, where torch names each
    # new group "0" again (the keys of an incarnation meet the last one's). torch 1.13 refuses
    # a second group over one store itself (its store-based barrier counts on), so there each
    # incarnation has a store of its own (tcp://).
    store = shared_store() if TORCH2 else None
    rows = [resources()]
    for i in range(10):
        init(store=store)
        t = torch.full((1000,), float(rank + 1))
        dist.all_reduce(t)  # equarx
        u = torch.tensor([rank], dtype=torch.int64)
        dist.all_reduce(u)  # gloo
        assert bool(t.eq(world * (world + 1) / 2).all()) and u.item() == world * (world - 1) // 2, (i, t, u)
        assert equarx_comm().calls == 1, i  # a communicator of this incarnation's own
        dist.barrier()
        dist.destroy_process_group()
        gc.collect()
        rows.append(resources())
    np.save(out / f"{scenario}_r{rank}_resources.npy", np.array(rows))
    sys.exit(0)

elif scenario == "routing":
    # Backend strings as torch routes them. torch 2.x builds a backend per device named and
    # equarx serves only the CPU; 1.13 has no per-device strings.
    facts = {"torch2": TORCH2}
    if not TORCH2:
        attempt("gloo_cuda_equarx", lambda: dist.Backend("cpu:gloo,cuda:equarx"))  # init_process_group's parse
        init()
        facts["plain"] = type(dist.distributed_c10d._get_default_group()).__name__
        dist.barrier()
        dist.destroy_process_group()
    else:
        store = shared_store()
        before = resources()

        def backends():
            pg = dist.distributed_c10d._get_default_group()
            found = {}
            for d in ("cpu", "cuda"):
                try:
                    found[d] = type(pg._get_backend(torch.device(d))).__name__
                except RuntimeError as e:
                    found[d] = "none: " + str(e).splitlines()[0]
            return found

        # "equarx": the whole group, CPU only.
        init(store=store)
        facts["plain"] = [type(dist.distributed_c10d._get_default_group()).__name__, backends()]
        dist.destroy_process_group()
        # "cpu:equarx,cuda:gloo": equarx for CPU tensors, gloo's own CUDA backend kept (the
        # same routing as cuda:nccl, which needs a GPU to be built).
        init("cpu:equarx,cuda:gloo", store=store)
        facts["equarx_gloo"] = backends()
        comm = equarx_comm()
        t, u = torch.full((64,), float(rank + 1)), torch.full((4,), rank + 1, dtype=torch.int32)
        dist.all_reduce(t)
        dist.all_reduce(u)
        facts["equarx_gloo_calls"] = comm.calls  # the float sum only
        facts["equarx_gloo_sums"] = [t[0].item(), u[0].item()]
        dist.destroy_process_group()
        # "cpu:gloo,cuda:equarx": gloo for CPU tensors; equarx's CUDA backend refuses.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            init("cpu:gloo,cuda:equarx", store=store)
        facts["gloo_equarx"] = backends()
        facts["gloo_equarx_warning"] = " | ".join(str(w.message) for w in caught if "equarx" in str(w.message))
        facts["gloo_equarx_threads"] = resources()[2]  # no equarx communicator made
        t = torch.full((64,), float(rank + 1))
        dist.all_reduce(t)
        facts["gloo_equarx_sum"] = t[0].item()
        cuda = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cuda"))
        attempt("cuda_call", lambda: cuda.allreduce([torch.ones(2)]))
        dist.destroy_process_group()
        gc.collect()
        facts["after"], facts["before"] = resources(), before
        # "cpu:equarx,cuda:nccl": torch's own parse, then the group. Without a GPU, torch's
        # NCCL creator refuses after the equarx CPU backend was made: the CUDA entry is NCCL's.
        cfg = dist.distributed_c10d.BackendConfig("cpu:equarx,cuda:nccl")
        facts["nccl_map"] = {str(k): str(v) for k, v in cfg.get_device_backend_map().items()}
        facts["gpus"] = torch.cuda.device_count()
        try:
            init("cpu:equarx,cuda:nccl", store=store)
            facts["nccl"] = backends()
        except RuntimeError as e:
            facts["nccl"] = f"{type(e).__name__}: {e}"
        # No group to end with (the last may be half made): rank 0, whose process holds the
        # store, leaves last.
        store.set(f"routing_done/{rank}", b"1")
        if rank == 0:
            store.wait([f"routing_done/{r}" for r in range(world)])
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    (out / f"{scenario}_r{rank}_facts.txt").write_text(repr(facts))
    os._exit(0)

elif scenario == "dtypes":
    # dist.all_reduce of every dtype and op through the backend beside the same call on a gloo
    # group; float SUM is equarx's (its communicator counts the call), the rest gloo's.
    R = dist.ReduceOp
    torch2_ops = TORCH2

    def cases():
        g = torch.Generator().manual_seed(500 + rank)
        big = torch.randint(-(1 << 40), 1 << 40, (257,), generator=g, dtype=torch.int64)
        f64 = torch.randn(1001, generator=g, dtype=torch.float64) * 1e3
        ints = torch.randint(-1000, 1000, (300,), generator=g, dtype=torch.int32)
        bits = torch.randint(0, 1 << 30, (64,), generator=g, dtype=torch.int64)
        f32 = torch.randn(500, generator=g)
        return [
            ("int64_sum", big, R.SUM), ("int64_max", big, R.MAX), ("int64_band", bits, R.BAND),
            ("int64_bor", bits, R.BOR), ("int64_bxor", bits, R.BXOR),
            ("int32_sum", ints, R.SUM), ("int32_min", ints, R.MIN),
            ("uint8_sum", (ints % 50).to(torch.uint8), R.SUM), ("int8_max", (ints % 100).to(torch.int8), R.MAX),
            ("bool_max", ints > 0, R.MAX), ("bool_min", ints > 0, R.MIN),
            ("f64_sum", f64, R.SUM), ("f64_max", f64, R.MAX), ("f64_min", f64, R.MIN),
            ("f64_product", 1 + f64 / 1e4, R.PRODUCT),
            ("f32_max", f32, R.MAX), ("f32_min", f32, R.MIN), ("f32_product", 1 + f32 / 10, R.PRODUCT),
            ("bf16_max", f32.to(torch.bfloat16), R.MAX), ("f16_min", f32.to(torch.float16), R.MIN),
        ]

    def run(backend, tag):
        init(backend)
        gloo = dist.new_group(backend="gloo")
        comm = equarx_comm()
        for name, x, op in cases():
            t, u = x.clone(), x.clone()
            before = comm.calls
            errors = [outcome(lambda: dist.all_reduce(t, op=op)), outcome(lambda: dist.all_reduce(u, op=op, group=gloo))]
            assert comm.calls == before, (name, "went to equarx")
            if any(errors):  # what this gloo cannot do (1.13's has no bool or bf16 MAX): the same error
                msgs.append(f"{tag}_{name}: " + " | ".join(str(e) for e in errors))
                continue
            save_exact(f"{tag}_{name}", t)
            save_exact(f"{tag}_{name}_gloo", u)
        # Float sums: equarx's (SUM, and PREMUL_SUM: scaled, then summed).
        base = torch.randint(-20, 20, (333,), generator=torch.Generator().manual_seed(600 + rank)).float()
        t = base.clone()
        dist.all_reduce(t)
        save_exact(f"{tag}_f32_sum", t)
        if torch2_ops:
            t = base.clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
            save_exact(f"{tag}_f32_premul", t)
            t = base.clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(torch.tensor([0.25])))
            save_exact(f"{tag}_f32_premul_tensor", t)
        msgs.append(f"{tag}_equarx_calls: {comm.calls}")
        dist.barrier()
        dist.destroy_process_group()

    # One backend string per launch (WORKER_BACKEND): a gloo subgroup re-made over one store
    # would meet its last incarnation's keys (gloo's own keys, not equarx's).
    backend = os.environ.get("WORKER_BACKEND", "equarx")
    run(backend, "plain" if backend == "equarx" else "mixed")
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
    sys.exit(0)

elif scenario == "small_exact":
    # The default call on small tensors: exact. Every rank is on this host, where the library's
    # auto keeps the exact schedules at every size; with ranks_per_host=1 (every rank a host
    # of its own) auto chooses by the cost model of links, exact below its crossover.
    init()
    comm = equarx_comm()

    def reduce(name, t, **opts):
        before = comm.bytes_sent
        with et.options(**opts):
            dist.all_reduce(t)
        save_exact(name, t)
        msgs.append(f"{name}_bytes: {comm.bytes_sent - before}")

    rng = np.random.default_rng(700 + rank)
    for n in (1, 16, 1000, 65536):
        reduce(f"ones{n}", torch.ones(n))
    reduce("ones_bf16", torch.ones(4096, dtype=torch.bfloat16))
    reduce("ints", torch.from_numpy(rng.integers(-100, 101, 4096).astype(np.float32)))
    reduce("loss", torch.tensor([np.float32(rng.standard_normal() * 3)]))
    for n in (1, 16):
        reduce(f"hosts_ones{n}", torch.ones(n), ranks_per_host=1)
        reduce(f"hosts_ints{n}", torch.from_numpy(rng.integers(-100, 101, n).astype(np.float32)), ranks_per_host=1)
    reduce("hosts_loss", torch.tensor([np.float32(rng.standard_normal() * 3)]), ranks_per_host=1)

elif scenario == "keywords":
    # equarx.torch.all_reduce with every documented keyword, and et.options with every option
    # (torch_worker_configs.KEYWORD_CALLS); the parent recomputes each with equarx.allreduce.
    init()
    for i, (kw, opts) in enumerate(torch_worker_configs.KEYWORD_CALLS):
        x = torch.from_numpy(np.random.default_rng(800 + rank).standard_normal(3001).astype(np.float32))
        o = dict(opts)
        if o.get("dtype") == "torch.float16":
            o["dtype"] = torch.float16
        if o.get("op") == "AVG":
            o["op"] = dist.ReduceOp.AVG
        elif o.get("op") == "PREMUL_SUM":
            if not hasattr(dist, "_make_nccl_premul_sum"):
                continue
            o["op"] = dist._make_nccl_premul_sum(0.5)
        if o.get("group") == "WORLD":
            o["group"] = dist.group.WORLD
        res = np.zeros(3001, np.float32) if o.pop("residual", None) else None
        t = x.clone()
        try:
            w = et.all_reduce(t, residual=res, **o)
            if o.get("async_op"):
                w.wait()
            save_exact(f"k{i}", t)
            if res is not None:
                np.save(out / f"{scenario}_r{rank}_k{i}_res.npy", res)
        except Exception as e:  # noqa: BLE001 - the parent checks type and message
            msgs.append(f"k{i}: {type(e).__name__}: {' '.join(str(e).split())}")
        lib = {k: v for k, v in o.items() if k in equarx.options() or k == "dtype"}
        if lib == o:  # options the group takes too: et.options, then dist.all_reduce
            t = x.clone()
            with et.options(**lib):
                dist.all_reduce(t)
            save_exact(f"g{i}", t)

elif scenario in ("hook_defaults", "hook_hosts"):
    # The hook with error feedback and no algorithm: auto's choice. hook_defaults: every rank
    # on this host, so auto keeps the exact schedules and the residuals stay zero. hook_hosts
    # (EQUARX_RANKS_PER_HOST=2: two hosts of two ranks): auto could choose hierarchical, which
    # takes no residual; the hook asks for a flat schedule, which quantizes a bucket this big.
    init()
    comm = equarx_comm()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    state = et.HookState(error_feedback=True)
    ddp.register_comm_hook(state, et.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(900 + rank)
    before = comm.bytes_sent
    for _ in range(3):
        loss = ddp(torch.randn(32, 256, generator=g)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    msgs.append(f"ranks_per_host: {comm.ranks_per_host}")
    msgs.append(f"bytes: {state.bytes_sent} {comm.bytes_sent - before}")
    msgs.append(f"residual_max: {max(float(np.abs(r).max()) for r in state.residuals.values())}")
    msgs.append(f"elements: {sum(p.numel() for p in model.parameters())}")
    save("params", torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    # What the hook avoids: auto's hierarchical choice refuses a residual.
    attempt("plain_ef", lambda: et.all_reduce(torch.ones(1 << 16), residual=np.zeros(1 << 16, np.float32)))

elif scenario == "back_to_back":
    # Single-tensor collectives forwarded to gloo, back to back with fresh tensors each time
    # (transformers' column-split LM head gathers its logits this way at every token): gloo's
    # worker frees a finished call's tensors while the caller already queues the next call.
    # torch 1.13's gloo has neither tensor form: there the list all_gather and broadcast.
    init()
    bad = 0
    for i in range(3000):
        x = torch.full((64,), float(rank + i))
        want = torch.arange(world, dtype=torch.float32).add(i).repeat_interleave(64)
        if TORCH2:
            out_t = torch.empty(64 * world)
            dist.all_gather_into_tensor(out_t, x)
            y = torch.empty(64)
            dist.reduce_scatter_tensor(y, torch.full((64 * world,), float(i)))
        else:
            parts = [torch.empty(64) for _ in range(world)]
            dist.all_gather(parts, x)
            out_t = torch.cat(parts)
            y = torch.full((64,), float(i * world) if rank == 0 else -1.0)
            dist.broadcast(y, 0)
        bad += int(not torch.equal(out_t, want)) + int(not torch.equal(y, torch.full((64,), float(i * world))))
    msgs.append(f"wrong: {bad}")

if msgs:
    (out / f"{scenario}_r{rank}.txt").write_text("\n".join(msgs) + "\n")
comm = None  # a scenario's reference to the native communicator must not outlive the group
dist.barrier()
dist.destroy_process_group()
