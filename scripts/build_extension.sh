#!/usr/bin/env bash
# Validate blender_manifest.toml and build the dist/ zips with Blender's own
# extension tool (the blender_ext.py that ships inside the bpy wheel; with a real Blender binary
# the same tool is `blender -c extension build`). Creates .venv first if needed.
# Downloads the bundled Numba/llvmlite wheels into wheels/ once (gitignored), then builds one zip
# per platform (dist/verlet_physics-<version>-<platform>.zip) and the -any zip without wheels
# (--all-platforms: one zip with all).
# Arguments go to scripts/build_extension.py, e.g. --output-dir DIR or --all-platforms.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/build_extension.py "$@"
