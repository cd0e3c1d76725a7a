"""Whether a bake still fits its scene: the settings hash stored with every cache, and the
checks that decide what a baked object shows and what its Cache status says.

A bake made with other settings than the scene's now is "outdated" and still plays (as
Blender's point cache does), as does one whose frames no longer cover the simulation range
(extended after the bake: the frames beyond hold its last one); a cache of another object,
another kind of body or another topology is not shown. Either way the object's
``verlet_outdated`` mark (state.py) makes the Cache panel offer Bake Again.
"""

import hashlib
import json
import marshal
import re

import bpy
import numpy as np

from ..solver.simulation import DEFAULT_CONTACT_ITERATIONS
from . import bridge, cache
from .animated import _BOUNCING
from .ragdoll import AXES, POSE_MATCH_KEY, signature

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
    frictions = []             # the friction values that meet in contacts (_friction_met)
    for obj in scene.objects:
        if getattr(obj, "verlet", None) is None or obj.verlet.kind == "NONE":
            continue
        keyed = _keyed(obj)
        frictions += _friction_met(obj, keyed)
        s = {p.identifier: _plain(getattr(obj.verlet, p.identifier), keyed,
                                  f"verlet.{p.identifier}")
             for p in obj.verlet.bl_rna.properties if p.identifier not in NOT_SETTINGS}
        if obj.verlet.kind == "RAGDOLL" and obj.type == "ARMATURE":
            s["rig"] = signature(obj, keyed)
        # a simulated body's Restitution bounces it since 2026-11-27 (it was read for colliders
        # only): a bake made before with one above 0 (or keyed) did not bounce, so it must read
        # outdated; at 0 the hash is the one of before, and those bakes stay valid (a ragdoll
        # takes no restitution: animated.py _BOUNCING)
        if obj.verlet.kind in _BOUNCING and s.get("restitution") != 0.0:
            s["restitution_acts"] = True
            # and a strand plant's edge frames bounce too since 2026-11-27 (they kept 0)
            if obj.verlet.kind == "PLANT":
                s["restitution_frames"] = True
        # and its keyed Friction since 2026-11-27 (only the start frame's value was read): a
        # bake made before with Friction keyed reads outdated; unkeyed, the hash is unchanged
        if obj.verlet.kind in _BOUNCING and "verlet.friction" in keyed:
            s["friction_keys_act"] = True
        # and a ragdoll's Friction since 2026-11-27 (its capsules carried 0.5 whatever it was):
        # at 0.5, unkeyed, its entry is the one of before
        if obj.verlet.kind == "RAGDOLL" and ("verlet.friction" in keyed
                                             or s.get("friction") != 0.5):
            s["friction_acts"] = True
        objects.append(json.dumps(s, sort_keys=True, default=str))
    data["objects"] = sorted(objects)
    # a body's own friction counts at colliders, and two bodies' combine by their geometric
    # mean, since 2026-11-27 (colliders' alone counted, and bodies took the mean): a scene
    # where different friction values meet (or one is keyed) reads outdated; where they are
    # all equal nothing changed (sqrt(mu mu) = mu to the bit), and its hash is as before
    # (two keyed sources may differ although both read "<keyed>")
    if len(set(frictions)) > 1 or (_KEYED in frictions and len(frictions) > 1):
        data["friction_mixed"] = True
    # edges meet colliders since 2026-11-27 (solver/collision/edges.py: a cloth hangs on a
    # rail thinner than its edges): a bake of edges and a primitive other than a plane made
    # before may differ; without both the hash is the one of before. 2 since the fifteenth
    # session (2026-11-27): an edge resting on a collider holds its cloth up for sleeping, an
    # oval collider's broad phase misses no edge and edges have a tunnelling guard, so a bake
    # made with the first edges (a cloth held by a rail alone never slept, a cloth thrown at a
    # wire went through) reads outdated too
    if _edges_meet_primitives(scene):
        data["edge_contacts"] = 2
    # since 2026-12-01 (fortieth session) Auto reads a collider's faces, not its vertices alone
    # (an open box, a pipe and an edge-only mesh are meshes, not a solid box, a solid cylinder
    # and a plane; a thin closed box lying flat is a box, not a plane), and soft bodies' and
    # plants' shape goals come before the collider contacts (constraints/shapes.py, "Order"):
    # a bake made before with either reads outdated; in a scene with neither the hash is the
    # one of before
    if _auto_reads_otherwise(scene):
        data["auto_faces"] = 1
    kinds = {o.verlet.kind for o in scene.objects if getattr(o, "verlet", None) is not None}
    if kinds & {"SOFT", "PLANT"} and "COLLIDER" in kinds:
        data["goals_before_colliders"] = 1
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _edges_meet_primitives(scene):
    """Whether a cloth or plant shares the scene with a collider whose shape (inferred, for
    Auto, as the bake infers it: simscene.infer_collider) is a sphere, box, cylinder or
    capsule: the colliders edges meet (solver/collision/edges.py)."""
    objs = [o for o in scene.objects if getattr(o, "verlet", None) is not None]
    if not any(o.verlet.kind in ("CLOTH", "PLANT") for o in objs):
        return False
    from .simscene import infer_collider
    for obj in objs:
        if obj.verlet.kind != "COLLIDER" or obj.type != "MESH":
            continue
        shape = obj.verlet.collider_shape
        if shape == "AUTO" and len(obj.data.vertices):
            shape = infer_collider(obj, bridge.positions(obj.data))[0].upper()
        if shape in ("SPHERE", "BOX", "CYLINDER", "CAPSULE"):
            return True
    return False


def _auto_reads_otherwise(scene):
    """Whether an Auto collider's mesh reads as another shape than it did by its vertices alone
    (geometry.primitive_shape, by_vertices)."""
    from ..solver.geometry import primitive_shape
    for obj in scene.objects:
        if getattr(obj, "verlet", None) is None or obj.verlet.kind != "COLLIDER" or \
                obj.type != "MESH" or obj.verlet.collider_shape != "AUTO" or \
                not len(obj.data.vertices):
            continue
        x = bridge.positions(obj.data)
        start, total, corner = bridge.polygon_corners(obj.data)
        if primitive_shape(x, corner, start, total)[0] != \
                primitive_shape(x, corner, start, total, by_vertices=True)[0]:
            return True
    return False


def _friction_met(obj, keyed):
    """The friction values obj brings to its contacts, for settings_hash's mark (a list): a
    simulated body's Friction, a plant's with 0.5 (a strand's edge frames carried 0.5 until
    2026-11-27), a collider's when above 0 (a frictionless collider stays so:
    solver/collision/project.combined_friction), none for a frictionless collider; "<keyed>"
    for a keyed Friction (any value may meet another's)."""
    kind = obj.verlet.kind
    if "verlet.friction" in keyed:
        met = [_KEYED]
    else:
        f = float(obj.verlet.friction)
        met = [] if kind == "COLLIDER" and not f > 0 else [f]
    return met + [0.5] if kind == "PLANT" else met


# ------------------------------------------------------------------ the hash during playback
# The frame handler needs the hash on every frame shown, and making it (every setting through
# RNA, json, sha256) cost 1.5 to 1.8 ms of the demo's 5.1 to 5.7 ms baked frame (18 Verlet
# objects). current_hash makes it again only when a fingerprint of everything it reads changed
# since the last call: 0.3 ms there. A fingerprint, not a depsgraph_update_post handler: a
# setting changed through RNA or its stored value written, or a key edited, then frame_set,
# runs frame_change_post and no depsgraph_update_post (bpy 4.2 and 5.2, headless), so an
# update handler could miss a change and show a stale bake as current; reading the data cannot.
_last = {"fingerprint": None, "hash": None}
_KEYED = "<keyed>"      # a stored value the hash takes from its keys instead (_masked)


def current_hash(scene):
    """settings_hash(scene), made again only when fingerprint(scene) changed since the last
    call. For the frame handler; a bake stores settings_hash itself."""
    fp = fingerprint(scene)
    if fp is None or fp != _last["fingerprint"]:
        h = settings_hash(scene)           # (it raises as before; nothing is remembered then)
        # taken again: reading a group setting through RNA stores its empty group the first
        # time (effector_weights, Scene.verlet itself), which changes the stored values but
        # no setting; with the first fingerprint, the next frame would hash again for that
        _last.update(fingerprint=fingerprint(scene), hash=h)
    return _last["hash"]


def settle(scene, h):
    """After a bake: its stored settings hash h is the current one for the scene's fingerprint
    now. The fingerprint does not read meshes, which the hash's Auto marks do (edge_contacts,
    auto_faces): a collider edited since the last hash (an Auto cube made an open bin) kept
    the stale hash, which called every fresh bake outdated until a setting changed."""
    _last.update(fingerprint=fingerprint(scene), hash=h)


def fingerprint(scene):
    """Bytes that differ whenever settings_hash(scene) may differ: what the hash reads, read
    raw (each settings group's stored values in one call, the rig's bones in bulk). It is a
    superset, so a change that leaves the hash alone (a preset's name, the frame range) only
    makes current_hash hash again. A keyed setting's stored value (the value at the current
    frame) is left out, as the hash takes its keys (which are in): else every frame of a keyed
    wind would hash again. Written by marshal, so that what == confuses and the hash's json
    does not (-0.0 and 0.0, True and 1 and 1.0) tells two fingerprints apart; its version 2,
    as later ones (and pickle) write a value seen twice as a reference, which makes equal
    values give other bytes when they are one object in one call and two in the next. None
    (hash every time) when a value is of a type marshal cannot write."""
    keyed = _keyed(scene)
    render = scene.render
    parts = [_stored(scene, keyed), keyed, _masked(list(scene.gravity), keyed.get("gravity")),
             _masked(scene.use_gravity, keyed.get("use_gravity")), render.fps, render.fps_base]
    for obj in scene.objects:
        settings = getattr(obj, "verlet", None)
        kind = "NONE" if settings is None else settings.kind
        if kind == "NONE":
            continue
        keyed, what = _keyed(obj), obj.type
        parts.append((what, _stored(obj, keyed), keyed))
        if kind == "RAGDOLL" and what == "ARMATURE":
            parts.append(_rig(obj, keyed))
    try:
        return marshal.dumps(parts, 2)
    except ValueError:
        return None


def _stored(owner, keyed):
    """The stored values of owner's Verlet settings (Object.verlet or Scene.verlet), a dict as
    to_dict gives it (a setting never set is absent: its default, fixed while the add-on is
    registered), datablocks by name (the hash names them; a rename changes it) and keyed
    values masked. None when nothing was ever set. Blender 5.0 keeps what bpy.props defines
    apart from custom properties (bl_system_properties_get); 4.2 keeps both in one group."""
    get = getattr(owner, "bl_system_properties_get", None)
    props = get() if get is not None else owner
    group = None if props is None else props.get("verlet")
    if group is None:
        return None
    raw = group.to_dict() if hasattr(group, "to_dict") else group
    if isinstance(raw, (dict, list)):
        _named(raw)
    for path, curves in keyed.items():
        if not path.startswith("verlet.") or not isinstance(raw, dict):
            continue
        *parents, leaf = path[len("verlet."):].split(".")
        where = raw
        for name in parents:
            where = where.get(name) if isinstance(where, dict) else None
        if isinstance(where, dict) and leaf in where:
            where[leaf] = _masked(where[leaf], curves)
    return raw


def _named(c):
    # to_dict's dict (or list) with a datablock replaced by its name, in place: the datablock
    # itself would neither marshal nor tell a rename. (Called per container, not per value:
    # once per value was a quarter of the fingerprint's time.)
    for k, v in (c.items() if isinstance(c, dict) else enumerate(c)):
        if type(v) in _SCALAR:            # (most; isinstance(v, ID) is the slow test)
            continue
        if isinstance(v, (dict, list)):
            _named(v)
        elif isinstance(v, _ID):
            c[k] = ("ID", v.name)
    return c


def _masked(value, curves):
    """value with what _plain takes from the keys instead replaced by _KEYED (the same rule,
    _by_keys), so that a value the hash reads is never masked."""
    return _by_keys(value, curves, lambda i: _KEYED)


def _by_keys(value, curves, key):
    """value with each keyed part replaced by key(i): an array's keyed components i, a
    scalar's key of index 0 ({index: keys} curves of its data path, _keyed; none: value)."""
    if not curves:
        return value
    if isinstance(value, list):
        return [key(i) if i in curves else v for i, v in enumerate(value)]
    return key(0) if 0 in curves else value


# the pose bone settings signature reads: flags and limits
_IK_FLAGS = [f"{p}_{a}" for a in AXES for p in ("use_ik_limit", "lock_ik")]
_IK_LIMITS = [f"{p}_{a}" for a in AXES for p in ("ik_min", "ik_max")]


def _rig(obj, keyed):
    """What ragdoll.signature reads, in bulk: the bones' names, deform flags and envelope radii
    and the pose bones' names, IK settings and pose-match overrides (a keyed number masked:
    signature takes its keys; anything else kept, as signature's float() may refuse it).
    (Read into arrays of the settings' own types: into lists it cost a third more.)"""
    bones, pose = obj.data.bones, obj.pose
    n = len(bones)
    flags, sizes = np.empty(n, dtype=bool), np.empty((2, n), dtype=np.float32)
    bones.foreach_get("use_deform", flags)
    bones.foreach_get("head_radius", sizes[0])
    bones.foreach_get("tail_radius", sizes[1])
    out = [bones.keys(), flags.tobytes(), sizes.tobytes()]
    if pose is None:
        return out
    pbs = pose.bones
    n = len(pbs)
    flags = np.empty((len(_IK_FLAGS), n), dtype=bool)
    limits = np.empty((len(_IK_LIMITS), n), dtype=np.float32)
    for row, attr in zip(flags, _IK_FLAGS):
        pbs.foreach_get(attr, row)
    for row, attr in zip(limits, _IK_LIMITS):
        pbs.foreach_get(attr, row)
    out += [pbs.keys(), flags.tobytes(), limits.tobytes()]
    masks = any(path.endswith(HASHED_ENDS) for path in keyed)
    for pb in pbs:
        v = pb.get(POSE_MATCH_KEY)
        if v is None or isinstance(v, (int, float, str)):
            pass
        elif hasattr(v, "to_dict"):
            v = v.to_dict()
        elif hasattr(v, "to_list"):
            v = v.to_list()
        if masks and isinstance(v, (int, float)):
            v = _masked(v, keyed.get(pb.path_from_id(f'["{POSE_MATCH_KEY}"]')))
        out.append(v)
    return out


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
    return _by_keys(value, curves, curves.__getitem__) if curves else value


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
    # a bake cut short (cancelled, or stopped by an error) keeps saying so
    cut = re.search(r" \((cancelled|stopped at frame -?\d+): frames kept\)", status)
    partial = cut.group(0) if cut else ""
    # the bake's warnings (bake.store wrote them after the place) stay; the outdated note is
    # decided afresh below
    notes = status.split("; outdated: ")[0]
    notes = notes[notes.index("; warning: "):] if "; warning: " in notes else ""
    status = f"Baked {header['frame_start']}-{header['frame_end']}{partial}, {where}{notes}"
    # (0.1.0's caches hashed the settings another way: not comparable, not called outdated)
    stale = shash is not None and "object_id" in header and header.get("settings_hash") != shash
    uncovered = None if stale or partial else _uncovered(obj, header)
    set_status(obj, status + ("; outdated: " + STALE_SETTINGS if stale else "")
               + (f"; outdated: the simulation range is now {uncovered}, beyond the bake (Bake "
                  "again to cover it)" if uncovered else ""))
    set_outdated(obj, "settings" if stale else "range" if uncovered else None)
    return header, reader


def _uncovered(obj, header):
    """The simulation range "start-end" when it changed since the bake (header "scene_range")
    and now reaches frames the bake does not cover (extended after it: those frames held the
    bake's last one, and nothing said so), else None. A range within the bake's is covered, and
    one as it was when baked is the one the artist baked in (a command-line bake of a range of
    its own, `--frames`, leaves the scene's as it was); a cache written before the header kept
    the range says nothing."""
    scenes = getattr(obj, "users_scene", ())
    baked_in = header.get("scene_range")
    if not scenes or baked_in is None:
        return None
    sc = scenes[0].verlet
    start, end = int(sc.frame_start), int(sc.frame_end)
    if [start, end] == list(baked_in):
        return None
    if start < int(header["frame_start"]) or end > int(header["frame_end"]):
        return f"{start}-{end}"
    return None


def forget(name=None):
    """Drop what was checked about one object (or all: a file load, an undo)."""
    if name is None:
        _checked.clear()
        _last.update(fingerprint=None, hash=None)
    else:
        _checked.pop(name, None)
