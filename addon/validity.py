"""Whether a bake still fits its scene: the settings hash stored with every cache, and the
checks that decide what a baked object shows and what its Cache status says.

A bake made with other settings than the scene's now is "outdated" and still plays (as
Blender's point cache does); a cache of another object, another kind of body or another topology
is not shown. Either way the object's ``verlet_outdated`` mark (state.py) makes the Cache panel
offer Bake Again.
"""

import hashlib
import json

import bpy
import numpy as np

from ..solver.simulation import DEFAULT_CONTACT_ITERATIONS
from . import bridge, cache
from .ragdoll import POSE_MATCH_KEY, signature

SCENE_SETTINGS = ("substeps", "iterations", "use_sleep", "wind_direction", "wind_strength", "wind_turbulence",
                  "wind_seed", "air_drag", "gravity_scale", "damping", "effector_weights")


NOT_SETTINGS = ("rna_type", "name", "preset", "cache_id")


def settings_hash(scene):
    """A hash of every setting that changes the result (scene, simulated objects, colliders).
    Objects enter anonymously, as a sorted list of their settings per kind, not by name (a
    rename leaves a bake up to date) nor by cache id (random: the same scene baked in two files
    must give the same cache header); adding, removing or retyping a Verlet object changes it.
    (Two bodies trading their settings exactly would not.) A keyframed setting enters by its
    keys, not by its value at the current frame, so the hash is the same on every frame of the
    timeline (it used to call a bake with keyed wind outdated on every frame but one)."""
    keyed = _keyed(scene)
    data = {k: _plain(getattr(scene.verlet, k, None), keyed, f"verlet.{k}")
            for k in SCENE_SETTINGS}
    data["gravity"] = list(scene.gravity) if scene.use_gravity else [0, 0, 0]
    if "gravity" in keyed or "use_gravity" in keyed:      # (unkeyed: the hash of 0.1.x)
        data["gravity"] = [_plain(list(scene.gravity), keyed, "gravity"),
                           _plain(scene.use_gravity, keyed, "use_gravity")]
    data["fps"] = scene.render.fps / scene.render.fps_base
    # a later setting enters only when it differs from its default, so earlier bakes stay valid
    if getattr(scene.verlet, "contact_iterations",
               DEFAULT_CONTACT_ITERATIONS) != DEFAULT_CONTACT_ITERATIONS:
        data["contact_iterations"] = scene.verlet.contact_iterations
    objects = []
    for obj in scene.objects:
        if getattr(obj, "verlet", None) is None or obj.verlet.kind == "NONE":
            continue
        keyed = _keyed(obj)
        s = {p.identifier: _plain(getattr(obj.verlet, p.identifier), keyed,
                                  f"verlet.{p.identifier}")
             for p in obj.verlet.bl_rna.properties if p.identifier not in NOT_SETTINGS}
        if obj.verlet.kind == "RAGDOLL" and obj.type == "ARMATURE":
            s["rig"] = signature(obj, keyed)
        objects.append(json.dumps(s, sort_keys=True, default=str))
    data["objects"] = sorted(objects)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _fcurves(anim):
    """The F-curves of an AnimData's action: Blender 4.2's flat action, or the channel bag of
    its slot in a layered action (4.4 and later; 5.0 has no flat list)."""
    action = anim.action
    if action is None:
        return []
    layers = getattr(action, "layers", None)
    if layers is None or (not len(layers) and len(getattr(action, "fcurves", ()))):
        return list(action.fcurves)
    slot = getattr(anim, "action_slot", None)
    curves = []
    for layer in layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot) if slot is not None else None
            if bag is not None:
                curves += list(bag.fcurves)
    return curves


# the data paths settings_hash looks up: our settings and the scene's gravity (_plain's path
# argument), and a ragdoll bone's pose-match override (ragdoll.signature)
HASHED_PATHS = ("verlet.", "gravity", "use_gravity")
HASHED_ENDS = (f'["{POSE_MATCH_KEY}"]',)


def _keyed(idblock):
    """{data path: {array index: keys}} of idblock's F-curves of HASHED_PATHS (keys: every
    point's position, handles and interpolation, and the curve's extrapolation and modifier
    count). Only those: an armature's action holds every bone's keys (a walk cycle in the demo,
    thousands of keys a second in a motion capture), and reading them all for a hash made on
    every frame shown cost 8 ms a frame of the demo's baked playback."""
    anim = getattr(idblock, "animation_data", None)
    if anim is None:
        return {}
    out = {}
    for fc in _fcurves(anim):
        if not (fc.data_path.startswith(HASHED_PATHS) or fc.data_path.endswith(HASHED_ENDS)):
            continue
        keys = [(tuple(k.co), tuple(k.handle_left), tuple(k.handle_right), k.interpolation)
                for k in fc.keyframe_points]
        out.setdefault(fc.data_path, {})[fc.array_index] = (keys, fc.extrapolation,
                                                             len(fc.modifiers), fc.mute)
    return out


_SCALAR = (bool, int, float, str, type(None))
_ID, _GROUP = bpy.types.ID, bpy.types.PropertyGroup   # (bpy.types.X is a lookup on each use)


def _plain(v, keyed=None, path=""):
    # nested settings (effector_weights) by value and a datablock (its collection) by name:
    # their default str() holds a memory address, which differs in every session; a keyed
    # setting (or component) by its keys. Made for every setting on every frame shown, so the
    # common case (a number) is tested first.
    if isinstance(v, _SCALAR):
        value = v
    elif isinstance(v, _ID):
        return v.name
    elif isinstance(v, _GROUP):
        return {p.identifier: _plain(getattr(v, p.identifier), keyed, f"{path}.{p.identifier}")
                for p in v.bl_rna.properties if p.identifier not in ("rna_type", "name")}
    else:
        try:
            value = list(v)
        except TypeError:
            value = v
    curves = (keyed or {}).get(path)
    if not curves:
        return value
    if isinstance(value, list):
        return [curves.get(i, value[i]) for i in range(len(value))]
    return curves.get(0, value)


def stored_path(obj):
    """Absolute path of the file the object's bake was stored in, or None (memory, none)."""
    rel = obj.get("verlet_cache")
    return bpy.path.abspath(str(rel)) if rel else None


# Whether a cache fits its object is checked once, then again only when the mesh or the file
# changes: {object name: (signature, message or None)}. Hashing the faces on every displayed
# frame cost time proportional to the mesh for nothing.
_checked = {}
OUTDATED_KEY = "verlet_outdated"
STALE_SETTINGS = "settings changed since the bake (Bake again to update it, or Free Bake)"


def set_outdated(obj, reason):
    """Mark (or clear, with None) why obj's bake is not current: the Cache panel then offers
    Bake again (state.bake_is_current). Written only on change."""
    if reason:
        if obj.get(OUTDATED_KEY) != reason:
            obj[OUTDATED_KEY] = reason
    elif OUTDATED_KEY in obj:
        del obj[OUTDATED_KEY]


def set_status(obj, text):
    if obj.get("verlet_status") != text:
        obj["verlet_status"] = text


def _corners(mesh):
    """(corner vertex (l,), polygon sizes (p,)) int32: the topology, in two bulk reads."""
    corner = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", corner)
    total = np.empty(len(mesh.polygons), dtype=np.int32)
    mesh.polygons.foreach_get("loop_total", total)
    return corner, total


def _fits(obj, header, source):
    """None when the cache may be shown on obj, else why not (a status line)."""
    layout = {"RIGID": "matrices", "RAGDOLL": "bones"}.get(obj.verlet.kind, "positions")
    # Added: a cache of another kind of body (e.g. a rigid body's matrices copied over a
    # cloth's file) used to be shown and fail inside the frame handler.
    if header.get("layout") != layout:
        return (f"Cache unusable: {obj.name}: the cache holds {header.get('layout')} of the "
                f"{header.get('kind')} body '{header.get('object')}', not this object's; "
                "bake again")
    owner = header.get("object_id")
    if owner is None and header.get("object") != obj.name:
        # a cache of 0.1.0 (named after its object): whose it is, only its header says
        return (f"Cache unusable: {obj.name}: the cache file was written for "
                f"'{header.get('object')}'; bake again")
    if owner is not None and owner != obj.verlet.cache_id:
        return (f"Cache unusable: {obj.name}: the cache file belongs to another object "
                f"('{header.get('object')}' when it was baked); bake again")
    if layout == "bones":
        from .ragdoll import topology_hash
        if obj.type != "ARMATURE" or topology_hash(obj) != header.get("topology_hash"):
            return ("Cache outdated: the armature's deforming bones changed since the bake; "
                    "press Bake to bake again (or Free Bake)")
        return None
    if obj.type == "MESH" and layout == "positions":
        mesh = obj.data
        # Changed: the faces used to be hashed on every shown frame (with a Python loop over
        # the polygons of mixed meshes); now two bulk reads are compared with the last ones
        # checked, and hashed only when they differ. (Pointers to the arrays are no signature:
        # Blender copies them as it evaluates.)
        corner, total = _corners(mesh)
        key = (source, header["topology_hash"], header["vertex_count"], len(mesh.vertices))
        known = _checked.get(obj.name)
        if known is not None and known[0] == key and np.array_equal(known[1], corner) \
                and np.array_equal(known[2], total):
            return known[3]
        why = None
        n = len(mesh.vertices)
        if n != header["vertex_count"] or \
                bridge.topology_hash(n, bridge.faces(mesh)) != header["topology_hash"]:
            why = ("Cache outdated: the mesh topology changed since the bake; press Bake to "
                   "bake again (or Free Bake)")
        _checked[obj.name] = (key, corner, total, why)
        return why
    return None


def open_bake(obj, shash=None):
    """(header, FrameReader) of obj's bake, read lazily (one frame per seek), or None when it
    cannot be shown; the object's status then says why. ``shash`` (the scene's settings_hash)
    flags a bake made with other settings as outdated; it still plays, as Blender's point cache
    does, until it is baked again or freed."""
    try:
        reader = cache.open_frames(obj.verlet.cache_id or None, stored_path(obj))
    except cache.CacheError as exc:
        set_status(obj, f"Cache unusable: {exc}")
        set_outdated(obj, "unusable")
        return None
    if reader is None:
        # Added: a bake whose cache is gone (deleted, left behind when the .blend moved, or a
        # Free Bake undone) says so instead of silently showing nothing.
        where = stored_path(obj) or "memory"
        set_status(obj, f"Cache missing: {obj.name}: no cache in {where}; bake again")
        set_outdated(obj, "missing")
        return None
    header = reader.header
    why = _fits(obj, header, reader.path or id(reader.header))
    if why is not None:
        set_status(obj, why)
        set_outdated(obj, "unusable")
        return None
    where = "on disk" if reader.path else "in memory (save the .blend to keep it)"
    status = str(obj.get("verlet_status", ""))
    partial = " (cancelled: frames kept)" if "(cancelled" in status else ""
    # the bake's warnings (bake.store wrote them after the place) stay; the outdated note is
    # decided afresh below
    notes = status.split("; outdated: ")[0]
    notes = notes[notes.index("; warning: "):] if "; warning: " in notes else ""
    status = f"Baked {header['frame_start']}-{header['frame_end']}{partial}, {where}{notes}"
    # (0.1.0's caches hashed the settings another way: not comparable, not called outdated)
    stale = shash is not None and "object_id" in header and header.get("settings_hash") != shash
    set_status(obj, status + ("; outdated: " + STALE_SETTINGS if stale else ""))
    set_outdated(obj, "settings" if stale else None)
    return header, reader


def forget(name=None):
    """Drop what was checked about one object (or all: a file load, an undo)."""
    if name is None:
        _checked.clear()
    else:
        _checked.pop(name, None)
