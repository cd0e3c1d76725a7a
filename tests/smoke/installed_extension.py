"""Child process for the install tests: one Blender session (bpy as a module) that gets the
extension either by installing the built zip with Blender's extension installer (``--zip``) or
from the source tree (``--source``), bakes a tiny scene through ``bpy.ops.verlet.bake`` and
optionally exports PC2. It prints one line ``RESULT {json}`` that the tests assert on.

    BLENDER_USER_RESOURCES=/tmp/isolated python installed_extension.py --zip dist/x.zip --workdir W
    python installed_extension.py --source /path/to/repo --workdir W

Run as a separate process because Blender reads BLENDER_USER_RESOURCES (where the user_default
extension repository, preferences and scripts live) once, when bpy is imported. With ``--zip`` the
parent sets it to a temporary folder, so the install never touches the real user's Blender.

The scene (the same for both ways, and for bpy 4.2 and 5.0): a 6 x 6 vertex cloth grid, 1 m
square at z = 0.5 m, over a 4 m plane collider at z = 0, frames 1-24, saved as W/scene.blend so
the bake writes its cache file beside it.

``--hide-host-numba``: Blender's own Python has no Numba, but the main test environment does (the
solver tests need it), and it comes first on sys.path; with this flag the environment's copy is
hidden, so numba can only be imported from the wheels Blender's installer extracted from the zip.
"""

import argparse
import importlib.machinery
import importlib.util
import json
import os
import site
import sys
import traceback


class HostNumbaHidden:
    """Meta-path finder: ``numba`` and ``llvmlite`` are looked up on sys.path without this
    environment's site-packages (where Blender has none), so only an extension's copy is found."""

    NAMES = ("numba", "llvmlite")

    def __init__(self):
        self.hidden = {os.path.realpath(p) for p in site.getsitepackages()}

    def find_spec(self, name, path=None, target=None):
        if name not in self.NAMES:
            return None            # submodules are found through their package's __path__
        search = [p for p in sys.path if os.path.realpath(p or os.curdir) not in self.hidden]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


if "--hide-host-numba" in sys.argv:          # before bpy: nothing may import numba first
    sys.meta_path.insert(0, HostNumbaHidden())

import bpy  # noqa: E402

EXT_ID = "verlet_physics"
REPO = "user_default"
INSTALLED = f"bl_ext.{REPO}.{EXT_ID}"
N = 6


def _mesh_object(name, verts, faces):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def build_scene():
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    scene.render.fps, scene.render.fps_base = 24, 1.0
    s = 1.0 / (N - 1)
    verts = [(-0.5 + i * s, -0.5 + j * s, 0.5) for j in range(N) for i in range(N)]
    faces = [(j * N + i, j * N + i + 1, (j + 1) * N + i + 1, (j + 1) * N + i)
             for j in range(N - 1) for i in range(N - 1)]
    cloth = _mesh_object("Cloth", verts, faces)
    cloth.verlet.kind = "CLOTH"
    ground = _mesh_object("Ground", [(-2, -2, 0), (2, -2, 0), (2, 2, 0), (-2, 2, 0)],
                          [(0, 1, 2, 3)])
    ground.verlet.kind = "COLLIDER"
    ground.verlet.collider_shape = "PLANE"
    return cloth, ground


def install(zip_path, out):
    """Install the zip into the isolated user_default repository and enable it."""
    root = os.environ.get("BLENDER_USER_RESOURCES")
    ext_dir = os.path.realpath(bpy.utils.user_resource("EXTENSIONS"))
    out["extensions_dir"] = ext_dir
    if not root or not ext_dir.startswith(os.path.realpath(root) + os.sep):
        raise RuntimeError(f"not isolated: BLENDER_USER_RESOURCES={root!r}, "
                           f"extensions folder {ext_dir}")
    repos = {r.module: r for r in bpy.context.preferences.extensions.repos}
    if REPO not in repos:
        raise RuntimeError(f"no '{REPO}' extension repository (have {sorted(repos)})")
    out["repo_dir"] = os.path.realpath(repos[REPO].directory)
    result = bpy.ops.extensions.package_install_files(
        filepath=os.path.abspath(zip_path), repo=REPO, enable_on_install=True)
    out["install"] = sorted(result)
    if result != {"FINISHED"}:
        raise RuntimeError(f"package_install_files returned {result}")
    if INSTALLED not in bpy.context.preferences.addons:
        raise RuntimeError(f"{INSTALLED} is not enabled after install "
                           f"(enabled: {sorted(a.module for a in bpy.context.preferences.addons)})")
    return sys.modules[INSTALLED]


def load_source(root):
    """The source tree registered under the extension id (as tests/conftest.py loads it)."""
    spec = importlib.util.spec_from_file_location(
        EXT_ID, os.path.join(root, "__init__.py"), submodule_search_locations=[root])
    module = importlib.util.module_from_spec(spec)
    sys.modules[EXT_ID] = module
    spec.loader.exec_module(module)
    module.register()
    return module


def kernels(ext, out):
    """Which solver kernels the extension runs, as its own modules see it: the line the
    preferences/panel show, the backend a tiny Simulation of its solver picks, and where the
    numba it imported (if any) lives: for an installed zip with bundled wheels, Blender's
    extension site-packages (<extensions>/.local/lib/pythonX.Y/site-packages)."""
    prefs = importlib.import_module(ext.__name__ + ".addon.preferences")
    solver = importlib.import_module(ext.__name__ + ".solver")
    out["backend_status"] = prefs.backend_status()
    b = solver.Builder()
    import numpy as np
    b.add_particles(np.array([[0.0, 0.0, 1.0], [0.1, 0.0, 1.0]]))
    out["sim_backend"] = solver.Simulation(b.build(), substeps=1).backend
    numba = sys.modules.get("numba")
    out["numba_file"] = os.path.realpath(numba.__file__) if numba is not None else None
    llvmlite = sys.modules.get("llvmlite")
    out["llvmlite_file"] = os.path.realpath(llvmlite.__file__) if llvmlite is not None else None
    cache = sys.modules[ext.__name__ + ".solver.backend"]._state["cache_dir"]
    out["kernel_cache_dir"] = os.path.realpath(cache) if cache else None


def run(args, out):
    out["bpy"] = bpy.app.version_string
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = install(args.zip, out) if args.zip else load_source(args.source)
    out["package"] = ext.__name__
    out["package_file"] = os.path.realpath(ext.__file__)
    out["extension_modules"] = sorted(
        os.path.realpath(m.__file__) for name, m in list(sys.modules.items())
        if (name == ext.__name__ or name.startswith(ext.__name__ + "."))
        and getattr(m, "__file__", None))
    # a top-level solver/addon/verlet_physics would mean the source tree leaked onto sys.path
    out["stray_modules"] = sorted(n for n in ("solver", "addon", EXT_ID)
                                  if n in sys.modules and n != ext.__name__)
    op = bpy.types.VERLET_OT_bake
    out["operator_module"] = op.__module__
    out["operator_file"] = os.path.realpath(sys.modules[op.__module__].__file__)

    kernels(ext, out)
    # whether the bake's warm-up will say "compiling solver kernels": not where the kernels
    # came compiled, with the mark of the build's finished warm-up (kernels/cache.py warm_mark)
    out["will_compile"] = importlib.import_module(ext.__name__ + ".addon.kernels").will_compile()
    build_scene()
    os.makedirs(args.workdir, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(args.workdir, "scene.blend"))
    scene = bpy.context.scene
    out["bake"] = sorted(bpy.ops.verlet.bake("EXEC_DEFAULT"))
    out["verlet_error"] = str(scene.get("verlet_error", ""))
    cloth = scene.objects["Cloth"]
    out["status"] = str(cloth.get("verlet_status", ""))
    out["cache"] = bpy.path.abspath(cloth.get("verlet_cache", "")) if cloth.get("verlet_cache") \
        else ""
    # the bake paid the compile (warm_up) only when it ran the compiled kernels
    backend = sys.modules[ext.__name__ + ".solver.backend"]
    out["bake_compiled"] = bool(backend._state.get("warm"))
    # which CPU the kernels were compiled for, how many files came from the zip's shipped
    # kernels, and how many kernel signatures were loaded from the cache / compiled here
    out["kernel_target"] = backend.kernel_target()
    out["kernels_loaded"], out["kernels_compiled"] = backend.cache_stats()
    llvmlite = sys.modules.get("llvmlite.binding")
    out["portable_targets"] = [] if llvmlite is None else importlib.import_module(
        ext.__name__ + ".solver.kernels.cache").supported_targets(
            dict(llvmlite.get_host_cpu_features()))
    numba = sys.modules.get("numba")
    try:     # which thread pool the parallel kernels ran on (set once a parallel kernel ran)
        out["threading_layer"] = numba.threading_layer() if numba is not None else None
    except ValueError:
        out["threading_layer"] = None
    if args.pc2:
        pc2_dir = os.path.join(args.workdir, "pc2")
        os.makedirs(pc2_dir, exist_ok=True)
        out["export_pc2"] = sorted(bpy.ops.verlet.export_pc2("EXEC_DEFAULT", directory=pc2_dir))
        out["pc2"] = sorted(os.path.join(pc2_dir, f) for f in os.listdir(pc2_dir))
        mod = cloth.modifiers.get("Verlet PC2")
        out["pc2_modifier"] = None if mod is None else bpy.path.abspath(mod.filepath)


def main(argv=None):
    p = argparse.ArgumentParser()
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--zip", help="install this extension zip (needs BLENDER_USER_RESOURCES)")
    how.add_argument("--source", help="register the extension from this source tree")
    p.add_argument("--workdir", required=True)
    p.add_argument("--pc2", action="store_true", help="also export PC2 after the bake")
    p.add_argument("--hide-host-numba", action="store_true",
                   help="import numba/llvmlite only from outside this environment's site-packages")
    args = p.parse_args(argv)
    out = {}
    code = 0
    try:
        run(args, out)
    except Exception:                      # reported to the parent test, which fails with it
        out["error"] = traceback.format_exc()
        code = 1
    print("RESULT " + json.dumps(out), flush=True)
    return code


if __name__ == "__main__":
    code = main()
    if bpy.app.version[:2] == (4, 2):
        # bpy 4.2.x as a module segfaults at interpreter exit once a class with Python get/set
        # property callbacks, or an operator still registered, has existed (Blender's own bug,
        # not the extension's: a 4-line PropertyGroup with IntProperty(get=..., set=...)
        # reproduces it, registered and unregistered). bpy 5.0 exits cleanly. Everything this
        # process checks has been written and reported above, so skip the broken shutdown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
