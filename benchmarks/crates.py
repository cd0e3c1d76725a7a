"""Crate pile benchmark: our coupled solver against Blender's Rigid Body World (Bullet), in one run.

Scene (both halves build the same one): ``count`` cubes of side SIDE (0.5 m) and 20 kg, in
layers of a 5 x 5 grid 0.7 m apart, each layer 0.8 m above the last and turned a little (a fixed,
seeded yaw and tilt per crate, so they land on edges and corners), dropped on a ground plane;
FRAMES frames at 24 fps. Our side: every crate is a RIGID body as the add-on builds one (its 8
corners, one rigid shape-matching cluster, its 6 faces as the contact surface), at the product's
default substeps and iterations. Blender's side: Rigid Body World at its defaults (10 substeps
per frame, 10 solver iterations), Box shape, the same mass and friction 0.5, a passive ground.

Printed: median and mean ms per frame for each (ours twice: at the product's defaults and
with two contact passes per iteration, Simulation(contact_iterations=2)), the ratio ours /
Bullet's, how many crates rest at the end (speed of every corner below REST_SPEED over the
last frame), the deepest corner found inside another crate and the lowest corner (ground
penetration). A script, not a test: timings
depend on the machine.

    .venv/bin/python benchmarks/crates.py                 # 100 crates
    .venv/bin/python benchmarks/crates.py --count 16      # a quicker run
    .venv/bin/python benchmarks/crates.py --no-blender
    .venv/bin/python benchmarks/crates.py --drops 1-12 --frames 240   # ours only, per drop

``--drops`` surveys several drops (a pile is chaotic: one drop's figures are no rule): ours
only, at the defaults, one line per drop (median ms/frame, resting and asleep at the end, asleep
at 5 s or at the end of a shorter run, the first frame from which every crate stays asleep) and
a line of means.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from solver import Builder, Simulation  # noqa: E402

SIDE = 0.5            # [m] crate edge
MASS = 20.0           # [kg] per crate
FRICTION = 0.5
FPS = 24
FRAMES = 120
REST_SPEED = 0.05     # [m/s] a crate rests when every corner is slower than this
GRID = 5
SPACING = 0.7         # [m] between crate centres in a layer
LAYER = 0.8           # [m] between layers
# cube corners and faces (outward winding), unit cube centred on the origin
CORNERS = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
FACES = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                  [1, 5, 7, 3]])


def _rotation(yaw, tilt):
    cy, sy, ct, st = np.cos(yaw), np.sin(yaw), np.cos(tilt), np.sin(tilt)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    rx = np.array([[1, 0, 0], [0, ct, -st], [0, st, ct]])
    return rz @ rx


def crate_frames(count, seed=7):
    """(count, 3) centres [m] and (count, 3, 3) rotations of the crates at the start."""
    rng = np.random.default_rng(seed)
    i = np.arange(count)
    layer, cell = i // (GRID * GRID), i % (GRID * GRID)
    centres = np.stack([(cell % GRID - (GRID - 1) / 2) * SPACING,
                        (cell // GRID - (GRID - 1) / 2) * SPACING,
                        SIDE / 2 + 0.3 + layer * LAYER], axis=1)
    centres[:, :2] += rng.uniform(-0.05, 0.05, (count, 2))
    rotations = np.stack([_rotation(y, t) for y, t in
                          zip(rng.uniform(0, np.pi, count), rng.uniform(-0.3, 0.3, count))])
    return centres, rotations


def crate_corners(centres, rotations):
    """(count, 8, 3) world corners of crates at those frames."""
    return centres[:, None, :] + np.einsum("kij,vj->kvi", rotations, CORNERS * SIDE)


def deepest_overlap(corners, centres, rotations):
    """[m] how deep the deepest corner of one crate lies inside another (0 = none)."""
    local = np.einsum("kji,mkvj->mkvi", rotations,
                      corners[:, None, :, :] - centres[None, :, None, :])
    # local[m, k, v]: corner v of crate m in crate k's frame
    depth = SIDE / 2 - np.abs(local).max(axis=-1)           # > 0 inside crate k
    k = np.arange(len(centres))
    depth[k, k] = 0.0
    return float(max(depth.max(), 0.0))


def build_model(count, seed=7):
    """Our side of the scene: every crate a RIGID body as the add-on builds one, and the ground."""
    b = Builder()
    for c in crate_corners(*crate_frames(count, seed)):
        ids = b.add_particles(c, mass=MASS / 8, friction=FRICTION)
        b.add_shape_match(ids, stiffness=1.0, surface=ids[FACES])
    b.add_collider("plane", matrix=np.eye(4), friction=FRICTION)
    return b.build()


def run_ours(count, frames=FRAMES, contact_iterations=1, seed=7):
    sim = Simulation(build_model(count, seed), contact_iterations=contact_iterations)
    times, prev = [], None
    asleep = np.zeros(frames, np.int64)     # (frames,) crates asleep after each frame
    for f in range(frames):
        prev = sim.x.copy()
        t0 = time.perf_counter()
        sim.step(1.0 / FPS)
        times.append(time.perf_counter() - t0)
        asleep[f] = int(sim.sleeping.reshape(count, 8).all(axis=1).sum())
    x = sim.x.reshape(count, 8, 3)
    speed = np.linalg.norm(x - prev.reshape(count, 8, 3), axis=2).max(axis=1) * FPS
    centre = x.mean(axis=1)
    frame_rot = []
    for k in range(count):          # report only: the rigid fit of each crate's corners
        a = (x[k] - centre[k]).T @ (CORNERS * SIDE)
        u, _, vt = np.linalg.svd(a)
        frame_rot.append(u @ np.diag([1, 1, np.linalg.det(u @ vt)]) @ vt)
    return dict(times=np.array(times), resting=int((speed < REST_SPEED).sum()),
                overlap=deepest_overlap(x, centre, np.array(frame_rot)),
                lowest=float(x[:, :, 2].min()), asleep=asleep)


def all_asleep_from(asleep, count):
    """The first frame (1-based) from which every crate stays asleep to the end (asleep (F,)
    the crates asleep after each frame), or None when one is awake at the end."""
    awake = np.nonzero(asleep < count)[0]
    if not len(awake):
        return 1
    return int(awake[-1]) + 2 if awake[-1] + 1 < len(asleep) else None


def _drops(text):
    """'1-12' or '3,5,9' -> a list of seeds."""
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += list(range(int(lo), int(hi or lo) + 1))
    if not seeds:
        raise ValueError(f"--drops {text!r}: no drop (write the lower seed first: 3-5)")
    return seeds


def survey(count, frames, seeds):
    """Ours at the defaults over several drops, a line each and a line of means."""
    at5 = min(frames, 5 * FPS) - 1           # the frame at 5 s, or the last one
    early = f"asleep {(at5 + 1) / FPS:g} s"
    print(f"  {'drop':>4} {'median ms':>10} {'resting':>8} {'asleep':>7} {early:>11} "
          f"{'all asleep from frame':>22}")
    rows = []
    for seed in seeds:
        r = run_ours(count, frames, seed=seed)
        start = all_asleep_from(r["asleep"], count)
        rows.append((np.median(r["times"]) * 1e3, r["resting"], r["asleep"][-1],
                     r["asleep"][at5], start))
        print(f"  {seed:>4} {rows[-1][0]:>10.2f} {r['resting']:>8d} {r['asleep'][-1]:>7d} "
              f"{r['asleep'][at5]:>11d} {'never' if start is None else start:>22}", flush=True)
    m = np.array([row[:4] for row in rows], float).mean(axis=0)
    slept = sum(row[4] is not None for row in rows)
    print(f"  mean {m[0]:>10.2f} {m[1]:>8.1f} {m[2]:>7.1f} {m[3]:>11.1f}   every crate asleep "
          f"by frame {frames} in {slept} of {len(rows)} drops")


def run_bullet(count, frames=FRAMES, seed=7):
    import bpy
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = 1, frames + 1
    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.point_cache.frame_start, world.point_cache.frame_end = 1, frames + 1
    bpy.ops.mesh.primitive_plane_add(size=40)
    ground = bpy.context.active_object
    bpy.ops.rigidbody.object_add(type="PASSIVE")
    ground.rigid_body.friction = FRICTION
    centres, rotations = crate_frames(count, seed)
    crates = []
    from mathutils import Matrix
    for c, r in zip(centres, rotations):
        bpy.ops.mesh.primitive_cube_add(size=SIDE)
        ob = bpy.context.active_object
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = r, c
        ob.matrix_world = Matrix(m.tolist())
        bpy.ops.rigidbody.object_add(type="ACTIVE")
        ob.rigid_body.mass, ob.rigid_body.friction = MASS, FRICTION
        ob.rigid_body.collision_shape = "BOX"
        crates.append(ob)
    times = []
    scene.frame_set(1)
    prev = None
    for f in range(2, frames + 2):
        prev = [np.array(ob.matrix_world) for ob in crates]
        t0 = time.perf_counter()
        scene.frame_set(f)
        times.append(time.perf_counter() - t0)
    mats = np.array([np.array(ob.matrix_world) for ob in crates])
    corners = np.einsum("kij,vj->kvi", mats[:, :3, :3], CORNERS * SIDE) + mats[:, None, :3, 3]
    prev = np.array(prev)
    prev_c = np.einsum("kij,vj->kvi", prev[:, :3, :3], CORNERS * SIDE) + prev[:, None, :3, 3]
    speed = np.linalg.norm(corners - prev_c, axis=2).max(axis=1) * FPS
    return dict(times=np.array(times), resting=int((speed < REST_SPEED).sum()),
                overlap=deepest_overlap(corners, mats[:, :3, 3], mats[:, :3, :3]),
                lowest=float(corners[:, :, 2].min()))


def _line(name, r, count):
    t = r["times"] * 1e3
    print(f"  {name:<22} median {np.median(t):8.2f} ms/frame   mean {t.mean():8.2f}   "
          f"resting {r['resting']:3d}/{count}   deepest overlap {r['overlap'] * 1e3:6.1f} mm   "
          f"lowest corner z {r['lowest'] * 1e3:7.1f} mm"
          + (f"   asleep {r['asleep'][-1]:3d}" if "asleep" in r else ""))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--frames", type=int, default=FRAMES)
    p.add_argument("--no-blender", action="store_true")
    p.add_argument("--seed", type=int, default=7, help="the drop: each crate's yaw, tilt and "
                   "offset (a pile is chaotic: how many rest differs from drop to drop)")
    p.add_argument("--drops", help="survey these drops instead ('1-12' or '3,5,9'): ours "
                   "only, a line per drop")
    a = p.parse_args(argv)
    if a.drops:
        seeds = _drops(a.drops)
        print(f"crate pile: {a.count} crates of {SIDE} m, {a.frames} frames at {FPS} fps, "
              f"drops {a.drops}")
        survey(a.count, a.frames, seeds)
        return
    print(f"crate pile: {a.count} crates of {SIDE} m, {a.frames} frames at {FPS} fps, "
          f"seed {a.seed}")
    ours = run_ours(a.count, a.frames, seed=a.seed)
    _line("ours (Verlet)", ours, a.count)
    # Contact Iterations 2 (solver/simulation.py DEFAULT_CONTACT_ITERATIONS is 1)
    ours2 = run_ours(a.count, a.frames, contact_iterations=2, seed=a.seed)
    _line("ours, 2 contact passes", ours2, a.count)
    if not a.no_blender:
        bullet = run_bullet(a.count, a.frames, a.seed)
        _line("Blender Rigid Body", bullet, a.count)
        for name, r in (("defaults", ours), ("2 contact passes", ours2)):
            ratio = np.median(r["times"]) / np.median(bullet["times"])
            met = ratio <= 1.0 and r["resting"] == a.count
            print(f"  ratio ours ({name}) / Bullet (median ms/frame): {ratio:.3f} "
                  f"({'MET' if met else 'MISSED'}: target <= 1, every crate resting)")


if __name__ == "__main__":
    main()
