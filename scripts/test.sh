#!/usr/bin/env bash
# Every test: solver tests (NumPy only) and Blender tests (bpy), in the pinned environment.
# The whole suite runs on the default backend (compiled Numba kernels), then the solver tests run
# again on the NumPy reference backend, so both backends pass the whole solver suite.
# Then the Blender 4.2 LTS smoke subset (tests/smoke: install the built zip, one bake, one PC2
# export) runs in .venv-bpy42 (requirements-bpy42.txt, created once like .venv), so the manifest's
# blender_version_min = "4.2.0" is tested; VERLET_SKIP_BPY42=1 skips it for a quick local run.
# pytest-blender is disabled because no `blender` binary is needed here: bpy is imported as a
# module. Extra arguments go to every pytest run (e.g. scripts/test.sh -k friction).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -p no:pytest-blender tests "$@"
# exit code 5 = no test selected (extra arguments such as -k may deselect a whole run)
VERLET_BACKEND=numpy .venv/bin/python -m pytest -p no:pytest-blender tests/solver "$@" || [ $? -eq 5 ]
if [ "${VERLET_SKIP_BPY42:-0}" != 1 ]; then
  bash scripts/setup.sh .venv-bpy42 requirements-bpy42.txt
  .venv-bpy42/bin/python -m pytest -p no:pytest-blender tests/smoke "$@" || [ $? -eq 5 ]
fi
