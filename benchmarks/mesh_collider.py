"""Mesh collider benchmark: a cloth draped on a deforming 50,000-triangle mesh.

Scene: an N x N cloth (default N = 64), 2 m square, dropped from 0.3 m above a UV sphere of
radius 0.5 m with about 50,000 triangles whose vertices wave (r = 0.5 (1 + 0.04 sin(3 theta +
2 t) sin(4 phi)), set every frame with Simulation.set_collider_vertices), 48 frames at 24 fps,
the product's default substeps and iterations.

Printed: ms per frame in total; the same run with the mesh replaced by an analytic sphere
collider of the same radius (no mesh at all); their difference, the mesh collision cost per
frame; and inside it the once-per-step part (the BVH refit over the step's motion and the
pseudo-normals, collision/mesh.py MeshSet.prepare: the kernels refit_meshes and mesh_normals).
Medians over the frames after the first two (which pay the compile). Timings are printed, never
asserted.

    .venv/bin/python benchmarks/mesh_collider.py
    .venv/bin/python benchmarks/mesh_collider.py --n 32 --frames 24 --backend numba
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from solver import Builder, Simulation  # noqa: E402
from solver.collision import mesh as mesh_module  # noqa: E402


def uv_sphere(nu, nv, radius):
    """(v, 3) vertices, (t, 3) triangles and the (theta, phi) of each vertex of a closed UV
    sphere: nu around, nv rings between the poles."""
    th = np.arange(nu) * 2 * np.pi / nu
    ph = np.arange(1, nv) * np.pi / nv
    T, P = np.meshgrid(th, ph, indexing="ij")
    v = np.column_stack([(np.sin(P) * np.cos(T)).ravel(), (np.sin(P) * np.sin(T)).ravel(),
                         np.cos(P).ravel()])
    v = np.vstack([v, [[0, 0, 1.0], [0, 0, -1.0]]])
    ang = np.vstack([np.column_stack([T.ravel(), P.ravel()]), [[0, 0], [0, np.pi]]])
    rings = nv - 1
    i = np.arange(nu)[:, None]
    j = np.arange(rings - 1)[None, :]
    a = i * rings + j
    b = ((i + 1) % nu) * rings + j
    f = [np.stack([a, b, b + 1], -1).reshape(-1, 3), np.stack([a, b + 1, a + 1], -1).reshape(-1, 3)]
    top, bottom = len(v) - 2, len(v) - 1
    i1 = np.arange(nu)
    f.append(np.column_stack([np.full(nu, top), ((i1 + 1) % nu) * rings, i1 * rings]))
    f.append(np.column_stack([np.full(nu, bottom), i1 * rings + rings - 1,
                              ((i1 + 1) % nu) * rings + rings - 1]))
    return v * radius, np.concatenate(f), ang


def cloth(n):
    g = np.linspace(-1.0, 1.0, n)
    x, y = np.meshgrid(g, g, indexing="ij")
    pts = np.column_stack([x.ravel(), y.ravel(), np.full(n * n, 0.8)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    return pts, quads


def run(n, frames, backend, mesh):
    b = Builder()
    b.add_cloth(*cloth(n))
    v, f, ang = uv_sphere(180, 140, 0.5)
    if mesh:
        k = b.add_collider("mesh", vertices=v, triangles=f)
    else:
        k = b.add_collider("sphere", radius=0.5)
    sim = Simulation(b.build(), backend=backend)
    prep = [0.0]                                   # this frame's refit + pseudo-normals
    original = sim.colliders.meshes.prepare

    def timed(*a):
        t = time.perf_counter()
        original(*a)
        prep[0] += time.perf_counter() - t
    sim.colliders.meshes.prepare = timed
    times, preps = [], []
    for i in range(frames):
        prep[0] = 0.0
        t0 = time.perf_counter()
        if mesh:
            r = 1 + 0.04 * np.sin(3 * ang[:, 0] + 2 * (i + 1) / 24) * np.sin(4 * ang[:, 1])
            sim.set_collider_vertices(k, v * r[:, None])
        sim.step(1 / 24)
        times.append(time.perf_counter() - t0)
        preps.append(prep[0])
    skip = min(2, frames - 1)                      # the first frames pay the compile
    return (1e3 * float(np.median(times[skip:])), 1e3 * float(np.median(preps[skip:])), len(f),
            sim)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--backend", default=None)
    args = ap.parse_args()
    total, prep, tris, sim = run(args.n, args.frames, args.backend, True)
    base, _, _, _ = run(args.n, args.frames, args.backend, False)
    print(f"backend {sim.backend}, cloth {args.n} x {args.n} ({args.n ** 2} particles), mesh "
          f"{tris} triangles (deforming), {sim.substeps} substeps x {sim.iterations} iterations, "
          f"BVH leaf <= {mesh_module.LEAF} triangles")
    print(f"total with the mesh collider     {total:8.1f} ms/frame (median)")
    print(f"same cloth, analytic sphere      {base:8.1f} ms/frame")
    print(f"mesh collision cost              {total - base:8.1f} ms/frame")
    print(f"  of which refit + pseudo-normals {prep:7.1f} ms/frame (median; once per step)")
    z = sim.x[:, 2]
    print(f"cloth height: min {z.min():.3f} m, max {z.max():.3f} m (draped over the 0.5 m sphere)")


if __name__ == "__main__":
    main()
