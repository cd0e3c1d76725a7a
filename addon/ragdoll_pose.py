"""A ragdoll's result on the armature: pose bones' matrix_basis from the bones' world matrices
(show), the user's own pose kept and put back (remember_rest, unshow, restore_rest), and pose
keyframes written into the armature's action (bake_to_keyframes; object keys for rigid bodies).

The basis of bone b with parent p (both posed, Blender's default inheritance) is
    basis_b = (B_p^-1 B_b)^-1 P_p^-1 P_b
with B the rest matrices (Bone.matrix_local) and P the pose matrices, both in armature space;
for a root bone basis_b = B_b^-1 P_b. A parent that is not simulated (a non-deforming control
bone) keeps its current pose.

Keyframes touch only what is baked: the channels written (rotation in each bone's own rotation
mode: rotation_quaternion for quaternion bones, rotation_euler or rotation_axis_angle
otherwise; location for root bones) lose their keys inside the baked frame range and get one
key per baked frame; keys outside the range, other channels, other bones and other objects are
left as they were.
"""

import re

import numpy as np

from . import ragdoll

_TRANSFORM = re.compile(r'pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(location|rotation_\w+|scale)$')


def _matrix(m):
    from mathutils import Matrix
    return Matrix(np.asarray(m, dtype=np.float64).tolist())


def bases(obj, names, world):
    """{bone: (4, 4) matrix_basis} that put bones ``names`` (parents first) at world matrices
    ``world`` (k, 4, 4) (module docstring)."""
    inv_w = np.linalg.inv(np.array(obj.matrix_world, dtype=np.float64))
    pose = {n: inv_w @ np.asarray(world[k], dtype=np.float64) for k, n in enumerate(names)}
    out = {}
    for n in names:
        bone = obj.data.bones[n]
        rest = np.array(bone.matrix_local, dtype=np.float64)
        if bone.parent is None:
            out[n] = np.linalg.inv(rest) @ pose[n]
            continue
        pp = pose.get(bone.parent.name)
        if pp is None:
            pp = np.array(obj.pose.bones[bone.parent.name].matrix, dtype=np.float64)
        rel = np.linalg.inv(np.array(bone.parent.matrix_local, dtype=np.float64)) @ rest
        out[n] = np.linalg.inv(rel) @ np.linalg.inv(pp) @ pose[n]
    return out


def _basis_of(obj, name):
    return np.array(obj.pose.bones[name].matrix_basis, dtype=np.float64)


def keyed_bones(obj):
    """Names of the bones whose transform channels the armature's action animates."""
    from .validity import _fcurves
    anim = obj.animation_data
    if anim is None:
        return set()
    out = set()
    for fc in _fcurves(anim):
        m = _TRANSFORM.match(fc.data_path)
        if m:
            out.add(m.group(1).replace('\\"', '"'))
    return out


def remember_rest(obj):
    """At the start of a simulation: put back the user's pose where our display still shows
    (a bone the user has posed since keeps the user's pose), and remember it."""
    names = ragdoll.deform_bones(obj)
    shown = obj.get(ragdoll.SHOWN_POSE_KEY) or {}
    rest = obj.get(ragdoll.REST_POSE_KEY) or {}
    for n in names:
        here = _basis_of(obj, n).ravel()
        if n in rest and n in shown and np.allclose(here, shown[n], rtol=0, atol=1e-6):
            obj.pose.bones[n].matrix_basis = _matrix(np.reshape(rest[n], (4, 4)))
    obj[ragdoll.REST_POSE_KEY] = {n: _basis_of(obj, n).ravel().tolist() for n in names}


def unshow(obj):
    """Put the user's pose back on the bones our display moved and no animation drives (keyed
    bones have their animation already): the pose read next is the user's. True when anything
    changed (the depsgraph must then be evaluated again)."""
    rest = obj.get(ragdoll.REST_POSE_KEY)
    if not rest or ragdoll.SHOWN_POSE_KEY not in obj:
        return False
    keyed = keyed_bones(obj)
    changed = False
    for n, m in rest.items():
        if n in keyed or n not in obj.pose.bones:
            continue
        if not np.allclose(_basis_of(obj, n).ravel(), m, rtol=0, atol=1e-9):
            obj.pose.bones[n].matrix_basis = _matrix(np.reshape(m, (4, 4)))
            changed = True
    del obj[ragdoll.SHOWN_POSE_KEY]
    return changed


def show(obj, header_bones, world):
    """Pose the armature at the bones' world matrices (k, 4, 4)."""
    if ragdoll.REST_POSE_KEY not in obj:
        remember_rest(obj)
    names = [n for n in header_bones if n in obj.pose.bones]
    if len(names) != len(header_bones):
        return
    b = bases(obj, names, world)
    index = set(names)
    for n in names:
        m = b[n]
        if ragdoll.deform_parent(obj, n, index) is not None:
            # a bone below the root turns about its joint: its location stays (the joint's gap,
            # under 2 mm, is not shown), as bake_bones keys rotations only for it
            m[:3, 3] = _basis_of(obj, n)[:3, 3]
        obj.pose.bones[n].matrix_basis = _matrix(m)
    obj[ragdoll.SHOWN_POSE_KEY] = {n: _basis_of(obj, n).ravel().tolist() for n in names}


def restore_rest(obj, forget=True):
    """The user's pose back on every bone (Free Bake: forget, and our marks go), or on each
    bone still where our display put it (its Kind changed: a bone the user has posed since
    keeps the user's pose, as remember_rest does)."""
    rest = obj.get(ragdoll.REST_POSE_KEY) or {}
    shown = obj.get(ragdoll.SHOWN_POSE_KEY) or {}
    for n, m in rest.items():
        if n not in obj.pose.bones:
            continue
        if not forget and not (n in shown and np.allclose(_basis_of(obj, n).ravel(), shown[n],
                                                          rtol=0, atol=1e-6)):
            continue
        obj.pose.bones[n].matrix_basis = _matrix(np.reshape(m, (4, 4)))
    if not forget:
        return
    for key in (ragdoll.REST_POSE_KEY, ragdoll.SHOWN_POSE_KEY):
        if key in obj:
            del obj[key]


# ---------------------------------------------------------------------- keyframes
def _action(obj):
    import bpy
    anim = obj.animation_data or obj.animation_data_create()
    if anim.action is None:
        anim.action = bpy.data.actions.new(f"{obj.name}Action")
    return anim.action


def _fcurve(obj, path, index, group):
    action = _action(obj)
    if hasattr(action, "fcurve_ensure_for_datablock"):        # layered actions (4.4+)
        return action.fcurve_ensure_for_datablock(obj, path, index=index, group_name=group)
    fc = action.fcurves.find(path, index=index)
    return fc or action.fcurves.new(path, index=index, action_group=group)


def write_channel(obj, path, index, group, start, values):
    """Keys ``values`` (f,) at frames start, start + 1, ... on the F-curve (path, index),
    replacing only its keys inside that range."""
    fc = _fcurve(obj, path, index, group)
    end = start + len(values) - 1
    points = fc.keyframe_points
    for i in range(len(points) - 1, -1, -1):
        if start - 1e-6 <= points[i].co[0] <= end + 1e-6:
            points.remove(points[i], fast=True)
    first = len(points)
    points.add(len(values))
    co = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", co)
    co = co.reshape(-1, 2)
    co[first:, 0] = np.arange(start, end + 1)
    co[first:, 1] = values
    points.foreach_set("co", co.ravel())
    for i in range(first, len(points)):
        p = points[i]
        p.interpolation = "LINEAR"
        p.handle_left_type = p.handle_right_type = "AUTO_CLAMPED"
    fc.update()


def _rotations(pb_mode, mats):
    """(path, (f, c) values) of rotation matrices (f, 3, 3) in a rotation mode, continuous."""
    from mathutils import Matrix
    out, prev = [], None
    for m in mats:
        r = Matrix(np.asarray(m, dtype=np.float64).tolist())
        if pb_mode == "QUATERNION":
            q = r.to_quaternion()
            if prev is not None and q.dot(prev) < 0:
                q.negate()
            prev = q
            out.append(tuple(q))
        elif pb_mode == "AXIS_ANGLE":
            axis, angle = r.to_quaternion().to_axis_angle()
            out.append((angle, *axis))
        else:
            e = r.to_euler(pb_mode, prev) if prev is not None else r.to_euler(pb_mode)
            prev = e
            out.append(tuple(e))
    path = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
        pb_mode, "rotation_euler")
    return path, np.array(out)


def bake_bones(obj, header, frames):
    """Pose keys of every simulated bone over the baked range (module docstring)."""
    names = list(header["bones"])
    start = int(header["frame_start"])
    per_frame = [bases(obj, names, f) for f in frames]
    index = set(names)
    for n in names:
        pb = obj.pose.bones[n]
        mats = np.stack([b[n] for b in per_frame])
        scale = np.linalg.norm(mats[:, :3, :3], axis=1)[:, None, :]
        path, values = _rotations(pb.rotation_mode, mats[:, :3, :3] / scale)
        base = f'pose.bones["{n}"]'
        for c in range(values.shape[1]):
            write_channel(obj, f"{base}.{path}", c, n, start, values[:, c])
        if ragdoll.deform_parent(obj, n, index) is None:
            for c in range(3):
                write_channel(obj, f"{base}.location", c, n, start, mats[:, c, 3])


def bake_object(obj, header, frames):
    """Object location and rotation keys (its rotation mode) of a rigid body over the range."""
    from .bake import _basis, _restore_basis
    before = _basis(obj)
    start = int(header["frame_start"])
    loc, mats = [], []
    try:
        for m in frames:
            obj.matrix_world = _matrix(np.asarray(m, dtype=np.float64).reshape(4, 4))
            loc.append(tuple(obj.location))
            mats.append(np.array(obj.matrix_basis, dtype=np.float64)[:3, :3])
    finally:
        _restore_basis(obj, before)
    mats = np.stack(mats)
    mats /= np.linalg.norm(mats, axis=1)[:, None, :]
    path, values = _rotations(obj.rotation_mode, mats)
    loc = np.array(loc)
    for c in range(3):
        write_channel(obj, "location", c, "Object Transforms", start, loc[:, c])
    for c in range(values.shape[1]):
        write_channel(obj, path, c, "Object Transforms", start, values[:, c])
