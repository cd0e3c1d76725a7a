"""Ragdolls from armatures: Object.verlet.kind = 'RAGDOLL' (Blender side).

Build (once, at the start frame, from the EVALUATED armature: its animated pose, constraints and
IK included, not the rest pose):
- every deforming bone (``Bone.use_deform``) becomes one rigid capsule body
  (``Builder.add_capsule_body(head, tail, radius, mass, up)``: particles along the bone with the
  capsule radius as contact radius, off-axis frame particles, one rigid shape-matching cluster);
- the capsule radius is fitted to the vertices the skinned meshes (meshes with an enabled
  Armature modifier pointing at this armature) weight to the bone: the weighted RADIUS_PERCENTILE
  percentile of their distance to the bone segment (weights = the bone's vertex group weight);
  a bone no vertex is weighted to takes its envelope radii (mean of head_radius and
  tail_radius), and an armature without a skinned mesh does so for every bone (a warning);
- the object's mass is shared between the bones in proportion to their capsule volumes;
- a joint (``Builder.add_joint``) where a bone meets its nearest deforming ancestor, anchored at
  the bone's head; its limits come from the pose bone's IK settings (joint_limits): exactly one
  axis free (the others locked by lock_ik_* or limited to a zero range) makes a hinge about that
  bone-local axis with limits (ik_min, ik_max); otherwise a ball joint whose swing cone is the
  largest X/Z limit and whose twist (about the bone's Y axis) is the Y limit; no limit at all
  is an unlimited ball. Blender's IK limits are angles from the rest pose; the solver's are from
  the build pose, so the build pose's own angle is subtracted.

Every frame (before the step):
- ``pin_group`` names a bone collection: its bones' particles are hard pins that follow the
  bones' evaluated pose (the user's IK and constraints included): IK by pinning;
- ``animated`` (keyframable) on: every bone follows its animated pose through soft pins of
  compliance 0; off: the pins let go (compliance inf), the bones keep the velocity their
  animation gave them (the pins moved them along it: seed 002, velocity from positions);
- ``pose_match`` (keyframable, 0..1) with the per-bone override POSE_MATCH_KEY (a custom
  property on the pose bone, keyframable too; negative = use the object's) drives each joint
  toward its animated relative rotation (``Simulation.set_joint_targets`` /
  ``set_joint_drive``).

Output: the bones' world matrices, (bones, 4, 4) per frame in the cache (layout "bones"), put on
the armature as pose bones' ``matrix_basis`` (show). The user's own pose is remembered
(REST_POSE_KEY) and restored before the animated pose is read and by Free Bake.
"""

import hashlib
import math

import numpy as np

from .bridge import BridgeError

POSE_MATCH_KEY = "verlet_pose_match"     # per-bone override (custom property on the pose bone)
REST_POSE_KEY = "verlet_rest_pose"       # {bone: 16 floats} the user's matrix_basis before ours
SHOWN_POSE_KEY = "verlet_shown_pose"     # {bone: 16 floats} the last matrix_basis we wrote
RADIUS_PERCENTILE = 60.0                 # [%] of the weighted distances of a bone's vertices
MIN_WEIGHT = 0.2                         # vertices weighted less to a bone do not size it
MIN_BONE_LENGTH = 1e-4                   # [m] shorter bones are refused (zero-size)
MIN_RADIUS = 1e-3                        # [m] least capsule radius
AXES = "xyz"


def is_ragdoll(obj):
    return getattr(obj, "verlet", None) is not None and obj.verlet.kind == "RAGDOLL"


# ---------------------------------------------------------------------- reading the rig
def deform_bones(obj):
    """Names of the armature's deforming bones, parents before children. Raises BridgeError
    naming the armature when there is none."""
    bones = obj.data.bones
    if len(bones) == 0:
        raise BridgeError(f"{obj.name}: the armature has no bones; add bones (Edit Mode) or set "
                          "its Verlet kind to None")
    order, seen = [], set()

    def visit(bone):
        if bone.use_deform:
            order.append(bone.name)
        seen.add(bone.name)
        for child in bone.children:
            visit(child)
    for bone in bones:
        if bone.parent is None:
            visit(bone)
    if not order:
        raise BridgeError(f"{obj.name}: no bone of the armature deforms (Bone Properties > "
                          "Deform); a ragdoll simulates the deforming bones")
    return order


def deform_parent(obj, name, names):
    """The nearest deforming ancestor of bone ``name`` among ``names``, or None."""
    bone = obj.data.bones[name].parent
    while bone is not None and bone.name not in names:
        bone = bone.parent
    return None if bone is None else bone.name


def skinned_meshes(obj, scene):
    """Mesh objects of the scene deformed by this armature (an enabled Armature modifier)."""
    out = []
    for o in scene.objects:
        if o.type != "MESH":
            continue
        if any(m.type == "ARMATURE" and m.object == obj and (m.show_viewport or m.show_render)
               for m in o.modifiers):
            out.append(o)
    return out


def topology_hash(obj):
    """A hash of the deforming bones and their parents: a cache fits an armature with these."""
    try:
        names = deform_bones(obj)
    except BridgeError:
        names = []
    h = hashlib.sha256()
    for n in names:
        h.update(f"{n}<{deform_parent(obj, n, set(names))}|".encode())
    return h.hexdigest()[:16]


def signature(obj, keyed=None):
    """What of the armature changes a ragdoll's result beyond Object.verlet (for the settings
    hash): per bone its deform flag, envelope radii, IK locks and limits and pose-match
    override. keyed: validity._keyed(obj); a keyed override enters by its keys, not by its value
    at the current frame (else the hash, made on every frame shown, changed with the frame)."""
    out = []
    for bone in obj.data.bones:
        pb = obj.pose.bones.get(bone.name)
        ik = [] if pb is None else [getattr(pb, f"{p}_{a}") for a in AXES
                                    for p in ("use_ik_limit", "ik_min", "ik_max", "lock_ik")]
        override = None if pb is None else pb.get(POSE_MATCH_KEY)
        if override is not None:
            override = float(override)
            curves = (keyed or {}).get(pb.path_from_id(f'["{POSE_MATCH_KEY}"]'))
            if curves:
                override = curves.get(0, override)
        out.append([bone.name, bone.use_deform, round(bone.head_radius, 6),
                    round(bone.tail_radius, 6), [round(float(v), 6) for v in ik], override])
    return out


def check_armature(obj, pose_world, names):
    """Refuse what a rigid capsule cannot be, naming the armature and the bone."""
    m = np.array(obj.matrix_world, dtype=np.float64)[:3, :3]
    scale = np.linalg.norm(m, axis=0)
    if not np.all(scale > 1e-9):
        raise BridgeError(f"{obj.name}: its scale is zero on an axis; give the armature object a "
                          "non-zero scale")
    if np.ptp(scale) > 1e-4 * scale.max():
        raise BridgeError(f"{obj.name}: the armature object is scaled non-uniformly (scale "
                          f"{tuple(round(float(v), 4) for v in scale)}); capsules cannot follow "
                          "a squashed bone: apply the scale (Ctrl+A > Scale) or make it uniform")
    for name in names:
        bone = obj.data.bones[name]
        if bone.length < MIN_BONE_LENGTH:
            raise BridgeError(f"{obj.name}: bone '{name}' has zero size (length "
                              f"{bone.length:.2g} m); give it a length or turn its Deform off")
        s = np.linalg.norm(pose_world[name][:3, :3], axis=0) / scale.mean()
        if np.ptp(s) > 1e-3 or abs(s.mean() - 1.0) > 1e-3:
            raise BridgeError(f"{obj.name}: bone '{name}' is scaled in its pose (scale "
                              f"{tuple(round(float(v), 4) for v in s)}); a ragdoll bone is "
                              "rigid: reset its pose scale (Alt+S) or its parent's")


def joint_limits(pb, owner="armature"):
    """(kind, local axis index or None, limits) of the joint from pose bone ``pb``'s IK
    settings (module docstring): ("hinge", i, (lo, hi) or None), ("ball", None, (swing,
    twist_lo, twist_hi)) or ("ball", None, None). Angles [rad] from the REST pose. Raises
    BridgeError naming the bone when a limit's min exceeds its max."""
    free, limited = [], {}
    for i, a in enumerate(AXES):
        use = bool(getattr(pb, f"use_ik_limit_{a}"))
        lo, hi = float(getattr(pb, f"ik_min_{a}")), float(getattr(pb, f"ik_max_{a}"))
        if use and lo > hi:
            raise BridgeError(f"{owner}: bone '{pb.name}': IK limit {a.upper()} has min "
                              f"{math.degrees(lo):.1f} deg above max {math.degrees(hi):.1f} deg "
                              "(Bone Properties > Inverse Kinematics); swap them")
        locked = bool(getattr(pb, f"lock_ik_{a}")) or (use and hi - lo < 1e-6)
        if locked:
            limited[i] = (0.0, 0.0)
        else:
            free.append(i)
            if use:
                limited[i] = (lo, hi)
    if len(free) == 1:
        return "hinge", free[0], limited.get(free[0])
    if not limited:
        return "ball", None, None
    swing = 0.0
    for i in (0, 2):
        lo, hi = limited.get(i, (-math.pi, math.pi))
        swing = max(swing, abs(lo), abs(hi))
    tlo, thi = limited.get(1, (-math.pi, math.pi))
    return "ball", None, (min(swing, math.pi), tlo, thi)


def _twist_angle(r, axis):
    """Angle [rad] of rotation matrix r (3, 3) about local axis index ``axis`` (swing-twist)."""
    from mathutils import Matrix
    q = Matrix(r.tolist()).to_quaternion()
    return 2.0 * math.atan2((q.x, q.y, q.z)[axis], q.w)


def _unit(m):
    """The rotation of a 4x4 (or 3x3) matrix with its (uniform) scale divided out."""
    r = np.array(m, dtype=np.float64)[:3, :3]
    return r / np.linalg.norm(r, axis=0)


def fit_radii(obj, names, meshes):
    """(k,) capsule radii [m] from the skinned meshes' vertices weighted to each bone (module
    docstring), and the names of the bones that took their envelope radii. Measured as the
    Armature modifier binds them: the mesh's vertices in the armature's space against the bones'
    rest (Bone.matrix_local), then scaled by the armature object's (uniform) scale."""
    radii = np.zeros(len(names))
    dist = {n: [] for n in names}
    weight = {n: [] for n in names}
    for mesh_obj in meshes:
        me = mesh_obj.data
        n = len(me.vertices)
        if n == 0:
            continue
        co = np.empty(n * 3, dtype=np.float32)
        me.vertices.foreach_get("co", co)
        mw = np.linalg.inv(np.array(obj.matrix_world, dtype=np.float64)) @ \
            np.array(mesh_obj.matrix_world, dtype=np.float64)
        x = co.reshape(-1, 3).astype(np.float64) @ mw[:3, :3].T + mw[:3, 3]
        groups = {g.index: g.name for g in mesh_obj.vertex_groups if g.name in dist}
        if not groups:
            continue
        vi, gi, wi = [], [], []
        for v in me.vertices:               # build time: membership has no bulk accessor
            for g in v.groups:
                if g.group in groups and g.weight >= MIN_WEIGHT:
                    vi.append(v.index)
                    gi.append(g.group)
                    wi.append(g.weight)
        vi, gi, wi = np.array(vi, np.int64), np.array(gi, np.int64), np.array(wi)
        for index, name in groups.items():
            sel = gi == index
            if not sel.any():
                continue
            bone = obj.data.bones[name]
            head, tail = np.array(bone.head_local), np.array(bone.tail_local)
            p = x[vi[sel]]
            d = tail - head
            t = np.clip((p - head) @ d / max(d @ d, 1e-18), 0.0, 1.0)
            dist[name].append(np.linalg.norm(p - (head + t[:, None] * d), axis=1))
            weight[name].append(wi[sel])
    scale = float(np.linalg.norm(np.array(obj.matrix_world, dtype=np.float64)[:3, 0]))
    envelope = []
    for k, name in enumerate(names):
        if dist[name]:
            d, w = np.concatenate(dist[name]), np.concatenate(weight[name])
            order = np.argsort(d)
            cw = np.cumsum(w[order])
            radii[k] = d[order][np.searchsorted(cw, RADIUS_PERCENTILE / 100.0 * cw[-1])] * scale
        else:
            bone = obj.data.bones[name]
            radii[k] = 0.5 * (bone.head_radius + bone.tail_radius) * scale
            envelope.append(name)
    return np.maximum(radii, MIN_RADIUS), envelope


def pin_bones(obj, names):
    """Names of the deforming bones in the bone collection ``pin_group`` (empty: none). Raises
    BridgeError naming the armature when no collection has that name."""
    group = obj.verlet.pin_group
    if not group:
        return set()
    arm = obj.data
    collections = getattr(arm, "collections_all", None) or getattr(arm, "collections", ())
    col = next((c for c in collections if c.name == group), None)
    if col is None:
        have = ", ".join(sorted(c.name for c in collections)) or "none"
        raise BridgeError(f"{obj.name}: pin group '{group}' names no bone collection of the "
                          f"armature (its collections: {have}); choose one in the Shape panel")
    pinned = {b.name for b in col.bones} & set(names)
    if not pinned:
        raise BridgeError(f"{obj.name}: bone collection '{group}' holds no deforming bone; "
                          "assign the bones to pin to it")
    return pinned


def evaluated_pose(obj, depsgraph, names):
    """{bone: (4, 4) float64 world matrix} of the evaluated armature's pose (animation,
    constraints and IK applied)."""
    ev = obj.evaluated_get(depsgraph)
    mw = np.array(ev.matrix_world, dtype=np.float64)
    return {n: mw @ np.array(ev.pose.bones[n].matrix, dtype=np.float64) for n in names}


def rest_pose(obj, names):
    """{bone: (4, 4) world matrix} of the rest pose (Bone.matrix_local)."""
    mw = np.array(obj.matrix_world, dtype=np.float64)
    return {n: mw @ np.array(obj.data.bones[n].matrix_local, dtype=np.float64) for n in names}
