import numpy as np, bpy, bmesh, pytest
import scenes
from test_mesh_colliders import _addon

@pytest.mark.parametrize("sleep", [True, False])
def test_suz(extension, sleep):
    bake = _addon()
    scenes.set_range(1, 30)
    bpy.context.scene.verlet.use_sleep = sleep
    monkey = scenes._bmesh_object("Suzanne", lambda bm: bmesh.ops.create_monkey(bm),
                                  (0.0, 0.0, 0.0), "COLLIDER", rotation=(1.5708, 0.0, 0.0))
    c = scenes.cloth(n=10, size=1.2, location=(0.0, 0.0, 1.3))
    assert scenes.bake_op() == {"FINISHED"}
    _, frames = bake.load(c)
    for f in range(0, 30, 3):
        w = scenes.world(c, frames[f])
        print(sleep, f, w[:, 2].max(), w[:, 2].min())
