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


def pytest_addoption(parser):
    parser.addoption(
        "--skip-named-backends", action="store_true",
        help="leave out the tests that name their backend in a parameter (numpy, numba): "
             "scripts/test.sh's second run, on VERLET_BACKEND=numpy, passes it, since its first "
             "run already ran every such test on each backend it names")
    parser.addoption(
        "--named-backend", choices=("numpy", "numba"), default=None,
        help="keep only the tests that name this backend in a parameter")
    parser.addoption(
        "--leave-out-named-backend", choices=("numpy", "numba"), default=None,
        help="leave out the tests that name this backend in a parameter: scripts/test.sh's "
             "main run leaves out those that name numpy, which a third run beside it runs "
             "(--named-backend numpy), so that the work spreads over both cores")


def pytest_collection_modifyitems(config, items):
    # the modules whose fixtures wait on children started early (start_early below) run last,
    # so that those children have the rest of the run to finish in (a stable sort: each part
    # keeps its order)
    items.sort(key=lambda item: hasattr(getattr(item, "module", None), "start_early"))
    skip_named = config.getoption("--skip-named-backends")
    only = config.getoption("--named-backend")
    leave_out = config.getoption("--leave-out-named-backend")
    if not (skip_named or only or leave_out):
        return
    keep, dropped = [], []
    for item in items:
        named = _named_backends(item)
        drop = ((skip_named and named) or (only and only not in named)
                or (leave_out and leave_out in named))
        (dropped if drop else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _named_backends(item):
    """The backends (numpy, numba) a test names in its parameters."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {v for v in params.values() if isinstance(v, str) and v in ("numpy", "numba")}


# -------------------------------------------------------------- children started early
# A fixture may wait minutes on child processes that compile every kernel from an empty cache
# (test_install's build of the zips; test_kernels' two children did too until 2026-11-29, and
# now compile one kernel each): each compile is single-threaded and takes about four minutes
# here. A test module that defines ``start_early(tmp_path_factory)`` and ``EARLY_FIXTURE`` (the
# fixture that waits on what it starts) has it called once the tests are collected, when a
# selected test uses that fixture; it starts those children (with ``early_popen``) and returns
# their handles, which the fixture takes with ``take_early``. The children run at a lower
# priority (EARLY_NICE) beside the other tests, which keep their speed and leave the children
# the idle core, and such modules run last (pytest_collection_modifyitems). (Added 2026-11-28:
# the two fixtures held the run up for nine minutes of its twenty, on two cores of which the
# tests used one.)
EARLY_NICE = 10
_early_children = []
_early_started = {}         # module name -> what its start_early returned, until taken


def early_popen(args, **kwargs):
    """subprocess.Popen of a child started early: at a lower priority (through ``nice``, where
    there is one: a preexec_fn is not safe in this process, whose bpy and Numba run threads),
    ended with the session if it is still running then (a failed or interrupted run leaves no
    compile behind)."""
    import shutil
    import subprocess
    nice = shutil.which("nice")
    prefix = [nice, "-n", str(EARLY_NICE)] if nice else []
    proc = subprocess.Popen(prefix + list(args), **kwargs)
    _early_children.append(proc)
    return proc


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    for item in session.items:
        module = getattr(item, "module", None)
        if (hasattr(module, "start_early") and module.__name__ not in _early_started
                and module.EARLY_FIXTURE in item.fixturenames):
            _early_started[module.__name__] = module.start_early(
                session.config._tmp_path_factory)


def take_early(module_name, tmp_path_factory):
    """What module ``module_name``'s start_early returned at collection (called now when it
    was not: a run that collected no test using its EARLY_FIXTURE, e.g. by a plugin)."""
    if module_name not in _early_started:
        return sys.modules[module_name].start_early(tmp_path_factory)
    return _early_started.pop(module_name)


def pytest_sessionfinish(session, exitstatus):
    for proc in _early_children:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def import_bpy():
    """The bpy module, for the Blender tests. A missing or broken bpy raises ImportError saying
    so, which fails the collection of every Blender test module and so the run: the modules used
    to skip themselves (pytest.importorskip), and a broken environment then reported about 100
    skips beside a green solver suite. (The Blender 4.2 smoke tests run in a venv with bpy but
    without Numba, which is legitimate there: only bpy is required.)"""
    try:
        import bpy
    except Exception as exc:    # ImportError, or whatever a broken wheel raises on import
        raise ImportError(
            f"the Blender tests need bpy (Blender as a Python module, installed into .venv by "
            f"scripts/setup.sh from requirements.txt) and it does not import: "
            f"{type(exc).__name__}: {exc}") from exc
    return bpy


@pytest.fixture
def extension():
    """The extension registered into a fresh, empty Blender session; unregistered after."""
    bpy = import_bpy()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = load_extension()
    ext.register()
    try:
        yield ext
    finally:
        ext.unregister()


def cut_short_cache(backend, base, missing):
    """What a compile cut short leaves (Numba writes each kernel's files as it is compiled):
    into ``base`` (a VERLET_CACHE_DIR), a copy of the cache folder of ``backend`` (a solver's
    backend module, its kernels loaded), under the same import name, source digest and CPU
    target, without the files of the kernels whose names start with ``missing``
    ("<module>.<function>-") and without the warm-up's mark. Numba's temporary files
    (<file>.nbi.tmp.<id>), which another process may be writing, are left out too. Returns
    (the copy's folder, the names left out)."""
    import importlib
    import shutil
    mark = importlib.import_module(backend.__package__ + ".kernels.cache").WARM_MARK_SUFFIX
    dst = os.path.join(str(base), backend._cache_key(), backend.kernel_target()["target"])
    left_out = []

    def skip(_, names):
        out = [n for n in names if n.startswith(missing) or n.endswith(mark) or ".tmp" in n]
        left_out.extend(out)
        return out

    shutil.copytree(backend.cache_folder(), dst, ignore=skip)
    return dst, left_out


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
    assert lines, \
        f"no RESULT from the child (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out = json.loads(lines[-1][len("RESULT "):])
    assert "error" not in out, f"child failed:\n{out['error']}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out
