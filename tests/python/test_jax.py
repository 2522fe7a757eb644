"""equarx.jax.psum as an XLA FFI custom call among host CPU devices.

Each test runs a child Python (tests/python/jax_psum_check.py) because the number of host
devices (--xla_force_host_platform_device_count) is fixed when JAX starts.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import _deps

jax = _deps.import_or_missing("jax")
import equarx  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def run_check(devices, *args):
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, str(HERE / "jax_psum_check.py"), *args], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


_deps.require(equarx.has_xla_ffi, "equarx was built without the XLA FFI handler (jaxlib headers not found)")


@pytest.mark.parametrize("devices", [2, 4, 8])
def test_ring_matches_lax_psum(devices):
    r = run_check(devices, "ring")
    assert r["identical"], r
    # f32 summation order only: both within the ring's documented bound (docs/algorithms.md).
    assert r["err_over_bound"] <= 1.0 and r["lax_err_over_ring_bound"] <= 1.0, r


@pytest.mark.parametrize("algo", ["full_bidir", "semi", "two_shot"])
def test_quantized_within_bound(algo):
    r = run_check(4, algo)
    assert r["identical"], r
    # Every element within the documented bound of the configuration (equarx.error_bound).
    assert r["err_over_bound"] <= 1.0, r


def test_matches_numpy_api_bitwise():
    r = run_check(4, "semi", "--compare-numpy")
    assert r["equal_numpy_api"], r


def test_two_level_scales_and_rotation_as_keywords():
    r = run_check(4, "two_shot", "--compare-numpy", "--two-level")
    assert r["identical"] and r["equal_numpy_api"], r
    assert r["err_over_bound"] <= 1.0, r


def test_2d_mesh_groups():
    r = run_check(4, "ring", "--mesh2d")
    assert r["identical"] and r["err_over_bound"] <= 1.0 and r["lax_err_over_ring_bound"] <= 1.0, r


def test_bad_dtype_and_options():
    r = run_check(2, "errors")
    assert r["dtype_error"] and r["option_error"], r


@pytest.mark.parametrize("devices", [2, 4])
def test_grad_through_psum_matches_lax_psum(devices):
    """jax.grad through equarx.jax.psum: the transpose follows lax.psum's (with and without
    check_vma), so the unquantized ring's gradient equals lax.psum's up to summation order and
    int8's stays within its error: both within a tolerance derived from the documented bound
    (jax_psum_check.grad_bound)."""
    r = run_check(devices, "grad")
    for key in ("checked", "unchecked"):
        assert r[f"{key}_ring_err_over_bound"] <= 1.0, r
        assert r[f"{key}_int8_err_over_bound"] <= 1.0, r
