"""Compiling the kernels inside Blender without freezing the interface (addon/kernels.py).

An interactive Blender starts the warm-up on a worker thread after registering, with
"compiling solver kernels" in the status bar while it runs; a background Blender (tests, the
command line) starts nothing and compiles on first use. Neither bpy nor this machine has a
window, so the interactive path is driven by calling the same functions the timers call, in a
child process whose kernel cache lacks kernels: this session's cache without the substep
loop's kernel (the largest, compiled last) and without the mark a finished warm-up leaves,
which is what a compile cut short leaves behind. The child compiles that kernel (a compile
like any other, about 15 s here, where every kernel takes about four and a half minutes; the
empty cache of a fresh install is compiled by the zips' build, tests/blender/test_install.py,
and by every clean checkout's first run).
"""

import importlib
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, cut_short_cache, import_bpy, load_extension

bpy = import_bpy()

CHILD = r'''
import json, os, sys, threading, time
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bpy
from extension_loader import load_extension
out = {}
bpy.ops.wm.read_factory_settings(use_empty=True)
ext = load_extension()
ext.register()
k = sys.modules[ext.__name__ + ".addon.kernels"]
backend = sys.modules[ext.__name__ + ".solver.backend"]
out["background"] = bpy.app.background
out["timer_after_register"] = bpy.app.timers.is_registered(k._start_timer)
out["thread_after_register"] = k._worker["thread"] is not None
printed = []
k.print = lambda *a, **kw: printed.append(" ".join(map(str, a)))   # the console message
if MODE == "background":
    t = k.start_background()
    out["started"] = t is not None and t.is_alive()
    out["poll_while_running"] = k._poll()
    # the main thread asks for the kernels while the worker compiles: it waits, then finds them
    t0 = time.perf_counter()
    k.ensure_ready()
    out["ensure_waited"] = time.perf_counter() - t0
    out["alive_after_ensure"] = t.is_alive() and not backend.warm_up_done()
    t.join(60)
    out["done"] = backend.warm_up_done()
    out["poll_after"] = k._poll()
    out["start_again_same_thread"] = k.start_background() is t
else:
    # the first bake after install: iterate() pauses once, with the message, before building
    sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))
    import scenes
    scenes.drape_scene(n=4, frames=(1, 3))
    bake = sys.modules[ext.__name__ + ".addon.bake"]
    res = bake.BakeResult()
    steps = bake.iterate(bpy.context, 1, 3, res)
    first = next(steps)
    out["paused_before_build"] = res.start is None and not backend.warm_up_done()
    out["first_yield"] = first
    for _ in steps:
        pass
    out["frames"] = res.last - res.start + 1
    out["compiled"] = backend.warm_up_done()
out["printed"] = printed
out["kernels_compiled"] = backend.cache_stats()[1]     # kernel signatures compiled here
ext.unregister()
print("RESULT " + json.dumps(out))
sys.stdout.flush()
os._exit(0)
'''


def _start(mode, cache_dir):
    """A child Blender session in ``mode`` with its kernel cache at ``cache_dir``, running."""
    env = dict(os.environ, VERLET_CACHE_DIR=str(cache_dir / "kernels"))
    env.pop("VERLET_BACKEND", None)
    code = f"ROOT = {ROOT!r}\nMODE = {mode!r}\n" + CHILD
    return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=str(cache_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    """The child's RESULT dict, once it has ended."""
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"no RESULT (exit {proc.returncode}):\n{out[-3000:]}\n{err[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


# the kernel the children's caches lack (Numba's files for it: <module>.<function>-<line>.*)
MISSING_KERNEL = "compiled_loop.run_substeps-"


@pytest.fixture(scope="module")
def kernel_children(tmp_path_factory):
    """Both children, run side by side, each with a cache of its own that lacks a kernel
    (conftest.cut_short_cache: this session's, without MISSING_KERNEL). {mode: (RESULT, its
    cache folder)}."""
    ext = load_extension()
    backend = importlib.import_module(ext.__name__ + ".solver.backend")
    # compiled by the tests before, or now
    assert backend.warm_up() is not None, backend.load_error()
    folders = {m: tmp_path_factory.mktemp(f"cut-{m}") for m in ("background", "bake")}
    for folder in folders.values():
        _, left_out = cut_short_cache(backend, folder / "kernels", MISSING_KERNEL)
        assert any(n.endswith(".nbi") for n in left_out) and any(
            n.startswith("warmed_up-") for n in left_out), left_out
    procs = {m: _start(m, folders[m]) for m in folders}
    try:
        return {m: (_result(procs[m]), folders[m]) for m in procs}
    finally:                      # one that failed must not leave the other running
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_background_blender_starts_nothing_and_worker_compiles_off_the_main_thread(
        kernel_children):
    out = kernel_children["background"][0]
    # bpy as a module is a background Blender: registering starts no timer and no thread
    assert out["background"] is True
    assert out["timer_after_register"] is False and out["thread_after_register"] is False
    # what the start-up timer does in an interactive Blender
    assert out["started"] is True
    assert out["poll_while_running"] == 0.5          # the status timer keeps polling
    assert out["ensure_waited"] > 0.5                # the compile, waited for
    assert out["alive_after_ensure"] is False and out["done"] is True
    assert out["poll_after"] is None                 # message cleared, timer ends
    assert out["start_again_same_thread"] is True    # once per session
    assert any("compiling solver kernels" in p for p in out["printed"])
    assert out["kernels_compiled"] >= 1                # the kernel its cache lacked


def test_first_bake_pauses_to_show_the_compile_message(kernel_children):
    out, folder = kernel_children["bake"]
    assert out["paused_before_build"] is True and out["first_yield"] == 1
    assert out["frames"] == 3 and out["compiled"] is True and out["kernels_compiled"] >= 1
    # printed once (it used to be twice: before the pause and again by the warm-up)
    assert sum("compiling solver kernels" in p for p in out["printed"]) == 1, out["printed"]
    # the next process finds the kernels in the cache: loading them is no compile, no message
    again = _result(_start("bake", folder))
    assert again["frames"] == 3 and again["compiled"] is True
    assert again["paused_before_build"] is False and again["kernels_compiled"] == 0
    assert not any("compiling solver kernels" in p for p in again["printed"]), again["printed"]


# ------------------------------------------- which Pythons and platforms get compiled kernels
def _kernels_module(extension):
    return sys.modules[extension.__name__ + ".addon.kernels"]


def test_manifest_bundles_compiled_kernels_for_every_supported_blender_python(extension):
    """Blender 4.2 to 5.0 run CPython 3.11, 5.1 and 5.2 run 3.13: every listed platform gets
    Numba for both, so nothing in the tested range falls back to NumPy for want of a wheel."""
    k = _kernels_module(extension)
    wheels = k.manifest_wheels()
    import tomllib
    with open(os.path.join(ROOT, "blender_manifest.toml"), "rb") as fh:
        platforms = tomllib.load(fh)["platforms"]
    assert "linux-arm64" in platforms
    for platform in platforms:
        assert k.bundled_pythons(wheels, platform) == ["3.11", "3.13"], platform
        for python in ((3, 11), (3, 13)):
            assert k.missing_kernels(wheels, python, platform) is None, (python, platform)
    # this very Blender (the main environment: bpy 5.2, Python 3.13) is covered
    assert k.missing_kernels() is None
    assert k.blender_platform("linux", "x86_64") == "linux-x64"
    assert k.blender_platform("linux", "aarch64") == "linux-arm64"
    assert k.blender_platform("win32", "AMD64") == "windows-x64"
    assert k.blender_platform("darwin", "arm64") == "macos-arm64"


def test_numpy_fallback_names_the_python_or_platform_without_wheels(extension):
    """A Blender whose Python no wheel is for (a future release, a distribution's build on its
    system Python), or a platform without wheels, runs NumPy; the panel's line says why."""
    k = _kernels_module(extension)
    wheels = k.manifest_wheels()
    assert k.missing_kernels(wheels, (3, 14), "linux-x64") == \
        "no compiled kernels for Python 3.14"
    assert k.missing_kernels(wheels, (3, 12), "windows-x64") == \
        "no compiled kernels for Python 3.12"
    assert k.missing_kernels(wheels, (3, 13), "macos-x64") == \
        "no compiled kernels for Python 3.13 on macos-x64"
    # the installed linux-x64 zip's manifest lists only its own platform's wheels
    linux = [w for w in wheels if "x86_64" in w]
    assert k.missing_kernels(linux, (3, 13), "linux-x64") is None
    assert k.missing_kernels(linux, (3, 13), "linux-arm64") == \
        "no compiled kernels for Python 3.13 on linux-arm64"
    # the -any zip lists no wheels at all
    assert k.missing_kernels([], (3, 11), "linux-x64") == \
        "no compiled kernels for Python 3.11 on linux-x64"


def test_panel_line_when_numba_cannot_load_here(extension, tmp_path):
    """What the Cache panel and the preferences show when Numba is absent: with this Python
    covered by the package, the import error; with the package lacking this Python, the reason."""
    prefs = sys.modules[extension.__name__ + ".addon.preferences"]
    backend = sys.modules[extension.__name__ + ".solver.backend"]
    k = _kernels_module(extension)
    saved = dict(backend._state)
    saved_manifest = k.MANIFEST
    try:
        backend._state.update(numba=None, error="ModuleNotFoundError: No module named 'numba'")
        assert prefs.backend_status() == ("Solver kernels: NumPy (compiled kernels unavailable "
                                          "here: ModuleNotFoundError: No module named 'numba')")
        # a package built without wheels (the -any zip's manifest), as installed
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import build_extension
        with open(os.path.join(ROOT, "blender_manifest.toml")) as fh:
            text = build_extension.without_wheels(fh.read())
        (tmp_path / "blender_manifest.toml").write_text(text)
        k.MANIFEST = str(tmp_path / "blender_manifest.toml")
        py = "{}.{}".format(*sys.version_info[:2])
        assert prefs.backend_status() == (f"Solver kernels: NumPy (no compiled kernels for "
                                          f"Python {py} on {k.blender_platform()})")
    finally:
        k.MANIFEST = saved_manifest
        backend._state.clear()
        backend._state.update(saved)
