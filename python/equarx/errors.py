"""equarx exceptions: one class per library StatusCode, carrying the library's message.

Every class derives from EquarxError (a RuntimeError) and also from the closest builtin, so
``except ValueError`` catches bad arguments and mismatches as a Python user would expect.
"""


class EquarxError(RuntimeError):
    """Base class of every error equarx raises. ``code`` is the library's StatusCode name."""

    code = "unknown"


class InvalidArgumentError(EquarxError, ValueError):
    """A bad argument (block size out of range, unknown algorithm, wrong buffer size, ...)."""

    code = "invalid_argument"


class DTypeError(InvalidArgumentError, TypeError):
    """An array of a dtype equarx does not handle (it takes float32, bfloat16, float16)."""


class LayoutError(InvalidArgumentError):
    """An array that is not C-contiguous, or not a numpy array at all."""


class MismatchError(EquarxError, ValueError):
    """Ranks called with different shapes, counts, dtypes or options."""

    code = "mismatch"


class CollectiveTimeoutError(EquarxError, TimeoutError):
    """The per-call deadline (timeout_ms) passed before the collective finished."""

    code = "timeout"


class RemoteError(EquarxError):
    """A peer failed or went away during the collective."""

    code = "remote_error"


class InternalError(EquarxError):
    """A bug in equarx; please report it."""

    code = "internal"


class UnsupportedError(EquarxError, NotImplementedError):
    """A valid request this build cannot serve (e.g. no MPI, no XLA FFI, non-CPU backend)."""

    code = "unsupported"


class IoError(EquarxError, OSError):
    """A file could not be read or written."""

    code = "io_error"


BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgumentError, MismatchError, CollectiveTimeoutError, RemoteError,
                InternalError, UnsupportedError, IoError)
}
