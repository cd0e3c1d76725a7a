"""The headless demo: a Blender scene built in code, simulated by the extension, baked, exported
and rendered, with a printed summary of timings and physics facts.

    bash scripts/demo.sh                       # set up .venv, then run this
    .venv/bin/python scripts/demo.py [--frames N] [--small] [--out DIR] [--no-render]

The scene (one Verlet simulation, all kinds at once, in gusty wind):

- a flag (subdivided plane, CLOTH) pinned by its vertex group "Pole" to a pole (cylinder,
  COLLIDER), blown out by the wind;
- a tablecloth (CLOTH) dropped over a table (a cube scaled into a table top, COLLIDER box) with a
  ball on it (UV sphere, COLLIDER);
- a tuft of grass (PLANT: thin strips, vertex group "Root" pinned) swaying in the wind;
- a jelly cube (SOFT, subdivided cube) and a crate (RIGID, cube) dropped onto a ramp (thin box,
  COLLIDER), and a ground plane (COLLIDER);
- a twelve-bone ragdoll (RAGDOLL armature with a skinned mesh) tumbling down a flight of stairs
  behind the table, and a rig walking toward the camera on a keyframed walk cycle that is
  released (its Animated switch keyed off) mid-stride and falls (scripts/demo_ragdoll.py);
- contact between bodies (scripts/demo_contact.py): a sheet (CLOTH, self-collision) dropped over
  a statue, Suzanne on a plinth, which AUTO makes a mesh collider; six crates (RIGID) dropped in
  layers into a pile; and the flag collides with itself where the gusts fold it.

Outputs in out/ (or --out): demo.blend with its bake cache beside it (verlet_cache/demo/),
demo.abc (verlet.export_alembic), pc2/*.pc2 (verlet.export_pc2) and demo.png, a contact sheet of
8 rendered frames (Workbench when it runs headless, else EEVEE, else Cycles on the CPU).

The scene builder (build_scene) and the measurements (measure) are importable, so
tests/blender/test_demo.py runs the same scene at a reduced size and checks the numbers.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from extension_loader import load_extension  # noqa: E402,F401  (also used by the tests)
import demo_contact  # noqa: E402  (a sheet on a mesh statue, a crate pile, the flag's folds)
import demo_ragdoll  # noqa: E402  (the ragdolls: stairs and a released walk cycle)
from demo_render import configure_engine, render_contact_sheet, setup_view  # noqa: E402
from demo_scene import (  # noqa: E402  (layout, sizes and measurements)
    BALL_RADIUS, BALL_XY, CRATE_SIZE, FLAG_SIZE, GRASS_XY, JELLY_SIZE, POLE_HEIGHT, POLE_XY,
    RAMP_ANGLE, RAMP_CENTRE, RAMP_SIZE, TABLE_SIZE, TABLE_TOP, TABLE_XY, WIND, Config, measure,
    world_frames)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------------- the extension
def fresh_session():
    """An empty Blender session with the extension registered. Returns the extension module."""
    import bpy
    ext = load_extension()
    if hasattr(bpy.types.Scene, "verlet"):
        ext.unregister()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext.register()
    return ext


# ---------------------------------------------------------------------- building
def _set(settings, name, value, used):
    """settings.name = value, recording the name in ``used``. A setting the add-on does not
    have raises AttributeError naming it and its owner: the demo used to skip such settings and
    list them at the end, so a renamed property quietly baked a different scene."""
    if not hasattr(settings, name):
        owner = settings.id_data
        raise AttributeError(f"demo: {type(owner).__name__} '{owner.name}' has no Verlet setting "
                             f"'{name}' (the demo sets it to {value!r}); the add-on's "
                             "properties and the demo's scene disagree")
    setattr(settings, name, value)
    used.add(name)


def _active():
    import bpy
    return bpy.context.view_layer.objects.active


def _colour(obj, rgba):
    obj.color = rgba


def _group(obj, name, index):
    vg = obj.vertex_groups.new(name=name)
    vg.add([int(i) for i in index], 1.0, "REPLACE")
    return vg


def _mesh_object(name, verts, faces, location=(0, 0, 0)):
    import bpy
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], [], [tuple(map(int, f)) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    bpy.context.scene.collection.objects.link(obj)
    return obj


def build_scene(cfg=None):
    """Build the demo scene in the current (empty, extension registered) Blender session.
    Returns {"objects": {role: object}, "used": property names set beyond CONTRACT.md}.
    A setting the add-on does not have raises AttributeError naming it (see _set)."""
    import bmesh
    import bpy
    cfg = cfg or Config()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, cfg.frames
    scene.frame_set(1)
    used = set()
    sv = scene.verlet
    sv.substeps = cfg.substeps
    sv.iterations = 1
    for key, value in WIND.items():
        _set(sv, key, value, used)
    objs = {}

    def kind(obj, k, **settings):
        obj.verlet.kind = k
        for key, value in settings.items():
            if key in ("mass", "friction", "thickness", "pin_group", "collider_shape"):
                setattr(obj.verlet, key, value)          # in CONTRACT.md
            else:
                _set(obj.verlet, key, value, used)
        return obj

    # ground
    bpy.ops.mesh.primitive_plane_add(size=40.0, location=(0.0, 0.0, 0.0))
    ground = _active()
    ground.name = "Ground"
    kind(ground, "COLLIDER", friction=0.8)
    _colour(ground, (0.42, 0.47, 0.40, 1.0))
    objs["ground"] = ground

    # the table: a cube scaled into a top, legs (display only), a ball on top
    tx, ty = TABLE_XY
    sx, sy, sz = TABLE_SIZE
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(tx, ty, TABLE_TOP - sz / 2))
    top = _active()
    top.name = "TableTop"
    top.scale = (sx, sy, sz)
    kind(top, "COLLIDER", friction=0.6)
    _colour(top, (0.45, 0.28, 0.15, 1.0))
    objs["table"] = top
    for i, (dx, dy) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(tx + dx * (sx / 2 - 0.12),
                                                            ty + dy * (sy / 2 - 0.12),
                                                            (TABLE_TOP - sz) / 2))
        leg = _active()
        leg.name = f"TableLeg{i}"
        leg.scale = (0.06, 0.06, TABLE_TOP - sz)
        _colour(leg, (0.38, 0.23, 0.12, 1.0))
    bx, by = BALL_XY
    bpy.ops.mesh.primitive_uv_sphere_add(radius=BALL_RADIUS, segments=32, ring_count=16,
                                         location=(bx, by, TABLE_TOP + BALL_RADIUS))
    ball = _active()
    ball.name = "Ball"
    bpy.ops.object.shade_smooth()
    kind(ball, "COLLIDER", friction=0.5)
    _colour(ball, (0.85, 0.15, 0.1, 1.0))
    objs["ball"] = ball

    # the tablecloth: a subdivided plane above the table (a heavy linen: 0.45 kg/m^2, so the
    # gusts ruffle it without blowing it away)
    cw, cd = sx + 0.7, sy + 0.7
    nx, ny = cfg.cloth_res
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=nx - 1, y_subdivisions=ny - 1, size=1.0,
                                    location=(tx, ty, TABLE_TOP + 0.45))
    cloth = _active()
    cloth.name = "Tablecloth"
    cloth.scale = (cw, cd, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    bpy.ops.object.shade_smooth()
    kind(cloth, "CLOTH", mass=0.45 * cw * cd, thickness=0.015, friction=0.5)
    _colour(cloth, (0.92, 0.92, 0.86, 1.0))
    objs["tablecloth"] = cloth

    # the flag and its pole
    px, py = POLE_XY
    bpy.ops.mesh.primitive_cylinder_add(radius=0.04, depth=POLE_HEIGHT, vertices=16,
                                        location=(px, py, POLE_HEIGHT / 2))
    pole = _active()
    pole.name = "Pole"
    kind(pole, "COLLIDER", friction=0.3)
    _colour(pole, (0.75, 0.75, 0.78, 1.0))
    objs["pole"] = pole
    fw, fh = FLAG_SIZE
    fx, fz = cfg.flag_res
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=fx - 1, y_subdivisions=fz - 1, size=1.0,
                                    location=(px + 0.05 + fw / 2, py, POLE_HEIGHT - 0.05 - fh / 2),
                                    rotation=(math.pi / 2, 0.0, 0.0))
    flag = _active()
    flag.name = "Flag"
    flag.scale = (fw, fh, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    bpy.ops.object.shade_smooth()
    local = np.array([v.co[:] for v in flag.data.vertices])
    _group(flag, "Pole", np.nonzero(np.isclose(local[:, 0], local[:, 0].min()))[0])
    # it collides with itself where a gust folds it (its steps run in rounds where the gusts
    # throw it beyond its contacts' boxes: solver/simulation.py)
    kind(flag, "CLOTH", mass=0.1 * fw * fh, pin_group="Pole",
         thickness=demo_contact.FLAG_THICKNESS, self_collision=True)
    _colour(flag, (0.1, 0.3, 0.85, 1.0))
    objs["flag"] = flag

    # a tuft of grass: thin upright strips fanned around a point, roots pinned
    gx, gy = GRASS_XY
    verts, faces, root = [], [], []
    rng = np.random.default_rng(11)
    for b in range(cfg.blades):
        a = 2 * np.pi * b / cfg.blades + rng.uniform(-0.3, 0.3)
        height = rng.uniform(0.6, 0.9)
        lean = rng.uniform(0.05, 0.15)                 # outward lean of the tip [m]
        half = 0.025
        c, s = np.cos(a), np.sin(a)
        base = len(verts)
        n = cfg.blade_segments
        for k in range(n + 1):
            t = k / n
            w = half * (1.0 - 0.7 * t)                 # tapers to the tip
            r = 0.04 + lean * t * t                    # curves outwards
            cx, cy, cz = r * c, r * s, height * t
            # the blade's width runs across the radial direction
            verts.append((cx - w * s, cy + w * c, cz))
            verts.append((cx + w * s, cy - w * c, cz))
        for k in range(n):
            i = base + 2 * k
            faces.append((i, i + 1, i + 3, i + 2))
        # the root pin group holds the two lowest rows: a strip pinned by one row only hinges
        # about that row (no bend stick crosses it) and falls flat
        root += [base, base + 1, base + 2, base + 3]
    grass = _mesh_object("Grass", verts, faces, location=(gx, gy, 0.0))
    _group(grass, "Root", root)
    kind(grass, "PLANT", mass=0.003 * cfg.blades, pin_group="Root", bend_stiffness=0.75)
    _colour(grass, (0.25, 0.65, 0.15, 1.0))
    objs["grass"] = grass

    # the ramp, the crate and the jelly
    rx, ry = RAMP_CENTRE
    rl, rw, rt = RAMP_SIZE
    ang = math.radians(RAMP_ANGLE)
    # the low (+x) end rests on the ground
    rz = (rl / 2) * math.sin(ang) + (rt / 2) * math.cos(ang)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(rx, ry, rz), rotation=(0.0, ang, 0.0))
    ramp = _active()
    ramp.name = "Ramp"
    ramp.scale = (rl, rw, rt)
    kind(ramp, "COLLIDER", friction=0.5)
    _colour(ramp, (0.6, 0.55, 0.45, 1.0))
    objs["ramp"] = ramp

    def above_ramp(x, y, lift):
        # height of the ramp's top surface at x, plus lift
        return rz + (rt / 2) / math.cos(ang) - (x - rx) * math.tan(ang) + lift

    cx_, cy_ = rx - 0.55, ry - 0.1
    bpy.ops.mesh.primitive_cube_add(size=CRATE_SIZE,
                                    location=(cx_, cy_, above_ramp(cx_, cy_, 0.55)),
                                    rotation=(math.radians(8), math.radians(-12), math.radians(20)))
    crate = _active()
    crate.name = "Crate"
    kind(crate, "RIGID", mass=12.0)
    _colour(crate, (0.7, 0.45, 0.2, 1.0))
    objs["crate"] = crate

    # the jelly lands on the ground at the ramp's foot: a soft cube on a slope tumbles down it
    jx, jy = rx + 0.3, ry - RAMP_SIZE[1] / 2 - 0.45
    bpy.ops.mesh.primitive_cube_add(size=JELLY_SIZE, location=(jx, jy, 0.8),
                                    rotation=(0.0, 0.0, math.radians(-15)))
    jelly = _active()
    jelly.name = "Jelly"
    bm = bmesh.new()
    bm.from_mesh(jelly.data)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:], cuts=cfg.jelly_cuts, use_grid_fill=True)
    bm.to_mesh(jelly.data)
    bm.free()
    jelly.data.update()
    # soft through shape matching and volume; damping stills its wobble
    kind(jelly, "SOFT", mass=3.0, shape_stiffness=0.25, stretch_stiffness=1.0, use_volume=True,
         pressure=1.0, damping=0.9)
    _colour(jelly, (0.2, 0.85, 0.3, 1.0))
    objs["jelly"] = jelly

    objs.update(demo_contact.add(cfg, kind))
    objs.update(demo_ragdoll.add(scene, cfg))
    used.update({"animated"})
    bpy.context.view_layer.update()
    return {"objects": objs, "used": used}


# ---------------------------------------------------------------------- the run
def bake(scene):
    import bpy
    t = time.perf_counter()
    result = bpy.ops.verlet.bake("EXEC_DEFAULT")
    seconds = time.perf_counter() - t
    if "FINISHED" not in result or scene.get("verlet_error"):
        raise RuntimeError(f"bake failed: {scene.get('verlet_error', result)}")
    return seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=None, help="frames to simulate (default 120)")
    ap.add_argument("--small", action="store_true", help="the test's reduced scene")
    ap.add_argument("--out", default=os.path.join(ROOT, "out"), help="output folder")
    ap.add_argument("--no-render", action="store_true", help="skip the contact sheet")
    args = ap.parse_args(argv)
    cfg = Config.small() if args.small else Config()
    if args.frames:
        cfg.frames = args.frames
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "pc2"), exist_ok=True)
    timings = {}

    t_all = time.perf_counter()
    t = time.perf_counter()
    import bpy
    ext = fresh_session()
    timings["start Blender + register"] = time.perf_counter() - t

    t = time.perf_counter()
    built = build_scene(cfg)
    objs = built["objects"]
    scene = bpy.context.scene
    setup_view(scene)
    timings["build scene"] = time.perf_counter() - t

    blend = os.path.join(out, "demo.blend")
    # save first, so the bake cache is written to disk beside the .blend
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    # the solver's kernels loaded (compiled, the first time on a machine) before the bake is
    # timed, so that its figure per frame is the warm one the targets read
    t = time.perf_counter()
    ext.addon.kernels.ensure_ready()
    timings["load solver kernels"] = time.perf_counter() - t
    bake_s = bake(scene)
    timings["bake"] = bake_s
    bpy.ops.wm.save_mainfile()

    t = time.perf_counter()
    abc = os.path.join(out, "demo.abc")
    r = bpy.ops.verlet.export_alembic("EXEC_DEFAULT", filepath=abc)
    timings["export Alembic"] = time.perf_counter() - t
    if "FINISHED" not in r:
        raise RuntimeError("Alembic export failed")
    t = time.perf_counter()
    r = bpy.ops.verlet.export_pc2("EXEC_DEFAULT", directory=os.path.join(out, "pc2"))
    timings["export PC2"] = time.perf_counter() - t
    if "FINISHED" not in r:
        raise RuntimeError("PC2 export failed")

    t = time.perf_counter()
    facts = measure(ext, objs)
    facts.update(demo_ragdoll.measure(ext, objs))
    facts.update(demo_contact.measure(ext, objs, world_frames))
    timings["measure"] = time.perf_counter() - t

    engine = None
    png = os.path.join(out, "demo.png")
    if not args.no_render:
        t = time.perf_counter()
        engine = configure_engine(scene, os.path.join(out, "frames", "probe.png"))
        n = cfg.frames
        frames = sorted({1, *(int(round(1 + (n - 1) * k / 7)) for k in range(1, 8))})
        render_contact_sheet(scene, frames, png, os.path.join(out, "frames"))
        timings[f"render {len(frames)} frames ({engine})"] = time.perf_counter() - t
    scene.frame_set(cfg.frames)
    bpy.ops.wm.save_mainfile()
    timings["total"] = time.perf_counter() - t_all

    report(cfg, objs, built, facts, timings, bake_s, out, engine, ext)
    return facts


def report(cfg, objs, built, facts, timings, bake_s, out, engine, ext):
    sim_objs = [o for o in objs.values() if o.verlet.kind not in ("COLLIDER", "NONE")
                and o.type == "MESH"]
    verts = sum(len(o.data.vertices) for o in sim_objs)
    steps = cfg.frames - 1
    backend = ext.solver.backend.choose(None)
    print()
    print("Verlet Physics demo")
    print(f"  scene: {len(sim_objs)} simulated objects, {verts} particles, "
          f"{sum(o.verlet.kind == 'COLLIDER' for o in objs.values())} colliders; "
          f"{cfg.frames} frames at 24 fps, "
          f"{cfg.substeps} substeps x 1 iteration, {backend} backend")
    print(f"    tablecloth {cfg.cloth_res[0]}x{cfg.cloth_res[1]}, flag {cfg.flag_res[0]}x"
          f"{cfg.flag_res[1]}, grass {cfg.blades} blades, jelly cube with {cfg.jelly_cuts} cuts, "
          f"sheet {cfg.sheet_res}x{cfg.sheet_res} on a mesh statue, {cfg.pile_crates} crates "
          "in a pile")
    print("  timings [s]:")
    for k, v in timings.items():
        print(f"    {k:<34} {v:7.2f}")
    print(f"    {'bake per frame [ms]':<34} {1e3 * bake_s / max(steps, 1):7.1f}")
    print(f"  wind: {WIND['wind_strength']} m/s towards {WIND['wind_direction']}, turbulence "
          f"{WIND['wind_turbulence']}")
    print(f"  Scene/Object.verlet properties used beyond CONTRACT.md: {sorted(built['used'])}")
    f = facts
    cm = 100.0
    print("  physics:")
    print(f"    tablecloth: centre {f['cloth_centre_above_top'] * cm:+.1f} cm from the table top "
          f"(median over the top {f['cloth_on_top_gap'] * cm:+.1f} cm; collision thickness "
          f"{objs['tablecloth'].verlet.thickness * cm:.1f} cm)")
    print(f"      {f['cloth_fraction_hanging'] * 100:.0f} % hangs below the top, hem down to "
          f"z = {f['cloth_lowest']:.2f} m (top at {TABLE_TOP} m); over the ball it peaks at "
          f"{f['cloth_peak_over_ball']:.2f} m (ball top {TABLE_TOP + 2 * BALL_RADIUS:.2f} m)")
    print(f"      edge strain max {f['cloth_max_strain'] * 100:.1f} % (p99 "
          f"{f['cloth_p99_strain'] * 100:.1f} %); fastest vertex at the end "
          f"{f['cloth_speed_end']:.2f} m/s (the hem in the gusts)")
    print(f"    flag: free edge moved {f['flag_tip_disp_end']:.2f} m from rest at the end (max "
          f"{f['flag_tip_disp_max']:.2f} m, flutter std {f['flag_tip_disp_std_2nd_half']:.3f} m);")
    print(f"      it stands {f['flag_reach_along_wind']:.2f} m out from the pole along the wind "
          f"(width {FLAG_SIZE[0]} m), {f['flag_tip_height_drop']:.2f} m below its rest height; "
          f"pins off by {f['flag_pin_error'] * 1e3:.2f} mm")
    print(f"    grass: tips sway up to {f['grass_tip_sway_max'] * cm:.1f} cm (range "
          f"{f['grass_tip_sway_range_2nd_half'] * cm:.1f} cm in the 2nd half), stand at "
          f"{f['grass_tip_height_ratio'] * 100:.0f} % of their height; roots off by "
          f"{f['grass_root_error'] * 1e3:.2f} mm")
    print(f"    crate: rests on the {f['crate_on']} ({f['crate_gap'] * cm:+.1f} cm gap), "
          f"{f['crate_speed_end']:.3f} m/s at the end; slid {f['crate_slide']:.2f} m, "
          f"rebound {f['crate_rebound'] * 100:.0f} % of its {f['crate_drop']:.2f} m drop (a "
          f"corner at most {f['crate_lift'] * 1e3:.1f} mm off the ramp after it touched)")
    print(f"    jelly: volume ratio {f['jelly_volume_ratio_end']:.3f} at the end (range "
          f"{f['jelly_volume_ratio_min']:.3f}..{f['jelly_volume_ratio_max']:.3f}); wobble "
          f"(RMS off a rigid motion) up to {f['jelly_wobble_max'] * 100:.1f} % of its size;")
    print(f"      {f['jelly_gap_ground'] * cm:+.1f} cm from the ground, "
          f"{f['jelly_speed_end']:.3f} m/s "
          f"at the end, rebound {f['jelly_rebound'] * 100:.0f} % of its drop")
    for line in demo_contact.lines(f) + demo_ragdoll.lines(f):
        print(line)
    print(f"  outputs in {out}: demo.blend (+ verlet_cache/), demo.abc, pc2/*.pc2"
          + (f", demo.png ({engine})" if engine else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
