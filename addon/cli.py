"""Headless command: ``blender -b scene.blend -c verlet bake [--frames A:B] [--alembic OUT.abc]
[--alembic-objects simulated|selected|scene] [--pc2 DIR] [--save-as PATH.blend] [--no-save]
[--progress-every N]``, and ``blender -b -c verlet compile``. Exit code 0 on success, 1 with a
message on failure.

``compile`` builds the solver kernels into the user's kernel cache (or finds them there, or
in the portable kernels the extension ships: solver/kernels/cache.py) and exits: a render farm
runs it once when it prepares a machine image, so no frame of a farm job pays the first compile
(about a minute without shipped kernels). ``compile --tuned`` compiles kernels tuned for this
machine's CPU even where shipped ones would load; later sessions prefer them.

After a successful bake the .blend is saved (unless --no-save), so that opening it finds the
bake (the objects record where their cache files are) and the PC2 Mesh Cache modifiers. A file
that was never saved has nowhere for its cache to go: the command refuses it unless --save-as
names the .blend to write (its cache goes beside it). --frames bakes that range without changing
the scene's settings (either end may be negative: --frames -5:3). Output paths starting with
'//' are relative to the .blend, as in Blender; an option given an empty value is refused. A
progress line is printed every N frames (10 by default) with the time per frame. The export
targets are checked before baking; if an export still fails after a successful bake, the
.blend is saved with the new bake anyway (the cache files were rewritten, so the .blend must
describe them) and the exit code is 1.

``main(argv)`` is the function behind it; tests (and pipelines without a blender binary, using
the bpy module) call it with an argument list.
"""

import argparse
import os
import sys

import bpy

ALEMBIC_OBJECTS = ("simulated", "selected", "scene")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _parser():
    p = _Parser(prog="blender -b scene.blend -c verlet",
                description="Verlet Physics: bake the scene's simulation headless")
    sub = p.add_subparsers(dest="command")
    c = sub.add_parser("compile", help="compile the solver kernels into the kernel cache and "
                                       "exit (once per machine, e.g. when preparing a farm image)")
    c.add_argument("--tuned", action="store_true",
                   help="compile kernels tuned for this machine's CPU (a few per cent faster) "
                        "even where the extension ships portable ones; later sessions use them")
    b = sub.add_parser("bake", help="bake every Verlet body of the scene")
    b.add_argument("--frames", help="frame range A:B for this bake (default: the scene's Verlet "
                                    "range); the scene's settings are not changed")
    b.add_argument("--alembic", metavar="OUT.abc", help="also export Alembic to this file")
    b.add_argument("--alembic-objects", choices=ALEMBIC_OBJECTS, default="simulated",
                   help="objects written to the Alembic file: the simulated ones (default), "
                        "the selected ones, or the whole scene")
    b.add_argument("--pc2", metavar="DIR", help="also export PC2 files to this folder")
    b.add_argument("--scene", help="scene name (default: the active scene)")
    b.add_argument("--save-as", metavar="PATH.blend",
                   help="save the .blend to this path before baking (the cache goes beside it); "
                        "needed for a file that was never saved")
    b.add_argument("--no-save", action="store_true",
                   help="do not save the .blend after baking (the cache files are still "
                        "written, but the .blend will not know about them)")
    b.add_argument("--progress-every", metavar="N", type=int, default=10,
                   help="print a progress line every N frames (default 10; 0 = none)")
    return p


def _fail(message):
    print(f"verlet: {message}", file=sys.stderr)
    return 1


def _check_alembic_target(path):
    """Why the Alembic file cannot be written there (before anything is baked), or None."""
    if os.path.isdir(path):
        return (f"--alembic: '{path}' is a folder; give the file to write, e.g. "
                f"'{os.path.join(path, 'shot.abc')}'")
    folder = os.path.dirname(os.path.abspath(path))
    probe = folder
    while not os.path.exists(probe):           # the first existing ancestor must be a folder
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        return f"--alembic: '{probe}' is a file, so the folder '{folder}' cannot be created"
    if not os.access(probe, os.W_OK):
        return f"--alembic: the folder '{probe}' is not writable"
    return None


def _compile(tuned=False):
    from ..solver import backend
    from .preferences import backend_status
    if tuned:
        if backend.kernel_target() is not None and backend.kernel_target()["target"] != "host":
            return _fail("--tuned: this session already loaded portable kernels; run the "
                         "command in a fresh Blender")
        backend.configure(target="host")
    if backend.numba_kernels() is None:
        return _fail(f"nothing to compile: {backend_status()}")
    seconds = backend.warm_up()
    loaded, compiled = backend.cache_stats()
    info = backend.kernel_target()
    where = "tuned for this CPU" if info["target"] == "host" else f"for {info['target']}"
    shipped = f", {info['seeded']} files from the extension's shipped cache" if info["seeded"] \
        else ""
    print(f"verlet: solver kernels ready in {seconds:.1f} s ({where}: {compiled} compiled, "
          f"{loaded} loaded from the cache{shipped}; kernel cache: {backend.cache_folder()})")
    return 0


_VALUED = ("--frames", "--alembic", "--alembic-objects", "--pc2", "--scene", "--save-as",
           "--progress-every")


def _joined(argv):
    """argv with every option's value joined to it (--frames=-5:3): argparse takes a value
    starting with '-' (a range starting before frame 0, a file named -take2.abc) for an option
    and refuses it."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        # an option after it is no value (`--alembic --no-save`, an unset $OUT unquoted):
        # argparse then says the value is missing
        if a in _VALUED and nxt is not None and not nxt.startswith("--"):
            out.append(f"{a}={nxt}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def _resolve(path, blend):
    """An output path as Blender resolves one: '//' is the .blend's folder (``blend``, the
    file being baked, or the --save-as target), anything else is relative to the current
    folder."""
    if path.startswith("//"):
        if not blend:
            raise ValueError(f"'{path}' is relative to the .blend ('//'), but the scene is not "
                             "saved; pass --save-as PATH.blend or an absolute path")
        return os.path.join(os.path.dirname(os.path.abspath(blend)), path[2:])
    return os.path.abspath(path)


def _frames(text):
    """(A, B) of --frames A:B; whole numbers, either may be negative."""
    head, sep, tail = text.partition(":")
    if not sep or not head or not tail:
        raise ValueError
    return int(head, 10), int(tail, 10)


def main(argv):
    """Run the command; returns the process exit code (0 success, 1 failure)."""
    try:
        args = _parser().parse_args(_joined(list(argv)))
    except ValueError as exc:
        return _fail(exc)
    except SystemExit as exc:           # added: --help exits through argparse; return instead
        return 0 if exc.code in (None, 0) else 1
    if args.command == "compile":
        return _compile(args.tuned)
    if args.command != "bake":
        return _fail("expected a command: bake or compile")
    # Added: an empty value (an unset variable in a farm script) used to mean "not given"
    empty = [f"--{k.replace('_', '-')}" for k in ("frames", "alembic", "pc2", "scene", "save_as")
             if getattr(args, k) is not None and not getattr(args, k).strip()]
    if empty:
        return _fail(f"{', '.join(empty)} was given an empty value")
    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        return _fail(f"no scene named '{args.scene}'")
    frames = None
    if args.frames:
        try:
            frames = _frames(args.frames)
        except ValueError:
            return _fail(f"--frames expects A:B with whole numbers, got '{args.frames}'")
    blend = os.path.abspath(args.save_as) if args.save_as else bpy.data.filepath
    try:
        args.pc2 = _resolve(args.pc2, blend) if args.pc2 else None
        args.alembic = _resolve(args.alembic, blend) if args.alembic else None
    except ValueError as exc:
        return _fail(exc)
    if args.pc2 and not os.path.isdir(args.pc2):
        return _fail(f"--pc2 folder '{args.pc2}' does not exist")
    if args.alembic:
        why = _check_alembic_target(args.alembic)
        if why:
            return _fail(why)
    if args.progress_every < 0:
        return _fail("--progress-every expects a number >= 0")
    if args.save_as:
        path = os.path.abspath(args.save_as)
        if not path.endswith(".blend") or not os.path.isdir(os.path.dirname(path)):
            return _fail(f"--save-as expects a .blend path in an existing folder, got "
                         f"'{args.save_as}'")
        try:
            bpy.ops.wm.save_as_mainfile(filepath=path)
        except RuntimeError as exc:
            return _fail(f"cannot save '{path}': {str(exc).strip()}")
    elif not bpy.data.filepath:
        # Changed: an unsaved file used to bake into memory and exit 0, and the bake was lost
        # with the process
        return _fail("the scene is not saved to a file, so its bake would be lost when Blender "
                     "exits; open a saved .blend, or pass --save-as PATH.blend")
    bake_args = {"progress_every": args.progress_every}
    if frames:
        bake_args.update(use_frame_range=True, frame_start=frames[0], frame_end=frames[1])
    with bpy.context.temp_override(scene=scene):
        code, baked = _run(args, bake_args)
    error = scene.get("verlet_error", "")
    if code == 0 and error:
        code = _fail(error)
    # Added: a headless bake used to leave the .blend unsaved, so the file did not know about
    # its bake (nor the PC2 modifiers) when opened again. Saved also when an export failed after
    # the bake: the cache files are the new bake's already.
    if baked and not args.no_save:
        try:
            bpy.ops.wm.save_mainfile()
        except RuntimeError as exc:
            return _fail(f"the bake is written but '{bpy.data.filepath}' could not be saved: "
                         f"{str(exc).strip()}")
        print(f"verlet: saved {bpy.data.filepath}" + (" (with the new bake)" if code else ""))
    return code


def _run(args, bake_args):
    """Bake, then the exports. Returns (exit code, whether the bake succeeded)."""
    steps = [("bake", lambda: bpy.ops.verlet.bake("EXEC_DEFAULT", **bake_args))]
    if args.pc2:
        steps.append(("PC2 export", lambda: bpy.ops.verlet.export_pc2(
            "EXEC_DEFAULT", directory=os.path.abspath(args.pc2))))
    if args.alembic:
        steps.append(("Alembic export", lambda: bpy.ops.verlet.export_alembic(
            "EXEC_DEFAULT", filepath=os.path.abspath(args.alembic),
            objects=args.alembic_objects.upper())))
    baked = False
    for what, run in steps:
        try:
            result = run()
        except RuntimeError as exc:        # operator errors reported with ERROR raise here
            return _fail(f"{what} failed: {str(exc).strip()}"), baked
        if "FINISHED" not in result:
            return _fail(f"{what} failed"), baked
        print(f"verlet: {what} done")
        baked = True
    return 0, baked


def register():
    if hasattr(bpy.utils, "register_cli_command"):
        _state["handle"] = bpy.utils.register_cli_command("verlet", main)


def unregister():
    handle = _state.pop("handle", None)
    if handle is not None:
        bpy.utils.unregister_cli_command(handle)


_state = {}
