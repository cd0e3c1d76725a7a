"""Settings stored on Blender data: Object.verlet and Scene.verlet (see CONTRACT.md).

Units follow the solver: mass [kg], thickness [m]; friction is a Coulomb coefficient.
"""

import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty,
                       StringProperty)

from ..solver.simulation import DEFAULT_ITERATIONS, DEFAULT_SUBSTEPS

KINDS = (
    ("NONE", "None", "Not simulated"),
    ("CLOTH", "Cloth", "A mesh with faces simulated as cloth"),
    ("PLANT", "Plant", "Grass, leaves and branches: a rooted, springy mesh or strands"),
    ("SOFT", "Soft Body", "Shape matching with volume preservation: jelly, rubber, balloons"),
    ("RIGID", "Rigid Body", "A body that keeps its shape; written back as the object's transform"),
    ("COLLIDER", "Collider", "Other bodies collide with this object"),
)

COLLIDER_SHAPES = (
    ("AUTO", "Auto", "Infer the shape from the object's geometry"),
    ("PLANE", "Plane", "An infinite half-space below the object's local XY plane"),
    ("SPHERE", "Sphere", "A sphere of the object's size"),
    ("BOX", "Box", "The object's bounding box"),
    ("CYLINDER", "Cylinder", "A cylinder along the object's local Z"),
    ("CAPSULE", "Capsule", "A capsule along the object's local Z"),
)


class VerletObjectSettings(bpy.types.PropertyGroup):
    kind: EnumProperty(name="Kind", items=KINDS, default="NONE",
                       description="How this object takes part in the simulation")
    pin_group: StringProperty(name="Pin Group",
                              description="Vertex group of vertices that follow the mesh")
    mass: FloatProperty(name="Mass", default=1.0, min=1e-6, soft_max=1000.0, unit="MASS",
                        description="Total mass of the object [kg]")
    friction: FloatProperty(name="Friction", default=0.5, min=0.0, soft_max=2.0,
                            description="Coulomb friction coefficient")
    thickness: FloatProperty(name="Thickness", default=0.0, min=0.0, soft_max=0.1,
                             unit="LENGTH", description="Collision offset from the surface [m]")
    collider_shape: EnumProperty(name="Collider Shape", items=COLLIDER_SHAPES, default="AUTO",
                                 description="Shape used when this object is a collider")


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
    substeps: IntProperty(name="Substeps", default=DEFAULT_SUBSTEPS, min=1, soft_max=200,
                          description="Solver substeps per frame (more = stiffer, costlier)")
    iterations: IntProperty(name="Iterations", default=DEFAULT_ITERATIONS, min=1, soft_max=20,
                            description="Constraint iterations per substep")
    use_scene_range: BoolProperty(name="Follow Scene Range", default=True,
                                  description="Simulate the scene's frame range")
    frame_start: IntProperty(name="Start", description="First simulated frame",
                             get=_range_getter("frame_start", "frame_start", 1),
                             set=_range_setter("frame_start"))
    frame_end: IntProperty(name="End", description="Last simulated frame",
                           get=_range_getter("frame_end", "frame_end", 250),
                           set=_range_setter("frame_end"))


_classes = (VerletObjectSettings, VerletSceneSettings)


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
