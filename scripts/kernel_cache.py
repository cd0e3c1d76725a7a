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

A compile takes 5 to 11 minutes of one core, so each compile goes through a **build cache**
(``default_build_cache``: ``$XDG_CACHE_HOME/verlet_physics/build``, or ``VERLET_BUILD_CACHE``;
``0`` turns it off): the child compiles into a folder keyed by everything that makes its files,
besides what the folder inside already keys (the import name and the kernel sources' digest,
backend._cache_key, and the target): the platform, the Python, the bundled Numba and llvmlite
wheels and the interpreter's NumPy. A build of kernel sources built before loads them there
(Numba checks each kernel against its source's content hash and its CPU key, and compiles any
it lacks, as in a user's cache) and copies them to the zip, in about a second: the same bits, as
the files are the ones that compile wrote. Only the newest ``BUILD_CACHE_KEEP`` digests of each
key stay.
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
# kernel-source digests kept per build-cache key (a digest folder holds 13 to 18 MB)
BUILD_CACHE_KEEP = 3

_CHILD = r"""
import json, os, sys
stage, out, target = sys.argv[1:4]
sys.path.insert(0, stage)
import importlib
backend = importlib.import_module(sys.argv[4] + ".solver.backend")
cache = importlib.import_module(sys.argv[4] + ".solver.kernels.cache")
backend.configure(cache_dir=out, target=target, shipped_dir=os.path.join(stage, "none"))
# in use from now (scripts/kernel_cache.py _prune: another build's pruning keeps it)
if backend.cache_folder():
    os.makedirs(backend.cache_folder(), exist_ok=True)
    os.utime(os.path.dirname(backend.cache_folder()))
seconds = backend.warm_up()
if seconds is None:
    raise SystemExit("compiled backend did not load: " + str(backend.load_error()))
import numba
loaded, compiled = backend.cache_stats()
print("RESULT " + json.dumps({"seconds": seconds, "folder": backend.cache_folder(),
                              "loaded": loaded, "compiled": compiled,
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
    """The host CPU's features as the bundled llvmlite reports them to ``python``, and the
    version of ``python``'s NumPy: (features, numpy version)."""
    out = subprocess.run([python, "-c", "import json, numpy, llvmlite.binding as b; "
                                        "print(json.dumps([dict(b.get_host_cpu_features()), "
                                        "numpy.__version__]))"],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise KernelCacheError(f"{python}: the bundled llvmlite or this Python's NumPy does "
                               f"not load:\n{out.stderr}")
    features, numpy_version = json.loads(out.stdout.strip().splitlines()[-1])
    return features, numpy_version


def default_build_cache(environ=None):
    """The build cache's folder (module docstring): ``VERLET_BUILD_CACHE`` when set ("0" or
    "": none), else ``verlet_physics/build`` under ``XDG_CACHE_HOME`` or ``~/.cache``, beside
    the user's kernel cache (solver/backend.py default_cache_dir, which this script does not
    import: it loads no module of the package it builds)."""
    environ = os.environ if environ is None else environ
    if "VERLET_BUILD_CACHE" in environ:
        value = environ["VERLET_BUILD_CACHE"]
        return None if value in ("", "0") else os.path.abspath(value)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "verlet_physics", "build")


def build_cache_key(platform, python, wheels, numpy_version):
    """The build cache's subfolder for one interpreter: what makes a compile's files besides
    the kernel sources, the import name and the target (which the folders inside key):
    "linux-x64/py3.13-llvmlite_0.50.0_cp313_..._x86_64-numba_0.68.1_cp313_..._x86_64-numpy_2.3.5"
    (the wheels' file names, sorted)."""
    stems = sorted(os.path.basename(w)[:-len(".whl")] for w in wheels)
    name = "-".join([f"py{python}"] + [s.replace("-", "_") for s in stems] +
                    [f"numpy_{numpy_version}"])
    return os.path.join(platform, name)


def _writable(folder, log):
    """``folder``, created, when this process can write into it; else None, said in the log
    (a read-only home on a farm machine: the build then compiles afresh, as without a cache)."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        log(f"the build cache {folder} cannot be written ({exc}); compiling afresh")
        return None
    return folder


def _copy_kernels(src, dst, suffixes):
    """Copy a target's cache folder ``src`` (its kernels/ and marks) to ``dst``: the files whose
    names end in one of ``suffixes`` (Numba's temporary files, "<file>.nbi.tmp.<id>", do not)."""
    for folder, _, names in os.walk(src):
        for name in names:
            if name.endswith(suffixes):
                rel = os.path.relpath(os.path.join(folder, name), src)
                os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
                shutil.copyfile(os.path.join(folder, name), os.path.join(dst, rel))


def _prune(import_folder, keep_digest, keep=BUILD_CACHE_KEEP):
    """Remove the build cache's digest folders under ``import_folder`` but the ``keep`` newest
    (by their last use, which a build marks as its child starts), ``keep_digest`` always among
    them. Best effort: a folder that cannot be read or removed stays."""
    def used(name):
        try:
            return os.path.getmtime(os.path.join(import_folder, name))
        except OSError:
            return 0.0
    try:
        names = [n for n in os.listdir(import_folder) if n != keep_digest]
    except OSError:
        return
    names.sort(key=used, reverse=True)
    for name in names[max(0, keep - 1):]:
        shutil.rmtree(os.path.join(import_folder, name), ignore_errors=True)


def child_env(environ, site, stage):
    """The environment of a compiling child: ``environ`` with the unpacked wheels (``site``)
    and the staged package (``stage``) as its PYTHONPATH, and without the solver's settings
    and every NUMBA_ setting: Numba's cache does not key its files by them (NUMBA_OPT=0 left
    exported would fill the build cache with slow kernels that every later build ships), and
    the backend sets what it needs."""
    env = dict(environ, PYTHONPATH=os.pathsep.join([site, stage]), PYTHONDONTWRITEBYTECODE="1")
    for k in [k for k in env if k.startswith("NUMBA_")] + [
            "VERLET_BACKEND", "VERLET_KERNEL_TARGET", "VERLET_CACHE_DIR"]:
        env.pop(k, None)
    return env


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
                    log=print, optional=(), build_cache=None):
    """Compile every kernel for each interpreter in ``pythons`` and ``optional`` and each
    portable target into ``out_dir`` (layout: <import name>/<digest>/<target>/kernels/), at
    most one compile per core at a time. ``wheels``: {python "X.Y": [numba and llvmlite wheel
    paths]} for this machine's platform. A failure of one of ``pythons`` raises
    KernelCacheError; one of ``optional`` is logged, and ships nothing (what it compiled
    stays in the build cache, if any, for the next build). Returns (platform, [one dict per
    compile: python, target, seconds, and compiled and loaded, the kernel signatures Numba
    compiled and took from a cache]); the targets default to every portable target
    this CPU can run (each compile runs a step, so one it cannot run would crash); none:
    nothing to ship for this CPU. ``build_cache``: the build cache's folder (module docstring;
    ``default_build_cache()``), or None to compile every kernel afresh."""
    kernel_cache = _cache_module(source_dir)
    platform = kernel_cache.platform_name()
    done, jobs = [], []
    if build_cache is not None:
        build_cache = os.path.abspath(build_cache)      # the children run in another folder

    def finish():
        py, target, proc, required, compiled_in = jobs.pop(0)
        try:
            done.append(_finish(py, target, proc, wheels, log, compiled_in, out_dir,
                                kernel_cache.CACHE_FILES))
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
            env = child_env(os.environ, site, stage)
            try:
                features, numpy_version = _features(python, env)
            except KernelCacheError as exc:
                if required:
                    raise
                log(f"no shipped kernels for Python {py}: {exc}")
                continue
            chosen = targets if targets is not None else \
                kernel_cache.supported_targets(features)
            compiled_in = out_dir if build_cache is None else _writable(os.path.join(
                build_cache, build_cache_key(platform, py, wheels[py], numpy_version)), log)
            compiled_in = compiled_in or out_dir
            for target in chosen:
                cmd = [python, "-c", _CHILD, stage, compiled_in, target, INSTALLED_PACKAGE]
                jobs.append((py, target, subprocess.Popen(cmd, env=env, cwd=tmp, text=True,
                                                          stdout=subprocess.PIPE,
                                                          stderr=subprocess.STDOUT), required,
                             compiled_in))
                if len(jobs) >= max(1, os.cpu_count() or 1):
                    finish()
        while jobs:
            finish()
    return platform, done


def _finish(py, target, proc, wheels, log, compiled_in, out_dir, suffixes):
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
    if compiled_in != out_dir:
        # the build cache: this key's target folder goes to the zip's folder whole (what
        # Numba loaded or compiled there), and it counts as used now
        rel = os.path.relpath(res["folder"], compiled_in)
        digest_folder = os.path.dirname(res["folder"])
        try:
            _copy_kernels(res["folder"], os.path.join(out_dir, rel), suffixes)
            os.utime(digest_folder)
        except OSError as exc:
            raise KernelCacheError(f"copying the kernels for Python {py}, {target} out of "
                                   f"the build cache failed: {exc}") from exc
        _prune(os.path.dirname(digest_folder), os.path.basename(digest_folder))
    how = (f"loaded from the build cache ({res['loaded']} kernel signatures, "
           f"{os.path.dirname(res['folder'])})" if res["compiled"] == 0 else
           f"compiled ({res['compiled']} kernel signatures; {res['loaded']} from the cache)")
    log(f"kernels for Python {py}, {target}: {how} in {res['seconds']:.1f} s")
    return {"python": py, "target": target, "seconds": res["seconds"],
            "compiled": res["compiled"], "loaded": res["loaded"]}


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
