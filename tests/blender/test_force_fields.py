"""Blender's force fields in a bake: a keyframed Force field's strength spike throws a cloth and a
rigid body by the expected impulse; a Wind field blows along its local Z through the objects'
effector weights and collections; the scene wind shortcut is read every frame."""

import math

import numpy as np
import pytest
from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402  (tests/blender, shared scene builders)

G = 9.81


def _bake():
    from verlet_physics.addon import bake
    assert scenes.bake_op() == {"FINISHED"}
    assert bpy.context.scene.get("verlet_error", "") == ""
    return bake


def _field(kind, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), **settings):
    bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation)
    obj = bpy.context.object
    for k, v in settings.items():
        setattr(obj.field, k, v)
    return obj


def _centroids(bake, obj):
    """(frames, 3) world centroid of obj per cached frame."""
    header, frames = bake.load(obj)
    if header["kind"] == "RIGID":
        return frames[:, :3, 3].astype(np.float64)
    m = np.array(obj.matrix_world, dtype=np.float64)      # not animated: one matrix
    return frames.astype(np.float64).mean(axis=1) @ m[:3, :3].T + m[:3, 3]


def test_keyframed_force_spike_throws_cloth_and_rigid_body_by_the_impulse(extension):
    """A Force field at the origin whose strength is keyed 0 -> 60 N for frames 5-6 -> 0 (no
    gravity, no air drag): the cloth (0.5 kg, 3 m to +X) and the rigid cube (2 kg, 3 m to -X)
    fly away from it at sum(s(f) dt) / M times their mean direction from the field, within 2 %,
    and do not move before the spike."""
    scene = scenes.set_range(1, 14)
    scene.use_gravity = False
    scene.verlet.air_drag = 0.0
    field = _field("FORCE", strength=0.0)
    for frame, s in ((4, 0.0), (5, 60.0), (6, 60.0), (7, 0.0)):
        field.field.strength = s
        field.keyframe_insert(data_path="field.strength", frame=frame)
    cloth = scenes.cloth(n=6, size=1.0, location=(3.0, 0.0, 0.0), mass=0.5)
    cube = scenes.cube(size=0.4, location=(-3.0, 0.0, 0.0), kind="RIGID")
    cube.verlet.mass = 2.0
    bake = _bake()
    strengths = []
    for f in range(1, 15):                  # the keyed strength at each frame stepped to
        scene.frame_set(f)
        strengths.append(field.field.strength)
    assert strengths[4:6] == [60.0, 60.0] and sum(strengths) == 120.0
    dt = 1.0 / (scene.render.fps / scene.render.fps_base)
    for obj, mass in ((cloth, 0.5), (cube, 2.0)):
        c = _centroids(bake, obj)
        np.testing.assert_allclose(c[:4], np.broadcast_to(c[0], (4, 3)), atol=1e-6)
        v = (c[13] - c[9]) / (4 * dt)
        mid = 0.5 * (c[4] + c[5])           # where the spike acted, on average
        expect = sum(strengths) * dt / mass * mid / np.linalg.norm(mid)
        np.testing.assert_allclose(v, expect, rtol=0.02, atol=0.02 * np.linalg.norm(expect))
    assert _centroids(bake, cloth)[-1][0] > 3.5 and _centroids(bake, cube)[-1][0] < -3.5


def test_wind_field_blows_along_its_local_z_through_each_objects_weights(extension):
    """A Wind field (strength 3 N, flow 0) turned so its local Z is +Y: rigid cubes of 1.5 kg
    fall under gravity and drift along +Y by a t^2 / 2 with a = 3 / 1.5 x their effector weights:
    full, wind weight 0.5, none outside their effector collection, and none (nor gravity) with
    both weights 0. The scene's effector collection limits the others; an object's own wins."""
    scene = scenes.set_range(1, 13)
    scene.verlet.air_drag = 0.0
    wind = _field("WIND", rotation=(-math.pi / 2, 0.0, 0.0), strength=3.0, flow=0.0)
    others = bpy.data.collections.new("Other Fields")
    scene.collection.children.link(others)
    cubes = {}
    for k, name in enumerate(("Full", "Half", "Elsewhere", "Still")):
        cubes[name] = scenes.cube(name=name, size=0.3, location=(2.0 * k, 0.0, 5.0))
        cubes[name].verlet.mass = 1.5
    cubes["Half"].verlet.effector_weights.wind = 0.5
    cubes["Elsewhere"].verlet.effector_weights.collection = others
    still = cubes["Still"].verlet.effector_weights
    still.gravity, still.all = 0.0, 0.0
    bake = _bake()
    t = 12 / (scene.render.fps / scene.render.fps_base)
    a = 3.0 / 1.5
    for name, weight, g in (("Full", 1.0, G), ("Half", 0.5, G), ("Elsewhere", 0.0, G),
                            ("Still", 0.0, 0.0)):
        c = _centroids(bake, cubes[name])
        moved = c[-1] - c[0]
        np.testing.assert_allclose(moved, [0.0, weight * a * t * t / 2, -g * t * t / 2],
                                   atol=2e-4, err_msg=name)
    # the scene's collection limits every object without its own; an object's own comes first
    scene.verlet.effector_weights.collection = bpy.data.collections.new("No Fields")
    others.objects.link(wind)
    bpy.ops.verlet.free_bake()
    bake = _bake()
    for name, weight in (("Full", 0.0), ("Elsewhere", 1.0)):
        c = _centroids(bake, cubes[name])
        assert c[-1][1] - c[0][1] == pytest.approx(weight * a * t * t / 2, abs=2e-4), name


def test_scene_wind_shortcut_is_read_every_frame(extension):
    """Scene.verlet.wind_strength keyed 0 until frame 6 and 8 m/s from frame 7, blowing up (+Z)
    on a flat cloth without gravity: the cloth stays put to frame 6, then rises."""
    scene = scenes.set_range(1, 14)
    scene.use_gravity = False
    scene.verlet.wind_direction = (0.0, 0.0, 1.0)
    for frame, s in ((6, 0.0), (7, 8.0)):
        scene.verlet.wind_strength = s
        scene.keyframe_insert(data_path="verlet.wind_strength", frame=frame)
    cloth = scenes.cloth(n=5, size=1.0, location=(0.0, 0.0, 1.0))
    bake = _bake()
    c = _centroids(bake, cloth)
    np.testing.assert_allclose(c[:6, 2], 1.0, atol=1e-6)
    assert c[-1, 2] > 1.0 + 0.05 and np.all(np.diff(c[6:, 2]) > 0)


def test_settings_hash_reads_field_weights_by_value(extension):
    """The bake's settings hash covers the effector weights by value (no memory address in
    it), so it is the same in every session and changes when a weight changes."""
    from verlet_physics.addon import bake, validity
    scenes.set_range(1, 5)
    obj = scenes.cloth()
    coll = bpy.data.collections.new("Fields")
    obj.verlet.effector_weights.collection = coll
    plain = validity._plain(obj.verlet.effector_weights)
    assert plain["collection"] == "Fields" and plain["wind"] == 1.0
    assert "0x" not in repr(validity._plain(bpy.context.scene.verlet.effector_weights))
    before = bake.settings_hash(bpy.context.scene)
    obj.verlet.effector_weights.drag = 0.25
    assert bake.settings_hash(bpy.context.scene) != before


def test_unsupported_fields_are_skipped_and_bad_weights_named(extension, capsys):
    """A Magnetic field and a Wind of Surface shape are not simulated (named in the console, the
    bake runs, nothing moves the cube without gravity); a NaN field weight set from a script
    stops the bake with a message naming the object, before anything is written."""
    scene = scenes.set_range(1, 6)
    scene.use_gravity = False
    _field("MAGNET", strength=50.0)
    surface = scenes.cube(name="Blower", location=(0.0, 3.0, 0.0), kind="NONE")
    bpy.context.view_layer.objects.active = surface
    bpy.ops.object.forcefield_toggle()
    surface.field.type, surface.field.shape, surface.field.strength = "WIND", "SURFACE", 50.0
    cube = scenes.cube(location=(1.0, 0.0, 0.0))
    bake = _bake()
    assert "is not simulated" in capsys.readouterr().out
    c = _centroids(bake, cube)
    np.testing.assert_allclose(c, np.broadcast_to(c[0], c.shape), atol=1e-7)
    bpy.ops.verlet.free_bake()
    cube.verlet.effector_weights["wind"] = float("nan")      # past the UI's clamp
    with pytest.raises(RuntimeError, match="Cube: field weight wind is not a finite number"):
        scenes.bake_op()
    assert not cube.get("verlet_baked")
