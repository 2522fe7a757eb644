"""In-process AllReduce of numpy arrays: agreement, exactness, errors bounds, and bitwise
equality with the C++ tool equarx-reduce on the same inputs and options."""

import itertools
import subprocess

import numpy as np
import pytest

import equarx

ALGOS = list(equarx.algorithms())
PHASES = list(equarx.phases())
CODECS = list(equarx.codecs())


def inputs(n, count, rng, dtype=np.float32):
    return [rng.standard_normal(count).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_ring_exact_on_integers(n, rng):
    xs = [rng.integers(-50, 50, 1001).astype(np.float32) for _ in range(n)]
    ys = equarx.allreduce(xs, algorithm="ring")
    expect = np.sum(np.stack(xs).astype(np.float64), axis=0)
    for y in ys:
        assert np.array_equal(y, expect.astype(np.float32))


@pytest.mark.parametrize("algo", [a for a in ALGOS if a not in ("auto",)])
@pytest.mark.parametrize("phases", PHASES)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_ranks_agree_and_error_small(algo, phases, n, rng):
    xs = inputs(n, 3000, rng)
    ys = equarx.allreduce(xs, algorithm=algo, phases=phases, block=64)
    for y in ys[1:]:
        assert np.array_equal(y.view(np.uint32), ys[0].view(np.uint32))
    exact = np.sum(np.stack(xs).astype(np.float64), axis=0)
    # Every element within the documented bound of this configuration (docs/algorithms.md,
    # "Error bound"; equarx.error_bound is the C++ oracle's tools::ErrorBound).
    bound = equarx.error_bound(xs, algorithm=algo, phases=phases, block=64)
    err = np.abs(ys[0].astype(np.float64) - exact)
    assert np.all(err <= bound), int(np.argmax(err - bound))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes(dtype, rng):
    xs = [equarx.convert(x, dtype) for x in inputs(4, 777, rng)]
    ys = equarx.allreduce(xs, algorithm="semi")
    assert ys[0].dtype == xs[0].dtype and ys[0].shape == (777,)
    assert all(np.array_equal(y.view(np.uint16), ys[0].view(np.uint16)) for y in ys)


def test_inplace_and_shapes(rng):
    xs = [rng.standard_normal((3, 5, 7)).astype(np.float32) for _ in range(3)]
    orig = [x.copy() for x in xs]
    ys = equarx.allreduce(xs, inplace=True, algorithm="ring")
    assert all(y is x for y, x in zip(ys, xs))
    exact = np.sum(np.stack(orig).astype(np.float64), axis=0)
    # The ring's f32 bound (docs/algorithms.md, "Error bound": N-1 roundings of the partials).
    assert np.all(np.abs(ys[0] - exact) <= equarx.error_bound(orig, algorithm="ring"))


def test_group_reuse_and_stats(rng):
    g = equarx.InProcessGroup(4)
    for _ in range(3):
        g.allreduce(inputs(4, 4096, rng), algorithm="full_bidir")
    assert len(g.last_bytes_sent) == 4 and all(b > 0 for b in g.last_bytes_sent)
    expect = equarx.wire_bytes_per_rank(4096, "float32", 4, algorithm="full_bidir")
    assert abs(np.mean(g.last_bytes_sent) - expect) <= 0.05 * expect + 1024


def test_dtype_option_converts(rng):
    xs = inputs(2, 100, rng)
    ys = equarx.allreduce(xs, dtype="bfloat16", algorithm="ring")
    assert ys[0].dtype.name == "bfloat16"


def test_zero_elements():
    ys = equarx.allreduce([np.zeros(0, np.float32)] * 3)
    assert all(y.size == 0 for y in ys)


def _run_tool(tool, tmp_path, xs, args):
    paths = []
    for r, x in enumerate(xs):
        p = tmp_path / f"in{r}.npy"
        np.save(p, x)
        paths.append(str(p))
    out = tmp_path / "out.npy"
    subprocess.run([tool, *args, "--out", str(out), *paths], check=True, capture_output=True)
    return np.load(out)


CASES = [
    # (ranks, count, options); the tool's flags are derived from the options.
    (4, 10000, dict(algorithm="full_bidir", phases="rs+ag", codec="int8", block=64)),
    (3, 4099, dict(algorithm="semi", phases="rs", block=128, microshards=3)),
    (5, 777, dict(algorithm="two_shot", phases="ag", block=32)),
    (2, 1000, dict(algorithm="full", phases="rs+ag", block=4096)),
    (4, 5000, dict(algorithm="ring")),
    (3, 3000, dict(algorithm="naive_fp8")),
    (4, 3001, dict(algorithm="two_shot", codec="int4", rounding="stochastic", seed=12345)),
    (3, 2500, dict(algorithm="semi", codec="int8", rounding="stochastic", seed=7)),
] + [(3, 2000, dict(algorithm="full_bidir", codec=c)) for c in CODECS]


def _flags(opts):
    names = {"algorithm": "--algo", "phases": "--phases", "codec": "--codec", "block": "--block",
             "microshards": "--microshards", "rounding": "--rounding", "seed": "--seed"}
    return list(itertools.chain.from_iterable((names[k], str(v)) for k, v in opts.items()))


@pytest.mark.parametrize("ranks,count,opts", CASES)
@pytest.mark.parametrize("file_dtype,run_dtype", [("float32", None), ("float16", None),
                                                  ("float32", "bf16")])
def test_bitwise_equal_to_equarx_reduce(reduce_tool, tmp_path, rng, ranks, count, opts,
                                        file_dtype, run_dtype):
    xs = inputs(ranks, count, rng, np.dtype(file_dtype))
    args = _flags(opts) + (["--dtype", run_dtype] if run_dtype else [])
    tool = _run_tool(reduce_tool, tmp_path, xs, args)
    ys = equarx.allreduce(xs, dtype=run_dtype, **opts)
    mine = ys[0].astype(np.float32) if run_dtype == "bf16" else ys[0]  # the tool writes f32
    assert mine.dtype == tool.dtype and mine.shape == tool.shape
    assert np.array_equal(mine.view(np.uint8), tool.view(np.uint8))


def test_codecs_and_roundings_are_listed():
    assert {"int8", "int4", "fp8_e4m3", "fp8_e5m2"} <= set(CODECS)
    assert set(equarx.roundings()) == {"nearest", "stochastic"}


def test_stochastic_rounding_is_seeded(rng):
    xs = inputs(3, 5000, rng)
    a = equarx.allreduce(xs, algorithm="two_shot", codec="int4", rounding="stochastic", seed=1)[0]
    b = equarx.allreduce(xs, algorithm="two_shot", codec="int4", rounding="stochastic", seed=1)[0]
    c = equarx.allreduce(xs, algorithm="two_shot", codec="int4", rounding="stochastic", seed=2)[0]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(equarx.InvalidArgumentError, match=r"stochastic rounding needs an integer codec \(int8, int6, int5, int4\)"):
        equarx.allreduce(xs, codec="fp8_e5m2", rounding="stochastic")


def test_error_feedback_conserves_the_sum_and_telemetry(rng):
    g = equarx.InProcessGroup(3)
    xs = inputs(3, 4000, rng)
    res = [np.zeros(4000, np.float32) for _ in range(3)]
    ys = g.allreduce(xs, algorithm="full", codec="int4", residuals=res, stats=True)
    exact = np.sum(np.stack(xs).astype(np.float64), axis=0)
    back = ys[0].astype(np.float64) + np.sum(np.stack(res).astype(np.float64), axis=0)
    # Only f32 rounding is left: the conservation bound of docs/algorithms.md ("Error feedback,
    # telemetry, stochastic rounding"), rotated (int4's default, over 16 elements with its
    # default two-level scales): 64·2^-24·(m_i + M_b/8), m_i = sum over ranks of |x| (the old
    # residuals are 0), M_b the sum of m over i's rotation block.
    m = np.sum(np.abs(np.stack(xs).astype(np.float64)), axis=0)
    blocks = np.repeat(np.add.reduceat(m, np.arange(0, m.size, 16)), 16)[: m.size]
    assert np.all(np.abs(back - exact) <= 64 * 2.0**-24 * (m + blocks / 8))
    assert np.max(np.abs(ys[0] - exact)) > 0.05          # int4 itself loses far more
    assert len(g.last_stats) == 3
    for st in g.last_stats:
        assert st["encoded_values"] == 4000 and st["rms_err_est"] > 0 and 0 < st["rel_rms_err_est"] < 1
    # Without stats=True nothing is kept; bad residuals are clear errors.
    g.allreduce(xs)
    assert g.last_stats is None
    with pytest.raises(equarx.InvalidArgumentError, match="float32"):
        g.allreduce(xs, residuals=[np.zeros(4000, np.float64)] * 3)
    with pytest.raises(equarx.MismatchError, match="elements"):
        g.allreduce(xs, residuals=[np.zeros(10, np.float32)] * 3)
    with pytest.raises(equarx.InvalidArgumentError, match="residuals"):
        g.allreduce(xs, residuals=res[:2])


def test_rotation_and_scale_keywords(rng):
    # Outlier channels, as in a transformer's activations: the rotation lowers the error;
    # bf16 scales take 2 bytes less per block; both come from the library's option table.
    xs = [rng.standard_normal(1 << 14).astype(np.float32) for _ in range(4)]
    for x in xs:
        x[13::97] *= 60
    exact = np.sum(np.stack(xs).astype(np.float64), axis=0)

    def mse(**o):
        y = equarx.allreduce(xs, algorithm="two_shot", **o)
        assert all(np.array_equal(y[0].view(np.uint32), yr.view(np.uint32)) for yr in y)
        return float(np.mean((y[0] - exact) ** 2))

    assert mse(rotation="hadamard") < 0.5 * mse(rotation="none")
    assert mse() == mse(rotation="hadamard")  # int8's default rotation is hadamard
    assert mse(codec="fp8_e4m3") == mse(codec="fp8_e4m3", rotation="none")  # fp8's is none
    assert mse() == mse(block=128, scale="two_level")  # int8's default scales and block
    assert mse(block=32, scale="bf16") > 0
    n = 1 << 14
    assert (equarx.wire_bytes_per_rank(n, "float32", 4, block=32, scale="bf16")
            < equarx.wire_bytes_per_rank(n, "float32", 4, block=32, scale="f32"))
    # Two-level scales: a 4-bit multiplier per 8 elements under each block's bf16 scale; at
    # block 128 less error than one bf16 scale per 32 elements (here about 10% less; outliers
    # spread by the rotation over 16 elements, not 32), for a few more bytes.
    assert mse(block=128, scale="two_level") < 0.95 * mse(block=32, scale="bf16")
    assert (equarx.wire_bytes_per_rank(n, "float32", 4, block=128, scale="two_level")
            < 1.02 * equarx.wire_bytes_per_rank(n, "float32", 4, block=32, scale="bf16"))
    with pytest.raises(equarx.InvalidArgumentError, match=r"two_level needs an integer codec \(int8, int6, int5, int4\)"):
        equarx.allreduce(xs, codec="fp8_e4m3", scale="two_level")
    with pytest.raises(equarx.InvalidArgumentError, match="multiple of 16"):
        equarx.allreduce(xs, block=40, scale="two_level")
    opts = equarx.options()
    assert opts["rotation"]["allowed"] == ["default", "none", "hadamard"]
    assert opts["scale"]["allowed"] == ["default", "f32", "bf16", "two_level"]
    assert opts["scale"]["default"] == "default"
    assert opts["block"]["default"] == "0"
    with pytest.raises(equarx.InvalidArgumentError, match="unknown rotation 'fourier'"):
        equarx.allreduce(xs, rotation="fourier")
    with pytest.raises(equarx.InvalidArgumentError, match="naive_fp8"):
        equarx.allreduce(xs, algorithm="naive_fp8", rotation="hadamard")


def test_threads_keyword_gives_the_same_bits(rng):
    # Option `threads`: the codec kernels of each rank on a pool of threads, each part of a
    # microshard coding its own bytes of the same wire image: the same result for any count.
    xs = [rng.standard_normal((1 << 18) + 77).astype(np.float32) for _ in range(2)]
    one = equarx.allreduce(xs, algorithm="two_shot", microshards=1, threads=1)
    for t in (2, 3):
        many = equarx.allreduce(xs, algorithm="two_shot", microshards=1, threads=t)
        for a, b in zip(one, many):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    assert equarx.options()["threads"]["default"] == "0"
    with pytest.raises(equarx.InvalidArgumentError, match="threads"):
        equarx.allreduce(xs, threads=65)
