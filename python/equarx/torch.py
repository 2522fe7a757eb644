"""equarx.torch — a torch.distributed backend named "equarx", and a DDP communication hook.

    import torch.distributed as dist, equarx.torch as et     # the import registers "equarx"
    dist.init_process_group("equarx")                        # torchrun / env://, CPU tensors
    et.options(codec="int8", algorithm="two_shot")           # this group's AllReduce options
    dist.all_reduce(t)                                       # equarx's C++ AllReduce, in place
    et.all_reduce(t, codec="int4", residual=res)             # per-call options, error feedback
    ddp.register_comm_hook(et.HookState(codec="int8", error_feedback=True), et.allreduce_hook)

The backend sets up an equarx communicator through the process group's own Store (the
addresses of equarx's authenticated TCP connections, no MPI: equarx.bootstrap) and runs every
``all_reduce`` (SUM or AVG; float32, bfloat16, float16; CPU, contiguous) through equarx's C++
AllReduce on one worker thread per group, in call order: ``async_op=True`` returns at once
and the work object completes when the call has. Every other collective (broadcast, barrier,
all_gather, reduce_scatter, send/recv, ...) goes to a gloo process group that the backend
builds from the same store, so DDP and the rest of torch.distributed work unchanged.

Options: those of ``equarx.allreduce`` (algorithm, phases, codec, block, rotation,
scale_format, rounding, seed, ...; ``equarx.options()`` lists them), set per group with
``options(...)`` or per call with ``all_reduce(t, **options)``; absent ones take the library's
defaults. ``timeout_ms`` defaults to the timeout given to ``init_process_group``: a dead peer
makes every survivor's call raise within it, and the group then refuses further calls.

Errors are equarx.errors classes (RuntimeError subclasses, as torch.distributed raises):
shapes or options that differ between ranks raise MismatchError on every rank.

``all_reduce`` and the hook also work on a group of another backend (e.g. gloo) when it is the
default group: equarx then sets up its communicator through the default group's store at the
first call (every rank must make that first call).
"""

import atexit
import contextlib
import datetime
import itertools
import queue
import sys
import threading
import traceback

import numpy as np
import torch
import torch.distributed as dist

from . import bootstrap as _bootstrap
from .collectives import canonical_options, wire_bytes_per_rank as _wire_bytes_per_rank
from ._arrays import BFLOAT16
from .errors import DTypeError, InvalidArgumentError, LayoutError, MismatchError, UnsupportedError

BACKEND = "equarx"
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_C10D = torch._C._distributed_c10d


def _numpy_view(t, what):
    """A flat numpy view of the tensor's memory (no copy), checked."""
    if not isinstance(t, torch.Tensor):
        raise LayoutError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise UnsupportedError(f"{what} is on {t.device}; the equarx backend works on CPU tensors "
                               "(use NCCL for GPU tensors)")
    if not t.is_contiguous():
        raise LayoutError(f"{what} is not contiguous (pass {what}.contiguous())")
    if t.dtype not in _DTYPES:
        raise DTypeError(f"{what} has dtype {t.dtype}; equarx sums float32, bfloat16 or float16 "
                         f"(got {str(t.dtype).replace('torch.', '')})")
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bfloat16:
        if BFLOAT16 is None:
            raise DTypeError("bfloat16 tensors need the ml_dtypes package")
        return flat.view(torch.int16).numpy().view(BFLOAT16)
    return flat.numpy()


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
            if job is None:
                return
            job.run()

    def submit(self, job):
        self._q.put(job)
        return job

    def close(self):
        self._q.put(None)
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


_live = []  # every _Communicator, closed at exit (their threads hold native objects)
_live_lock = threading.Lock()


class _Communicator:
    """An equarx communicator of a torch group, its worker thread and its default options."""

    def __init__(self, comm, timeout):
        self.comm = comm
        self.worker = _Worker(f"equarx-rank{comm.rank}")
        with _live_lock:
            _live.append(self)
        self.defaults = {}
        self.timeout_ms = max(1, int(timeout.total_seconds() * 1000)) if timeout is not None else None

    def submit(self, tensor, op, residual, options, average=False):
        """Queues the AllReduce of `tensor` (op SUM, or AVG / average: the sum divided by the
        group's size); every argument is checked here, on the caller's thread."""
        x = _numpy_view(tensor, "tensor")
        res = _residual_array(residual, x.size)
        opts = dict(self.defaults)
        opts.update({k: v for k, v in options.items() if v is not None})
        if self.timeout_ms is not None:
            opts.setdefault("timeout_ms", self.timeout_ms)
        canonical_options(**opts)  # bad names and values raise here
        if op != dist.ReduceOp.SUM and (_AVG is None or op != _AVG):
            raise UnsupportedError(f"the equarx backend's all_reduce sums (ReduceOp.SUM or AVG), got {op}")
        average = average or (_AVG is not None and op == _AVG)
        n = self.comm.size

        def call():
            self.comm.allreduce(x, out=x, residual=res, **opts)
            if average:
                tensor.div_(n)

        return self.worker.submit(_Job(call, tensor))

    def close(self):
        """Finishes the queued calls, stops the thread and drops the native communicator."""
        if self.comm is not None:
            self.worker.close()
            self.comm = None


@atexit.register
def _close_all():
    with _live_lock:
        live = list(_live)
        _live.clear()
    for c in live:
        c.close()


_AVG = getattr(dist.ReduceOp, "AVG", None)


class _Work(_C10D.Work):
    """A torch work object over an equarx call."""

    def __init__(self, job):
        super().__init__()
        self._job = job

    def is_completed(self):
        return self._job.done.is_set()

    def is_success(self):
        return self._job.done.is_set() and self._job.error is None

    def exception(self):
        return self._job.error

    def wait(self, timeout=None):  # noqa: ARG002 - the call's own deadline (timeout_ms) bounds it
        return self._job.wait()

    def get_future(self):
        return self._job.future

    def result(self):
        self._job.wait()
        return [self._job.tensor]


def _work(job, caller=None):
    """The work object of a submitted call.

    Python callers (dist.all_reduce, user code) get _Work, whose wait() raises the call's
    error. C++ callers (DDP's reducer, reached through autograd) call getFuture() on it, which
    torch 1.13 does not let a Python work object override: they get torch's own
    future-wrapping work, whose future carries the error (the reducer raises it from the
    backward pass); its wait() would not raise, which is why Python callers never get it.
    Who called is told by the innermost Python frame: C++ machinery runs under torch.autograd
    or torch.nn."""
    make = getattr(_C10D, "_create_work_from_future", None)
    module = caller.f_globals.get("__name__", "") if caller is not None else ""
    if make is not None and module.startswith(("torch.autograd", "torch.nn.")):
        return make(job.future)
    return _Work(job)


class ProcessGroupEquarx(_C10D.ProcessGroup):
    """The "equarx" backend: all_reduce through equarx, everything else through gloo."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._timeout = timeout
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo", store), rank, size, timeout)
        if hasattr(self, "_register_backend"):
            # torch 2.x: a process group dispatches the collectives this class does not define
            # (all_gather_single, reduce_scatter_single, ...) to its device's backend.
            gloo = _C10D.ProcessGroup.BackendType.GLOO
            self._register_backend(torch.device("cpu"), gloo, self._gloo)
            self._set_default_backend(gloo)
        comm = _bootstrap.from_store(dist.PrefixStore("equarx", store), rank, size, prefix="setup",
                                     timeout=timeout.total_seconds())
        self._equarx = _Communicator(comm, timeout)

    def getBackendName(self):  # noqa: N802 - torch's name
        return BACKEND

    @property
    def equarx_communicator(self):
        """The equarx.collectives.Communicator under this group."""
        return self._equarx.comm

    def allreduce(self, tensors, opts=None):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if len(tensors) != 1:
            raise UnsupportedError(f"the equarx backend reduces one tensor per call, got {len(tensors)}")
        op = getattr(opts, "reduceOp", opts) if opts is not None else dist.ReduceOp.SUM
        return _work(self._equarx.submit(tensors[0], op, None, {}), sys._getframe(1))

    # Everything else: gloo over the same store.
    def allreduce_coalesced(self, *args, **kwargs):
        return self._gloo.allreduce_coalesced(*args, **kwargs)

    def broadcast(self, *args, **kwargs):
        return self._gloo.broadcast(*args, **kwargs)

    def barrier(self, *args, **kwargs):
        return self._gloo.barrier(*args, **kwargs)

    def allgather(self, *args, **kwargs):
        return self._gloo.allgather(*args, **kwargs)

    def _allgather_base(self, *args, **kwargs):
        return self._gloo._allgather_base(*args, **kwargs)

    def allgather_coalesced(self, *args, **kwargs):
        return self._gloo.allgather_coalesced(*args, **kwargs)

    def gather(self, *args, **kwargs):
        return self._gloo.gather(*args, **kwargs)

    def scatter(self, *args, **kwargs):
        return self._gloo.scatter(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        return self._gloo.reduce(*args, **kwargs)

    def reduce_scatter(self, *args, **kwargs):
        return self._gloo.reduce_scatter(*args, **kwargs)

    def _reduce_scatter_base(self, *args, **kwargs):
        return self._gloo._reduce_scatter_base(*args, **kwargs)

    def alltoall(self, *args, **kwargs):
        return self._gloo.alltoall(*args, **kwargs)

    def alltoall_base(self, *args, **kwargs):
        return self._gloo.alltoall_base(*args, **kwargs)

    def send(self, *args, **kwargs):
        return self._gloo.send(*args, **kwargs)

    def recv(self, *args, **kwargs):
        return self._gloo.recv(*args, **kwargs)

    def recv_anysource(self, *args, **kwargs):
        return self._gloo.recv_anysource(*args, **kwargs)

    def monitored_barrier(self, *args, **kwargs):
        return self._gloo.monitored_barrier(*args, **kwargs)


def _create(*args):
    """register_backend's creator: (store, rank, size, timeout) in torch 1.13; torch 2.x may
    pass a trailing options object."""
    store, rank, size, timeout = args[:4]
    return ProcessGroupEquarx(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}) or hasattr(dist.Backend, BACKEND.upper()):
        return
    try:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    except TypeError:  # torch < 2.0: no devices
        dist.Backend.register_backend(BACKEND, _create)


_register()

# Communicators of groups of other backends (the default group), made through the default
# store at their first call.
_side = {}
_side_lock = threading.Lock()
_side_count = itertools.count()


def _communicator(group):
    """The _Communicator that serves `group` (None: the default group)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if isinstance(pg, ProcessGroupEquarx):
        return pg._equarx
    with _side_lock:
        c = _side.get(id(pg))
        if c is not None and c[0] is pg:
            return c[1]
    if group is not None and group is not dist.distributed_c10d._get_default_group():
        raise UnsupportedError("equarx.torch.all_reduce runs on an 'equarx' process group, or on the default "
                               "group of another backend; for other groups create them with backend='equarx'")
    store = dist.distributed_c10d._get_default_store()
    timeout = getattr(dist.distributed_c10d, "default_pg_timeout", datetime.timedelta(minutes=30))
    comm = _bootstrap.from_store(store, pg.rank(), pg.size(), prefix=f"equarx-side/{next(_side_count)}",
                                 timeout=timeout.total_seconds())
    c = _Communicator(comm, None)
    with _side_lock:
        _side[id(pg)] = (pg, c)
    return c


def options(group=None, **opts):
    """Sets the AllReduce options of `group` (None: the default group) for every later
    ``dist.all_reduce`` on it; returns a context manager that restores the previous ones on
    exit. Options are validated here (InvalidArgumentError names the valid choices)."""
    canonical_options(**opts)
    c = _communicator(group)
    before = dict(c.defaults)
    c.defaults.update({k: v for k, v in opts.items() if v is not None})

    @contextlib.contextmanager
    def restore():
        try:
            yield
        finally:
            c.defaults.clear()
            c.defaults.update(before)

    return restore()


def all_reduce(tensor, group=None, *, op=None, async_op=False, residual=None, average=False, **opts):
    """Sums `tensor` in place over `group` with equarx (like dist.all_reduce), with per-call
    options. residual: this rank's float32 error-feedback array (tensor or numpy, the
    tensor's size, zeros at first; updated in place); average or op=ReduceOp.AVG divides the
    sum by the group's size. Returns a work object if async_op, else the tensor."""
    job = _communicator(group).submit(tensor, dist.ReduceOp.SUM if op is None else op, residual, opts,
                                      average=average)
    if async_op:
        return _work(job)
    job.wait()
    return tensor


def wire_bytes_per_rank(count, ranks, *, dtype=torch.float32, **opts):
    """Bytes one rank sends in all_reduce of `count` elements of `dtype` with these options."""
    return _wire_bytes_per_rank(count, _DTYPES[dtype], ranks, **opts)


class HookState:
    """State of `allreduce_hook` for one DDP model: the group, options, per-bucket residuals
    (error feedback), the step count (a new stochastic-rounding seed per step) and bytes sent."""

    def __init__(self, group=None, *, seed=0, error_feedback=False, **opts):
        canonical_options(**opts)
        self.group = group
        self.options = opts
        self.seed = int(seed)
        self.error_feedback = bool(error_feedback)
        self.residuals = {}
        self.step = 0
        self.bytes_sent = 0


def allreduce_hook(state, bucket):
    """DDP communication hook: averages the bucket's gradients with equarx (asynchronously:
    DDP goes on with the backward pass while the worker thread reduces the bucket).

    ``model.register_comm_hook(HookState(...), allreduce_hook)``.
    """
    t = bucket.buffer()
    res = None
    if state.error_feedback:
        key = bucket.index()
        res = state.residuals.get(key)
        if res is None or res.size != t.numel():
            res = state.residuals[key] = np.zeros(t.numel(), np.float32)
    seed = (state.seed * 1000003 + state.step * 1009 + bucket.index()) % (1 << 63)
    work = all_reduce(t, state.group, seed=seed, residual=res, average=True, async_op=True, **state.options)
    n = _communicator(state.group).comm.size
    state.bytes_sent += int(wire_bytes_per_rank(t.numel(), n, dtype=t.dtype, **state.options))
    if bucket.is_last():
        state.step += 1
    return work.get_future().then(lambda f: f.value()[0])


__all__ = ["BACKEND", "ProcessGroupEquarx", "all_reduce", "allreduce_hook", "HookState", "options",
           "wire_bytes_per_rank"]
