"""equarx.jax.psum and equarx.bootstrap in a multi-process JAX job: 2 processes on 127.0.0.1,
2 CPU devices each (jax_multiprocess_worker.py), after jax.distributed.initialize.

- psum over all 4 devices (in-process and remote ranks in one group) is bitwise equal to the
  C++ in-process AllReduce on the same inputs and options, on every device, for quantized and
  unquantized schedules and f32/bf16/f16, and again on a second call;
- psum over one axis of a 2-D mesh: each group (spanning both processes) sums its own devices;
- equarx.bootstrap.from_store over JAX's key-value store gives a working communicator.
"""

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import _deps

jax = _deps.import_or_missing("jax")
import equarx  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
_deps.require(equarx.has_xla_ffi, "equarx was built without the XLA FFI handler (jaxlib headers not found)")

NPROCS = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("jaxmp")
    port = str(free_port())
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, str(HERE / "jax_multiprocess_worker.py"), str(p), str(NPROCS), port,
                               str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for p in range(NPROCS)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=300)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a JAX process did not finish in 300 s")
    for k, (p, o) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"process {k} failed:\n{o}"
        assert "leaked" not in o, f"process {k}:\n{o}"
    return out


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32), np.asarray(b, np.float32).view(np.uint32))


def test_psum_across_processes_is_bitwise_the_cpp_allreduce(job):
    from jax_multiprocess_configs import CONFIGS, inputs
    devices = 2 * NPROCS
    for k, cfg in enumerate(CONFIGS):
        opts = {a: b for a, b in cfg.items() if a != "dtype"}
        want = equarx.allreduce(list(inputs(devices, cfg["dtype"])), **opts)[0].astype(np.float32)
        for p in range(NPROCS):
            for d in (2 * p, 2 * p + 1):
                for rep in range(2):
                    got = np.load(job / f"p{p}_c{k}_r{rep}_d{d}.npy")
                    assert same_bits(got, want), (cfg, p, d, rep)


def test_psum_over_one_axis_of_a_grid_sums_each_group(job):
    from jax_multiprocess_configs import inputs
    devices = 2 * NPROCS
    full = inputs(devices, "float32")
    cols = devices // 2  # mesh (tp=2, dp=cols): device d sits at (d // cols, d % cols)
    for d in range(devices):
        members = [d % cols, d % cols + cols]
        want = equarx.allreduce([full[m] for m in members], algorithm="ring")[0]
        got = np.load(job / f"p{d // 2}_grid_d{d}.npy")
        assert same_bits(got, want), d


def test_bootstrap_over_jax_key_value_store(job):
    from jax_multiprocess_configs import inputs
    want = equarx.allreduce(list(inputs(NPROCS, "float32")), algorithm="two_shot")[0]
    for p in range(NPROCS):
        assert same_bits(np.load(job / f"p{p}_bootstrap.npy"), want), p
