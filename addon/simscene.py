"""The scene as one simulation: Blender objects -> Builder -> Simulation, and back.

Every object whose ``verlet.kind`` is not NONE takes part; all step in one Simulation. Positions
enter the solver in world space [m]; results leave as object-space positions (deforming kinds)
or world matrices (RIGID). Colliders and pins are read from the evaluated depsgraph every frame,
so animation, constraints and armatures drive them.
"""

import math

import bpy
import numpy as np

from ..solver import Builder, Simulation
from ..solver.geometry import (fan_triangles, polygon_areas, primitive_shape, rigid_transform,
                               strand_areas)
from ..solver.simulation import DEFAULT_CONTACT_ITERATIONS, DEFAULT_SLEEP
from ..solver.strands import edge_frames
from ..solver.mesh import cloth_topology, normalize_faces
from . import bridge
from . import kernels as compiled
from .animated import AnimatedSettings
from .bridge import BridgeError

DEFORMING = ("CLOTH", "PLANT", "SOFT")
STRAND_WIDTH = 0.005        # [m] least width of an edge-only plant strand, for wind and drag
# An edge-only plant's joints (solver/strands.py: a shape-matching cluster per vertex over its
# neighbours and edge frames) hold an angle far more firmly than the support sticks they replaced
# did at the same compliance (measured on a 30 cm, 10 g blade in a 6 m/s wind: 1.3 mm of sway
# at 1e-3 m/N, where the support sticks swayed by centimetres). Their compliance is the Bend
# stiffness's times this factor, so the default Bend (0.375) sways such a blade by about 8 cm as
# before, and full stiffness (compliance 0) stays rigid.
STRAND_BEND_SCALE = 30.0
SIMULATED = DEFORMING + ("RIGID", "RAGDOLL")


def _settings(obj, name, default):
    """A setting from obj.verlet, with NaN or negative values refused by name."""
    value = getattr(obj.verlet, name, default)
    if isinstance(value, float) and (not math.isfinite(value) or value < 0):
        raise BridgeError(f"{obj.name}: {name} is {value!r}; it must be a finite number >= 0")
    return value


def compliance(obj, name, default):
    """XPBD compliance [m/N] of a stiffness setting (1 = rigid; see properties.py)."""
    stiffness = _settings(obj, name, None)
    if stiffness is None:
        return default
    from .properties import compliance_from_stiffness
    return compliance_from_stiffness(stiffness)


def infer_collider(obj, x_local, mesh=None):
    """(shape, local 4x4 offset, size kwargs) of a collider mesh: its Collider Shape, or for Auto
    what geometry.primitive_shape reads its vertices x_local (n, 3) [m] (object space, so any
    object scale or rotation works through the world matrix) and the polygons of ``mesh``
    (default: obj.data) as: a plane (a flat mesh with faces: the half-space below it), one of
    Blender's closed sphere, cube or cylinder primitives, or the mesh itself ("mesh", offset
    identity) for anything else, open meshes included (a torus, Suzanne, a character, an open
    box, a pipe)."""
    choice = getattr(obj.verlet, "collider_shape", "AUTO")
    lo, hi = x_local.min(axis=0), x_local.max(axis=0)
    centre = (lo + hi) / 2
    ext = hi - lo
    q = x_local - centre
    if choice == "AUTO":
        start, total, corner = bridge.polygon_corners(obj.data if mesh is None else mesh)
        choice = primitive_shape(x_local, corner, start, total)[0].upper()
    offset = np.eye(4)
    offset[:3, 3] = centre
    if choice == "MESH":
        return "mesh", np.eye(4), {}
    if choice == "PLANE":
        return "plane", offset, {}
    if choice == "SPHERE":
        return "sphere", offset, {"radius": float(np.linalg.norm(q, axis=1).max())}
    if choice == "BOX":
        return "box", offset, {"size": tuple(float(e) for e in np.maximum(ext, 1e-6))}
    radius = float(max(ext[0], ext[1]) / 2)
    depth = float(max(ext[2], 2 * radius if choice == "CAPSULE" else 1e-6))
    return choice.lower(), offset, {"radius": radius, "depth": depth}


def mesh_triangles(obj, mesh):
    """(t, 3) int64 triangles (polygon fans) of a collider mesh; BridgeError naming the object
    when it has no faces."""
    start, total, corner = bridge.polygon_corners(mesh)
    if not len(start) or not np.any(total >= 3):
        raise BridgeError(f"{obj.name}: the collider mesh has no faces; a mesh collider needs "
                          "faces (or choose a primitive collider shape)")
    return fan_triangles(corner, start, total)


class Body:
    """One simulated object: its particle ids and how results go back to Blender."""

    def __init__(self, obj, kind, ids, rest_world, matrix_world, topo_hash, pin_local=None):
        self.name = obj.name
        self.kind = kind
        self.ids = ids                      # (n,) int64 particle ids, in vertex order
        self.rest_world = rest_world        # (n, 3) float64 [m] world positions at the start
        self.rest_matrix = np.array(matrix_world, dtype=np.float64)   # (4, 4) at the start
        self.topology_hash = topo_hash
        self.pin_local = pin_local          # (p,) int64 vertex indices that are pinned, or None
        self.pin_weight = None              # (p,) float64 their pin group weights in [0, 1]
        self.pin_soft = None                # (p,) bool soft pins (the rest are hard)
        self.pin_stiffness = None           # the pin_stiffness their compliance was set for
        self.frames = None                  # strands: ((e,) frame particle ids, (e, 3) rest [m])


class SceneSim:
    """Builds and steps the scene's one Simulation."""

    def __init__(self, scene, depsgraph):
        self.scene = scene
        self.bodies = []
        self.colliders = []                 # (object name, collider index, local offset)
        # mesh colliders: [object name, collider index, (v, 3) local vertices last passed]
        self.mesh_colliders = []
        # [(object name, message)]: what the simulation leaves out of an object's settings, for
        # the bake's report and status (the message names the object and the cause)
        self.warnings = []
        self.tapers = {}                    # {plant name: (n,) taper weights} (animated.py)
        from .properties import invalid_settings
        bad = invalid_settings(scene.verlet)
        if bad:
            raise BridgeError(f"{scene.name}: scene setting {', '.join(bad)} is not a finite number")
        if not np.all(np.isfinite(np.array(scene.gravity, dtype=np.float64))):
            raise BridgeError(f"{scene.name}: the scene's gravity is {tuple(scene.gravity)}, not "
                              "finite; set it in Scene Properties > Gravity")
        b = Builder()
        objs = [o for o in taking_part(scene, depsgraph.view_layer) if o.verlet.kind != "NONE"]
        for obj in objs:
            bad = invalid_settings(obj.verlet)
            if bad:
                raise BridgeError(f"{obj.name}: {', '.join(bad)} is not a finite number")
        _refuse_shared_mesh(objs)
        if not any(o.verlet.kind in SIMULATED for o in objs):
            away = [o.name for o in taking_part(scene, None)
                    if o.verlet.kind in SIMULATED and o not in objs]
            if away:
                raise BridgeError(f"the scene's Verlet bodies ({', '.join(sorted(away)[:3])}) "
                                  "are disabled in viewports or in collections excluded from "
                                  f"the view layer '{depsgraph.view_layer.name}'; enable them "
                                  "in the outliner")
            raise BridgeError("the scene has no Verlet body to simulate (set an object's kind to "
                              "Cloth, Plant, Soft Body, Rigid Body or Ragdoll)")
        for obj in objs:
            if obj.verlet.kind == "RAGDOLL" or obj.type == "ARMATURE":
                self._add_ragdoll(b, obj, depsgraph)
                continue
            mesh, obj_eval = bridge.evaluated_mesh(obj, depsgraph)
            try:
                self._add(b, obj, obj_eval, mesh)
            finally:
                obj_eval.to_mesh_clear()
        # the first use after install compiles, with the message showing; before build(),
        # whose colouring is a compiled kernel too (solver/kernels/build.py)
        compiled.ensure_ready()
        self.model = b.build()
        s = scene.verlet
        g = getattr(s, "gravity_scale", 1.0) * np.array(scene.gravity, dtype=np.float64) \
            if scene.use_gravity else np.zeros(3)
        from .preferences import requested_backend
        kernels = requested_backend()
        self.sim = Simulation(self.model, substeps=s.substeps, iterations=s.iterations,
                              gravity=g, damping=getattr(s, "damping", 0.0),
                              air_drag=getattr(s, "air_drag", 1.0), backend=kernels,
                              sleep=getattr(s, "use_sleep", DEFAULT_SLEEP),
                              contact_iterations=getattr(s, "contact_iterations",
                                                         DEFAULT_CONTACT_ITERATIONS))
        for body in self.bodies:
            if body.kind == "RAGDOLL":
                body.attach(self.sim)
        self._wind = None
        self._read_wind()
        # keyframable settings (damping, stiffness, friction, gravity...), read every frame
        self.animated = AnimatedSettings(scene, self.sim, self.bodies, self.colliders,
                                         self.tapers)
        self.animated.read()
        self._update_pin_strength()
        self.fps = scene.render.fps / scene.render.fps_base
        from .fields import FieldReader
        self.field_reader = FieldReader(scene, self.bodies, self.model.particle_count)
        # read once now: a bad field or weight is refused before the first frame is written
        self.field_reader.read(depsgraph)

    def _read_wind(self):
        """The scene's wind shortcut (Scene.verlet.wind_*), read every frame so that it can be
        keyed; the solver's wind is only rebuilt when it changed."""
        from .properties import wind_velocity
        s = self.scene.verlet
        key = (tuple(wind_velocity(s)), float(getattr(s, "wind_turbulence", 0.0)),
               int(getattr(s, "wind_seed", 0)))
        if key != self._wind:
            if not all(math.isfinite(v) for v in key[0] + key[1:2]):
                raise BridgeError(f"{self.scene.name}: the scene wind is not a finite number")
            self._wind = key
            self.sim.set_wind(key[0], turbulence=key[1], seed=key[2])

    # ------------------------------------------------------------------ building
    def _add_ragdoll(self, b, obj, depsgraph):
        """An armature as a ragdoll (ragdoll_sim.py); any other kind on an armature, or a
        ragdoll on anything but an armature, is refused by name."""
        if obj.type != "ARMATURE":
            kind = obj.type.lower().replace("_", " ")
            article = "an" if kind[:1] in "aeiou" else "a"
            raise BridgeError(f"{obj.name}: is {article} {kind} object; Ragdoll simulates an "
                              "armature's bones (choose another kind for it, or set Ragdoll on "
                              "the armature)")
        if obj.verlet.kind != "RAGDOLL":
            raise BridgeError(f"{obj.name}: is an armature object, not a mesh; an armature can "
                              f"only be a Ragdoll (not {obj.verlet.kind.title()}): set its kind "
                              "to Ragdoll, or simulate the mesh it deforms")
        if obj.mode == "EDIT":
            raise BridgeError(f"{obj.name}: is in Edit Mode; leave Edit Mode to simulate it")
        from .ragdoll_sim import RagdollBody
        self.bodies.append(RagdollBody(b, obj, depsgraph, self.scene, self.warnings))

    def _add(self, b, obj, obj_eval, mesh):
        kind = obj.verlet.kind
        x_local = bridge.positions(mesh)
        # Added: an empty mesh used to fail with KeyError: 'position' (a collider) or deep in
        # the builder; checked first, for every kind
        if len(x_local) == 0:
            raise BridgeError(f"{obj.name}: the mesh has no vertices; give it geometry or set "
                              "its Verlet kind to None")
        if not np.all(np.isfinite(x_local)):
            raise BridgeError(f"{obj.name}: the mesh has NaN or infinite coordinates")
        mw = obj_eval.matrix_world
        check_scale(obj, mw)
        if kind == "COLLIDER":
            shape, offset, size = infer_collider(obj, x_local, mesh)
            if shape == "mesh":
                size = {"vertices": x_local, "triangles": mesh_triangles(obj, mesh)}
            m = np.array(mw, dtype=np.float64) @ offset
            try:
                k = b.add_collider(shape, matrix=m, friction=_settings(obj, "friction", 0.5),
                                   restitution=min(_settings(obj, "restitution", 0.0), 1.0),
                                   thickness=_settings(obj, "thickness", 0.0), **size)
            except ValueError as exc:
                raise BridgeError(f"{obj.name}: {exc}") from None
            self.colliders.append((obj.name, k, offset))
            if shape == "mesh":
                self.mesh_colliders.append([obj.name, k, x_local])
            return
        x = bridge.to_world(mw, x_local)
        faces = bridge.faces(mesh)
        n = len(x)
        # Added: the result is shown through a shape key (or a point attribute) of the mesh
        # itself, one position per vertex, so a modifier that adds or removes vertices cannot be
        # simulated through (it used to bake, then fail to display and call its own cache
        # outdated).
        if kind in DEFORMING and n != len(obj.data.vertices):
            raise BridgeError(f"{obj.name}: a modifier changes the vertex count "
                              f"({len(obj.data.vertices)} -> {n}); apply or disable it to "
                              "simulate this object")
        mass = _settings(obj, "mass", 1.0)
        if mass <= 0:
            raise BridgeError(f"{obj.name}: mass must be > 0 kg, got {mass:g} kg")
        radius = _settings(obj, "thickness", 0.0)
        try:
            ids, frames = self._add_kind(b, obj, mesh, kind, x, faces, mass, radius)
        except BridgeError:
            raise                       # names the object already ("Wire: Wire: ..." was twice)
        except ValueError as exc:
            raise BridgeError(f"{obj.name}: {exc}") from None
        body = Body(obj, kind, ids, x, mw, bridge.topology_hash(n, faces))
        body.frames = frames
        body.follow = bool(getattr(obj.verlet, "animated", False)) or \
            _animated(obj, "verlet.animated")
        if obj.verlet.pin_group or body.follow:
            self._add_pins(b, obj, mesh, body)
        self.bodies.append(body)

    def _add_pins(self, b, obj, mesh, body):
        """Pins from the pin group: strength = weight x pin_stiffness (properties.py). Full
        strength that cannot change is a hard pin; anything else a soft pin, whose compliance
        _update_pin_strength sets before every step (the first one included)."""
        if obj.verlet.pin_group:
            w = bridge.group_weights(obj, mesh, obj.verlet.pin_group)
            if not (w > 0).any():
                raise BridgeError(f"{obj.name}: pin group '{obj.verlet.pin_group}' is empty")
        else:
            w = np.zeros(len(body.ids))
        # Added: an object that follows its animation (Animated) has every vertex pinned softly:
        # compliance 0 while Animated is on, its pin group's strength (or released) when off
        pin_local = np.arange(len(w)) if body.follow else np.nonzero(w > 0)[0]
        weight = np.minimum(w[pin_local], 1.0)
        soft = weight * _settings(obj, "pin_stiffness", 1.0) < 1.0
        if _animated(obj, "verlet.pin_stiffness") or body.follow:
            soft[:] = True
        if soft.any():
            b.pin(body.ids[pin_local[soft]], compliance=0.0)
        if not soft.all():
            b.pin(body.ids[pin_local[~soft]])
        body.pin_local, body.pin_weight, body.pin_soft = pin_local, weight, soft

    def _add_kind(self, b, obj, mesh, kind, x, faces, mass, radius):
        n = len(x)
        self_collision = kind == "CLOTH" and bool(getattr(obj.verlet, "self_collision", False))
        friction = _settings(obj, "friction", 0.5)
        if kind in ("CLOTH", "PLANT") and len(faces):
            _refuse_loose_vertices(obj, faces, n, self_collision)
        if kind == "CLOTH":
            if len(faces) == 0:
                raise BridgeError(f"{obj.name}: a cloth needs faces; this mesh has none")
            if self_collision and not radius > 0:
                raise BridgeError(f"{obj.name}: Self Collisions needs a thickness; set a "
                                  "Thickness > 0 (Collisions panel), the distance its layers "
                                  "keep from each other")
            area = float(polygon_areas(x, *normalize_faces(faces, n)).sum())
            return b.add_cloth(x, faces, density=mass / max(area, 1e-12), radius=radius,
                               stretch_compliance=compliance(obj, "stretch_stiffness", 0.0),
                               shear_compliance=compliance(obj, "shear_stiffness", 0.0),
                               bend_compliance=compliance(obj, "bend_stiffness", 1e-3),
                               self_collision=self_collision, friction=friction), None
        if kind == "PLANT":
            taper = None
            if getattr(obj.verlet, "taper_group", ""):
                taper = bridge.group_weights(obj, mesh, obj.verlet.taper_group)
                self.tapers[obj.name] = taper
            if len(faces):
                area = float(polygon_areas(x, *normalize_faces(faces, n)).sum())
                ids = b.add_cloth(x, faces, density=mass / max(area, 1e-12), radius=radius,
                                  stretch_compliance=compliance(obj, "stretch_stiffness", 0.0),
                                  shear_compliance=compliance(obj, "shear_stiffness", 0.0),
                                  bend=False)
                support = cloth_topology(*normalize_faces(faces, n), n)["bend"]
            else:
                e = bridge.edges(mesh)
                if len(e) == 0:
                    raise BridgeError(f"{obj.name}: a plant needs faces or edges")
                # strands have no faces: wind and drag act on an exposed area of half of each
                # incident edge times the strand's width (twice the thickness, at least 5 mm);
                # bend and twist through frame particles and joints (solver/strands.py)
                ids, frame_ids = b.add_strands(
                    x, e, mass=mass / n, radius=radius,
                    area=strand_areas(x, e, max(2.0 * radius, STRAND_WIDTH)),
                    stretch_compliance=compliance(obj, "stretch_stiffness", 0.0),
                    bend_compliance=STRAND_BEND_SCALE * _tapered(
                        obj, taper, np.repeat(np.arange(n)[:, None], 2, 1)))
                return ids, (frame_ids, edge_frames(x, e))
            if len(support):
                b.add_sticks(ids[support], compliance=_tapered(obj, taper, support),
                             source="bend support")
            return ids, None
        ids = b.add_particles(x, mass=mass / n, radius=radius, friction=friction)
        # a rigid or soft body collides with other bodies through its whole surface
        surface = None
        if len(faces):
            surface = ids[faces] if isinstance(faces, np.ndarray) else [ids[f] for f in faces]
        if kind == "SOFT":
            e = bridge.edges(mesh)
            if len(e):
                b.add_sticks(ids[e], compliance=compliance(obj, "stretch_stiffness", 1e-4))
            # a soft body's damping damps its wobble (deformation), not its fall
            b.add_shape_match(ids, stiffness=max(getattr(obj.verlet, "shape_stiffness", 0.3), 1e-3),
                              damping=min(getattr(obj.verlet, "damping", 0.0), 1.0),
                              surface=surface)
            if len(faces) and getattr(obj.verlet, "use_volume", True):
                try:
                    b.add_volume(ids[faces] if isinstance(faces, np.ndarray)
                                 else [ids[f] for f in faces],
                                 pressure=max(getattr(obj.verlet, "pressure", 1.0), 1e-3))
                except ValueError as exc:
                    # an open or flat surface encloses no volume: the body still runs, held by
                    # shape matching alone, and the user is told so (it used to be dropped
                    # without a word)
                    self.warnings.append((obj.name, (
                        f"{obj.name}: its volume is not kept ({exc}); shape matching alone "
                        "holds its shape. Close the mesh, or turn Volume off")))
            return ids, None
        if kind == "RIGID":
            b.add_shape_match(ids, stiffness=1.0, surface=surface)
            return ids, None
        raise BridgeError(f"{obj.name}: unknown kind {kind!r}")

    # ------------------------------------------------------------------ stepping
    def _update_pin_strength(self):
        """Soft pins' compliance from each body's pin_stiffness at the current frame (it may be
        animated) and its pin group weights; set only when the stiffness changed."""
        for body in self.bodies:
            if body.pin_soft is None or not body.pin_soft.any():
                continue
            obj = self.scene.objects[body.name]
            k = _settings(obj, "pin_stiffness", 1.0)
            follow = getattr(body, "follow", False) and bool(obj.verlet.animated)
            if (k, follow) == body.pin_stiffness:
                continue
            from .properties import pin_compliance
            ids = body.ids[body.pin_local[body.pin_soft]]
            strength = 1.0 if follow else body.pin_weight[body.pin_soft] * k
            self.sim.set_pin_compliance(ids, pin_compliance(strength + np.zeros(len(ids)),
                                                            self.model.particle_mass[ids]))
            body.pin_stiffness = (k, follow)

    def _move_pinned_frames(self, body, matrix):
        """Strands: the frame particles of pinned edges (pinned with them, solver/strands.py)
        follow the object's transform from its rest placement to ``matrix`` (4, 4)."""
        if body.frames is None:
            return
        frame_ids, rest = body.frames
        pinned = self.model.particle_inv_mass[frame_ids] == 0
        if pinned.any():
            move = matrix @ np.linalg.inv(body.rest_matrix)
            self.sim.set_pin_targets(frame_ids[pinned],
                                     rest[pinned] @ move[:3, :3].T + move[:3, 3])

    def step_to(self, depsgraph):
        """Advance one frame to the scene's current (already evaluated) frame: colliders and pins
        take their evaluated placement at that frame, reached at the end of the step."""
        self._update_pin_strength()
        for name, k, offset in self.colliders:
            obj = self.scene.objects[name].evaluated_get(depsgraph)
            check_scale(obj, obj.matrix_world)      # an animated scale may reach zero
            self.sim.set_collider_matrix(k, np.array(obj.matrix_world, dtype=np.float64) @ offset)
        self._deform_mesh_colliders(depsgraph)
        pinned = [b for b in self.bodies if b.pin_local is not None]
        # Pins follow the user's modifier stack (an Armature): read it with our display modifier
        # off, or the evaluated mesh would be the last frame shown (bridge.py).
        with bridge.display_modifiers_off([self.scene.objects[b.name] for b in pinned]) as off:
            if off:
                depsgraph = bpy.context.evaluated_depsgraph_get()
            for body in pinned:
                obj = self.scene.objects[body.name]
                mesh, obj_eval = bridge.evaluated_mesh(obj, depsgraph)
                try:
                    x = bridge.to_world(obj_eval.matrix_world, bridge.positions(mesh))
                finally:
                    obj_eval.to_mesh_clear()
                if len(x) != len(body.ids):
                    raise BridgeError(f"{body.name}: the vertex count changed during the "
                                      f"simulation ({len(body.ids)} -> {len(x)}); a modifier "
                                      "changes the topology")
                self.sim.set_pin_targets(body.ids[body.pin_local], x[body.pin_local])
                self._move_pinned_frames(body, np.array(obj_eval.matrix_world, np.float64))
        for body in self.bodies:
            if body.kind == "RAGDOLL":
                body.before_step(self.scene, depsgraph)
        # Added: the scene wind, Blender's force fields and every keyframable setting are read
        # at every frame (keyed strengths, animated fields), as colliders and pins are
        self._read_wind()
        self.animated.read()
        self.sim.set_force_fields(self.field_reader.read(depsgraph))
        self.sim.step(1.0 / self.fps)
        # Added: deforming results are in the object's space at this frame, as Blender Cloth
        # does; they were relative to its matrix at the start, so an animated object (a flag
        # on a moving pole) showed its motion twice and its pins left the pole.
        for body in self.bodies:
            if body.kind not in ("RIGID", "RAGDOLL"):
                obj = self.scene.objects[body.name].evaluated_get(depsgraph)
                check_scale(obj, obj.matrix_world)      # results go to its object space
                body.matrix = np.array(obj.matrix_world, dtype=np.float64)

    def _deform_mesh_colliders(self, depsgraph):
        """Mesh colliders follow their evaluated mesh (armature, shape keys, modifiers): one
        foreach_get per collider and frame, passed on when it changed (the solver interpolates
        the vertices across the step's substeps)."""
        for entry in self.mesh_colliders:
            name, k, last = entry
            mesh, obj_eval = bridge.evaluated_mesh(self.scene.objects[name], depsgraph)
            try:
                x = bridge.positions(mesh)
            finally:
                obj_eval.to_mesh_clear()
            if len(x) != len(last):
                raise BridgeError(f"{name}: the collider's vertex count changed during the "
                                  f"simulation ({len(last)} -> {len(x)}); a modifier changes "
                                  "its topology (apply or disable it)")
            if not np.array_equal(x, last):
                if not np.all(np.isfinite(x)):
                    raise BridgeError(f"{name}: the collider mesh has NaN or infinite "
                                      "coordinates")
                self.sim.set_collider_vertices(k, x)
                entry[2] = x

    def result(self, body):
        """The body's current state: (n, 3) object-space positions (deforming kinds, in the
        object's space at the current frame) or its (4, 4) world matrix (RIGID)."""
        if body.kind == "RAGDOLL":
            return body.result(self.sim)
        x = np.array(self.sim.x[body.ids])
        if body.kind == "RIGID":
            return rigid_transform(body.rest_world, x) @ body.rest_matrix
        return bridge.to_local(getattr(body, "matrix", body.rest_matrix), x)


AXES = "XYZ"


def check_scale(obj, matrix_world):
    """Refuse, naming the object and the axis, a world matrix that flattens it: a zero scale
    (or parallel axes) leaves no inverse, for a collider's distance or a body's object space.
    (Was: the solver's "matrix: a scale is zero", naming no object, or numpy's LinAlgError.)"""
    a = np.array(matrix_world, dtype=np.float64)[:3, :3]
    scale = np.linalg.norm(a, axis=0)
    flat = [AXES[i] for i in range(3) if not scale[i] > 1e-9]
    if flat:
        raise BridgeError(f"{obj.name}: its scale is zero on the {', '.join(flat)} axis "
                          f"(scale {tuple(round(float(v), 6) for v in scale)}); give every axis "
                          "a non-zero scale (Object Properties > Transform, or its parent's)")
    if abs(np.linalg.det(a / scale)) < 1e-6:
        raise BridgeError(f"{obj.name}: its transform flattens it (two axes parallel, e.g. "
                          "through a sheared parent); fix the transform")


def taking_part(scene, view_layer):
    """The scene's objects with Verlet settings that take part in its simulation: those of the
    view layer (a collection excluded from it, unticked in the outliner, takes no part) and not
    disabled in viewports (the monitor icon), as in Blender's own physics and force fields.
    (Changed: every object of the scene took part.) view_layer None: every one."""
    present = view_layer.objects if view_layer is not None else None
    return [o for o in scene.objects if getattr(o, "verlet", None) is not None
            and (present is None or (o.name in present and not o.hide_viewport))]


def _refuse_shared_mesh(objs):
    """A cloth, plant or soft body shows its motion through its mesh (a shape key, or an
    attribute and modifier), so a mesh shared by linked duplicates (Alt+D) would show one
    body's motion on every copy, and two simulated copies would overwrite each other's. Rigid
    bodies move by their transform: their copies may share a mesh."""
    for obj in objs:
        if obj.verlet.kind not in DEFORMING or obj.type != "MESH" or obj.data.users < 2:
            continue
        others = [o.name for o in bpy.data.objects if o.data == obj.data and o != obj and o.users]
        if others:
            shown = ", ".join(sorted(others)[:3]) + (" ..." if len(others) > 3 else "")
            raise BridgeError(
                f"{obj.name}: its mesh '{obj.data.name}' is shared with {shown} (a linked "
                f"duplicate); a simulated {obj.verlet.kind.lower()} moves its mesh, which would "
                "move every object sharing it. Select it and use Object > Relations > Make "
                "Single User > Object & Data, then bake")


def _refuse_loose_vertices(obj, faces, n, self_collision=False):
    """A cloth's mass lives on its faces: a vertex in no face would have none (and with Self
    Collisions, no face to collide through)."""
    used = np.zeros(n, dtype=bool)
    used[np.concatenate([np.ravel(f) for f in faces]) if not isinstance(faces, np.ndarray)
         else faces.ravel()] = True
    if not used.all():
        loose = np.flatnonzero(~used)
        why = ("Self Collisions collides faces, and a cloth's mass is spread over its faces"
               if self_collision else "a cloth's mass is spread over its faces")
        raise BridgeError(f"{obj.name}: {len(loose)} vertex(es) belong to no face (vertex "
                          f"{int(loose[0])} first); {why}, so delete them (Mesh > Clean Up > "
                          "Delete Loose) or make them part of a face")


def _animated(obj, path):
    """Whether obj's property at data path ``path`` is keyframed or driven (then its value may
    change during the simulation). Reads layered actions (Blender 4.4+) and legacy ones."""
    ad = obj.animation_data
    if ad is None:
        return False
    if any(d.data_path == path for d in ad.drivers):
        return True
    action = ad.action
    if action is None:
        return False
    curves = []
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", ()):
                curves += list(bag.fcurves)
    if not curves:
        curves = list(getattr(action, "fcurves", ()))
    return any(fc.data_path == path for fc in curves)


def _tapered(obj, taper, pairs):
    """Compliance [m/N] of plant support sticks (pairs (k, 2)) or strand joints (a vertex twice
    per row): the bend stiffness, scaled toward the tips by the taper group's weight (mean of
    the two; weight 1 = full stiffness)."""
    stiffness = _settings(obj, "bend_stiffness", 0.375)
    from .properties import compliance_from_stiffness
    if taper is None:
        return compliance_from_stiffness(stiffness)
    w = np.clip(0.5 * (taper[pairs[:, 0]] + taper[pairs[:, 1]]), 0.0, 1.0)
    return compliance_from_stiffness(stiffness * w)
