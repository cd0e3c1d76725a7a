"""Ragdoll benchmark, the solver side: 1, 10 and 100 twelve-bone ragdolls dropped down a flight of
stairs (box colliders), printing ms per frame, the largest joint gap and the largest limit
excursion over the run (Simulation.joint_error after every frame).

A ragdoll is twelve capsule bodies (Builder.add_capsule_body: pelvis, spine, chest, head, upper
arms, forearms, thighs, shins) joined by eleven joints with limits as a character TD sets them:
ball joints with swing cones and twist ranges at the spine, neck, shoulders and hips, hinges at
the elbows and knees. The ragdolls stand side by side on the top step, tilted forward and
pushed down the stairs. Their capsules collide with one another and with their own
non-adjacent bones, except, as in the add-on (addon/ragdoll_sim.py OVERLAP_MARGIN), bones whose
capsules overlap in the build pose (the spine and the thighs' heads); adjacent bones, joined by a
joint, do not either. The comparison with Blender's Rigid Body World is made on the Blender
side: ``--blender`` runs benchmarks/ragdolls_blender.py (the add-on's own path, armatures with
kind RAGDOLL, against the same bones as Rigid Body World objects with Generic constraints, in
the same run; needs bpy).

Targets (issue 12): joint gaps under 2 mm, excursions under 2 degrees, 100 ragdolls under 50 ms
per frame on the 2-core machine. Timings depend on the machine and its load: printed, never
asserted.

    .venv/bin/python benchmarks/ragdolls.py                     # 1, 10, 100 ragdolls
    .venv/bin/python benchmarks/ragdolls.py --counts 10 --frames 48 --substeps 20
    .venv/bin/python benchmarks/ragdolls.py --blender --counts 1 10 100 --frames 60
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from solver import Builder, Simulation, backend  # noqa: E402
from solver.geometry import segment_distances  # noqa: E402

STEPS, RUN, RISE = 8, 0.35, 0.2                 # the flight of stairs [m]
SPACING = 1.0                                   # [m] between ragdolls across the stairs
TOP = STEPS * RISE                              # height of the top step's tread [m]
# bones whose axes come closer than this times the sum of their radii in the build pose do not
# collide (addon/ragdoll_sim.py OVERLAP_MARGIN): their own contact would push them apart from
# the first substep and fight the joints in every one
OVERLAP_MARGIN = 1.1

# (name, head, tail, radius [m], mass [kg], parent, joint kind, limits) in a T-pose-like rest,
# standing at the origin facing +x, feet at z = 0; a joint sits at the child's head
BONES = [
    ("pelvis", (0, -0.1, 0.95), (0, 0.1, 0.95), 0.09, 10.0, None, None, None),
    ("spine", (0, 0, 1.0), (0, 0, 1.2), 0.09, 8.0, "pelvis", "ball", (0.5, -0.4, 0.4)),
    ("chest", (0, 0, 1.2), (0, 0, 1.45), 0.11, 12.0, "spine", "ball", (0.4, -0.4, 0.4)),
    ("head", (0, 0, 1.5), (0, 0, 1.72), 0.09, 5.0, "chest", "ball", (0.7, -0.9, 0.9)),
    ("upper_arm.L", (0, 0.2, 1.42), (0, 0.48, 1.42), 0.045, 2.5, "chest", "ball",
     (1.4, -1.0, 1.0)),
    ("forearm.L", (0, 0.48, 1.42), (0, 0.74, 1.42), 0.04, 1.8, "upper_arm.L", "hinge",
     (0.0, 2.4)),
    ("upper_arm.R", (0, -0.2, 1.42), (0, -0.48, 1.42), 0.045, 2.5, "chest", "ball",
     (1.4, -1.0, 1.0)),
    ("forearm.R", (0, -0.48, 1.42), (0, -0.74, 1.42), 0.04, 1.8, "upper_arm.R", "hinge",
     (-2.4, 0.0)),
    ("thigh.L", (0, 0.1, 0.9), (0, 0.1, 0.5), 0.07, 8.0, "pelvis", "ball", (1.2, -0.5, 0.5)),
    ("shin.L", (0, 0.1, 0.5), (0, 0.1, 0.08), 0.055, 4.0, "thigh.L", "hinge", (-2.4, 0.0)),
    ("thigh.R", (0, -0.1, 0.9), (0, -0.1, 0.5), 0.07, 8.0, "pelvis", "ball",
     (1.2, -0.5, 0.5)),
    ("shin.R", (0, -0.1, 0.5), (0, -0.1, 0.08), 0.055, 4.0, "thigh.R", "hinge", (-2.4, 0.0)),
]
# joint axes: a ball's swing axis is the child bone's direction; elbows bend about z (the
# forearm swings forward, toward +x for the left arm), knees about y (the shin swings back)
ELBOW_AXIS = {"forearm.L": (0, 0, 1), "forearm.R": (0, 0, 1)}
KNEE_AXIS = (0, 1, 0)


def _rotation(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def add_ragdoll(b, origin, yaw=0.0, tilt=0.2):
    """Twelve capsule bodies and eleven joints, placed at ``origin`` turned by ``yaw`` about z
    and tilted forward by ``tilt`` [rad]. Returns (bodies {name: body id}, joint ids)."""
    rot = _rotation((0, 0, 1), yaw) @ _rotation((0, 1, 0), tilt)
    place = lambda p: rot @ np.asarray(p, float) + origin          # noqa: E731
    bodies, joints, ids, ends = {}, [], [], []
    for name, head, tail, radius, mass, parent, kind, limits in BONES:
        h, t = place(head), place(tail)
        p, bodies[name] = b.add_capsule_body(h, t, radius, mass=mass)
        ids.append(p)
        ends.append((h, t, radius))
        if parent is None:
            continue
        if kind == "hinge":
            axis = ELBOW_AXIS.get(name, KNEE_AXIS)
        else:
            axis = np.subtract(tail, head)
        joints.append(b.add_joint(bodies[parent], bodies[name], h, kind=kind,
                                  axis=rot @ np.asarray(axis, float), limits=limits))
    i, j = np.triu_indices(len(BONES), 1)
    h, t, r = (np.array([e[k] for e in ends]) for k in range(3))
    near = segment_distances(h[i], t[i], h[j], t[j]) < (r[i] + r[j]) * OVERLAP_MARGIN
    for a, c in zip(i[near], j[near]):
        b.disable_collision(ids[a], ids[c])
    return bodies, joints


def add_stairs(b, width):
    """A flight of STEPS box steps ``width`` [m] wide descending toward +x, then the floor."""
    for i in range(STEPS):
        top = TOP - i * RISE
        m = np.eye(4)
        m[:3, 3] = ((i + 0.5) * RUN, 0.0, 0.5 * top)
        b.add_collider("box", matrix=m, size=(RUN, width, top), friction=0.6)
    b.add_collider("plane", friction=0.6)


def build(count):
    """All ragdolls side by side on the top step, each turned a little differently, so every
    one meets the same stairs (100 ragdolls: stairs 101 m wide)."""
    b = Builder()
    add_stairs(b, SPACING * count + 1.0)
    for k in range(count):
        y = (k - (count - 1) / 2) * SPACING
        origin = np.array([0.15, y, TOP + 0.05])
        add_ragdoll(b, origin, yaw=0.3 * ((k % 3) - 1), tilt=0.25)
    return b


def start(count, substeps=None):
    """The benchmark's Simulation: count ragdolls on the stairs, each pushed off the top step
    at 1 m/s (substeps None: the solver's default)."""
    model = build(count).build()
    sim = Simulation(model) if substeps is None else Simulation(model, substeps=substeps)
    sim.set_velocities(np.arange(model.particle_count),
                       np.tile([1.0, 0.0, 0.0], (model.particle_count, 1)))
    return sim


def run(count, frames, substeps):
    t0 = time.perf_counter()
    sim = start(count, substeps)
    model = sim.model
    built = time.perf_counter() - t0
    sim.step(1 / 24)                                    # compile / warm, not timed
    times, gap, exc = [], 0.0, 0.0
    for _ in range(frames):
        t = time.perf_counter()
        sim.step(1 / 24)
        times.append(time.perf_counter() - t)
        g, e = sim.joint_error()
        gap, exc = max(gap, g.max()), max(exc, e.max())
    lowest = float(np.array(sim.x)[:, 2].min())
    print(f"{count:4d} ragdolls  {model.particle_count:6d} particles  {len(model.joint_kind):5d} "
          f"joints  build {built:5.2f} s  {1000 * np.median(times):7.1f} ms/frame (median, "
          f"{substeps} substeps)  largest gap {1000 * gap:6.3f} mm  largest excursion "
          f"{np.degrees(exc):5.2f} deg  lowest particle z {lowest:5.2f} m", flush=True)
    return np.median(times), gap, exc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--frames", type=int, default=72)
    ap.add_argument("--substeps", type=int, default=20)
    ap.add_argument("--blender", action="store_true",
                    help="also compare with Blender's Rigid Body World through the add-on "
                         "(benchmarks/ragdolls_blender.py, the product's 40 substeps)")
    args = ap.parse_args()
    if args.blender:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import ragdolls_blender
        ragdolls_blender.main(["--counts", *map(str, args.counts), "--frames", str(args.frames)])
        return
    print(f"backend {backend.choose()}; {args.frames} frames at 24 fps")
    for n in args.counts:
        run(n, args.frames, args.substeps)


if __name__ == "__main__":
    main()
