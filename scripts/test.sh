#!/usr/bin/env bash
# Every test: solver tests (NumPy only) and Blender tests (bpy), in the pinned environment
# (.venv: Blender 5.2 LTS, Python 3.13). The whole suite runs on the default backend (compiled
# Numba kernels) and, beside it, the solver tests run again on the NumPy reference backend, so
# both backends pass the whole solver suite. Then the smoke tracks (tests/smoke: install the
# built zips, one bake on the bundled compiled kernels, one PC2 export, the -any zip on NumPy)
# run on Blender 5.0 (.venv-bpy50) and Blender 4.2 LTS (.venv-bpy42), the extension's declared
# minimum; each venv is created once from its requirements file like .venv, before the main
# run, whose test_install.py builds the zips that the tracks install. VERLET_SKIP_SMOKE=1 skips
# both tracks for a quick local run (VERLET_SKIP_BPY42=1 / VERLET_SKIP_BPY50=1 skip one).
# pytest-blender is disabled because no `blender` binary is needed here: bpy is imported as a
# module. Extra arguments go to every pytest run (e.g. scripts/test.sh -k friction).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
dist_root=$(mktemp -d)
trap 'rm -rf "$dist_root"' EXIT
tracks=()
for track in bpy50 bpy42; do
  skip=VERLET_SKIP_${track^^}
  if [ "${VERLET_SKIP_SMOKE:-0}" != 1 ] && [ "${!skip:-0}" != 1 ]; then
    tracks+=("$track")
    bash scripts/setup.sh ".venv-$track" "requirements-$track.txt"
  fi
done
# The smoke tracks' zips: a build compiles the shipped kernels for each Python it bundles Numba
# for that has an interpreter on PATH (about two minutes each), and tests/blender/test_install.py
# builds the zips anyway. Its build finds the first smoke track's Python (3.11) on PATH (a wrapper
# in $dist_root/bin, so that no other python name changes) and writes to $dist_root/main, and
# the tracks that run that Python and NumPy install those zips (see below).
main_key=
if [ ${#tracks[@]} -gt 0 ] && [ -z "${VERLET_EXTENSION_DIST:-}" ]; then
  mkdir -p "$dist_root/bin" "$dist_root/main"
  first=$(pwd)/.venv-${tracks[0]}/bin/python
  version=$("$first" -c 'import sys; print("{}.{}".format(*sys.version_info[:2]))')
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$first" > "$dist_root/bin/python$version"
  chmod +x "$dist_root/bin/python$version"
  main_key=$("$first" -c \
    'import sys, numpy; print("{}.{}-{}".format(*sys.version_info[:2], numpy.__version__))')
fi
# The solver tests on the NumPy reference backend run beside the main run, at a lower
# priority (nice), in the core its tests leave idle; their output follows the main run's.
# test_backends.py runs every scenario on both backends by name in the first run, whatever
# VERLET_BACKEND says, so this run leaves it out, and likewise every test that names its backend
# in a parameter (tests/conftest.py: --skip-named-backends). A few of its tests compare the
# two backends, so it starts once the compiled kernels, as the solver tests import them, are
# in the kernel cache (compiled by the warm-up before it, about four minutes on a clean
# machine, while the main run compiles them as the Blender tests import them): it would
# otherwise compile them too, beside the main run's compile of the same kernels.
# The tests that name the NumPy backend in a parameter (146; 837 s of the main run's 80 slowest
# on 2026-12-01) run in a third run beside those two, also niced (--named-backend numpy), and
# the main run leaves them out (--leave-out-named-backend numpy): the main run alone used to
# outlast the NumPy run by minutes, with one core idle. Each run ends with its ten slowest
# tests (--durations), so that a CI log says where the time went.
(
  VERLET_BACKEND=numba .venv/bin/python -c \
    'import sys; sys.path.insert(0, "."); from solver import backend; backend.warm_up()'
  VERLET_BACKEND=numpy nice -n 10 .venv/bin/python -m pytest -p no:pytest-blender \
    -p no:cacheprovider tests/solver --ignore=tests/solver/test_backends.py \
    --skip-named-backends --durations=10 "$@" > "$dist_root/numpy-run.log" 2>&1 &
  numpy_pid=$!
  named_status=0
  nice -n 10 .venv/bin/python -m pytest -p no:pytest-blender -p no:cacheprovider \
    tests --named-backend numpy --durations=10 "$@" > "$dist_root/named-run.log" 2>&1 \
    || named_status=$?
  echo "$named_status" > "$dist_root/named-run.status"
  wait "$numpy_pid"
) > "$dist_root/warm-up.log" 2>&1 &
numpy_run=$!
trap 'pkill -P "$numpy_run" 2>/dev/null || true; kill "$numpy_run" 2>/dev/null || true
      rm -rf "$dist_root"' EXIT
main_status=0
PATH="$dist_root/bin:$PATH" VERLET_TEST_DIST_DIR="$dist_root/main" \
  .venv/bin/python -m pytest -p no:pytest-blender tests --leave-out-named-backend numpy \
  --durations=10 "$@" \
  || main_status=$?
numpy_status=0
wait "$numpy_run" || numpy_status=$?
named_status=$(cat "$dist_root/named-run.status" 2>/dev/null || echo 1)
cat "$dist_root/warm-up.log"
echo "=== the solver tests on the NumPy backend (VERLET_BACKEND=numpy, run beside the above) ==="
cat "$dist_root/numpy-run.log" 2>/dev/null || true
echo "=== the tests that name the NumPy backend (--named-backend numpy, run beside) ==="
cat "$dist_root/named-run.log" 2>/dev/null || true
# exit code 5 = no test selected: extra arguments such as -k may deselect a whole run (but not
# all three); without them every run must select tests (a selection that silently emptied a
# run would otherwise pass)
ok5=$([ $# -gt 0 ] && echo 5 || echo 0)
if [ "$main_status" -eq 5 ] && [ "$numpy_status" -eq 5 ] && [ "$named_status" -eq 5 ]; then
  exit 5
fi
[ "$main_status" -eq 0 ] || [ "$main_status" -eq "$ok5" ] || exit "$main_status"
[ "$numpy_status" -eq 0 ] || [ "$numpy_status" -eq "$ok5" ] || exit "$numpy_status"
[ "$named_status" -eq 0 ] || [ "$named_status" -eq "$ok5" ] || exit "$named_status"
# The smoke tracks' zips: tracks whose venvs run the same Python and NumPy (4.2 and 5.0: 3.11,
# NumPy 1.26.4) would compile the same kernels, so one build serves them: test_install.py's,
# when it ran (a -k may deselect it) and built the kernels with that Python, else one built here
# with the track's own Python, unless VERLET_EXTENSION_DIST names zips built elsewhere.
declare -A dist_of
if [ -n "$main_key" ] && compgen -G "$dist_root/main/*.zip" > /dev/null; then
  dist_of[$main_key]="$dist_root/main"
fi
for track in "${tracks[@]}"; do
  dist=${VERLET_EXTENSION_DIST:-}
  kernels=${VERLET_EXTENSION_DIST_KERNELS:-0}
  if [ -z "$dist" ]; then
    kernels=1
    key=$(".venv-$track/bin/python" -c \
      'import sys, numpy; print("{}.{}-{}".format(*sys.version_info[:2], numpy.__version__))')
    if [ -z "${dist_of[$key]:-}" ]; then
      dist_of[$key]="$dist_root/$track"
      echo "smoke: building the zips, kernels compiled by .venv-$track's Python"
      .venv/bin/python scripts/build_extension.py --output-dir "${dist_of[$key]}" \
        --kernel-python "$(pwd)/.venv-$track/bin/python" > "$dist_root/$track.log" 2>&1 \
        || { cat "$dist_root/$track.log"; exit 1; }
    fi
    dist=${dist_of[$key]}
  fi
  VERLET_EXTENSION_DIST="$dist" VERLET_EXTENSION_DIST_KERNELS=$kernels \
    ".venv-$track/bin/python" -m pytest -p no:pytest-blender \
    tests/smoke "$@" || [ $? -eq 5 ]
done
