"""Headless command: ``blender -b scene.blend -c verlet bake [--frames A:B] [--alembic OUT.abc]
[--pc2 DIR] [--no-save]``. Exit code 0 on success, 1 with a message on failure.

After a successful bake the .blend is saved (unless --no-save), so that opening it finds the
bake (the objects record where their cache files are) and the PC2 Mesh Cache modifiers.

``main(argv)`` is the function behind it; tests (and pipelines without a blender binary, using
the bpy module) call it with an argument list.
"""

import argparse
import os
import sys

import bpy


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _parser():
    p = _Parser(prog="blender -b scene.blend -c verlet",
                description="Verlet Physics: bake the scene's simulation headless")
    sub = p.add_subparsers(dest="command")
    b = sub.add_parser("bake", help="bake every Verlet body of the scene")
    b.add_argument("--frames", help="frame range A:B (default: the scene's Verlet range)")
    b.add_argument("--alembic", metavar="OUT.abc", help="also export Alembic to this file")
    b.add_argument("--pc2", metavar="DIR", help="also export PC2 files to this folder")
    b.add_argument("--scene", help="scene name (default: the active scene)")
    b.add_argument("--no-save", action="store_true",
                   help="do not save the .blend after baking (the cache files are still "
                        "written, but the .blend will not know about them)")
    return p


def main(argv):
    """Run the command; returns the process exit code (0 success, 1 failure)."""
    try:
        args = _parser().parse_args(list(argv))
    except ValueError as exc:
        print(f"verlet: {exc}", file=sys.stderr)
        return 1
    except SystemExit as exc:           # added: --help exits through argparse; return instead
        return 0 if exc.code in (None, 0) else 1
    if args.command != "bake":
        print("verlet: expected a command: bake", file=sys.stderr)
        return 1
    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        print(f"verlet: no scene named '{args.scene}'", file=sys.stderr)
        return 1
    if args.frames:
        try:
            a, b = (int(v) for v in args.frames.split(":"))
        except ValueError:
            print(f"verlet: --frames expects A:B with whole numbers, got '{args.frames}'",
                  file=sys.stderr)
            return 1
        scene.verlet.frame_start = a
        scene.verlet.frame_end = b
    if args.pc2 and not os.path.isdir(args.pc2):
        print(f"verlet: --pc2 folder '{args.pc2}' does not exist", file=sys.stderr)
        return 1
    with bpy.context.temp_override(scene=scene):
        steps = [("bake", lambda: bpy.ops.verlet.bake("EXEC_DEFAULT"))]
        if args.pc2:
            steps.append(("PC2 export", lambda: bpy.ops.verlet.export_pc2(
                "EXEC_DEFAULT", directory=os.path.abspath(args.pc2))))
        if args.alembic:
            steps.append(("Alembic export", lambda: bpy.ops.verlet.export_alembic(
                "EXEC_DEFAULT", filepath=os.path.abspath(args.alembic))))
        for what, run in steps:
            try:
                result = run()
            except RuntimeError as exc:        # operator errors reported with ERROR raise here
                print(f"verlet: {what} failed: {str(exc).strip()}", file=sys.stderr)
                return 1
            if "FINISHED" not in result:
                print(f"verlet: {what} failed", file=sys.stderr)
                return 1
            print(f"verlet: {what} done")
    error = scene.get("verlet_error", "")
    if error:
        print(f"verlet: {error}", file=sys.stderr)
        return 1
    # Added: a headless bake used to leave the .blend unsaved, so the file did not know about
    # its bake (nor the PC2 modifiers) when opened again.
    if not args.no_save and bpy.data.filepath:
        try:
            bpy.ops.wm.save_mainfile()
        except RuntimeError as exc:
            print(f"verlet: the bake is written but '{bpy.data.filepath}' could not be saved: "
                  f"{str(exc).strip()}", file=sys.stderr)
            return 1
        print(f"verlet: saved {bpy.data.filepath}")
    return 0


def register():
    if hasattr(bpy.utils, "register_cli_command"):
        _state["handle"] = bpy.utils.register_cli_command("verlet", main)


def unregister():
    handle = _state.pop("handle", None)
    if handle is not None:
        bpy.utils.unregister_cli_command(handle)


_state = {}
