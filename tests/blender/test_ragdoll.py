"""Ragdolls (issue 12, Blender side): a rig falls and rests on the ground, hinges stay inside
their IK limits, keyframes replay the bake, a pinned bone carries the body, a released body
keeps its animated velocity (and a rigid body), the skinned mesh's Alembic, live == bake, and
bad input refused by name with nothing changed."""

import math
import types

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import ragdoll_rig as rig  # noqa: E402  (scripts/, shared with the demo and benchmark)
import scenes  # noqa: E402

FPS = 24


def _addon():
    from verlet_physics.addon import bake, ragdoll
    return bake, ragdoll


def _bake(expect="FINISHED"):
    res = bpy.ops.verlet.bake("EXEC_DEFAULT") if expect == "FINISHED" else None
    if res is None:
        with pytest.raises(RuntimeError):
            bpy.ops.verlet.bake("EXEC_DEFAULT")
        return None
    assert res == {"FINISHED"}, bpy.context.scene.get("verlet_error")
    assert bpy.context.scene.get("verlet_error", "") == ""
    return res


def _cache(obj):
    bake, _ = _addon()
    header, frames = bake.load(obj)
    return header, frames.astype(np.float64)


def _segments(header, frames):
    """(f, k, 2, 3) head and tail of every bone per frame, from the cached matrices."""
    length = np.array([rig_length(n) for n in header["bones"]])
    head = frames[:, :, :3, 3]
    y = frames[:, :, :3, 1] / np.linalg.norm(frames[:, :, :3, 1], axis=2)[..., None]
    return np.stack([head, head + y * length[None, :, None]], axis=2)


def rig_length(name):
    h, t = (np.array(v) for v in rig.BONES[name][:2])
    return float(np.linalg.norm(t - h))


def test_rig_falls_and_rests_on_the_ground_without_sinking(extension):
    scene = scenes.set_range(1, 60, substeps=40)
    scenes.ground()
    r, _ = rig.ragdoll(location=(0, 0, 0.4), rotation=(0.4, 0.25, 0.0))
    _bake()
    header, frames = _cache(r)
    assert header["layout"] == "bones" and frames.shape == (60, 12, 4, 4)
    assert header["bones"][0] == "pelvis" and set(header["bones"]) == set(rig.BONES)
    seg = _segments(header, frames)
    radius = np.array([rig.BONES[n][4] for n in header["bones"]])
    lowest = seg[..., 2].min(axis=2) - radius[None, :]          # (f, k) capsule bottoms
    assert lowest.min() > -0.03                                  # landing: under 3 cm in
    assert lowest[-20:].min() > -0.005                           # resting: under 5 mm
    assert lowest[-1].min() < 0.01                               # and it lies on the ground
    assert seg[-1, :, :, 2].max() < 0.6                          # fallen, not standing
    moved = np.abs(frames[-1, :, :3, 3] - frames[-2, :, :3, 3]).max()
    assert moved < 2e-3                                          # at rest (< 5 cm/s)
    # the armature shows the cache: every bone where its cached matrix puts it
    scene.frame_set(45)
    for k, n in enumerate(header["bones"]):
        np.testing.assert_allclose(rig.bone_world(r, n)[:3, :3] /
                                   np.linalg.norm(rig.bone_world(r, n)[:3, :3], axis=0),
                                   frames[44, k, :3, :3], atol=2e-3)


def _hinge_angles(header, frames):
    """{hinge bone: (f,) angle [rad] of its rotation about its hinge axis from the rest pose,
    relative to its parent, and (f,) the rotation off that axis [rad]} from the cache."""
    out = {}
    from verlet_physics.addon import ragdoll_pose
    r = bpy.context.scene.objects["Rig"]
    for bone, (axis, _) in rig.HINGES.items():
        angle, off = [], []
        for f in frames:
            basis = ragdoll_pose.bases(r, header["bones"], f)[bone][:3, :3]
            from mathutils import Matrix
            q = Matrix(basis.tolist()).to_quaternion()
            i = "xyz".index(axis)
            twist = 2 * math.atan2((q.x, q.y, q.z)[i], q.w)
            angle.append(math.remainder(twist, 2 * math.pi))
            rest = [v for j, v in enumerate((q.x, q.y, q.z)) if j != i]
            off.append(2 * math.asin(min(1.0, math.hypot(*rest))))
        out[bone] = (np.array(angle), np.array(off))
    return out


def test_knees_and_elbows_stay_inside_their_ik_limits_tumbling_over_a_step(extension):
    scenes.set_range(1, 48, substeps=40)
    scenes.ground()
    rig.stairs(n=3, rise=0.25, run=0.35, x0=-0.2)
    r, _ = rig.ragdoll(location=(0.0, 0.0, 0.9), rotation=(0.0, 1.2, 0.3))
    _bake()
    header, frames = _cache(r)
    tol = math.radians(3)
    bent = 0.0
    for bone, (angle, off) in _hinge_angles(header, frames).items():
        a_lo, a_hi = rig.HINGES[bone][1]
        assert angle.min() > a_lo - tol and angle.max() < a_hi + tol, (bone, np.degrees(angle))
        # a hinge turns about its axis (the solver lets it tilt a few degrees in the impacts)
        assert off.max() < math.radians(6), (bone, np.degrees(off.max()))
        bent = max(bent, np.abs(angle).max())
    assert bent > math.radians(10)                               # the tumble did bend them


def test_keyframes_replay_the_bake_and_leave_other_animation_alone(extension):
    scene = scenes.set_range(5, 30, substeps=20)
    scenes.ground()
    r, _ = rig.ragdoll(location=(0, 0, 0.3), rotation=(0.3, 0.0, 0.0))
    # the user's own animation: a custom property, a bone key before and after the range, and
    # another object's keys
    r["custom"] = 1.0
    r.keyframe_insert('["custom"]', frame=1)
    r["custom"] = 3.0
    r.keyframe_insert('["custom"]', frame=50)
    pb = r.pose.bones["head"]
    pb.keyframe_insert("rotation_quaternion", frame=1)
    pb.keyframe_insert("rotation_quaternion", frame=40)
    other = scenes.cube(name="Prop", location=(5, 0, 1), kind="NONE")
    other.keyframe_insert("location", frame=1)
    other.location.x = 7
    other.keyframe_insert("location", frame=30)
    from verlet_physics.addon.validity import _fcurves
    before = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
              for fc in _fcurves(r.animation_data)}
    before_other = [[tuple(k.co) for k in fc.keyframe_points]
                    for fc in _fcurves(other.animation_data)]
    _bake()
    header, frames = _cache(r)
    shown = {}                             # what the bake shows (bones drawn from the cache)
    for f in range(5, 31):
        scene.frame_set(f)
        shown[f] = [rig.bone_world(r, n) for n in header["bones"]]
    for k, n in enumerate(header["bones"]):
        np.testing.assert_allclose(shown[20][k], frames[15, k], atol=0.02)
    assert bpy.ops.verlet.bake_to_keyframes("EXEC_DEFAULT") == {"FINISHED"}
    assert bpy.ops.verlet.free_bake("EXEC_DEFAULT") == {"FINISHED"}
    r.verlet.kind = "NONE"                 # no live simulation: the action alone plays
    for f in range(5, 31):
        scene.frame_set(f)
        for k, n in enumerate(header["bones"]):
            np.testing.assert_allclose(rig.bone_world(r, n), shown[f][k], atol=1e-5,
                                       err_msg=f"frame {f} bone {n}")
    after = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
             for fc in _fcurves(r.animation_data)}
    assert after['["custom"]', 0] == before['["custom"]', 0]
    for c in range(4):                     # the head's keys outside 5..30 kept, ours inside
        keys = after['pose.bones["head"].rotation_quaternion', c]
        assert [k for k in keys if k[0] < 5 or k[0] > 30] == \
            [k for k in before['pose.bones["head"].rotation_quaternion', c]
             if k[0] < 5 or k[0] > 30]
        assert [k[0] for k in keys if 5 <= k[0] <= 30] == list(range(5, 31))
    for n in header["bones"]:              # rotations for every bone, location for the root
        assert ('pose.bones["%s"].rotation_quaternion' % n, 0) in after
        assert (('pose.bones["%s"].location' % n, 0) in after) == (n == "pelvis")
    assert [[tuple(k.co) for k in fc.keyframe_points]
            for fc in _fcurves(other.animation_data)] == before_other


def test_a_pinned_bone_follows_its_animation_and_the_body_hangs_from_it(extension):
    scene = scenes.set_range(1, 36, substeps=20)
    r, _ = rig.ragdoll(location=(0, 0, 1.0))
    col = r.data.collections.new("Pinned")
    col.assign(r.data.bones["head"])
    r.verlet.pin_group = "Pinned"
    pb = r.pose.bones["head"]
    pb.keyframe_insert("location", frame=1)
    pb.location = (0.0, 0.0, 0.6)           # bone-local Z: sideways for the head bone
    pb.keyframe_insert("location", frame=36)
    _bake()
    header, frames = _cache(r)
    k_head = header["bones"].index("head")
    k_pelvis = header["bones"].index("pelvis")
    bpy.ops.verlet.free_bake("EXEC_DEFAULT")
    r.verlet.kind = "NONE"
    for f in (1, 12, 24, 36):
        scene.frame_set(f)
        np.testing.assert_allclose(frames[f - 1, k_head], rig.bone_world(r, "head"), atol=1e-5)
    head, pelvis = frames[-1, k_head, :3, 3], frames[-1, k_pelvis, :3, 3]
    assert pelvis[2] < head[2] - 0.4                 # hangs below the pinned head
    assert np.linalg.norm(head - frames[0, k_head, :3, 3]) > 0.3   # which moved
    seg = _segments(header, frames)
    chest = header["bones"].index("chest")
    spine = header["bones"].index("spine")
    gap = np.linalg.norm(seg[:, chest, 0] - seg[:, spine, 1], axis=1)
    assert gap.max() < 0.01                          # the joints hold (spine tail = chest head)


def _release_scene(kind):
    """A body moving at 2 m/s along +X by keyframes, following them (Animated) until frame 10."""
    scene = scenes.set_range(1, 20, substeps=20)
    if kind == "RAGDOLL":
        obj, _ = rig.ragdoll(location=(0, 0, 3.0))
        target = obj.pose.bones["pelvis"]
        # the pelvis bone's local axes: moving along world +X is along its local X
    elif kind == "CLOTH":
        obj = scenes.cloth(n=6, size=0.5, location=(0, 0, 3.0))
        target = obj
    else:
        obj = scenes.cube(location=(0, 0, 3.0))
        target = obj
    target.keyframe_insert("location", frame=1)
    target.location.x = 2.0 * 19 / FPS
    target.keyframe_insert("location", frame=20)
    from verlet_physics.addon.validity import _fcurves
    for fc in _fcurves(obj.animation_data):
        for k in fc.keyframe_points:
            k.interpolation = "LINEAR"
    obj.verlet.animated = True
    obj.keyframe_insert("verlet.animated", frame=1)
    obj.verlet.animated = False
    obj.keyframe_insert("verlet.animated", frame=10)
    return scene, obj


@pytest.mark.parametrize("kind", ["RAGDOLL", "RIGID", "CLOTH"])
def test_a_released_body_keeps_its_animated_velocity(extension, kind):
    scene, obj = _release_scene(kind)
    _bake()
    header, frames = _cache(obj)
    if kind == "CLOTH":                 # object-space positions in the object's placement then
        centre = []
        for f in range(1, 21):
            scene.frame_set(f)
            centre.append(scenes.world(obj, frames[f - 1]).mean(axis=0))
        centre = np.array(centre)
    else:
        centre = frames[:, 0, :3, 3] if kind == "RAGDOLL" else frames[:, :3, 3]
    v = np.diff(centre, axis=0) * FPS                # (f - 1, 3) [m/s] per frame
    np.testing.assert_allclose(v[:8, 0], 2.0, atol=0.02)       # follows the keys
    np.testing.assert_allclose(v[:8, 2], 0.0, atol=0.02)       # (not falling)
    np.testing.assert_allclose(v[10:, 0], 2.0, rtol=0.03)      # released: keeps 2 m/s
    if kind == "CLOTH":
        assert v[-1, 2] < -1.0                                 # falls (air drag slows it)
        return
    g = -np.diff(v[10:, 2]).mean() * FPS
    assert abs(g - 9.81) < 0.3                                 # and falls freely


def test_live_playback_equals_the_bake(extension):
    scene = scenes.set_range(1, 12, substeps=20)
    scenes.ground()
    r, _ = rig.ragdoll(location=(0, 0, 0.2), rotation=(0.2, 0.1, 0.0))
    live = []
    for f in range(1, 13):
        scene.frame_set(f)
        live.append(np.stack([rig.bone_world(r, n) for n in rig.BONES]))
    from verlet_physics.addon import bake
    stepped = {f: {k: v.copy() for k, v in d.items()} for f, d in bake._live["frames"].items()}
    _bake()
    header, frames = _cache(r)
    for f in range(1, 13):                 # the same frames, bit for bit
        np.testing.assert_array_equal(stepped[f]["Rig"], frames[f - 1])
        scene.frame_set(f)                 # and the same display
        np.testing.assert_allclose(np.stack([rig.bone_world(r, n) for n in rig.BONES]),
                                   live[f - 1], atol=1e-6)


def test_the_skinned_meshs_alembic_matches(extension, tmp_path):
    scene = scenes.set_range(1, 16, substeps=20)
    scenes.ground()
    r, body = rig.ragdoll(location=(0, 0, 0.3), rotation=(0.5, 0.0, 0.0))
    _bake()
    path = str(tmp_path / "rig.abc")
    assert bpy.ops.verlet.export_alembic("EXEC_DEFAULT", filepath=path) == {"FINISHED"}
    want = {}
    for f in (1, 8, 16):
        scene.frame_set(f)
        want[f] = scenes.evaluated_positions(body, world=True)
    names = set(bpy.data.objects.keys())
    bpy.ops.wm.alembic_import(filepath=path, as_background_job=False)
    imported = [bpy.data.objects[n] for n in set(bpy.data.objects.keys()) - names]
    assert [o.type for o in imported] == ["MESH"]        # the skinned mesh only
    r.verlet.kind = "NONE"
    for f, x in want.items():
        scene.frame_set(f)
        got = scenes.evaluated_positions(imported[0], world=True)
        assert not np.allclose(want[1], want[16], atol=0.05) or f == 1
        np.testing.assert_allclose(got, x, atol=1e-4)


# ------------------------------------------------------------------ bad input
def _refused(obj, *words):
    """Bake refused: the message names the object and the words; nothing of the rig changed."""
    before = None if obj.type != "ARMATURE" or obj.pose is None else \
        [np.array(pb.matrix_basis) for pb in obj.pose.bones]
    with pytest.raises(RuntimeError):
        bpy.ops.verlet.bake("EXEC_DEFAULT")
    msg = bpy.context.scene["verlet_error"]
    for w in (obj.name,) + words:
        assert w in msg, msg
    assert not obj.get("verlet_baked")
    if before is not None:
        for pb, m in zip(obj.pose.bones, before):
            np.testing.assert_array_equal(np.array(pb.matrix_basis), m)
    return msg


def test_an_armature_with_no_bones_is_refused(extension):
    scenes.set_range(1, 4)
    obj = bpy.data.objects.new("Empty Rig", bpy.data.armatures.new("Empty Rig"))
    bpy.context.scene.collection.objects.link(obj)
    obj.verlet.kind = "RAGDOLL"
    _refused(obj, "no bones")


def test_scaled_bones_and_a_non_uniform_armature_are_refused(extension):
    scenes.set_range(1, 4)
    r, _ = rig.ragdoll()
    r.pose.bones["forearm.L"].scale = (1.0, 0.5, 1.0)
    _refused(r, "forearm.L", "scaled")
    r.pose.bones["forearm.L"].scale = (1.0, 1.0, 1.0)
    r.scale = (1.0, 2.0, 1.0)
    _refused(r, "non-uniformly")


def test_ik_limits_whose_min_exceeds_max_are_refused(extension):
    _, ragdoll = _addon()
    from verlet_physics.addon.bridge import BridgeError
    # Blender clamps ik_min_* to <= 0 <= ik_max_*; a script or a file from elsewhere may not
    pb = types.SimpleNamespace(name="shin.L", **{f"{p}_{a}": v for a in "xyz" for p, v in (
        ("use_ik_limit", a == "x"), ("ik_min", 0.5 if a == "x" else 0.0),
        ("ik_max", 0.2 if a == "x" else 0.0), ("lock_ik", a != "x"))})
    with pytest.raises(BridgeError, match=r"Rig: bone 'shin.L': IK limit X has min"):
        ragdoll.joint_limits(pb, "Rig")
    pb.ik_min_x, pb.ik_max_x = 0.0, 2.0
    assert ragdoll.joint_limits(pb, "Rig") == ("hinge", 0, (0.0, 2.0))
    pb.lock_ik_z = False
    kind, axis, lim = ragdoll.joint_limits(pb, "Rig")
    assert (kind, axis) == ("ball", None) and lim[0] == pytest.approx(math.pi)
    free = types.SimpleNamespace(name="b", **{f"{p}_{a}": v for a in "xyz" for p, v in (
        ("use_ik_limit", False), ("ik_min", 0.0), ("ik_max", 0.0), ("lock_ik", False))})
    assert ragdoll.joint_limits(free) == ("ball", None, None)


def test_a_pin_group_naming_no_bone_collection_is_refused(extension):
    scenes.set_range(1, 4)
    r, _ = rig.ragdoll()
    r.verlet.pin_group = "Nope"
    _refused(r, "Nope", "bone collection")


def test_kinds_on_the_wrong_object_are_refused(extension):
    scenes.set_range(1, 4)
    box = scenes.cube(kind="RAGDOLL")
    _refused(box, "Ragdoll")
    box.verlet.kind = "NONE"
    r, _ = rig.ragdoll(skinned=False)
    r.verlet.kind = "CLOTH"
    _refused(r, "armature")


def test_an_armature_without_a_skinned_mesh_takes_envelope_radii(extension):
    scenes.set_range(1, 4)
    r, _ = rig.ragdoll(skinned=False)
    r.data.bones["head"].head_radius = r.data.bones["head"].tail_radius = 0.2
    _bake()
    assert "envelope" in r["verlet_status"] and "warning" in r["verlet_status"]
    bpy.ops.verlet.free_bake("EXEC_DEFAULT")
    from verlet_physics.addon import ragdoll
    names = ragdoll.deform_bones(r)
    radii, envelope = ragdoll.fit_radii(r, names, [])
    assert envelope == names and radii[names.index("head")] == pytest.approx(0.2)
    body = rig.skin(r)
    radii, envelope = ragdoll.fit_radii(r, names, [body])
    assert envelope == []
    np.testing.assert_allclose(radii, [rig.BONES[n][4] for n in names], rtol=1e-3)


def test_pose_match_holds_the_animated_pose_and_a_bone_override_goes_limp(extension):
    scenes.set_range(1, 24, substeps=40)
    r, _ = rig.ragdoll(location=(0, 0, 1.0), pose_match=1.0)
    col = r.data.collections.new("Root")
    col.assign(r.data.bones["pelvis"])
    r.verlet.pin_group = "Root"
    r.pose.bones["upper_arm.L"]["verlet_pose_match"] = 0.0      # this shoulder: limp
    _bake()
    header, frames = _cache(r)
    seg = _segments(header, frames)

    def hand_drop(name):                # how far the forearm's tail fell [m]
        k = header["bones"].index(name)
        return seg[0, k, 1, 2] - seg[-1, k, 1, 2]
    assert hand_drop("forearm.R") < 0.03            # held in the T pose at strength 1
    assert hand_drop("forearm.L") > 0.3             # the overridden shoulder hangs
    bpy.ops.verlet.free_bake("EXEC_DEFAULT")
    r.verlet.pose_match = 0.0
    del r.pose.bones["upper_arm.L"]["verlet_pose_match"]
    _bake()
    header, frames = _cache(r)
    seg = _segments(header, frames)
    assert hand_drop("forearm.R") > 0.3             # limp at 0


def test_the_cli_bakes_a_ragdoll_and_the_saved_file_plays_it(extension, tmp_path, capsys):
    from verlet_physics.addon import cli
    scenes.set_range(1, 10, substeps=20)
    scenes.ground()
    rig.ragdoll(location=(0, 0, 0.3), rotation=(0.3, 0.0, 0.0))
    path = str(tmp_path / "rig.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    abc = tmp_path / "rig.abc"
    code = cli.main(["bake", "--frames", "2:9", "--alembic", str(abc)])
    assert code == 0, capsys.readouterr().err
    assert abc.stat().st_size > 0
    bpy.ops.wm.open_mainfile(filepath=path)
    r = bpy.data.objects["Rig"]
    assert r.get("verlet_baked")
    header, frames = _cache(r)
    assert header["layout"] == "bones" and frames.shape == (8, 12, 4, 4)
    bpy.context.scene.frame_set(9)
    k = header["bones"].index("pelvis")
    np.testing.assert_allclose(rig.bone_world(r, "pelvis"), frames[-1, k], atol=1e-5)


def test_the_panels_of_a_ragdoll(extension):
    from ui_layout import draw, drawn
    scenes.set_range(1, 4)
    r, _ = rig.ragdoll(skinned=False)
    panels = bpy.types
    assert panels.PHYSICS_PT_verlet_physical.poll(types.SimpleNamespace(object=r))
    assert panels.PHYSICS_PT_verlet_collisions.poll(types.SimpleNamespace(object=r))
    assert drawn(draw("PHYSICS_PT_verlet_collisions", r)) == ["friction"]
    assert drawn(draw("PHYSICS_PT_verlet_physical", r)) == ["mass", "damping", "animated",
                                                           "pose_match"]
    log = draw("PHYSICS_PT_verlet_shape", r)
    assert [(e.what, e.search[1]) for e in log if e.what == "prop_search"] == \
        [("prop_search", "collections_all")]
    ops = drawn(draw("PHYSICS_PT_verlet_cache", r), "operator")
    assert "verlet.bake_to_keyframes" in ops and "verlet.bake_to_shape_keys" not in ops
    r.verlet.kind = "NONE"              # an armature shows only the kind until it is a ragdoll
    assert not panels.PHYSICS_PT_verlet_physical.poll(types.SimpleNamespace(object=r))
    assert panels.PHYSICS_PT_verlet.poll(types.SimpleNamespace(object=r))


def test_a_ragdolls_friction_reaches_its_capsules_and_marks_the_hash(extension):
    """A ragdoll's Friction (Collisions panel; keyframable) is its capsules' particles' Coulomb
    coefficient in the solver, read at every frame (before, they carried the solver's 0.5
    whatever it was). At 0.5, unkeyed, its settings-hash entry is the one of before; another
    value marks it (friction_acts), so a bake made before reads outdated."""
    from verlet_physics.addon import simscene
    scene = scenes.set_range(1, 6, substeps=10)
    scenes.ground()
    r, _ = rig.ragdoll(skinned=False)

    def entry():
        return next(e for e in scenes.hashed(scene)["objects"] if e["kind"] == "RAGDOLL")
    assert r.verlet.friction == 0.5 and "friction_acts" not in entry()
    r.verlet.friction = 0.9
    assert entry()["friction_acts"] is True
    scene.frame_set(1)
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    body = next(b for b in ss.bodies if b.name == r.name)
    assert np.all(ss.sim.control.particle_friction[body.ids] == pytest.approx(0.9))
    first, last = scenes.keyed_friction(scene, r, 0.2, 1.1, 5)
    assert entry()["friction_acts"] is True
    assert np.all(first == pytest.approx(0.2)) and np.all(last == pytest.approx(1.1))


def test_a_changed_ik_limit_marks_the_bake_outdated(extension):
    bake, _ = _addon()
    scene = scenes.set_range(1, 4)
    r, _ = rig.ragdoll()
    before = bake.settings_hash(scene)
    r.pose.bones["shin.L"].ik_min_x = -1.0
    assert bake.settings_hash(scene) != before
    after = bake.settings_hash(scene)
    r.pose.bones["chest"]["verlet_pose_match"] = 0.5
    assert bake.settings_hash(scene) != after


def test_a_keyed_pose_match_override_enters_the_hash_by_its_keys(extension):
    """The settings hash is made on every frame shown: a keyed per-bone override enters by its
    keys (else a bake looked outdated on every frame where the override's value differs from
    the frame it was stored on), and the bones' own animation is not read at all (a walk cycle
    or a motion capture: thousands of keys, read on every frame for nothing)."""
    from verlet_physics.addon import validity
    bake, _ = _addon()
    scene = scenes.set_range(1, 24)
    r, _ = rig.ragdoll()
    chest = r.pose.bones["chest"]
    for frame, value in ((1, 0.0), (24, 1.0)):
        chest["verlet_pose_match"] = value
        chest.keyframe_insert('["verlet_pose_match"]', frame=frame)
    path = chest.path_from_id('["verlet_pose_match"]')
    for pb in r.pose.bones:                          # a walk cycle's keys on every bone
        pb.rotation_mode = "QUATERNION"
        for frame in range(1, 25, 2):
            pb.rotation_quaternion = (1.0, 0.01 * frame, 0.0, 0.0)
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    r.verlet.animated = True
    r.keyframe_insert("verlet.animated", frame=1)
    assert set(validity._keyed(r)) == {path, "verlet.animated"}
    scene.frame_set(1)
    first = bake.settings_hash(scene)
    scene.frame_set(12)
    assert chest["verlet_pose_match"] == pytest.approx(0.5, abs=0.1)
    assert bake.settings_hash(scene) == first
    curve = next(fc for fc in validity._fcurves(r.animation_data) if fc.data_path == path)
    curve.keyframe_points[-1].co.y = 0.5             # a changed key changes the result
    assert bake.settings_hash(scene) != first
