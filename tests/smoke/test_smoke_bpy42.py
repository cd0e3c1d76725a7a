"""Smoke test on Blender 4.2 LTS, the extension's declared minimum (blender_version_min = "4.2.0"):
install the built linux-x64 zip with Blender 4.2's extension installer into an isolated
user-resources folder, bake once through the installed module and export PC2. This venv has no
Numba, so the compiled kernels can only come from the wheels bundled in the zip: the test checks
that numba was imported from Blender's extension site-packages inside the isolated folder and that
the compiled backend ran; and that a zip without wheels runs (and says it runs) on NumPy.

scripts/test.sh runs this in .venv-bpy42 (requirements-bpy42.txt) after the main suite; under any
other bpy it skips (the main suite's tests/blender/test_install.py covers bpy 5.0).

The zip is the one users get: built by scripts/build_extension.py with the pinned .venv's
extension tool (bpy 5.0) when that venv exists, else with this bpy's own tool; set
VERLET_EXTENSION_ZIP to test a (linux-x64) zip built elsewhere.
"""

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, run_installed_child

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

INSTALLED = "bl_ext.user_default.verlet_physics"


MAIN_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
PYTHON = MAIN_PYTHON if os.path.exists(MAIN_PYTHON) else sys.executable


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory):
    if os.environ.get("VERLET_EXTENSION_ZIP"):
        return os.environ["VERLET_EXTENSION_ZIP"]
    zips = build_extension.build(output_dir=str(tmp_path_factory.mktemp("dist")), python=PYTHON)
    return build_extension.platform_zip(zips, "linux-x64")


def run_child(zip_path, iso, work, *extra):
    """The child Blender 4.2 session installing zip_path into the isolated folder iso."""
    return run_installed_child(["--zip", zip_path, "--workdir", str(work), *extra], iso)


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
    work = tmp_path / "work"
    out = run_child(built_zip, iso, work, "--pc2")

    assert out["bpy"].startswith("4.2.")
    ext_dir = os.path.realpath(iso / "extensions" / "user_default" / "verlet_physics")
    assert out["install"] == ["FINISHED"]
    assert out["package"] == INSTALLED
    assert out["operator_module"] == INSTALLED + ".addon.operators"
    assert out["extension_modules"] and all(
        f.startswith(ext_dir + os.sep) for f in out["extension_modules"])
    assert out["stray_modules"] == []

    # compiled kernels from the bundled wheels: this venv has no Numba, so numba/llvmlite were
    # imported from what Blender's installer extracted into the isolated extensions' site-packages
    assert importlib.util.find_spec("numba") is None
    site = os.path.realpath(iso / "extensions" / ".local" / "lib" / "python3.11" / "site-packages")
    assert out["numba_file"] == os.path.join(site, "numba", "__init__.py")
    assert out["llvmlite_file"] == os.path.join(site, "llvmlite", "__init__.py")
    assert out["backend_status"] == "Solver kernels: compiled (Numba)"
    assert out["sim_backend"] == "numba"
    assert out["kernel_cache_dir"].startswith(os.path.realpath(iso) + os.sep)

    # one bake, on the compiled kernels
    assert out["bake"] == ["FINISHED"] and out["verlet_error"] == "", out
    assert out["bake_compiled"] is True
    # Blender 4.2 ships TBB 2020 (libtbb.so.2); Numba's TBB layer links oneTBB (libtbb.so.12,
    # which Blender 5.0 ships), so here the parallel kernels run on OpenMP (README, Performance)
    assert out["threading_layer"] == "omp"
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


def test_zip_without_wheels_runs_numpy_and_says_so(tmp_path):
    """A platform without bundled wheels (macos-x64, linux-arm64, ...) gets the extension without
    Numba: built here from the sources with the manifest's platforms/wheels removed."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".*", "tests", "benchmarks", "scripts", "dist", "out", "__pycache__", "wheels"))
    text = (src / "blender_manifest.toml").read_text()
    text = re.sub(r"(?m)^platforms = .*\n", "", text)
    text = re.sub(r"(?ms)^wheels = \[.*?\]\n", "", text)
    (src / "blender_manifest.toml").write_text(text)
    (zip_path,) = build_extension.build(output_dir=str(tmp_path / "dist"), python=PYTHON,
                                        source_dir=str(src))
    assert os.path.basename(zip_path) == "verlet_physics-0.1.0.zip"
    iso = tmp_path / "user_resources"
    iso.mkdir()
    out = run_child(zip_path, iso, tmp_path / "work")
    assert out["install"] == ["FINISHED"] and out["package"] == INSTALLED
    assert out["numba_file"] is None
    assert not os.path.exists(iso / "extensions" / ".local" / "lib" / "python3.11"
                              / "site-packages" / "numba")
    assert out["backend_status"] == ("Solver kernels: NumPy (compiled kernels unavailable here: "
                                     "ModuleNotFoundError: No module named 'numba')")
    assert out["sim_backend"] == "numpy"
    assert out["bake"] == ["FINISHED"] and out["verlet_error"] == "", out
    assert out["bake_compiled"] is False
