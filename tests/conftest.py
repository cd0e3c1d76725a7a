"""Test set-up shared by the solver tests (NumPy only) and the Blender tests (bpy).

The repository root is the extension package itself (blender_manifest.toml and __init__.py sit
there), so the solver is importable as the top-level package ``solver`` and the whole extension
as ``verlet_physics`` (loaded from the root under its extension id, as Blender would name it).
"""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def load_extension(name="verlet_physics"):
    """Import the repository root as the extension package ``name`` (idempotent)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "__init__.py"), submodule_search_locations=[ROOT])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def extension():
    """The extension registered into a fresh, empty Blender session; unregistered after."""
    bpy = pytest.importorskip("bpy")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = load_extension()
    ext.register()
    try:
        yield ext
    finally:
        ext.unregister()
