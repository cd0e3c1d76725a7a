"""Compiling the kernels inside Blender without freezing the interface (addon/kernels.py).

An interactive Blender starts the warm-up on a worker thread after registering, with
"compiling solver kernels" in the status bar while it runs; a background Blender (tests, the
command line) starts nothing and compiles on first use. Neither bpy nor this machine has a
window, so the interactive path is driven by calling the same functions the timers call, in a
child process whose kernel cache is empty (the state right after install).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

bpy = pytest.importorskip("bpy")

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
ext.unregister()
print("RESULT " + json.dumps(out))
sys.stdout.flush()
os._exit(0)
'''


def _child(mode, tmp_path):
    env = dict(os.environ, VERLET_CACHE_DIR=str(tmp_path / "kernels"))
    env.pop("VERLET_BACKEND", None)
    code = f"ROOT = {ROOT!r}\nMODE = {mode!r}\n" + CHILD
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"no RESULT (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def test_background_blender_starts_nothing_and_worker_compiles_off_the_main_thread(tmp_path):
    out = _child("background", tmp_path)
    # bpy as a module is a background Blender: registering starts no timer and no thread
    assert out["background"] is True
    assert out["timer_after_register"] is False and out["thread_after_register"] is False
    # what the start-up timer does in an interactive Blender
    assert out["started"] is True
    assert out["poll_while_running"] == 0.5          # the status timer keeps polling
    assert out["ensure_waited"] > 0.5                # the cold compile, waited for
    assert out["alive_after_ensure"] is False and out["done"] is True
    assert out["poll_after"] is None                 # message cleared, timer ends
    assert out["start_again_same_thread"] is True    # once per session
    assert any("compiling solver kernels" in p for p in out["printed"])


def test_first_bake_pauses_to_show_the_compile_message(tmp_path):
    out = _child("bake", tmp_path)
    assert out["paused_before_build"] is True and out["first_yield"] == 1
    assert out["frames"] == 3 and out["compiled"] is True
    # printed once (it used to be twice: before the pause and again by the warm-up)
    assert sum("compiling solver kernels" in p for p in out["printed"]) == 1, out["printed"]
    # the next process finds the kernels in the cache: loading them is no compile, no message
    again = _child("bake", tmp_path)
    assert again["frames"] == 3 and again["compiled"] is True
    assert again["paused_before_build"] is False
    assert not any("compiling solver kernels" in p for p in again["printed"]), again["printed"]
