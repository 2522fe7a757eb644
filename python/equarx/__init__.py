"""equarx — quantized AllReduce (EQuARX) for Python.

    import numpy as np, equarx
    xs = [np.random.randn(1 << 20).astype(np.float32) for _ in range(4)]
    ys = equarx.allreduce(xs, algorithm="semi", phases="rs+ag", codec="int8", block=64)
    wire = equarx.encode(xs[0], "int8", block=64)

Modules: equarx.codec (codecs on numpy arrays), equarx.collectives (in-process group, MPI
communicators), equarx.jax (psum as an XLA FFI custom call), equarx.torch (all_reduce, DDP
hook). Errors are equarx.errors classes carrying the library's message. See docs/python.md.
"""

from . import _core
from . import errors
from .codec import convert, decode, encode, formats, wire_bytes
from .collectives import (Communicator, InProcessGroup, allreduce, canonical_options,
                          from_mpi4py, wire_bytes_per_rank)
from .errors import (CollectiveTimeoutError, DTypeError, EquarxError, InternalError,
                     InvalidArgumentError, LayoutError, MismatchError, RemoteError,
                     UnsupportedError)

_core._set_error_classes(errors.BY_CODE)

__version__ = _core.version()
has_mpi = _core.has_mpi
has_xla_ffi = _core.has_xla_ffi


def algorithms():
    """{name: description} of every AllReduce algorithm (the library's AlgorithmTable)."""
    return {name: desc for _, name, desc in _core.algorithms()}


def phases():
    """{name: description} of the quantized-phase choices (PhasesTable)."""
    return {name: desc for _, name, desc in _core.phases()}


def codecs():
    """{name: description} of the AllReduce wire codecs (CodecTable)."""
    return {name: desc for _, name, desc in _core.codecs()}


def roundings():
    """{name: description} of the rounding modes of the quantized phases (RoundingTable)."""
    return {name: desc for _, name, desc in _core.roundings()}


def rotations():
    """{name: description} of the rotations applied before quantizing (RotationTable)."""
    return {name: desc for _, name, desc in _core.rotations()}


def scale_formats():
    """{name: description} of how block scales are stored on the wire (ScaleFormatTable)."""
    return {name: desc for _, name, desc in _core.scale_formats()}


def options():
    """Every AllReduce option the keyword arguments accept, from the library's one option
    table: {name: {"alias", "kind", "allowed", "default", "doc"}}."""
    return {name: {"alias": alias, "kind": kind, "allowed": allowed, "default": default, "doc": doc}
            for name, alias, kind, allowed, default, doc in _core.option_fields()}


__all__ = [
    "allreduce", "InProcessGroup", "Communicator", "from_mpi4py", "encode", "decode", "convert",
    "wire_bytes", "wire_bytes_per_rank", "formats", "canonical_options", "algorithms", "phases",
    "codecs", "roundings", "rotations", "scale_formats", "options", "errors", "EquarxError", "InvalidArgumentError", "DTypeError", "LayoutError",
    "MismatchError", "CollectiveTimeoutError", "RemoteError", "InternalError", "UnsupportedError",
    "has_mpi", "has_xla_ffi",
]
