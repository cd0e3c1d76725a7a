"""Cloth self-collision benchmark: our solver against Blender's Cloth modifier with Self
Collisions on, in one run.

Scene: an N x N cloth, 1.8 m square, folded twice along x into three stacked layers 0.6 m wide
(a Z fold, 8 cm between layers, the lowest 0.3 m above the ground), dropped onto a ground
plane; 60 frames at 24 fps. The layers land on each other, so only self-collision keeps them
apart. Our side: the product's default settings, add_cloth(radius=THICKNESS,
self_collision=True) (layers rest 2 x THICKNESS apart: vertex radius + face thickness), a
ground plane. Blender's side: its Cloth modifier at quality 5 with our mass, our simulated time
per frame and our air drag (blender_cloth.like_for_like_settings), Self Collisions on with
self_distance_min = 2 x THICKNESS, a Collision modifier on the ground.

Printed per N: median ms per frame (ours on each backend, Blender's), the ratio ours / Blender's
(target: at most 0.1) and whether the cloth ever crossed itself: at every frame, the number of
mesh edges that pass through a triangle they do not touch (solver.geometry.self_intersections,
an exact segment-triangle test over the same triangles for both sides; the folded cloth starts
with none, and layers that passed through each other leave such edges behind), and the median
gap between each layer's vertices and the layer below (from the rest fold's partners). This is
a script, not a test: timings depend on the machine, so they are printed, never asserted.

    .venv/bin/python benchmarks/self_collision.py                 # N = 64, 128
    .venv/bin/python benchmarks/self_collision.py --no-blender    # our solver only
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import blender_cloth as scene  # noqa: E402  (mesh helpers, like-for-like settings)
from solver import Builder, Simulation, backend  # noqa: E402
from solver.geometry import self_intersections  # noqa: E402

SIZE = 1.8             # [m] side of the unfolded cloth
GAP = 0.08             # [m] between stacked layers
LOW = 0.3              # [m] height of the lowest layer
THICKNESS = 0.005      # [m] our particle radius; layers rest 2 x THICKNESS apart
FPS = 24


def folded_cloth(n):
    """(n*n, 3) positions and quads of the Z-folded cloth, and the crossing check's pairs
    (upper vertex, the vertex under it in the rest fold), two (k,) int64 arrays."""
    f1 = (n - 1) // 3
    f2 = 2 * f1
    L = SIZE * f1 / (n - 1)
    u = np.arange(n) * SIZE / (n - 1)
    v = np.linspace(-SIZE / 2, SIZE / 2, n)
    i = np.arange(n)
    layer = np.where(i <= f1, 0, np.where(i <= f2, 1, 2))
    x = np.where(layer == 0, u, np.where(layer == 1, 2 * L - u, u - 2 * L))
    z = LOW + GAP * layer
    X = np.repeat(x[:, None], n, 1)
    Y = np.repeat(v[None, :], n, 0)
    Z = np.repeat(z[:, None], n, 1)
    pos = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    up, down = [], []
    for i_up in range(n):
        if layer[i_up] == 1:
            i_dn = 2 * f1 - i_up
        elif layer[i_up] == 2:
            i_dn = 2 * f2 - i_up
            if i_dn < f1 + 2:
                continue
        else:
            continue
        if min(abs(i_up - f1), abs(i_up - f2), abs(i_dn - f1), abs(i_dn - f2)) < 2:
            continue                            # the fold columns bend: left out
        up.append(idx[i_up, 2:-2])
        down.append(idx[i_dn, 2:-2])
    return pos, quads, np.concatenate(up), np.concatenate(down)


def crossings(x, tris):
    """How many mesh edges pass through a triangle of the cloth they do not touch."""
    return len(self_intersections(x, tris))


def triangles(n):
    """(t, 3) int64 the cloth's triangles, as our Builder makes them (the same vertex ids on
    both sides)."""
    x, quads, _, _ = folded_cloth(n)
    b = Builder()
    b.add_cloth(x, quads, self_collision=True)
    return b.build().contact_tris


def fold_builder(n):
    """The benchmark's scene as a Builder (the Z-folded cloth, self-colliding, over the
    ground), and the crossing check's pairs (folded_cloth's up, down)."""
    x, quads, up, down = folded_cloth(n)
    b = Builder()
    b.add_cloth(x, quads, radius=THICKNESS, self_collision=True)
    b.add_collider("plane")
    return b, up, down


def run_ours(n, backend_name, frames=60):
    b, up, down = fold_builder(n)
    t0 = time.perf_counter()
    model = b.build()
    sim = Simulation(model, backend=backend_name)
    build_ms = (time.perf_counter() - t0) * 1e3
    tris = model.contact_tris
    ms, worst = [], 0
    for _ in range(frames):
        t = time.perf_counter()
        sim.step(1.0 / FPS)
        ms.append((time.perf_counter() - t) * 1e3)
        worst = max(worst, crossings(sim.x, tris))
    gap = np.median(sim.x[up, 2] - sim.x[down, 2])
    return {"median_ms": float(np.median(ms)), "crossed": worst, "gap": float(gap),
            "build_ms": build_ms, "mass": float(sim.model.particle_mass.sum()),
            "contacts": len(sim.contacts.body_idx)}


def run_blender(n, total_mass, frames=60):
    import bpy
    x, quads, up, down = folded_cloth(n)
    like = scene.like_for_like_settings(total_mass, n * n, FPS, 1.0, SIZE * SIZE)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    sc = bpy.context.scene
    sc.render.fps, sc.render.fps_base = FPS, 1.0
    sc.frame_start, sc.frame_end = 1, frames + 1
    sc.gravity = (0.0, 0.0, -9.81)
    h = 10.0
    gv = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]])
    ground = bpy.data.objects.new("Ground", scene._mesh_from_arrays(bpy, "Ground", gv,
                                                                      [[0, 1, 2, 3]]))
    sc.collection.objects.link(ground)
    ground.modifiers.new("Collision", "COLLISION")
    cloth = bpy.data.objects.new("Cloth", scene._mesh_from_arrays(bpy, "Cloth", x, quads))
    sc.collection.objects.link(cloth)
    mod = cloth.modifiers.new("Cloth", "CLOTH")
    mod.settings.quality = scene.CLOTH_QUALITY
    for k, val in like.items():
        setattr(mod.settings, k, val)
    mod.collision_settings.use_collision = True
    mod.collision_settings.use_self_collision = True
    mod.collision_settings.self_distance_min = 2 * THICKNESS
    mod.point_cache.frame_start, mod.point_cache.frame_end = 1, frames + 1
    sc.frame_set(1)
    tris = triangles(n)
    ms, worst = [], 0
    for f in range(2, frames + 2):
        t = time.perf_counter()
        sc.frame_set(f)
        ms.append((time.perf_counter() - t) * 1e3)
        pos = scene.evaluated_positions(cloth, bpy.context.evaluated_depsgraph_get())
        worst = max(worst, crossings(pos, tris))
    gap = np.median(pos[up, 2] - pos[down, 2])
    return {"median_ms": float(np.median(ms)), "crossed": worst, "gap": float(gap),
            "version": bpy.app.version_string}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--no-blender", action="store_true")
    ap.add_argument("--backends", nargs="+", default=["numba"])
    args = ap.parse_args(argv)
    if "numba" in args.backends and backend.numba_kernels() is not None:
        backend.warm_up()
    for n in args.sizes:
        ours = {}
        for name in args.backends:
            r = run_ours(n, name, args.frames)
            ours[name] = r
            print(f"N={n:4d} ours[{name}]: {r['median_ms']:9.1f} ms/frame, edges through the cloth "
                  f"(worst frame) {r['crossed']}, median layer gap {r['gap'] * 1e3:.1f} mm, "
                  f"{r['contacts']} contacts at the end", flush=True)
        if not args.no_blender:
            mass = next(iter(ours.values()))["mass"]
            bl = run_blender(n, mass, args.frames)
            print(f"N={n:4d} Blender {bl['version']} Cloth, Self Collisions: "
                  f"{bl['median_ms']:9.1f} ms/frame, edges through the cloth (worst frame) "
                  f"{bl['crossed']}, median layer gap {bl['gap'] * 1e3:.1f} mm", flush=True)
            for name, r in ours.items():
                ratio = r["median_ms"] / bl["median_ms"]
                print(f"N={n:4d} ratio ours[{name}] / Blender = {ratio:.3f} "
                      f"({'MET' if ratio <= 0.1 else 'MISSED'} target 0.1)", flush=True)


if __name__ == "__main__":
    main()
