"""The extension as users get it, on Blender 5.2 LTS (the main environment, Python 3.13): build the
per-platform zips with Blender's extension tool, install the linux-x64 one (with its bundled
Numba/llvmlite wheels) with Blender's extension installer into an isolated user-resources folder,
enable it and bake through the installed module; its cache must equal, bit for bit, the one the
source tree bakes, and the compiled kernels from the bundled cp313 wheels ran (this venv's own
Numba is hidden from the installed session: Blender's Python has none). tests/smoke/test_smoke.py
does the same on Blender 4.2 and 5.0 (Python 3.11), and the -any zip without wheels there.

The Blender sessions run in child processes (tests/smoke/installed_extension.py) because Blender
reads BLENDER_USER_RESOURCES only when bpy is imported; the child prints one ``RESULT {json}``
line that these tests assert on.
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import numpy as np
import pytest

from conftest import ROOT, early_popen, import_bpy, run_installed_child, take_early

import_bpy()
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import build_extension  # noqa: E402

INSTALLED = "bl_ext.user_default.verlet_physics"


def run_child(args, resources, timeout=600):
    """The child Blender session with its own user-resources folder; its RESULT."""
    return run_installed_child(args, resources, timeout)


def read_cache(path):
    """(header, frames) of a .vpc cache, by the layout documented in addon/cache.py."""
    with open(path, "rb") as fh:
        blob = fh.read()
    assert blob[:8] == b"VERLETC1", path
    n = int.from_bytes(blob[8:12], "little")
    header = json.loads(blob[12:12 + n])
    frames = np.frombuffer(blob[12 + n:], dtype="<f4")
    count = header["frame_end"] - header["frame_start"] + 1
    return header, frames.reshape(count, header["vertex_count"], 3)


EARLY_FIXTURE = "built_zips"


def start_early(tmp_path_factory):
    """The build (scripts/build_extension.py, as a release is built), started when the tests are
    collected (conftest.early_popen): it compiles the shipped kernels for each Python, about
    four minutes each. scripts/test.sh names the folder, so that the smoke tracks install these
    same zips instead of building and compiling them again. Returns its process."""
    out = os.environ.get("VERLET_TEST_DIST_DIR") or str(tmp_path_factory.mktemp("dist"))
    return early_popen(
        [sys.executable, build_extension.__file__, "--output-dir", out],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def built_zips(tmp_path_factory):
    """The zips' paths, as build_extension.build returns them (its command prints each)."""
    proc = take_early(__name__, tmp_path_factory)
    out, err = proc.communicate()
    zips = [ln[len("built "):].rsplit(" (", 1)[0] for ln in out.splitlines()
            if ln.startswith("built ")]
    assert proc.returncode == 0 and zips, \
        f"build_extension.py failed (exit {proc.returncode}):\n{out[-3000:]}\n{err[-3000:]}"
    return zips


@pytest.fixture(scope="module")
def built_zip(built_zips):
    return build_extension.platform_zip(built_zips, "linux-x64")


def test_one_zip_per_platform_with_only_its_wheels(built_zips):
    """Each platform zip carries Numba and llvmlite for CPython 3.11 (Blender 4.2 to 5.0) and
    3.13 (5.1, 5.2); the -any zip carries none and names no platform."""
    m = build_extension.manifest()
    assert m["platforms"] == ["linux-x64", "linux-arm64", "windows-x64", "macos-arm64"]
    assert (m["blender_version_min"], m["blender_version_max"]) == ("4.2.0", "5.3.0")
    assert len(m["wheels"]) == 16
    tags = {"linux-x64": "manylinux_2_27_x86_64.manylinux_2_28_x86_64",
            "linux-arm64": "manylinux_2_27_aarch64.manylinux_2_28_aarch64",
            "windows-x64": "win_amd64", "macos-arm64": "macosx_12_0_arm64"}
    assert sorted(os.path.basename(z) for z in built_zips) == sorted(
        [f"verlet_physics-{m['version']}-{p.replace('-', '_')}.zip" for p in m["platforms"]]
        + [f"verlet_physics-{m['version']}-any.zip"])
    for platform, tag in tags.items():
        with zipfile.ZipFile(build_extension.platform_zip(built_zips, platform)) as zf:
            wheels = sorted(n for n in zf.namelist() if n.endswith(".whl"))
            toml = zf.read("blender_manifest.toml").decode()
        assert wheels == [f"wheels/{name}-{ver}-{py}-{py}-{tag}.whl"
                          for name, ver in (("llvmlite", "0.50.0"), ("numba", "0.68.1"))
                          for py in ("cp311", "cp313")], (platform, wheels)
        # Blender's build wrote the zip's own platform into its manifest (what the installer reads)
        assert f'platforms = ["{platform}"]' in toml
        assert 'blender_version_max = "5.3.0"' in toml
    with zipfile.ZipFile(build_extension.platform_zip(built_zips, "any")) as zf:
        assert not [n for n in zf.namelist() if n.endswith(".whl")]
        toml = zf.read("blender_manifest.toml").decode()
    parsed = tomllib.loads(toml)
    assert "platforms" not in parsed and "wheels" not in parsed, parsed
    assert (parsed["blender_version_min"], parsed["blender_version_max"]) == ("4.2.0", "5.3.0")


def test_build_cache_folder_and_key():
    """The build cache (scripts/kernel_cache.py) sits in the user's cache unless
    VERLET_BUILD_CACHE names another folder or turns it off, and its key changes with the
    Python, either bundled wheel and NumPy, and with nothing else (the folders inside key the
    import name, the kernel sources and the target)."""
    import kernel_cache
    home = os.path.expanduser("~")
    assert kernel_cache.default_build_cache({}) == os.path.join(
        home, ".cache", "verlet_physics", "build")
    assert kernel_cache.default_build_cache({"XDG_CACHE_HOME": "/x"}) == "/x/verlet_physics/build"
    assert kernel_cache.default_build_cache({"VERLET_BUILD_CACHE": "/y", "XDG_CACHE_HOME": "/x"})\
        == "/y"
    assert kernel_cache.default_build_cache({"VERLET_BUILD_CACHE": "0"}) is None
    assert kernel_cache.default_build_cache({"VERLET_BUILD_CACHE": ""}) is None
    wheels = ["/w/numba-0.68.1-cp313-cp313-manylinux_2_28_x86_64.whl",
              "/w/llvmlite-0.50.0-cp313-cp313-manylinux_2_28_x86_64.whl"]
    key = kernel_cache.build_cache_key("linux-x64", "3.13", wheels, "2.3.5")
    assert key.startswith("linux-x64" + os.sep + "py3.13-llvmlite_0.50.0") and "numpy_2.3.5" in key
    assert kernel_cache.build_cache_key("linux-x64", "3.13", wheels[::-1], "2.3.5") == key
    others = {kernel_cache.build_cache_key("linux-x64", "3.11", wheels, "2.3.5"),
              kernel_cache.build_cache_key("linux-x64", "3.13", wheels, "1.26.4"),
              kernel_cache.build_cache_key("linux-x64", "3.13",
                                           [wheels[0].replace("0.68.1", "0.68.2"), wheels[1]],
                                           "2.3.5"),
              kernel_cache.build_cache_key("linux-x64", "3.13",
                                           [wheels[0], wheels[1].replace("0.50.0", "0.50.1")],
                                           "2.3.5"),
              kernel_cache.build_cache_key("linux-arm64", "3.13", wheels, "2.3.5")}
    assert len(others) == 5 and key not in others


def test_build_cache_options_and_the_compiling_childs_environment():
    """--build-cache takes a folder (made absolute: the children run elsewhere),
    --no-build-cache none, and neither the default; a compiling child sees none of the shell's
    NUMBA_ settings (which Numba's cache does not key by) nor the solver's own."""
    import kernel_cache
    assert build_extension.parse_args([]).build_cache is build_extension.DEFAULT
    assert build_extension.parse_args(["--no-build-cache"]).build_cache is None
    assert build_extension.parse_args(["--build-cache", "bc"]).build_cache == \
        os.path.abspath("bc")
    env = kernel_cache.child_env({"NUMBA_OPT": "0", "NUMBA_CPU_NAME": "znver3", "HOME": "/h",
                                  "VERLET_BACKEND": "numpy", "VERLET_CACHE_DIR": "/c",
                                  "PYTHONPATH": "/elsewhere"}, "/site", "/stage")
    assert env == {"HOME": "/h", "PYTHONPATH": os.pathsep.join(["/site", "/stage"]),
                   "PYTHONDONTWRITEBYTECODE": "1"}, env


def test_build_cache_keeps_the_newest_digests(tmp_path):
    """Pruning keeps the digest just used and the newest others, BUILD_CACHE_KEEP in all."""
    import kernel_cache
    for i, name in enumerate(["a", "b", "c", "d", "e"]):
        (tmp_path / name / "x86-64-v3").mkdir(parents=True)
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    kernel_cache._prune(str(tmp_path), "a", keep=3)     # "a", the oldest, was just used
    assert sorted(os.listdir(tmp_path)) == ["a", "d", "e"]
    kernel_cache._prune(str(tmp_path), "d", keep=1)
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_a_build_cache_that_cannot_be_written_is_left_alone(tmp_path):
    """A build cache folder that cannot be made (here a file stands where it would go; as root,
    permissions would not stop the write) is said in the log and not used: the build then
    compiles afresh into its own folder, as without a cache."""
    import kernel_cache
    (tmp_path / "cache").write_text("not a folder")
    logged = []
    assert kernel_cache._writable(str(tmp_path / "cache" / "linux-x64"), logged.append) is None
    assert len(logged) == 1 and "cannot be written" in logged[0], logged
    assert kernel_cache._writable(str(tmp_path / "ok" / "linux-x64"), logged.append) == \
        str(tmp_path / "ok" / "linux-x64")
    assert os.listdir(tmp_path / "ok" / "linux-x64") == [] and len(logged) == 1


def test_the_next_build_loads_the_kernels_from_the_build_cache(built_zip, tmp_path):
    """The build compiled its kernels through the build cache (here the default one, as for
    any build): a second build of the same sources compiles no kernel, takes seconds, and
    ships the same files, byte for byte."""
    import kernel_cache
    build_cache = kernel_cache.default_build_cache()
    if build_cache is None:
        pytest.skip("VERLET_BUILD_CACHE=0 turns the build cache off")
    if kernel_cache._writable(build_cache, lambda m: None) is None:
        pytest.skip(f"the build cache {build_cache} cannot be written: the build compiled "
                    "afresh")
    wheels = build_extension.platform_wheels(build_extension.manifest(), ROOT, "linux-x64")
    py = "{}.{}".format(*sys.version_info[:2])
    out = tmp_path / "kernels"
    logged = []
    _, done = kernel_cache.compile_kernels(ROOT, {py: wheels[py]}, str(out), [sys.executable],
                                           log=logged.append, build_cache=build_cache)
    assert done and all(d["compiled"] == 0 and d["loaded"] > 0 for d in done), (done, logged)
    assert all("loaded from the build cache" in m for m in logged), logged
    tag = f".py{py.replace('.', '')}."
    again = {}
    for folder, _, names in os.walk(out):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), out).replace(os.sep, "/")
            again[f"kernel_cache/linux-x64/{rel}"] = (out / rel).read_bytes()
    with zipfile.ZipFile(built_zip) as zf:
        shipped = {n: zf.read(n) for n in zf.namelist()
                   if n.startswith("kernel_cache/linux-x64/") and tag in n}
    assert again and sorted(again) == sorted(shipped)
    assert all(again[n] == shipped[n] for n in shipped)


def test_kernels_ship_for_every_python_with_an_interpreter(built_zips):
    """The build compiles the kernels for every Python the zip bundles Numba for that has an
    interpreter here (its own, 3.13, always; 3.11 where a python3.11 with NumPy is on PATH:
    kernel_cache.interpreters), into this machine's platform zip alone."""
    import kernel_cache
    _, optional = kernel_cache.interpreters(sys.executable, {"3.11", "3.13"}, log=lambda m: None)
    expect = {"py313"} | {"py" + kernel_cache.python_version(p).replace(".", "")
                          for p in optional}
    for z in built_zips:
        with zipfile.ZipFile(z) as zf:
            names = [n for n in zf.namelist() if n.startswith("kernel_cache/")]
        if build_extension.zip_platform(z) != "linux-x64":
            assert names == [], z
            continue
        tags = {n.rsplit(".", 3)[-3] if n.endswith(".nbc") else n.rsplit(".", 2)[-2]
                for n in names}
        assert tags == expect, (sorted(tags), optional)


def test_every_platform_must_carry_every_python(tmp_path):
    """A manifest that leaves out one platform's wheel for one Python fails the build, naming it
    (that zip would install there and quietly run NumPy)."""
    wheels = build_extension.manifest()["wheels"]
    platforms = build_extension.manifest()["platforms"]
    assert build_extension.check_wheel_matrix(wheels, platforms) == ["3.11", "3.13"]
    short = [w for w in wheels if "numba-0.68.1-cp313-cp313-win_amd64" not in w]
    with pytest.raises(build_extension.BuildError,
                       match="missing numba for Python 3.13 on windows-x64"):
        build_extension.check_wheel_matrix(short, platforms)
    with pytest.raises(build_extension.BuildError, match="unlisted platform linux-arm64"):
        build_extension.check_wheel_matrix(wheels, [p for p in platforms if p != "linux-arm64"])


def test_zip_holds_the_extension_and_no_dev_files(built_zip):
    assert os.path.basename(built_zip) == "verlet_physics-{}-linux_x64.zip".format(
        build_extension.manifest()["version"])
    with zipfile.ZipFile(built_zip) as zf:
        names = zf.namelist()
    tops = {n.split("/")[0] for n in names}
    assert {"blender_manifest.toml", "__init__.py", "addon", "solver", "presets"} <= tops
    for bad in ("tests", "benchmarks", "docs", "scripts", ".venv", ".venv-bpy42", ".git", ".ci",
                "dist", "out", ".pytest_cache", "requirements.txt", "pytest.ini"):
        assert bad not in tops, bad
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # every module of the source tree ships (a pattern must not drop product code)
    for pkg in ("addon", "solver"):
        for f in os.listdir(os.path.join(ROOT, pkg)):
            if f.endswith(".py"):
                assert f"{pkg}/{f}" in names, f"{pkg}/{f} missing from the zip"


def test_invalid_manifest_fails_loudly(tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".*", "tests", "benchmarks", "docs", "scripts", "dist", "out", "__pycache__",
        "wheels"))
    (src / "wheels").symlink_to(os.path.join(ROOT, "wheels"))    # fetched by the fixtures
    text = (src / "blender_manifest.toml").read_text()
    (src / "blender_manifest.toml").write_text(text.replace('blender_version_min = "4.2.0"',
                                                            'blender_version_min = "4.2"'))
    with pytest.raises(build_extension.BuildError, match="blender_version_min"):
        build_extension.build(output_dir=str(tmp_path / "dist"), source_dir=str(src))
    assert not os.path.exists(tmp_path / "dist" / "verlet_physics-0.1.0.zip")
    # the command line: exit code 1 and the tool's message on stderr
    script = os.path.join(ROOT, "scripts", "build_extension.py")
    proc = subprocess.run([sys.executable, script, "--source-dir", str(src),
                           "--output-dir", str(tmp_path / "d2")], capture_output=True, text=True)
    assert proc.returncode == 1 and "blender_version_min" in proc.stderr, proc.stderr


def test_installed_zip_bakes_like_the_source_tree(built_zip, tmp_path):
    iso = tmp_path / "user_resources"
    iso.mkdir()
    inst = run_child(["--zip", built_zip, "--workdir", tmp_path / "installed",
                      "--hide-host-numba"], iso)

    # installed by Blender's installer into the isolated folder, enabled, and what ran
    ext_dir = os.path.realpath(iso / "extensions" / "user_default" / "verlet_physics")
    assert inst["install"] == ["FINISHED"]
    assert inst["extensions_dir"] == os.path.realpath(iso / "extensions")
    assert inst["package"] == INSTALLED
    assert inst["package_file"] == os.path.join(ext_dir, "__init__.py")
    assert inst["operator_module"] == INSTALLED + ".addon.operators"
    assert inst["operator_file"].startswith(ext_dir + os.sep)
    assert inst["extension_modules"] and all(
        f.startswith(ext_dir + os.sep) for f in inst["extension_modules"])
    assert inst["stray_modules"] == []
    assert not any(f.startswith(ROOT + os.sep) for f in inst["extension_modules"])
    assert os.path.exists(os.path.join(ext_dir, "blender_manifest.toml"))
    assert not os.path.exists(os.path.join(ext_dir, "tests"))
    assert inst["bake"] == ["FINISHED"] and inst["verlet_error"] == "", inst
    assert inst["cache"].startswith(str(tmp_path / "installed")), inst["cache"]

    # the compiled kernels ran from the bundled wheels: Blender's installer extracted this
    # Python's (cp313) into the isolated extensions' site-packages, and numba came from there
    py_dir = "python{}.{}".format(*sys.version_info[:2])
    site = os.path.realpath(iso / "extensions" / ".local" / "lib" / py_dir / "site-packages")
    assert inst["numba_file"] == os.path.join(site, "numba", "__init__.py")
    assert inst["llvmlite_file"] == os.path.join(site, "llvmlite", "__init__.py")
    dist = sorted(f for f in os.listdir(site) if f.endswith(".dist-info"))
    assert dist == ["llvmlite-0.50.0.dist-info", "numba-0.68.1.dist-info"], dist
    assert inst["backend_status"] == "Solver kernels: compiled (Numba)"
    assert inst["sim_backend"] == "numba" and inst["bake_compiled"] is True
    # inside Blender the parallel kernels share the TBB that Blender loaded (README, Performance)
    assert inst["threading_layer"] == "tbb"
    assert inst["kernel_cache_dir"].startswith(os.path.realpath(iso) + os.sep)

    # the zip ships the kernels compiled for a portable CPU (scripts/kernel_cache.py) under the
    # name the installed extension runs as: this fresh machine copied them into its cache and
    # compiled nothing (the source tree's session below runs kernels tuned for this CPU, and
    # its bake must carry the same bits)
    with zipfile.ZipFile(built_zip) as zf:
        shipped = [n for n in zf.namelist()
                   if n.startswith(f"kernel_cache/linux-x64/{INSTALLED}.solver/")]
    py_tag = "py{}{}".format(*sys.version_info[:2])
    assert shipped and all("/x86-64-v3/kernels/" in n for n in shipped), shipped[:5]
    shipped = [n for n in shipped if f".{py_tag}." in n]          # this Python's
    # with the build's warm-up mark, so that the first session shows no compile message
    assert any(n.endswith(".done") for n in shipped), shipped
    assert os.path.isdir(os.path.join(ext_dir, "kernel_cache", "linux-x64"))
    if inst["portable_targets"]:          # this CPU can run x86-64-v3 code
        assert inst["kernel_target"] == {"target": "x86-64-v3", "seeded": len(shipped)}, inst
        assert inst["kernels_compiled"] == 0 and inst["kernels_loaded"] >= 1, inst
        assert inst["will_compile"] is False, inst     # the mark came with them
        assert inst["kernel_cache_dir"].endswith(os.sep + "x86-64-v3")

    # the same scene baked by the source tree (its own isolated user folder)
    iso_src = tmp_path / "user_resources_src"
    iso_src.mkdir()
    src = run_child(["--source", ROOT, "--workdir", tmp_path / "source"], iso_src)
    assert src["operator_file"] == os.path.join(os.path.realpath(ROOT), "addon", "operators.py")
    assert src["bake"] == ["FINISHED"] and src["verlet_error"] == "", src
    # kernels tuned for this CPU (a checkout ships none; compiled now or in an earlier run)
    assert src["kernel_target"] == {"target": "host", "seeded": 0}, src

    h_inst, f_inst = read_cache(inst["cache"])
    h_src, f_src = read_cache(src["cache"])
    # every bake issues its object a cache id of its own (addon/ids.py); the rest is equal
    assert len(h_inst.pop("object_id")) == 12 and len(h_src.pop("object_id")) == 12
    assert h_inst == h_src
    assert f_inst.shape == (24, 36, 3)
    assert f_inst.tobytes() == f_src.tobytes()          # bit-identical, not just close
    # and it simulated: the cloth fell towards the plane and did not go through it
    assert f_inst[-1, :, 2].max() < f_inst[0, :, 2].min() - 0.1
    assert f_inst[-1, :, 2].min() > -1e-3
