#!/usr/bin/env bash
# Every test: solver tests (NumPy only) and Blender tests (bpy), in the pinned environment.
# The whole suite runs on the default backend (compiled Numba kernels), then the solver tests run
# again on the NumPy reference backend, so both backends pass the whole solver suite.
# pytest-blender is disabled because no `blender` binary is needed here: bpy is imported as a
# module. Extra arguments go to both pytest runs (e.g. scripts/test.sh -k friction).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -p no:pytest-blender tests "$@"
VERLET_BACKEND=numpy .venv/bin/python -m pytest -p no:pytest-blender tests/solver "$@"
