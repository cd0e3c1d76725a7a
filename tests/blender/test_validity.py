"""The settings hash during playback (addon/validity.py: current_hash): the frame handler makes
the full hash again only when a fingerprint of what it reads changed, so every edit the hash
sees must change the fingerprint too, whether it goes through RNA, writes a stored value
directly (no depsgraph update), edits a key, or touches a ragdoll's bones; a bake is then
called outdated on the very next frame shown, and current again when the edit is undone."""

import pytest

from conftest import import_bpy

bpy = import_bpy()

import ragdoll_rig as rig  # noqa: E402  (scripts/, shared with the demo and benchmark)
import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake, validity
    return bake, validity


def _stored(owner):
    """owner's Verlet settings as stored (Blender 5.0 keeps bpy.props apart: system
    properties; 4.2 keeps them with the custom properties). Writing here tags nothing."""
    get = getattr(owner, "bl_system_properties_get", None)
    return (get() if get is not None else owner)["verlet"]


def _curve(obj, path):
    _, validity = _addon()
    return next(fc for fc in validity._fcurves(obj.animation_data) if fc.data_path == path)


def _keyed_scene():
    """A cloth with a field collection and keyed friction, a collider ball, a ragdoll with a
    keyed pose-match override, a keyed Animated switch and its bones' own keys, keyed wind and
    a wind direction keyed in one component: every kind of input the hash reads."""
    scene = scenes.set_range(1, 12)
    scene.verlet.wind_direction = (1.0, 0.0, 0.0)          # stored, one component keyed
    scene.keyframe_insert("verlet.wind_direction", index=0, frame=1)
    for frame, speed in ((1, 0.0), (12, 6.0)):
        scene.verlet.wind_strength = speed
        scene.keyframe_insert("verlet.wind_strength", frame=frame)
    c = scenes.cloth("Cloth", n=4)
    for frame, mu in ((1, 0.2), (12, 0.8)):
        c.verlet.friction = mu
        c.keyframe_insert("verlet.friction", frame=frame)
    c.verlet.effector_weights.collection = bpy.data.collections.new("Fields")
    ball = scenes.sphere(location=(0.0, 0.0, -1.0))
    r, _ = rig.ragdoll(location=(3.0, 0.0, 0.0), skinned=False)
    chest = r.pose.bones["chest"]
    for frame, value in ((1, 0.0), (12, 1.0)):
        chest["verlet_pose_match"] = value
        chest.keyframe_insert('["verlet_pose_match"]', frame=frame)
    for frame, on in ((1, True), (6, False)):
        r.verlet.animated = on
        r.keyframe_insert("verlet.animated", frame=frame)
    for pb in r.pose.bones:
        pb.rotation_mode = "QUATERNION"
        for frame in (1, 12):
            pb.rotation_quaternion = (1.0, 0.01 * frame, 0.0, 0.0)
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    scene.frame_set(1)
    return scene, c, ball, r


def _set_key(obj, path, **what):
    key = _curve(obj, path).keyframe_points[-1]
    for attr, value in what.items():
        setattr(key, attr, value)


def _new_key(obj):
    obj.keyframe_insert("verlet.damping", frame=4)


def _add_modifier(obj):
    _curve(obj, "verlet.friction").modifiers.new("NOISE")


def _remove(obj):
    bpy.data.objects.remove(obj)


# every edit the settings hash sees: name -> edit(scene, cloth, ball, rig)
EDITS = {
    "mass": lambda s, c, b, r: setattr(c.verlet, "mass", 3.0),
    "stored value": lambda s, c, b, r: _stored(c).__setitem__("thickness", 0.25),
    "stored scene value": lambda s, c, b, r: _stored(s).__setitem__("substeps", 7),
    "field weight": lambda s, c, b, r: setattr(c.verlet.effector_weights, "drag", 0.25),
    "field collection renamed": lambda s, c, b, r: setattr(
        c.verlet.effector_weights.collection, "name", "Other fields"),
    "collider friction": lambda s, c, b, r: setattr(b.verlet, "friction", 0.9),
    "substeps": lambda s, c, b, r: setattr(s.verlet, "substeps", 20),
    # a component not keyed of a keyed array enters by value
    "wind direction component": lambda s, c, b, r: s.verlet.wind_direction.__setitem__(1, 0.5),
    # json writes -0.0, == calls it 0.0 (the stored 0.0): the fingerprint must not
    "negative zero": lambda s, c, b, r: s.verlet.wind_direction.__setitem__(1, -0.0),
    "contact iterations": lambda s, c, b, r: setattr(s.verlet, "contact_iterations", 2),
    "scene field weight": lambda s, c, b, r: setattr(s.verlet.effector_weights, "wind", 0.5),
    "gravity": lambda s, c, b, r: setattr(s, "gravity", (0.0, 0.0, -3.0)),
    "use gravity": lambda s, c, b, r: setattr(s, "use_gravity", False),
    "fps": lambda s, c, b, r: setattr(s.render, "fps", 30),
    "fps base": lambda s, c, b, r: setattr(s.render, "fps_base", 1.001),
    "new body": lambda s, c, b, r: scenes.cloth("Late", n=3, location=(5.0, 0.0, 1.0)),
    "removed body": lambda s, c, b, r: _remove(b),
    "retyped body": lambda s, c, b, r: setattr(b.verlet, "kind", "RIGID"),
    "keyframe inserted": lambda s, c, b, r: _new_key(c),
    "key value": lambda s, c, b, r: _set_key(c, "verlet.friction", co=(12.0, 0.5)),
    "key time": lambda s, c, b, r: _set_key(c, "verlet.friction", co=(10.0, 0.8)),
    "key handle": lambda s, c, b, r: _set_key(c, "verlet.friction", handle_left=(9.0, 0.1)),
    "key interpolation": lambda s, c, b, r: _set_key(c, "verlet.friction",
                                                     interpolation="CONSTANT"),
    "curve extrapolation": lambda s, c, b, r: setattr(_curve(c, "verlet.friction"),
                                                      "extrapolation", "LINEAR"),
    "curve modifier": lambda s, c, b, r: _add_modifier(c),
    "curve muted": lambda s, c, b, r: setattr(_curve(c, "verlet.friction"), "mute", True),
    "scene key": lambda s, c, b, r: _set_key(s, "verlet.wind_strength", co=(12.0, 9.0)),
    "ragdoll setting": lambda s, c, b, r: setattr(r.verlet, "pose_match", 0.7),
    "ik limit": lambda s, c, b, r: setattr(r.pose.bones["shin.L"], "ik_min_x", -1.0),
    "ik lock": lambda s, c, b, r: setattr(r.pose.bones["thigh.R"], "lock_ik_y", True),
    "deform flag": lambda s, c, b, r: setattr(r.data.bones["head"], "use_deform", False),
    "envelope radius": lambda s, c, b, r: setattr(r.data.bones["head"], "tail_radius", 0.3),
    "bone renamed": lambda s, c, b, r: setattr(r.data.bones["head"], "name", "skull"),
    "override added": lambda s, c, b, r: r.pose.bones["spine"].__setitem__(
        "verlet_pose_match", 0.5),
    "override key": lambda s, c, b, r: _set_key(
        r, r.pose.bones["chest"].path_from_id('["verlet_pose_match"]'), co=(12.0, 0.4)),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_current_hash_follows_every_edit_the_settings_hash_sees(extension, edit):
    bake, validity = _addon()
    scene, c, b, r = _keyed_scene()
    with bake.guarded():                  # the hash alone: no live run
        scene.frame_set(5)
        before = validity.settings_hash(scene)
        assert validity.current_hash(scene) == before
        EDITS[edit](scene, c, b, r)
        after = validity.settings_hash(scene)
        assert after != before            # (else this case would test nothing)
        assert validity.current_hash(scene) == after
        scene.frame_set(6)
        assert validity.current_hash(scene) == validity.settings_hash(scene) == after


def test_keyed_settings_do_not_make_the_hash_again_on_every_frame(extension, monkeypatch):
    """A keyed setting's value at the current frame is not in the fingerprint (the hash takes
    its keys): playing a scene with keyed wind, friction, Animated switch and pose-match
    override makes the full hash once. The bones' own keys are not read at all."""
    bake, validity = _addon()
    scene, c, b, r = _keyed_scene()
    full = validity.settings_hash
    made = []
    monkeypatch.setattr(validity, "settings_hash", lambda s: made.append(s) or full(s))
    with bake.guarded():
        values = set()
        for frame in (1, 4, 12, 7, 2, 9):
            scene.frame_set(frame)
            values.add((round(c.verlet.friction, 4), r.verlet.animated,
                        round(r.pose.bones["chest"]["verlet_pose_match"], 4)))
            assert validity.current_hash(scene) == full(scene)
    assert len(values) == 6               # the keyed values did change with the frame
    assert len(made) == 1


def test_edits_the_hash_does_not_see_leave_it(extension):
    """The bones' own animation, the object's transform and a preset's name are not settings:
    current_hash stays the bake's (and may or may not hash again)."""
    bake, validity = _addon()
    scene, c, b, r = _keyed_scene()
    with bake.guarded():
        before = validity.current_hash(scene)
        _set_key(r, r.pose.bones["head"].path_from_id("rotation_quaternion"), co=(12.0, 0.5))
        c.location.x += 1.0
        c.verlet.preset = "silk"
        scene.frame_set(3)
        assert validity.current_hash(scene) == validity.settings_hash(scene) == before


# edits made between two frames of playing a bake: the very next frame shown calls it outdated
PLAYED = {
    "mass": lambda c, b: setattr(c.verlet, "mass", 3.0),
    "stored value": lambda c, b: _stored(c).__setitem__("mass", 3.0),
    "keyframe inserted": lambda c, b: c.keyframe_insert("verlet.friction", frame=5),
    "collider retyped": lambda c, b: setattr(b.verlet, "kind", "RIGID"),
    "fps": lambda c, b: setattr(bpy.context.scene.render, "fps", 30),
    "field collection renamed": lambda c, b: setattr(
        bpy.data.collections["Fields"], "name", "Other fields"),
}


@pytest.mark.parametrize("edit", list(PLAYED))
def test_an_edit_during_playback_marks_the_bake_outdated_on_the_next_frame(extension, tmp_path,
                                                                          edit):
    c, ball = scenes.drape_scene(n=6, frames=(1, 8))
    c.verlet.effector_weights.collection = bpy.data.collections.new("Fields")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "played.blend"))
    assert scenes.bake_op() == {"FINISHED"}
    scene = bpy.context.scene
    for frame in (2, 3):
        scene.frame_set(frame)
        assert "verlet_outdated" not in c, c.get("verlet_status")
    PLAYED[edit](c, ball)
    scene.frame_set(4)
    assert c.get("verlet_outdated") == "settings", c.get("verlet_status")
    scene.frame_set(5)
    assert c.get("verlet_outdated") == "settings"


def test_a_key_edited_during_playback_outdates_and_undoing_it_makes_the_bake_current(
        extension, tmp_path):
    c, _ = scenes.drape_scene(n=6, frames=(1, 8))
    for frame, mu in ((1, 0.2), (8, 0.8)):
        c.verlet.friction = mu
        c.keyframe_insert("verlet.friction", frame=frame)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "keyed.blend"))
    assert scenes.bake_op() == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(2)
    assert "verlet_outdated" not in c, c.get("verlet_status")
    key = _curve(c, "verlet.friction").keyframe_points[-1]
    key.co.y = 0.5
    scene.frame_set(3)
    assert c.get("verlet_outdated") == "settings"
    key.co.y = 0.8                         # the baked keys again: the bake is current again
    scene.frame_set(4)
    assert "verlet_outdated" not in c, c.get("verlet_status")


def test_a_ragdoll_edit_during_playback_marks_the_bake_outdated_on_the_next_frame(extension):
    scene = scenes.set_range(1, 4)
    scenes.ground()
    r, _ = rig.ragdoll(location=(0.0, 0.0, 0.05))
    assert scenes.bake_op() == {"FINISHED"}, scene.get("verlet_error")
    scene.frame_set(2)
    assert "verlet_outdated" not in r, r.get("verlet_status")
    r.pose.bones["shin.L"].ik_min_x = -1.0
    scene.frame_set(3)
    assert r.get("verlet_outdated") == "settings", r.get("verlet_status")


def test_a_range_extended_beyond_the_bake_marks_it_outdated(extension):
    """Frames past the bake's end hold its last frame; a simulation range extended beyond the
    bake said nothing of it (status "Baked 1-8", no Bake Again). A range within the bake's
    (shortened) is covered."""
    from verlet_physics.addon import state
    c, _ = scenes.drape_scene(n=6, frames=(1, 8))
    assert scenes.bake_op() == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(2)
    assert "verlet_outdated" not in c, c.get("verlet_status")
    scene.frame_end = 6
    scene.frame_set(3)
    assert "verlet_outdated" not in c, c.get("verlet_status")
    scene.frame_end = 16
    scene.frame_set(4)
    assert c.get("verlet_outdated") == "range" and state.bake_is_outdated(scene)
    assert "range is now 1-16" in c.get("verlet_status")
    scene.frame_end = 8
    scene.frame_set(5)
    assert "verlet_outdated" not in c, c.get("verlet_status")


def test_bakes_made_before_auto_read_faces_and_soft_goals_moved_read_outdated(extension):
    """The settings hash marks a scene whose result changed on 2026-12-01: an Auto collider
    that reads otherwise by its faces than by its vertices alone (a pipe: a mesh, not a solid
    cylinder), and a soft body or plant beside a collider (its shape goals now come before the
    collider contacts). A scene with neither hashes as before, so its bakes stay valid."""
    scene = bpy.context.scene
    scenes.cloth(n=4)
    bpy.ops.mesh.primitive_cube_add(location=(3.0, 0.0, 0.0))
    bpy.context.object.verlet.kind = "COLLIDER"                       # a closed cube: a box
    bpy.ops.mesh.primitive_plane_add(size=10)
    bpy.context.object.verlet.kind = "COLLIDER"                       # a plane, as before
    data = scenes.hashed(scene)
    assert "auto_faces" not in data and "goals_before_colliders" not in data
    bpy.ops.mesh.primitive_cylinder_add(end_fill_type="NOTHING", location=(-3.0, 0.0, 0.0))
    pipe = bpy.context.object
    pipe.verlet.kind = "COLLIDER"
    assert scenes.hashed(scene)["auto_faces"] == 1                    # cylinder -> mesh
    pipe.verlet.collider_shape = "CYLINDER"
    assert "auto_faces" not in scenes.hashed(scene)
    scenes.sphere("Jelly", location=(0.0, 3.0, 1.0), kind="SOFT")
    assert scenes.hashed(scene)["goals_before_colliders"] == 1


def test_a_bake_after_a_collider_mesh_edit_reads_current(extension):
    """An Auto cube collider made an open bin by deleting its top face (a mesh edit, no setting
    changed) changes the settings hash (auto_faces), which playback caches by a fingerprint
    of the settings alone: the stale hash called every fresh bake outdated (found by review).
    A bake settles the hash it stored (validity.settle)."""
    import bmesh
    scenes.set_range(1, 4)
    c = scenes.cloth(n=4, location=(0.0, 0.0, 2.0))
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    box = bpy.context.object
    box.verlet.kind = "COLLIDER"
    assert scenes.bake_op() == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(2)
    assert "verlet_outdated" not in c, c.get("verlet_status")
    bm = bmesh.new()
    bm.from_mesh(box.data)
    bmesh.ops.delete(bm, geom=[f for f in bm.faces if f.normal.z > 0.9], context="FACES_ONLY")
    bm.to_mesh(box.data)
    bm.free()
    box.data.update()
    scene.frame_set(3)
    assert scenes.bake_op() == {"FINISHED"}
    scene.frame_set(2)
    scene.frame_set(3)
    assert "verlet_outdated" not in c, c.get("verlet_status")
