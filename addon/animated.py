"""The settings an artist may keyframe, read at every frame of a bake or of live playback.

Gravity (the scene's, its Use Gravity and our Gravity Scale), the scene's damping and air drag,
each object's damping, stiffness (stretch, shear, bend, shape), pressure, restitution (a
simulated body's bounce at colliders: a contact takes the larger of the body's and the
collider's) and friction (a simulated body's: a contact takes the geometric mean of its two
sides', a body's and a collider's or two bodies'), and each collider's friction and
restitution are read at the frame being
simulated and handed to the Simulation's setters (solver/animated.py): they act from that
frame's step on, and the solver keeps them in its Control, so a resumed simulation carries
them. Wind and Blender's force fields are read beside them (simscene.py, fields.py). A
setting is only handed over when it changed, so a scene with
nothing animated costs a few attribute reads per object and frame.

Settings that cannot change while a simulation runs (kind, mass, thickness, collider shape,
vertex groups, Keep Volume, substeps, iterations, the frame range) are not keyframable
(properties.py), so Blender offers no keyframe for them.
"""

import math

import numpy as np

from .bridge import BridgeError

# which stick family each stiffness setting drives, per kind and mesh (solver model.STICK_SOURCES)
_CLOTH = (("stretch_stiffness", "cloth stretch"), ("shear_stiffness", "cloth shear"),
          ("bend_stiffness", "cloth bend"))
_PLANT_FACES = (("stretch_stiffness", "cloth stretch"), ("shear_stiffness", "cloth shear"))
_STRAND = (("stretch_stiffness", "stick"),)
_SOFT = (("stretch_stiffness", "stick"),)
# the simulated kinds that show Restitution (panels.py, Collisions; a ragdoll's does not)
_BOUNCING = ("CLOTH", "PLANT", "SOFT", "RIGID")


def shape_compliance(stiffness):
    """Goal compliance [m/N] of a soft body's Shape Stiffness, as Builder.add_shape_match maps
    it (stiffness clamped to >= 1e-3: 0 would be no cluster)."""
    s = max(float(stiffness), 1e-3)
    return (1.0 / s - 1.0) * 1e-3


def _checked(owner, label, value):
    """A number read from a keyframed setting: finite and >= 0, else a BridgeError naming the
    owner and the setting (a driver or script can put NaN past Blender's clamp)."""
    if not (math.isfinite(value) and value >= 0):
        raise BridgeError(f"{owner}: {label} is {value!r} at this frame; it must be a finite "
                          "number >= 0 (check its keyframes or driver)")
    return value


class AnimatedSettings:
    """Reads the keyframable settings of a SceneSim's scene, bodies and colliders each frame and
    hands the changed ones to its Simulation."""

    def __init__(self, scene, sim, bodies, colliders, tapers):
        """bodies: simscene.Body list; colliders: (object name, collider index, offset) list;
        tapers: {object name: (n,) taper weights} of plants that have a taper group."""
        from .properties import compliance_from_stiffness
        self._to_compliance = compliance_from_stiffness
        self.scene = scene
        self.sim = sim
        self._last = {}                 # channel key -> the value handed to the solver
        # (key, owner name, read() -> value, apply(value)); read at every frame
        self.channels = [
            (("scene", "gravity"), scene.name, self._read_gravity, self._set_gravity),
            (("scene", "damping"), scene.name, lambda: scene.verlet.damping,
             sim.set_global_damping),
            (("scene", "air_drag"), scene.name, lambda: scene.verlet.air_drag, sim.set_air_drag),
        ]
        for body in bodies:
            self._add_body(body, tapers.get(body.name))
        for name, k, _offset in colliders:
            s = scene.objects[name].verlet
            self.channels += [
                ((name, "friction"), name, lambda s=s: s.friction,
                 lambda f, k=k: sim.set_collider_friction(k, f)),
                ((name, "restitution"), name, lambda s=s: s.restitution,
                 lambda r, k=k: sim.set_collider_restitution(k, min(r, 1.0))),
            ]

    def _add_body(self, body, taper):
        sim, s = self.sim, self.scene.objects[body.name].verlet
        ids, name, kind = body.ids, body.name, body.kind
        to_c = self._to_compliance
        if kind == "SOFT":              # a soft body's damping damps its wobble, not its fall
            self.channels.append(((name, "damping"), name, lambda: s.damping,
                                  lambda d: sim.set_shape_damping(ids, min(d, 1.0))))
            self.channels.append(((name, "shape_stiffness"), name, lambda: s.shape_stiffness,
                                  lambda v: sim.set_shape_compliance(ids, shape_compliance(v))))
            # a volume the body has (closed mesh, Keep Volume): its pressure inflates it
            self.channels.append(((name, "pressure"), name, lambda: s.pressure,
                                  lambda p: sim.set_volume_pressure(ids, max(p, 1e-3))))
        else:
            self.channels.append(((name, "damping"), name, lambda: s.damping,
                                  lambda d: sim.set_damping(ids, min(d, 1.0))))
        # what touches: the body's particles, and a strand plant's edge frame particles too
        # (they reach colliders; until 2026-11-27 they kept friction 0.5 and restitution 0)
        frames = getattr(body, "frames", None)
        touching = ids if frames is None else np.concatenate([ids, frames[0]])
        if kind in _BOUNCING:           # the kinds whose Collisions panel shows Restitution
            self.channels.append(((name, "restitution"), name, lambda: s.restitution,
                                  lambda r: sim.set_restitution(touching, min(r, 1.0))))
        # Friction, every simulated kind's (a ragdoll's: its capsules' particles)
        self.channels.append(((name, "friction"), name, lambda: s.friction,
                              lambda f: sim.set_friction(touching, max(f, 0.0))))
        if kind == "CLOTH":
            pairs = _CLOTH
        elif kind == "PLANT":
            strand = getattr(body, "frames", None) is not None
            pairs = _STRAND if strand else _PLANT_FACES
            self.channels.append(self._strand_joints(body, s, taper) if strand
                                 else self._bend_support(body, s, taper))
        elif kind == "SOFT":
            pairs = _SOFT
        else:
            pairs = ()
        for prop, source in pairs:
            self.channels.append((
                (name, prop), name, lambda prop=prop: getattr(s, prop),
                lambda v, source=source: sim.set_stick_compliance(ids, to_c(v), source)))

    def _bend_support(self, body, s, taper):
        """The channel of a plant's bend stiffness: its support sticks, each scaled by the taper
        weight (mean of its two ends, fixed: vertex weights cannot be keyframed)."""
        sim, ids, to_c = self.sim, body.ids, self._to_compliance
        if taper is None:
            weight = 1.0
        else:
            local = np.empty(sim.model.particle_count, np.int64)
            local[ids] = np.arange(len(ids))
            pairs = local[sim.model.stick_particles[sim.sticks_among(ids, "bend support")]]
            weight = np.clip(0.5 * (taper[pairs[:, 0]] + taper[pairs[:, 1]]), 0.0, 1.0)
        return ((body.name, "bend_stiffness"), body.name, lambda: s.bend_stiffness,
                lambda v: sim.set_stick_compliance(ids, to_c(v * weight), "bend support"))

    def _strand_joints(self, body, s, taper):
        """The channel of an edge-only plant's bend stiffness: its joint clusters (one per vertex
        with two or more edges, solver/strands.py, over the vertex, its neighbours and their edge
        frames), each scaled by the taper weight of its vertex, which is the cluster's first
        particle."""
        from .simscene import STRAND_BEND_SCALE
        sim, to_c = self.sim, self._to_compliance
        every = np.concatenate([body.ids, body.frames[0]])
        clusters = sim.clusters_among(every)
        m = sim.model
        weight = 1.0
        if taper is not None:
            joint = m.shape_particles[m.shape_cluster_start[clusters]] - body.ids[0]
            weight = np.clip(taper[joint], 0.0, 1.0)
        return ((body.name, "bend_stiffness"), body.name, lambda: s.bend_stiffness,
                lambda v: sim.set_shape_compliance(every, STRAND_BEND_SCALE * to_c(v * weight)))

    def _read_gravity(self):
        """(use gravity, gravity, gravity scale) of the scene at this frame, checked."""
        scene = self.scene
        g = tuple(float(v) for v in scene.gravity)
        if not all(math.isfinite(v) for v in g):
            raise BridgeError(f"{scene.name}: the scene's gravity is {g} at this frame, not "
                              "finite; set it in Scene Properties > Gravity")
        return bool(scene.use_gravity), g, _checked(scene.name, "gravity scale",
                                                    float(scene.verlet.gravity_scale))

    def _set_gravity(self, value):
        use, g, scale = value
        self.sim.set_gravity(scale * np.array(g, dtype=np.float64) if use else np.zeros(3))

    def read(self):
        """Hand every setting that changed since the last call to the Simulation (all of them at
        the first call)."""
        last = self._last
        for key, owner, read, apply in self.channels:
            value = read()
            if key[1] != "gravity":
                _checked(owner, key[1].replace("_", " "), value)
            if last.get(key) != value:
                apply(value)
                last[key] = value
