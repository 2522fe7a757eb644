"""equarx.codec — the wire codecs of equarx on numpy arrays.

    wire = encode(x, "int8", block=64)            # uint8 array: [f32 scales][codes]
    y = decode(wire, x.shape, "int8", block=64)   # float32 (or dtype=...)
    wire_bytes(x.size, "int8", block=64)

Formats are the library's (src/codec/codec.h, byte-exact layout in docs/wire_format.md):
``formats()`` lists them; a block format may be named without its ``_block`` suffix
("int8", "int4", "fp8_e4m3", "fp8_e5m2"), so new formats appear here without Python changes.
Encoding uses the runtime-dispatched SIMD kernels; ``reference=True`` uses the scalar
reference (bitwise equal by contract).
"""


import numpy as np

from . import _core
from ._arrays import check_array, dtype_code, in_bytes, out_bytes, to_dtype
from .errors import InvalidArgumentError, LayoutError

ROUNDING = {"nearest": 0, "nearest_even": 0, "rne": 0, "stochastic": 1, "sr": 1}


def formats():
    """Names of every wire format this build knows, by id."""
    return [name for _, name in _core.formats()]


def _format_id(fmt):
    table = _core.formats()
    if isinstance(fmt, (int, np.integer)) and not isinstance(fmt, bool):
        for fid, _ in table:
            if fid == int(fmt):
                return fid
    elif isinstance(fmt, str):
        for fid, name in table:
            if fmt == name or (name.endswith("_block") and fmt == name[: -len("_block")]):
                return fid
    names = ", ".join(n for _, n in table)
    raise InvalidArgumentError(f"unknown wire format {fmt!r} (valid: {names}; '_block' may be omitted)")


def _rounding(r):
    if isinstance(r, str) and r in ROUNDING:
        return ROUNDING[r]
    if r in (0, 1):
        return int(r)
    raise InvalidArgumentError(f"unknown rounding {r!r} (nearest or stochastic)")


def wire_bytes(n, format="int8", block=_core.default_block):
    """Bytes of the wire image of `n` elements."""
    if n < 0:
        raise InvalidArgumentError("n must not be negative")
    return _core.wire_bytes(_format_id(format), block, int(n))


def encode(x, format="int8", block=_core.default_block, *, rounding="nearest", seed=0, stream=0,
           offset=0, reference=False, stats=False):
    """Encodes the C-contiguous float32/bfloat16/float16 array `x` (all its elements, in order).

    Returns a uint8 array of wire_bytes(x.size) bytes, or (wire, stats) with stats=True, where
    stats is a dict of the library's encode telemetry (clipped, sum_sq_err_est,
    max_abs_err_est). `offset` is the absolute index of x[0] in the whole tensor: it anchors
    the block grid's stochastic-rounding stream, as inside a collective.
    """
    dt = check_array(x, "x")
    fid = _format_id(format)
    wire = np.empty(_core.wire_bytes(fid, block, x.size), dtype=np.uint8)
    clipped, sse, maxerr = _core.encode(fid, block, _rounding(rounding), seed, stream, offset,
                                        dtype_code(dt), in_bytes(x), wire, reference, stats)
    if stats:
        return wire, {"clipped": clipped, "sum_sq_err_est": sse, "max_abs_err_est": maxerr}
    return wire


def decode(wire, shape, format="int8", block=_core.default_block, *, dtype=np.float32,
           reference=False):
    """Decodes a wire image of prod(shape) elements into a new array of `dtype`."""
    if not isinstance(wire, np.ndarray) or wire.dtype != np.uint8:
        raise LayoutError("wire must be a numpy uint8 array (as encode returns)")
    if not wire.flags.c_contiguous:
        raise LayoutError("wire is not C-contiguous")
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    out = np.empty(shape, dtype=to_dtype(dtype))
    _core.decode(_format_id(format), block, wire.reshape(-1), dtype_code(out.dtype),
                 out_bytes(out), reference)
    return out


def convert(x, dtype):
    """`x` converted to `dtype` by the library (round to nearest even, canonical NaN)."""
    check_array(x, "x")
    out = np.empty(x.shape, dtype=to_dtype(dtype))
    _core.convert(dtype_code(x.dtype), in_bytes(x), dtype_code(out.dtype), out_bytes(out))
    return out


def simd_targets():
    """(id, name) of the SIMD targets this CPU and build support, best first."""
    return list(_core.simd_targets())


class force_simd_target:
    """Context manager restricting the codec kernels to one SIMD target (tests, benchmarks)."""

    def __init__(self, target):
        self.target = target

    def __enter__(self):
        _core.force_simd_target(self.target)
        return self

    def __exit__(self, *exc):
        _core.force_simd_target(0)
        return False


def quantization_mse_bound(block_absmax, format="int8"):
    """Expected MSE of one round-to-nearest quantization of a block with absmax `a`
    (code spacing^2 / 12); a helper for tests and error budgets of the integer formats."""
    levels = dict(_core.integer_levels())  # the library's block format table
    q = levels.get(format[: -len("_block")] if format.endswith("_block") else format)
    if q is None:
        raise InvalidArgumentError("bound known for the integer formats only (" + ", ".join(levels) + ")")
    return (block_absmax / q) ** 2 / 12.0


__all__ = ["formats", "wire_bytes", "encode", "decode", "convert", "simd_targets",
           "force_simd_target", "quantization_mse_bound"]
