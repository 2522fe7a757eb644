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
from .collectives import (Communicator, InProcessGroup, allreduce, canonical_options, error_bound,
                          from_mpi4py, wire_bytes_per_rank)
from .errors import (CollectiveTimeoutError, DTypeError, EquarxError, InternalError,
                     InvalidArgumentError, LayoutError, MismatchError, RemoteError,
                     UnsupportedError)

_core._set_error_classes(errors.BY_CODE)

__version__ = _core.version()
has_mpi = _core.has_mpi
has_xla_ffi = _core.has_xla_ffi


def _table(name, doc):
    """The function `name`() -> {name: description} of the library's enum table _core.name()."""
    def table():
        return {entry: desc for _, entry, desc in getattr(_core, name)()}
    table.__name__ = table.__qualname__ = name
    table.__doc__ = doc
    return table


algorithms = _table("algorithms", "{name: description} of every AllReduce algorithm (the library's AlgorithmTable).")
phases = _table("phases", "{name: description} of the quantized-phase choices (PhasesTable).")
codecs = _table("codecs", "{name: description} of the AllReduce wire codecs (CodecTable).")
roundings = _table("roundings", "{name: description} of the rounding modes of the quantized phases (RoundingTable).")
rotations = _table("rotations", "{name: description} of the rotations applied before quantizing (RotationTable).")
scale_formats = _table("scale_formats", "{name: description} of how block scales are stored on the wire (ScaleFormatTable).")


def options():
    """Every AllReduce option the keyword arguments accept, from the library's one option
    table: {name: {"alias", "kind", "allowed", "default", "doc"}}."""
    return {name: {"alias": alias, "kind": kind, "allowed": allowed, "default": default, "doc": doc}
            for name, alias, kind, allowed, default, doc in _core.option_fields()}


__all__ = [
    "allreduce", "InProcessGroup", "Communicator", "from_mpi4py", "encode", "decode", "convert",
    "wire_bytes", "wire_bytes_per_rank", "error_bound", "formats", "canonical_options", "algorithms", "phases",
    "codecs", "roundings", "rotations", "scale_formats", "options", "errors", "EquarxError", "InvalidArgumentError", "DTypeError", "LayoutError",
    "MismatchError", "CollectiveTimeoutError", "RemoteError", "InternalError", "UnsupportedError",
    "has_mpi", "has_xla_ffi",
]
