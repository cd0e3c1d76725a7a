"""The compiled solver kernels inside Blender: compiling them without freezing the interface.

The first use after install compiles every kernel (about 12 s here; later sessions load them
from the cache in the extension's user directory in a fraction of a second). In an interactive
Blender the add-on starts that work on a worker thread a moment after it registers, and the
status bar says "compiling solver kernels" until it is done, so an artist who then presses play
or bakes finds the kernels ready (or waits only for the rest, with the message showing). In a
background Blender (command line, render farm, tests) nothing starts on its own: the first
simulation compiles in the foreground and prints the same message.
"""

import os
import sys
import threading

import bpy

from ..solver import backend

MESSAGE = "compiling solver kernels (once per install)..."
_worker = {"thread": None, "shown": False, "printed": None}


def status(text):
    """Show (or clear, with None) a message in Blender's status bar when there is a UI, and print
    it (the console is where a background Blender's user looks) once: the same message is not
    printed again until another replaces it (the status timer shows it every half second)."""
    workspace = getattr(bpy.context, "workspace", None)
    if workspace is not None:
        try:
            workspace.status_text_set(f"Verlet Physics: {text}" if text else None)
        except (AttributeError, RuntimeError):
            pass
    if text and text != _worker["printed"]:
        print(f"Verlet Physics: {text}")
    _worker["printed"] = text or _worker["printed"]


def wanted():
    """Whether the preferences ask for compiled kernels (Fastest Available or Compiled)."""
    from .preferences import requested_backend
    return requested_backend() != "numpy"


def pending():
    """Whether the kernels the preferences ask for still have to be compiled (or loaded)."""
    return wanted() and not backend.warm_up_done()


def will_compile():
    """Whether the warm-up still to run will compile, not merely load the kernels that an
    earlier session compiled into the on-disk cache (Numba's index files are there). (Added:
    the compile message used to be printed by every process, twice, even with a warm cache.)"""
    if not pending():
        return False
    numba = sys.modules.get("numba")
    folder = getattr(getattr(numba, "config", None), "CACHE_DIR", None)
    if not folder or not os.path.isdir(folder):
        return True
    # Numba files each kernel under a subfolder named after its source's folder
    return not any(n.endswith(".nbi") for _, _, names in os.walk(folder) for n in names)


def ensure_ready():
    """Before a simulation is built: finish the warm-up in the foreground if it has not run
    (waiting for the worker thread if it is under way), with the status message meanwhile when
    it compiles."""
    if not pending():
        return
    compiling = will_compile() or (_worker["thread"] is not None and _worker["thread"].is_alive())
    if compiling:
        status(MESSAGE)
    try:
        backend.warm_up()
    finally:
        if compiling:
            status(None)


def start_background():
    """Start the warm-up on a worker thread (once per session) and the status-bar timer.
    Returns the thread, or None when there is nothing to do."""
    t = _worker["thread"]
    if t is not None or not wanted():
        return t
    t = threading.Thread(target=_warm_up_quietly, name="verlet-kernels", daemon=True)
    _worker["thread"] = t
    t.start()
    if not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=1.0)
    return t


def _warm_up_quietly():
    try:
        backend.warm_up()
    except Exception as exc:      # a compile failure surfaces when the kernels are first used
        print(f"Verlet Physics: compiling solver kernels failed: {type(exc).__name__}: {exc}")


def _poll():
    """Timer: the message while the worker runs (from its first second on, so loading cached
    kernels at start-up shows nothing), cleared once it is done."""
    t = _worker["thread"]
    if t is not None and t.is_alive():
        status(MESSAGE)
        _worker["shown"] = True
        return 0.5
    if _worker["shown"]:
        status(None)
        _worker["shown"] = False
    return None


def _start_timer():
    start_background()
    return None


def register():
    if not bpy.app.background:
        # after start-up has settled (preferences read, the cache folder configured)
        bpy.app.timers.register(_start_timer, first_interval=0.5)


def unregister():
    for fn in (_start_timer, _poll):
        if bpy.app.timers.is_registered(fn):
            bpy.app.timers.unregister(fn)
