"""pytest set-up for equarx's Python tests: shared fixtures and the path of equarx-reduce.

equarx-reduce is looked up at $EQUARX_REDUCE, then build/release/tools/reduce/equarx-reduce.
Tests that need it skip when it is missing, unless EQUARX_REQUIRE_TOOLS=1 or CI=true
(_deps.strict()), where they fail.
"""

import os
import pathlib

import numpy as np
import pytest

import _deps

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tool_path(name, subdir):
    env = os.environ.get("EQUARX_" + name.split("-")[1].upper())
    p = pathlib.Path(env) if env else ROOT / "build" / "release" / "tools" / subdir / name
    if not p.exists():
        if os.environ.get("EQUARX_REQUIRE_TOOLS") == "1" or _deps.strict():
            pytest.fail(f"{name} not found at {p} (build it: cmake --build --preset release)")
        pytest.skip(f"{name} not built at {p}")
    return str(p)


@pytest.fixture
def reduce_tool():
    return tool_path("equarx-reduce", "reduce")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
