"""Outputs from one cache: shape keys, PC2 files with a Mesh Cache modifier, Alembic.

PC2 (the point cache format of 3ds Max, read by Blender's Mesh Cache modifier):
    12 bytes  b"POINTCACHE2\\0"
    int32     version (1)
    int32     number of points
    float32   start frame
    float32   sample rate (frames between samples: 1.0)
    int32     number of samples
    then float32 (samples, points, 3) object-space positions.
Every file is written to a temporary name and renamed.

An object with enabled modifiers of its own is displayed through our Geometry Nodes modifier at
the end of its stack (bridge.py): Alembic, which writes the evaluated mesh, then writes the
simulated positions, and the PC2 Mesh Cache modifier overwrites the positions after the user's
modifiers. Shape keys, though, act BEFORE the modifiers: keys of the simulated (already
modified) positions would be deformed again, and no general inverse of a modifier stack exists,
so Bake to Shape Keys refuses such objects (shape_keys_refusal) rather than write wrong keys.
"""

import contextlib
import os
import re
import struct

import bpy
import numpy as np

from . import bake, bridge

PC2_MODIFIER = bridge.PC2_MODIFIER
KEY_PREFIX = "Verlet "


def pc2_names(objs):
    """{object name: file name} for a PC2 export: the object's name with only the characters a
    file system forbids escaped (cache.folder_name), so "Cloth A" and "Cloth_A" get files of
    their own (they shared Cloth_A.pc2, and one object's Mesh Cache played the other's); names
    equal but for case (one file on macOS and Windows) get the object's cache id appended."""
    from .cache import folder_name
    names, seen = {}, set()
    for obj in sorted(objs, key=lambda o: o.name):
        stem = folder_name(obj.name)
        if stem.casefold() in seen:
            stem = f"{stem}-{obj.verlet.cache_id}"
        seen.add(stem.casefold())
        names[obj.name] = stem + ".pc2"
    return names


def write_pc2(obj, directory, header, frames, name=None):
    """Write obj's baked positions as <directory>/<name> (default <object>.pc2, see pc2_names)
    and add (or update) our Mesh Cache modifier so that frame N shows sample N - frame_start.
    Returns the file path."""
    name = name or pc2_names([obj])[obj.name]
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    data = np.ascontiguousarray(frames, dtype="<f4")
    try:
        with open(tmp, "wb") as fh:
            fh.write(b"POINTCACHE2\0")
            fh.write(struct.pack("<ii", 1, data.shape[1]))
            fh.write(struct.pack("<ffi", float(header["frame_start"]), 1.0, data.shape[0]))
            fh.write(data.tobytes())
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)                   # a full disk or a cancel leaves no half-written file
        raise
    mod = obj.modifiers.get(PC2_MODIFIER) or obj.modifiers.new(PC2_MODIFIER, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = bpy.path.relpath(path) if bpy.data.filepath else path
    mod.frame_start = float(header["frame_start"])
    mod.frame_scale = 1.0
    mod.deform_mode = "OVERWRITE"
    mod.interpolation = "LINEAR"
    mod.time_mode = "FRAME"
    mod.play_mode = "SCENE"
    return path


def shape_keys_refusal(obj):
    """Why obj's bake cannot become shape keys (a message naming the object), or None."""
    if obj.verlet.kind == "RIGID" or obj.type != "MESH":
        return None
    if bridge.keys_hide_ours(obj):
        return (f"{obj.name}: cannot bake to shape keys: "
                + ("Shape Key Lock (the pin) shows its active key alone" if obj.show_only_shape_key
                   else "its shape keys are absolute (Relative off), played by Evaluation Time")
                + "; turn that off, or use Export PC2 or Export Alembic")
    mods = bridge.user_modifiers(obj)
    if not mods:
        return None
    return (f"{obj.name}: cannot bake to shape keys: its modifiers ({', '.join(mods)}) act after "
            "shape keys and would deform the simulated result again; use Export PC2 or Export "
            "Alembic, or apply or disable the modifiers and bake again")


def to_shape_keys(obj, header, frames):
    """One shape key per baked frame, keyed to be fully on at its frame only (deforming kinds),
    or location and rotation keyframes (RIGID: verlet.bake_to_keyframes' writer, in the
    object's rotation mode; this keyed rotation_euler whatever the mode, so a rigid body in
    Quaternion or Axis Angle mode kept its start rotation under its keys)."""
    start = header["frame_start"]
    if header["layout"] == "matrices":
        from .ragdoll_pose import bake_object
        bake_object(obj, header, frames)
        return
    ours = bridge.ensure_display_key(obj)
    ours.mute = True                                    # the keyed keys take over the display
    keys = obj.data.shape_keys
    # Changed: each frame's key is net of what the user's own keys add at their values (as our
    # display key is), so that the mix shows the bake; a user key at 0.5 used to lift it
    # at each frame: a user key animated by keyframes adds what its value there gives
    curves = _user_key_curves(keys)
    users = bridge.other_keys_offset(obj, ours, users_only=True)
    for i, co in enumerate(frames):
        f = start + i
        if curves:
            users = bridge.other_keys_offset(obj, ours, users_only=True, values={
                k: fc.evaluate(f) for k, fc in curves.items()})
        name = f"{KEY_PREFIX}{f:05d}"
        kb = keys.key_blocks.get(name) or obj.shape_key_add(name=name, from_mix=False)
        co = co if users is None else co - users
        kb.data.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
        for frame, value in ((f - 1, 0.0), (f, 1.0), (f + 1, 0.0)):
            kb.value = value
            kb.keyframe_insert("value", frame=frame)


def _user_key_curves(keys):
    """{key name: F-curve of its value} for the user's keyframed shape keys (ours left out)."""
    from .validity import _fcurves
    if keys.animation_data is None:
        return {}
    out = {}
    for fc in _fcurves(keys.animation_data):
        m = _VALUE_PATH.match(fc.data_path)
        if m and not fc.mute and m.group(1) != bridge.DISPLAY_KEY \
                and not bridge.FRAME_KEY.match(m.group(1)):
            out[m.group(1)] = fc
    return out


_VALUE_PATH = re.compile(r'key_blocks\["(.+)"\]\.value$')


ALEMBIC_SCOPES = (
    ("SIMULATED", "Simulated Objects", "The baked Verlet bodies only (cloth, plants, soft and "
     "rigid bodies): what the bake made, without colliders, cameras or the rest of the scene"),
    ("SELECTED", "Selected Objects", "The objects selected in the viewport, baked or not"),
    ("SCENE", "Whole Scene", "Every object of the scene, as File > Export > Alembic does"),
)


@contextlib.contextmanager
def _selection(context, objs):
    """Select exactly ``objs`` (restoring the user's selection and active object after), for
    Blender's exporter, whose only per-object choice is "selected only"."""
    layer = context.view_layer
    before = [o for o in layer.objects if o.select_get()]
    active = layer.objects.active
    hidden = [o.name for o in objs if o.name not in layer.objects]
    if hidden:
        raise RuntimeError(f"{', '.join(hidden)}: not in the view layer '{layer.name}', so "
                           "Blender's exporter cannot include it; enable its collection")
    try:
        for o in before:
            o.select_set(False)
        for o in objs:
            o.select_set(True)
        yield
    finally:
        for o in layer.objects:
            o.select_set(False)
        for o in before:
            o.select_set(True)
        layer.objects.active = active


def write_alembic(context, filepath, scope="SIMULATED"):
    """Blender's Alembic exporter over the baked range, our handler in read-only mode so that
    every (sub)frame shows the cache; written to a temporary name and renamed. ``scope``: one
    of ALEMBIC_SCOPES (default the simulated objects only)."""
    scene = context.scene
    objs = [o for o in bake.simulated_objects(scene) if o.get("verlet_baked")]
    headers = [d[0] for d in (bake.load(o) for o in objs) if d is not None]
    if not headers:
        raise RuntimeError("no usable bake")
    if scope == "SELECTED" and not any(o.select_get() for o in context.view_layer.objects):
        raise RuntimeError("nothing is selected; select the objects to export, or export the "
                           "simulated objects")
    if scope not in {s[0] for s in ALEMBIC_SCOPES}:
        raise RuntimeError(f"unknown scope {scope!r}: expected one of "
                           f"{', '.join(s[0] for s in ALEMBIC_SCOPES)}")
    start = min(h["frame_start"] for h in headers)
    end = max(h["frame_end"] for h in headers)
    os.makedirs(os.path.dirname(os.path.abspath(filepath)) or ".", exist_ok=True)
    tmp = filepath + ".tmp.abc"
    # Added: Blender's exporter writes a transform once unless the object "moves in time"
    # (animation data or constraints); our handler moves rigid bodies, so they were exported
    # static. A temporary constraint of ours with every limit off (it changes nothing) marks
    # them as moving; it is removed after the export.
    temporary = []
    for o in objs:
        if o.verlet.kind == "RIGID":
            con = o.constraints.new("LIMIT_LOCATION")
            con.name = "Verlet Alembic (temporary)"
            temporary.append((o, con))
    # a ragdoll is written as the meshes it deforms (their evaluated, skinned vertices)
    from .ragdoll import skinned_meshes
    written = [o for o in objs if o.type != "ARMATURE"]
    for o in objs:
        if o.type == "ARMATURE":
            written += [m for m in skinned_meshes(o, scene) if m not in written]
    chosen = contextlib.nullcontext() if scope != "SIMULATED" else _selection(context, written)
    try:
        with chosen, bake.guarded(read_only=True):
            result = bpy.ops.wm.alembic_export(filepath=tmp, start=start, end=end,
                                               selected=scope != "SCENE",
                                               as_background_job=False,
                                               evaluation_mode="VIEWPORT")
        if "FINISHED" not in result or not os.path.exists(tmp):
            raise RuntimeError("Blender's Alembic exporter did not write the file")
        os.replace(tmp, filepath)
    except BaseException:
        _discard(tmp)                   # the earlier file at filepath, if any, is untouched
        raise
    finally:
        for o, con in temporary:
            o.constraints.remove(con)
    return filepath


def _discard(path):
    """Remove a temporary file of a failed write, if it is there."""
    try:
        os.remove(path)
    except OSError:
        pass
