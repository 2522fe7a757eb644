"""equarx.torch — quantized AllReduce on PyTorch process groups, and a DDP communication hook.

    import torch.distributed as dist, equarx.torch as et
    dist.init_process_group("gloo")                       # torchrun, CPU
    et.all_reduce(t, codec="int8")                        # in place, like dist.all_reduce
    ddp.register_comm_hook(et.HookState(codec="int8", error_feedback=True), et.allreduce_hook)

The compression is equarx's (the library's codecs on the tensor's memory, the scalar-exact
kernels of the C++ library); the bytes move through the process group's own collectives, so
it works wherever the group works (gloo on CPU, under torchrun or mp.spawn). The schedule is
equarx's two-shot AllReduce:

  reduce-scatter  every rank encodes its contribution to each shard c != r once and sends it to
                  owner c in one ``all_to_all_single`` of uint8 bytes; the owner decodes the
                  N-1 contributions and sums them with its own, in f32, in rank order 0..N-1;
  all-gather      the owner encodes its sum once, keeps decode(own bytes) itself, and one
                  ``all_gather`` hands the same bytes to every rank, which decode them.

Shards, block grid, stochastic-rounding streams and summation order are those of the C++
``two_shot`` algorithm, so the result is bitwise identical to ``equarx.allreduce(...,
algorithm="two_shot")`` on the same inputs and options (tested), and identical on every rank.
Exactly two quantizations per value whatever N; wire bytes per rank 2(N-1)/N of the tensor in
the codec (plus all-gather padding to the largest shard, at most one block).

Options: codec (int8, int4, fp8_e4m3, fp8_e5m2), block, phases (rs, ag, rs+ag: the
unquantized phase moves the tensor's dtype), rounding (nearest, stochastic) with seed, and
``residual=`` for error feedback (a float32 numpy array or tensor of the tensor's size, zeros
at first; the contribution is tensor + residual and the residual keeps what this rank's
quantizations lost, as in the C++ AllReduceExtras). Tensors: CPU, contiguous, float32,
bfloat16 or float16. Non-finite values follow IEEE in the sums but NaN payloads are not
canonicalised (the C++ library's are).
"""

import numpy as np
import torch
import torch.distributed as dist

from . import codec as _codec
from ._arrays import BFLOAT16
from .errors import DTypeError, InvalidArgumentError, LayoutError, MismatchError, UnsupportedError

_TORCH_TO_NP = {torch.float32: np.dtype(np.float32), torch.float16: np.dtype(np.float16)}
_RAW = {"float32": "raw_f32", "float16": "raw_f16", "bfloat16": "raw_bf16"}
_CODECS = ("int8", "int4", "fp8_e4m3", "fp8_e5m2")
_STREAM_AG = 1 << 60  # the C++ HopWire stream of the owner's all-gather encode (phase 1)


def _numpy_view(t, what):
    """A flat numpy view of the tensor's memory (no copy), checked."""
    if not isinstance(t, torch.Tensor):
        raise LayoutError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise UnsupportedError(f"{what} is on {t.device}; equarx.torch works on CPU tensors "
                               "(gloo); use torch.distributed.all_reduce on GPUs")
    if not t.is_contiguous():
        raise LayoutError(f"{what} is not contiguous (pass {what}.contiguous())")
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bfloat16:
        if BFLOAT16 is None:
            raise DTypeError("bfloat16 tensors need the ml_dtypes package")
        return flat.view(torch.int16).numpy().view(BFLOAT16)
    if t.dtype not in _TORCH_TO_NP:
        raise DTypeError(f"{what} has dtype {t.dtype}; equarx takes float32, bfloat16 or float16")
    return flat.numpy()


def _shard(count, block, parts, i):
    """Part i of `parts` of [0, count) in whole blocks (the library's SplitBlocks)."""
    nb = (count + block - 1) // block
    b0, b1 = i * nb // parts, (i + 1) * nb // parts
    begin = min(b0 * block, count)
    return begin, max(min(b1 * block, count) - begin, 0)


def _add_loss(residual, exact, got):
    """residual += exact - f32(got) where finite (error feedback, as codec::AccumulateLoss)."""
    d = exact - got.astype(np.float32)
    residual += np.where(np.isfinite(d), d, np.float32(0))


class _Wire:
    """One phase's wire: a codec with its block and rounding, or the raw dtype."""

    def __init__(self, fmt, block, rounding, seed):
        self.fmt, self.block, self.rounding, self.seed = fmt, block, rounding, seed

    def encode(self, x, stream, offset):
        return _codec.encode(x, self.fmt, self.block, rounding=self.rounding, seed=self.seed,
                             stream=stream, offset=offset)

    def decode(self, wire, n, dtype=np.float32):
        return _codec.decode(wire, (n,), self.fmt, self.block, dtype=dtype)

    def nbytes(self, n):
        return _codec.wire_bytes(n, self.fmt, self.block)


_DESCRIPTOR = ("count", "dtype", "codec", "block", "phases", "rounding", "seed (low bits)",
               "seed (high bits)")


def _check_agreement(values, group, n):
    """Every rank's call descriptor against rank 0's, with one small all_gather: a mismatch
    raises MismatchError on every rank (instead of a hang or garbage inside all_to_all)."""
    mine = torch.tensor(values, dtype=torch.int64)
    every = [torch.empty_like(mine) for _ in range(n)]
    dist.all_gather(every, mine, group=group)
    ref = every[0].tolist()
    for q in range(1, n):
        got = every[q].tolist()
        for name, a, b in zip(_DESCRIPTOR, got, ref):
            if a != b:
                raise MismatchError(f"ranks disagree: rank {q} passes {name} {a} (rank 0 has {b})")


def all_reduce(tensor, group=None, *, codec="int8", block=64, phases="rs+ag", rounding="nearest",
               seed=0, residual=None, average=False, validate=True, rotation="none"):
    """Sums `tensor` over the ranks of `group` in place (returns it) with equarx's quantized
    two-shot AllReduce; every rank calls it with the same shape, dtype and options.

    residual: error feedback (float32 numpy array or tensor of tensor.numel() elements, updated
    in place). average: divide the result by the group size afterwards (what DDP wants).
    validate: first compare every rank's count, dtype and options (one all_gather of 8
    integers); a difference raises MismatchError on every rank. Without it, ranks that
    disagree fail inside the process group's collectives or return garbage.
    rotation: only "none" here. This module runs two_shot in Python over gloo's collectives
    and has no rotation (the C++ library's default for int8/int4 is "hadamard"; equarx.allreduce
    and equarx.jax.psum have it). Pass rotation="none" to the C++ calls you compare with.
    """
    x = _numpy_view(tensor, "tensor")
    if rotation != "none":
        raise InvalidArgumentError(
            f"rotation {rotation!r} is not available in equarx.torch (two_shot in Python over gloo, "
            "no rotation); only 'none'. equarx.allreduce and equarx.jax.psum rotate")
    if codec not in _CODECS:
        raise InvalidArgumentError(f"unknown codec {codec!r} (valid: {', '.join(_CODECS)})")
    if phases not in ("rs", "ag", "rs+ag"):
        raise InvalidArgumentError(f"unknown phases {phases!r} (valid: rs, ag, rs+ag)")
    if rounding not in ("nearest", "stochastic"):
        raise InvalidArgumentError(f"unknown rounding {rounding!r} (valid: nearest, stochastic)")
    if rounding == "stochastic" and codec not in ("int8", "int4"):
        raise InvalidArgumentError(f"stochastic rounding needs int8 or int4, not {codec}")
    if not isinstance(block, (int, np.integer)) or not 16 <= block <= 4096:
        raise InvalidArgumentError(f"block size {block} is out of range [16, 4096]")
    if not 0 <= int(seed) < 1 << 64:
        raise InvalidArgumentError("seed must be in [0, 2^64)")
    res = None
    if residual is not None:
        res = _numpy_view(residual, "residual") if isinstance(residual, torch.Tensor) else residual
        if not isinstance(res, np.ndarray) or res.dtype != np.float32 or not res.flags.c_contiguous:
            raise InvalidArgumentError("residual must be a contiguous float32 array or tensor")
        if res.size != x.size:
            raise InvalidArgumentError(f"residual has {res.size} elements but the tensor has {x.size}")
        res = res.reshape(-1)
    n = dist.get_world_size(group)
    r = dist.get_rank(group)
    count = x.size
    if validate and n > 1:
        seed = int(seed)
        _check_agreement([count, list(_RAW).index(x.dtype.name), _CODECS.index(codec), int(block),
                          ("rs", "ag", "rs+ag").index(phases), int(rounding == "stochastic"),
                          seed & 0xFFFFFFFF, seed >> 32], group, n)
    if n == 1 or count == 0:
        if res is not None and count:
            s = x.astype(np.float32) + res
            x[...] = s.astype(x.dtype)
            res[...] = 0
            _add_loss(res, s, x)
        return tensor

    raw = _Wire(_RAW[x.dtype.name], block, "nearest", 0)
    quant = _Wire(codec, block, rounding, int(seed))
    rs = raw if phases == "ag" else quant
    ag = raw if phases == "rs" else quant
    shards = [_shard(count, block, n, c) for c in range(n)]

    # The contribution: the tensor, or with error feedback tensor + residual in f32.
    local = x
    if res is not None:
        local = x.astype(np.float32) + res
        res[...] = 0

    # Reduce-scatter: each shard c != r encoded once (stream = this rank, as the C++ HopWire
    # of phase 0) and sent to its owner.
    parts, in_splits = [], []
    for c in range(n):
        b, k = shards[c]
        if c == r or k == 0:
            in_splits.append(0)
            continue
        w = rs.encode(local[b:b + k], stream=r, offset=b)
        if res is not None:
            _add_loss(res[b:b + k], local[b:b + k], rs.decode(w, k))
        parts.append(w)
        in_splits.append(w.size)
    send = torch.from_numpy(np.concatenate(parts) if parts else np.zeros(0, np.uint8))
    ob, ok = shards[r]
    out_splits = [0 if q == r else rs.nbytes(ok) for q in range(n)]
    recv = torch.empty(sum(out_splits), dtype=torch.uint8)
    dist.all_to_all_single(recv, send, out_splits, in_splits, group=group)
    rbuf = recv.numpy()

    # The owner's sum in rank order 0..N-1, in f32 (the C++ two_shot order).
    acc = None
    pos = 0
    for q in range(n):
        if q == r:
            v = local[ob:ob + ok].astype(np.float32)
        else:
            v = rs.decode(rbuf[pos:pos + out_splits[q]], ok)
            pos += out_splits[q]
        acc = v if acc is None else acc + v

    # All-gather: the owner's bytes, encoded once, padded to the largest shard's size.
    width = max(ag.nbytes(k) for _, k in shards)
    own = np.zeros(width, np.uint8)
    if ok:
        w = ag.encode(acc, stream=_STREAM_AG | r, offset=ob)
        own[:w.size] = w
    gathered = [torch.empty(width, dtype=torch.uint8) for _ in range(n)]
    dist.all_gather(gathered, torch.from_numpy(own), group=group)
    for q in range(n):
        b, k = shards[q]
        if k:
            x[b:b + k] = ag.decode(gathered[q].numpy()[:ag.nbytes(k)], k, dtype=x.dtype)
    if res is not None and ok:
        _add_loss(res[ob:ob + ok], acc, x[ob:ob + ok])
    if average:
        tensor.div_(n)
    return tensor


def wire_bytes_per_rank(count, ranks, *, codec="int8", block=64, phases="rs+ag", dtype=torch.float32):
    """Bytes one rank sends in all_reduce (reduce-scatter + padded all-gather)."""
    name = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
    raw = _RAW[name]
    rs_fmt = raw if phases == "ag" else codec
    ag_fmt = raw if phases == "rs" else codec
    shards = [_shard(count, block, ranks, c)[1] for c in range(ranks)]
    width = max(_codec.wire_bytes(k, ag_fmt, block) for k in shards)
    mean_rs = sum(_codec.wire_bytes(k, rs_fmt, block) for k in shards) * (ranks - 1) / ranks
    return mean_rs + (ranks - 1) * width


class HookState:
    """State of `allreduce_hook` for one DDP model: options, per-bucket residuals (error
    feedback), the step count (a new stochastic-rounding seed per step) and bytes sent."""

    def __init__(self, group=None, *, codec="int8", block=64, phases="rs+ag", rounding="nearest",
                 seed=0, error_feedback=False):
        self.group = group
        self.options = dict(codec=codec, block=block, phases=phases, rounding=rounding)
        self.seed = int(seed)
        self.error_feedback = bool(error_feedback)
        self.residuals = {}
        self.step = 0
        self.bytes_sent = 0


def allreduce_hook(state, bucket):
    """DDP communication hook: averages the bucket's gradients with equarx.torch.all_reduce.

    ``model.register_comm_hook(HookState(...), allreduce_hook)``. Runs synchronously and returns
    a completed future (gloo on CPU has no stream to overlap on).
    """
    t = bucket.buffer()
    res = None
    if state.error_feedback:
        key = bucket.index()
        res = state.residuals.get(key)
        if res is None or res.size != t.numel():
            res = state.residuals[key] = np.zeros(t.numel(), np.float32)
    seed = (state.seed * 1000003 + state.step * 1009 + bucket.index()) % (1 << 64)
    all_reduce(t, state.group, seed=seed, residual=res, average=True, **state.options)
    n = dist.get_world_size(state.group)
    state.bytes_sent += int(wire_bytes_per_rank(t.numel(), n, dtype=t.dtype, **{
        k: state.options[k] for k in ("codec", "block", "phases")}))
    if bucket.is_last():
        state.step += 1
    fut = torch.futures.Future()
    fut.set_result(t)
    return fut


__all__ = ["all_reduce", "allreduce_hook", "HookState", "wire_bytes_per_rank"]
