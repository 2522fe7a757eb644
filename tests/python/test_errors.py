"""Bad arguments raise clear equarx.errors exceptions carrying the library's message."""

import numpy as np
import pytest

import equarx
from equarx import errors


def xs(n=4, size=100, dtype=np.float32):
    return [np.ones(size, dtype) for _ in range(n)]


def test_wrong_dtype():
    with pytest.raises(errors.DTypeError, match="float64"):
        equarx.allreduce(xs(dtype=np.float64))
    with pytest.raises(TypeError):  # DTypeError is also a TypeError
        equarx.encode(np.ones(4, np.int32))


def test_non_contiguous():
    a = np.ones((10, 10), np.float32)[:, ::2]
    with pytest.raises(errors.LayoutError, match="C-contiguous"):
        equarx.allreduce([a, a])
    with pytest.raises(errors.LayoutError, match="C-contiguous"):
        equarx.encode(a)


def test_not_arrays():
    with pytest.raises(errors.LayoutError):
        equarx.allreduce([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(errors.LayoutError):
        equarx.allreduce(np.ones((2, 4), np.float32))
    with pytest.raises(errors.InvalidArgumentError):
        equarx.allreduce([])


def test_mismatched_shapes_and_dtypes():
    with pytest.raises(errors.MismatchError, match="shape"):
        equarx.allreduce([np.ones(100, np.float32), np.ones(101, np.float32)])
    with pytest.raises(errors.MismatchError, match="shape"):
        equarx.allreduce([np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)])
    with pytest.raises(errors.MismatchError, match="dtype"):
        equarx.allreduce([np.ones(4, np.float32), np.ones(4, np.float16)])


def test_library_messages():
    with pytest.raises(errors.InvalidArgumentError, match=r"block 7 is out of range \[16, 4096\]"):
        equarx.allreduce(xs(), block=7)
    with pytest.raises(ValueError, match="unknown algorithm 'nope'.*ring"):
        equarx.allreduce(xs(), algorithm="nope")
    with pytest.raises(ValueError, match="unknown phases"):
        equarx.allreduce(xs(), phases="xx")
    with pytest.raises(ValueError, match="unknown codec"):
        equarx.allreduce(xs(), codec="int3")
    with pytest.raises(ValueError, match="unknown option 'blok'"):
        equarx.allreduce(xs(), blok=64)
    with pytest.raises(ValueError, match="microshards"):
        equarx.allreduce(xs(), microshards=1000)
    with pytest.raises(ValueError, match="negative"):
        equarx.allreduce(xs(), block=-1)


def test_codec_errors():
    with pytest.raises(errors.InvalidArgumentError, match="unknown wire format"):
        equarx.encode(np.ones(4, np.float32), "int9")
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        equarx.encode(np.ones(4, np.float32), "int8", block=8)
    wire = equarx.encode(np.ones(100, np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="bytes"):
        equarx.decode(wire, 99)
    with pytest.raises(errors.LayoutError):
        equarx.decode(wire.astype(np.int16), 100)


def test_error_hierarchy():
    assert issubclass(errors.InvalidArgumentError, errors.EquarxError)
    assert issubclass(errors.EquarxError, RuntimeError)
    assert issubclass(errors.CollectiveTimeoutError, TimeoutError)


def test_group_size_mismatch():
    g = equarx.InProcessGroup(3)
    with pytest.raises(errors.InvalidArgumentError, match="3 ranks"):
        g.allreduce(xs(2))


def _time_out(call, big):
    """Calls call(big, timeout_ms=1) until it raises CollectiveTimeoutError: 1 ms cannot move
    16 MiB through 3 ranks, but a deadline bounds waits, and a call none of whose waits had to
    block (each rank's data already there when it looked, as a loaded machine can schedule the
    threads) finishes without looking at the clock. Returns the number of calls made."""
    for n in range(1, 11):
        try:
            call(big, timeout_ms=1)
        except errors.CollectiveTimeoutError:
            return n
    pytest.fail("10 calls of 16 MiB with a 1 ms deadline all completed")


def test_a_group_that_timed_out_refuses_later_calls():
    big = [np.ones(1 << 22, np.float32) for _ in range(3)]
    g = equarx.InProcessGroup(3)
    n = _time_out(g.allreduce, big)
    with pytest.raises(errors.CollectiveTimeoutError, match=f"this communicator is unusable: call {n} failed"):
        g.allreduce(xs(3), timeout_ms=2000)
    # The module-level allreduce drops such a group from its cache: the next call works.
    _time_out(equarx.allreduce, big)
    out = equarx.allreduce(xs(3))
    # int8 with the default rotation: not exact on constant data, but identical on every rank and
    # within the documented bound of that call (docs/algorithms.md, "Error bound").
    assert all(np.array_equal(o, out[0]) for o in out)
    assert np.all(np.abs(out[0] - 3.0) <= equarx.error_bound(xs(3)))
    exact = equarx.allreduce(xs(3), rotation="none")
    assert all(np.array_equal(o, np.full(100, 3, np.float32)) for o in exact)
