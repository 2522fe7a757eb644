"""equarx.torch: the "equarx" torch.distributed backend and the DDP hook, in real
multi-process jobs (2-4 processes on 127.0.0.1, torch_worker.py).

- dist.all_reduce through the backend (options set per group) and equarx.torch.all_reduce
  (options per call) are bitwise equal to the C++ AllReduce (equarx.allreduce, in-process) on
  the same inputs and options, on every rank: codecs, phases, algorithms, rotation, scale
  formats, f32/bf16/f16, stochastic rounding, tiny tensors; AVG; async work in order; the other
  collectives through gloo;
- error feedback: the residuals carry what quantization lost (C++ in-process group as oracle);
- the DDP hook trains on the equarx backend and on a gloo default group, ranks bitwise equal;
- bad arguments raise the library's exceptions; shapes, dtypes or options that differ between
  ranks raise MismatchError on every rank, and the group stays usable;
- a killed rank makes every survivor raise within the group's timeout;
- the store bootstrap with a wrong world size fails clearly on every rank.

Runs where torch is importable (scripts/test_python.sh runs it in .venv-torch, Debian's CPU
build of PyTorch); EQUARX_REQUIRE_TORCH=1 or CI=true turns the skip into a failure.
"""

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import _deps
import equarx
from equarx._arrays import BFLOAT16

if os.environ.get("EQUARX_REQUIRE_TORCH") == "1":
    import torch  # noqa: F401 - must be importable here
else:
    torch = _deps.import_or_missing("torch")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_group(scenario, world, tmp_path, env=None, limit=240, stopped=()):
    """Runs the ranks of `scenario`; ranks in `stopped` stop themselves (SIGSTOP) and are
    killed once the others have finished."""
    port = str(free_port())
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    procs = [subprocess.Popen([sys.executable, str(HERE / "torch_worker.py"), scenario, str(r), str(world),
                               port, str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for r in range(world)]
    outs = []
    for r, p in enumerate(procs):
        if r in stopped:
            continue
        try:
            outs.append(p.communicate(timeout=limit)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"{scenario}: a rank did not finish in {limit} s")
    for r in stopped:
        procs[r].kill()
        procs[r].communicate()
    live = [p for r, p in enumerate(procs) if r not in stopped]
    for r, (p, o) in enumerate(zip(live, outs)):
        assert p.returncode == 0, f"rank {r} of {scenario} failed:\n{o}"
        assert "leaked" not in o, f"rank {r} of {scenario}:\n{o}"


def load(tmp_path, scenario, r, name):
    return np.load(tmp_path / f"{scenario}_r{r}_{name}.npy")


def messages(tmp_path, scenario, r):
    return dict(l.split(": ", 1) for l in (tmp_path / f"{scenario}_r{r}.txt").read_text().splitlines())


def cpp_inputs(cfg, world):
    dt = {"bfloat16": BFLOAT16, "float16": np.float16, "float32": np.float32}[cfg["dtype"]]
    return [np.random.default_rng(100 + r).standard_normal(cfg["count"]).astype(np.float32).astype(dt)
            for r in range(world)]


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32), np.asarray(b, np.float32).view(np.uint32))


@pytest.mark.parametrize("world", [2, 3, 4])
def test_backend_is_bitwise_equal_to_cpp(world, tmp_path):
    import torch_worker_configs as cfgs
    run_group("bitwise", world, tmp_path)
    for i, cfg in enumerate(cfgs.CONFIGS):
        opts = {k: v for k, v in cfg.items() if k not in ("dtype", "count")}
        want = equarx.allreduce(cpp_inputs(cfg, world), **opts)[0].astype(np.float32)
        for r in range(world):
            assert same_bits(load(tmp_path, "bitwise", r, f"c{i}"), want), (cfg, r, "dist.all_reduce")
            assert same_bits(load(tmp_path, "bitwise", r, f"p{i}"), want), (cfg, r, "et.all_reduce")
    cfg = cfgs.CONFIGS[1]
    opts = {k: v for k, v in cfg.items() if k not in ("dtype", "count")}
    xs = cpp_inputs(cfg, world)
    s = equarx.allreduce(xs, **opts)[0]
    for r in range(world):
        assert same_bits(load(tmp_path, "bitwise", r, "avg"), s / np.float32(world)), r
        for k in range(4):
            want = equarx.allreduce([x * np.float32(k + 1) for x in xs], **opts)[0]
            assert same_bits(load(tmp_path, "bitwise", r, f"async{k}"), want), (r, k)
        fb = load(tmp_path, "bitwise", r, "fallback")
        assert fb[0] == 5.0 and np.array_equal(fb[1:1 + 3 * world], np.repeat(np.arange(world), 3)), fb
        assert np.array_equal(fb[1 + 3 * world:], np.arange(world)), fb
        assert load(tmp_path, "bitwise", r, "backend")[0] == 1.0


def test_error_feedback_matches_cpp(tmp_path):
    world = 3
    run_group("feedback", world, tmp_path)
    xs = [np.random.default_rng(100 + r).standard_normal(6001).astype(np.float32) for r in range(world)]
    g = equarx.InProcessGroup(world)
    res = [np.zeros(6001, np.float32) for _ in range(world)]
    for k in range(3):
        want = g.allreduce(xs, algorithm="two_shot", codec="int4", residuals=res)
        for r in range(world):
            assert same_bits(load(tmp_path, "feedback", r, f"y{k}"), want[r]), (k, r)
            assert same_bits(load(tmp_path, "feedback", r, f"res{k}"), res[r]), (k, r)
    # The residuals are not zero: they hold what int4 lost.
    assert max(float(np.abs(x).max()) for x in res) > 1e-3


@pytest.mark.parametrize("scenario", ["hook", "gloo_side"])
def test_ddp_hook_trains_and_ranks_agree(scenario, tmp_path):
    world = 4
    run_group(scenario, world, tmp_path)
    p0 = load(tmp_path, scenario, 0, "params")
    for r in range(1, world):
        assert same_bits(load(tmp_path, scenario, r, "params"), p0), r
    losses, base = load(tmp_path, scenario, 0, "losses"), load(tmp_path, scenario, 0, "base_losses")
    # It learns, and about as well as with the exact f32 AllReduce: docs/python.md ("PyTorch",
    # HookState) gives the last 5 losses' mean within 4.3e-4 of the exact run's; allowed: 3x.
    assert losses[-5:].mean() < 0.5 * losses[:3].mean(), losses
    assert abs(losses[-5:].mean() - base[-5:].mean()) < 3 * 4.3e-4 * base[-5:].mean(), (losses, base)
    assert not np.array_equal(losses, base), "the hook's int8 AllReduce changed nothing"
    sent, steps = load(tmp_path, scenario, 0, "bytes")
    assert steps == 40 and sent > 0


def test_bad_arguments_and_mismatches(tmp_path):
    world = 2
    run_group("errors", world, tmp_path)
    for r in range(world):
        m = messages(tmp_path, "errors", r)
        assert m["shape"].startswith("MismatchError: ranks disagree: rank 1 passes count 101 (rank 0 has 100)"), m
        assert m["dtype_mismatch"].startswith("MismatchError: ranks disagree"), m
        assert m["codec"].startswith("MismatchError: ranks disagree: rank 1 passes codec"), m
        assert m["dtype"].startswith("DTypeError:") and "float64" in m["dtype"], m
        assert m["layout"].startswith("LayoutError:") and "contiguous" in m["layout"], m
        assert m["op"].startswith("UnsupportedError:") and "SUM" in m["op"], m
        assert m["badcodec"].startswith("InvalidArgumentError:") and "int3" in m["badcodec"], m
        assert m["badoption"].startswith("InvalidArgumentError:") and "codecs" in m["badoption"], m
        assert m["sr_fp8"].startswith("InvalidArgumentError:") and "stochastic rounding needs int8 or int4" in m["sr_fp8"], m
        assert m["residual"].startswith("InvalidArgumentError: residual has 7 elements"), m
        assert m["two_tensors"].startswith("UnsupportedError:") and "one tensor" in m["two_tensors"], m
        assert m["after"] == "3.0", m


def test_a_killed_rank_makes_every_survivor_raise_in_time(tmp_path):
    world = 3
    run_group("kill", world, tmp_path, env={"WORKER_TIMEOUT_S": "10"}, limit=120)
    for r in range(world - 1):
        m = messages(tmp_path, "kill", r)
        assert m["dead"].startswith(("RemoteError:", "CollectiveTimeoutError:")), m
        assert float(m["seconds"]) < 10.0 + 2.0, m
        # The group refuses later calls with the same error, at once.
        assert m["later"].startswith(("RemoteError:", "CollectiveTimeoutError:")), m


def test_a_stopped_rank_makes_every_survivor_raise_by_the_timeout(tmp_path):
    world = 3
    run_group("stop", world, tmp_path, env={"WORKER_TIMEOUT_S": "5"}, limit=120, stopped=(world - 1,))
    for r in range(world - 1):
        m = messages(tmp_path, "stop", r)
        assert m["stopped"].startswith("CollectiveTimeoutError:"), m
        assert 4.0 < float(m["seconds"]) < 5.0 + 2.0, m


def test_a_killed_rank_makes_ddp_raise_on_every_survivor(tmp_path):
    # The reducer reads the backend's future from C++: the error must arrive as an exception
    # from backward() (a crash here would be a failed rank in run_group).
    world = 3
    run_group("ddp_kill", world, tmp_path, env={"WORKER_TIMEOUT_S": "10"}, limit=120)
    for r in range(world - 1):
        m = messages(tmp_path, "ddp_kill", r)
        assert m["dead"].startswith("RuntimeError:") and "rank 2" in m["dead"], m
        assert float(m["seconds"]) < 10.0 + 2.0, m


def test_store_bootstrap_with_a_wrong_world_size_fails_clearly(tmp_path):
    world = 3
    run_group("bootstrap_size", world, tmp_path, limit=120)
    for r in range(world - 1):
        m = messages(tmp_path, "bootstrap_size", r)
        assert m["size"].startswith("InvalidArgumentError:") and "world size differs" in m["size"], m
    m = messages(tmp_path, "bootstrap_size", world - 1)
    # The rank told one rank more waits for a card that never comes: the store's timeout.
    assert m["size"].startswith("CollectiveTimeoutError:") and "world size is wrong" in m["size"], m


def expected_wire_bytes(count, ranks, shard_bytes):
    """Bytes one rank sends, written out here rather than asked of the library: every
    algorithm below sends N-1 shards of count/N elements in its reduce-scatter and N-1 in its
    all-gather (docs/algorithms.md, "bytes sent per rank"); `shard_bytes(n)` is what a shard of
    n elements costs on the wire. Shards are cut on the block grid (block 64 by default, for
    the unquantized ring too), so the counts keep every shard (and every half of one, for
    full_bidir) a whole number of blocks."""
    assert count % ranks == 0
    return 2 * (ranks - 1) * shard_bytes(count // ranks)


def block_wire(codes_per_element, block, scale_bytes):
    """A block format's shard of n elements: n codes (int4: two per byte) and one scale of
    `scale_bytes` per block (docs/wire_format.md)."""
    return lambda n: int(n * codes_per_element) + -(-n // block) * scale_bytes


@pytest.mark.parametrize("count,ranks,dtype,opts,shard_bytes", [
    # unquantized ring: the dtype's bytes
    (4096, 4, "bfloat16", dict(algorithm="ring"), lambda n: 2 * n),
    (3072, 3, "float32", dict(algorithm="ring"), lambda n: 4 * n),
    # int8, f32 scales: 1 + 4/B bytes per element
    (4096, 4, "float32", dict(algorithm="two_shot", codec="int8", block=64), block_wire(1, 64, 4)),
    (3072, 3, "bfloat16", dict(algorithm="full", codec="int8", block=128), block_wire(1, 128, 4)),
    (8192, 4, "float32", dict(algorithm="full_bidir", codec="int8", block=64), block_wire(1, 64, 4)),
    (7168, 7, "float16", dict(algorithm="semi", codec="int8", block=32), block_wire(1, 32, 4)),
    # int4: two codes per byte; bf16 scales: 2 bytes per block
    (8192, 4, "float32", dict(algorithm="two_shot", codec="int4", block=32, scale="bf16"), block_wire(0.5, 32, 2)),
    (4096, 2, "float32", dict(algorithm="full", codec="int8", block=64, scale="bf16"), block_wire(1, 64, 2)),
])
def test_wire_bytes_per_rank_matches_the_documented_formula(count, ranks, dtype, opts, shard_bytes):
    import equarx.torch as et
    got = et.wire_bytes_per_rank(count, ranks, dtype=getattr(torch, dtype), **opts)
    assert got == expected_wire_bytes(count, ranks, shard_bytes), (count, ranks, dtype, opts)


def test_under_torchrun(tmp_path):
    """The launcher PyTorch users run: torchrun starts the ranks, env:// gives the rendezvous,
    the backend bootstraps through torchrun's store."""
    world = 3
    # --redirects/--tee 2 on 1.x only: Debian's torch 1.13 on Python 3.11 maps their default 0
    # to None (3.11 no longer iterates a flag's zero member) and torchrun fails before starting
    # any worker; 2 (stderr, also to a log) avoids that without changing what is tested. 2.x
    # runs the plain command.
    workaround = ["--redirects", "2", "--tee", "2", "--log_dir", str(tmp_path / "logs")]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world),
           *(workaround if int(torch.__version__.split(".")[0]) < 2 else []),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(HERE / "torchrun_worker.py"),
           str(tmp_path)]
    p = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    for r in range(world):
        assert (tmp_path / f"torchrun_r{r}.txt").read_text() == "ok\n", r
