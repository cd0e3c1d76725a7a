"""A missing or broken bpy fails the run: the Blender tests used to skip themselves
(pytest.importorskip), so a broken environment reported about 100 skips beside a green solver
suite. Each case runs pytest on one Blender test module in a child process whose bpy cannot be
imported, and checks that the run fails (a collection error, no test skipped or passed) with a
message that names bpy and the cause."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

BROKEN = 'raise ImportError("libblender.so: cannot open shared object file (simulated)")\n'
# a pytest plugin that hides bpy as if it were not installed (None in sys.modules makes
# "import bpy" raise ModuleNotFoundError)
HIDDEN = 'import sys\nsys.modules["bpy"] = None\n'


def _pytest_without_bpy(tmp_path, how):
    shim = tmp_path / "shim"
    shim.mkdir()
    args = [sys.executable, "-m", "pytest", "-p", "no:pytest-blender", "-p", "no:cacheprovider",
            "-q", os.path.join("tests", "blender", "test_registration.py")]
    if how == "broken":
        (shim / "bpy.py").write_text(BROKEN)           # shadows the installed bpy
    else:
        (shim / "hide_bpy.py").write_text(HIDDEN)
        args[3:3] = ["-p", "hide_bpy"]
    env = dict(os.environ, PYTHONPATH=str(shim))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("how, cause", [
    ("broken", "libblender.so: cannot open shared object file (simulated)"),
    ("missing", "ModuleNotFoundError"),
])
def test_blender_tests_fail_without_bpy(tmp_path, how, cause):
    proc = _pytest_without_bpy(tmp_path, how)
    out = proc.stdout + proc.stderr
    assert proc.returncode not in (0, 5), out              # 5: no tests collected
    assert "the Blender tests need bpy" in out and cause in out, out
    assert "skipped" not in out and "passed" not in out, out
    assert "error" in out.lower(), out
