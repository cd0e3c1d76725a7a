"""The user's own shape keys beside ours: whatever they are set to (a key at a value, the Shape
Key Lock pin, absolute keys), the mesh shows exactly the bake, in playback, after Bake to Shape
Keys and through Alembic; and their data, values and active key stay as the user left them."""

import numpy as np

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402

TOL = 1e-5          # [m] float32 keys and Blender's own mixing


def _load(obj):
    from verlet_physics.addon import bake
    return bake.load(obj)[1].copy()


def _shows_the_bake(obj, frames, at=(1, 6, 10)):
    scene = bpy.context.scene
    for f in at:
        scene.frame_set(f)
        err = np.abs(scenes.evaluated_positions(obj) - frames[f - 1]).max()
        assert err <= TOL, (f, err)


def _user_cloth(value):
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.add_user_data(c)
    c.data.shape_keys.key_blocks["UserKey"].value = value
    return c


def test_bake_to_shape_keys_shows_the_bake_under_a_user_key_at_half(extension):
    """The per-frame keys are written net of the user's key at 0.5 (as our display key is): the
    mix shows the bake, not the bake lifted by half the user's offset."""
    c = _user_cloth(0.5)
    before = scenes.user_hashes(c)
    scenes.bake_op()
    frames = _load(c)
    _shows_the_bake(c, frames)                          # playback
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}
    _shows_the_bake(c, frames)                          # the keyed shape keys
    assert scenes.user_hashes(c) == before
    assert np.abs(frames[-1] - frames[0]).max() > 0.1   # it moved: the check means something


def test_export_alembic_after_bake_to_shape_keys_writes_the_bake(extension, tmp_path):
    c = _user_cloth(0.5)
    scenes.bake_op()
    frames = _load(c)
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}
    path = tmp_path / "keys.abc"
    assert bpy.ops.verlet.export_alembic(filepath=str(path)) == {"FINISHED"}
    names = set(bpy.data.objects.keys())
    assert bpy.ops.wm.alembic_import(filepath=str(path), as_background_job=False) == {"FINISHED"}
    (imported,) = [bpy.data.objects[n] for n in set(bpy.data.objects.keys()) - names]
    scene, errs = bpy.context.scene, []
    for f in (1, 5, 10):
        scene.frame_set(f)
        errs.append(np.abs(scenes.evaluated_positions(imported, world=True)
                           - scenes.world(c, frames[f - 1])).max())
    assert max(errs) <= TOL, errs


def test_shape_key_lock_on_a_user_key_still_shows_the_bake(extension):
    """With the pin (Shape Key Lock) on the user's key, Blender shows that key alone, so a
    display key of ours would never show: the bake shows through our attribute and modifier
    instead. Free Bake leaves the user's key active and pinned."""
    c = _user_cloth(1.0)
    c.show_only_shape_key = True
    c.active_shape_key_index = 1                        # UserKey
    before = scenes.user_hashes(c)
    scenes.bake_op()
    _shows_the_bake(c, _load(c))
    assert bpy.ops.verlet.free_bake() == {"FINISHED"}
    assert c.active_shape_key.name == "UserKey" and c.show_only_shape_key
    assert [m.name for m in c.modifiers] == [] and scenes.user_hashes(c) == before


def test_absolute_user_keys_are_left_alone_and_the_bake_shows(extension):
    """Absolute keys (Relative off) are played by their Evaluation Time: a key of ours among
    them would change the user's animation, so the bake shows through the attribute path."""
    c = _user_cloth(0.0)
    keys = c.data.shape_keys
    keys.use_relative = False
    keys.eval_time = 0.0                                # the Basis: the rest shape
    before = scenes.user_hashes(c)
    scenes.bake_op()
    _shows_the_bake(c, _load(c))
    assert [k.name for k in keys.key_blocks] == ["Basis", "UserKey"]
    assert scenes.user_hashes(c) == before


def test_free_bake_keeps_the_active_user_key(extension):
    c = _user_cloth(0.0)
    c.active_shape_key_index = 1
    scenes.bake_op()
    bpy.context.scene.frame_set(5)
    assert bpy.ops.verlet.free_bake() == {"FINISHED"}
    assert c.active_shape_key.name == "UserKey"


def test_bake_to_shape_keys_follows_an_animated_user_key(extension):
    """A user key keyed from 0 to 1 over the range: each frame's key is net of its value at
    that frame (taken at the current frame alone, the mix was 4 cm off at frame 5 and 10 cm
    at frame 10)."""
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.add_user_data(c)
    key = c.data.shape_keys.key_blocks["UserKey"]      # lifts the mesh 5 cm at 1
    for f, v in ((1, 0.0), (10, 1.0)):
        key.value = v
        key.keyframe_insert("value", frame=f)
    bpy.context.scene.frame_set(1)
    scenes.bake_op()
    frames = _load(c)
    _shows_the_bake(c, frames, at=(1, 5, 10))
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}
    _shows_the_bake(c, frames, at=(1, 5, 10))


def test_deleting_the_per_frame_keys_shows_the_bake_again(extension):
    """Bake to Shape Keys mutes our display key while its keys play; with those keys deleted
    by hand, playback shows the bake through our key again (it stayed muted: nothing moved)."""
    c = _user_cloth(0.5)
    scenes.bake_op()
    frames = _load(c)
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}
    for kb in [k for k in c.data.shape_keys.key_blocks if k.name.startswith("Verlet ")]:
        c.shape_key_remove(kb)
    _shows_the_bake(c, frames)
