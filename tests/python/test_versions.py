"""pyproject.toml's version bounds are true: every bounded package that is installed here
satisfies them (so the pinned test environment of scripts/test_python.sh lies inside them),
and the lower bounds cover the APIs the code uses (jax.ffi, jax.shard_map).

Under CI every bounded package of the build and of the jax, mpi and test extras must be
installed. The lower bound jax/jaxlib 0.6.1 itself was checked by installing it into a
throwaway environment (docs/python.md, "Versions").
"""

import importlib.metadata as md
import pathlib
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import _deps

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirements():
    reqs = list(PYPROJECT["build-system"]["requires"]) + list(PYPROJECT["project"]["dependencies"])
    for extra in ("jax", "mpi", "test"):
        reqs += PYPROJECT["project"]["optional-dependencies"][extra]
    return [Requirement(r) for r in reqs]


@pytest.mark.parametrize("req", requirements(), ids=lambda r: r.name)
def test_installed_version_within_bounds(req):
    try:
        installed = md.version(req.name)
    except md.PackageNotFoundError:
        _deps.missing(f"{req.name} is not installed")
    assert req.specifier.contains(installed, prereleases=True), f"{req.name} {installed} not in {req.specifier}"
    # Every bound is two-sided: a lower bound and an upper pin.
    ops = {s.operator for s in req.specifier}
    assert ">=" in ops and "<" in ops, f"{req}: needs both a lower bound and an upper pin"


def test_python_version_within_bounds():
    from packaging.specifiers import SpecifierSet
    spec = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert spec.contains(".".join(map(str, sys.version_info[:3])))
    # jaxlib (a build requirement) >= 0.6.1 needs Python >= 3.10: the floor must not be lower.
    assert not spec.contains("3.9.18")


def test_lower_bound_of_jax_has_the_apis_the_code_uses():
    jax = _deps.import_or_missing("jax")
    assert hasattr(jax, "shard_map") and hasattr(jax, "ffi")
    assert hasattr(jax.ffi, "ffi_call") and hasattr(jax.ffi, "register_ffi_target")
    floor = next(r for r in requirements() if r.name == "jax")
    lower = min(Version(s.version) for s in floor.specifier if s.operator == ">=")
    assert lower >= Version("0.6.1"), "jax.shard_map is first exported by jax 0.6.1"
