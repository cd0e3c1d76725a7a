"""Keyframed settings act during the bake (issue 10.4): wind, friction and damping keyed mid-range
change the motion from their frame on, and only what a running simulation can change offers a
keyframe (``is_animatable``)."""

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402

# what an artist may keyframe (read at every frame, addon/animated.py) ...
OBJECT_ANIMATABLE = ("friction", "restitution", "damping", "stretch_stiffness",
                     "shear_stiffness", "bend_stiffness", "shape_stiffness", "pressure")
SCENE_ANIMATABLE = ("wind_direction", "wind_strength", "wind_turbulence", "air_drag",
                    "gravity_scale", "damping")
# ... and what a running simulation cannot change
OBJECT_FIXED = ("kind", "pin_group", "mass", "thickness", "collider_shape",
                "use_volume", "taper_group", "preset", "cache_id")
SCENE_FIXED = ("substeps", "iterations", "contact_iterations", "use_sleep", "use_scene_range",
               "frame_start", "frame_end")


def test_only_settings_the_solver_reads_per_frame_are_keyframable(extension):
    obj_props = bpy.types.Object.bl_rna.properties["verlet"].fixed_type.properties
    scene_props = bpy.types.Scene.bl_rna.properties["verlet"].fixed_type.properties
    for props, animatable, fixed in ((obj_props, OBJECT_ANIMATABLE, OBJECT_FIXED),
                                     (scene_props, SCENE_ANIMATABLE, SCENE_FIXED)):
        for name in animatable:
            assert props[name].is_animatable, name
        for name in fixed:
            assert not props[name].is_animatable, name
    # and Blender refuses a keyframe on a fixed one
    scene = bpy.context.scene
    with pytest.raises(TypeError):
        scene.keyframe_insert("verlet.substeps", frame=1)


def _curves(owner):
    """owner's F-curves (Blender 5's layered actions included)."""
    action = owner.animation_data.action
    curves = list(getattr(action, "fcurves", ()) or ())
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in strip.channelbags:
                curves += list(bag.fcurves)
    assert curves
    return curves


def _constant(owner):
    """Step interpolation for every key of owner."""
    for fc in _curves(owner):
        for kp in fc.keyframe_points:
            kp.interpolation = "CONSTANT"


def _grass():
    """A 30 cm strand of 7 vertices rooted by its two lowest (edges only: a plant)."""
    z = np.linspace(0.0, 0.3, 7)
    mesh = bpy.data.meshes.new("Grass")
    mesh.from_pydata([(0.0, 0.0, float(h)) for h in z], [(i, i + 1) for i in range(6)], [])
    obj = scenes.link(bpy.data.objects.new("Grass", mesh))
    obj.vertex_groups.new(name="Root").add([0, 1], 1.0, "REPLACE")
    obj.verlet.kind = "PLANT"
    obj.verlet.pin_group = "Root"
    obj.verlet.mass = 0.01
    return obj


def test_keyframed_wind_moves_the_grass(extension):
    """The issue's example: wind keyed 0 m/s at frame 1 and 20 m/s from frame 12 on."""
    scene = scenes.set_range(1, 36, substeps=20)
    scene.verlet.wind_direction = (1.0, 0.0, 0.0)
    obj = _grass()
    scene.verlet.wind_strength = 0.0
    scene.keyframe_insert("verlet.wind_strength", frame=1)
    scene.verlet.wind_strength = 20.0
    scene.keyframe_insert("verlet.wind_strength", frame=12)
    _constant(scene)
    scene.frame_set(1)
    assert scenes.bake_op() == {"FINISHED"}
    assert scene.get("verlet_error", "") == ""
    scene.frame_set(11)
    before = scenes.display_key(obj)[-1].astype(np.float64)
    scene.frame_set(36)
    after = scenes.display_key(obj)[-1].astype(np.float64)
    assert abs(before[0]) < 1e-3              # still air up to frame 11: the grass stands
    assert after[0] > 0.05                    # then blown several centimetres downwind
    # keyed settings differ from frame to frame, not from the bake: the bake is up to date
    assert not obj.get("verlet_outdated"), obj.get("verlet_status")
    scene.frame_set(11)
    assert not obj.get("verlet_outdated"), obj.get("verlet_status")
    # a changed key does outdate it
    fc = _curves(scene)[0]
    fc.keyframe_points[-1].co.y = 10.0
    scene.frame_set(12)
    assert obj.get("verlet_outdated") == "settings"


def test_keyframed_collider_friction_stops_a_slide(extension):
    """Friction keyed from 0 to 1 at frame 10 on the ground: a cube sliding at 2 m/s keeps its
    speed before frame 10 and stops within v^2 / (2 mu g) = 0.2 m after it."""
    from verlet_physics.addon import simscene

    scene = scenes.set_range(1, 30, substeps=20)
    scene.use_gravity = True
    floor = scenes.ground()
    floor.verlet.friction = 0.0
    box = scenes.cube(size=0.2, location=(0.0, 0.0, 0.1))
    floor.keyframe_insert("verlet.friction", frame=1)
    floor.verlet.friction = 1.0
    floor.keyframe_insert("verlet.friction", frame=10)
    _constant(floor)
    scene.frame_set(1)
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    body = ss.bodies[0]
    ss.sim.set_velocities(body.ids, np.tile([2.0, 0.0, 0.0], (len(body.ids), 1)))
    xs = {}
    for f in range(2, 31):
        scene.frame_set(f)
        ss.step_to(bpy.context.evaluated_depsgraph_get())
        xs[f] = float(np.mean(ss.sim.x[body.ids, 0]))
    fps = ss.fps
    # frictionless before frame 10: 2 m/s kept (frames 2..9 stepped with friction 0)
    assert abs((xs[9] - xs[5]) * fps / 4 - 2.0) < 0.02
    # from frame 10 on: mu = 1 stops it within v^2 / (2 mu g) (+ the frame it started in)
    stop = 2.0 ** 2 / (2 * 9.81)
    assert xs[30] - xs[9] < stop + 2.0 / fps + 0.01
    assert abs(xs[30] - xs[25]) < 1e-3        # at rest


def test_keyframed_damping_takes_effect_mid_bake(extension):
    """Object damping keyed 0 -> 0.99 (of the velocity removed per second) at frame 12: a
    falling cloth falls freely up to frame 11, then relaxes toward its terminal speed
    g / k (k = -ln(1 - 0.99) per second) as v(t) = v_t + (v_11 - v_t) exp(-k (t - t_11))."""
    scene = scenes.set_range(1, 24, substeps=10)
    scene.verlet.air_drag = 0.0
    c = scenes.cloth(n=4, size=0.5, location=(0.0, 0.0, 10.0))
    c.verlet.damping = 0.0
    c.keyframe_insert("verlet.damping", frame=1)
    c.verlet.damping = 0.99
    c.keyframe_insert("verlet.damping", frame=12)
    _constant(c)
    scene.frame_set(1)
    assert scenes.bake_op() == {"FINISHED"}
    assert scene.get("verlet_error", "") == ""
    fps = scene.render.fps / scene.render.fps_base
    z = {}
    for f in (10, 11, 23, 24):
        scene.frame_set(f)
        z[f] = float(np.mean(scenes.display_key(c)[:, 2]))
    g = 9.81
    v11 = (z[11] - z[10]) * fps                 # mean speed over frames 10..11 (t = 9.5 / fps)
    assert abs(v11 + g * 9.5 / fps) < 0.02 * g * 9.5 / fps    # free fall until frame 11
    k = -np.log(1.0 - 0.99)
    v_t, v0 = g / k, g * 10 / fps               # terminal speed; speed at frame 11 (t = 10 / fps)
    # mean speed over frames 23..24 (t - t_11 = 12.5 / fps); free fall would be g * 22.5 / fps
    expected = v_t + (v0 - v_t) * np.exp(-k * 12.5 / fps)
    v24 = -(z[24] - z[23]) * fps
    assert abs(v24 - expected) < 0.05 * expected
    assert v24 < 0.5 * g * 22.5 / fps


def _volume(obj, local):
    from verlet_physics.solver.geometry import signed_volume
    # fans from each polygon's first corner, as the solver triangulates (solver/geometry.py): a
    # bulging quad's volume depends on the diagonal
    tris = np.array([(p.vertices[0], p.vertices[i], p.vertices[i + 1])
                     for p in obj.data.polygons for i in range(1, len(p.vertices) - 1)])
    return abs(signed_volume(np.asarray(local, np.float64), tris))


def test_keyframed_pressure_inflates_a_soft_body_mid_bake(extension):
    """A soft 0.4 m cube without gravity, pressure keyed 1 -> 2 at frame 6: it keeps its
    0.064 m^3 up to frame 5, then inflates toward twice that."""
    scene = scenes.set_range(1, 40, substeps=10)
    scene.use_gravity = False
    box = scenes.cube(size=0.4, location=(0.0, 0.0, 2.0), kind="SOFT")
    box.verlet.shape_stiffness = 0.01            # soft: the volume, not the shape, decides
    box.verlet.stretch_stiffness = 0.25          # edges that stretch as it inflates
    box.verlet.damping = 0.5
    box.verlet.pressure = 1.0
    box.keyframe_insert("verlet.pressure", frame=1)
    box.verlet.pressure = 2.0
    box.keyframe_insert("verlet.pressure", frame=6)
    _constant(box)
    scene.frame_set(1)
    assert scenes.bake_op() == {"FINISHED"}
    assert scene.get("verlet_error", "") == ""
    scene.frame_set(5)
    v5 = _volume(box, scenes.display_key(box))
    scene.frame_set(40)
    v40 = _volume(box, scenes.display_key(box))
    assert abs(v5 / 0.064 - 1.0) < 0.01
    assert abs(v40 / 0.128 - 1.0) < 0.03


def test_keyframed_stretch_stiffness_lets_a_hanging_cloth_stretch(extension):
    """Stretch, shear and bend stiffness keyed 1 -> 0.125 (0.1 m/N) at frame 12 on a cloth
    hanging from its top row: inextensible up to frame 11 (its height within 1 % of 0.5 m), then
    it stretches under its own weight (more than 2 % taller; 3.9 % measured)."""
    scene = scenes.set_range(1, 48, substeps=20)
    scene.verlet.air_drag = 0.0
    c = scenes.cloth(n=6, size=0.5, location=(0.0, 0.0, 2.0))
    c.rotation_euler = (np.pi / 2, 0.0, 0.0)           # hanging in the XZ plane
    top = [i for i, v in enumerate(c.data.vertices) if v.co.y > 0.24]
    c.vertex_groups.new(name="Top").add(top, 1.0, "REPLACE")
    c.verlet.pin_group = "Top"
    c.verlet.mass = 0.2
    c.verlet.damping = 0.5
    for prop in ("stretch_stiffness", "shear_stiffness", "bend_stiffness"):
        setattr(c.verlet, prop, 1.0)
        c.keyframe_insert(f"verlet.{prop}", frame=1)
        setattr(c.verlet, prop, 0.125)
        c.keyframe_insert(f"verlet.{prop}", frame=12)
    _constant(c)
    scene.frame_set(1)
    assert scenes.bake_op() == {"FINISHED"}
    assert scene.get("verlet_error", "") == ""
    height = {}
    for f in (11, 48):
        scene.frame_set(f)
        z = scenes.world(c, scenes.display_key(c))[:, 2]
        height[f] = float(z.max() - z.min())
    assert abs(height[11] / 0.5 - 1.0) < 0.01
    assert height[48] > 1.02 * 0.5


def test_tapered_bend_stiffness_is_read_per_joint(extension):
    """An edge-only plant's bend stiffness changed between frames reaches each joint cluster of
    its strand (solver/strands.py: one per vertex with two edges, the vertex first) as the
    compliance of stiffness x the taper weight of its vertex, as at build time."""
    from verlet_physics.addon import simscene
    from verlet_physics.addon.properties import compliance_from_stiffness

    scenes.set_range(1, 10, substeps=4)
    obj = _grass()
    weights = 1.0 - 0.12 * np.arange(7)
    taper = obj.vertex_groups.new(name="Taper")
    for i, w in enumerate(weights):
        taper.add([i], float(w), "REPLACE")
    obj.verlet.taper_group = "Taper"
    obj.verlet.bend_stiffness = 0.9
    ss = simscene.SceneSim(bpy.context.scene, bpy.context.evaluated_depsgraph_get())
    body, m = ss.bodies[0], ss.sim.model
    clusters = ss.sim.clusters_among(np.concatenate([body.ids, body.frames[0]]))
    joint = m.shape_particles[m.shape_cluster_start[clusters]] - body.ids[0]
    assert sorted(joint.tolist()) == [1, 2, 3, 4, 5]     # the inner vertices of the blade
    w = weights[joint]
    built = ss.sim.control.shape_compliance[clusters].copy()
    scale = simscene.STRAND_BEND_SCALE
    # (float32 settings and weights: equal to 1e-6)
    assert np.allclose(built, scale * compliance_from_stiffness(0.9 * w), rtol=1e-6, atol=0)
    obj.verlet.bend_stiffness = 0.5
    ss.animated.read()
    now = ss.sim.control.shape_compliance[clusters]
    assert np.allclose(now, scale * compliance_from_stiffness(0.5 * w), rtol=1e-6, atol=0)
    assert np.all(now > 10 * built)          # a different value, not the build's


def test_scene_and_collider_settings_reach_the_solver_each_frame(extension):
    """What animated.read() hands over between frames: gravity (scene gravity x scale, off with
    Use Gravity), scene damping and air drag, a collider's friction and restitution, a soft
    body's damping; a NaN from a driver or script is refused naming the owner and setting."""
    from verlet_physics.addon import simscene
    from verlet_physics.addon.bridge import BridgeError

    scene = scenes.set_range(1, 10, substeps=4)
    floor = scenes.ground()
    jelly = scenes.cube(size=0.4, location=(0.0, 0.0, 1.0), kind="SOFT")
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    ctl, k = ss.sim.control, ss.colliders[0][1]
    scene.gravity = (1.0, 0.0, -5.0)
    scene.verlet.gravity_scale = 0.5
    scene.verlet.damping = 0.3
    scene.verlet.air_drag = 2.0
    floor.verlet.friction = 0.7
    floor.verlet.restitution = 0.4
    jelly.verlet.damping = 0.25
    ss.animated.read()
    assert np.allclose(ss.sim.gravity, [0.5, 0.0, -2.5])
    assert ctl.damping == pytest.approx(0.3) and ctl.air_drag == pytest.approx(2.0)
    assert ctl.collider_friction[k] == pytest.approx(0.7)
    assert ctl.collider_static_friction[k] == pytest.approx(0.7)
    assert ctl.collider_restitution[k] == pytest.approx(0.4)
    assert np.allclose(ctl.shape_damping, 0.25)
    scene.use_gravity = False
    ss.animated.read()
    assert np.all(ss.sim.gravity == 0.0)
    floor.verlet.friction = float("nan")
    with pytest.raises(BridgeError, match="Ground: friction"):
        ss.animated.read()


@pytest.mark.parametrize("e", [0.0, 0.6])
def test_a_rigid_bodys_restitution_reaches_the_solver_and_it_bounces(extension, e):
    """Object.verlet.restitution of a simulated body (shown in its Collisions panel) is its
    bounce at colliders: a RIGID cube of restitution 0.6 dropped 1 m onto a ground of
    restitution 0 rises back to about 0.36 m (the larger of the two counts); at 0 it stays.
    Before, the setting was read for colliders only and did nothing on a body."""
    from verlet_physics.addon import simscene

    scene = scenes.set_range(1, 30, substeps=20)
    scene.use_gravity = True
    scenes.ground()
    cube = scenes.cube(size=0.4, location=(0.0, 0.0, 1.2), kind="RIGID")
    cube.verlet.restitution = e
    scene.frame_set(1)
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    ids = next(b.ids for b in ss.bodies if b.name == cube.name)
    heights = []
    for f in range(2, 31):
        scene.frame_set(f)
        ss.step_to(bpy.context.evaluated_depsgraph_get())
        heights.append(float(ss.sim.x[ids, 2].mean()) - 0.2)
    assert np.all(ss.sim.control.particle_restitution[ids] == pytest.approx(e))
    low = int(np.argmax(np.diff(heights) > 0)) if e else int(np.argmin(heights))
    assert 0 < low and heights[low] < 0.05, heights
    rise = max(heights[low:])
    if e:
        assert 0.6 * e * e < rise < 1.2 * e * e, rise
    else:
        assert rise < 0.01, rise


def test_a_bodys_keyed_friction_reaches_the_solver_each_frame_and_marks_the_hash(extension):
    """Object.verlet.friction of a simulated body is keyframable: its value at each frame is
    handed to the solver (Simulation.set_friction: its contacts with bodies and colliders),
    where before only the start frame's was read. Keyed, it marks the body's settings-hash
    entry (a bake made before, with the start value throughout, reads outdated); unkeyed, the
    entry is as before."""
    scene = scenes.set_range(1, 12, substeps=10)
    scenes.ground()
    cube = scenes.cube(size=0.4, location=(0.0, 0.0, 0.25), kind="RIGID")
    cube.verlet.friction = 0.5

    def entry():
        return next(e for e in scenes.hashed(scene)["objects"] if e["kind"] == "RIGID")
    assert "friction_keys_act" not in entry()
    first, last = scenes.keyed_friction(scene, cube, 0.2, 1.4, 10)
    assert entry()["friction_keys_act"] is True
    assert np.all(first == pytest.approx(0.2)) and np.all(last == pytest.approx(1.4))


@pytest.mark.parametrize("use_sleep", [True, False])
def test_use_sleep_reaches_the_solver(extension, use_sleep):
    """Scene.verlet.use_sleep is the Simulation's sleep switch: a box dropped 1 cm onto the
    floor sleeps after a second of rest with it on, never with it off (issue 9)."""
    from verlet_physics.addon import simscene

    scene = scenes.set_range(1, 40, substeps=20)
    scene.use_gravity = True
    scene.verlet.use_sleep = use_sleep
    scenes.ground()
    scenes.cube(size=0.2, location=(0.0, 0.0, 0.11))
    scene.frame_set(1)
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    assert ss.sim.sleep.enabled is use_sleep
    for f in range(2, 41):
        scene.frame_set(f)
        ss.step_to(bpy.context.evaluated_depsgraph_get())
    assert bool(ss.sim.sleeping.all()) is use_sleep
