"""Compile the solver kernels at build time, for the zip to ship (solver/kernels/cache.py).

A fresh machine that installs the extension would otherwise compile every kernel on first use
(about a minute on 2 cores; every job of a render farm whose machines start from an image). The
build compiles them once, for the portable CPU targets this machine can run
(solver/kernels/cache.py: PORTABLE_TARGETS), with the Numba and llvmlite wheels the zip bundles,
under the module name an installed extension runs as, and build_extension.py adds the result to
the zip of this machine's platform as ``kernel_cache/<platform>/<import name>/<digest>/<target>/``.

Each Python the zip bundles wheels for is compiled by an interpreter of that Python given to
``compile_kernels`` (by default the build's own and, for the other bundled Pythons, a
``pythonX.Y`` on PATH that has NumPy: ``interpreters``; tests/smoke passes Python 3.11's alone):
the wheels are unpacked into a temporary folder that shadows whatever Numba the interpreter has,
and NumPy comes from the interpreter (Blender brings its own). A Python without an interpreter
here gets no shipped kernels and compiles on first use, as before.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

# the name Blender gives an extension installed from disk or by the command line
# (``blender -c extension install-file -r user_default``): its kernels remember it
INSTALLED_PACKAGE = "bl_ext.user_default.verlet_physics"
ARCHIVE_DIR = "kernel_cache"

_CHILD = r"""
import json, os, sys
stage, out, target = sys.argv[1:4]
sys.path.insert(0, stage)
import importlib
backend = importlib.import_module(sys.argv[4] + ".solver.backend")
cache = importlib.import_module(sys.argv[4] + ".solver.kernels.cache")
backend.configure(cache_dir=out, target=target, shipped_dir=os.path.join(stage, "none"))
seconds = backend.warm_up()
if seconds is None:
    raise SystemExit("compiled backend did not load: " + str(backend.load_error()))
import numba
print("RESULT " + json.dumps({"seconds": seconds, "folder": backend.cache_folder(),
                              "platform": cache.platform_name(), "numba": numba.__version__,
                              "numba_file": numba.__file__, "target": target,
                              "python": "{}.{}".format(*sys.version_info[:2])}))
"""


class KernelCacheError(RuntimeError):
    """The kernels could not be compiled for the zip."""


def python_version(python):
    out = subprocess.run([python, "-c", "import sys; print('{}.{}'.format(*sys.version_info))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _stage(source_dir, root):
    """A folder from which ``INSTALLED_PACKAGE`` imports the source tree's solver (and the
    thin top-level __init__.py, which imports nothing)."""
    pkg = os.path.join(root, *INSTALLED_PACKAGE.split("."))
    os.makedirs(pkg)
    parts = INSTALLED_PACKAGE.split(".")
    for i in range(1, len(parts)):
        open(os.path.join(root, *parts[:i], "__init__.py"), "w").close()
    shutil.copyfile(os.path.join(source_dir, "__init__.py"), os.path.join(pkg, "__init__.py"))
    shutil.copytree(os.path.join(source_dir, "solver"), os.path.join(pkg, "solver"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def _cache_module(source_dir):
    """The source tree's solver/kernels/cache.py (no imports of its own package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "_verlet_kernel_cache", os.path.join(source_dir, "solver", "kernels", "cache.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _features(python, env):
    """The host CPU's features as the bundled llvmlite reports them to ``python``."""
    out = subprocess.run([python, "-c", "import json, llvmlite.binding as b; "
                                        "print(json.dumps(dict(b.get_host_cpu_features())))"],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise KernelCacheError(f"{python}: the bundled llvmlite does not load:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _unpack_wheels(wheels, dest):
    for w in wheels:
        with zipfile.ZipFile(w) as zf:
            zf.extractall(dest)


def interpreters(python, bundled, log=print):
    """The interpreters that compile the shipped kernels when none are named: ``python`` (the
    build's own; its failure fails the build) and, for each other Python in ``bundled`` ("X.Y"
    the zip has Numba wheels for), the first ``pythonX.Y`` on PATH that imports NumPy (Blender
    brings its own NumPy, so any recent one compiles the same kernels); a Python without one
    ships no kernels, and the build says so. Returns (required, optional)."""
    have = python_version(python)
    optional = []
    for py in sorted(set(bundled) - {have}):
        found = shutil.which(f"python{py}")
        ok = found and subprocess.run([found, "-c", "import numpy"],
                                      capture_output=True).returncode == 0
        if ok:
            optional.append(found)
        else:
            log(f"no shipped kernels for Python {py}: no python{py} with NumPy on PATH "
                "(they compile on first use)")
    return [python], optional


def compile_kernels(source_dir, wheels, out_dir, pythons=(sys.executable,), targets=None,
                    log=print, optional=()):
    """Compile every kernel for each interpreter in ``pythons`` and ``optional`` and each
    portable target into ``out_dir`` (layout: <import name>/<digest>/<target>/kernels/), at
    most one compile per core at a time. ``wheels``: {python "X.Y": [numba and llvmlite wheel
    paths]} for this machine's platform. A failure of one of ``pythons`` raises
    KernelCacheError; one of ``optional`` is logged, and whatever it compiled stays (each
    kernel is a file of its own: one missing compiles on first use). Returns (platform, [one
    dict per compile: python, target, seconds]); the targets default to every portable target
    this CPU can run (each compile runs a step, so one it cannot run would crash); none:
    nothing to ship for this CPU."""
    kernel_cache = _cache_module(source_dir)
    platform = kernel_cache.platform_name()
    done, jobs = [], []

    def finish():
        py, target, proc, required = jobs.pop(0)
        try:
            done.append(_finish(py, target, proc, wheels, log))
        except KernelCacheError as exc:
            if required:
                raise
            log(f"no shipped kernels for Python {py}: {exc}")

    with tempfile.TemporaryDirectory() as tmp:
        stage = _stage(source_dir, os.path.join(tmp, "stage"))
        for python, required in [(p, True) for p in pythons] + [(p, False) for p in optional]:
            py = python_version(python)
            if py not in wheels:
                raise KernelCacheError(f"{python} is Python {py}; the zip bundles Numba for "
                                       f"{sorted(wheels)} on {platform}")
            site = os.path.join(tmp, f"site-{py}")
            _unpack_wheels(wheels[py], site)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, stage]),
                       PYTHONDONTWRITEBYTECODE="1")
            for k in ("VERLET_BACKEND", "VERLET_KERNEL_TARGET", "VERLET_CACHE_DIR",
                      "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR"):
                env.pop(k, None)
            try:
                chosen = targets if targets is not None else \
                    kernel_cache.supported_targets(_features(python, env))
            except KernelCacheError as exc:
                if required:
                    raise
                log(f"no shipped kernels for Python {py}: {exc}")
                continue
            for target in chosen:
                cmd = [python, "-c", _CHILD, stage, out_dir, target, INSTALLED_PACKAGE]
                jobs.append((py, target, subprocess.Popen(cmd, env=env, cwd=tmp, text=True,
                                                          stdout=subprocess.PIPE,
                                                          stderr=subprocess.STDOUT), required))
                if len(jobs) >= max(1, os.cpu_count() or 1):
                    finish()
        while jobs:
            finish()
    return platform, done


def _finish(py, target, proc, wheels, log):
    out, _ = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise KernelCacheError(f"compiling the kernels for Python {py}, {target} failed "
                               f"(exit {proc.returncode}):\n{out.strip()[-3000:]}")
    res = json.loads(lines[-1][len("RESULT "):])
    want = os.path.basename(next(w for w in wheels[py] if os.path.basename(w).startswith("numba")))
    if want.split("-")[1] != res["numba"]:
        raise KernelCacheError(f"Python {py} compiled with Numba {res['numba']} "
                               f"({res['numba_file']}), not the bundled {want}")
    log(f"kernels compiled for Python {py}, {target} in {res['seconds']:.1f} s")
    return {"python": py, "target": target, "seconds": res["seconds"]}


def add_to_zip(zip_path, out_dir, platform, suffixes):
    """Append the compiled kernels in ``out_dir`` to ``zip_path`` under
    kernel_cache/<platform>/: the files whose names end in one of ``suffixes`` (the source
    tree's ``cache.CACHE_FILES``: Numba's files and the warm-up's mark, so that the first
    session shows no compile message); returns the archive names added."""
    added = []
    with zipfile.ZipFile(zip_path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        have = set(zf.namelist())
        for folder, _, names in sorted(os.walk(out_dir)):
            for name in sorted(names):
                if not name.endswith(suffixes):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), out_dir).replace(os.sep, "/")
                arc = f"{ARCHIVE_DIR}/{platform}/{rel}"
                if arc not in have:
                    zf.write(os.path.join(folder, name), arc)
                    added.append(arc)
    return added
