"""Contact between simulated bodies in Blender (solver/collision/bodies.py): a tablecloth on a
Rigid crate ends on top of it, four default cubes set to Rigid stack, cloth Self Collisions,
and the clear errors of its bad input."""

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()
import bmesh  # noqa: E402

import scenes  # noqa: E402  (tests/blender, shared scene builders)


def _addon():
    from verlet_physics.addon import bake
    return bake


def test_tablecloth_on_a_rigid_crate_ends_on_top_not_inside(extension):
    bake = _addon()
    scenes.set_range(1, 36, substeps=20)
    scenes.ground()
    crate = scenes.cube("Crate", size=0.6, location=(0.0, 0.0, 0.3))
    cloth = scenes.cloth("Tablecloth", n=14, size=1.2, location=(0.0, 0.0, 0.75),
                         thickness=0.01)
    scenes.bake_op()
    _, m = bake.load(crate)
    _, x = bake.load(cloth)
    top = m[-1, 2, 3] + 0.3                              # the crate's top face
    assert top == pytest.approx(0.6, abs=0.01)           # the crate rests on the ground
    last = scenes.world(cloth, x[-1])                   # the cache holds object space
    over = (np.abs(last[:, 0] - m[-1, 0, 3]) < 0.28) & (np.abs(last[:, 1] - m[-1, 1, 3]) < 0.28)
    assert over.sum() > 20
    # on top: every cloth vertex over the crate lies above its top face (cloth + its own
    # thickness: 2 x 0.01 m), none inside it
    assert last[over, 2].min() > top + 0.01
    assert last[over, 2].max() < top + 0.05


def test_four_default_cubes_set_to_rigid_stack(extension):
    bake = _addon()
    scenes.set_range(1, 48, substeps=40)
    scenes.ground()
    cubes = [scenes.cube(f"Cube{i}", size=2.0, location=(0.0, 0.0, 1.0 + 2.05 * i))
             for i in range(4)]
    scenes.bake_op()
    for i, c in enumerate(cubes):
        _, m = bake.load(c)
        assert m[-1, 2, 3] == pytest.approx(1.0 + 2.0 * i, abs=0.005), c.name
        assert np.abs(m[-1, :2, 3]).max() < 0.01
        np.testing.assert_allclose(m[-1, :3, :3], np.eye(3), atol=0.02)   # flat, upright


def test_contact_iterations_reach_the_solver_and_the_bake_hash(extension):
    """The scene's Contact Iterations is handed to the Simulation; it enters the settings hash
    only when it differs from its default, so bakes made before the setting existed stay valid."""
    from verlet_physics.addon import simscene, validity
    scenes.set_range(1, 4)
    scenes.ground()
    scenes.cube("Crate", size=0.5, location=(0.0, 0.0, 0.3))
    scene = bpy.context.scene
    assert scene.verlet.contact_iterations == 1
    default = validity.settings_hash(scene)
    scene.verlet.contact_iterations = 2
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    assert ss.sim.contact_iterations == 2
    assert validity.settings_hash(scene) != default
    scene.verlet.contact_iterations = 1
    assert validity.settings_hash(scene) == default


def test_a_bodys_restitution_outdates_bakes_made_before_it_acted(extension):
    """A simulated body's Restitution bounces it since 2026-11-27 (it was read for colliders
    only), so a body whose Restitution is above 0 enters the settings hash with a mark that no
    earlier bake has: those bakes, which did not bounce, read outdated. At 0 (the default) the
    entry is the one of before, so those bakes stay valid; a collider's is unchanged."""
    scenes.set_range(1, 4)
    floor = scenes.ground()
    crate = scenes.cube("Crate", size=0.5, location=(0.0, 0.0, 0.3))
    scene = bpy.context.scene

    def entries():
        return scenes.hashed(scene)["objects"]
    floor.verlet.restitution = 0.5
    assert not any("restitution_acts" in e for e in entries())
    crate.verlet.restitution = 0.4
    marked = [e for e in entries() if "restitution_acts" in e]
    assert len(marked) == 1 and marked[0]["kind"] == "RIGID"
    crate.verlet.restitution = 0.0
    assert not any("restitution_acts" in e for e in entries())
    crate.verlet.kind = "RAGDOLL"            # (a mesh ragdoll is refused later; its hash entry)
    crate.verlet.restitution = 0.4           # a ragdoll takes none: no mark
    assert not any("restitution_acts" in e for e in entries())


def test_different_frictions_meeting_outdate_bakes_made_before_they_combined(extension):
    """Since 2026-11-27 a body's Friction counts at colliders and two bodies' combine by their
    geometric mean (before: a collider's alone, and the mean). Where every friction that meets
    is the same the results are the same to the bit, and the settings hash is the one of
    before; where different values meet (or one is keyed) the hash takes a mark that no earlier
    bake has, so those bakes read outdated. A frictionless collider stays frictionless whatever
    the body's, so it is left out."""
    scenes.set_range(1, 4)
    floor = scenes.ground()
    crate = scenes.cube("Crate", size=0.5, location=(0.0, 0.0, 0.3))
    scene = bpy.context.scene

    def marked():
        return "friction_mixed" in scenes.hashed(scene)
    assert floor.verlet.friction == crate.verlet.friction == 0.5
    assert not marked()
    crate.verlet.friction = 0.2
    assert marked()
    floor.verlet.friction = 0.0              # frictionless: stays so, nothing meets
    assert not marked()
    floor.verlet.friction = 0.2
    assert not marked()
    crate.keyframe_insert("verlet.friction", frame=1)
    assert marked()
    floor.keyframe_insert("verlet.friction", frame=1)    # two keyed values may differ
    assert marked()


def test_a_towel_hangs_on_a_rail_thinner_than_its_edges(extension):
    """A Blender cylinder 1 cm in radius, 2 m long (Auto infers a cylinder), under a towel of
    12 x 12 vertices 1 m square (edges 9 cm): the towel's edges meet the rail
    (solver/collision/edges.py), so it hangs over it, both halves down, its top on the rail.
    Before, it fell between two vertex rows through the rail to the ground."""
    bake = _addon()
    scenes.set_range(1, 30)
    scenes.ground(z=-1.0)
    rail = scenes._bmesh_object("Rail", lambda bm: bmesh.ops.create_cone(
        bm, cap_ends=True, segments=16, radius1=0.01, radius2=0.01, depth=2.0),
        (0.0, 0.0, 0.0), "COLLIDER", rotation=(1.5707963267948966, 0.0, 0.0))
    towel = scenes.cloth("Towel", n=12, size=1.0, location=(0.0, 0.0, 0.2))
    scenes.bake_op()
    assert "edge_contacts" in scenes.hashed(bpy.context.scene)
    _, x = bake.load(towel)
    last = scenes.world(towel, x[-1])
    assert rail.verlet.collider_shape == "AUTO"
    assert 0.0 < last[:, 2].max() < 0.03, last[:, 2].max()
    assert last[:, 2].min() > -0.6, last[:, 2].min()
    assert (last[:, 0] < -0.05).sum() > 30 and (last[:, 0] > 0.05).sum() > 30


def test_edges_meeting_primitives_outdate_bakes_made_before_they_met(extension):
    """Since 2026-11-27 cloth and plant edges meet the colliders that are spheres, boxes,
    cylinders or capsules (Auto inferred as the bake infers it): where both are in the scene,
    the settings hash takes a mark no earlier bake has (those bakes read outdated); a plane or a
    mesh collider, or no cloth, leave the hash as it was."""
    scenes.set_range(1, 4)
    scenes.ground()
    cloth = scenes.cloth()
    scene = bpy.context.scene

    def marked():
        return "edge_contacts" in scenes.hashed(scene)
    assert not marked()                      # a plane only
    ball = scenes.sphere()
    assert marked()
    # the second form of the mark: the first edges' bakes (a cloth held by a rail alone never
    # slept) read outdated too
    assert scenes.hashed(scene)["edge_contacts"] == 2
    ball.verlet.collider_shape = "MESH"
    assert not marked()
    ball.verlet.collider_shape = "CAPSULE"
    assert marked()
    cloth.verlet.kind = "RIGID"              # nothing with edges
    assert not marked()


def test_cloth_self_collision_property_and_errors(extension):
    scenes.set_range(1, 4)
    scenes.ground()
    cloth = scenes.cloth("Flag", n=6, location=(0.0, 0.0, 0.5))
    assert cloth.verlet.self_collision is False
    cloth.verlet.self_collision = True
    with pytest.raises(RuntimeError, match="Flag.*Thickness"):
        scenes.bake_op()
    cloth.verlet.thickness = 0.01
    me = cloth.data
    me.vertices.add(1)                                   # a loose vertex
    me.update()
    with pytest.raises(RuntimeError, match="Flag.*no face.*Self Collisions"):
        scenes.bake_op()
