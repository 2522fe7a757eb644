"""equarx.collectives — AllReduce on numpy arrays: an in-process N-rank group and single
communicators (one rank of an MPI job, from mpi4py).

Options are keyword arguments named as the C++ AllReduceOptions fields: algorithm, phases,
codec, rounding (names from the library's tables: ``equarx.algorithms()`` etc.), block, seed,
microshards, quantize_min_bytes, f32_partials, timeout_ms, validate, mode. None or absent = the
library default. The library validates them and its messages come back as equarx.errors
exceptions.

Beyond the options (per rank, like the C++ AllReduceExtras): ``residual(s)=`` float32 arrays
for error feedback (updated in place), ``stats=True`` for the encode telemetry of the call
(``last_stats``: dicts with the AllReduceStats fields).
"""

import atexit
import threading

import numpy as np

from . import _core
from ._arrays import check_array, dtype_code, in_bytes, out_bytes, to_dtype
from .codec import convert
from .errors import (CollectiveTimeoutError, InternalError, InvalidArgumentError, LayoutError, MismatchError,
                     RemoteError, UnsupportedError)


def canonical_options(**options):
    """Validates options and returns the canonical text the library uses (for logs, JAX attrs)."""
    return _core.canonical_options(options)


def wire_bytes_per_rank(count, dtype, ranks, **options):
    """Wire bytes one rank sends for an AllReduce of `count` elements with these options."""
    return _core.wire_bytes_per_rank(int(count), dtype_code(dtype), int(ranks), options)


def error_bound(arrays, *, dtype=None, hosts=0, **options):
    """The documented error bound of ``allreduce(arrays, dtype=dtype, **options)``: a float64
    array of the arrays' shape whose element i bounds |result[i] - exact f64 sum| for a correct
    call (docs/algorithms.md, "Error bound"; the bound the C++ tests' oracle checks). The
    options are resolved as the library resolves them for these ranks, dtype and size (auto's
    pick, the rotation); `hosts`: the communicator's ranks_per_host (0: one host, in process).
    """
    arrays, run = _prepare(arrays, dtype)
    xs = [np.ascontiguousarray(convert(a, "float32") if a.dtype != np.float32 else a) for a in arrays]
    bound = np.empty(arrays[0].shape, dtype=np.float64)
    _core.error_bound([in_bytes(x) for x in xs], dtype_code(run), options, int(hosts),
                      bound.reshape(-1).view(np.uint8))
    return bound


def _residual_bytes(res, size, what):
    """A residual array as a writable byte view, checked: float32, C-contiguous, `size` elements."""
    if not isinstance(res, np.ndarray):
        raise LayoutError(f"{what} must be a numpy float32 array, got {type(res).__name__}")
    if res.dtype != np.float32:
        raise InvalidArgumentError(f"{what} must be float32 (error feedback accumulates in f32), got {res.dtype.name}")
    if res.size != size:
        raise MismatchError(f"{what} has {res.size} elements but the tensor has {size}")
    return out_bytes(res, what)


def _prepare(arrays, dtype):
    if isinstance(arrays, np.ndarray) or not hasattr(arrays, "__len__"):
        raise LayoutError("allreduce takes a list of numpy arrays, one per rank")
    if len(arrays) == 0:
        raise InvalidArgumentError("allreduce needs at least one array (one per rank)")
    dt0 = check_array(arrays[0], "arrays[0]")
    for r, a in enumerate(arrays[1:], 1):
        dt = check_array(a, f"arrays[{r}]")
        if dt != dt0:
            raise MismatchError(f"arrays[{r}] has dtype {dt.name} but arrays[0] has {dt0.name}")
        if a.shape != arrays[0].shape:
            raise MismatchError(f"arrays[{r}] has shape {a.shape} but arrays[0] has shape "
                                f"{arrays[0].shape} (every rank must pass the same shape)")
    run = dt0 if dtype is None else to_dtype(dtype)
    if run != dt0:
        arrays = [convert(a, run) for a in arrays]
    return list(arrays), run


class InProcessGroup:
    """N ranks that are threads of this process (the library's in-process transport).

    ``allreduce(arrays)`` runs rank r on its own native thread with arrays[r] and returns the
    N results (bitwise identical by contract). The GIL is released during the call; calls on
    one group are serialized. Reusing a group reuses its scratch buffers. A call that fails
    part-way (CollectiveTimeoutError, RemoteError, InternalError) leaves the group unusable:
    every later call raises at once (docs/errors.md); make a new group.
    """

    def __init__(self, ranks):
        self._g = _core.InProcessGroup(int(ranks))
        self.last_seconds = 0.0
        self.last_bytes_sent = []
        self.last_stats = None

    @property
    def size(self):
        return self._g.size

    def allreduce(self, arrays, *, dtype=None, inplace=False, residuals=None, stats=False, **options):
        """Sums the N arrays; returns a list of N arrays (the inputs themselves if inplace).

        dtype: run the AllReduce in this dtype (inputs are converted with round to nearest
        even first, like equarx-reduce --dtype); default the arrays' dtype.
        residuals: error feedback, N float32 arrays of the arrays' size (zeros at first),
        updated in place with what each rank's quantization lost.
        stats: keep each rank's encode telemetry of this call in ``last_stats``.
        """
        if len(arrays) != self.size:
            raise InvalidArgumentError(f"this group has {self.size} ranks but {len(arrays)} arrays were given")
        arrays, run = _prepare(arrays, dtype)
        if inplace and dtype is not None and run != arrays[0].dtype:
            raise InvalidArgumentError("inplace=True cannot change the dtype")
        outs = arrays if inplace else [np.empty(a.shape, dtype=run) for a in arrays]
        send = [in_bytes(a) for a in arrays]
        recv = [out_bytes(o, f"arrays[{r}]") for r, o in enumerate(outs)]
        res = []
        if residuals is not None:
            if len(residuals) != self.size:
                raise InvalidArgumentError(f"this group has {self.size} ranks but {len(residuals)} residuals were given")
            res = [_residual_bytes(x, arrays[0].size, f"residuals[{r}]") for r, x in enumerate(residuals)]
        self.last_seconds, self.last_bytes_sent, st = self._g.allreduce(
            send, recv, dtype_code(run), options, res, bool(stats))
        self.last_stats = list(st) if stats else None
        return outs


_groups = {}
_groups_lock = threading.Lock()
# The cached groups go before the interpreter tears the extension down (nanobind reports
# instances still alive at that point as leaks).
atexit.register(_groups.clear)


def allreduce(arrays, *, dtype=None, inplace=False, residuals=None, **options):
    """In-process AllReduce of a list of N numpy arrays (rank r holds arrays[r]).

    Same numbers as ``equarx-reduce`` on the same inputs and options. Uses a cached
    InProcessGroup per N (one call at a time per N; use InProcessGroup for more control).
    """
    n = len(arrays) if hasattr(arrays, "__len__") and not isinstance(arrays, np.ndarray) else 0
    if n == 0:
        _prepare(arrays, dtype)  # raises the right error
    with _groups_lock:
        g = _groups.get(n)
        if g is None:
            g = _groups[n] = InProcessGroup(n)
    try:
        return g.allreduce(arrays, dtype=dtype, inplace=inplace, residuals=residuals, **options)
    except (CollectiveTimeoutError, RemoteError, InternalError):
        with _groups_lock:  # that group refuses every later call: the next one gets a new group
            if _groups.get(n) is g:
                del _groups[n]
        raise


class Communicator:
    """One rank of a group that spans processes (built by from_mpi4py or equarx.bootstrap)."""

    def __init__(self, native):
        self._c = native
        self.last_stats = None

    @property
    def _native(self):
        if self._c is None:
            raise InvalidArgumentError("this communicator was closed")
        return self._c

    def close(self):
        """Releases the native communicator now (its connections, shared memory and threads)
        rather than when the last reference to this object goes; every later use raises.
        Collective in effect: the peers' calls fail once this rank's connections are gone."""
        self._c = None

    rank = property(lambda self: self._native.rank)
    size = property(lambda self: self._native.size)
    bytes_sent = property(lambda self: self._native.bytes_sent)
    calls = property(lambda self: self._native.calls, doc="AllReduce calls this communicator has made.")
    scratch_bytes = property(lambda self: self._native.scratch_bytes,
                             doc="Scratch memory held for calls: at most max(64 MiB, a quarter of a message).")

    @property
    def ranks_per_host(self):
        """What the option ranks_per_host means when a call leaves it unset: EQUARX_RANKS_PER_HOST,
        else the layout of hosts the data path found (consecutive ranks per host), else 1."""
        return self._native.ranks_per_host

    def allreduce(self, x, *, out=None, residual=None, stats=False, **options):
        """Sums `x` over all ranks (every rank calls it with the same shape, dtype, options).

        Returns `out` (a new array if None; `out is x` is in place). Shapes, dtypes and options
        that differ across ranks fail on every rank with MismatchError (options validate=True).
        residual: this rank's float32 error-feedback array (updated in place); stats: keep
        this rank's telemetry of the call in ``last_stats``.
        """
        check_array(x, "x")
        if out is None:
            out = np.empty_like(x)
        else:
            check_array(out, "out")
            if out.dtype != x.dtype or out.size != x.size:
                raise InvalidArgumentError("out must have the dtype and size of x")
        res = [] if residual is None else [_residual_bytes(residual, x.size, "residual")]
        self.last_stats = self._native.allreduce(in_bytes(x), out_bytes(out, "out"), dtype_code(x.dtype),
                                            options, res, bool(stats))
        return out


def from_mpi4py(comm):
    """A Communicator over an mpi4py communicator (collective: every rank of `comm` calls it).

    The library duplicates the communicator. Needs this build with MPI (equarx.has_mpi) and
    the same MPI library as mpi4py (Debian's Open MPI here).
    """
    if not _core.has_mpi:
        raise UnsupportedError("this equarx build has no MPI support (built without EQUARX_ENABLE_MPI)")
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise UnsupportedError("from_mpi4py needs mpi4py (pip install mpi4py)") from e
    if not isinstance(comm, MPI.Comm):
        raise InvalidArgumentError(f"expected an mpi4py.MPI.Comm, got {type(comm).__name__}")
    return Communicator(_core.mpi_communicator(MPI._handleof(comm)))
