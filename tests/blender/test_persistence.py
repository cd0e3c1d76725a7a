"""Save and reopen, moving the .blend, bakes made before the file was saved, file loads and undo
(during playback and after a bake): handlers survive, caches are found by their relative path,
nothing stale steps, and the user's data never changes."""

import os
import shutil

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402

# Blender's undo is not initialised in background mode until the first explicit undo_push
# ("Undo disabled at startup in background-mode (call ed.undo_push to explicitly
# initialize)"); after that ed.undo / ed.redo run headless. Each push stands for an edit the
# artist made in the UI.


def _addon():
    from verlet_physics.addon import bake, cache, operators
    return bake, cache, operators


def _no_nan(*objs):
    for o in objs:
        if o.type == "MESH":
            assert np.isfinite(scenes.evaluated_positions(o, world=True)).all(), o.name


def test_save_reopen_moved_blend_handler_survives_cache_by_relative_path(extension, tmp_path):
    bake, cache, operators = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 12))
    before = scenes.user_hashes(c, box)
    src = tmp_path / "project"
    src.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(src / "shot.blend"))
    scenes.bake_op()
    cid = c.verlet.cache_id
    assert len(cid) == 12 and c["verlet_cache"] == f"//verlet_cache/shot/{cid}.vpc"
    assert os.path.isfile(src / "verlet_cache" / "shot" / f"{cid}.vpc")
    fc, fb = bake.load(c)[1].copy(), bake.load(box)[1].copy()
    bpy.ops.wm.save_mainfile()
    dst = tmp_path / "elsewhere"                # the whole project folder moves
    shutil.copytree(src, dst)
    shutil.rmtree(src)
    bpy.ops.wm.open_mainfile(filepath=str(dst / "shot.blend"))
    assert operators._frame_change in bpy.app.handlers.frame_change_post
    assert sum(h is operators._frame_change for h in bpy.app.handlers.frame_change_post) == 1
    scene = bpy.context.scene
    c, box = bpy.data.objects["Cloth"], bpy.data.objects["Cube"]
    for f in (9, 3, 12):
        scene.frame_set(f)
        np.testing.assert_array_equal(scenes.display_key(c), fc[f - 1])
        np.testing.assert_allclose(np.array(box.matrix_world), fb[f - 1], atol=1e-6)
    assert "Baked 1-12" in c["verlet_status"]
    bpy.ops.verlet.free_bake()                  # live playback after reopening: same frames
    assert not os.path.exists(dst / "verlet_cache")
    live = []
    for f in range(1, 13):
        scene.frame_set(f)
        live.append(scenes.display_key(c).copy())
    np.testing.assert_array_equal(np.stack(live), fc)
    assert scenes.user_hashes(c, box) == before


def test_save_as_into_another_folder_keeps_finding_the_cache(extension, tmp_path):
    """Save As elsewhere: the objects' cache paths are made relative to the new .blend (they
    pointed beside it, where no cache is: the bake read as missing). Save Copy leaves this
    session's paths as they were, and the copy finds the cache too."""
    bake, cache, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    (tmp_path / "project").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "project" / "shot.blend"))
    scenes.bake_op()
    cid, fc = c.verlet.cache_id, bake.load(c)[1].copy()
    (tmp_path / "copies").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "copies" / "backup.blend"), copy=True)
    assert c["verlet_cache"] == f"//verlet_cache/shot/{cid}.vpc"
    (tmp_path / "takes" / "two").mkdir(parents=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "takes" / "two" / "take2.blend"))
    assert c["verlet_cache"] == f"//../../project/verlet_cache/shot/{cid}.vpc"
    for blend in (None, tmp_path / "takes" / "two" / "take2.blend",
                  tmp_path / "copies" / "backup.blend"):
        if blend is not None:
            bpy.ops.wm.open_mainfile(filepath=str(blend))
        c = bpy.data.objects["Cloth"]
        bpy.context.scene.frame_set(7)
        assert c["verlet_status"].startswith("Baked 1-10"), (blend, c["verlet_status"])
        np.testing.assert_array_equal(scenes.display_key(c), fc[6])


def test_unsaved_bake_is_kept_in_memory_and_written_when_saved(extension, tmp_path):
    bake, cache, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.bake_op()
    cid = c.verlet.cache_id
    assert cache.in_memory(cid) and c["verlet_cache"] == ""
    assert "in memory" in c["verlet_status"]
    assert not os.listdir(tmp_path)
    fr = bake.load(c)[1].copy()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "later.blend"))
    assert os.path.isfile(tmp_path / "verlet_cache" / "later" / f"{cid}.vpc")
    assert c["verlet_cache"] == f"//verlet_cache/later/{cid}.vpc"
    assert "on disk" in c["verlet_status"] and not cache.in_memory(cid)
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "later.blend"))
    c = bpy.data.objects["Cloth"]
    bpy.context.scene.frame_set(6)
    np.testing.assert_array_equal(scenes.display_key(c), fr[5])


def test_loading_a_file_drops_the_live_run(extension, tmp_path):
    bake, _, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 12))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "live.blend"))
    scene = bpy.context.scene
    for f in range(1, 6):
        scene.frame_set(f)
    assert bake._live["last"] == 5
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "live.blend"))   # same scene name
    assert bake._live["sim"] is None
    scene = bpy.context.scene
    scene.frame_set(6)                          # not last + 1 of anything: nothing steps
    assert bake._live["sim"] is None and scene.get("verlet_error", "") == ""
    scene.frame_set(1)
    scene.frame_set(2)
    assert bake._live["last"] == 2
    _no_nan(bpy.data.objects["Cloth"])


def test_undo_during_live_playback(extension):
    bake, _, _ = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 12))
    before = scenes.user_hashes(c, box)
    scene = bpy.context.scene
    bpy.ops.ed.undo_push(message="scene built")
    for f in range(1, 7):
        scene.frame_set(f)
    bpy.ops.ed.undo_push(message="an edit at frame 6")
    assert bpy.ops.ed.undo() == {"FINISHED"}
    c, box = bpy.data.objects["Cloth"], bpy.data.objects["Cube"]
    assert bake._live["sim"] is None           # the run referred to data undo replaced
    _no_nan(c, box)
    scene = bpy.context.scene
    scene.frame_set(7)                          # the old run's last + 1: no stale stepping
    assert bake._live["sim"] is None and scene.get("verlet_error", "") == ""
    live = []
    for f in range(1, 13):                      # from the start: a clean run ...
        scene.frame_set(f)
        live.append(scenes.display_key(c).copy())
    assert scene.get("verlet_error", "") == ""
    scenes.bake_op()                            # ... equal to the bake
    np.testing.assert_array_equal(np.stack(live), bake.load(c)[1])
    assert scenes.user_hashes(c, box) == before


def test_undo_and_redo_after_a_bake(extension):
    bake, cache, _ = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 12))
    before = scenes.user_hashes(c, box)
    scene = bpy.context.scene
    bpy.ops.ed.undo_push(message="scene built")
    scenes.bake_op()
    bpy.ops.ed.undo_push(message="an edit after the bake")
    fc = bake.load(c)[1].copy()
    assert bpy.ops.ed.undo() == {"FINISHED"}    # back to before the bake: not baked
    c, box = bpy.data.objects["Cloth"], bpy.data.objects["Cube"]
    assert not c.get("verlet_baked") and scenes.user_hashes(c, box) == before
    _no_nan(c, box)
    scene = bpy.context.scene                   # undo replaced the Scene too
    for f in range(1, 6):                       # live playback takes over, equal to the bake
        scene.frame_set(f)
        np.testing.assert_array_equal(scenes.display_key(c), fc[f - 1])
    assert bpy.ops.ed.redo() == {"FINISHED"}    # the bake is back, from its cache
    c, box = bpy.data.objects["Cloth"], bpy.data.objects["Cube"]
    assert c.get("verlet_baked")
    for f in (10, 4):
        bpy.context.scene.frame_set(f)
        np.testing.assert_array_equal(scenes.display_key(c), fc[f - 1])
    assert scenes.user_hashes(c, box) == before


def test_undo_of_free_bake_reports_the_deleted_cache(extension, tmp_path):
    """Free Bake deletes files, which undo cannot bring back: the object then says so, by name,
    and nothing else happens (no stepping over a claimed bake, no NaN)."""
    bake, cache, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "free.blend"))
    scenes.bake_op()
    path = cache.path_for(c.verlet.cache_id)
    bpy.ops.ed.undo_push(message="baked")
    bpy.ops.verlet.free_bake()
    bpy.ops.ed.undo_push(message="freed")
    assert not os.path.exists(path)
    assert bpy.ops.ed.undo() == {"FINISHED"}
    c = bpy.data.objects["Cloth"]
    assert c.get("verlet_baked")
    bpy.context.scene.frame_set(5)
    assert "missing" in c["verlet_status"] and "Cloth" in c["verlet_status"]
    assert bake._live["sim"] is None
    _no_nan(c)


def test_save_copy_and_failed_save_as_leave_the_open_file_as_it_was(extension, tmp_path):
    """What a save writes for the file being saved is put back when this session is not in
    that file afterwards: a Save Copy of a never-saved file keeps the bake in memory here
    (it read as missing), a Save As that fails keeps the cache paths (they pointed at a folder
    never written), and a Save Copy after Shift+D leaves the original's cache alone (the copy
    was given the original's path back, and the next bake deleted that file)."""
    bake, cache, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.bake_op()                                    # unsaved: in memory
    fc = bake.load(c)[1].copy()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "copy.blend"), copy=True)
    assert bpy.data.filepath == "" and cache.in_memory(c.verlet.cache_id)
    bpy.context.scene.frame_set(5)
    assert "in memory" in c["verlet_status"], c["verlet_status"]
    np.testing.assert_array_equal(scenes.display_key(c), fc[4])
    (tmp_path / "project").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "project" / "shot.blend"))
    assert not cache.in_memory(c.verlet.cache_id)
    rel = c["verlet_cache"]
    (tmp_path / "blocker").write_text("a file where a folder must go")
    with pytest.raises(RuntimeError):
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "blocker" / "sub" / "x.blend"))
    assert c["verlet_cache"] == rel
    bpy.context.scene.frame_set(6)
    assert c["verlet_status"].startswith("Baked 1-10"), c["verlet_status"]
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    c.select_set(True)
    bpy.context.view_layer.objects.active = c
    bpy.ops.object.duplicate()
    twin = bpy.context.object
    (tmp_path / "backup").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "backup" / "b.blend"), copy=True)
    original = cache.path_for(c.verlet.cache_id)
    twin.location.x += 3.0
    scenes.bake_op()
    assert os.path.isfile(original) and twin.verlet.cache_id != c.verlet.cache_id
    bpy.context.scene.frame_set(5)
    assert c["verlet_status"].startswith("Baked 1-10"), c["verlet_status"]
