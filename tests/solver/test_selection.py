"""The test selections scripts/test.sh splits its runs by (tests/conftest.py): the main run
leaves out the tests that name the NumPy backend in a parameter and a third run takes exactly
those, so together they run every test once. A selection that dropped or doubled tests would
leave the suite green while a backend went untested."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a module with tests named for each backend and tests that name none
MODULE = "tests/solver/test_bodies.py"


def _collected(*options):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:pytest-blender",
                           "-p", "no:cacheprovider", "--collect-only", "-q", MODULE, *options],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {ln for ln in proc.stdout.splitlines() if ln.startswith(MODULE + "::")}


def test_the_runs_selections_cover_every_test_once():
    every = _collected()
    named = _collected("--named-backend", "numpy")
    rest = _collected("--leave-out-named-backend", "numpy")
    unnamed = _collected("--skip-named-backends")
    assert named and rest and unnamed
    assert named | rest == every and not named & rest
    assert all("numpy" in n.rsplit("[", 1)[-1] for n in named), sorted(named)[:3]
    assert not any("[numpy" in n or "-numpy" in n for n in rest), sorted(rest)[:3]
    # the named numba tests stay in the main run; the NumPy run's selection names neither
    assert any("numba" in n.rsplit("[", 1)[-1] for n in rest)
    assert unnamed < rest and not any("numba" in n.rsplit("[", 1)[-1] for n in unnamed)
