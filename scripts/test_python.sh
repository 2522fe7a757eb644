#!/usr/bin/env bash
# Builds and tests the equarx Python package: creates the project-local virtual environment
# .venv/ (gitignored; shared with scripts/fetch_model.sh) if missing, installs the test and
# build requirements from PyPI once, (re)builds equarx with `pip install --no-build-isolation`
# (incremental: the CMake tree stays in build/python/), then runs pytest on tests/python.
#
# The PyTorch tests (tests/python/test_torch.py) run twice, with this equarx package linked in
# (and, under PyTorch 2.x only, transformers' tensor parallelism: tests/python/test_transformers.py):
#   - in .venv-torch/: Debian's CPU build of PyTorch (apt package python3-torch, 1.13), seen
#     through --system-site-packages and pinned to Debian's numpy;
#   - in .venv-torch2/: PyTorch 2.x from PyPI (python/requirements-torch2.txt pins it and its
#     CUDA wheels, which its import needs even without a GPU: about 3.0 GB downloaded, 5.5 GB
#     installed; nothing is cached beside the environment, so CI's disk holds one copy).
#
# Idempotent; a re-run with nothing changed takes seconds. Each pytest run is a stage
# (scripts/stages.sh: a banner, its time, tests / passed / skipped); every suite runs, and the
# exit status is 1 if any failed ("no tests collected" counts as a failure), or, under
# CI=true, skipped a test.
#   scripts/test_python.sh [--numpy-jax-only] [PYTEST_ARGS...]
#     --numpy-jax-only  the first suite only (scripts/test.sh --quick)
# Environment: EQUARX_VENV (default .venv), EQUARX_PY_JOBS (build parallelism, default 2),
# EQUARX_TORCH=0 skips the PyTorch tests (EQUARX_TORCH2=0 only those under PyTorch 2.x; both
# refused under CI=true), EQUARX_REQUIRE_TOOLS=1 makes tests fail rather than
# skip when build/release tools are absent. With CI=true every missing dependency (a module,
# the XLA FFI handler, MPI, a tool, torch) fails instead of skipping (tests/python/_deps.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/stages.sh
source scripts/stages.sh
stages_standalone
VENV="${EQUARX_VENV:-$ROOT/.venv}"
for v in EQUARX_TORCH EQUARX_TORCH2; do
  if [ -n "${!v:-}" ] && [ "${!v}" != 1 ] && [ "${CI:-}" = true ]; then
    echo "test_python.sh: $v=${!v} is not allowed under CI=true (CI runs the PyTorch tests)" >&2
    exit 2
  fi
done
TORCH="${EQUARX_TORCH:-1}"
TORCH2="${EQUARX_TORCH2:-$TORCH}"
if [ "${1:-}" = --numpy-jax-only ]; then
  TORCH=0 TORCH2=0
  shift
fi

stage_begin "python: .venv, equarx package"
# Debian packages: venv support, Python's headers (`pip install .` compiles the extension),
# and PyTorch for the torch tests.
APT=(python3-venv python3-dev)
[ "$TORCH" = 1 ] && APT+=(python3-torch)
bash scripts/apt_install.sh "${APT[@]}" || [ $? -eq 3 ]  # 3: no apt-get, use what is there
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
VPY="$VENV/bin/python"

# Requirements, pinned so that CI is reproducible, inside pyproject.toml's bounds (which
# tests/python/test_versions.py checks against what is installed); installed once (the stamp
# records the list; change it to reinstall).
REQS="pytest==9.2.0 numpy==2.4.6 ml_dtypes==0.7.0 nanobind==3.1.0 scikit-build-core==1.1.2 jax==0.10.2 jaxlib==0.10.2 mpi4py==4.1.2"
STAMP="$VENV/.equarx-test-reqs"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$REQS" ]; then
  # shellcheck disable=SC2086
  "$VPY" -m pip install -q $REQS
  echo "$REQS" > "$STAMP"
fi

# Rebuild only when a source of the extension or the library changed since the last install.
BSTAMP="$VENV/.equarx-build-stamp"
if [ ! -f "$BSTAMP" ] || [ -n "$(find python/equarx python/CMakeLists.txt pyproject.toml src include CMakeLists.txt tools/common/error_bound.* \
      -newer "$BSTAMP" -type f -print -quit 2>/dev/null)" ] || ! "$VPY" -c "import equarx" 2>/dev/null; then
  touch "$BSTAMP.new"
  CMAKE_BUILD_PARALLEL_LEVEL="${EQUARX_PY_JOBS:-2}" "$VPY" -m pip install -q --no-build-isolation --no-deps .
  mv "$BSTAMP.new" "$BSTAMP"
fi

if [ "${CI:-}" = "true" ]; then export EQUARX_REQUIRE_TOOLS="${EQUARX_REQUIRE_TOOLS:-1}"; fi
stage_end 0
rc=0
run_pytest "pytest: numpy, mpi4py, JAX" "$VPY" tests/python --ignore=tests/python/test_torch.py \
  --ignore=tests/python/test_transformers.py "$@" || rc=1
[ "$TORCH" = 1 ] || exit "$rc"

# PyTorch: .venv-torch on Debian's torch and numpy, with the equarx just installed in .venv.
stage_begin "python: .venv-torch (Debian's PyTorch)"
TVENV="$ROOT/.venv-torch"
[ -x "$TVENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$TVENV"
TPY="$TVENV/bin/python"
TREQS="pytest==9.2.0 ml_dtypes==0.5.4 matplotlib==3.10.9"
TSTAMP="$TVENV/.equarx-test-reqs"
if [ ! -f "$TSTAMP" ] || [ "$(cat "$TSTAMP")" != "$TREQS" ]; then
  "$TPY" -c "import numpy; print('numpy==' + numpy.__version__)" > "$TVENV/constraints.txt"
  # shellcheck disable=SC2086
  "$TPY" -m pip install -q -c "$TVENV/constraints.txt" $TREQS
  echo "$TREQS" > "$TSTAMP"
fi
PKG="$("$VPY" -c "import equarx, os; print(os.path.dirname(equarx.__file__))")"
SITE="$("$TPY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
ln -sfn "$PKG" "$SITE/equarx"
stage_end 0
EQUARX_REQUIRE_TORCH=1 run_pytest "pytest: PyTorch 1.13 (Debian)" "$TPY" tests/python/test_torch.py "$@" || rc=1
[ "$TORCH2" = 1 ] || exit "$rc"

# PyTorch 2.x: .venv-torch2 on PyPI's torch, every package pinned by
# python/requirements-torch2.txt. The wheels (about 3.0 GB, half a minute on a fast link) are
# installed straight from PyPI with pip's cache off: a cached or kept copy of them would need
# another 3 GB on top of the 5.5 GB environment, and CI ran out of disk with both (stop 24).
stage_begin "python: .venv-torch2 (PyTorch 2.x wheels)"
T2VENV="$ROOT/.venv-torch2"
T2REQS="$ROOT/python/requirements-torch2.txt"
T2STAMP="$T2VENV/.equarx-test-reqs"
if [ ! -f "$T2STAMP" ] || ! cmp -s "$T2REQS" "$T2STAMP"; then
  rm -rf "$T2VENV"
  /usr/bin/python3 -m venv "$T2VENV"
  rm -rf "$ROOT/.cache/torch2-wheels"  # where earlier versions of this script kept the wheels
  "$T2VENV/bin/python" -m pip install -q --no-cache-dir --no-deps -r "$T2REQS"
  cp "$T2REQS" "$T2STAMP"
fi
T2PY="$T2VENV/bin/python"
ln -sfn "$PKG" "$("$T2PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/equarx"
stage_end 0
EQUARX_REQUIRE_TORCH=1 run_pytest "pytest: PyTorch 2.x (PyPI)" "$T2PY" tests/python/test_torch.py \
  tests/python/test_transformers.py "$@" || rc=1
exit "$rc"
