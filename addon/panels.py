"""The Physics tab: "Verlet Physics" and its subpanels, laid out like Blender's own physics
panels (bl_ui/properties_physics_cloth.py).

    Verlet Physics            kind; presets menu in the header
      Physical Properties     mass, damping; stiffness (Cloth, Plant, Soft edges); shape and volume (Soft)
      Shape                   pin group; stiffness taper group (Plant)
      Collisions              thickness, friction, restitution; collider shape (Collider)
      Forces                  scene-wide: gravity scale, damping, air drag, wind
        Field Weights         how Blender's force fields act: this object's and the scene's
                              effector collection and weights (addon/fields.py)
      Cache                   frame range, substeps, iterations; bake, free, shape keys, exports;
                              status line and last error

While the object has a bake (state.has_bake) its settings are disabled (layout.enabled = False
on the settings' columns); the bake, free and export buttons stay usable.
"""

import textwrap

import bpy

from . import state

SIMULATED = ("CLOTH", "PLANT", "SOFT", "RIGID", "RAGDOLL")
ERROR_WRAP = 60          # characters per line of the last-error message


def split_layout(layout):
    """Blender's property-split style, without animation decorators."""
    layout.use_property_split = True
    layout.use_property_decorate = False
    return layout


def settings_column(layout, obj, align=False):
    """A column for settings: disabled while obj is baked."""
    col = layout.column(align=align)
    col.enabled = not state.has_bake(obj)
    return col


class VerletPanel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"
    kinds = None         # the object kinds this panel shows for; None = any mesh object

    @classmethod
    def poll(cls, context):
        obj = getattr(context, "object", None)
        if obj is None or obj.type not in ("MESH", "ARMATURE") or \
                getattr(obj, "verlet", None) is None:
            return False
        # an armature is a Ragdoll or nothing: only the kind shows until it is one
        if obj.type == "ARMATURE" and cls.kinds is not None and obj.verlet.kind != "RAGDOLL":
            return False
        return cls.kinds is None or obj.verlet.kind in cls.kinds


class PHYSICS_PT_verlet(VerletPanel, bpy.types.Panel):
    bl_label = "Verlet Physics"

    def draw_header_preset(self, context):
        obj = context.object
        if obj.verlet.kind == "COLLIDER":
            return
        row = self.layout.row()
        row.enabled = not state.has_bake(obj)
        row.menu("VERLET_MT_presets", text=obj.verlet.preset.replace("_", " ").title()
                 or "Presets", icon="PRESET")

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        col = settings_column(layout, obj)
        col.prop(obj.verlet, "kind")
        if (obj.verlet.kind == "RAGDOLL") != (obj.type == "ARMATURE") and \
                obj.verlet.kind != "NONE":
            layout.label(text="Ragdoll is for armatures; an armature can only be a Ragdoll",
                         icon="ERROR")
        if state.has_bake(obj):
            layout.label(text="Baked: free the bake to change settings", icon="LOCKED")


class PHYSICS_PT_verlet_physical(VerletPanel, bpy.types.Panel):
    bl_label = "Physical Properties"
    bl_parent_id = "PHYSICS_PT_verlet"
    kinds = SIMULATED

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        s = obj.verlet
        col = settings_column(layout, obj)
        col.prop(s, "mass")
        col.prop(s, "damping")
        if s.kind in SIMULATED:
            col.prop(s, "animated")
        if s.kind == "RAGDOLL":
            col.prop(s, "pose_match")
        if s.kind in ("CLOTH", "PLANT"):
            sub = col.column(align=True, heading="Stiffness")
            sub.prop(s, "stretch_stiffness", text="Stretch")
            sub.prop(s, "shear_stiffness", text="Shear")
            sub.prop(s, "bend_stiffness", text="Bend")
        elif s.kind == "SOFT":
            col.prop(s, "shape_stiffness", text="Shape Stiffness")
            col.prop(s, "stretch_stiffness", text="Edge Stiffness")
            col.prop(s, "use_volume")
            sub = col.column()
            sub.active = s.use_volume
            sub.prop(s, "pressure")


class PHYSICS_PT_verlet_shape(VerletPanel, bpy.types.Panel):
    bl_label = "Shape"
    bl_parent_id = "PHYSICS_PT_verlet"
    bl_options = {"DEFAULT_CLOSED"}
    kinds = ("CLOTH", "PLANT", "SOFT", "RAGDOLL")

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        s = obj.verlet
        col = settings_column(layout, obj)
        if s.kind == "RAGDOLL":         # a bone collection whose bones follow their pose
            col.prop_search(s, "pin_group", obj.data, "collections_all"
                            if hasattr(obj.data, "collections_all") else "collections",
                            text="Pinned Bones")
            return
        col.prop_search(s, "pin_group", obj, "vertex_groups", text="Pin Group")
        col.prop(s, "pin_stiffness", text="Pin Stiffness")
        if s.kind == "PLANT":
            col.prop_search(s, "taper_group", obj, "vertex_groups", text="Stiffness Taper")


class PHYSICS_PT_verlet_collisions(VerletPanel, bpy.types.Panel):
    bl_label = "Collisions"
    bl_parent_id = "PHYSICS_PT_verlet"
    bl_options = {"DEFAULT_CLOSED"}
    kinds = ("CLOTH", "PLANT", "SOFT", "RIGID", "COLLIDER", "RAGDOLL")

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        s = obj.verlet
        col = settings_column(layout, obj)
        if s.kind == "RAGDOLL":         # its capsules' radii are fitted to the skin; no bounce
            col.prop(s, "friction")
            return
        if s.kind == "COLLIDER":
            col.prop(s, "collider_shape", text="Shape")
        col.prop(s, "thickness")
        col.prop(s, "friction")
        col.prop(s, "restitution")
        if s.kind == "CLOTH":
            col.prop(s, "self_collision")


class PHYSICS_PT_verlet_forces(VerletPanel, bpy.types.Panel):
    bl_label = "Forces"
    bl_parent_id = "PHYSICS_PT_verlet"
    bl_options = {"DEFAULT_CLOSED"}
    kinds = SIMULATED

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        sc = context.scene.verlet
        layout.label(text="Scene-wide: acts on every Verlet body", icon="WORLD")
        col = settings_column(layout, obj)
        col.prop(sc, "gravity_scale")
        col.prop(sc, "damping")
        # air drag and the scene wind act through exposed area, which only cloth and plants
        # have (solver/forces.py): greyed out, with why, for the other kinds
        sheet = obj.verlet.kind in ("CLOTH", "PLANT")
        if not sheet:
            layout.label(text="Air drag and wind act on cloth and plants; a Wind force field "
                              "moves this body", icon="INFO")
        col = settings_column(layout, obj)
        col.active = sheet
        col.prop(sc, "air_drag")
        col = settings_column(layout, obj)
        col.active = sheet
        col.prop(sc, "wind_strength", text="Wind Speed")
        sub = col.column()
        sub.active = sheet and sc.wind_strength > 0.0
        sub.prop(sc, "wind_direction", text="Direction")
        sub.prop(sc, "wind_turbulence")
        sub.prop(sc, "wind_seed")


def draw_effector_weights(layout, weights, enabled):
    col = layout.column()
    col.enabled = enabled
    col.prop(weights, "collection")
    col.prop(weights, "gravity")
    col.prop(weights, "all")
    col = layout.column(align=True)
    col.enabled = enabled
    for name in ("force", "wind", "vortex", "turbulence", "drag"):
        col.prop(weights, name)


class PHYSICS_PT_verlet_field_weights(VerletPanel, bpy.types.Panel):
    bl_label = "Field Weights"
    bl_parent_id = "PHYSICS_PT_verlet_forces"
    bl_options = {"DEFAULT_CLOSED"}
    kinds = SIMULATED

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        enabled = not state.has_bake(obj)
        layout.label(text="This object (times the scene's)", icon="OBJECT_DATA")
        draw_effector_weights(layout, obj.verlet.effector_weights, enabled)
        layout.label(text="Scene-wide: every Verlet body", icon="WORLD")
        draw_effector_weights(layout, context.scene.verlet.effector_weights, enabled)


class PHYSICS_PT_verlet_cache(VerletPanel, bpy.types.Panel):
    bl_label = "Cache"
    bl_parent_id = "PHYSICS_PT_verlet"
    bl_options = {"DEFAULT_CLOSED"}
    kinds = SIMULATED + ("COLLIDER",)

    def draw(self, context):
        layout = split_layout(self.layout)
        obj = context.object
        scene = context.scene
        sc = scene.verlet
        baked = state.has_bake(obj)

        col = settings_column(layout, obj, align=True)
        col.prop(sc, "use_scene_range")
        sub = col.column(align=True)
        sub.active = not sc.use_scene_range
        sub.prop(sc, "frame_start", text="Simulation Start")
        sub.prop(sc, "frame_end", text="End")
        col = settings_column(layout, obj, align=True)
        col.prop(sc, "substeps")
        col.prop(sc, "iterations")
        col.prop(sc, "contact_iterations")
        col.prop(sc, "use_sleep")

        col = layout.column(align=True)
        col.alignment = "RIGHT"
        if obj.verlet.kind == "COLLIDER":
            col.label(text="Colliders follow their animation (not cached)", icon="INFO")
        else:
            col.label(text=state.status_text(obj), icon="CHECKMARK" if baked else "INFO")
        from .preferences import backend_status       # compiled kernels, or NumPy and why
        col.label(text=backend_status(), icon="SETTINGS")

        layout.use_property_split = False
        row = layout.row(align=True)
        sub = row.row(align=True)
        # Changed: an outdated bake (settings or topology changed, file gone) can be baked
        # again directly; Bake used to stay disabled until Free Bake, with no hint
        stale = state.bake_is_outdated(scene)
        sub.enabled = not baked or stale
        sub.operator("verlet.bake", text="Bake Again" if baked and stale else "Bake",
                     icon="PHYSICS")
        row.operator("verlet.free_bake", text="Free Bake", icon="TRASH")
        col = layout.column(align=True)
        if obj.verlet.kind in ("RAGDOLL", "RIGID"):
            col.operator("verlet.bake_to_keyframes", text="Bake to Keyframes", icon="KEY_HLT")
        if obj.verlet.kind != "RAGDOLL":
            col.operator("verlet.bake_to_shape_keys", text="Bake to Shape Keys",
                         icon="SHAPEKEY_DATA")
        row = col.row(align=True)
        row.operator("verlet.export_pc2", text="Export PC2", icon="EXPORT")
        row.operator("verlet.export_alembic", text="Export Alembic", icon="EXPORT")

        error = state.last_error(scene)
        if error:
            box = layout.box()
            lines = textwrap.wrap(error, ERROR_WRAP) or [error]
            box.label(text=lines[0], icon="ERROR")
            for line in lines[1:]:
                box.label(text=line)


_classes = (
    PHYSICS_PT_verlet,
    PHYSICS_PT_verlet_physical,
    PHYSICS_PT_verlet_shape,
    PHYSICS_PT_verlet_collisions,
    PHYSICS_PT_verlet_forces,
    PHYSICS_PT_verlet_field_weights,
    PHYSICS_PT_verlet_cache,
)


register, unregister = bpy.utils.register_classes_factory(_classes)
