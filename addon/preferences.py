"""Add-on preferences: which solver kernels run and on how many threads.

The compiled (Numba) kernels are cached in the extension's user directory (never the
extension's own folder, which may be read-only or replaced on update). When they are not
available for this platform the add-on runs on NumPy and the panel says so.
"""

import bpy
from bpy.props import EnumProperty, IntProperty

from ..solver import backend

ADDON = __package__.rpartition(".")[0]      # "bl_ext.<repo>.verlet_physics" inside Blender


def _apply(self, _context=None):
    backend.configure(threads=self.threads)


class VerletPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    backend: EnumProperty(
        name="Solver Kernels", default="AUTO",
        items=(("AUTO", "Fastest Available", "Compiled kernels when Numba loads, NumPy otherwise"),
               ("NUMBA", "Compiled (Numba)", "Always the compiled kernels (error if unavailable)"),
               ("NUMPY", "NumPy", "The reference kernels: slower, no compilation")),
        description="Which implementation of the solver's kernels runs")
    threads: IntProperty(name="Threads", default=0, min=0, soft_max=64, update=_apply,
                         description="Threads for the compiled kernels (0 = automatic: each "
                                     "simulation measures whether all cores or one thread steps "
                                     "faster, and measures again when its step time doubles or "
                                     "halves); lower it to share a render farm machine")

    def draw(self, context):
        col = self.layout.column()
        col.prop(self, "backend")
        col.prop(self, "threads")
        col.label(text=backend_status(), icon="INFO")


def preferences():
    addon = bpy.context.preferences.addons.get(ADDON)
    return addon.preferences if addon is not None else None


def requested_backend():
    """None (fastest available), "numba" or "numpy", from the preferences."""
    prefs = preferences()
    choice = prefs.backend if prefs is not None else "AUTO"
    return None if choice == "AUTO" else choice.lower()


def backend_status():
    """One line for the panel: which kernels run, and why when they are not the compiled ones:
    the package bundles none for this Python or platform (kernels.missing_kernels), or they
    failed to load (the import error)."""
    if backend.numba_kernels() is not None:
        return "Solver kernels: compiled (Numba)"
    from .kernels import missing_kernels
    why = missing_kernels() or f"compiled kernels unavailable here: {backend.load_error()}"
    return f"Solver kernels: NumPy ({why})"


def _cache_dir():
    try:
        return bpy.utils.extension_path_user(ADDON, path="kernels", create=True)
    except (ValueError, AttributeError):    # not installed as an extension (tests, dev checkout)
        return None


def register():
    bpy.utils.register_class(VerletPreferences)
    folder = _cache_dir()
    if folder:
        backend.configure(cache_dir=folder)
    prefs = preferences()
    if prefs is not None:
        _apply(prefs)


def unregister():
    bpy.utils.unregister_class(VerletPreferences)
