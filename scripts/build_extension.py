"""Validate the manifest and build the extension zip with Blender's own extension tool.

    .venv/bin/python scripts/build_extension.py [--output-dir DIR] [--split-platforms]
                                                [--source-dir DIR] [--python PY]
    bash scripts/build_extension.sh [...]            # the same, after creating .venv

Blender's extension command line (what `blender --command extension build|validate` runs) is
``bl_pkg/cli/blender_ext.py`` inside Blender's scripts; the bpy wheel ships the same file under
``site-packages/bpy/<version>/scripts/addons_core/bl_pkg/cli/``. This script runs that file with the
Python of the environment holding bpy (bpy itself is not imported, so it takes a fraction of a
second), passing the tag list Blender passes (``_bpy_internal/extensions/tags.py``) so that tags
are validated exactly as ``blender -c extension build`` validates them. Steps, each failing loudly
(exit code 1 and the tool's message):

1. ``validate`` the source tree's blender_manifest.toml;
2. ``build`` dist/<id>-<version>.zip (with ``--split-platforms``: one zip per platform listed in
   the manifest's ``platforms``, for when the zip bundles per-platform wheels);
3. check every zip: it holds blender_manifest.toml, __init__.py, addon/, solver/, presets/, and none
   of tests/, benchmarks/, scripts/, dist/, out/, dot-files (.git, .venv, .ci, ...), __pycache__ or
   *.pyc (the manifest's [build] section leaves them out; this catches a pattern that stopped
   matching);
4. ``validate`` every built zip.

From Python (the tests do this): ``build_extension.build(output_dir=...) -> list of zip paths``.
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


class BuildError(RuntimeError):
    """The manifest is invalid, the build failed or the zip holds what it must not."""


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


def check_zip(path):
    """Raise BuildError listing what is missing from or must not be in the zip ``path``."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    problems = []
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


def build(output_dir=DIST, split_platforms=False, python=sys.executable, source_dir=ROOT,
          verbose=False):
    """Validate, build, check and validate the zip(s); return their paths."""
    tool, tags = find_tool(python)
    tag_args = [f"--valid-tags={tags}"]
    log = print if verbose else (lambda *a: None)
    log(_run(python, tool, ["validate", *tag_args, source_dir]))
    m = manifest(source_dir)
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
        check_zip(z)
        log(_run(python, tool, ["validate", *tag_args, z]))
    return zips


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output-dir", default=DIST, help="where the zip goes (default: dist/)")
    p.add_argument("--split-platforms", action="store_true",
                   help="one zip per platform in the manifest (for bundled per-platform wheels)")
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
