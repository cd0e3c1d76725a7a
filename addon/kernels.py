"""The compiled solver kernels inside Blender: compiling them without freezing the interface.

The first use after install compiles every kernel (about a minute on 2 cores; later sessions
load them from the cache in the extension's user directory in a fraction of a second), unless
the zip ships them compiled for this platform, Python and CPU (solver/kernels/cache.py: the
linux-x64 zip built on a Linux x86-64 machine does): then the first use copies and loads those
in well under a second, and nothing compiles. In an interactive
Blender the add-on starts that work on a worker thread a moment after it registers, and the
status bar says "compiling solver kernels" until it is done, so an artist who then presses play
or bakes finds the kernels ready (or waits only for the rest, with the message showing). In a
background Blender (command line, render farm, tests) nothing starts on its own: the first
simulation compiles in the foreground and prints the same message.

Which kernels can run is decided by what the package bundles: each platform zip carries Numba and
llvmlite wheels for the Pythons of the Blenders it supports, and Blender's installer extracts the
ones for its own Python. A Blender on any other Python (a newer release, a Linux distribution's
build on its system Python) or platform runs the NumPy kernels; missing_kernels() says why, from
the package's own manifest, so the panel can name the Python instead of an import error.
"""

import os
import sys
import threading
import tomllib

import bpy

from ..solver import backend
from ..solver.kernels.cache import platform_name

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


MANIFEST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "blender_manifest.toml")
# wheel platform tag suffix -> Blender's platform name (the manifest's "platforms" spelling)
_WHEEL_ARCH = (("manylinux", "_x86_64", "linux-x64"), ("manylinux", "_aarch64", "linux-arm64"),
               ("win", "_amd64", "windows-x64"), ("win", "_arm64", "windows-arm64"),
               ("macosx", "_arm64", "macos-arm64"), ("macosx", "_x86_64", "macos-x64"))


def blender_platform(sys_platform=None, machine=None):
    """This machine as Blender's extension platforms name it: "linux-x64", "macos-arm64", ...
    (the solver's name for it: its shipped kernels are filed under it)."""
    return platform_name(sys_platform, machine)


def bundled_pythons(wheels, platform):
    """The Pythons ("3.11", ...) for which ``wheels`` (a manifest's list of wheel paths) bring
    Numba to ``platform``."""
    found = set()
    for w in wheels:
        parts = os.path.basename(w)[:-4].split("-")      # name-ver(-build)-py-abi-platform
        name, py_tag, plat_tag = parts[0], parts[-3], parts[-1]
        if name != "numba" or not py_tag.startswith("cp"):
            continue
        for prefix, suffix, plat in _WHEEL_ARCH:
            if plat == platform and plat_tag.startswith(prefix) and plat_tag.endswith(suffix):
                found.add(f"{py_tag[2]}.{py_tag[3:]}")
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def manifest_wheels(path=None):
    """The ``wheels`` list of the package's own manifest (the installed zip's: only its
    platform's), or None when it cannot be read."""
    try:
        with open(path or MANIFEST, "rb") as fh:
            return tomllib.load(fh).get("wheels", [])
    except (OSError, tomllib.TOMLDecodeError):
        return None


def missing_kernels(wheels=None, python=None, platform=None):
    """Why this package has no compiled kernels for this Blender: "no compiled kernels for Python
    3.14" (the package bundles them for this platform, but for other Pythons), "... for Python
    3.11 on macos-x64" (none for this platform in this package), or None when it bundles them for
    this Python and platform (then a failure to load them is the import error's business)."""
    wheels = manifest_wheels() if wheels is None else wheels
    if wheels is None:
        return None
    py = "{}.{}".format(*(python or sys.version_info[:2]))
    platform = platform or blender_platform()
    pythons = bundled_pythons(wheels, platform)
    if py in pythons:
        return None
    if pythons:
        return f"no compiled kernels for Python {py}"
    return f"no compiled kernels for Python {py} on {platform}"


def wanted():
    """Whether the preferences ask for compiled kernels (Fastest Available or Compiled)."""
    from .preferences import requested_backend
    return requested_backend() != "numpy"


def pending():
    """Whether the kernels the preferences ask for still have to be compiled (or loaded)."""
    return wanted() and not backend.warm_up_done()


def will_compile():
    """Whether the warm-up still to run will compile, not merely load the kernels that an
    earlier session compiled into the on-disk cache: no earlier warm-up ran to its end into
    this cache folder (backend.kernels_cached). (Added: the compile message used to be printed
    by every process, twice, even with a warm cache. Until 2026-11-29 any cached kernel counted
    as all of them, so a session after a compile cut short finished it without the message.)"""
    if not pending():
        return False
    return not backend.kernels_cached()


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
