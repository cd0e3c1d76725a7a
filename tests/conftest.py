"""Test set-up shared by the solver tests (NumPy only) and the Blender tests (bpy).

The repository root is the extension package itself (blender_manifest.toml and __init__.py sit
there), so the solver is importable as the top-level package ``solver`` and the whole extension
as ``verlet_physics`` (loaded from the root under its extension id, as Blender would name it).
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from extension_loader import load_extension  # noqa: E402  (shared with scripts/demo.py)


@pytest.fixture
def extension():
    """The extension registered into a fresh, empty Blender session; unregistered after."""
    bpy = pytest.importorskip("bpy")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = load_extension()
    ext.register()
    try:
        yield ext
    finally:
        ext.unregister()


def run_installed_child(args, resources, timeout=600):
    """Run tests/smoke/installed_extension.py in a child Python whose Blender user resources
    are ``resources`` (an isolated folder), without the source tree on its path; return the
    JSON of its last "RESULT " line, failing with its output if it has none or reports an error."""
    import json
    import subprocess
    child = os.path.join(ROOT, "tests", "smoke", "installed_extension.py")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(resources))
    env.pop("PYTHONPATH", None)           # the source tree must not leak into the child
    proc = subprocess.run([sys.executable, child, *map(str, args)], env=env, cwd=str(resources),
                          capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"no RESULT from the child (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out = json.loads(lines[-1][len("RESULT "):])
    assert "error" not in out, f"child failed:\n{out['error']}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out
