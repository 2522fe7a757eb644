"""The AllReduce calls of equarx's torch backend (equarx.torch): the checks of tensors, ops and
per-call options, and one worker thread per group that makes its communicator's calls in
submission order (a native Communicator takes one caller thread). Private: equarx.torch is the
interface.
"""

import atexit
import queue
import threading
import traceback

import numpy as np
import torch
import torch.distributed as dist

from ._arrays import BFLOAT16, to_dtype
from .codec import convert as _convert
from .collectives import canonical_options
from .errors import DTypeError, InvalidArgumentError, LayoutError, UnsupportedError

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_RED = dist.ReduceOp
_AVG = getattr(_RED, "AVG", None)
_PREMUL_SUM = getattr(_RED, "PREMUL_SUM", None)
_DESTROYED = "this equarx process group was destroyed (destroy_process_group)"
_OP_NAMES = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")


def _op_name(op):
    """The name of a ReduceOp ("SUM", "MAX", ...), for messages."""
    for n in _OP_NAMES:
        try:
            if hasattr(_RED, n) and op == getattr(_RED, n):
                return n
        except (TypeError, RuntimeError):
            pass
    inner = getattr(op, "op", op)
    return getattr(inner, "name", None) or str(inner)


def _sum_kind(op):
    """"sum", "avg" or "premul" for the ops equarx runs (on float tensors), else None."""
    if op == _RED.SUM:
        return "sum"
    if _AVG is not None and op == _AVG:
        return "avg"
    if _PREMUL_SUM is not None and op == _PREMUL_SUM:
        return "premul"
    return None


def _goes_to_equarx(tensor, op):
    """Whether dist.all_reduce of `tensor` with `op` is equarx's: a CPU tensor of a float dtype
    equarx sums, and SUM, AVG or PREMUL_SUM. Anything else is gloo's."""
    return (isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu" and tensor.dtype in _DTYPES
            and _sum_kind(op) is not None)


def _numpy_view(t, what):
    """A flat numpy view of the tensor's memory (no copy), checked."""
    if not isinstance(t, torch.Tensor):
        raise LayoutError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise UnsupportedError(f"{what} is on {t.device}; the equarx backend works on CPU tensors and has no "
                               f"{t.device.type.upper()} path yet (name another backend for that device, "
                               f"e.g. init_process_group('cpu:equarx,cuda:nccl'))")
    if not t.is_contiguous():
        raise LayoutError(f"{what} is not contiguous (pass {what}.contiguous())")
    if t.dtype not in _DTYPES:
        raise DTypeError(f"{what} has dtype {str(t.dtype).replace('torch.', '')}; equarx.torch.all_reduce sums "
                         "float32, bfloat16 or float16 (dist.all_reduce forwards other dtypes to gloo)")
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bfloat16:
        if BFLOAT16 is None:
            raise DTypeError("bfloat16 tensors need the ml_dtypes package")
        return flat.view(torch.int16).numpy().view(BFLOAT16)
    return flat.numpy()


def _run_dtype(dtype):
    """The numpy dtype of the per-call option dtype= (a torch dtype or a name), or None."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        if dtype not in _DTYPES:
            raise DTypeError(f"dtype={dtype}: equarx runs the AllReduce in float32, bfloat16 or float16")
        dtype = _DTYPES[dtype]
    return to_dtype(dtype)


def _residual_array(residual, count):
    if residual is None:
        return None
    if isinstance(residual, torch.Tensor):
        if residual.dtype != torch.float32 or residual.device.type != "cpu" or not residual.is_contiguous():
            raise InvalidArgumentError("residual must be a contiguous CPU float32 tensor or numpy array")
        residual = residual.detach().reshape(-1).numpy()
    if not isinstance(residual, np.ndarray):
        raise InvalidArgumentError(f"residual must be a float32 tensor or numpy array, got {type(residual).__name__}")
    if residual.size != count:
        raise InvalidArgumentError(f"residual has {residual.size} elements, the tensor {count}")
    return residual


class _Worker:
    """One thread that makes a communicator's calls in submission order (a Communicator takes
    one caller thread)."""

    def __init__(self, name):
        self._q = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            job = self._q.get()
            if callable(job):  # close()'s last step
                job()
                return
            job.run()

    def submit(self, job):
        self._q.put(job)
        return job

    def close(self, last):
        """Runs the jobs queued so far, then `last()`, then ends the thread; waits for that
        unless called on the thread itself (a finalizer may run there)."""
        self._q.put(last)
        if threading.current_thread() is not self._thread:
            self._thread.join()


class _Job:
    def __init__(self, fn, tensor):
        self._fn, self.tensor = fn, tensor
        self.done = threading.Event()
        self.error = None
        # torch 1.13's Future.set_exception stores the exception as if it were the value, and
        # a C++ reader of that value (DDP's reducer) takes it for tensors and crashes. A future
        # chained on it fails properly instead: it is the one handed out.
        self._raw = torch.futures.Future()
        self.future = self._raw.then(lambda f: f.value())

    def run(self):
        try:
            self._fn()
        except BaseException as e:  # noqa: BLE001 - handed to the waiter
            # Keep the traceback's lines but not its frames' locals (the communicator and the
            # tensors), which would otherwise live as long as the work object.
            traceback.clear_frames(e.__traceback__)
            self.error = e
        self._fn = None
        # The future first: a waiter released by `done` may look at it at once.
        if self.error is None:
            self._raw.set_result([self.tensor])
        else:
            self._raw.set_exception(self.error)
        self.done.set()

    def wait(self):
        self.done.wait()
        if self.error is not None:
            raise self.error
        return True


_live = set()  # every open _Communicator, closed at exit (their threads hold native objects)
_live_lock = threading.Lock()


class _Communicator:
    """An equarx communicator of a torch group, its worker thread and its default options."""

    def __init__(self, comm, timeout):
        self.comm = comm
        self.size = comm.size
        self.worker = _Worker(f"equarx-rank{comm.rank}")
        self._lock = threading.Lock()
        self._closed = False
        with _live_lock:
            _live.add(self)
        self.defaults = {}
        self.timeout_ms = max(1, int(timeout.total_seconds() * 1000)) if timeout is not None else None

    def submit(self, tensor, op, residual, options, average=False, on_bytes=None):
        """Queues the AllReduce of `tensor` (op SUM, AVG or PREMUL_SUM; average: divide the sum
        by the group's size); every argument is checked here, on the caller's thread.
        on_bytes(n), if given, is called on the worker with the bytes this call sent."""
        kind = _sum_kind(op)
        if kind is None:
            raise UnsupportedError(f"equarx.torch.all_reduce sums (ReduceOp SUM, AVG or PREMUL_SUM), got "
                                   f"ReduceOp.{_op_name(op)}; dist.all_reduce on the group forwards it to gloo")
        x = _numpy_view(tensor, "tensor")
        res = _residual_array(residual, x.size)
        opts = dict(self.defaults)
        opts.update({k: v for k, v in options.items() if v is not None})
        run = _run_dtype(opts.pop("dtype", None))
        if self.timeout_ms is not None:
            opts.setdefault("timeout_ms", self.timeout_ms)
        canonical_options(**opts)  # bad names and values raise here
        factor = None
        if kind == "premul":
            factor = getattr(op, "factor", None)
            if factor is None:
                raise UnsupportedError("ReduceOp.PREMUL_SUM without a readable factor (this torch's ReduceOp "
                                       "has no .factor): multiply the tensor and use SUM")
        average = average or kind == "avg"
        n = self.size

        def call():
            # The communicator is looked up here, not captured: a failed call's traceback keeps
            # this function alive, and must not keep the native communicator past close().
            comm = self.comm
            if factor is not None:
                tensor.mul_(factor)
            y = x if run is None or run == x.dtype else _convert(x, run)
            before = comm.bytes_sent
            comm.allreduce(y, out=y, residual=res, **opts)
            if on_bytes is not None:
                on_bytes(comm.bytes_sent - before)
            if y is not x:
                np.copyto(x, _convert(y, x.dtype))
            if average:
                tensor.div_(n)

        with self._lock:  # no call is queued after close() began
            if self._closed:
                raise InvalidArgumentError(_DESTROYED)
            return self.worker.submit(_Job(call, tensor))

    def close(self):
        """Finishes the queued calls, stops the thread and drops the native communicator
        (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.worker.close(self._drop)

    def _drop(self):
        comm, self.comm = self.comm, None
        comm.close()  # even where a caller still holds the Communicator object
        with _live_lock:
            _live.discard(self)


@atexit.register
def _close_all():
    with _live_lock:
        live = list(_live)
    for c in live:
        c.close()
