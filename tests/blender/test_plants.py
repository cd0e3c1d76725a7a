"""Edge-only plant strands: rooted by their pin group, they sway in the scene's wind through the
exposed area the add-on gives them (strands have no faces), and stand still without wind."""

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()


def _strand(name, x0):
    """A 30 cm vertical strand of 7 vertices joined by edges, its lowest vertex in group Root."""
    z = np.linspace(0.0, 0.3, 7)
    verts = [(x0, 0.0, float(h)) for h in z]
    edges = [(i, i + 1) for i in range(6)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, edges, [])
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.vertex_groups.new(name="Root").add([0, 1], 1.0, "REPLACE")
    obj.verlet.kind = "PLANT"
    obj.verlet.pin_group = "Root"
    obj.verlet.mass = 0.01
    return obj


def _tip(obj):
    key = obj.data.shape_keys.key_blocks["Verlet"]
    co = np.empty(len(key.data) * 3, np.float32)
    key.data.foreach_get("co", co)
    return co.reshape(-1, 3)[-1].astype(np.float64)


@pytest.mark.parametrize("wind", [0.0, 6.0])
def test_edge_only_strand_sways_in_wind(extension, wind):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    scene.verlet.substeps = 20
    scene.verlet.wind_direction = (1.0, 0.0, 0.0)
    scene.verlet.wind_strength = wind
    obj = _strand("Grass", 0.0)
    assert bpy.ops.verlet.bake("EXEC_DEFAULT") == {"FINISHED"}
    assert scene.get("verlet_error", "") == ""
    scene.frame_set(24)
    tip = _tip(obj)
    assert np.all(np.isfinite(tip))
    if wind:
        assert tip[0] > 0.03                   # blown downwind by several centimetres
    else:
        assert abs(tip[0]) < 1e-3 and abs(tip[2] - 0.3) < 0.02    # stands (support sticks)
