"""Settings stored on Blender data: Object.verlet and Scene.verlet (see CONTRACT.md).

Units follow the solver: mass [kg], thickness [m], wind speed [m/s], air drag [kg/(m^2 s)];
friction is a Coulomb coefficient; damping is the fraction of velocity removed per second (the
same at any substep count).

Stiffness. The artist-facing ``stretch_stiffness``, ``shear_stiffness`` and ``bend_stiffness``
are numbers in [0, 1] that map to XPBD compliance [m/N] (inverse physical stiffness) through
:func:`compliance_from_stiffness`::

    compliance(s) = C_MAX * (10 ** (-D * s) - 10 ** -D) / (1 - 10 ** -D)
    with C_MAX = 1.0 m/N and D = 8 decades

so each 0.125 of stiffness is one decade of compliance (s = 0.375 -> ~1e-3 m/N, the solver's
default cloth bend; s = 0.5 -> ~1e-4; s = 0.875 -> ~9e-8), s = 0 is 1 m/N (as good as no
constraint) and s = 1 is exactly 0 (inextensible). The mapping is continuous and strictly
decreasing, and :func:`stiffness_from_compliance` is its exact inverse on [0, C_MAX]. XPBD
compliance is a physical quantity, so a stiffness means the same at any substep or iteration
count.

Validation. Every numeric property but ``mass`` has hard ``min``/``max`` bounds, so the UI cannot
set a negative, infinite or out-of-range value (Blender clamps what scripts assign too, e.g. -1
becomes the minimum). ``mass`` has only a soft minimum: a mass <= 0 is refused by name when the
simulation is built (a clamp made it 1e-6 kg, a different object that silently flew away). Blender's clamp lets NaN through when a *script* assigns it; NaN is refused when
the simulation is built: the bake code (``simscene``) refuses non-finite object settings by name,
and :func:`invalid_settings` lists every non-finite setting of an Object.verlet or Scene.verlet
for the bake code to report before it builds anything.
"""

import math

import bpy
import numpy as np
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from ..solver.builder import CLOTH_BEND_COMPLIANCE
from ..solver.simulation import (DEFAULT_AIR_DRAG, DEFAULT_CONTACT_ITERATIONS, DEFAULT_DAMPING,
                                 DEFAULT_ITERATIONS, DEFAULT_SLEEP, DEFAULT_SUBSTEPS)

KINDS = (
    ("NONE", "None", "Not simulated"),
    ("CLOTH", "Cloth", "A mesh with faces simulated as cloth"),
    ("PLANT", "Plant", "Grass, leaves and branches: a rooted, springy mesh or strands"),
    ("SOFT", "Soft Body", "Shape matching with volume preservation: jelly, rubber, balloons"),
    ("RIGID", "Rigid Body", "A body that keeps its shape; written back as the object's transform"),
    ("COLLIDER", "Collider", "Other bodies collide with this object"),
    ("RAGDOLL", "Ragdoll", "An armature: each deforming bone a capsule, joined where it meets "
     "its parent, with the joint limits of the pose bones' IK settings"),
)

COLLIDER_SHAPES = (
    ("AUTO", "Auto", "Infer the shape from the object's geometry: a recognised primitive, "
             "otherwise the mesh itself"),
    ("PLANE", "Plane", "An infinite half-space below the object's local XY plane"),
    ("SPHERE", "Sphere", "A sphere of the object's size"),
    ("BOX", "Box", "The object's bounding box"),
    ("CYLINDER", "Cylinder", "A cylinder along the object's local Z"),
    ("CAPSULE", "Capsule", "A capsule along the object's local Z"),
    ("MESH", "Mesh", "The object's own (evaluated) mesh: closed meshes are solid, open ones "
     "two-sided; follows armatures, shape keys and modifiers"),
)

# ---------------------------------------------------------------------- stiffness <-> compliance
COMPLIANCE_MAX = 1.0        # [m/N] compliance at stiffness 0
STIFFNESS_DECADES = 8       # decades of compliance spanned by stiffness 0..1
_FLOOR = 10.0 ** -STIFFNESS_DECADES


def compliance_from_stiffness(stiffness):
    """XPBD compliance [m/N] of an artist stiffness in [0, 1] (scalar or array; see the module
    docstring): 0 -> COMPLIANCE_MAX (1 m/N), 1 -> exactly 0 (inextensible), one decade per
    1/8 of stiffness in between. Values outside [0, 1] are clamped; NaN raises ValueError."""
    s = np.asarray(stiffness, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError(f"stiffness: must be a finite number in [0, 1], got {stiffness!r}")
    s = np.clip(s, 0.0, 1.0)
    c = COMPLIANCE_MAX * (10.0 ** (-STIFFNESS_DECADES * s) - _FLOOR) / (1.0 - _FLOOR)
    c = np.maximum(c, 0.0)
    return float(c) if c.ndim == 0 else c


def stiffness_from_compliance(compliance):
    """The stiffness in [0, 1] whose compliance_from_stiffness is ``compliance`` [m/N] (the exact
    inverse; compliance above COMPLIANCE_MAX gives 0, compliance 0 gives 1). Negative or NaN
    compliance raises ValueError."""
    c = np.asarray(compliance, dtype=np.float64)
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"compliance: must be a finite number >= 0 [m/N], got {compliance!r}")
    c = np.minimum(c, COMPLIANCE_MAX)
    s = -np.log10(c / COMPLIANCE_MAX * (1.0 - _FLOOR) + _FLOOR) / STIFFNESS_DECADES
    s = np.clip(s, 0.0, 1.0)
    return float(s) if s.ndim == 0 else s


# Pin strength. A vertex of the pin group with weight w, on an object whose pin_stiffness is k,
# is pinned with strength s = w k (clamped to [0, 1]): s = 1 follows the (deformed) mesh
# exactly (a hard pin, unless the stiffness is animated), s = 0 is free, and in between the vertex
# hangs from a soft pin (solver/constraints/pins.py) whose compliance sags it under its own
# weight by (1/s - 1) PIN_SAG: 1 cm at s = 0.5, 9 cm at 0.1, 99 cm at 0.01. Defined through the
# vertex's own weight, a strength means the same sag on a light or a heavy cloth.
PIN_SAG = 0.01              # [m] sag under its own weight of a vertex pinned at strength 0.5
STANDARD_GRAVITY = 9.80665  # [m/s^2] sets the scale of PIN_SAG (not the scene's gravity)


def pin_compliance(strength, mass):
    """(k,) XPBD compliance [m/N] of soft pins of strength (k,) in [0, 1] (clamped) on vertices
    of mass (k,) [kg]: (1/s - 1) PIN_SAG / (m g0); strength 0 gives inf (released). NaN raises
    ValueError."""
    s = np.asarray(strength, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError(f"pin strength: must be a finite number in [0, 1], got {strength!r}")
    s = np.clip(s, 0.0, 1.0)
    scale = PIN_SAG / (np.asarray(mass, dtype=np.float64) * STANDARD_GRAVITY)
    with np.errstate(divide="ignore"):
        return np.where(s > 0, (1.0 / s - 1.0) * scale, np.inf)


# default bend stiffness: the solver's default cloth bend compliance (1e-3 m/N -> 0.375)
DEFAULT_BEND_STIFFNESS = stiffness_from_compliance(CLOTH_BEND_COMPLIANCE)


def wind_velocity(scene_settings):
    """(3,) wind velocity [m/s]: wind_direction normalised, times wind_strength. A zero
    direction or strength gives no wind."""
    d = np.array(scene_settings.wind_direction, dtype=np.float64)
    norm = float(np.linalg.norm(d))
    if norm < 1e-12 or scene_settings.wind_strength == 0.0:
        return np.zeros(3)
    return d / norm * float(scene_settings.wind_strength)


def invalid_settings(settings):
    """Names of the float settings of ``settings`` (an Object.verlet or Scene.verlet) that hold NaN
    or infinity: scripts can assign NaN past Blender's min/max clamp, the UI cannot."""
    bad = []
    for prop in settings.bl_rna.properties:
        if prop.type != "FLOAT":
            continue
        value = getattr(settings, prop.identifier)
        values = value if getattr(prop, "is_array", False) else (value,)
        if not all(math.isfinite(v) for v in values):
            bad.append(prop.identifier)
    return bad


# bpy property options of a setting fixed for the whole simulation: no 'ANIMATABLE', so
# Blender offers no keyframe for it (the solver reads it once, when the simulation is built)
FIXED = set()


# ---------------------------------------------------------------------- effector weights
def _weight(name, what):
    # Blender's EffectorWeights range; a weight <= 0 switches the field off (effect.cc)
    return FloatProperty(name=name, default=1.0, min=-200.0, max=200.0, soft_min=0.0,
                         soft_max=1.0, description=f"Influence of {what}")


class VerletEffectorWeights(bpy.types.PropertyGroup):
    """Blender's Cloth "Field Weights" for our bodies (addon/fields.py): on the scene for every
    body and on each object; the two multiply. ``collection`` limits which force fields act
    (the object's if set, else the scene's, else every field in the view layer)."""
    collection: PointerProperty(
        name="Effector Collection", type=bpy.types.Collection,
        description="Only force fields in this collection act (empty = every force field)")
    gravity: _weight("Gravity", "gravity")
    all: _weight("All", "every force field")
    force: _weight("Force", "Force fields")
    wind: _weight("Wind", "Wind fields")
    vortex: _weight("Vortex", "Vortex fields")
    turbulence: _weight("Turbulence", "Turbulence fields")
    drag: _weight("Drag", "Drag fields")


# ---------------------------------------------------------------------- object settings
def _kind_changed(settings, context):
    """A baked or played body set to None or Collider shows its own mesh and transform again (it
    was left showing the bake's or the live run's last frame, which playback no longer
    updates); its bake stays, shown again if its Kind comes back, until Free Bake
    (bake.put_back)."""
    if settings.kind in ("NONE", "COLLIDER"):
        from . import bake
        obj = settings.id_data
        if bake.in_live_run(obj):
            # the live run would go on writing its frames onto the object: playback simulates
            # again from the start frame, without it
            bake.stop_live()
        if bake.marked(obj):
            bake.put_back(obj)


class VerletObjectSettings(bpy.types.PropertyGroup):
    # Keyframable (read at every frame, addon/animated.py): friction, restitution, damping and
    # the stiffnesses. What a running simulation cannot change (what the object is, its mass,
    # size and groups) has options=FIXED: Blender offers no keyframe for it.
    kind: EnumProperty(name="Kind", items=KINDS, default="NONE", options=FIXED,
                       description="How this object takes part in the simulation",
                       update=_kind_changed)
    pin_group: StringProperty(name="Pin Group", options=FIXED,
                              description="Vertex group of vertices that follow the mesh; a "
                                          "vertex's weight scales its pin's stiffness. Ragdoll: "
                                          "a bone collection whose bones follow their animated "
                                          "pose (IK by pinning)")
    pin_stiffness: FloatProperty(
        name="Pin Stiffness", default=1.0, min=0.0, max=1.0, precision=3,
        description="Strength of the pins, times each vertex's pin group weight: 1 follows the "
                    "mesh exactly, lower hangs from a spring (a vertex sags (1/s - 1) cm under "
                    "its own weight), 0 lets go; animate it to release a cloth gradually")
    # hard minimum 0, not a small positive mass: a script's 0 or negative mass (clamped to 0) is
    # refused by name when the simulation is built, instead of becoming a feather that flies
    mass: FloatProperty(name="Mass", default=1.0, min=0.0, soft_min=1e-6, max=1e9,
                        soft_max=1000.0, unit="MASS", options=FIXED,
                        description="Total mass of the object [kg]")
    friction: FloatProperty(name="Friction", default=0.5, min=0.0, max=10.0, soft_max=2.0,
                            description="Coulomb friction coefficient (keyframable). A "
                                        "contact takes the geometric mean of its two sides' "
                                        "(a body's and a collider's, or two bodies'): equal "
                                        "sides keep their value, 0 on either side slides")
    thickness: FloatProperty(name="Thickness", default=0.0, min=0.0, max=100.0, soft_max=0.1,
                             unit="LENGTH", options=FIXED,
                             description="Collision offset from the surface [m]")
    collider_shape: EnumProperty(name="Collider Shape", items=COLLIDER_SHAPES, default="AUTO",
                                 options=FIXED,
                                 description="Shape used when this object is a collider")

    # stiffness: 0..1 mapped to XPBD compliance by compliance_from_stiffness (module docstring)
    stretch_stiffness: FloatProperty(
        name="Stretch", default=1.0, min=0.0, max=1.0, precision=3,
        description="Resistance to stretching along edges: 1 = inextensible (compliance 0), "
                    "each 0.125 less is 10x more compliant; the same at any substep count")
    shear_stiffness: FloatProperty(
        name="Shear", default=1.0, min=0.0, max=1.0, precision=3,
        description="Resistance to shearing across polygon diagonals: 1 = rigid (compliance 0), "
                    "each 0.125 less is 10x more compliant. A cloth draped over a rounded "
                    "shape must shear or stretch; lower Shear to let it shear")
    bend_stiffness: FloatProperty(
        name="Bend", default=DEFAULT_BEND_STIFFNESS, min=0.0, max=1.0, precision=3,
        description="Resistance to bending across adjacent faces (support sticks): 1 = "
                    "stiffest, 0.375 = cotton (1e-3 m/N), each 0.125 less is 10x more "
                    "compliant. It shapes folds and wrinkles; a cloth held out flat sags by "
                    "its mesh resolution more than by this setting (a finer mesh sags more)")
    restitution: FloatProperty(
        name="Restitution", default=0.0, min=0.0, max=1.0,
        description="Bounciness at contact: fraction of the normal speed kept (0 = no "
                    "bounce); a contact takes the larger of its two sides'. Rigid bodies "
                    "bounce on colliders and on each other; cloth, soft bodies and plants "
                    "on colliders only (keyframable)")
    shape_stiffness: FloatProperty(
        name="Shape Stiffness", default=0.5, min=0.001, max=1.0, precision=3,
        description="Soft body shape matching: 1 = rigid, lower = softer (solver goal "
                    "compliance (1/s - 1) * 1e-3 m/N)")
    pressure: FloatProperty(
        name="Pressure", default=1.0, min=0.01, max=100.0, soft_max=5.0,
        description="Soft body volume as a multiple of its rest volume (> 1 inflates)")
    self_collision: BoolProperty(
        name="Self Collisions", default=False, options=FIXED,
        description="Cloth: the cloth collides with itself (folds and layers never pass "
                    "through each other); needs a Thickness > 0. Separate bodies always collide")
    use_volume: BoolProperty(
        name="Keep Volume", default=True, options=FIXED,
        description="Soft body: keep the volume enclosed by the (closed) surface")
    taper_group: StringProperty(
        name="Taper Group", options=FIXED,
        description="Plant: vertex group scaling stiffness per vertex (weight 1 = full "
                    "stiffness, e.g. at the root; 0 = limp, e.g. at the tip); empty = uniform")
    damping: FloatProperty(
        name="Damping", default=0.0, min=0.0, max=1.0,
        description="Fraction of this object's velocity removed per second (0 = none), the "
                    "same at any substep count")
    # Added with ragdolls (addon/ragdoll.py): keyframable, read at every frame
    animated: BoolProperty(
        name="Animated", default=False,
        description="Follow the object's animation (for a ragdoll every bone's animated pose) "
                    "while on; when it turns off the object simulates from there, keeping the "
                    "velocity its animation had. Keyframe it to release a body at a frame")
    pose_match: FloatProperty(
        name="Pose Match", default=0.0, min=0.0, max=1.0, precision=3,
        description="Ragdoll: how strongly each joint is driven toward the animated pose "
                    "(0 = limp, 1 = holds its animation while still reacting to hits and "
                    "contacts); a pose bone's custom property 'verlet_pose_match' overrides it "
                    "for the joint to its parent")
    preset: StringProperty(
        name="Preset", options=FIXED, description="The last preset applied (informational)")
    # Added: what the object's cache file is named after (ids.py), issued at its first bake and
    # kept across renames; not a setting (left out of the settings hash and the presets)
    cache_id: StringProperty(
        name="Cache ID", options={"HIDDEN"},
        description="Identifies this object's bake cache file; issued by the first bake")
    effector_weights: PointerProperty(
        type=VerletEffectorWeights, name="Field Weights",
        description="How much Blender's force fields and gravity act on this object")


# ---------------------------------------------------------------------- scene settings
# upper bounds of the step counts: 1000 x 100 sweeps per frame is minutes per frame already
MAX_SUBSTEPS = 1000
MAX_ITERATIONS = 100


def _range_getter(key, scene_attr, default):
    def get(self):
        if self.use_scene_range:
            return getattr(self.id_data, scene_attr)
        return self.get(key, default)
    return get


def _range_setter(key):
    def set_(self, value):
        # an explicit range stops following the scene's, starting from the scene's values
        if self.use_scene_range:
            self["frame_start"] = self.id_data.frame_start
            self["frame_end"] = self.id_data.frame_end
            self.use_scene_range = False
        self[key] = value
    return set_


class VerletSceneSettings(bpy.types.PropertyGroup):
    # Keyframable (read at every frame): wind, air drag, gravity scale, damping, field weights.
    # The step counts and the frame range are FIXED for a simulation: not keyframable.
    # Changed: bounded above (2**31 substeps used to be accepted, and would hang the bake)
    substeps: IntProperty(name="Substeps", default=DEFAULT_SUBSTEPS, min=1, max=MAX_SUBSTEPS,
                          soft_max=200, options=FIXED,
                          description="Solver substeps per frame (more = stiffer, costlier)")
    iterations: IntProperty(name="Iterations", default=DEFAULT_ITERATIONS, min=1,
                            max=MAX_ITERATIONS, soft_max=20, options=FIXED,
                            description="Constraint iterations per substep")
    contact_iterations: IntProperty(
        name="Contact Iterations", default=DEFAULT_CONTACT_ITERATIONS, min=1,
        max=MAX_ITERATIONS, soft_max=8, options=FIXED,
        description="Passes over the contacts between bodies in each iteration: more make "
        "bodies pressed together overlap less, for more time")
    use_sleep: BoolProperty(name="Sleeping", default=DEFAULT_SLEEP, options=FIXED,
                            description="Bodies at rest (slower than 1 cm/s for 0.5 s while "
                            "resting on something) stop being simulated until a collider, pin, "
                            "body or force change wakes them: cheaper, and they do not creep")
    use_scene_range: BoolProperty(name="Follow Scene Range", default=True, options=FIXED,
                                  description="Simulate the scene's frame range")
    frame_start: IntProperty(name="Start", description="First simulated frame", options=FIXED,
                             get=_range_getter("frame_start", "frame_start", 1),
                             set=_range_setter("frame_start"))
    frame_end: IntProperty(name="End", description="Last simulated frame", options=FIXED,
                           get=_range_getter("frame_end", "frame_end", 250),
                           set=_range_setter("frame_end"))

    wind_direction: FloatVectorProperty(
        name="Wind Direction", size=3, default=(1.0, 0.0, 0.0), subtype="DIRECTION",
        min=-1000.0, max=1000.0, soft_min=-1.0, soft_max=1.0,
        description="Direction the wind blows towards (normalised when used; zero = no wind)")
    wind_strength: FloatProperty(
        name="Wind Speed", default=0.0, min=0.0, max=1000.0, soft_max=30.0, unit="VELOCITY",
        description="Mean wind speed [m/s]")
    wind_turbulence: FloatProperty(
        name="Turbulence", default=0.0, min=0.0, max=10.0, soft_max=1.0,
        description="Gust strength as a fraction of the wind speed (0 = steady)")
    wind_seed: IntProperty(
        name="Seed", default=0, min=0, max=2**31 - 1,
        description="Random seed of the turbulence (the same seed gives the same gusts)")
    air_drag: FloatProperty(
        name="Air Drag", default=DEFAULT_AIR_DRAG, min=0.0, max=10000.0, soft_max=10.0,
        description="Air drag on surfaces through their normal [kg/(m^2 s)]; what wind pushes "
                    "with")
    gravity_scale: FloatProperty(
        name="Gravity Scale", default=1.0, min=0.0, max=100.0, soft_max=2.0,
        description="Multiplier on the scene's gravity")
    damping: FloatProperty(
        name="Damping", default=DEFAULT_DAMPING, min=0.0, max=1.0,
        description="Fraction of velocity removed per second for every body (0 = none), the "
                    "same at any substep count")
    effector_weights: PointerProperty(
        type=VerletEffectorWeights, name="Field Weights",
        description="How much Blender's force fields and gravity act on every body (times "
                    "each object's own weights)")


_classes = (VerletEffectorWeights, VerletObjectSettings, VerletSceneSettings)


def register():
    for c in _classes:
        bpy.utils.register_class(c)
    bpy.types.Object.verlet = PointerProperty(type=VerletObjectSettings)
    bpy.types.Scene.verlet = PointerProperty(type=VerletSceneSettings)


def unregister():
    del bpy.types.Scene.verlet
    del bpy.types.Object.verlet
    for c in reversed(_classes):
        bpy.utils.unregister_class(c)
