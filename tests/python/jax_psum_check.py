"""Child process of test_jax.py: runs equarx.jax.psum under jit + shard_map and prints JSON.

usage: jax_psum_check.py ALGO|errors|grad [--compare-numpy] [--mesh2d] [--two-level]
"""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

import equarx
import equarx.jax as ejax


def grad_bound(a, b, n, opts, checked, want):
    """How far jax.grad through equarx.jax.psum(**opts) may be from lax.psum's, from the
    documented bound (equarx.error_bound: docs/algorithms.md, "Error bound").

    d loss / d a_d = b_d * S, S the sum over the n devices of the cotangent g(y) = 2 tanh(y)
    sech(y)^2 (|g'| <= 2), y = psum(a * b). Each forward psum (equarx's, lax's) errs by at most
    its bound e_y, so g(y) by 2 e_y on each of the n devices; each backward sum errs by at most
    e_g: equarx's with these options without check_vma, lax's f32 sum (within the ring's bound:
    any order of N - 1 f32 additions) with it. Plus the f32 roundings of the elementwise
    operations (2^-20 of |want|).
    """
    ha, hb = np.asarray(a), np.asarray(b)
    prods = [np.ascontiguousarray(ha[d] * hb[d]) for d in range(n)]
    y = np.sum(np.stack(prods).astype(np.float64), axis=0)
    gy = [np.ascontiguousarray((2 * np.tanh(y) / np.cosh(y) ** 2).astype(np.float32))] * n
    ring = dict(algorithm="ring")
    e_y = equarx.error_bound(prods, **opts) + equarx.error_bound(prods, **ring)
    e_g = equarx.error_bound(gy, **(ring if checked else opts)) + equarx.error_bound(gy, **ring)
    return np.abs(hb) * (2 * n * e_y + e_g) + 2.0**-20 * np.abs(want)


def main():
    algo = sys.argv[1]
    n = jax.device_count()
    out = {}
    if algo == "grad":
        # jax.grad through psum: the gradient of a tensor-parallel layer's loss equals
        # jax.lax.psum's, with and without shard_map's type checks (check_vma).
        mesh = jax.make_mesh((n,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
        jax.set_mesh(mesh)
        sh = NamedSharding(mesh, P("x"))
        a = jax.device_put(np.random.default_rng(0).standard_normal((n, 64)).astype(np.float32), sh)
        b = jax.device_put(np.random.default_rng(1).standard_normal((n, 64)).astype(np.float32), sh)
        for checked in (True, False):
            def loss(psum):
                def body(u, v):
                    y = psum(u * v, "x")
                    return jnp.sum(jnp.tanh(y) ** 2)[None]
                f = jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P("x")), out_specs=P("x"), check_vma=checked)
                return lambda u, v: jnp.sum(f(u, v))
            want = np.asarray(jax.grad(loss(jax.lax.psum))(a, b))
            key = "checked" if checked else "unchecked"
            for name, opts in (("ring", dict(algorithm="ring")), ("int8", dict(algorithm="two_shot", codec="int8"))):
                got = np.asarray(jax.grad(loss(lambda t, ax: ejax.psum(t, ax, **opts)))(a, b))
                out[f"{key}_{name}_err_over_bound"] = float(np.max(np.abs(got - want) / grad_bound(a, b, n, opts, checked, want)))
        print(json.dumps(out))
        return
    if algo == "errors":
        mesh = jax.make_mesh((n,), ("x",))
        for key, fn, dt in (("dtype_error", lambda a: ejax.psum(a, "x"), jnp.int32),
                            ("option_error", lambda a: ejax.psum(a, "x", block=3), jnp.float32)):
            try:
                x = jax.device_put(jnp.ones((n, 8), dt), NamedSharding(mesh, P("x")))
                jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("x"), out_specs=P("x")))(x).block_until_ready()
                out[key] = False
            except equarx.EquarxError as e:
                out[key] = str(e)
        print(json.dumps(out))
        return
    mesh2d = "--mesh2d" in sys.argv
    mesh = jax.make_mesh((2, n // 2), ("g", "x")) if mesh2d else jax.make_mesh((n,), ("x",))
    spec = P(("g", "x")) if mesh2d else P("x")
    rows = 1 << 12 if not mesh2d else 1 << 10
    rng = np.random.default_rng(5)
    host = rng.standard_normal((n * 3, rows)).astype(np.float32)
    x = jax.device_put(jnp.asarray(host), NamedSharding(mesh, spec))

    def body(fn):
        # Every device keeps its full result (out spec = the input's), so we can compare shards.
        return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec))

    opts = dict(algorithm=algo, block=64)
    if "--two-level" in sys.argv:  # the options as keywords, past the defaults
        opts.update(block=128, scale="two_level", rotation="hadamard")
    ours = np.asarray(body(lambda a: ejax.psum(a, "x", **opts))(x))
    ref = np.asarray(body(lambda a: jax.lax.psum(a, "x"))(x))
    ours2 = np.asarray(body(lambda a: ejax.psum(a, "x", **opts))(x))  # a second call site/run
    shards = ours.reshape(-1, 3, rows)  # one slab per device
    group = n // 2 if mesh2d else n
    identical = True
    for g0 in range(0, shards.shape[0], group):
        for d in range(g0 + 1, g0 + group):
            identical &= np.array_equal(shards[d].view(np.uint32), shards[g0].view(np.uint32))
    out["identical"] = bool(identical and np.array_equal(ours, ours2))
    out["max_rel_vs_lax"] = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))
    exact = host.astype(np.float64).reshape(-1, group, 3, rows).sum(axis=1)
    out["mse_vs_exact"] = float(np.mean((shards[::group].astype(np.float64) - exact) ** 2))
    # Every element within the documented bound of these options (equarx.error_bound: docs/
    # algorithms.md, "Error bound"), per group of `group` devices; lax.psum's f32 sum within
    # the ring's bound (any order of N - 1 f32 additions errs by at most that much).
    locals_ = [host[3 * d:3 * d + 3] for d in range(n)]
    worst = worst_lax = 0.0
    refs = ref.reshape(-1, 3, rows)
    for k, g0 in enumerate(range(0, n, group)):
        members = locals_[g0:g0 + group]
        bound = equarx.error_bound(members, **opts)
        worst = max(worst, float(np.max(np.abs(shards[g0] - exact[k]) / bound)))
        ring = equarx.error_bound(members, algorithm="ring")
        worst_lax = max(worst_lax, float(np.max(np.abs(refs[g0] - exact[k]) / ring)))
    out["err_over_bound"] = worst
    out["lax_err_over_ring_bound"] = worst_lax
    if "--compare-numpy" in sys.argv:
        np_res = equarx.allreduce([np.ascontiguousarray(a) for a in locals_], **opts)[0]
        out["equal_numpy_api"] = bool(np.array_equal(np_res.view(np.uint32), shards[0].view(np.uint32)))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
