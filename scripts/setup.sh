#!/usr/bin/env bash
# Create (or refresh) the pinned environment: a Python 3.11 venv in .venv with requirements.txt.
# Idempotent: does nothing when .venv already matches requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || { echo "setup: $PY not found (Blender's bpy wheel needs Python 3.11)" >&2; exit 1; }
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements.txt
echo "$want" > "$stamp"
