"""A twelve-bone humanoid rig built in code for the ragdoll tests, the benchmark and the demo:
pelvis, spine, chest, head, upper arms, forearms, thighs, shins, with IK limits as a rigger sets
them (knees and elbows hinges, hips and shoulders cones with twist, spine and neck small cones)
and a skinned mesh (a tube of vertices around each bone, weighted 1 to it).

Standing upright with its feet at z = 0 (before ``location``), facing -Y.
"""

import math

import bpy  # noqa: I001  (bpy first: bmesh is importable only once bpy is)
import bmesh
import numpy as np
from mathutils import Vector

# name: (head, tail, parent, connected, tube radius [m])
BONES = {
    "pelvis": ((0, 0, 1.00), (0, 0, 1.15), None, False, 0.14),
    "spine": ((0, 0, 1.15), (0, 0, 1.35), "pelvis", True, 0.13),
    "chest": ((0, 0, 1.35), (0, 0, 1.55), "spine", True, 0.15),
    "head": ((0, 0, 1.60), (0, 0, 1.85), "chest", False, 0.10),
    "upper_arm.L": ((0.20, 0, 1.50), (0.48, 0, 1.50), "chest", False, 0.05),
    "forearm.L": ((0.48, 0, 1.50), (0.74, 0, 1.50), "upper_arm.L", True, 0.045),
    "upper_arm.R": ((-0.20, 0, 1.50), (-0.48, 0, 1.50), "chest", False, 0.05),
    "forearm.R": ((-0.48, 0, 1.50), (-0.74, 0, 1.50), "upper_arm.R", True, 0.045),
    "thigh.L": ((0.10, 0, 0.95), (0.10, 0, 0.52), "pelvis", False, 0.07),
    "shin.L": ((0.10, 0, 0.52), (0.10, 0, 0.08), "thigh.L", True, 0.055),
    "thigh.R": ((-0.10, 0, 0.95), (-0.10, 0, 0.52), "pelvis", False, 0.07),
    "shin.R": ((-0.10, 0, 0.52), (-0.10, 0, 0.08), "thigh.R", True, 0.055),
}
D = math.radians
# hinges: (bone-local axis, (lo, hi)) as a rigger sets them: knees bend back, elbows forward
HINGES = {"shin.L": ("x", (-D(140), 0.0)), "shin.R": ("x", (-D(140), 0.0)),
          "forearm.L": ("x", (0.0, D(140))), "forearm.R": ("x", (0.0, D(140)))}


def _limits(pb):
    """IK limits: hinges (knees and elbows about X), cones elsewhere."""
    if pb.name in HINGES:
        free, (lo, hi) = HINGES[pb.name]
        for a in "xyz":
            setattr(pb, f"lock_ik_{a}", a != free)
        setattr(pb, f"use_ik_limit_{free}", True)
        setattr(pb, f"ik_min_{free}", lo)
        setattr(pb, f"ik_max_{free}", hi)
        return
    wide = pb.name.startswith(("thigh", "upper_arm"))
    cone, twist = (D(70), D(25)) if wide else (D(25), D(15))
    for a in "xz":
        setattr(pb, f"use_ik_limit_{a}", True)
        setattr(pb, f"ik_min_{a}", -cone)
        setattr(pb, f"ik_max_{a}", cone)
    pb.use_ik_limit_y = True
    pb.ik_min_y, pb.ik_max_y = -twist, twist


def armature(name="Rig", location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), limits=True,
             kind="RAGDOLL"):
    """The armature object (twelve deforming bones, IK limits); not skinned."""
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for bname, (head, tail, parent, connected, _r) in BONES.items():
        eb = arm.edit_bones.new(bname)
        eb.head, eb.tail = head, tail
        # roll: X to the side for legs and spine (knees bend about X), Z up for the arms
        eb.align_roll(Vector((0, -1, 0)))
        if parent:
            eb.parent = arm.edit_bones[parent]
            eb.use_connect = connected
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.location = location
    obj.rotation_euler = rotation
    if limits:
        for pb in obj.pose.bones:
            _limits(pb)
    obj.verlet.kind = kind
    return obj


def skin(rig, name="Body", segments=8, rings=4):
    """A mesh of tubes around the bones (radius BONES[...][4]), each weighted 1 to its bone,
    with an Armature modifier on ``rig``; parented to nothing, in the rig's rest placement."""
    bm = bmesh.new()
    groups = []
    for bname, (head, tail, _p, _c, radius) in BONES.items():
        h, t = np.array(head, float), np.array(tail, float)
        axis = (t - h) / np.linalg.norm(t - h)
        side = np.cross(axis, (0, 0, 1) if abs(axis[2]) < 0.9 else (1, 0, 0))
        side /= np.linalg.norm(side)
        other = np.cross(axis, side)
        first = len(bm.verts)
        for i in range(rings):
            c = h + (t - h) * (i + 0.5) / rings
            for j in range(segments):
                a = 2 * math.pi * j / segments
                bm.verts.new(c + radius * (math.cos(a) * side + math.sin(a) * other))
        bm.verts.ensure_lookup_table()
        for i in range(rings - 1):
            for j in range(segments):
                a = first + i * segments + j
                b = first + i * segments + (j + 1) % segments
                bm.faces.new((bm.verts[a], bm.verts[b], bm.verts[b + segments],
                              bm.verts[a + segments]))
        groups.append((bname, list(range(first, len(bm.verts)))))
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    body = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(body)
    bpy.context.view_layer.update()
    body.matrix_world = rig.matrix_world.copy()
    for bname, verts in groups:
        body.vertex_groups.new(name=bname).add(verts, 1.0, "REPLACE")
    mod = body.modifiers.new("Armature", "ARMATURE")
    mod.object = rig
    return body


def ragdoll(name="Rig", location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), skinned=True,
            **settings):
    """A skinned ragdoll: (armature, mesh or None); extra keywords go to rig.verlet."""
    rig = armature(name, location, rotation)
    for k, v in settings.items():
        setattr(rig.verlet, k, v)
    return rig, (skin(rig, name + " Body") if skinned else None)


def bone_world(rig, name):
    """(4, 4) world matrix of a pose bone as the (original) armature shows it now."""
    return np.array(rig.matrix_world @ rig.pose.bones[name].matrix, dtype=np.float64)


def stairs(n=6, rise=0.18, run=0.3, width=2.0, x0=0.0, name="Step"):
    """A flight of ``n`` box steps going down along +X from height n * rise: colliders."""
    out = []
    for i in range(n):
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        me = bpy.data.meshes.new(f"{name}{i}")
        bm.to_mesh(me)
        bm.free()
        obj = bpy.data.objects.new(f"{name}{i}", me)
        bpy.context.scene.collection.objects.link(obj)
        h = (n - i) * rise
        obj.location = (x0 + (i + 0.5) * run, 0.0, h / 2)
        obj.scale = (run, width, h)
        obj.verlet.kind = "COLLIDER"
        out.append(obj)
    return out

