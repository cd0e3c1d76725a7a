"""How often a self-colliding flag in gusty wind passes through itself: a survey over the
wind's seeds (docs/contact.md, "Rounds", and its known limits).

Scene: a flag like the demo's (scripts/demo.py) in the solver alone: 1.2 x 0.8 m, 30 x 20
vertices, 100 g/m^2, pinned along its edge at x = 0, add_cloth(radius=thickness,
self_collision=True), in wind towards (1, 0.25, 0) with turbulence 0.6, 120 frames at 24 fps,
the product's default substeps and contact iterations unless given. For each seed of the
gusts it prints the frames in which the flag crossed itself (at the frame's end, the mesh
edges that pass through a triangle they do not touch: solver.geometry.self_intersections),
the most edges in one frame, the longest run of crossed frames, the first crossed frame and
the seconds the drop took; then the drops that crossed and the crossed frames in all. The
gusts are chaotic: one change anywhere moves which seeds cross, so compare totals over many
seeds, never a seed. A script, not a test: nothing is asserted.

    .venv/bin/python benchmarks/flag_crossings.py --seeds 1 30
    .venv/bin/python benchmarks/flag_crossings.py --seeds 1 30 --thickness 0.004 --wind 8
    .venv/bin/python benchmarks/flag_crossings.py --seeds 1 30 --substeps 80
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from solver import Builder, Simulation  # noqa: E402
from solver.geometry import self_intersections  # noqa: E402

SIZE = (1.2, 0.8)            # [m] along the wind (x), height (z): the demo's FLAG_SIZE
RES = (30, 20)               # vertices along x, z: the demo's flag_res
AREAL_MASS = 0.1             # [kg/m^2]
TOWARDS = (1.0, 0.25, 0.0)   # the demo's wind direction
TURBULENCE = 0.6
FPS = 24


def flag(seed, thickness, wind, backend, **settings):
    """The Simulation of the flag in gusts drawn from ``seed`` (settings: Simulation's), and
    its contact triangles."""
    (fw, fh), (nx, nz) = SIZE, RES
    u, w = np.meshgrid(np.linspace(0.0, fw, nx), np.linspace(-fh / 2, fh / 2, nz))
    x = np.column_stack([u.ravel(), np.zeros(nx * nz), w.ravel() + 2.0])
    ids = np.arange(nx * nz).reshape(nz, nx)
    quads = np.stack([ids[:-1, :-1], ids[:-1, 1:], ids[1:, 1:], ids[1:, :-1]], -1).reshape(-1, 4)
    b = Builder()
    particles = b.add_cloth(x, quads, mass=AREAL_MASS * fw * fh / (nx * nz), radius=thickness,
                            self_collision=True)
    b.pin(particles[u.ravel() == 0.0])
    model = b.build()
    sim = Simulation(model, backend=backend, **settings)
    d = np.array(TOWARDS) / np.linalg.norm(TOWARDS)
    sim.set_wind(velocity=tuple(wind * d), turbulence=TURBULENCE, seed=seed)
    return sim, model.contact_tris


def drop(seed, frames, thickness, wind, backend, **settings):
    """(crossed edges per frame (frames,) int64, seconds) of one drop."""
    t0 = time.perf_counter()
    sim, tris = flag(seed, thickness, wind, backend, **settings)
    crossed = np.zeros(frames, np.int64)
    for f in range(frames):
        sim.step(1.0 / FPS)
        crossed[f] = len(self_intersections(sim.x, tris))
    return crossed, time.perf_counter() - t0


def longest_run(hit):
    """The most consecutive True in hit (k,) bool."""
    best = run = 0
    for h in hit:
        run = run + 1 if h else 0
        best = max(best, run)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs=2, default=(1, 30), metavar=("FIRST", "LAST"))
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--thickness", type=float, default=0.008, help="[m] the flag's radius")
    ap.add_argument("--wind", type=float, default=5.0, help="[m/s] the wind's mean speed")
    ap.add_argument("--substeps", type=int, default=None)
    ap.add_argument("--contact-iterations", type=int, default=None)
    ap.add_argument("--backend", default="numba")
    args = ap.parse_args(argv)
    settings = {k: v for k, v in (("substeps", args.substeps),
                                  ("contact_iterations", args.contact_iterations))
                if v is not None}
    print(f"flag {RES[0]} x {RES[1]}, {SIZE[0]} x {SIZE[1]} m, thickness {args.thickness * 1e3:g}"
          f" mm, wind {args.wind:g} m/s (turbulence {TURBULENCE}), {args.frames} frames, "
          f"{settings or 'default settings'}, {args.backend}")
    drops = frames = 0
    seconds = []
    for seed in range(args.seeds[0], args.seeds[1] + 1):
        crossed, s = drop(seed, args.frames, args.thickness, args.wind, args.backend, **settings)
        hit = crossed > 0
        seconds.append(s)
        drops += bool(hit.any())
        frames += int(hit.sum())
        first = int(np.argmax(hit)) if hit.any() else -1
        print(f"seed {seed}: crossed frames {int(hit.sum())}, worst {int(crossed.max())} edges, "
              f"longest run {longest_run(hit)}, first {first} ({s:.1f} s)", flush=True)
    n = args.seeds[1] - args.seeds[0] + 1
    print(f"{drops} of {n} drops crossed, {frames} crossed frames in all; "
          f"{np.median(seconds):.1f} s a drop (median)")


if __name__ == "__main__":
    main()
