"""Smoke tests on the older Blenders the extension supports, each in its own environment:
Blender 4.2 LTS (the declared minimum, blender_version_min = "4.2.0") and Blender 5.0, both on
Python 3.11. Install the built linux-x64 zip with that Blender's extension installer into an
isolated user-resources folder, bake once through the installed module and export PC2. These venvs
have no Numba, so the compiled kernels can only come from the wheels bundled in the zip: the test
checks that numba was imported from Blender's extension site-packages inside the isolated folder
and that the compiled backend ran; and that the -any zip (no wheels) installs, runs on NumPy and
says why.

scripts/test.sh runs this in .venv-bpy50 (requirements-bpy50.txt) and .venv-bpy42
(requirements-bpy42.txt) after the main suite; under any other bpy it skips (the main suite's
tests/blender/test_install.py covers bpy 5.2).

The zips are the ones users get: built by scripts/build_extension.py with the pinned .venv's
extension tool (bpy 5.2) when that venv exists, else with this bpy's own tool; set
VERLET_EXTENSION_DIST to a folder of zips built elsewhere (and VERLET_EXTENSION_DIST_KERNELS=1 when
they must carry this Python's compiled kernels, as scripts/test.sh's shared build does).
"""

import importlib.metadata
import importlib.util
import json
import os
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import ROOT, run_installed_child

try:
    BPY_VERSION = importlib.metadata.version("bpy")
except importlib.metadata.PackageNotFoundError:
    BPY_VERSION = None
# the smoke tracks: bpy release -> the thread pool its parallel kernels run on. Blender 4.2
# ships TBB 2020 (libtbb.so.2); Numba's TBB layer links oneTBB (libtbb.so.12, which Blender 5.0
# ships), so on 4.2 they run on OpenMP (README, Performance)
TRACKS = {"4.2": "omp", "5.0": "tbb"}
TRACK = next((t for t in TRACKS if (BPY_VERSION or "").startswith(t + ".")), None)
pytestmark = pytest.mark.skipif(
    TRACK is None,
    reason=f"smoke tracks: need bpy 4.2.x or 5.0.x (this is {BPY_VERSION}); "
           "scripts/test.sh runs them in .venv-bpy42 and .venv-bpy50")
PYTHON_DIR = "python{}.{}".format(*sys.version_info[:2])

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import build_extension  # noqa: E402

INSTALLED = "bl_ext.user_default.verlet_physics"


MAIN_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
PYTHON = MAIN_PYTHON if os.path.exists(MAIN_PYTHON) else sys.executable


@pytest.fixture(scope="module")
def built_zips(tmp_path_factory):
    if os.environ.get("VERLET_EXTENSION_DIST"):
        folder = os.environ["VERLET_EXTENSION_DIST"]
        return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".zip"))
    # the shipped kernels are compiled by this track's Python (3.11), with the zip's wheels
    return build_extension.build(output_dir=str(tmp_path_factory.mktemp("dist")), python=PYTHON,
                                 kernel_pythons=(sys.executable,))


@pytest.fixture(scope="module")
def built_zip(built_zips):
    return build_extension.platform_zip(built_zips, "linux-x64")


def run_child(zip_path, iso, work, *extra):
    """The child Blender 4.2 session installing zip_path into the isolated folder iso."""
    return run_installed_child(["--zip", zip_path, "--workdir", str(work), *extra], iso)


def test_this_blenders_tool_accepts_every_zip(built_zips):
    """This Blender's own extension tool validates every zip's manifest (what its installer
    reads): the four platform zips and the -any zip."""
    tool, _ = build_extension.find_tool(sys.executable)
    assert os.sep + TRACK + os.sep in tool
    assert len(built_zips) == 5
    for z in built_zips:
        proc = subprocess.run([sys.executable, tool, "validate", z],
                              capture_output=True, text=True)
        assert proc.returncode == 0, z + "\n" + proc.stdout + proc.stderr


def test_install_bake_export_pc2(built_zip, tmp_path):
    iso = tmp_path / "user_resources"
    iso.mkdir()
    work = tmp_path / "work"
    out = run_child(built_zip, iso, work, "--pc2")

    assert out["bpy"].startswith(TRACK + ".")
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
    site = os.path.realpath(iso / "extensions" / ".local" / "lib" / PYTHON_DIR / "site-packages")
    assert out["numba_file"] == os.path.join(site, "numba", "__init__.py")
    assert out["llvmlite_file"] == os.path.join(site, "llvmlite", "__init__.py")
    assert out["backend_status"] == "Solver kernels: compiled (Numba)"
    assert out["sim_backend"] == "numba"
    assert out["kernel_cache_dir"].startswith(os.path.realpath(iso) + os.sep)
    # the kernels this track compiled into the zip (scripts/kernel_cache.py) loaded on this
    # fresh machine: nothing compiled
    py_tag = "py{}{}".format(*sys.version_info[:2])
    with zipfile.ZipFile(built_zip) as zf:
        shipped = [n for n in zf.namelist()
                   if n.startswith("kernel_cache/linux-x64/") and f".{py_tag}." in n]
    # zips built elsewhere may lack this Python's kernels, unless the builder says they carry
    # them (scripts/test.sh builds one set for the tracks of the same Python and NumPy)
    if not os.environ.get("VERLET_EXTENSION_DIST") or \
            os.environ.get("VERLET_EXTENSION_DIST_KERNELS") == "1":
        assert shipped
    if shipped and out["portable_targets"]:
        assert out["kernel_target"] == {"target": "x86-64-v3", "seeded": len(shipped)}, out
        assert out["kernels_compiled"] == 0 and out["kernels_loaded"] >= 1, out
        # with the build's warm-up mark: the first session shows no compile message
        assert out["will_compile"] is False, out

    # one bake, on the compiled kernels
    assert out["bake"] == ["FINISHED"] and out["verlet_error"] == "", out
    assert out["bake_compiled"] is True
    assert out["threading_layer"] == TRACKS[TRACK]
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


def test_zip_without_wheels_runs_numpy_and_says_so(built_zips, tmp_path):
    """The -any zip (no wheels, no platform list: for a platform or Python the platform zips do
    not carry) installs, bakes on the NumPy kernels, and the panel's kernels line says why."""
    zip_path = build_extension.platform_zip(built_zips, "any")
    assert os.path.basename(zip_path) == "verlet_physics-0.1.0-any.zip"
    iso = tmp_path / "user_resources"
    iso.mkdir()
    out = run_child(zip_path, iso, tmp_path / "work")
    assert out["install"] == ["FINISHED"] and out["package"] == INSTALLED
    assert out["numba_file"] is None
    assert not os.path.exists(iso / "extensions" / ".local" / "lib" / PYTHON_DIR
                              / "site-packages" / "numba")
    py = "{}.{}".format(*sys.version_info[:2])
    assert out["backend_status"] == ("Solver kernels: NumPy (no compiled kernels for "
                                     f"Python {py} on linux-x64)")
    assert out["sim_backend"] == "numpy"
    assert out["bake"] == ["FINISHED"] and out["verlet_error"] == "", out
    assert out["bake_compiled"] is False
