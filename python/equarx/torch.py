"""equarx.torch — a torch.distributed backend named "equarx", and a DDP communication hook.

    import torch.distributed as dist, equarx.torch as et     # the import registers "equarx"
    dist.init_process_group("equarx")                        # torchrun / env://, CPU tensors
    dist.all_reduce(t)                                       # float SUM/AVG: equarx's C++ AllReduce
    et.options(codec="int8", algorithm="two_shot")           # this group's AllReduce options
    et.all_reduce(t, codec="int4", residual=res)             # per-call options, error feedback
    ddp.register_comm_hook(et.HookState(codec="int8", error_feedback=True), et.allreduce_hook)

The backend sets up an equarx communicator through the process group's own Store (the
addresses of equarx's authenticated connections, no MPI: equarx.bootstrap) and a gloo backend
over the same store.

What goes where. ``all_reduce`` of one contiguous CPU float32, bfloat16 or float16 tensor
with ReduceOp SUM, AVG (the sum divided by the group's size) or PREMUL_SUM (the tensor
multiplied by the op's factor in its dtype, then summed) runs equarx's C++ AllReduce on one
worker thread per group, in call order: ``async_op=True`` returns at once and the work object
completes when the call has. Every other ``all_reduce`` (integer, bool and float64 tensors;
MAX, MIN, PRODUCT, BAND, BOR, BXOR) and every other collective (broadcast, barrier,
all_gather, reduce_scatter, send/recv, ...) goes to gloo, exact as gloo computes it, so DDP and
the rest of torch.distributed work unchanged.

Devices (PyTorch 2.x). The backend is registered for the CPU only and torch builds one backend
per device named: "equarx" is a CPU group; "cpu:equarx,cuda:nccl" keeps NCCL for CUDA
tensors; "cpu:gloo,cuda:equarx" leaves CPU tensors to gloo, warns at init that equarx has no
CUDA path, and every collective on a CUDA tensor raises UnsupportedError. (PyTorch 1.13 has
no per-device backends: there "equarx" is the whole group and a CUDA tensor raises.)

Options: the library's AllReduce options, named as in ``equarx.options()`` (algorithm, phases,
codec, block, scale, rotation, rounding, seed, microshards, quantize_min_bytes,
f32_partials, timeout_ms, validate, mode, inner, ranks_per_host, threads), plus ``dtype``
(run the AllReduce in float32, bfloat16 or float16: the tensor is converted with round to
nearest even and the result converted back into it). Set per group with ``options(...)`` or
per call with ``all_reduce(t, **options)``; absent ones take the library's defaults, so the
default call is the library's: ``auto`` picks the schedule by size, exact (unquantized, f32
sums) below the size where quantizing pays and whenever every rank is on one host.
``timeout_ms`` defaults to the timeout given to ``init_process_group``: a dead peer makes every
survivor's call raise within it, and the group then refuses further calls.

Errors are equarx.errors classes (RuntimeError subclasses, as torch.distributed raises):
shapes or options that differ between ranks raise MismatchError on every rank.

Lifetime: ``destroy_process_group`` finishes the group's queued calls and ends its
communicator, worker thread and gloo backend; a new group can then be made in the same
processes any number of times (each set-up's store keys are its own).

``all_reduce`` and the hook also work on a group of another backend (e.g. gloo) when it is the
default group: equarx then sets up its communicator through the default group's store at the
first call (every rank must make that first call).
"""

import contextlib
import datetime
import itertools
import sys
import threading
import warnings
import weakref

import numpy as np
import torch
import torch.distributed as dist

from . import bootstrap as _bootstrap
from ._torch_calls import _DESTROYED, _DTYPES, _RED, _Communicator, _goes_to_equarx, _numpy_view, _run_dtype
from .collectives import canonical_options, wire_bytes_per_rank as _wire_bytes_per_rank
from .errors import InvalidArgumentError, UnsupportedError

BACKEND = "equarx"
_C10D = torch._C._distributed_c10d


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


# ---- the group's parts: an equarx communicator for float sums, gloo for the rest ----

_INCARNATIONS = "equarx/incarnations"


def _incarnation(store, size):
    """This set-up's number among those made over `store` under its prefix (0, 1, ...), the
    same on every rank: each rank adds 1 to a counter, and a set-up's `size` adds all come
    before the next set-up's first (a rank starts the next one only after the set-up read
    every rank's card, written after its add). torch names its groups afresh after
    destroy_process_group and a store can outlive its groups (torchrun's), so keys without
    this number would meet the last set-up's."""
    return (int(store.add(_INCARNATIONS, 1)) - 1) // size


class _Parts:
    """What a ProcessGroupEquarx or an EquarxBackend holds: a gloo backend and an equarx
    communicator made over `store`, under keys of this set-up's own."""

    def __init__(self, store, rank, size, timeout):
        prefix = f"equarx/{_incarnation(store, size)}"
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore(prefix + "/gloo", store), rank, size, timeout)
        comm = _bootstrap.from_store(dist.PrefixStore(prefix, store), rank, size, prefix="setup",
                                     timeout=timeout.total_seconds())
        self.equarx = _Communicator(comm, timeout)

    def allreduce(self, tensors, opts, caller):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        op = getattr(opts, "reduceOp", opts) if opts is not None else _RED.SUM
        for t in tensors:  # the group serves the CPU (a backend string names another for CUDA)
            if isinstance(t, torch.Tensor) and t.device.type != "cpu":
                _numpy_view(t, "tensor")  # raises UnsupportedError
        if len(tensors) == 1 and _goes_to_equarx(tensors[0], op):
            return _work(self.equarx.submit(tensors[0], op, None, {}), caller)
        if len(tensors) != 1 and any(_goes_to_equarx(t, op) for t in tensors):
            raise UnsupportedError(f"the equarx backend reduces one tensor per call, got {len(tensors)}")
        g = self.gloo
        if g is None:
            raise InvalidArgumentError(_DESTROYED)
        return g.allreduce(tensors, opts) if opts is not None else g.allreduce(tensors)

    def forward(self, name, args, kwargs):
        g = self.gloo
        if g is None:
            raise InvalidArgumentError(_DESTROYED)
        return getattr(g, name)(*args, **kwargs)

    def close(self):
        self.equarx.close()
        g, self.gloo = self.gloo, None
        if g is not None and hasattr(g, "shutdown"):
            g.shutdown()


def _forwarding(cls, names):
    """Adds to `cls` a method per name that calls gloo's method of that name."""
    for name in names:
        def method(self, *args, _name=name, **kwargs):
            return self._parts.forward(_name, args, kwargs)
        method.__name__ = name
        setattr(cls, name, method)
    return cls


# The collectives forwarded to gloo by name. torch 2.x: every one a Backend dispatches (the
# names of torch's PyBackend trampoline); 1.13: those of its ProcessGroup.
_BACKEND_FORWARDED = ("broadcast", "allreduce_coalesced", "allreduce_sparse", "reduce", "allgather",
                      "all_gather_single", "_allgather_base", "allgather_coalesced", "all_gather_single_coalesced",
                      "gather", "scatter", "reduce_scatter", "reduce_scatter_single", "_reduce_scatter_base",
                      "reduce_scatter_single_coalesced", "all_to_all_single", "alltoall",
                      "send", "recv", "recv_anysource", "barrier")
_GROUP_FORWARDED = ("allreduce_coalesced", "broadcast", "barrier", "allgather", "_allgather_base",
                    "allgather_coalesced", "gather", "scatter", "reduce", "reduce_scatter", "_reduce_scatter_base",
                    "alltoall", "alltoall_base", "send", "recv", "recv_anysource", "monitored_barrier",
                    # torch 2.x's single-tensor forms (dist.all_gather_into_tensor, ...): forwarded here in
                    # Python too, not left to the group's dispatch to its CPU backend, which reaches gloo
                    # through torch's C++ trampoline with the GIL held; gloo's worker thread, freeing a
                    # finished call's tensors, then waits for the GIL while the caller waits for gloo's
                    # queue (a deadlock, seen under transformers' tensor parallelism on emulated hosts).
                    "all_gather_single", "all_gather_single_coalesced", "all_to_all_single", "gather_single",
                    "reduce_scatter_single", "reduce_scatter_single_coalesced")


def _backend_class_works():
    """Whether this torch lets a Python subclass of its C++ Backend serve a device (2.x with
    the PyBackend trampoline: a C++ call reaches the Python override)."""
    base = getattr(_C10D, "Backend", None)
    if base is None:
        return False
    try:
        probe = type("_Probe", (base,), {"getBackendName": lambda self: "probe"})
        return probe(0, 1).name() == "probe"
    except Exception:  # noqa: BLE001 - any failure: no usable trampoline
        return False


class _OverParts:
    """What ProcessGroupEquarx and EquarxBackend share: torch's calls on their _Parts."""

    def getBackendName(self):  # noqa: N802 - torch's name
        return BACKEND

    @property
    def equarx_communicator(self):
        """The equarx.collectives.Communicator under this group (None once destroyed)."""
        return self._parts.equarx.comm

    def allreduce(self, tensors, opts=None):
        return self._parts.allreduce(tensors, opts, sys._getframe(1))

    def shutdown(self):
        """destroy_process_group (torch 2.x): the queued calls finish, then the communicator,
        its thread and the gloo backend go."""
        self._parts.close()


class ProcessGroupEquarx(_OverParts, _C10D.ProcessGroup):
    """The group of the backend string "equarx" (the CPU): float sums through equarx,
    everything else through gloo."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._parts = _Parts(store, rank, size, timeout)
        if hasattr(self, "_register_backend"):
            # torch 2.x: a process group dispatches the collectives this class does not define
            # (all_gather_single, reduce_scatter_single, ...) to its device's backend.
            gloo = _C10D.ProcessGroup.BackendType.GLOO
            self._register_backend(torch.device("cpu"), gloo, self._parts.gloo)
            self._set_default_backend(gloo)
        # torch 2.x's destroy_process_group calls shutdown(); 1.13's drops the group without a
        # call to it: then the communicator and its thread go when the group object does.
        weakref.finalize(self, self._parts.close)


_forwarding(ProcessGroupEquarx, _GROUP_FORWARDED)

if _backend_class_works():

    class EquarxBackend(_OverParts, _C10D.Backend):
        """The CPU backend of a group whose backend string names several backends
        ("cpu:equarx,cuda:nccl"): float sums through equarx, the rest through gloo."""

        def __init__(self, store, rank, size, timeout):
            super().__init__(rank, size)
            self._parts = _Parts(store, rank, size, timeout)

        def monitored_barrier(self, opts, wait_all_ranks=False):
            g = self._parts.gloo
            if g is None:
                raise InvalidArgumentError(_DESTROYED)
            g.monitored_barrier(opts.timeout, wait_all_ranks)

    _forwarding(EquarxBackend, _BACKEND_FORWARDED)

    class _NoDeviceBackend(_C10D.Backend):
        """What "DEVICE:equarx" gives for a device other than the CPU: every collective raises."""

        def __init__(self, rank, size, device):
            super().__init__(rank, size)
            self._device = device

        def getBackendName(self):  # noqa: N802 - torch's name
            return BACKEND

        def _refuse(self, *args, **kwargs):
            raise UnsupportedError(f"the equarx backend has no {self._device.upper()} path yet: {self._device} "
                                   f"tensors cannot be reduced by it (name another backend for {self._device}, "
                                   f"e.g. 'cpu:equarx,{self._device}:nccl')")

    for _name in ("allreduce",) + _BACKEND_FORWARDED:
        setattr(_NoDeviceBackend, _name, _NoDeviceBackend._refuse)
else:
    EquarxBackend = _NoDeviceBackend = None


def _being_created():
    """(device, {device: backend}) of the backend torch 2.x is building: its
    _new_process_group_helper calls the creator from its loop over the backend string's
    devices, with the device in its local `device` and the string's map in `backend_config`.
    (None, None) where that cannot be read."""
    f = sys._getframe(2)
    if f.f_code.co_name != "_new_process_group_helper":
        return None, None
    dev, config = f.f_locals.get("device"), f.f_locals.get("backend_config")
    try:
        devices = {str(d): str(b) for d, b in config.get_device_backend_map().items()}
    except AttributeError:
        devices = None
    return (str(dev) if isinstance(dev, (str, torch.device)) else None), devices


def _create(*args):
    """register_backend's creator: (store, rank, size, timeout) in torch 1.13; torch 2.x may
    pass a trailing options object.

    The string "equarx" (only the CPU, only equarx) gets a whole group, ProcessGroupEquarx:
    torch takes a ProcessGroup a creator returns as the group itself. A string that names
    other backends too gets a backend per device, as torch builds them, so the other devices
    keep theirs: EquarxBackend for the CPU, and for another device one that refuses every call."""
    store, rank, size, timeout = args[:4]
    if EquarxBackend is None:  # torch 1.13: no backends per device
        return ProcessGroupEquarx(store, rank, size, timeout)
    device, devices = _being_created()
    if devices == {"cpu": BACKEND}:
        return ProcessGroupEquarx(store, rank, size, timeout)
    if device is not None and torch.device(device).type != "cpu":
        kind = torch.device(device).type
        warnings.warn(f"the equarx backend has no {kind.upper()} path yet: this group's {kind} collectives "
                      f"will raise UnsupportedError (name another backend for {kind}, e.g. 'cpu:equarx,{kind}:nccl')",
                      stacklevel=3)
        return _NoDeviceBackend(rank, size, kind)
    return EquarxBackend(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}) or hasattr(dist.Backend, BACKEND.upper()):
        return
    try:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    except TypeError:  # torch < 2.0: no devices
        dist.Backend.register_backend(BACKEND, _create)


_register()

# Communicators of groups of other backends (the default group), made through the default
# store at their first call: id(group) -> (weak reference to the group, _Communicator).
_side = {}
_side_lock = threading.Lock()
_side_count = itertools.count()


def _default_group():
    try:
        return dist.distributed_c10d._get_default_group()
    except (RuntimeError, ValueError, AttributeError):
        return None


def _own_parts(pg):
    """The _Parts of an "equarx" group, or None for a group of another backend."""
    if isinstance(pg, ProcessGroupEquarx):
        return pg._parts
    if EquarxBackend is None:
        return None
    try:
        b = pg._get_backend(torch.device("cpu"))
    except (RuntimeError, ValueError):
        return None
    return b._parts if isinstance(b, EquarxBackend) else None


def _communicator(group):
    """The _Communicator that serves `group` (None: the default group)."""
    default = _default_group()
    pg = group if group is not None else default
    if pg is None:
        raise InvalidArgumentError("no process group: call torch.distributed.init_process_group first")
    parts = _own_parts(pg)
    if parts is not None:
        return parts.equarx
    with _side_lock:
        c = _side.get(id(pg))
        if c is not None and c[0]() is pg:
            return c[1]
    if pg is not default:
        raise UnsupportedError("equarx.torch.all_reduce runs on an 'equarx' process group, or on the default "
                               "group of another backend; for other groups create them with backend='equarx'")
    store = dist.distributed_c10d._get_default_store()
    timeout = getattr(dist.distributed_c10d, "default_pg_timeout", datetime.timedelta(minutes=30))
    comm = _bootstrap.from_store(store, pg.rank(), pg.size(), prefix=f"equarx-side/{next(_side_count)}",
                                 timeout=timeout.total_seconds())
    c = _Communicator(comm, None)
    with _side_lock:
        _side[id(pg)] = (weakref.ref(pg), c)
    # The communicator and its thread go with the group (destroy_process_group drops it).
    weakref.finalize(pg, _drop_side, id(pg), c)
    return c


def _drop_side(key, c):
    with _side_lock:
        if key in _side and _side[key][1] is c:
            del _side[key]
    c.close()


def _check_options(opts):
    """Validates options as all_reduce takes them: the library's, plus dtype."""
    opts = dict(opts)
    _run_dtype(opts.pop("dtype", None))
    canonical_options(**opts)


def options(group=None, **opts):
    """Sets the AllReduce options of `group` (None: the default group) for every later
    ``dist.all_reduce`` on it; returns a context manager that restores the previous ones on
    exit. Options are validated here (InvalidArgumentError names the valid choices)."""
    _check_options(opts)
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
    """Sums the float32, bfloat16 or float16 `tensor` in place over `group` with equarx (like
    dist.all_reduce), with per-call options (the library's, and dtype=). op: ReduceOp SUM
    (default), AVG or PREMUL_SUM; average=True is AVG. residual: this rank's float32
    error-feedback array (tensor or numpy, the tensor's size, zeros at first; updated in
    place). Returns a work object if async_op, else the tensor."""
    job = _communicator(group).submit(tensor, _RED.SUM if op is None else op, residual, opts, average=average)
    if async_op:
        return _work(job)
    job.wait()
    return tensor


def wire_bytes_per_rank(count, ranks, *, dtype=torch.float32, **opts):
    """Bytes one rank sends in all_reduce of `count` elements of `dtype` with these options, by
    the library's plan for ranks on separate hosts unless ranks_per_host says otherwise."""
    return _wire_bytes_per_rank(count, _DTYPES[dtype], ranks, **opts)


class HookState:
    """State of `allreduce_hook` for one DDP model: the group, options, per-bucket residuals
    (error feedback), the step count (a new stochastic-rounding seed per step) and the bytes
    this rank sent (counted by the communicator)."""

    def __init__(self, group=None, *, seed=0, error_feedback=False, **opts):
        _check_options(opts)
        self.group = group
        self.options = opts
        self.seed = int(seed)
        self.error_feedback = bool(error_feedback)
        self.residuals = {}
        self.step = 0
        self.bytes_sent = 0

    def _count(self, n):
        self.bytes_sent += n


def _hook_options(state, comm):
    """The options of the hook's calls: the state's. With error feedback and auto left to pick
    (no algorithm pinned, no ranks_per_host), on ranks spread over several hosts with several
    ranks each: ranks_per_host 1, i.e. auto's choice among the flat schedules, since the
    hierarchical one it could pick there takes no residual."""
    o = dict(state.options)
    if (state.error_feedback and o.get("algorithm", "auto") == "auto" and not o.get("ranks_per_host")
            and comm is not None and 1 < comm.ranks_per_host < comm.size):
        o["ranks_per_host"] = 1
    return o


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
    c = _communicator(state.group)
    opts = _hook_options(state, c.comm)
    opts["seed"] = seed
    job = c.submit(t, _RED.SUM, res, opts, average=True, on_bytes=state._count)
    if bucket.is_last():
        state.step += 1
    return _work(job).get_future().then(lambda f: f.value()[0])


__all__ = ["BACKEND", "EquarxBackend", "ProcessGroupEquarx", "all_reduce", "allreduce_hook", "HookState",
           "options", "wire_bytes_per_rank"]
