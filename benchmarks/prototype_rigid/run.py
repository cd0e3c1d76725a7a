"""Measure the rigid-contact prototype (README.md in this folder) against the product's contacts
on the same scenes, in one run: the crate pile of benchmarks/crates.py (100 crates, 120 frames
and on to 240), and the cube cases of tests/solver/test_bodies.py. A script, not a test.

    .venv/bin/python benchmarks/prototype_rigid/run.py             # everything (about 3 minutes)
    .venv/bin/python benchmarks/prototype_rigid/run.py --quick     # the small cases only
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (HERE, os.path.dirname(HERE), ROOT, os.path.join(ROOT, "tests", "solver")):
    sys.path.insert(0, p)

from solver import Builder, Simulation  # noqa: E402
import loop  # noqa: E402
import test_bodies as tb  # noqa: E402  (the tests' box and stack builders)
import crates  # noqa: E402

FPS = 24


def _run(builder_or_model, mode, frames, sleep=False, passes=2):
    model = builder_or_model.build() if isinstance(builder_or_model, Builder) else builder_or_model
    sim = loop.patch(Simulation(model, sleep=sleep), mode, passes=passes)
    speeds = []
    for _ in range(frames):
        prev = sim.x.copy()
        sim.step(1 / FPS)
        speeds.append(np.linalg.norm(sim.x - prev, axis=1).max() * FPS)
    return sim, speeds


def small(mode):
    out = []
    b = Builder()
    tb._box(b, np.array([0, 0, 0.52]), 0.5)
    b.add_collider("plane")
    _, sp = _run(b, mode, 72)
    out.append(f"one cube on the ground: fastest corner over the last frame {sp[-1] * 1e3:.2f} mm/s")
    for perturb in (False, True):
        sim, sp = _run(tb._stack(4, 0.5, perturb), mode, 72)
        x = sim.x.reshape(4, 8, 3)
        up = x[:, [1, 3, 5, 7]].mean(axis=1) - x[:, [0, 2, 4, 6]].mean(axis=1)
        tilt = np.degrees(np.arccos(up[:, 2] / np.linalg.norm(up, axis=1))).max()
        out.append(f"four cubes stacked{' (turned, offset)' if perturb else ''}: fastest corner "
                   f"{sp[-1] * 1e3:.2f} mm/s at 3 s, largest tilt {tilt:.3f} deg")
    half = 0.25
    b = Builder()
    tb._box(b, np.array([0.0, 0.0, half + 0.02]), half, mass=20.0)
    top = tb._box(b, np.array([0.15, 0.0, 3 * half + 0.04]), half, tb._rz(np.pi / 4), mass=20.0)
    b.add_collider("plane", friction=0.5)
    sim, _ = _run(b, mode, 48)
    c = sim.x[top].mean(axis=0)
    out.append(f"cube turned 45 deg on another, corner over the edge: top centre x {c[0]:.3f} m "
               f"(set down at 0.15), z {c[2]:.3f} m (resting: 0.750)")
    for deg in (20.0, 30.0, 35.0):
        a = np.radians(deg)
        rot = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
        b = Builder()
        tb._box(b, np.zeros(3), np.array([1.0, 1.0, 0.05]), rot, pinned=True)
        box = tb._box(b, rot @ [0, 0, 1.0] * (0.05 + 0.1 + 0.002), 0.1, rot)
        sim = loop.patch(Simulation(b.build()), mode)
        start = sim.x[box].mean(axis=0)
        for _ in range(FPS):
            sim.step(1 / FPS)
        moved = np.linalg.norm(sim.x[box].mean(axis=0) - start)
        expect = max(0.0, (np.sin(a) - 0.5 * np.cos(a)) * 9.81 / 2)
        out.append(f"box on a slab at {deg:.0f} deg, friction 0.5: moved {moved:.4f} m in 1 s "
                   f"(Coulomb: {expect:.4f})")
    return out


def pile(mode, frames=240):
    sim = loop.patch(Simulation(crates.build_model(100)), mode)
    times, lines = [], []
    for f in range(1, frames + 1):
        prev = sim.x.copy()
        t = time.perf_counter()
        sim.step(1 / FPS)
        times.append(time.perf_counter() - t)
        if f % 24 == 0:
            speed = np.linalg.norm(sim.x - prev, axis=1).reshape(100, 8).max(axis=1) * FPS
            asleep = sim.sleep.asleep_ids(sim.state)
            lines.append(f"  frame {f:3d}: asleep {0 if asleep is None else asleep.size // 8:3d}, "
                         f"faster than 5 cm/s {int((speed > 0.05).sum()):3d}, than 1 cm/s "
                         f"{int((speed > 0.01).sum()):3d}, fastest {speed.max():.3f} m/s, "
                         f"median ms/frame of the last 24: "
                         f"{np.median(times[-24:]) * 1e3:.2f}")
    t = np.array(times[1:120]) * 1e3
    lines.append(f"  frames 2-120: median {np.median(t):.2f} ms/frame, mean {t.mean():.2f}")
    return lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    for mode, name in ((0, "product (particle projection, contact-weighted fit)"),
                       (1, "prototype (contacts on the bodies, 2 passes, alternating order)")):
        print(f"== {name}", flush=True)
        for line in small(mode):
            print("  " + line, flush=True)
        if not a.quick:
            print("  crate pile, 100 crates (benchmarks/crates.py):", flush=True)
            for line in pile(mode):
                print(line, flush=True)


if __name__ == "__main__":
    main()
