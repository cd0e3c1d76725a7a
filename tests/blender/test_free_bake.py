"""A baked body whose Kind changes, and what Free Bake then removes: the object shows its own
mesh and transform again, its bake stays until Free Bake, and Free Bake touches only objects
carrying our marks (addon/bake.py, put_back and marked)."""

import os

import numpy as np

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake, bridge, cache
    return bake, bridge, cache


def test_a_baked_body_set_to_none_shows_itself_and_free_bake_still_cleans_it(extension,
                                                                              tmp_path):
    """Kind set to None on a baked cloth and rigid box: each shows its own mesh and transform
    at every frame (both were left showing the bake's last frame, the box's own location
    overwritten), its bake stays (shown again when the Kind comes back), and Free Bake removes
    its cache, display and marks (it went over simulated objects only and left all three)."""
    bake, bridge, cache = _addon()
    plain = scenes.cloth("Plain", n=5, location=(3, 0, 1))
    box = scenes.cube(location=(-3, 0, 0.6))
    scenes.ground()
    before = scenes.user_hashes(plain, box)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "kind.blend"))
    scenes.bake_op()
    path = cache.path_for(plain.verlet.cache_id)
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    assert np.abs(np.array(box.matrix_world)[2, 3] - 0.2) < 0.01       # landed
    plain.verlet.kind = box.verlet.kind = "NONE"
    for f in (scene.frame_start, scene.frame_end):
        scene.frame_set(f)
        np.testing.assert_allclose(scenes.evaluated_positions(plain),
                                   bridge.positions(plain.data), atol=1e-6)
        np.testing.assert_allclose(np.array(box.matrix_world)[:3, 3], (-3, 0, 0.6), atol=1e-6)
    assert os.path.exists(path)                        # the bake stays until Free Bake
    plain.verlet.kind, box.verlet.kind = "CLOTH", "RIGID"
    scene.frame_set(scene.frame_end)                   # shown again
    assert np.abs(np.array(box.matrix_world)[2, 3] - 0.2) < 0.01
    plain.verlet.kind = box.verlet.kind = "NONE"
    assert bpy.ops.verlet.free_bake() == {"FINISHED"}
    assert not os.path.exists(path)
    assert plain.data.shape_keys is None
    for o in (plain, box):
        assert not [k for k in o.keys() if k.startswith("verlet_")], o.keys()
    assert scenes.user_hashes(plain, box) == before


def test_free_bake_keeps_a_colliders_own_shape_key_named_verlet(extension):
    """Free Bake removes our data from objects carrying our marks only: a collider's own shape
    key that happens to be named as ours stays (it was removed, found by review)."""
    scenes.set_range(1, 3)
    bpy.ops.mesh.primitive_plane_add()
    o = bpy.context.object
    o.shape_key_add(name="Basis")
    o.shape_key_add(name="Verlet")
    o.verlet.kind = "COLLIDER"
    scenes.cloth(n=4, location=(0.0, 0.0, 1.0))
    assert scenes.bake_op() == {"FINISHED"}
    assert bpy.ops.verlet.free_bake() == {"FINISHED"}
    assert [k.name for k in o.data.shape_keys.key_blocks] == ["Basis", "Verlet"]


def test_a_played_body_set_to_none_shows_itself(extension):
    """Played without a bake, then set to None: the cloth shows its own mesh at once and at
    every later frame (the live run's last frame stayed on it, and later frames went on being
    written onto it), the live run stops, and the user's data is as it was."""
    bake, bridge, _ = _addon()
    c, _ = scenes.drape_scene(n=6, frames=(1, 12))
    before = scenes.user_hashes(c)
    scene = bpy.context.scene
    for f in range(1, 9):
        scene.frame_set(f)
    assert c.get(bake.LIVE_MARK) and bake.in_live_run(c)
    assert np.abs(scenes.evaluated_positions(c) - bridge.positions(c.data)).max() > 0.05
    c.verlet.kind = "NONE"
    assert bake._live["sim"] is None and bake.LIVE_MARK not in c
    for f in (8, 9, 3):
        scene.frame_set(f)
        np.testing.assert_allclose(scenes.evaluated_positions(c), bridge.positions(c.data),
                                   atol=1e-6)
    assert c.data.shape_keys is None and scenes.user_hashes(c) == before


def test_a_missing_cache_leaves_keyframes_and_moved_bodies_where_they_are(extension, tmp_path):
    """A rigid body whose bake was turned into keyframes, its cache then lost: its keys place
    it at every frame (playback put it back at its start each frame, over the keys), and a
    body with no keys goes back to its start once, then stays where the user puts it."""
    bake, _, _ = _addon()
    box = scenes.rigid_scene(frames=(1, 30))
    loose = scenes.cube("Loose", location=(2.0, 0.0, 0.6))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "keys.blend"))
    scenes.bake_op()
    frames = bake.load(box)[1].copy()
    scene = bpy.context.scene
    box.select_set(True)
    bpy.context.view_layer.objects.active = box
    scene.frame_set(30)
    assert bpy.ops.verlet.bake_to_keyframes() == {"FINISHED"}
    loose.animation_data_clear()                       # its keys deleted: where the bake left it
    for o in (box, loose):
        os.remove(bake.validity.stored_path(o))        # the .blend moved without its caches
    for f in (20, 30, 10):
        scene.frame_set(f)
        assert "Cache missing" in box["verlet_status"]
        np.testing.assert_allclose(np.array(box.matrix_world), frames[f - 1], atol=1e-5)
    assert abs(loose.matrix_world.translation.z - 0.6) < 1e-6    # back at its start, once
    loose.location.x = 5.0
    scene.frame_set(12)
    assert loose.location.x == 5.0
