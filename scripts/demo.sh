#!/usr/bin/env bash
# The main job: set up the pinned environment and run the headless demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
