"""Validate the manifest and build the extension zips with Blender's own extension tool.

    .venv/bin/python scripts/build_extension.py [--output-dir DIR] [--all-platforms]
                                                [--source-dir DIR] [--python PY]
                                                [--kernel-python PY] [--no-kernels]
                                                [--build-cache DIR | --no-build-cache]
    bash scripts/build_extension.sh [...]            # the same, after creating .venv

The zips bundle the Numba and llvmlite wheels for every Python the supported Blenders run (CPython
3.11: Blender 4.2 to 5.0; 3.13: 5.1 and 5.2), for the platforms that have them; Blender's installer
extracts the ones for its own Python and platform. Step 0 downloads the wheels the manifest's
``wheels`` lists into wheels/ (gitignored; ~420 MB once, then reused) with ``pip download
--only-binary=:all: --no-deps --python-version X.Y --platform TAG``, and checks that every platform
has both wheels for every Python the manifest bundles for any platform.
By default the build is ``--split-platforms``: one zip per platform in the manifest's
``platforms`` (dist/<id>-<version>-<platform>.zip, e.g. ..._linux_x64.zip, holding only that
platform's wheels), plus dist/<id>-<version>-any.zip: no wheels and no platform list, for every
other platform or Python (Blender's installer refuses a zip whose wheels are all for other
Pythons; this one installs anywhere in the version range and runs the NumPy kernels, which the
Physics panel says). ``--all-platforms`` builds the single dist/<id>-<version>.zip with every wheel.

Blender's extension command line (what `blender --command extension build|validate` runs) is
``bl_pkg/cli/blender_ext.py`` inside Blender's scripts; the bpy wheel ships the same file under
``site-packages/bpy/<version>/scripts/addons_core/bl_pkg/cli/``. This script runs that file with the
Python of the environment holding bpy (bpy itself is not imported, so it takes a fraction of a
second), passing the tag list Blender passes (``_bpy_internal/extensions/tags.py``) so that tags
are validated exactly as ``blender -c extension build`` validates them. Steps, each failing loudly
(exit code 1 and the tool's message):

1. ``validate`` the source tree's blender_manifest.toml;
2. ``build`` one zip per platform (``--split-platforms``) and the -any zip, or the single
   all-platform zip;
3. check every zip: it holds blender_manifest.toml, __init__.py, addon/, solver/, presets/, and none
   of tests/, benchmarks/, docs/, scripts/, dist/, out/, dot-files (.git, .venv, .ci, ...),
   __pycache__ or *.pyc (the manifest's [build] section leaves them out; this catches a pattern
   that stopped matching); and its wheels are exactly the manifest's wheels for its platform
   (all of them in the all-platform zip, none in the -any zip): a platform zip holds no other
   platform's wheel;
4. ``validate`` every built zip.

From Python (the tests do this): ``build_extension.build(output_dir=...) -> list of zip paths``
(``platform_zip(zips, "linux-x64")`` picks one).
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = os.path.join(ROOT, "dist")

REQUIRED = ("blender_manifest.toml", "__init__.py", "addon/__init__.py", "solver/__init__.py",
            "presets/")
FORBIDDEN_TOP = ("tests", "benchmarks", "docs", "scripts", "dist", "out")
FORBIDDEN_FILES = ("requirements.txt", "pytest.ini")


# Blender platform -> the pip --platform tag that selects its wheel (Numba 0.68.1 / llvmlite 0.50.0
# on PyPI: manylinux_2_27/2_28 x86_64 and aarch64, win_amd64, macosx_12_0_arm64, each for CPython
# 3.11 and 3.13; there is no macOS x86_64 wheel since Numba 0.63, so macos-x64 is not listed, and
# windows-arm64 has 3.13 only, so it is not listed either).
PIP_PLATFORM = {
    "linux-x64": "manylinux_2_28_x86_64",
    "linux-arm64": "manylinux_2_28_aarch64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_14_0_arm64",
}
# the wheel filename's platform tag -> Blender platform (what check_zip expects per zip)
WHEEL_PLATFORM = (("_x86_64", "linux-x64", "manylinux"), ("_aarch64", "linux-arm64", "manylinux"),
                  ("win_amd64", "windows-x64", "win"), ("_arm64", "macos-arm64", "macosx"))
# the zip without wheels or platforms (NumPy kernels), for any platform or Python
ANY = "any"
# build()'s default build cache (kernel_cache.default_build_cache(), read when the build runs)
DEFAULT = object()
# what every platform's zip must carry for each bundled Python
KERNEL_WHEELS = ("numba", "llvmlite")
# the compiled kernels shipped in this machine's platform zip (kernel_cache.py)
KERNEL_CACHE = "kernel_cache"


class BuildError(RuntimeError):
    """The manifest is invalid, the build failed or the zip holds what it must not."""


def wheel_platform(filename):
    """Blender platform of a wheel filename (name-version-py-abi-platform.whl)."""
    tag = os.path.basename(filename)[:-4].split("-")[-1]
    for suffix, platform, prefix in WHEEL_PLATFORM:
        if tag.startswith(prefix) and tag.endswith(suffix):
            return platform
    raise BuildError(f"wheel {filename}: unknown platform tag {tag!r}")


def wheel_python(filename):
    """The CPython version "X.Y" a wheel is built for (its python tag cpXY), else BuildError."""
    tag = os.path.basename(filename)[:-4].split("-")[-3]
    if not (tag.startswith("cp") and tag[2:].isdigit() and len(tag) >= 4):
        raise BuildError(f"wheel {filename}: expected a CPython tag cpXY, got {tag!r}")
    return f"{tag[2]}.{tag[3:]}"


def check_wheel_matrix(wheels, platforms):
    """Every platform carries numba and llvmlite for every Python any platform has them for: a
    zip missing one would install on that Blender and silently run NumPy (or, with none left for
    a Python, be refused by Blender's installer)."""
    have = {(wheel_platform(w), wheel_python(w), os.path.basename(w).split("-")[0])
            for w in wheels}
    pythons = sorted({py for _, py, _ in have})
    missing = [f"{name} for Python {py} on {p}" for p in platforms for py in pythons
               for name in KERNEL_WHEELS if (p, py, name) not in have]
    stray = sorted({p for p, _, _ in have} - set(platforms))
    if missing or stray:
        raise BuildError("blender_manifest.toml wheels: " + "; ".join(
            [f"missing {m}" for m in missing]
            + [f"wheel for unlisted platform {p}" for p in stray]))
    return pythons


def fetch_wheels(source_dir=ROOT, python=sys.executable, log=print):
    """Download the manifest's ``wheels`` that are not in the source tree yet (pip download, one
    call per platform and Python); raise BuildError when pip cannot or fetches another filename."""
    m = manifest(source_dir)
    want = [os.path.normpath(os.path.join(source_dir, w)) for w in m.get("wheels", [])]
    if want:
        check_wheel_matrix(want, m.get("platforms", []))
    missing = {}
    for path in want:
        if not os.path.exists(path):
            missing.setdefault((wheel_platform(path), wheel_python(path)), []).append(path)
    for (platform, py), paths in sorted(missing.items()):
        dest = os.path.dirname(paths[0])
        os.makedirs(dest, exist_ok=True)
        reqs = ["==".join(os.path.basename(p).split("-")[:2]) for p in paths]
        log(f"downloading {', '.join(reqs)} for {platform}, Python {py} into {dest}")
        proc = subprocess.run(
            [python, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
             "--python-version", py, "--platform", PIP_PLATFORM[platform], "-d", dest, *reqs],
            capture_output=True, text=True)
        absent = [p for p in paths if not os.path.exists(p)]
        if proc.returncode != 0 or absent:
            raise BuildError(f"pip download for {platform}, Python {py} failed "
                             f"(exit {proc.returncode}); missing {absent}:\n"
                             f"{(proc.stdout + proc.stderr).strip()[-3000:]}")


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
    """The platform of a --split-platforms zip (``..._linux_x64.zip`` -> "linux-x64"; the zip
    without wheels -> "any"), else None (the all-platform zip)."""
    stem = os.path.basename(path)[:-4]
    for platform in (*PIP_PLATFORM, ANY):
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
                  if platform is None or (platform != ANY and wheel_platform(w) == platform)}
        have = {n for n in names if n.endswith(".whl")}
        problems += [f"missing wheel {w}" for w in sorted(expect - have)]
        problems += [f"must not contain wheel {w}" for w in sorted(have - expect)]
    for req in REQUIRED:
        if not any(n == req or (req.endswith("/") and n.startswith(req)) for n in names):
            problems.append(f"missing {req}")
    platform = zip_platform(path)
    for n in names:
        parts = n.split("/")
        if parts[0] == KERNEL_CACHE and (platform == ANY or (
                platform is not None and parts[1:2] != [platform])):
            problems.append(f"must not contain {n} (kernels of another platform)")
        if (parts[0] in FORBIDDEN_TOP or n in FORBIDDEN_FILES
                or any(p.startswith(".") for p in parts) or "__pycache__" in parts
                or n.endswith((".pyc", ".zip", ".blend1"))):
            problems.append(f"must not contain {n}")
    if problems:
        raise BuildError(f"{path}:\n  " + "\n  ".join(problems))
    return names


def without_wheels(manifest_text):
    """The manifest text without its ``platforms`` and ``wheels`` lists: the -any zip's."""
    text = re.sub(r"(?m)^platforms\s*=.*\n", "", manifest_text)
    return re.sub(r"(?ms)^wheels\s*=\s*\[.*?\]\n", "", text)


def _build_any(python, tool, tag_args, source_dir, output_dir, stem):
    """Build <stem>-any.zip from a copy of the sources whose manifest lists no wheels."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(source_dir, src, ignore=shutil.ignore_patterns(
            ".*", "wheels", "dist", "out", "__pycache__", "tests", "benchmarks", "docs", "scripts"))
        path = os.path.join(src, "blender_manifest.toml")
        with open(path, encoding="utf-8") as fh:
            text = without_wheels(fh.read())
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        out = os.path.join(tmp, "dist")
        os.makedirs(out)
        log = _run(python, tool, ["build", "--source-dir", src, "--output-dir", out, *tag_args])
        target = os.path.join(output_dir, f"{stem}-{ANY}.zip")
        shutil.move(os.path.join(out, stem + ".zip"), target)
        return log


def platform_wheels(m, source_dir, platform):
    """{Python "X.Y": [paths of the manifest ``m``'s wheels for ``platform`` under
    ``source_dir``]}: what the shipped kernels of that platform are compiled with."""
    wheels = {}
    for w in m.get("wheels", []):
        if wheel_platform(w) == platform:
            wheels.setdefault(wheel_python(w), []).append(os.path.normpath(
                os.path.join(source_dir, w)))
    return wheels


def ship_kernels(zips, m, source_dir, pythons, log=print, optional=(), build_cache=None):
    """Compile the kernels (kernel_cache.py) for this machine's platform with each of ``pythons``
    (and of ``optional``, whose failures are logged), through ``build_cache`` (the folder of
    kernel_cache.py's build cache, or None to compile afresh), and add them to that platform's
    zip (or the all-platform zip). Returns what was compiled."""
    import kernel_cache
    cache = kernel_cache._cache_module(source_dir)
    platform = cache.platform_name()
    wheels = platform_wheels(m, source_dir, platform)
    targets = [z for z in zips if zip_platform(z) in (platform, None)]
    if not wheels or not targets:
        log(f"no shipped kernels: this machine ({platform}) has no zip with Numba wheels")
        return []
    with tempfile.TemporaryDirectory() as out:
        _, done = kernel_cache.compile_kernels(source_dir, wheels, out, pythons, log=log,
                                               optional=optional, build_cache=build_cache)
        for z in targets:
            added = kernel_cache.add_to_zip(z, out, platform, cache.CACHE_FILES)
            log(f"{os.path.basename(z)}: {len(added)} shipped kernel files")
    return done


def build(output_dir=DIST, split_platforms=True, python=sys.executable, source_dir=ROOT,
          verbose=False, kernels=True, kernel_pythons=None, build_cache=DEFAULT):
    """Fetch the wheels, validate, build, check and validate the zip(s); return their paths.
    kernels: ship compiled kernels (ship_kernels) built by ``kernel_pythons`` (default: the
    Python given as ``python``, and a pythonX.Y with NumPy on PATH for each other Python the
    zip bundles: kernel_cache.interpreters) in this machine's platform zip, through
    ``build_cache`` (a folder; None: compile afresh; default: kernel_cache.default_build_cache(),
    which VERLET_BUILD_CACHE sets)."""
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
    if split_platforms and m.get("wheels"):
        log(_build_any(python, tool, tag_args, source_dir, output_dir, stem))
    zips = sorted(glob.glob(os.path.join(output_dir, stem + "*.zip")))
    if not zips:
        raise BuildError(f"blender_ext build wrote no {stem}*.zip in {output_dir}")
    if kernels and m.get("wheels"):
        try:
            import kernel_cache
            if kernel_pythons:
                required, optional = list(kernel_pythons), []
            else:
                bundled = {wheel_python(w) for w in m["wheels"]}
                required, optional = kernel_cache.interpreters(python, bundled, log)
            if build_cache is DEFAULT:
                build_cache = kernel_cache.default_build_cache()
            ship_kernels(zips, m, source_dir, required, log, optional, build_cache)
        except RuntimeError as exc:
            raise BuildError(str(exc)) from exc
    for z in zips:
        check_zip(z, m.get("wheels", []))
        log(_run(python, tool, ["validate", *tag_args, z]))
    return zips


def parse_args(argv=None):
    """The command line's options (main's)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output-dir", default=DIST, help="where the zip goes (default: dist/)")
    p.add_argument("--split-platforms", dest="split_platforms", action="store_true",
                   default=True, help="one zip per platform in the manifest and the -any zip "
                                      "(the default)")
    p.add_argument("--all-platforms", dest="split_platforms", action="store_false",
                   help="one zip with every platform's wheels instead")
    p.add_argument("--source-dir", default=ROOT,
                   help="the extension source (default: this repository)")
    p.add_argument("--python", default=sys.executable,
                   help="the Python whose bpy provides the extension tool (default: this one)")
    p.add_argument("--no-kernels", dest="kernels", action="store_false", default=True,
                   help="do not compile the kernels into this machine's platform zip")
    p.add_argument("--kernel-python", action="append", default=None,
                   help="an interpreter whose Python the shipped kernels are compiled for "
                        "(repeatable; default: --python, and a pythonX.Y with NumPy on PATH "
                        "for each other bundled Python)")
    p.add_argument("--build-cache", default=DEFAULT,
                   help="the build cache's folder, where compiled kernels are kept for the "
                        "next build of the same sources (default: $VERLET_BUILD_CACHE, else "
                        "~/.cache/verlet_physics/build)")
    p.add_argument("--no-build-cache", dest="build_cache", action="store_const", const=None,
                   help="compile every kernel afresh, keeping nothing")
    a = p.parse_args(argv)
    if a.build_cache is not DEFAULT and a.build_cache is not None:
        a.build_cache = os.path.abspath(a.build_cache)
    return a


def main(argv=None):
    a = parse_args(argv)
    try:
        zips = build(os.path.abspath(a.output_dir), a.split_platforms, a.python,
                     os.path.abspath(a.source_dir), verbose=True, kernels=a.kernels,
                     kernel_pythons=a.kernel_python, build_cache=a.build_cache)
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
