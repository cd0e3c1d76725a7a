"""Smoke test on Blender 4.2 LTS, the extension's declared minimum (blender_version_min = "4.2.0"):
install the built zip with Blender 4.2's extension installer into an isolated user-resources
folder, bake once through the installed module and export PC2.

scripts/test.sh runs this in .venv-bpy42 (requirements-bpy42.txt) after the main suite; under any
other bpy it skips (the main suite's tests/blender/test_install.py covers bpy 5.0).

The zip is the one users get: built by scripts/build_extension.py with the pinned .venv's
extension tool (bpy 5.0) when that venv exists, else with this bpy's own tool; set
VERLET_EXTENSION_ZIP to test a zip built elsewhere.
"""

import importlib.metadata
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

try:
    BPY_VERSION = importlib.metadata.version("bpy")
except importlib.metadata.PackageNotFoundError:
    BPY_VERSION = None
pytestmark = pytest.mark.skipif(
    BPY_VERSION is None or not BPY_VERSION.startswith("4.2."),
    reason=f"Blender 4.2 smoke: needs bpy 4.2.x (this is {BPY_VERSION}); "
           "scripts/test.sh runs it in .venv-bpy42")

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import build_extension  # noqa: E402

CHILD = os.path.join(ROOT, "tests", "smoke", "installed_extension.py")
INSTALLED = "bl_ext.user_default.verlet_physics"


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory):
    if os.environ.get("VERLET_EXTENSION_ZIP"):
        return os.environ["VERLET_EXTENSION_ZIP"]
    main_python = os.path.join(ROOT, ".venv", "bin", "python")
    python = main_python if os.path.exists(main_python) else sys.executable
    return build_extension.build(output_dir=str(tmp_path_factory.mktemp("dist")),
                                 python=python)[0]


def test_blender_42_tool_accepts_the_zip(built_zip):
    """Blender 4.2's own extension tool validates the zip's manifest (what its installer reads)."""
    tool, _ = build_extension.find_tool(sys.executable)
    assert os.sep + "4.2" + os.sep in tool
    proc = subprocess.run([sys.executable, tool, "validate", built_zip],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_install_bake_export_pc2_on_blender_42(built_zip, tmp_path):
    iso = tmp_path / "user_resources"
    iso.mkdir()
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(iso))
    env.pop("PYTHONPATH", None)
    work = tmp_path / "work"
    proc = subprocess.run([sys.executable, CHILD, "--zip", built_zip, "--workdir", str(work),
                           "--pc2"], env=env, cwd=str(iso), capture_output=True, text=True,
                          timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"no RESULT (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out = json.loads(lines[-1][len("RESULT "):])
    assert "error" not in out, f"child failed on bpy {BPY_VERSION}:\n{out['error']}"
    assert proc.returncode == 0, proc.stderr[-3000:]

    assert out["bpy"].startswith("4.2.")
    ext_dir = os.path.realpath(iso / "extensions" / "user_default" / "verlet_physics")
    assert out["install"] == ["FINISHED"]
    assert out["package"] == INSTALLED
    assert out["operator_module"] == INSTALLED + ".addon.operators"
    assert out["extension_modules"] and all(
        f.startswith(ext_dir + os.sep) for f in out["extension_modules"])
    assert out["stray_modules"] == []

    # one bake
    assert out["bake"] == ["FINISHED"] and out["verlet_error"] == "", out
    with open(out["cache"], "rb") as fh:
        blob = fh.read()
    assert blob[:8] == b"VERLETC1"
    n = int.from_bytes(blob[8:12], "little")
    header = json.loads(blob[12:12 + n])
    frames = np.frombuffer(blob[12 + n:], dtype="<f4").reshape(24, 36, 3)
    assert (header["frame_start"], header["frame_end"], header["vertex_count"]) == (1, 24, 36)
    assert frames[-1, :, 2].max() < frames[0, :, 2].min() - 0.1      # it fell
    assert frames[-1, :, 2].min() > -1e-3                            # onto the plane, not through

    # one export: PC2 with the baked positions, and the Mesh Cache modifier that plays it
    assert out["export_pc2"] == ["FINISHED"]
    assert out["pc2"] == [str(work / "pc2" / "Cloth.pc2")]
    assert out["pc2_modifier"] == out["pc2"][0]
    with open(out["pc2"][0], "rb") as fh:
        pc2 = fh.read()
    assert pc2[:12] == b"POINTCACHE2\0"
    version, points = struct.unpack("<ii", pc2[12:20])
    start, rate, samples = struct.unpack("<ffi", pc2[20:32])
    assert (version, points, start, rate, samples) == (1, 36, 1.0, 1.0, 24)
    assert pc2[32:] == frames.astype("<f4").tobytes()
