"""equarx.codec on numpy arrays: round trips, sizes, error bounds, SIMD vs reference."""

import numpy as np
import pytest

import equarx
from equarx import codec

BLOCK_FORMATS = [f for f in equarx.formats() if f.endswith("_block")]


def test_formats_listed():
    names = equarx.formats()
    assert "int8_block" in names and "raw_f32" in names


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 4099])
def test_int8_layout_and_size(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    wire = equarx.encode(x, "int8", block=64)
    nb = -(-n // 64)
    assert wire.dtype == np.uint8 and wire.size == equarx.wire_bytes(n, "int8", 64) == 4 * nb + n
    if n:
        # First scale = absmax / 127 of the first block (docs/wire_format.md).
        s0 = wire[:4].view(np.float32)[0]
        assert s0 == np.float32(np.abs(x[:64]).max()) / np.float32(127)


@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_round_trip_error_bound(fmt, dtype, rng):
    x = rng.standard_normal(5000).astype(np.float32)
    xd = equarx.convert(x, dtype)
    wire = equarx.encode(xd, fmt, block=128)
    y = equarx.decode(wire, xd.shape, fmt, block=128, dtype=np.float32)
    ref = xd.astype(np.float32)
    absmax = np.abs(ref.reshape(-1)[: 5000 // 128 * 128].reshape(-1, 128)).max(axis=1)
    err = np.abs(y[: absmax.size * 128].reshape(-1, 128) - ref[: absmax.size * 128].reshape(-1, 128))
    # Worst relative step of any format here: int4 (1/7 of absmax per code, half a step).
    bound = {"int8_block": 0.5 / 127, "int6_block": 0.5 / 31, "int5_block": 0.5 / 15,
             "int4_block": 0.5 / 7, "fp8_e4m3_block": 1 / 16, "fp8_e5m2_block": 1 / 8}[fmt]
    assert np.all(err <= absmax[:, None] * bound * 1.0001 + 1e-30)


@pytest.mark.parametrize("fmt,q", [("int8", 127), ("int6", 31), ("int5", 15), ("int4", 7)])
def test_quantization_mse_bound_is_the_step_squared_over_12(fmt, q, rng):
    """The helper's value from its definition, and the measured MSE of uniform data against it."""
    assert codec.quantization_mse_bound(3.1, fmt) == pytest.approx((3.1 / q) ** 2 / 12, rel=1e-15)
    assert codec.quantization_mse_bound(3.1, fmt + "_block") == codec.quantization_mse_bound(3.1, fmt)
    x = rng.uniform(-1, 1, 128 * 400).astype(np.float32)
    y = equarx.decode(equarx.encode(x, fmt, block=128), x.shape, fmt, block=128, dtype=np.float32)
    absmax = np.abs(x.reshape(-1, 128)).max(axis=1)
    mse = ((y - x).reshape(-1, 128) ** 2).mean(axis=1)
    # Uniform data: the rounding error is uniform over a step, so the MSE is step^2 / 12. The
    # squared error of one value then has a relative standard deviation of sqrt(12^2/80 - 1) =
    # 0.894; the tolerance is 5 standard errors of the mean of all values, plus the bias of each
    # block's absmax element, which is coded exactly (1 of 128).
    tol = 5 * 0.894 / np.sqrt(x.size) + 1 / 128
    assert np.mean(mse / codec.quantization_mse_bound(absmax, fmt)) == pytest.approx(1.0, abs=tol)


def test_quantization_mse_bound_refuses_a_float_format():
    with pytest.raises(equarx.InvalidArgumentError, match="integer formats only"):
        codec.quantization_mse_bound(1.0, "fp8_e4m3")


@pytest.mark.parametrize("fmt", equarx.formats())
def test_simd_equals_reference(fmt, rng):
    x = (rng.standard_normal(3001) * 10).astype(np.float32)
    x[17] = np.inf
    x[1000] = np.nan
    a = equarx.encode(x, fmt, block=64)
    b = equarx.encode(x, fmt, block=64, reference=True)
    assert np.array_equal(a, b)
    da = equarx.decode(a, x.shape, fmt, block=64)
    db = equarx.decode(a, x.shape, fmt, block=64, reference=True)
    assert np.array_equal(da.view(np.uint32), db.view(np.uint32))


def test_every_simd_target_bitwise_equal(rng):
    x = rng.standard_normal(2049).astype(np.float32)
    ref = equarx.encode(x, "int8", block=64, reference=True)
    for tid, _name in codec.simd_targets():
        with codec.force_simd_target(tid):
            assert np.array_equal(equarx.encode(x, "int8", block=64), ref)


def test_zero_block_decodes_to_zero():
    x = np.zeros(200, np.float32)
    y = equarx.decode(equarx.encode(x), x.shape)
    assert np.array_equal(y.view(np.uint32), np.zeros(200, np.uint32))


def test_stochastic_rounding_reproducible(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    a = equarx.encode(x, "int8", rounding="stochastic", seed=7)
    b = equarx.encode(x, "int8", rounding="stochastic", seed=7)
    c = equarx.encode(x, "int8", rounding="stochastic", seed=8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_stats():
    x = np.linspace(-1, 1, 640, dtype=np.float32)
    _, st = equarx.encode(x, "int8", stats=True)
    assert st["clipped"] == 0 and st["sum_sq_err_est"] > 0 and st["max_abs_err_est"] > 0


def test_convert_bf16_rne():
    x = np.array([1.0, 1.00390625, 1.01171875, np.nan], np.float32)  # ties to even
    y = equarx.convert(x, "bfloat16").astype(np.float32)
    assert y[0] == 1.0 and y[1] == 1.0 and y[2] == np.float32(1.015625) and np.isnan(y[3])
