"""What a test module does when something it needs is missing: skip, or fail under CI.

With CI=true (or EQUARX_REQUIRE_ALL=1) a missing dependency -- a module, jaxlib's FFI headers
at build time, MPI, mpirun, a built tool -- is a failure, never a silent skip: CI must run
every test. Elsewhere (a developer's partial setup) it is a skip with the reason.
"""

import importlib
import os

import pytest


def strict():
    return os.environ.get("CI") == "true" or os.environ.get("EQUARX_REQUIRE_ALL") == "1"


def missing(reason):
    """Skips the calling test (or module, at import time), or fails it under CI."""
    if strict():
        pytest.fail(f"missing dependency (CI=true, so this fails instead of skipping): {reason}",
                    pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require(condition, reason):
    if not condition:
        missing(reason)


def import_or_missing(name):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing(f"cannot import {name}: {e}")
