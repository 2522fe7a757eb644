"""Tensor-parallel MLP in JAX with lax.psum swapped for equarx.jax.psum.

    .venv/bin/python examples/python/jax_tp_mlp.py [--devices 4] [--tokens 512] [--d 1024]
        [--processes P]

A Megatron-style MLP block y = gelu(x W1) W2 over N host CPU devices: W1 is split by columns
and W2 by rows (axis "tp"), so each device computes a partial y that one AllReduce sums. The
same jitted shard_map program runs once with jax.lax.psum and once per equarx configuration;
for each it prints the median time of the block and the output error against a float64 numpy
reference (relative RMS and max abs), plus whether every device's output is bitwise identical.

With --processes P (> 1) the script starts P copies of itself on 127.0.0.1, each a JAX process
(jax.distributed.initialize) with devices/P CPU devices; the mesh spans all of them, so each
psum joins ranks of every process (equarx bootstraps through JAX's key-value store; lax.psum
uses JAX's own CPU collectives, gloo). Process 0 prints; every process checks its devices.
"""

import argparse
import os
import sys
import time

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--devices", type=int, default=4)
p.add_argument("--tokens", type=int, default=512)
p.add_argument("--d", type=int, default=1024, help="model width (hidden = 4 d)")
p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
p.add_argument("--iters", type=int, default=5)
p.add_argument("--processes", type=int, default=1, help="JAX processes on this host (devices split evenly)")
args = p.parse_args()
if args.processes < 1 or args.devices % args.processes:
    p.error("--processes must divide --devices")
PROC = int(os.environ.get("EQUARX_EXAMPLE_PROCESS", "-1"))
if args.processes > 1 and PROC < 0:
    # The launcher: P copies of this script, one JAX process each, on a free port.
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable] + sys.argv, env=dict(os.environ, EQUARX_EXAMPLE_PROCESS=str(k),
                                                                    EQUARX_EXAMPLE_PORT=str(port)))
             for k in range(args.processes)]
    sys.exit(max(q.wait() for q in procs))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={args.devices // args.processes}")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

if args.processes > 1:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{os.environ['EQUARX_EXAMPLE_PORT']}",
                               num_processes=args.processes, process_id=PROC)
import equarx.jax as ejax  # noqa: E402

LEAD = jax.process_index() == 0

N, T, D, H = args.devices, args.tokens, args.d, 4 * args.d
dt = jnp.dtype(args.dtype)
rng = np.random.default_rng(0)
x_h = rng.standard_normal((T, D)).astype(np.float32)
w1_h = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32)
w2_h = (rng.standard_normal((H, D)) / np.sqrt(H)).astype(np.float32)

mesh = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))


def put(host, spec):
    """A global array of `host` laid out by `spec` (each process places its own devices' parts)."""
    a = np.asarray(jnp.asarray(host, dt))
    return jax.make_array_from_callback(a.shape, NamedSharding(mesh, spec), lambda i: a[i])


x, w1, w2 = put(x_h, P()), put(w1_h, P(None, "tp")), put(w2_h, P("tp", None))


def gelu64(a):
    return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))


def rounded(h):  # the inputs as the devices hold them (dt), in float64
    return np.asarray(jnp.asarray(h, dt).astype(jnp.float32), np.float64)


ref = gelu64(rounded(x_h) @ rounded(w1_h)) @ rounded(w2_h)


def make(reduce):
    def block(x, w1, w2):
        partial = jax.nn.gelu(x @ w1, approximate=True) @ w2
        return reduce(partial, "tp")[None]  # keep each device's copy to compare them
    return jax.jit(jax.shard_map(block, mesh=mesh, in_specs=(P(), P(None, "tp"), P("tp", None)),
                                 out_specs=P("tp")))


configs = [("lax.psum", jax.lax.psum)]
for name, opts in [("equarx ring (unquantized)", dict(algorithm="ring")),
                   ("equarx full_bidir int8 rs+ag", dict(algorithm="full_bidir")),
                   ("equarx semi int8 rs+ag", dict(algorithm="semi")),
                   ("equarx two_shot int8 rs+ag", dict(algorithm="two_shot")),
                   ("equarx full_bidir int8 ag only", dict(algorithm="full_bidir", phases="ag"))]:
    configs.append((name, lambda a, ax, o=opts: ejax.psum(a, ax, block=64, scale="f32", **o)))

where = f"{N} CPU devices" + (f" in {args.processes} processes" if args.processes > 1 else "")
if LEAD:
    print(f"tensor-parallel MLP: {where}, tokens {T}, d {D}, hidden {H}, {args.dtype}; "
          f"AllReduce of {T}x{D} per block")
    print(f"{'configuration':32s} {'median ms':>10s} {'rel RMS err':>12s} {'max abs err':>12s} identical")
ok = True
for name, reduce in configs:
    f = make(reduce)
    out = f(x, w1, w2).block_until_ready()
    times = []
    for _ in range(args.iters):
        t0 = time.perf_counter()
        out = f(x, w1, w2).block_until_ready()
        times.append(time.perf_counter() - t0)
    # This process's devices (all of them in one process): bitwise identical to each other,
    # and (checked below) the same on every process.
    o = np.stack([np.asarray(s.data.astype(jnp.float32))[0] for s in out.addressable_shards])
    same = all(np.array_equal(o[0].view(np.uint32), o[d].view(np.uint32)) for d in range(len(o)))
    if args.processes > 1:
        from jax.experimental import multihost_utils
        everyone = np.asarray(multihost_utils.process_allgather(o[0].view(np.int32)))
        same = same and all(np.array_equal(everyone[k], everyone[0]) for k in range(len(everyone)))
    ok &= same
    err = o[0].astype(np.float64) - ref
    rel = np.sqrt(np.mean(err ** 2) / np.mean(ref ** 2))
    if LEAD:
        print(f"{name:32s} {1e3 * np.median(times):10.2f} {rel:12.3e} {np.max(np.abs(err)):12.3e} {same}")
sys.exit(0 if ok else 1)
