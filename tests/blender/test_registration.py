"""The extension registers into Blender (bpy) with the properties CONTRACT.md names."""

import numpy as np

from conftest import import_bpy

bpy = import_bpy()


def test_root_import_does_no_bpy_work():
    """Importing the package must not touch bpy: the solver is used outside Blender too."""
    import subprocess
    import sys
    from conftest import ROOT
    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('verlet_physics', {ROOT + '/__init__.py'!r},"
        f" submodule_search_locations=[{ROOT!r}])\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "assert 'bpy' not in sys.modules, 'bpy imported at package import'\n"
        "assert hasattr(m, 'register') and hasattr(m, 'unregister')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_properties_registered_with_contract_names(extension):
    obj = bpy.data.objects.new("Cloth", bpy.data.meshes.new("Cloth"))
    bpy.context.scene.collection.objects.link(obj)
    s = obj.verlet
    assert s.kind == "NONE"
    kinds = {i.identifier for i in s.bl_rna.properties["kind"].enum_items}
    assert kinds == {"NONE", "CLOTH", "PLANT", "SOFT", "RIGID", "COLLIDER", "RAGDOLL"}
    shapes = {i.identifier for i in s.bl_rna.properties["collider_shape"].enum_items}
    assert shapes == {"AUTO", "PLANE", "SPHERE", "BOX", "CYLINDER", "CAPSULE", "MESH"}
    s.kind, s.pin_group, s.mass, s.friction, s.thickness = "CLOTH", "Pins", 2.5, 0.7, 0.01
    assert (s.kind, s.pin_group) == ("CLOTH", "Pins")
    assert np.allclose([s.mass, s.friction, s.thickness], [2.5, 0.7, 0.01])


def test_scene_range_follows_scene_until_set(extension):
    scene = bpy.context.scene
    v = scene.verlet
    scene.frame_start, scene.frame_end = 5, 80
    assert (v.frame_start, v.frame_end) == (5, 80)
    assert v.substeps >= 1 and v.iterations >= 1
    v.frame_end = 40                       # an explicit range stops following the scene
    scene.frame_end = 120
    assert v.use_scene_range is False
    assert (v.frame_start, v.frame_end) == (5, 40)


def test_unregister_removes_properties():
    from conftest import load_extension
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = load_extension()
    ext.register()
    ext.unregister()
    assert not hasattr(bpy.types.Object, "verlet")
    assert not hasattr(bpy.types.Scene, "verlet")
