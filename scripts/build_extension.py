"""Validate the manifest and build the extension zips with Blender's own extension tool.

    .venv/bin/python scripts/build_extension.py [--output-dir DIR] [--all-platforms]
                                                [--source-dir DIR] [--python PY]
    bash scripts/build_extension.sh [...]            # the same, after creating .venv

The zips bundle the Numba and llvmlite wheels (CPython 3.11, Blender 4.2+) for the platforms that
have them; on any other platform the add-on runs its NumPy kernels and the panel says so. Step 0
downloads the wheels the manifest's ``wheels`` lists into wheels/ (gitignored; ~145 MB once, then
reused) with ``pip download --only-binary=:all: --no-deps --python-version 3.11 --platform TAG``.
By default the build is ``--split-platforms``: one zip per platform in the manifest's
``platforms`` (dist/<id>-<version>-<platform>.zip, e.g. ..._linux_x64.zip, holding only that
platform's wheels); ``--all-platforms`` builds the single dist/<id>-<version>.zip with every wheel.

Blender's extension command line (what `blender --command extension build|validate` runs) is
``bl_pkg/cli/blender_ext.py`` inside Blender's scripts; the bpy wheel ships the same file under
``site-packages/bpy/<version>/scripts/addons_core/bl_pkg/cli/``. This script runs that file with the
Python of the environment holding bpy (bpy itself is not imported, so it takes a fraction of a
second), passing the tag list Blender passes (``_bpy_internal/extensions/tags.py``) so that tags
are validated exactly as ``blender -c extension build`` validates them. Steps, each failing loudly
(exit code 1 and the tool's message):

1. ``validate`` the source tree's blender_manifest.toml;
2. ``build`` one zip per platform (``--split-platforms``), or the single all-platform zip;
3. check every zip: it holds blender_manifest.toml, __init__.py, addon/, solver/, presets/, and none
   of tests/, benchmarks/, scripts/, dist/, out/, dot-files (.git, .venv, .ci, ...), __pycache__ or
   *.pyc (the manifest's [build] section leaves them out; this catches a pattern that stopped
   matching); and its wheels are exactly the manifest's wheels for its platform (all of them in
   the all-platform zip): a platform zip holds no other platform's wheel;
4. ``validate`` every built zip.

From Python (the tests do this): ``build_extension.build(output_dir=...) -> list of zip paths``
(``platform_zip(zips, "linux-x64")`` picks one).
"""

import argparse
import glob
import os
import subprocess
import sys
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = os.path.join(ROOT, "dist")

REQUIRED = ("blender_manifest.toml", "__init__.py", "addon/__init__.py", "solver/__init__.py",
            "presets/")
FORBIDDEN_TOP = ("tests", "benchmarks", "scripts", "dist", "out")
FORBIDDEN_FILES = ("requirements.txt", "pytest.ini")


# Blender platform -> the pip --platform tag that selects its wheel (Numba 0.68.1 / llvmlite 0.50.0
# on PyPI: manylinux_2_27/2_28 x86_64, win_amd64, macosx_12_0_arm64; there is no macOS x86_64
# wheel since Numba 0.63, so macos-x64 is not listed and runs on NumPy).
PIP_PLATFORM = {
    "linux-x64": "manylinux_2_28_x86_64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_14_0_arm64",
}
# the wheel filename's platform tag -> Blender platform (what check_zip expects per zip)
WHEEL_PLATFORM = (("_x86_64", "linux-x64", "manylinux"), ("win_amd64", "windows-x64", "win"),
                  ("_arm64", "macos-arm64", "macosx"))


class BuildError(RuntimeError):
    """The manifest is invalid, the build failed or the zip holds what it must not."""


def wheel_platform(filename):
    """Blender platform of a wheel filename (name-version-py-abi-platform.whl)."""
    tag = os.path.basename(filename)[:-4].split("-")[-1]
    for suffix, platform, prefix in WHEEL_PLATFORM:
        if tag.startswith(prefix) and tag.endswith(suffix):
            return platform
    raise BuildError(f"wheel {filename}: unknown platform tag {tag!r}")


def fetch_wheels(source_dir=ROOT, python=sys.executable, log=print):
    """Download the manifest's ``wheels`` that are not in the source tree yet (pip download, one
    call per platform); raise BuildError when pip cannot or fetches a different filename."""
    m = manifest(source_dir)
    want = [os.path.normpath(os.path.join(source_dir, w)) for w in m.get("wheels", [])]
    missing = {}
    for path in want:
        if not os.path.exists(path):
            missing.setdefault(wheel_platform(path), []).append(path)
    for platform, paths in sorted(missing.items()):
        dest = os.path.dirname(paths[0])
        os.makedirs(dest, exist_ok=True)
        reqs = ["==".join(os.path.basename(p).split("-")[:2]) for p in paths]
        log(f"downloading {', '.join(reqs)} for {platform} into {dest}")
        proc = subprocess.run(
            [python, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
             "--python-version", "3.11", "--platform", PIP_PLATFORM[platform], "-d", dest, *reqs],
            capture_output=True, text=True)
        absent = [p for p in paths if not os.path.exists(p)]
        if proc.returncode != 0 or absent:
            raise BuildError(f"pip download for {platform} failed (exit {proc.returncode}); "
                             f"missing {absent}:\n{(proc.stdout + proc.stderr).strip()[-3000:]}")


def manifest(source_dir=ROOT):
    with open(os.path.join(source_dir, "blender_manifest.toml"), "rb") as fh:
        return tomllib.load(fh)


def _site_packages(python):
    out = subprocess.run(
        [python, "-c", "import importlib.util as u; s = u.find_spec('bpy'); "
                       "print(s.submodule_search_locations[0] if s else '')"],
        capture_output=True, text=True, check=True).stdout.strip()
    if not out:
        raise BuildError(f"{python}: no bpy module in this Python (run scripts/setup.sh)")
    return out


def find_tool(python=sys.executable):
    """(blender_ext.py, tags.py) of the bpy installed for ``python``, without importing bpy."""
    bpy_dir = _site_packages(python)
    hits = sorted(glob.glob(os.path.join(bpy_dir, "*", "scripts", "addons_core", "bl_pkg", "cli",
                                         "blender_ext.py")))
    if not hits:
        raise BuildError(f"no bl_pkg/cli/blender_ext.py under {bpy_dir}")
    tool = hits[-1]
    scripts = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(tool))))
    tags = os.path.join(scripts, "modules", "_bpy_internal", "extensions", "tags.py")
    return tool, (tags if os.path.exists(tags) else "")


def _run(python, tool, args):
    proc = subprocess.run([python, tool, *args], capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise BuildError(f"blender_ext {args[0]} failed (exit {proc.returncode}):\n{out}")
    return out


def zip_platform(path):
    """The platform of a --split-platforms zip (``..._linux_x64.zip`` -> "linux-x64"), else None."""
    stem = os.path.basename(path)[:-4]
    for platform in PIP_PLATFORM:
        if stem.endswith("-" + platform.replace("-", "_")):
            return platform
    return None


def platform_zip(zips, platform):
    """The zip built for ``platform`` out of build()'s list."""
    hits = [z for z in zips if zip_platform(z) == platform]
    if len(hits) != 1:
        raise BuildError(f"no single {platform} zip in {zips}")
    return hits[0]


def check_zip(path, wheels=None):
    """Raise BuildError listing what is missing from or must not be in the zip ``path``.
    ``wheels``: the manifest's wheel paths; the zip must hold exactly those for its platform."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    problems = []
    if wheels is not None:
        platform = zip_platform(path)
        expect = {os.path.normpath(w).replace(os.sep, "/") for w in wheels
                  if platform is None or wheel_platform(w) == platform}
        have = {n for n in names if n.endswith(".whl")}
        problems += [f"missing wheel {w}" for w in sorted(expect - have)]
        problems += [f"must not contain wheel {w}" for w in sorted(have - expect)]
    for req in REQUIRED:
        if not any(n == req or (req.endswith("/") and n.startswith(req)) for n in names):
            problems.append(f"missing {req}")
    for n in names:
        parts = n.split("/")
        if (parts[0] in FORBIDDEN_TOP or n in FORBIDDEN_FILES
                or any(p.startswith(".") for p in parts) or "__pycache__" in parts
                or n.endswith((".pyc", ".zip", ".blend1"))):
            problems.append(f"must not contain {n}")
    if problems:
        raise BuildError(f"{path}:\n  " + "\n  ".join(problems))
    return names


def build(output_dir=DIST, split_platforms=True, python=sys.executable, source_dir=ROOT,
          verbose=False):
    """Fetch the wheels, validate, build, check and validate the zip(s); return their paths."""
    tool, tags = find_tool(python)
    tag_args = [f"--valid-tags={tags}"]
    log = print if verbose else (lambda *a: None)
    m = manifest(source_dir)
    if split_platforms and not m.get("platforms"):
        split_platforms = False             # nothing to split (blender_ext would refuse)
    fetch_wheels(source_dir, python, log)   # validate checks that the listed wheels exist
    log(_run(python, tool, ["validate", *tag_args, source_dir]))
    os.makedirs(output_dir, exist_ok=True)
    stem = f"{m['id']}-{m['version']}"
    for old in glob.glob(os.path.join(output_dir, stem + "*.zip")):
        os.remove(old)                      # a stale platform zip must not pass for a new one
    args = ["build", "--source-dir", source_dir, "--output-dir", output_dir, *tag_args]
    if split_platforms:
        args.append("--split-platforms")
    log(_run(python, tool, args))
    zips = sorted(glob.glob(os.path.join(output_dir, stem + "*.zip")))
    if not zips:
        raise BuildError(f"blender_ext build wrote no {stem}*.zip in {output_dir}")
    for z in zips:
        check_zip(z, m.get("wheels", []))
        log(_run(python, tool, ["validate", *tag_args, z]))
    return zips


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output-dir", default=DIST, help="where the zip goes (default: dist/)")
    p.add_argument("--split-platforms", dest="split_platforms", action="store_true",
                   default=True, help="one zip per platform in the manifest (the default)")
    p.add_argument("--all-platforms", dest="split_platforms", action="store_false",
                   help="one zip with every platform's wheels instead")
    p.add_argument("--source-dir", default=ROOT,
                   help="the extension source (default: this repository)")
    p.add_argument("--python", default=sys.executable,
                   help="the Python whose bpy provides the extension tool (default: this one)")
    a = p.parse_args(argv)
    try:
        zips = build(os.path.abspath(a.output_dir), a.split_platforms, a.python,
                     os.path.abspath(a.source_dir), verbose=True)
    except BuildError as exc:
        print(f"build_extension: {exc}", file=sys.stderr)
        return 1
    for z in zips:
        with zipfile.ZipFile(z) as zf:
            n = len(zf.namelist())
        print(f"built {z} ({os.path.getsize(z)} bytes, {n} files; manifest and zip validated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
