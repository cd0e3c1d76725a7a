"""Operators (CONTRACT.md): verlet.bake, verlet.free_bake, verlet.bake_to_shape_keys,
verlet.export_pc2, verlet.export_alembic. Each runs synchronously from scripts and headless
(EXEC_DEFAULT); verlet.bake invoked from the UI runs modally with a progress bar and cancels on
Esc, keeping the frames already computed.
"""

import os

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty

from . import bake, bridge, exports, files
from .bridge import BridgeError


def _range(scene):
    s = scene.verlet
    return s.frame_start, s.frame_end


def _baked(scene):
    return [o for o in bake.simulated_objects(scene) if o.get("verlet_baked")]


class VERLET_OT_bake(bpy.types.Operator):
    """Simulate the scene's Verlet bodies over the frame range and store the result"""
    bl_idname = "verlet.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER"}

    # Added for the command line: a range for this bake only (a farm override must not change
    # the artist's scene settings), and progress lines every N frames (0 = none)
    use_frame_range: BoolProperty(name="Override Range", default=False,
                                  options={"HIDDEN", "SKIP_SAVE"},
                                  description="Bake frame_start..frame_end instead of the "
                                              "scene's Verlet range, leaving the scene as it is")
    frame_start: IntProperty(name="Start", options={"HIDDEN", "SKIP_SAVE"})
    frame_end: IntProperty(name="End", options={"HIDDEN", "SKIP_SAVE"})
    progress_every: IntProperty(name="Progress Every", default=0, min=0,
                                options={"HIDDEN", "SKIP_SAVE"},
                                description="Print a progress line every N frames (0 = never)")

    _timer = None

    def _bake_range(self, scene):
        return (self.frame_start, self.frame_end) if self.use_frame_range else _range(scene)

    def execute(self, context):
        scene = context.scene
        start, end = self._bake_range(scene)
        progress = bake.ProgressPrinter(start, end, self.progress_every) \
            if self.progress_every else None
        try:
            res = bake.run(context, start, end, progress=progress)
        except BridgeError as exc:
            self.report({"ERROR"}, str(exc))
            scene["verlet_error"] = str(exc)
            return {"CANCELLED"}
        return self._finish(context, res)

    def _finish(self, context, res):
        scene = context.scene
        notes = "".join(f"; {msg}" for _, msg in res.warnings)
        kept = bake.earlier_bakes(scene, res) if (res.error or res.cancelled) else []
        if kept:
            # Changed: a re-bake stopped by an error or Esc used to overwrite the earlier bake
            # with its few frames; a failed or cancelled operation now loses nothing
            names = ", ".join(kept)
            what = f"stopped at {res.error}" if res.error else "cancelled"
            scene["verlet_error"] = res.error or ""
            self.report({"ERROR"} if res.error else {"WARNING"},
                        f"Bake {what}; nothing was stored: the earlier bake of {names} is kept"
                        f"{notes}")
            bake.on_frame_change(scene)
            return {"CANCELLED"}
        try:
            bake.store(scene, res)
        except (OSError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            scene["verlet_error"] = str(exc)
            return {"CANCELLED"}
        scene["verlet_error"] = res.error or ""
        # what the simulation left out (e.g. a soft body's volume) goes with the outcome (notes,
        # above), in one report, so the status bar shows both
        if res.error:
            self.report({"ERROR"}, f"Bake stopped at {res.error}; frames {res.start}-{res.last} "
                                   f"kept{notes}")
        elif res.cancelled:
            self.report({"WARNING"}, f"Bake cancelled; frames {res.start}-{res.last} kept{notes}")
        else:
            self.report({"WARNING"} if notes else {"INFO"},
                        f"Baked frames {res.start}-{res.last} in {res.seconds:.1f} s{notes}")
        bake.on_frame_change(scene)
        return {"FINISHED"}

    def invoke(self, context, event):
        # modal: one frame per timer tick so the UI shows progress and Esc cancels
        self._begin(context)
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    # Changed: the modal bake used to call bake.run() for the whole range in its first timer
    # event, so Esc could not interrupt it; it now resumes bake.iterate() once per tick.
    def _begin(self, context):
        start, end = _range(context.scene)       # the UI bakes the scene's range
        wm = context.window_manager
        wm.progress_begin(start, end)
        self._res = bake.BakeResult()
        self._steps = bake.iterate(context, start, end, self._res, progress=wm.progress_update)

    def modal(self, context, event):
        if event.type == "ESC":
            self._res.cancelled = True
            return self._end(context)
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            next(self._steps)                   # build, then one frame per tick
        except StopIteration:
            return self._end(context)
        except BridgeError as exc:
            self._end(context, finish=False)
            self.report({"ERROR"}, str(exc))
            context.scene["verlet_error"] = str(exc)
            return {"CANCELLED"}
        return {"RUNNING_MODAL"}

    def _end(self, context, finish=True):
        self._steps.close()                     # back to the frame the bake started from
        wm = context.window_manager
        wm.progress_end()
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        if not finish:
            return {"CANCELLED"}
        if self._res.start is None:             # cancelled before the first frame was built
            self.report({"WARNING"}, "Bake cancelled before it started; nothing was baked")
            return {"CANCELLED"}
        return self._finish(context, self._res)


class VERLET_OT_free_bake(bpy.types.Operator):
    """Delete the bake: our cache files, display shape keys or display modifiers, and marks
    (nothing else)"""
    bl_idname = "verlet.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        bake.free(context.scene)
        self.report({"INFO"}, "Bake freed")
        return {"FINISHED"}


class VERLET_OT_bake_to_shape_keys(bpy.types.Operator):
    """Turn the bake into one keyed shape key per frame (a self-contained .blend) and keyframes
    for rigid bodies"""
    bl_idname = "verlet.bake_to_shape_keys"
    bl_label = "Bake to Shape Keys"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        done = 0
        # a ragdoll's bake is a pose: verlet.bake_to_keyframes writes it
        objs = [o for o in _baked(context.scene) if o.verlet.kind != "RAGDOLL"]
        for obj in objs:                # refused before anything is written
            why = exports.shape_keys_refusal(obj)
            if why:
                self.report({"ERROR"}, why)
                return {"CANCELLED"}
        for obj in objs:
            data = bake.load(obj)
            if data is None:
                self.report({"ERROR"}, f"{obj.name}: {obj.get('verlet_status', 'no usable bake')}")
                return {"CANCELLED"}
            exports.to_shape_keys(obj, *data)
            done += 1
        if not done:
            self.report({"ERROR"}, "Nothing is baked: bake first")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote shape keys or keyframes for {done} object(s)")
        return {"FINISHED"}


class VERLET_OT_bake_to_keyframes(bpy.types.Operator):
    """Write the bake as keyframes: pose keys (bone rotations, root bone locations) into each
    ragdoll armature's action, object transform keys for rigid bodies; over the baked frame
    range only, leaving every other key, channel and object as it was"""
    bl_idname = "verlet.bake_to_keyframes"
    bl_label = "Bake to Keyframes"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from . import ragdoll_pose
        objs = [o for o in _baked(context.scene) if o.verlet.kind in ("RAGDOLL", "RIGID")]
        loaded = []
        for obj in objs:                # every bake read before anything is written
            data = bake.load(obj)
            if data is None:
                self.report({"ERROR"}, f"{obj.name}: {obj.get('verlet_status', 'no usable bake')}")
                return {"CANCELLED"}
            if data[0]["layout"] == "bones" and \
                    any(n not in obj.pose.bones for n in data[0]["bones"]):
                self.report({"ERROR"}, f"{obj.name}: the bake's bones are not all in the "
                                       "armature any more; bake again")
                return {"CANCELLED"}
            loaded.append((obj, data))
        if not loaded:
            self.report({"ERROR"}, "Nothing to key: bake a ragdoll or a rigid body first")
            return {"CANCELLED"}
        for obj, (header, frames) in loaded:
            if header["layout"] == "bones":
                ragdoll_pose.bake_bones(obj, header, frames)
            else:
                ragdoll_pose.bake_object(obj, header, frames)
        # the object stays simulated: its bake (or, freed, the live simulation) still drives
        # it over its keys, as a Rigid Body World's objects do until its Bake To Keyframes
        # removes them from it
        self.report({"INFO"}, f"Wrote keyframes for {len(loaded)} object(s); set their Kind "
                              "to None to play the keys alone")
        return {"FINISHED"}


class VERLET_OT_export_pc2(bpy.types.Operator):
    """Write a PC2 point cache per baked deforming object and add a Mesh Cache modifier that
    plays it without the add-on"""
    bl_idname = "verlet.export_pc2"
    bl_label = "Export PC2"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(name="Directory", subtype="DIR_PATH",
                              description="Folder for the .pc2 files (// = beside the .blend)")

    def execute(self, context):
        directory, why = _absolute(self.directory or "//", "PC2 export")
        if why:
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        if not directory or not os.path.isdir(directory):
            self.report({"ERROR"}, f"PC2 export: folder '{self.directory}' does not exist")
            return {"CANCELLED"}
        written = []
        objs = [o for o in _baked(context.scene) if o.verlet.kind in bake.DEFORMING]
        names = exports.pc2_names(objs)
        for obj in objs:
            data = bake.load(obj)
            if data is None:
                self.report({"ERROR"}, f"{obj.name}: {obj.get('verlet_status', 'no usable bake')}")
                return {"CANCELLED"}
            try:
                written.append(exports.write_pc2(obj, directory, *data, name=names[obj.name]))
            except OSError as exc:
                self.report({"ERROR"}, f"{obj.name}: cannot write PC2 in '{directory}': {exc}")
                return {"CANCELLED"}
        if not written:
            self.report({"ERROR"}, "Nothing to export: bake a cloth, plant or soft body first")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {len(written)} PC2 file(s) to {directory}")
        return {"FINISHED"}

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


def _absolute(path, what):
    """(absolute path, None), or (None, why) for a path relative to the .blend ("//") in a file
    not saved yet: it has no folder, and Blender's resolution of it fell back to the working
    directory (an Alembic export of "//rel.abc" was written wherever Blender was started)."""
    if path.startswith("//") and not bpy.data.filepath:
        return None, (f"{what}: '{path}' is relative to the .blend file (//), which is not saved "
                      "yet: save the file first or choose an absolute path")
    return bpy.path.abspath(path), None


class VERLET_OT_export_alembic(bpy.types.Operator):
    """Export the baked range through Blender's Alembic exporter (rigid bodies as transforms)"""
    bl_idname = "verlet.export_alembic"
    bl_label = "Export Alembic"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="File Path", subtype="FILE_PATH")
    # Added: which objects go into the file; the simulated ones by default (Blender's exporter
    # used to be run over the whole scene: cameras, lights, colliders and all)
    objects: EnumProperty(name="Objects", items=exports.ALEMBIC_SCOPES, default="SIMULATED",
                          description="Which objects to write")

    def execute(self, context):
        if not self.filepath:
            self.report({"ERROR"}, "Alembic export: no file path given")
            return {"CANCELLED"}
        if not _baked(context.scene):
            self.report({"ERROR"}, "Nothing is baked: bake first")
            return {"CANCELLED"}
        path, why = _absolute(self.filepath, "Alembic export")
        if not why and os.path.isdir(path):
            why = f"Alembic export: '{self.filepath}' is a folder; give the file to write"
        if why:
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        try:
            exports.write_alembic(context, path, scope=self.objects)
        except (OSError, RuntimeError) as exc:
            self.report({"ERROR"}, f"Alembic export to '{self.filepath}' failed: {exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {path}")
        return {"FINISHED"}

    def invoke(self, context, event):
        if not self.filepath:
            self.filepath = bpy.path.ensure_ext(bpy.path.abspath("//") + "verlet", ".abc")
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


_classes = (VERLET_OT_bake, VERLET_OT_free_bake, VERLET_OT_bake_to_shape_keys,
            VERLET_OT_bake_to_keyframes,
            VERLET_OT_export_pc2, VERLET_OT_export_alembic)


@bpy.app.handlers.persistent
def _frame_change(scene, depsgraph=None):
    bake.on_frame_change(scene, depsgraph)


# Added: file-event handlers (files.py): drop the live run on load and undo, clear in-memory
# bakes on load, write them to disk when the .blend is saved, put back what a save changed when
# this session is not in the saved file after it (a copy, a failure).
def _file_handler(name):
    """A persistent handler calling files.<name>, looked up at each call."""
    @bpy.app.handlers.persistent
    def handler(*args):
        getattr(files, name)(*args)
    handler.__name__ = handler.__qualname__ = f"_verlet_{name}"
    return handler


_undo_redo = _file_handler("on_undo_redo")
# (each is in every Blender the extension supports, 4.2 on; one missing is left out, not fatal)
_file_handlers = tuple((event, fn) for event, fn in (
    ("load_post", _file_handler("on_load_post")), ("undo_post", _undo_redo),
    ("redo_post", _undo_redo), ("save_pre", _file_handler("on_save_pre")),
    ("save_post", _file_handler("on_save_post")),
    ("save_post_fail", _file_handler("on_save_post_fail")))
    if hasattr(bpy.app.handlers, event))


def register():
    for c in _classes:
        bpy.utils.register_class(c)
    if _frame_change not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(_frame_change)
    for name, fn in _file_handlers:
        if fn not in getattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).append(fn)


def unregister():
    if _frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(_frame_change)
    for name, fn in _file_handlers:
        if fn in getattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).remove(fn)
    bake.stop_live()            # added: no live run outlives the add-on
    for c in reversed(_classes):
        bpy.utils.unregister_class(c)
