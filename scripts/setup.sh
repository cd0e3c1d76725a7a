#!/usr/bin/env bash
# Create (or refresh) a pinned environment: a venv with exactly a requirements file, on the
# Python that file names in its "# python: X.Y" line (each bpy wheel is built for one Python).
#   bash scripts/setup.sh                                        # .venv (bpy 5.2, Python 3.13)
#   bash scripts/setup.sh .venv-bpy50 requirements-bpy50.txt     # Blender 5.0 smoke (3.11)
#   bash scripts/setup.sh .venv-bpy42 requirements-bpy42.txt     # Blender 4.2 smoke (3.11)
# Idempotent: does nothing when the venv already matches its requirements file.
# The interpreter: $PYTHON if set, else the first pythonX.Y that runs (on PATH; a pyenv shim
# without that version selected fails to run and is skipped), else pyenv's own install of it
# (~/.pyenv/versions/X.Y.*, or `pyenv which` with PYENV_VERSION), else uv's.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
REQ=${2:-requirements.txt}
[ -f "$REQ" ] || { echo "setup: $REQ not found" >&2; exit 1; }
WANT=$(sed -n 's/^# python: *\([0-9][0-9.]*\).*/\1/p' "$REQ" | head -n1)
[ -n "$WANT" ] || { echo "setup: $REQ has no '# python: X.Y' line" >&2; exit 1; }

runs_wanted() {   # $1 runs and is Python $WANT
  [ -n "$1" ] && "$1" -c "import sys; sys.exit(sys.version.startswith('$WANT.') is False)" \
    >/dev/null 2>&1
}

find_python() {
  local c
  if [ -n "${PYTHON:-}" ]; then
    runs_wanted "$PYTHON" && { echo "$PYTHON"; return; }
    echo "setup: PYTHON=$PYTHON is not a working Python $WANT" >&2; return 1
  fi
  if runs_wanted "python$WANT"; then command -v "python$WANT"; return; fi
  local root=${PYENV_ROOT:-$HOME/.pyenv}
  for c in $(ls -d "$root/versions/$WANT".* 2>/dev/null | sort -t. -k3 -n -r); do
    runs_wanted "$c/bin/python$WANT" && { echo "$c/bin/python$WANT"; return; }
  done
  if command -v pyenv >/dev/null 2>&1; then
    for c in $(pyenv versions --bare 2>/dev/null | grep "^$WANT\." | sort -t. -k3 -n -r); do
      c=$(PYENV_VERSION=$c pyenv which "python$WANT" 2>/dev/null) || continue
      runs_wanted "$c" && { echo "$c"; return; }
    done
  fi
  if command -v uv >/dev/null 2>&1; then
    c=$(uv python find "$WANT" 2>/dev/null) && runs_wanted "$c" && { echo "$c"; return; }
  fi
  echo "setup: no Python $WANT found for $REQ (Blender's bpy wheel there needs it): install it" \
       "(e.g. 'pyenv install $WANT' or your system's python$WANT package) or set PYTHON=" >&2
  return 1
}

stamp=$VENV/.requirements.sha256
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
   && runs_wanted "$VENV/bin/python"; then
  exit 0
fi
if ! runs_wanted "$VENV/bin/python"; then
  # absent, broken, or on another Python (e.g. a .venv from before the move to 3.13): recreate
  PY=$(find_python)
  echo "setup: creating $VENV with $PY ($("$PY" --version 2>&1)) from $REQ" >&2
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r "$REQ"
echo "$want" > "$stamp"
