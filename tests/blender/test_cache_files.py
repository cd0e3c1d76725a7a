"""Cache files as an artist's file meets them: every object's cache is its own (names that a
file name cannot tell apart, renames, duplicates, old name-based caches), playback reads one
frame by seek and checks the mesh only when it changes, and edits after a bake are flagged."""

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import bmesh  # noqa: E402
import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake, bridge, cache
    return bake, bridge, cache


def _files(tmp_path, blend):
    d = tmp_path / "verlet_cache" / blend
    return sorted(p.name for p in d.glob("*")) if d.is_dir() else []


NAMES = ("Cloth A", "Cloth_A", "Ткань", "Сукно")


def test_names_a_file_name_cannot_tell_apart_get_their_own_caches(extension, tmp_path):
    bake, _, cache = _addon()
    scenes.set_range(1, 8)
    scenes.ground()
    objs = [scenes.cloth(name, n=5 + i, size=1.0, location=(3.0 * i, 0.0, 1.0 + 0.2 * i))
            for i, name in enumerate(NAMES)]
    rest = {o.name: scenes.evaluated_positions(o) for o in objs}
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "Сцена.blend"))
    assert scenes.bake_op() == {"FINISHED"}
    assert len(_files(tmp_path, "Сцена")) == 4
    fr = {}
    for o in objs:
        header, frames = bake.load(o)
        assert header["object"] == o.name and frames.shape[1] == len(o.data.vertices)
        np.testing.assert_array_equal(frames[0], rest[o.name].astype(np.float32))
        fr[o.name] = frames.copy()
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "Сцена.blend"))
    bpy.context.scene.frame_set(6)
    for name in NAMES:                          # after reopening, each plays its own
        np.testing.assert_array_equal(scenes.display_key(bpy.data.objects[name]), fr[name][5])
        assert bpy.data.objects[name]["verlet_status"] == "Baked 1-8, on disk"


def test_blend_names_never_share_a_cache_folder(extension):
    _, _, cache = _addon()
    names = ["shot A", "shot_A", "shot?A", "shot%3FA", "Ткань", "Сукно", "a/b", "a_b", ".", ""]
    folders = [cache.folder_name(n) for n in names]
    assert len(set(folders)) == len(names)
    assert cache.folder_name("Ткань") == "Ткань" and cache.folder_name("shot A") == "shot A"
    assert not any(set(f) & set('<>:"/\\|?*') for f in folders)


def test_rename_keeps_the_cache_and_free_bake_deletes_it(extension, tmp_path):
    bake, _, cache = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "rename.blend"))
    scenes.bake_op()
    fr = bake.load(c)[1].copy()
    path = cache.path_for(c.verlet.cache_id)
    c.name = "Renamed"
    scene = bpy.context.scene
    scene.frame_set(7)                          # still its bake, up to date
    np.testing.assert_array_equal(scenes.display_key(c), fr[6])
    assert c["verlet_status"] == "Baked 1-10, on disk" and "verlet_outdated" not in c
    scenes.cloth("Cloth", n=4, location=(3.0, 0.0, 1.0))     # a new object under the old name
    bpy.ops.verlet.free_bake()
    assert not os.path.exists(path)
    assert not (tmp_path / "verlet_cache").exists()         # nothing left behind


def _duplicate(obj):
    """What Shift+D makes: a copy of the object and its mesh, every property included."""
    copy = obj.copy()
    copy.data = obj.data.copy()
    bpy.context.scene.collection.objects.link(copy)
    return copy


def test_a_duplicate_gets_its_own_id_and_never_touches_the_originals_cache(extension, tmp_path):
    bake, _, cache = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    box = scenes.cube(location=(3.0, 0.0, 0.6))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "dup.blend"))
    scenes.bake_op()
    fb = bake.load(box)[1].copy()
    path = cache.path_for(c.verlet.cache_id)
    copy = _duplicate(c)
    box_copy = _duplicate(box)
    box_copy.location.x = -3.0
    assert copy.verlet.cache_id == c.verlet.cache_id            # Blender copied the id
    scene = bpy.context.scene
    scene.frame_set(5)
    assert copy.verlet.cache_id != c.verlet.cache_id and len(copy.verlet.cache_id) == 12
    assert not copy.get("verlet_baked") and "copy of 'Cloth'" in copy["verlet_status"]
    assert c.get("verlet_baked") and c["verlet_status"].startswith("Baked 1-10")
    # the rigid copy stays where it was put, not on its original's cached path
    assert np.array(box_copy.matrix_world)[0, 3] == pytest.approx(-3.0)
    np.testing.assert_allclose(np.array(box.matrix_world), fb[4], atol=1e-6)
    copy.name = "Aaa"                           # sorts first: still not taken for the original
    scene.frame_set(6)
    assert c.get("verlet_baked") and not copy.get("verlet_baked")
    scenes.bake_op()                            # every object its own file
    assert len(_files(tmp_path, "dup")) == 4 and os.path.exists(path)
    copy.select_set(True)
    bpy.ops.verlet.free_bake()
    assert not (tmp_path / "verlet_cache").exists()


def test_cache_of_the_name_based_version_plays_and_is_replaced(extension, tmp_path):
    """A .blend baked by 0.1.0 stored <object>.vpc without a cache id: it still plays (its
    header names the object), a re-bake replaces it by the id-named file, and a file written
    for another object (two names that collided) is refused by name."""
    import json
    import struct
    bake, _, cache = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "old.blend"))
    scenes.bake_op()
    fr = bake.load(c)[1].copy()
    new = cache.path_for(c.verlet.cache_id)
    blob = open(new, "rb").read()
    n = struct.unpack("<I", blob[8:12])[0]
    header = json.loads(blob[12:12 + n])
    del header["object_id"]
    h = json.dumps(header).encode()
    legacy = os.path.join(os.path.dirname(new), "Cloth.vpc")
    with open(legacy, "wb") as fh:
        fh.write(blob[:8] + struct.pack("<I", len(h)) + h + blob[12 + n:])
    os.remove(new)
    c.verlet.cache_id = ""
    c["verlet_cache"] = "//verlet_cache/old/Cloth.vpc"
    scene = bpy.context.scene
    scene.frame_set(4)
    np.testing.assert_array_equal(scenes.display_key(c), fr[3])
    assert c["verlet_status"] == "Baked 1-10, on disk"
    c.name = "Other"                            # whose file it is, only its header says
    scene.frame_set(5)
    assert "written for 'Cloth'" in c["verlet_status"]
    assert scenes.display_key(c) is None        # not shown: the object's own mesh is
    scenes.bake_op()
    assert _files(tmp_path, "old") == [c.verlet.cache_id + ".vpc"]


def test_playback_reads_one_frame_and_checks_the_mesh_once(extension, tmp_path, monkeypatch):
    bake, bridge, cache = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 40))
    scenes.add_user_data(c)
    kb = c.data.shape_keys.key_blocks["UserKey"]
    kb.value, kb.vertex_group = 0.5, "Pins"     # a user key restricted to a vertex group
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "seek.blend"))
    scenes.bake_op()
    header, fr = bake.load(c)
    fr = fr.copy()
    path = cache.path_for(c.verlet.cache_id)    # 12 bytes per vertex per frame, exact
    assert os.path.getsize(path) - fr.nbytes == 12 + struct_len(path)
    assert fr.nbytes == 12 * 64 * 40
    reads, hashes, weights = [], [], []
    real_read, real_hash, real_weights = (cache.FrameReader._read, bridge.topology_hash,
                                          bridge.group_weights)
    monkeypatch.setattr(cache.FrameReader, "_read",
                        lambda self, i, j: reads.append(j - i) or real_read(self, i, j))
    monkeypatch.setattr(bridge, "topology_hash",
                        lambda *a: hashes.append(1) or real_hash(*a))
    monkeypatch.setattr(bridge, "group_weights",
                        lambda *a: weights.append(1) or real_weights(*a))
    scene = bpy.context.scene
    for f in (30, 3, 17, 40, 1, 22):
        scene.frame_set(f)
        np.testing.assert_allclose(scenes.evaluated_positions(c), fr[f - 1], atol=1e-5)
    scene.frame_set(9, subframe=0.5)
    assert reads == [1] * 6 + [1, 1]            # one frame each (two for a subframe)
    assert len(hashes) <= 1 and len(weights) <= 1
    bm = bmesh.new()                            # a topology edit is still caught
    bm.from_mesh(c.data)
    bm.faces.ensure_lookup_table()
    bm.faces.remove(bm.faces[0])
    bm.to_mesh(c.data)
    bm.free()
    scene.frame_set(12)
    assert "topology" in c["verlet_status"] and c["verlet_outdated"] == "unusable"


def struct_len(path):
    with open(path, "rb") as fh:
        fh.seek(8)
        return int.from_bytes(fh.read(4), "little")


@pytest.mark.parametrize("edit", ["mass", "substeps", "gravity", "new_body"])
def test_edits_after_a_bake_flag_it_outdated_until_baked_again(extension, tmp_path, edit):
    bake, _, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "stale.blend"))
    scenes.bake_op()
    fr = bake.load(c)[1].copy()
    scene = bpy.context.scene
    scene.frame_set(3)
    assert c["verlet_status"] == "Baked 1-10, on disk" and "verlet_outdated" not in c
    if edit == "mass":
        c.verlet.mass = 3.0
    elif edit == "substeps":
        scene.verlet.substeps = 20
    elif edit == "gravity":
        scene.gravity = (0.0, 0.0, -3.0)
    else:
        scenes.cloth("Late", n=4, location=(3.0, 0.0, 1.0))
    scene.frame_set(4)
    assert "outdated" in c["verlet_status"] and "settings changed" in c["verlet_status"]
    assert c["verlet_status"].startswith("Baked 1-10, on disk")
    assert c["verlet_outdated"] == "settings"
    np.testing.assert_array_equal(scenes.display_key(c), fr[3])    # the old bake still plays
    assert scenes.bake_op() == {"FINISHED"}     # Bake again: current, no Free Bake needed
    assert c["verlet_status"] == "Baked 1-10, on disk" and "verlet_outdated" not in c
    scene.frame_set(5)
    assert "verlet_outdated" not in c


def test_topology_change_then_bake_again_without_free(extension):
    bake, _, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 8))
    scenes.bake_op()
    bm = bmesh.new()
    bm.from_mesh(c.data)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:4], cuts=1)
    bm.to_mesh(c.data)
    bm.free()
    bpy.context.scene.frame_set(3)
    assert "topology" in c["verlet_status"] and "Bake" in c["verlet_status"]
    assert scenes.bake_op() == {"FINISHED"}
    header, fr = bake.load(c)
    assert header["vertex_count"] == len(c.data.vertices) > 64
    assert c["verlet_status"].startswith("Baked 1-8") and "verlet_outdated" not in c
