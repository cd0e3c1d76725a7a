"""Outputs from one cache, and their round trips: PC2 through Blender's Mesh Cache modifier
(1e-6, no add-on needed), Alembic through Blender's own importer (1e-5 at every frame and
subframe, animated, rigid bodies as transforms), shape keys and rigid keyframes. And the frame
handler only reads while Blender drives frames itself (exporters, renders)."""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake, operators
    return bake, operators


def _world_cache(obj, frames):
    """(f, n, 3) world positions of an object's cached object-space frames."""
    return np.stack([scenes.world(obj, x) for x in frames])


def test_pc2_plays_through_mesh_cache_without_the_addon(extension, tmp_path):
    bake, _ = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(5, 16))   # a start other than 1: frame N = sample N
    scenes.add_user_data(c)
    before = scenes.user_hashes(c, box)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "pc2.blend"))
    scenes.bake_op()
    fr = bake.load(c)[1].copy()
    out = tmp_path / "pc2"
    out.mkdir()
    assert bpy.ops.verlet.export_pc2(directory=str(out)) == {"FINISHED"}
    assert sorted(os.listdir(out)) == ["Cloth.pc2"]     # deforming bodies only, no temp files
    blob = (out / "Cloth.pc2").read_bytes()
    assert blob[:12] == b"POINTCACHE2\0"
    version, points, start, rate, samples = struct.unpack("<iifFi".replace("F", "f"), blob[12:32])
    assert (version, points, start, rate, samples) == (1, 64, 5.0, 1.0, 12)
    np.testing.assert_array_equal(np.frombuffer(blob[32:], "<f4").reshape(12, 64, 3), fr)
    mod = c.modifiers["Verlet PC2"]
    assert (mod.type, mod.cache_format, mod.deform_mode) == ("MESH_CACHE", "PC2", "OVERWRITE")
    assert mod.filepath.startswith("//")                # relative: the project can move
    assert scenes.user_hashes(c, box) == before
    bpy.ops.verlet.free_bake()                          # our cache and display key gone ...
    assert scenes.display_key(c) is None
    bpy.ops.wm.save_mainfile()
    np.save(tmp_path / "expect.npy", fr)
    # ... and a Blender without the add-on plays the file: a fresh bpy, nothing registered
    code = f"""
import json, sys, numpy as np, bpy
bpy.ops.wm.open_mainfile(filepath={str(tmp_path / 'pc2.blend')!r})
assert not hasattr(bpy.types.Object, "verlet")
fr = np.load({str(tmp_path / 'expect.npy')!r})
c = bpy.data.objects["Cloth"]
err = {{}}
for f in range(3, 19):
    bpy.context.scene.frame_set(f)
    ev = c.evaluated_get(bpy.context.evaluated_depsgraph_get())
    x = np.array([v.co for v in ev.data.vertices])
    err[f] = float(np.abs(x - fr[min(max(f, 5), 16) - 5]).max())
print("RESULT", json.dumps(err))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT")]
    assert run.returncode == 0 and line, run.stderr[-2000:]
    err = {int(k): v for k, v in json.loads(line[0][7:]).items()}
    assert max(err.values()) <= 1e-6, err               # frames 5..16, held outside


def test_alembic_round_trip_every_frame_animated_rigid_as_transform(extension, tmp_path):
    bake, _ = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 14))   # a tilted cube: real rotations
    before = scenes.user_hashes(c, box)
    scenes.bake_op()
    fc, fb = bake.load(c)[1].copy(), bake.load(box)[1].copy()
    scene = bpy.context.scene
    scene.frame_set(7)
    path = tmp_path / "out" / "shot.abc"
    assert bpy.ops.verlet.export_alembic(filepath=str(path)) == {"FINISHED"}
    assert sorted(os.listdir(path.parent)) == ["shot.abc"]   # renamed from its temporary name
    assert scene.frame_current == 7 and len(box.constraints) == 0
    assert scenes.user_hashes(c, box) == before
    names = set(bpy.data.objects.keys())
    assert bpy.ops.wm.alembic_import(filepath=str(path), as_background_job=False) == {"FINISHED"}
    new = {n.split(".")[0]: bpy.data.objects[n] for n in set(bpy.data.objects.keys()) - names}
    ic, ib = new["Cloth"], new["Cube"]
    assert [m.type for m in ic.modifiers] == ["MESH_SEQUENCE_CACHE"]   # animated mesh
    assert [k.type for k in ib.constraints] == ["TRANSFORM_CACHE"]     # animated transform
    wc = _world_cache(c, fc)
    errs, moved = [], []
    for f in range(1, 15):
        scene.frame_set(f)
        errs.append(np.abs(scenes.evaluated_positions(ic, world=True) - wc[f - 1]).max())
        errs.append(np.abs(np.array(ib.matrix_world) - fb[f - 1]).max())
        moved.append(np.array(ib.matrix_world)[:3, :3].copy())
    assert max(errs) <= 1e-5, max(errs)
    assert np.abs(moved[-1] - moved[0]).max() > 0.05   # the cube turned: rotations checked
    assert np.abs(wc[-1] - wc[0]).max() > 0.1


def test_modifier_object_exports_alembic_and_pc2_of_the_simulated_positions(extension, tmp_path):
    # An object with a deforming modifier is displayed through our Geometry Nodes modifier, last
    # in its stack (bridge.py): Alembic (the evaluated mesh) and PC2 (Mesh Cache, overwriting
    # after the user's modifiers) give the cached positions, not the modifier applied twice.
    bake, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.add_user_data(c)
    c.modifiers.new("Lift", "DISPLACE").strength = 0.1
    before = scenes.user_hashes(c)
    scenes.bake_op()
    fc = bake.load(c)[1].copy()
    scene = bpy.context.scene
    path = tmp_path / "mod.abc"
    assert bpy.ops.verlet.export_alembic(filepath=str(path)) == {"FINISHED"}
    names = set(bpy.data.objects.keys())
    assert bpy.ops.wm.alembic_import(filepath=str(path), as_background_job=False) == {"FINISHED"}
    new = {n.split(".")[0]: bpy.data.objects[n] for n in set(bpy.data.objects.keys()) - names}
    ic = new["Cloth"]
    wc = _world_cache(c, fc)
    errs = []
    for f in range(1, 11):
        scene.frame_set(f)
        errs.append(np.abs(scenes.evaluated_positions(ic, world=True) - wc[f - 1]).max())
    assert max(errs) <= 1e-5, errs
    assert np.abs(wc[-1] - wc[0]).max() > 0.1
    bpy.data.objects.remove(ic)
    out = tmp_path / "pc2"
    out.mkdir()
    assert bpy.ops.verlet.export_pc2(directory=str(out)) == {"FINISHED"}
    bpy.ops.verlet.free_bake()                          # our display gone: the PC2 plays alone
    assert [m.name for m in c.modifiers] == ["Lift", "Verlet PC2"]
    assert scenes.user_hashes(c) == before
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "mod.blend"))
    np.save(tmp_path / "expect.npy", fc)
    code = f"""
import json, numpy as np, bpy
bpy.ops.wm.open_mainfile(filepath={str(tmp_path / 'mod.blend')!r})
fr = np.load({str(tmp_path / 'expect.npy')!r})
c = bpy.data.objects["Cloth"]
err = {{}}
for f in (1, 4, 10):
    bpy.context.scene.frame_set(f)
    ev = c.evaluated_get(bpy.context.evaluated_depsgraph_get())
    x = np.array([v.co for v in ev.data.vertices])
    err[f] = float(np.abs(x - fr[f - 1]).max())
print("RESULT", json.dumps(err))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT")]
    assert run.returncode == 0 and line, run.stderr[-2000:]
    err = json.loads(line[0][7:])
    assert max(err.values()) <= 1e-6, err


def test_blender_alembic_exporter_with_subframes_reads_interpolated_cache(extension, tmp_path):
    """Blender's own exporter (File > Export) sampling twice per frame: the handler shows the
    cache interpolated at each subframe and never steps."""
    bake, _ = _addon()
    c, _ = scenes.drape_scene(n=8, frames=(1, 10))
    scenes.bake_op()
    header, fc = bake.load(c)
    path = str(tmp_path / "sub.abc")
    bpy.ops.wm.alembic_export(filepath=path, start=1, end=10, gsamples=2,
                              as_background_job=False)
    assert bake._live["sim"] is None
    names = set(bpy.data.objects.keys())
    bpy.ops.wm.alembic_import(filepath=path, as_background_job=False)
    ic = [bpy.data.objects[n] for n in set(bpy.data.objects.keys()) - names
          if n.startswith("Cloth")][0]
    scene, errs = bpy.context.scene, []
    for t in np.arange(1.0, 10.0, 0.5):
        scene.frame_set(int(t), subframe=float(t % 1))
        expect = scenes.world(c, bake.sample(header, fc, float(t)))
        errs.append(np.abs(scenes.evaluated_positions(ic, world=True) - expect).max())
    assert max(errs) <= 1e-5, errs
    mid = scenes.world(c, 0.5 * (fc[3] + fc[4]))        # 4.5 really is between samples
    assert np.abs(mid - scenes.world(c, fc[3])).max() > 1e-3


def test_exporter_and_render_never_step_live_playback(extension, tmp_path):
    bake, _ = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 10))
    scene = bpy.context.scene
    for f in (1, 2, 3):
        scene.frame_set(f)
    shown = scenes.display_key(c).copy()
    where = np.array(box.matrix_world)
    bpy.ops.wm.alembic_export(filepath=str(tmp_path / "live.abc"), start=1, end=6,
                              gsamples=2, as_background_job=False)
    assert bake._live["last"] == 3
    scene.render.engine = "CYCLES"                      # a tiny animation render
    scene.cycles.samples = 1
    scene.render.resolution_x = scene.render.resolution_y = 8
    cam = scenes.link(bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam")))
    scene.camera = cam
    scene.render.filepath = str(tmp_path / "frame_")
    scene.frame_start, scene.frame_end = 1, 6
    bpy.ops.render.render(animation=True)
    assert len(list(tmp_path.glob("frame_*.png"))) == 6
    assert bake._live["last"] == 3                      # nothing stepped
    scene.frame_set(3)
    np.testing.assert_array_equal(scenes.display_key(c), shown)
    np.testing.assert_allclose(np.array(box.matrix_world), where, atol=1e-6)
    scene.frame_set(4)                                  # the viewport still steps
    assert bake._live["last"] == 4


@pytest.mark.parametrize("mode", ["XYZ", "QUATERNION"])
def test_bake_to_shape_keys_and_rigid_keyframes_replay_the_cache(extension, mode):
    """The rigid body's keys are in its rotation mode (they were rotation_euler keys whatever
    the mode, which a box in Quaternion mode ignored: it kept its start rotation)."""
    bake, operators = _addon()
    c, box = scenes.mixed_scene(n=8, frames=(1, 12))
    box.rotation_mode = mode
    scenes.add_user_data(c)
    before = scenes.user_hashes(c, box)
    scenes.bake_op()
    fc, fb = bake.load(c)[1].copy(), bake.load(box)[1].copy()
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}
    assert bpy.ops.verlet.bake_to_shape_keys() == {"FINISHED"}   # twice: replaced, not doubled
    names = [k.name for k in c.data.shape_keys.key_blocks]
    assert names[:2] == ["Basis", "UserKey"] and len(names) == 2 + 1 + 12
    assert scenes.user_hashes(c, box) == before         # our named keys only
    bpy.ops.verlet.free_bake()                          # no cache, no display key, no handler:
    bpy.app.handlers.frame_change_post.remove(operators._frame_change)
    try:                                                # Blender's own animation replays it
        scene, errs = bpy.context.scene, []
        for f in range(1, 13):
            scene.frame_set(f)
            errs.append(np.abs(scenes.evaluated_positions(c) - fc[f - 1]).max())
            errs.append(np.abs(np.array(box.matrix_world) - fb[f - 1]).max())
    finally:
        bpy.app.handlers.frame_change_post.append(operators._frame_change)
    assert max(errs) <= 1e-5, max(errs)
    assert np.abs(fb[-1][:3, :3] - fb[0][:3, :3]).max() > 0.05   # rotations were checked
    assert scenes.user_hashes(c, box) == before


def test_exports_refuse_without_a_bake_or_a_folder(extension, tmp_path):
    scenes.drape_scene(n=6, frames=(1, 5))
    for op in (bpy.ops.verlet.bake_to_shape_keys,
               lambda: bpy.ops.verlet.export_pc2(directory=str(tmp_path)),
               lambda: bpy.ops.verlet.export_alembic(filepath=str(tmp_path / "x.abc"))):
        with pytest.raises(RuntimeError, match="bake"):
            op()
    scenes.bake_op()
    with pytest.raises(RuntimeError, match="does not exist"):
        bpy.ops.verlet.export_pc2(directory=str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="no file path"):
        bpy.ops.verlet.export_alembic(filepath="")
    # relative to an unsaved .blend: refused (an Alembic file went to the working directory)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert not bpy.data.filepath
        with pytest.raises(RuntimeError, match="not saved yet"):
            bpy.ops.verlet.export_alembic(filepath="//rel.abc")
        with pytest.raises(RuntimeError, match="not saved yet"):
            bpy.ops.verlet.export_pc2(directory="//")
    finally:
        os.chdir(cwd)
    assert not os.listdir(tmp_path)


def _alembic_objects(path):
    """Names of the objects an .abc holds, through Blender's importer (removed again)."""
    names = set(bpy.data.objects.keys())
    assert bpy.ops.wm.alembic_import(filepath=str(path), as_background_job=False) == {"FINISHED"}
    new = set(bpy.data.objects.keys()) - names
    got = {n.split(".")[0] for n in new}
    for n in new:
        bpy.data.objects.remove(bpy.data.objects[n])
    return got


def test_alembic_writes_the_simulated_objects_unless_asked_otherwise(extension, tmp_path):
    """Default: the baked bodies only (not colliders, cameras, lights); SELECTED: the user's
    selection, which every export leaves as it was; SCENE: everything."""
    c, box = scenes.mixed_scene(n=6, frames=(1, 6))
    cam = scenes.link(bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera")))
    scenes.bake_op()
    layer = bpy.context.view_layer
    ball = bpy.data.objects["Ball"]
    out = {}
    for scope in ("SIMULATED", "SELECTED", "SCENE"):
        for o in layer.objects:             # (the importer below selects what it imports)
            o.select_set(o is ball)
        layer.objects.active = cam
        path = tmp_path / f"{scope}.abc"
        kwargs = {} if scope == "SIMULATED" else {"objects": scope}
        assert bpy.ops.verlet.export_alembic(filepath=str(path), **kwargs) == {"FINISHED"}
        assert [o.name for o in layer.objects if o.select_get()] == ["Ball"]
        assert layer.objects.active == cam
        out[scope] = _alembic_objects(path)
    assert out["SIMULATED"] == {"Cloth", "Cube"}
    assert out["SELECTED"] == {"Ball"}
    assert out["SCENE"] >= {"Cloth", "Cube", "Ball", "Ground", "Camera"}
    ball.select_set(False)
    with pytest.raises(RuntimeError, match="nothing is selected"):
        bpy.ops.verlet.export_alembic(filepath=str(tmp_path / "none.abc"), objects="SELECTED")
    assert not (tmp_path / "none.abc").exists()


def test_pc2_files_of_objects_whose_names_a_file_name_cannot_tell_apart(extension, tmp_path):
    """"Cloth A" and "Cloth_A" shared Cloth_A.pc2 (one object's Mesh Cache played the other's);
    "cloth" and "Cloth" are one file where names ignore case."""
    bake, _ = _addon()
    scenes.set_range(1, 5)
    objs = [scenes.cloth(name, n=4 + i, location=(3.0 * i, 0.0, 1.0))
            for i, name in enumerate(("Cloth A", "Cloth_A", "cloth", "Cloth"))]
    scenes.bake_op()
    out = tmp_path / "pc2"
    out.mkdir()
    assert bpy.ops.verlet.export_pc2(directory=str(out)) == {"FINISHED"}
    files = os.listdir(out)
    assert len(files) == 4 and len({f.casefold() for f in files}) == 4, files
    for o in objs:
        path = bpy.path.abspath(o.modifiers["Verlet PC2"].filepath)
        points = struct.unpack("<i", open(path, "rb").read()[16:20])[0]
        assert points == len(o.data.vertices), (o.name, path)


def test_a_failed_export_leaves_no_temporary_file_and_the_earlier_file(extension, tmp_path,
                                                                       monkeypatch):
    """Each export writes a temporary file and renames it; when the write or the rename fails
    (a full disk), the temporary file is removed and the earlier export stays as it was."""
    from verlet_physics.addon import exports
    scenes.drape_scene(n=6, frames=(1, 5))
    scenes.bake_op()
    abc = tmp_path / "shot.abc"
    assert bpy.ops.verlet.export_pc2(directory=str(tmp_path)) == {"FINISHED"}
    assert bpy.ops.verlet.export_alembic(filepath=str(abc)) == {"FINISHED"}
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == ["Cloth.pc2", "shot.abc"]

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exports.os, "replace", full_disk)
    with pytest.raises(RuntimeError, match="Cloth: cannot write PC2.*No space left"):
        bpy.ops.verlet.export_pc2(directory=str(tmp_path))
    with pytest.raises(RuntimeError, match="Alembic export.*failed.*No space left"):
        bpy.ops.verlet.export_alembic(filepath=str(abc))
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    with pytest.raises(RuntimeError, match="is a folder"):
        bpy.ops.verlet.export_alembic(filepath=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)
