"""Mesh colliders in Blender: AUTO makes any mesh that is not a recognised primitive (a torus,
Suzanne) a mesh collider, a shape-key-animated collider moves the cloth resting on it, and bad
collider meshes are refused naming the object."""

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import bmesh  # noqa: E402  (importable once bpy is)
import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake
    return bake


def _torus(name="Torus", major=1.0, minor=0.3, nu=32, nv=16, location=(0.0, 0.0, 0.0)):
    u, w = np.meshgrid(np.arange(nu) * 2 * np.pi / nu, np.arange(nv) * 2 * np.pi / nv,
                       indexing="ij")
    r = major + minor * np.cos(w)
    v = np.column_stack([(r * np.cos(u)).ravel(), (r * np.sin(u)).ravel(),
                         (minor * np.sin(w)).ravel()])
    i, j = np.arange(nu)[:, None], np.arange(nv)[None, :]
    quads = np.stack([i * nv + j, ((i + 1) % nu) * nv + j, ((i + 1) % nu) * nv + (j + 1) % nv,
                      i * nv + (j + 1) % nv], -1).reshape(-1, 4)
    me = bpy.data.meshes.new(name)
    me.from_pydata(v.tolist(), [], quads.tolist())
    me.update()
    obj = scenes.link(bpy.data.objects.new(name, me))
    obj.location = location
    obj.verlet.kind = "COLLIDER"
    return obj


def test_a_torus_with_auto_is_a_mesh_collider_the_cloth_rests_on(extension):
    bake = _addon()
    scenes.set_range(1, 30)
    torus = _torus(location=(0.0, 0.0, 0.2))
    assert torus.verlet.collider_shape == "AUTO"
    c = scenes.cloth(n=6, size=0.2, location=(1.0, 0.0, 0.8), thickness=0.01)
    assert scenes.bake_op() == {"FINISHED"}
    _, frames = bake.load(c)
    w = scenes.world(c, frames[-1])
    top = 0.2 + 0.3 + 0.01                             # the ring's top + the cloth's thickness
    assert np.all(w[:, 2] > top - 0.03)                # on it, not through the hole or the tube
    assert abs(np.median(w[:, 2]) - top) < 0.02
    assert bpy.context.scene.get("verlet_error", "") == ""


def test_suzanne_with_auto_catches_the_cloth(extension):
    bake = _addon()
    scenes.set_range(1, 30)
    monkey = scenes._bmesh_object("Suzanne", lambda bm: bmesh.ops.create_monkey(bm),
                                  (0.0, 0.0, 0.0), "COLLIDER", rotation=(1.5708, 0.0, 0.0))
    c = scenes.cloth(n=10, size=1.2, location=(0.0, 0.0, 1.3))
    assert scenes.bake_op() == {"FINISHED"}
    _, frames = bake.load(c)
    w = scenes.world(c, frames[-1])
    # Suzanne stands upright (local Y is world Z): her head reaches zmax; without the collider
    # the cloth falls 1.3 m + in 30 frames
    zmax = max((monkey.matrix_world @ v.co).z for v in monkey.data.vertices)
    assert w[:, 2].max() > zmax - 0.05                 # caught on her head
    assert w[:, 2].min() > -0.2                        # hangs over her face, not through it
    assert bpy.context.scene.get("verlet_error", "") == ""


def test_shape_key_animated_collider_lifts_the_cloth(extension):
    bake = _addon()
    scenes.set_range(1, 36)
    me = scenes.grid_mesh("Lift", n=5, size=2.0)
    lift = scenes.link(bpy.data.objects.new("Lift", me))
    lift.verlet.kind = "COLLIDER"
    lift.verlet.collider_shape = "MESH"
    lift.shape_key_add(name="Basis")
    up = lift.shape_key_add(name="Up")
    for v in up.data:
        v.co.z += 0.5
    up.value = 0.0
    up.keyframe_insert("value", frame=8)
    up.value = 1.0
    up.keyframe_insert("value", frame=28)
    c = scenes.cloth(n=6, size=0.5, location=(0.0, 0.0, 0.1))
    assert scenes.bake_op() == {"FINISHED"}
    _, frames = bake.load(c)
    z8 = scenes.world(c, frames[7])[:, 2]
    z36 = scenes.world(c, frames[-1])[:, 2]
    assert np.all(np.abs(z8) < 0.01)                   # resting on the sheet at its base
    assert np.all(np.abs(z36 - 0.5) < 0.01)            # carried up the 0.5 m the key moves


def test_collider_mesh_without_faces_is_refused(extension):
    scenes.set_range(1, 5)
    me = bpy.data.meshes.new("Dots")
    me.from_pydata([[0, 0, 0], [1, 0, 0.3], [0, 1, 0.5], [1, 1, 0.1]], [], [])
    dots = scenes.link(bpy.data.objects.new("Dots", me))
    dots.verlet.kind = "COLLIDER"
    scenes.cloth(n=4, size=0.3, location=(0.0, 0.0, 1.0))
    with pytest.raises(RuntimeError, match="Dots.*no faces"):
        scenes.bake_op()


def test_collider_vertex_count_change_is_refused(extension):
    scenes.set_range(1, 6)
    torus = _torus(name="Donut", nu=12, nv=6)
    mod = torus.modifiers.new("Subdivide", "SUBSURF")
    mod.levels = 0
    mod.keyframe_insert("levels", frame=2)
    mod.levels = 1
    mod.keyframe_insert("levels", frame=3)
    scenes.cloth(n=4, size=0.3, location=(1.0, 0.0, 1.0))
    with pytest.raises(RuntimeError, match="Donut.*vertex count changed"):
        scenes.bake_op()


def _open_cube(name, size, location, keep):
    """A cube collider with only the faces whose outward normals pass ``keep``."""
    def build(bm):
        bmesh.ops.create_cube(bm, size=size)
        bmesh.ops.delete(bm, geom=[f for f in bm.faces if not keep(f.normal)], context="FACES_ONLY")
    return scenes._bmesh_object(name, build, location, "COLLIDER")


def test_auto_reads_open_meshes_as_the_meshes_they_are(extension):
    """Auto reads only closed meshes as solid primitives (solver/geometry.primitive_shape): by
    their vertices alone an open-top box and a pipe were solid; a flat mesh with faces is a
    plane, and one with no faces is refused naming it (Auto made an edge-only circle a plane,
    which baked without a word)."""
    from verlet_physics.addon import bridge, simscene

    def auto(obj):
        return simscene.infer_collider(obj, bridge.positions(obj.data))[0]
    assert auto(_open_cube("Crate box", 1.0, (0.0, 0.0, 0.0), lambda n: n.z < 0.9)) == "mesh"
    assert auto(_open_cube("Closed box", 1.0, (0.0, 0.0, 0.0), lambda n: True)) == "box"
    bpy.ops.mesh.primitive_cylinder_add(end_fill_type="NOTHING")
    assert auto(bpy.context.object) == "mesh"                          # a pipe
    bpy.ops.mesh.primitive_cylinder_add()
    assert auto(bpy.context.object) == "cylinder"
    bpy.ops.mesh.primitive_plane_add()
    assert auto(bpy.context.object) == "plane"
    bpy.context.object.verlet.collider_shape = "MESH"                  # a finite tile
    assert auto(bpy.context.object) == "mesh"
    scenes.set_range(1, 3)
    bpy.ops.mesh.primitive_circle_add()                                 # edges only
    ring = bpy.context.object
    ring.name = "Ring"
    ring.verlet.kind = "COLLIDER"
    scenes.cloth(n=4, size=0.3, location=(0.0, 0.0, 1.0))
    with pytest.raises(RuntimeError, match="Ring.*no faces"):
        scenes.bake_op()


def test_a_crate_dropped_into_an_open_box_rests_inside_it(extension):
    """An open-top box (Auto: a mesh collider, two-sided) holds a crate dropped into it on its
    floor; read as a solid box it lifted the crate onto its rim (z 2.2 m, not 0.2)."""
    bake = _addon()
    scenes.set_range(1, 36)
    _open_cube("Bin", 2.0, (0.0, 0.0, 1.0), lambda n: n.z < 0.9)      # floor at z = 0
    crate = scenes.cube("Crate", size=0.4, location=(0.0, 0.0, 1.5))
    assert scenes.bake_op() == {"FINISHED"}
    _, m = bake.load(crate)
    assert m[-1, 2, 3] == pytest.approx(0.2, abs=0.01)                 # on the bin's floor
    assert np.abs(m[-1, :2, 3]).max() < 0.05


def test_a_floor_tile_set_to_mesh_holds_only_what_falls_on_it(extension):
    """A 1 m floor tile raised 1 m, its shape Mesh (finite): it catches the cloth dropped on
    it, and a cloth dropped 3 m to its side falls past it to the ground. Auto reads it as a
    Plane, the infinite half-space below it (README, "Known limits"), which stops the second
    cloth at the tile's height."""
    bake = _addon()
    scenes.set_range(1, 30)
    scenes.ground()
    tile = scenes.link(bpy.data.objects.new("Tile", scenes.grid_mesh("Tile", 3, 1.0)))
    tile.location = (3.0, 0.0, 1.0)
    tile.verlet.kind = "COLLIDER"
    tile.verlet.collider_shape = "MESH"
    on = scenes.cloth("On", n=5, size=0.4, location=(3.0, 0.0, 1.3), thickness=0.01)
    beside = scenes.cloth("Beside", n=5, size=0.4, location=(0.0, 0.0, 1.3), thickness=0.01)
    assert scenes.bake_op() == {"FINISHED"}
    z_on = scenes.world(on, bake.load(on)[1][-1])[:, 2]
    z_beside = scenes.world(beside, bake.load(beside)[1][-1])[:, 2]
    assert np.all(np.abs(z_on - 1.01) < 0.01)                          # on the tile
    assert np.all(np.abs(z_beside - 0.01) < 0.01)                      # on the ground


def test_a_soft_suzanne_rests_on_a_default_plane(extension):
    """Blender's Suzanne set to Soft Body, all defaults, dropped on its default Plane (Auto: a
    plane): it rests on it. Its shape goals used to come after the collider contacts, and
    pulled its chin and ears 11 to 15 cm into the plane (on a two-sided mesh collider those
    vertices changed sides and the whole body fell through: tests/solver/test_contact.py)."""
    bake = _addon()
    scenes.set_range(1, 48)
    bpy.ops.mesh.primitive_plane_add(size=20)
    bpy.context.object.verlet.kind = "COLLIDER"
    bpy.ops.mesh.primitive_monkey_add(location=(0.0, 0.0, 1.5))
    monkey = bpy.context.object
    monkey.verlet.kind = "SOFT"
    assert scenes.bake_op() == {"FINISHED"}
    _, frames = bake.load(monkey)
    low = np.array([scenes.world(monkey, f)[:, 2].min() for f in frames])
    assert low.min() > -0.005, low.min()               # never more than 5 mm in, nor through
    assert low[-1] < 0.05                              # down on it


def test_a_collider_in_an_excluded_collection_takes_no_part(extension):
    """A collection unticked in the outliner (excluded from the view layer) takes no part in
    the scene, as in Blender's own physics: its ball no longer catches the cloth, which falls
    to the ground; ticked again, the ball holds it. Disable in Viewports acts as exclusion
    does."""
    bake = _addon()
    c, ball = scenes.drape_scene(n=8, frames=(1, 30))
    props = bpy.data.collections.new("Props")
    bpy.context.scene.collection.children.link(props)
    for coll in list(ball.users_collection):
        coll.objects.unlink(ball)
    props.objects.link(ball)
    layer = bpy.context.view_layer.layer_collection.children["Props"]
    top = {}                                            # [m] the cloth's highest point
    for excluded in (True, False):
        layer.exclude = excluded
        assert scenes.bake_op() == {"FINISHED"}
        top[excluded] = float(scenes.world(c, bake.load(c)[1][-1])[:, 2].max())
    assert top[False] > 0.9                             # draped over the 1 m high ball
    assert top[True] < 0.1                              # flat on the ground
    ball.hide_viewport = True                           # Disable in Viewports: the same
    assert scenes.bake_op() == {"FINISHED"}
    assert float(scenes.world(c, bake.load(c)[1][-1])[:, 2].max()) < 0.1
    ball.hide_viewport = False
    for coll in list(c.users_collection):               # the cloth excluded too: said so
        coll.objects.unlink(c)
    props.objects.link(c)
    layer.exclude = True
    with pytest.raises(RuntimeError, match="Cloth.*excluded from the view layer"):
        scenes.bake_op()
