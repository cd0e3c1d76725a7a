"""Material presets in the Physics tab: the header menu and ``verlet.apply_preset(name=...)``.

Presets come from ``presets/materials.json`` through solver.presets.load_presets(). Applying one
maps its solver settings onto Object.verlet:

=====================================  ==================================================
preset key                             Object.verlet
=====================================  ==================================================
kind                                   kind (only when the object's kind is NONE; another
                                       kind than the preset's is refused)
density [kg/m^2] (CLOTH, PLANT)        mass = density x world surface area of the mesh
density [kg/m^3] (SOFT, RIGID)         mass = density x world volume (closed meshes only)
stretch/shear/bend_compliance [m/N]    stretch/shear/bend_stiffness via
                                       properties.stiffness_from_compliance
stiffness                              shape_stiffness
pressure                               pressure (and use_volume = True)
friction, damping, restitution         the same names
=====================================  ==================================================

Mass is left alone when the mesh has no faces (area) or is not closed (volume). ``air_drag`` is
a scene-wide setting (Scene.verlet.air_drag) and ``volume_compliance`` has no per-object
setting, so neither is applied: the operator's report names them.
"""

import bpy
import numpy as np
from bpy.props import StringProperty

from ..solver.geometry import closed_edges, fan_triangles, polygon_areas, signed_volume
from ..solver.presets import load_presets
from . import bridge, state
from .properties import KINDS, stiffness_from_compliance

KIND_LABELS = {k: label for k, label, _ in KINDS}
SURFACE_KINDS = ("CLOTH", "PLANT")           # density in kg/m^2
BODY_KINDS = ("SOFT", "RIGID")               # density in kg/m^3
_COMPLIANCE = (("stretch_compliance", "stretch_stiffness"),
               ("shear_compliance", "shear_stiffness"),
               ("bend_compliance", "bend_stiffness"))
_DIRECT = (("stiffness", "shape_stiffness"), ("pressure", "pressure"),
           ("friction", "friction"), ("damping", "damping"), ("restitution", "restitution"))
_NOT_APPLIED = {"air_drag": "scene-wide, set it in Forces",
                "volume_compliance": "no per-object setting"}


def presets_for_kind(kind, presets=None):
    """[(name, preset)] sorted by name whose kind is ``kind`` (every preset for NONE; none for
    COLLIDER, which has no material)."""
    presets = load_presets() if presets is None else presets
    return sorted((name, p) for name, p in presets.items() if kind == "NONE" or p["kind"] == kind)


def preset_label(name):
    return name.replace("_", " ").title()


# ---------------------------------------------------------------------- mesh measures
def _world_vertices(obj):
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world, dtype=np.float64)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def surface_area(obj):
    """World-space surface area [m^2] of a mesh object's polygons (0 for no faces): each
    polygon's vector area (Newell, solver.geometry) from world-space vertices."""
    mesh = obj.data
    if len(mesh.polygons) == 0:
        return 0.0
    start, total, corner = bridge.polygon_corners(mesh)
    return float(polygon_areas(_world_vertices(obj), corner, start, total).sum())


def closed_volume(obj):
    """World-space volume [m^3] enclosed by a mesh object's polygons, or None when the surface
    is not closed (an edge of a face not shared by exactly two faces) or has no faces."""
    mesh = obj.data
    p = len(mesh.polygons)
    if p == 0:
        return None
    start, total, corner = bridge.polygon_corners(mesh)
    if not closed_edges(corner, start, total):
        return None
    return abs(signed_volume(_world_vertices(obj), fan_triangles(corner, start, total)))


# ---------------------------------------------------------------------- applying a preset
class PresetError(ValueError):
    """A preset that cannot be applied; the message names the object."""


def apply_preset(obj, name, presets=None):
    """Apply preset ``name`` to ``obj``'s Verlet settings. Returns (applied, skipped): dicts of
    {setting: value} put on obj.verlet and {preset key: reason} left out. Raises PresetError
    (naming the object) when obj is baked, the preset is unknown or is for another kind."""
    presets = load_presets() if presets is None else presets
    if state.has_bake(obj):
        raise PresetError(f"{obj.name}: has a bake; free it (Cache > Free Bake) before applying "
                          f"preset '{name}'")
    if name not in presets:
        raise PresetError(f"{obj.name}: unknown preset '{name}' (available: "
                          f"{', '.join(sorted(presets))})")
    preset = presets[name]
    s = obj.verlet
    kind = preset["kind"]
    if s.kind not in ("NONE", kind):
        raise PresetError(f"{obj.name}: preset '{name}' is for {KIND_LABELS[kind]} objects, this "
                          f"object is a {KIND_LABELS[s.kind]}; set its kind to None or "
                          f"{KIND_LABELS[kind]} first")
    need = "ARMATURE" if kind == "RAGDOLL" else "MESH"
    if obj.type != need:
        what = obj.type.lower().replace("_", " ")
        raise PresetError(f"{obj.name}: preset '{name}' is for {KIND_LABELS[kind]} objects, "
                          f"which {'are armatures' if need == 'ARMATURE' else 'are meshes'}; "
                          f"this is {'an' if what[:1] in 'aeiou' else 'a'} {what} object")
    if obj.type == "MESH" and obj.mode == "EDIT":
        obj.update_from_editmode()
    applied, skipped = {}, {}
    if s.kind == "NONE":
        s.kind = kind
        applied["kind"] = kind
    if "density" in preset:
        density = preset["density"]
        mass = None
        if obj.type != "MESH":
            skipped["density"] = "not a mesh: mass unchanged"
        elif kind in SURFACE_KINDS:
            area = surface_area(obj)
            if area > 0:
                mass = density * area
            else:
                skipped["density"] = "the mesh has no faces: mass unchanged"
        else:
            volume = closed_volume(obj)
            if volume:
                mass = density * volume
            else:
                skipped["density"] = "the mesh is not closed: mass unchanged"
        if mass is not None:
            s.mass = mass
            applied["mass"] = s.mass
    for key, prop in _COMPLIANCE:
        if key in preset:
            setattr(s, prop, stiffness_from_compliance(preset[key]))
            applied[prop] = getattr(s, prop)
    for key, prop in _DIRECT:
        if key in preset:
            setattr(s, prop, preset[key])
            applied[prop] = getattr(s, prop)
    if "pressure" in preset or "volume_compliance" in preset:
        s.use_volume = True
        applied["use_volume"] = True
    for key, reason in _NOT_APPLIED.items():
        if key in preset:
            skipped[key] = reason
    s.preset = name
    return applied, skipped


def describe(obj, name, applied, skipped):
    """The operator's one-line report of what a preset did."""
    parts = []
    for key, value in applied.items():
        if isinstance(value, float):
            value = f"{value:.4g} kg" if key == "mass" else f"{value:.3f}"
        parts.append(f"{key} {value}")
    text = f"{obj.name}: applied preset '{name}': " + ", ".join(parts)
    if skipped:
        text += "; not applied: " + "; ".join(f"{k} ({why})" for k, why in skipped.items())
    return text


class VERLET_OT_apply_preset(bpy.types.Operator):
    """Apply a material preset to the active object's Verlet settings"""
    bl_idname = "verlet.apply_preset"
    bl_label = "Apply Verlet Preset"
    bl_options = {"REGISTER", "UNDO"}

    name: StringProperty(name="Preset", description="Name of the preset in presets/materials.json")

    @classmethod
    def poll(cls, context):
        obj = getattr(context, "object", None)
        if obj is None or getattr(obj, "verlet", None) is None:
            cls.poll_message_set("No active object")
            return False
        return True

    def execute(self, context):
        obj = context.object
        try:
            applied, skipped = apply_preset(obj, self.name)
        except (PresetError, ValueError, OSError) as exc:
            message = str(exc)
            if not message.startswith(f"{obj.name}:"):
                message = f"{obj.name}: cannot apply preset '{self.name}': {message}"
            self.report({"ERROR"}, message)
            return {"CANCELLED"}
        self.report({"INFO"}, describe(obj, self.name, applied, skipped))
        return {"FINISHED"}


class VERLET_MT_presets(bpy.types.Menu):
    """Material presets for the active object's kind"""
    bl_idname = "VERLET_MT_presets"
    bl_label = "Verlet Presets"

    def draw(self, context):
        layout = self.layout
        obj = context.object
        if obj is None:
            return
        try:
            items = presets_for_kind(obj.verlet.kind)
        except (ValueError, OSError) as exc:
            layout.label(text=str(exc), icon="ERROR")
            return
        if not items:
            layout.label(text=f"No presets for {KIND_LABELS[obj.verlet.kind]}")
            return
        for name, preset in items:
            icon = "CHECKMARK" if name == obj.verlet.preset else "NONE"
            text = preset_label(name)
            if obj.verlet.kind == "NONE":
                text += f" ({KIND_LABELS[preset['kind']]})"
            layout.operator(VERLET_OT_apply_preset.bl_idname, text=text, icon=icon).name = name


_classes = (VERLET_OT_apply_preset, VERLET_MT_presets)


register, unregister = bpy.utils.register_classes_factory(_classes)
