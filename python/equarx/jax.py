"""equarx.jax — EQuARX AllReduce inside JAX programs, as an XLA FFI custom call (CPU).

    import equarx.jax as ejax
    f = jax.jit(jax.shard_map(lambda x: ejax.psum(x, "tp", algorithm="semi"), mesh=mesh,
                              in_specs=P("tp"), out_specs=P()))

``psum(x, axis_name, **options)`` is a drop-in for ``jax.lax.psum(x, axis_name)`` inside
``shard_map`` (or pmap) over host devices of one process (run with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``). Each device's shard enters the
custom call ``equarx_psum`` with its rank (``lax.axis_index`` over `axis_name`) and its group
(the index over the mesh's other manual axes); the ranks of a group meet in an in-process
equarx group, one per call site, and every device gets a bitwise identical result. Options are
those of equarx.allreduce (algorithm, phases, codec, block, ...); ``algorithm="ring"`` is the
unquantized ring (matches lax.psum up to float summation order).

Several processes (``jax.distributed.initialize(...)`` with CPU devices, one or more local
devices each): every device's rank of a psum group gets its own communicator, set up at its
first call through JAX's distributed key-value store (equarx.bootstrap) and carried over
equarx's own TCP connections (EQUARX_DATA_PATH: sockets, or host for shared memory between the
ranks of one host). Every process must trace its psum call sites in the same order (as SPMD
programs do): a call site's number is its order of tracing.

Limits: CPU backend only (other backends raise UnsupportedError when traced); float32,
bfloat16, float16. Differentiable in reverse mode (jax.grad), with jax.lax.psum's transpose:
the psum of the cotangent (with the same options) in an untyped shard_map, the identity where
check_vma's types already put that sum elsewhere. Each traced call site keeps its
communicators until ``release_groups()``.
"""

import atexit
import functools
import itertools
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import _core
from . import bootstrap as _bootstrap
from .collectives import allreduce
from .errors import DTypeError, UnsupportedError

TARGET = "equarx_psum"
_registered = False
_lock = threading.Lock()
_sites = itertools.count(1)
_DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)


_SETUP_TIMEOUT_S = 120.0
_generations = {}


def _psum_exchange(site, group, rank, size):
    """The set-up exchange of rank `rank` of psum group (site, group) in a multi-process job:
    JAX's distributed key-value store, keys under equarx-psum/SITE/GROUP/GENERATION (a group
    made again after release_groups() uses the next generation)."""
    from jax._src import distributed
    client = distributed.global_state.client
    if client is None:
        raise UnsupportedError("equarx.jax.psum across processes needs jax.distributed.initialize() first")
    with _lock:
        gen = _generations[(site, group, rank)] = _generations.get((site, group, rank), -1) + 1
    set_bytes, get_bytes = _bootstrap.store_io(client)
    return _bootstrap.StoreExchange(set_bytes, get_bytes, rank, size, f"equarx-psum/{site}/{group}/{gen}",
                                    _SETUP_TIMEOUT_S)


def _register():
    global _registered
    with _lock:
        if _registered:
            return
        if not _core.has_xla_ffi:
            raise UnsupportedError(
                "this equarx build has no XLA FFI handler (jaxlib headers were not found when it "
                "was built); install jaxlib first, then reinstall equarx")
        jax.ffi.register_ffi_target(TARGET, _core.xla_psum_handler(), platform="cpu")
        if jax.process_count() > 1:
            _core.xla_set_exchange_factory(_psum_exchange)
            atexit.register(_core.xla_set_exchange_factory, None)
        _registered = True


def _check_backend():
    backend = jax.default_backend()
    if backend != "cpu":
        raise UnsupportedError(
            f"equarx.jax.psum runs on the CPU backend only (host devices); the default backend "
            f"is {backend!r}. Use jax.lax.psum there, or run with JAX_PLATFORMS=cpu.")


def _axes(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _group_index(axes):
    """Index of this device's group: its position over the manual mesh axes not reduced."""
    try:
        mesh = jax.sharding.get_abstract_mesh()
        names = tuple(getattr(mesh, "manual_axes", None) or mesh.axis_names)
    except Exception:  # pmap, or an older JAX without abstract meshes
        names = ()
    others = tuple(a for a in names if a not in axes)
    if not others:
        return jnp.int32(0)
    return lax.axis_index(others).astype(jnp.int32)


_valid_texts = set()


def _validated(options):
    """Canonical option text, after the library checked the options on a 1-rank call."""
    text = _core.canonical_options(options)
    if text not in _valid_texts:
        allreduce([np.zeros(1, np.float32)], **options)
        _valid_texts.add(text)
    return text


def psum(x, axis_name, **options):
    """Sum of `x` over the devices of `axis_name` (a name or tuple of names), with equarx.

    Must run inside shard_map/pmap over CPU devices of this process. Returns an array of x's
    shape and dtype, bitwise identical on every device of the group.
    """
    _check_backend()
    _register()
    x = jnp.asarray(x)
    if x.dtype not in [jnp.dtype(d) for d in _DTYPES]:
        raise DTypeError(f"equarx.jax.psum takes float32, bfloat16 or float16, got {x.dtype}")
    axes = _axes(axis_name)
    text = _validated(options)  # bad options raise here, at trace time, with the library's message
    return _psum(x, axes, text, _vma(x))


def _vma(x):
    """The mesh axes over which x's type says it varies (shard_map's check_vma), sorted: the
    type's manual_axis_type.varying (JAX 0.10), or its vma (earlier releases)."""
    t = jax.typeof(x)
    m = getattr(t, "manual_axis_type", None)
    axes = getattr(m, "varying", None) if m is not None else getattr(t, "vma", None)
    return tuple(sorted(axes or ()))


def _as_varying(y, vma):
    """y typed as varying over the axes of `vma` (the custom call's result carries no vma)."""
    missing = tuple(a for a in vma if a not in _vma(y))
    return lax.pcast(y, missing, to="varying") if missing and hasattr(lax, "pcast") else y


def _psum_call(x, axes, text):
    size = int(lax.axis_size(axes))
    where = jnp.stack([lax.axis_index(axes).astype(jnp.int32), _group_index(axes)])
    call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(x.shape, x.dtype))
    return call(x, where, site=np.int64(next(_sites)), size=np.int64(size), options=text)


# Differentiation: the sum is linear and every rank's output is the same sum, so the
# cotangent of each rank's input is the sum of every rank's output cotangent. Where that sum
# happens follows jax.lax.psum's rules:
# - shard_map with check_vma (the input's type varies over `axes`): the output is typed
#   invariant, so JAX already summed its cotangent where the invariant value met varying
#   uses (pvary's transpose is a psum); the transpose here only types it varying again;
# - without check_vma (untyped): the transpose is the psum of the cotangent, here with the
#   same options (its own call site and group).
# The cotangent's sum gets the input's type (varying where the input varies).
@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _psum(x, axes, text, vma):
    return _psum_call(x, axes, text)


def _psum_fwd(x, axes, text, vma):
    return _psum_call(x, axes, text), None


def _psum_bwd(axes, text, vma, _, g):
    if all(a in vma for a in axes):
        return (_as_varying(g, vma),)
    return (_as_varying(_psum_call(g, axes, text), vma),)


_psum.defvjp(_psum_fwd, _psum_bwd)


def release_groups():
    """Frees the communicators of every psum call site (do not call while one is running)."""
    if _core.has_xla_ffi:
        _core.xla_release_groups()


__all__ = ["psum", "release_groups", "TARGET"]
