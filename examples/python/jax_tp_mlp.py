"""Tensor-parallel MLP in JAX with lax.psum swapped for equarx.jax.psum.

    .venv/bin/python examples/python/jax_tp_mlp.py [--devices 4] [--tokens 512] [--d 1024]

A Megatron-style MLP block y = gelu(x W1) W2 over N host CPU devices: W1 is split by columns
and W2 by rows (axis "tp"), so each device computes a partial y that one AllReduce sums. The
same jitted shard_map program runs once with jax.lax.psum and once per equarx configuration;
for each it prints the median time of the block and the output error against a float64 numpy
reference (relative RMS and max abs), plus whether every device's output is bitwise identical.
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
args = p.parse_args()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={args.devices}")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import equarx.jax as ejax  # noqa: E402

N, T, D, H = args.devices, args.tokens, args.d, 4 * args.d
dt = jnp.dtype(args.dtype)
rng = np.random.default_rng(0)
x_h = rng.standard_normal((T, D)).astype(np.float32)
w1_h = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32)
w2_h = (rng.standard_normal((H, D)) / np.sqrt(H)).astype(np.float32)

mesh = jax.make_mesh((N,), ("tp",))
x = jax.device_put(jnp.asarray(x_h, dt), NamedSharding(mesh, P()))
w1 = jax.device_put(jnp.asarray(w1_h, dt), NamedSharding(mesh, P(None, "tp")))
w2 = jax.device_put(jnp.asarray(w2_h, dt), NamedSharding(mesh, P("tp", None)))


def gelu64(a):
    return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))


ref = gelu64(np.asarray(x.astype(jnp.float32), np.float64) @ np.asarray(w1.astype(jnp.float32), np.float64)) \
    @ np.asarray(w2.astype(jnp.float32), np.float64)


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
    configs.append((name, lambda a, ax, o=opts: ejax.psum(a, ax, block=64, **o)))

print(f"tensor-parallel MLP: {N} CPU devices, tokens {T}, d {D}, hidden {H}, {args.dtype}; "
      f"AllReduce of {T}x{D} per block")
print(f"{'configuration':32s} {'median ms':>10s} {'rel RMS err':>12s} {'max abs err':>12s} identical")
for name, reduce in configs:
    f = make(reduce)
    out = f(x, w1, w2).block_until_ready()
    times = []
    for _ in range(args.iters):
        t0 = time.perf_counter()
        out = f(x, w1, w2).block_until_ready()
        times.append(time.perf_counter() - t0)
    o = np.asarray(out.astype(jnp.float32))
    same = all(np.array_equal(o[0].view(np.uint32), o[d].view(np.uint32)) for d in range(N))
    err = o[0].astype(np.float64) - ref
    rel = np.sqrt(np.mean(err ** 2) / np.mean(ref ** 2))
    print(f"{name:32s} {1e3 * np.median(times):10.2f} {rel:12.3e} {np.max(np.abs(err)):12.3e} {same}")
sys.exit(0)
