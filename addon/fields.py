"""Blender's Force Field objects -> the solver's ForceFields (solver/fields.py), every frame.

Which fields act. Every object of the scene whose ``field`` is Wind, Force, Turbulence, Vortex
or Drag with Affect Location on, of shape Point, Line or Plane, that is enabled in the view
layer (not excluded, not disabled in viewports), as Blender's effector relations collect them.
They are read from the evaluated depsgraph at the frame being stepped to, so keyframed settings
(an explosion is a Force field whose strength is keyed up for a frame or two) and animated
placement act frame by frame. Other field types (Magnetic, Harmonic, Texture...) and shapes
(Surface, Every Point, Curve) are not simulated; they are named once in the console.

Weights, as Blender's Cloth "Field Weights": the scene's ``verlet.effector_weights`` (every
body) times the object's ``verlet.effector_weights``: All x the field type's weight, and Gravity
for the object's gravity. A weight <= 0 switches a field off (effect.cc). The object's effector
collection, else the scene's, else none, limits the fields to those in it (recursively, as
Blender's ``Collection.all_objects``). An object's own field never acts on itself.

Mass: each field acts on a whole object through ``verlet.mass`` (solver/fields.py, "Which
mass"); for cloth and plants the wind factor acts through the surface normal.
"""

import math

import numpy as np

from ..solver.fields import ForceFields
from .bridge import BridgeError

SUPPORTED = ("WIND", "FORCE", "TURBULENCE", "VORTEX", "DRAG")
SHAPES = ("POINT", "LINE", "PLANE")
SHEETS = ("CLOTH", "PLANT")
_FLOATS = ("flow", "quadratic_drag", "noise", "size", "wind_factor", "falloff_power",
           "distance_min", "distance_max", "radial_falloff", "radial_min", "radial_max")
_BOOLS = ("use_min_distance", "use_max_distance", "use_radial_min", "use_radial_max",
          "use_global_coords", "use_gravity_falloff")
# the effector weights' property names: per field type (SUPPORTED's order), and all of them
_TYPE_WEIGHTS = tuple(t.lower() for t in SUPPORTED)
_WEIGHTS = ("gravity", "all") + _TYPE_WEIGHTS


def _weights_of(owner, label, fields=True):
    """(all, per-type dict, gravity, collection) of owner.verlet.effector_weights, refusing
    non-finite values by name; without fields, the gravity weight alone is read (the others
    are 1.0 and None): a property read costs about a microsecond, and a scene of 100 ragdolls
    read 700 a frame for no field."""
    w = getattr(owner.verlet, "effector_weights", None)
    if w is None:
        return 1.0, {t: 1.0 for t in SUPPORTED}, 1.0, None
    if not fields:
        gravity = float(w.gravity)
        if not math.isfinite(gravity):
            raise BridgeError(f"{label}: field weight gravity is not a finite number")
        return 1.0, None, gravity, None
    values = {k: float(getattr(w, k)) for k in _WEIGHTS}
    bad = [k for k, v in values.items() if not math.isfinite(v)]
    if bad:
        raise BridgeError(f"{label}: field weight {', '.join(bad)} is not a finite number")
    return values["all"], dict(zip(SUPPORTED, (values[k] for k in _TYPE_WEIGHTS))), \
        values["gravity"], w.collection


class FieldReader:
    """Reads the scene's force fields each frame for one SceneSim's bodies."""

    def __init__(self, scene, bodies, particle_count):
        self.scene = scene
        self.bodies = [(b.name, b.kind) for b in bodies]
        group = np.zeros(particle_count, np.int64)     # (n,) body index of each particle
        for g, body in enumerate(bodies):               # build time: per body
            group[body.ids] = g
        self.group = group
        self.mass = np.array([max(scene.objects[b.name].verlet.mass, 1e-9) for b in bodies])
        self.sheet = np.array([b.kind in SHEETS for b in bodies])   # (G,) wind factor applies
        self.ignored = set()                            # field objects named once in the console
        self.checked = False                            # every weight read once (read())

    def _candidates(self, depsgraph):
        from .simscene import taking_part
        out = []
        for obj in taking_part(self.scene, depsgraph.view_layer):      # as bodies and colliders
            field = getattr(obj, "field", None)
            if field is None or field.type == "NONE":
                continue
            if field.type not in SUPPORTED or field.shape not in SHAPES:
                if obj.name not in self.ignored:
                    self.ignored.add(obj.name)
                    print(f"Verlet Physics: force field '{obj.name}' ({field.type.title()}, "
                          f"shape {field.shape.title()}) is not simulated; supported: "
                          "Wind, Force, Turbulence, Vortex, Drag of shape Point, Line or Plane")
                continue
            if field.apply_to_location:
                out.append(obj)
        return out

    def read(self, depsgraph):
        """The ForceFields acting over the step to the depsgraph's frame, or None."""
        objs = self._candidates(depsgraph)
        # every weight is read (and checked) at the first frame and whenever a field acts
        fields = bool(objs) or not self.checked
        self.checked = True
        scene_all, scene_type, scene_gravity, scene_coll = _weights_of(
            self.scene, f"scene {self.scene.name}", fields)
        per_body = [_weights_of(self.scene.objects[name], name, fields)
                    for name, _ in self.bodies]
        gravity = np.array([scene_gravity * b[2] for b in per_body])
        if not objs and np.all(gravity == 1.0):
            return None
        params = {k: [] for k in _FLOATS + _BOOLS + ("strength", "shape", "falloff_type",
                                                       "z_direction")}
        kinds, matrices, names, seeds = [], [], [], []
        for obj in objs:                                # per field object, not per particle
            ev = obj.evaluated_get(depsgraph)
            pd = ev.field
            kinds.append(pd.type)
            names.append(obj.name)
            matrices.append(np.array(ev.matrix_world, dtype=np.float64))
            seeds.append(int(pd.seed))
            params["strength"].append(float(pd.linear_drag if pd.type == "DRAG" else pd.strength))
            for k in _FLOATS:
                params[k].append(float(getattr(pd, k)))
            for k in _BOOLS:
                params[k].append(bool(getattr(pd, k)))
            params["shape"].append(pd.shape)
            params["falloff_type"].append(pd.falloff_type)
            params["z_direction"].append(pd.z_direction)
            bad = [k for k in _FLOATS + ("strength",) if not math.isfinite(params[k][-1])]
            if bad:
                raise BridgeError(f"{obj.name}: force field {', '.join(bad)} is not a finite "
                                  "number")
        F = len(objs)
        weight = np.zeros((len(self.bodies), F))        # (G, F)
        for g, (name, _) in enumerate(self.bodies):
            body_all, body_type, _, body_coll = per_body[g]
            coll = body_coll or scene_coll
            allowed = None if coll is None else set(o.name for o in coll.all_objects)
            for f, obj in enumerate(objs):
                if obj.name == name or (allowed is not None and obj.name not in allowed):
                    continue
                t = kinds[f]
                weight[g, f] = scene_all * scene_type[t] * body_all * body_type[t]
        if not objs:
            # no field, only gravity weights: a Wind of strength 0 carries them
            kinds, matrices, names, seeds = ["WIND"], [np.eye(4)], ["gravity weights"], [0]
            params = {"strength": [0.0]}
            weight = np.zeros((len(self.bodies), 1))
        try:
            return ForceFields(kinds, np.array(matrices), names=names, seed=seeds,
                               particle_group=self.group, group_mass=self.mass,
                               group_weight=weight, group_gravity=gravity,
                               group_sheet=self.sheet, frame=self.scene.frame_current, **params)
        except ValueError as exc:
            raise BridgeError(f"force field {exc}") from None
