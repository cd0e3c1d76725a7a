"""Load the repository root as the extension package, the way Blender names it, without
installing it: used by the headless demo and by the tests (tests/conftest.py)."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
