"""equarx.from_mpi4py under mpirun (Debian's Open MPI): 2 and 3 processes."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import _deps
import equarx

HERE = pathlib.Path(__file__).resolve().parent

_deps.require(equarx.has_mpi, "equarx was built without MPI")
_deps.require(shutil.which("mpirun") is not None, "mpirun is not installed")
_deps.import_or_missing("mpi4py")


@pytest.mark.parametrize("np_", [2, 3])
def test_mpi4py_communicator(np_):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    p = subprocess.run(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np_),
                        sys.executable, str(HERE / "mpi_check.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["size"] == np_ and r["agree"] and r["equal_inprocess"] and r["exact_ring"], r
    assert r["mismatch_everywhere"], r
    assert r["calls_counted"] and r["ranks_per_host"] and r["closed"], r
