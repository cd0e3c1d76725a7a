"""A ragdoll in the scene's one Simulation: built from the armature (ragdoll.py reads it), driven
every frame by its pins, its Animated switch and its pose matching, read back as bone world
matrices. See ragdoll.py's docstring for the behaviour; this module holds the solver side of it.
"""

import math
import weakref

import numpy as np

from . import ragdoll, ragdoll_pose
from .bridge import BridgeError
from ..solver.geometry import segment_distances

# bones whose capsule axes come closer than this times the sum of their radii in the build pose
# do not collide with each other (the capsules overlap, or nearly: a 10% skin)
OVERLAP_MARGIN = 1.1


def _joint_axes(r_parent, r_parent_rest, r_rest, r_pose, axis):
    """(world axis, build-pose angle) of a joint: the hinge axis (bone-local ``axis`` index) or,
    for axis None, the direction the bone's Y would point at its rest relative to its parent
    (the centre of the swing cone), with the build pose's twist about Y. Unit 3x3 rotations."""
    basis = (r_parent_rest.T @ r_rest).T @ (r_parent.T @ r_pose)   # the bone's own rotation
    if axis is None:
        centre = r_parent @ (r_parent_rest.T @ r_rest)[:, 1]
        return centre / np.linalg.norm(centre), ragdoll._twist_angle(basis, 1)
    return r_pose[:, axis].copy(), ragdoll._twist_angle(basis, axis)


_frames = {}        # {id(sim): (time, centres, rotations)}: body_frames once per step


def _body_frames(sim):
    """Simulation.body_frames() of this step, computed once for every ragdoll of the scene."""
    known = _frames.get(id(sim))
    if known is not None and known[0] == sim.time and known[3] is sim:
        return known[1], known[2]
    c, r = sim.body_frames()
    _frames.clear()
    _frames[id(sim)] = (sim.time, c, r, sim)
    return c, r


# {sim: [RagdollBody]} the ragdolls attached to each Simulation, and {id(sim): (time, sim,
# {id(body): (k, 4, 4) matrices})}: every ragdoll's bone matrices once per step (result())
_attached = weakref.WeakKeyDictionary()
_matrices = {}


def _bone_matrices(sim):
    """{id(body): (k, 4, 4) bone world matrices} of this step for every ragdoll attached to sim,
    in one batch: a ragdoll's own few array operations cost 18 us, 1.8 ms a frame at 100
    ragdolls, and the batch the same per matrix (the same operations on each element)."""
    known = _matrices.get(id(sim))
    if known is not None and known[0] == sim.time and known[1] is sim:
        return known[2]
    bodies = _attached.get(sim, [])
    c, r = _body_frames(sim)
    ids = np.concatenate([b.body_ids for b in bodies])
    c, r = c[ids], r[ids]
    t = np.zeros((len(c), 4, 4))
    t[:, :3, :3] = r
    t[:, :3, 3] = c - np.einsum("kab,kb->ka", r, np.concatenate([b.centre0 for b in bodies]))
    t[:, 3, 3] = 1.0
    t = t @ np.concatenate([b.world0 for b in bodies])
    ends = np.cumsum([len(b.body_ids) for b in bodies])
    out = {id(b): m for b, m in zip(bodies, np.split(t, ends[:-1]))}
    _matrices.clear()
    _matrices[id(sim)] = (sim.time, sim, out)
    return out


class RagdollBody:
    """One armature in the simulation (the Body of simscene for kind RAGDOLL)."""

    kind = "RAGDOLL"
    pin_local = None            # simscene's mesh pins do not apply
    pin_soft = None
    frames = None

    def __init__(self, b, obj, depsgraph, scene, warnings):
        from .simscene import _animated, _settings
        self.name = obj.name
        names = ragdoll.deform_bones(obj)
        self.bones = names
        index = {n: k for k, n in enumerate(names)}
        pose = ragdoll.evaluated_pose(obj, depsgraph, names)
        ragdoll.check_armature(obj, pose, names)
        limits = {n: ragdoll.joint_limits(obj.pose.bones[n], obj.name) for n in names}
        pinned = ragdoll.pin_bones(obj, names)
        meshes = ragdoll.skinned_meshes(obj, scene)
        radii, envelope = ragdoll.fit_radii(obj, names, meshes)
        if not meshes:
            warnings.append((obj.name, f"{obj.name}: no mesh is skinned to this armature (an "
                             "Armature modifier pointing at it); the capsules take the bones' "
                             "envelope radii"))
        mass = _settings(obj, "mass", 1.0)
        if mass <= 0:
            raise BridgeError(f"{obj.name}: mass must be > 0 kg, got {mass:g} kg")
        scale = float(np.linalg.norm(np.array(obj.matrix_world, dtype=np.float64)[:3, 0]))
        length = np.array([obj.data.bones[n].length * scale for n in names])
        volume = math.pi * radii ** 2 * length + 4.0 / 3.0 * math.pi * radii ** 3
        masses = mass * volume / volume.sum()
        rest = ragdoll.rest_pose(obj, names)
        self.world0 = np.stack([pose[n] for n in names])           # (k, 4, 4) at the build
        self.parent = np.array([index.get(ragdoll.deform_parent(obj, n, index), -1)
                                for n in names], dtype=np.int64)
        self.follow = bool(obj.verlet.animated) or _animated(obj, "verlet.animated")
        self.pinned = np.array([n in pinned for n in names])
        self.body_ids, self.bone_ids = [], []
        for k, n in enumerate(names):
            r = ragdoll._unit(pose[n])
            head = pose[n][:3, 3]
            try:
                ids, body = b.add_capsule_body(head, head + r[:, 1] * length[k], float(radii[k]),
                                               mass=float(masses[k]), up=r[:, 2])
            except ValueError as exc:
                raise BridgeError(f"{obj.name}: bone '{n}': {exc}") from None
            self.body_ids.append(body)
            self.bone_ids.append(np.asarray(ids, dtype=np.int64))
            if self.pinned[k]:
                b.pin(ids)
            elif self.follow:
                b.pin(ids, compliance=0.0)
        self.ids = np.concatenate(self.bone_ids)
        self.joint_ids, self.joint_child, self.joint_parent = [], [], []
        for k, n in enumerate(names):
            p = self.parent[k]
            if p < 0:
                continue
            kind, axis, lim = limits[n]
            pn = names[p]
            direction, angle = _joint_axes(ragdoll._unit(pose[pn]), ragdoll._unit(rest[pn]),
                                           ragdoll._unit(rest[n]), ragdoll._unit(pose[n]), axis)
            if lim is not None:         # Blender's limits are from the rest pose, ours the build
                lim = (lim[0] - angle, lim[1] - angle) if kind == "hinge" else \
                    (lim[0], lim[1] - angle, lim[2] - angle)
            try:
                j = b.add_joint(self.body_ids[p], self.body_ids[k], pose[n][:3, 3], kind=kind,
                                axis=direction, limits=lim)
            except ValueError as exc:
                raise BridgeError(f"{obj.name}: bone '{n}': its joint: {exc}") from None
            self.joint_ids.append(j)
            self.joint_child.append(k)
            self.joint_parent.append(p)
        self.joint_ids = np.array(self.joint_ids, dtype=np.int64)
        # bones whose capsules overlap in the build pose (a shoulder in the chest, the two hips)
        # would be pushed apart by their own contact from the first substep and jam the rig:
        # they do not collide, as jointed neighbours do not (add_joint); every other pair of
        # bones does (PhysX and Bullet ragdolls filter pairs the same way)
        heads = np.stack([pose[n][:3, 3] for n in names])
        tails = heads + np.stack([ragdoll._unit(pose[n])[:, 1] for n in names]) * length[:, None]
        i, j = np.triu_indices(len(names), 1)
        if i.size:
            gap = segment_distances(heads[i], tails[i], heads[j], tails[j])
            for a, c in zip(i[gap < (radii[i] + radii[j]) * OVERLAP_MARGIN],
                            j[gap < (radii[i] + radii[j]) * OVERLAP_MARGIN]):
                b.disable_collision(self.bone_ids[a], self.bone_ids[c])
        self.joint_child = np.array(self.joint_child, dtype=np.int64)
        self.joint_parent = np.array(self.joint_parent, dtype=np.int64)
        self.drive = _settings(obj, "pose_match", 0.0) > 0 or \
            _animated(obj, "verlet.pose_match") or \
            any(ragdoll.POSE_MATCH_KEY in obj.pose.bones[n] for n in names)
        self.topology_hash = ragdoll.topology_hash(obj)
        self.count = len(names)
        self.rest = None                # [(m_k, 3)] particle positions at the build, per bone
        self._animated = None           # the Animated value last handed to the pins
        self._drive = None              # the drive strengths last handed to the joints
        self.envelope = envelope

    def attach(self, sim):
        """Remember each bone's particles at the build (the frame every result is measured
        from), once the Simulation exists."""
        self.sim = sim
        x = np.array(sim.x)
        self.rest = [x[ids] for ids in self.bone_ids]
        self._inv0 = None               # animated_positions' cache, built from rest
        self.body_ids = np.asarray(self.body_ids, dtype=np.int64)
        self.centre0 = _body_frames(sim)[0][self.body_ids]         # (k, 3) at the build
        _attached.setdefault(sim, []).append(self)
        _matrices.pop(id(sim), None)

    # ------------------------------------------------------------------ per frame
    def animated_pose(self, obj, depsgraph):
        """(k, 4, 4) world matrices of the bones' animated pose at this frame (our display put
        back to the user's pose first, so the pose read is the user's, not the last shown)."""
        import bpy
        if ragdoll_pose.unshow(obj):
            depsgraph = bpy.context.evaluated_depsgraph_get()
        pose = ragdoll.evaluated_pose(obj, depsgraph, self.bones)
        return np.stack([pose[n] for n in self.bones])

    def animated_positions(self, pose):
        """(n, 3) world positions of every particle of the ragdoll in the pose (k, 4, 4): each
        bone's build-pose particles carried by pose @ world0^-1, one batched product."""
        if getattr(self, "_inv0", None) is None:      # world0 is fixed at the build
            self._inv0 = np.linalg.inv(self.world0)                            # (k, 4, 4)
            self._rest_all = np.concatenate(self.rest)                         # (n, 3) [m]
            self._bone_of = np.repeat(np.arange(len(self.rest)), [len(r) for r in self.rest])
        t = np.einsum("kab,kbc->kac", pose, self._inv0)[self._bone_of]         # (n, 4, 4)
        return np.einsum("nab,nb->na", t[:, :3, :3], self._rest_all) + t[:, :3, 3]

    def before_step(self, scene, depsgraph):
        """Pins, the Animated switch and pose matching for the next step (module docstring of
        ragdoll.py)."""
        obj = scene.objects[self.name]
        sim = self.sim
        animated = bool(obj.verlet.animated) and self.follow
        strength = self._strengths(obj) if self.drive else None
        if not (self.pinned.any() or animated or (strength is not None and strength.any())):
            if self.follow and self._animated is not False:
                soft = self._soft_ids()
                sim.set_pin_compliance(soft, np.full(soft.size, np.inf))
                self._animated = False
            if strength is not None:
                self._set_drive(strength)
            return
        pose = self.animated_pose(obj, depsgraph)
        x = self.animated_positions(pose)
        follow = self.pinned | animated
        sel = np.concatenate([np.full(len(ids), f) for ids, f in zip(self.bone_ids, follow)])
        if sel.any():
            sim.set_pin_targets(self.ids[sel], x[sel])
        if self.follow and self._animated != animated:
            soft = self._soft_ids()
            sim.set_pin_compliance(soft, np.full(soft.size, 0.0 if animated else np.inf))
            self._animated = animated
        if strength is not None:
            self._set_drive(strength)
            if strength.any():
                sim.set_joint_targets(self.joint_ids, self._targets(pose))

    def _soft_ids(self):
        return np.concatenate([ids for ids, p in zip(self.bone_ids, self.pinned) if not p]
                              or [np.zeros(0, np.int64)])

    def _strengths(self, obj):
        """(j,) pose-match strength of each joint: the child bone's override, else the
        object's Pose Match, clamped to [0, 1]."""
        s = float(obj.verlet.pose_match)
        out = np.full(len(self.joint_ids), s)
        for j, k in enumerate(self.joint_child):
            pb = obj.pose.bones[self.bones[k]]
            v = pb.get(ragdoll.POSE_MATCH_KEY)
            if v is not None:
                v = float(v)
                if not math.isfinite(v):
                    raise BridgeError(f"{obj.name}: bone '{pb.name}': {ragdoll.POSE_MATCH_KEY} "
                                      f"is {v!r}; it must be a number in 0..1 (negative: the "
                                      "object's Pose Match)")
                if v >= 0:
                    out[j] = v
        return np.clip(out, 0.0, 1.0)

    def _set_drive(self, strength):
        if self._drive is None or not np.array_equal(strength, self._drive):
            if len(self.joint_ids):
                self.sim.set_joint_drive(self.joint_ids, strength)
            self._drive = strength

    def _targets(self, pose):
        """(j, 3, 3) drive targets (Simulation.set_joint_targets): R_a^T R_b of the animated
        pose, R = each body's rotation from its build pose (R_now R_build^T, world)."""
        r = np.stack([ragdoll._unit(m) for m in pose])
        r0 = np.stack([ragdoll._unit(m) for m in self.world0])
        turn = np.einsum("kab,kcb->kac", r, r0)                 # R_now R_build^T per bone
        c, p = self.joint_child, self.joint_parent
        return np.einsum("jba,jbc->jac", turn[p], turn[c])      # R_a^T R_b

    def result(self, sim):
        """(k, 4, 4) float64 world matrices of the simulated bones: each body's rotation R and
        centre c from its build pose (Simulation.body_frames, read once per step for every
        ragdoll), x = c + R (x0 - c0), applied to the bone's build matrix."""
        return _bone_matrices(sim)[id(self)].copy()
