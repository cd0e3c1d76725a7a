#!/usr/bin/env bash
# Create (or refresh) a pinned environment: a Python 3.11 venv with exactly a requirements file.
#   bash scripts/setup.sh                                        # .venv from requirements.txt
#   bash scripts/setup.sh .venv-bpy42 requirements-bpy42.txt     # the Blender 4.2 smoke venv
# Idempotent: does nothing when the venv already matches its requirements file.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
REQ=${2:-requirements.txt}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || { echo "setup: $PY not found (Blender's bpy wheel needs Python 3.11)" >&2; exit 1; }
[ -f "$REQ" ] || { echo "setup: $REQ not found" >&2; exit 1; }
stamp=$VENV/.requirements.sha256
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r "$REQ"
echo "$want" > "$stamp"
