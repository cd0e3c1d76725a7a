"""Where one step's time goes: a scene stepped to a frame, then its next step taken apart.

The step is taken once with every call of the kernel table timed (the compiled substep loop
``run_substeps`` and the collide stage's kernels; the rest of the step is Python), and the
substep loop's arguments of its first call are kept. The loop is then replayed from that same
state over the step's substeps, best of --repeat, as it is and with one family of work left
out at a time:

    edges          the edges' contacts with colliders (collision/edges.py)
    body contacts  the contacts between bodies solved on particles (cloth, soft bodies)
    rigid solve    the contacts of rigid bodies solved on the bodies (collision/rigid.py),
                   whole, or only its contacts between bodies, or only its collider candidates
    joints         the joints between rigid bodies

A family's figure is what the replay saves without it: an estimate (without it the step goes
elsewhere, and what the other families meet changes), printed, never asserted. A step that ran
in rounds (a self-colliding cloth, solver/rounds.py) is replayed with its first round's body
contacts over the whole step. Scenes: the crate pile of crates.py, the drape of cloth_drape.py,
the folded cloth of self_collision.py and the ragdolls of ragdolls.py, through the solver alone
(no Blender); and the demo (scripts/demo.py, through Blender's bpy and the extension, as
``scripts/demo.sh`` bakes it; --small: the tests' reduced scene): its step after --frame is
taken apart in the middle of the bake, from the state and the targets the add-on gave it, and
put back (Simulation.get_state, set_state), so the bake goes on unchanged.

    .venv/bin/python benchmarks/step_parts.py crates --frame 60
    .venv/bin/python benchmarks/step_parts.py drape --size 128 --frame 40
    .venv/bin/python benchmarks/step_parts.py fold --size 64 --frame 30
    .venv/bin/python benchmarks/step_parts.py ragdolls --size 20 --frame 24
    .venv/bin/python benchmarks/step_parts.py demo --frame 60

(The thirty-first session's figures for the crate pile came from such a replay, 2026-11-30.)
"""

import argparse
import collections
import copy
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from solver import Simulation  # noqa: E402
from solver.loop import ARG  # noqa: E402

FPS = 24
# positions in the argument groups (loop.py's run_substeps unpacks them; the rigid group is
# collision/rigid.RigidContacts.kernel_args)
EDGE_CAND, EDGE_COLLIDER = 2, 3
BODY_IDX, BODY_KIND = 0, 1
RIGID_BODIES, RIGID_PART_START, RIGID_LEVEL_START = 4, 16, 25
RIGID_CAND = {17: "cand_particle", 18: "cand_collider", 23: "cand_by_body", 27: "cand_run_next",
              35: "cand_impact"}
RIGID_CAND_START = (19, 24)        # cand_start, cand_body_start: one entry, 0
JOINT_ORDER = 23


def build(scene, size):
    """(Simulation, what it is) for a scene of size (crates, cloth vertices a side, ragdolls)."""
    if scene == "crates":
        import crates
        return Simulation(crates.build_model(size or 100)), f"{size or 100} crates"
    if scene == "drape":
        import cloth_drape
        n = size or 128
        return Simulation(cloth_drape.build_model(n)[0]), f"drape N = {n}"
    if scene == "fold":
        import self_collision
        n = size or 64
        return (Simulation(self_collision.fold_builder(n)[0].build()),
                f"folded cloth N = {n}, self-collision")
    if scene == "ragdolls":
        import ragdolls
        count = size or 20
        return ragdolls.start(count), f"{count} ragdolls on the stairs"
    raise ValueError(f"unknown scene {scene!r}")


def timed_step(sim, dt=1.0 / FPS):
    """Take one step of dt [s] with every kernel of the table timed: ({name: seconds}, {name:
    calls}, the step's seconds, the first run_substeps call's arguments, how many calls it
    made)."""
    table = sim.kernels
    spent, calls, kept = collections.defaultdict(float), collections.Counter(), []
    copying = [0.0]                  # [s] keeping the arguments: not the step's
    originals = dict(vars(table))
    for name, fn in originals.items():
        def timed(*args, _fn=fn, _name=name, **kw):
            if _name == "run_substeps" and not kept:
                t = time.perf_counter()
                kept.append(copy.deepcopy(args))
                copying[0] += time.perf_counter() - t
            t = time.perf_counter()
            out = _fn(*args, **kw)
            spent[_name] += time.perf_counter() - t
            calls[_name] += 1
            return out
        setattr(table, name, timed)
    try:
        t = time.perf_counter()
        sim.step(dt)
        total = time.perf_counter() - t - copying[0]
    finally:
        for name, fn in originals.items():
            setattr(table, name, fn)
    return spent, calls, total, (kept[0] if kept else None), calls["run_substeps"]


def _replace(args, group, changes):
    args = list(copy.deepcopy(args))
    items = list(args[ARG[group]])
    for k, v in changes.items():
        items[k] = v
    args[ARG[group]] = tuple(items)
    return args


def variants(args):
    """(name, arguments) for the replay: as it is, then one family left out at a time (only
    the families this step has)."""
    out = [("as it is", args)]
    e = args[ARG["edges"]]
    if len(e[EDGE_CAND]):
        out.append(("without the edges' contacts", _replace(
            args, "edges", {EDGE_CAND: e[EDGE_CAND][:0], EDGE_COLLIDER: e[EDGE_COLLIDER][:0]})))
    b = args[ARG["bodies"]]
    if len(b[BODY_IDX]):
        out.append(("without the body contacts", _replace(
            args, "bodies", {BODY_IDX: b[BODY_IDX][:0], BODY_KIND: b[BODY_KIND][:0]})))
    r = args[ARG["rigid"]]
    if len(r[RIGID_BODIES]):
        out.append(("without the rigid solve", _replace(
            args, "rigid", {RIGID_BODIES: r[RIGID_BODIES][:0]})))
        out.append(("  without its contacts between bodies", _replace(
            args, "rigid", {RIGID_PART_START: np.zeros(2, np.int64),
                            RIGID_LEVEL_START: np.array([0, 1], np.int64)})))
        empty = {k: r[k][:0] for k in RIGID_CAND}
        empty.update({k: np.zeros(1, np.int64) for k in RIGID_CAND_START})
        out.append(("  without its collider candidates", _replace(args, "rigid", empty)))
    j = args[ARG["joints"]]
    if len(j[JOINT_ORDER]):
        out.append(("without the joints", _replace(args, "joints",
                                                   {JOINT_ORDER: j[JOINT_ORDER][:0]})))
    return out


def whole_step(args):
    """args with the counts of every substep of the step (first 0, last the substep count)."""
    counts = list(args[ARG["counts"]])
    counts[3], counts[4] = 0, counts[0]
    args = list(args)
    args[ARG["counts"]] = tuple(counts)
    return args


def positions_after(sim, args):
    """(n, 3) [m] where the replayed step leaves the particles (args copied)."""
    a = copy.deepcopy(whole_step(args))
    sim.kernels.run_substeps(*a)
    return a[ARG["state"]][0].T.copy()


def replay(sim, args, repeat):
    """Best seconds of run_substeps over the whole step from args (copied each time), after
    one untimed call."""
    args = whole_step(args)
    best = np.inf
    for k in range(repeat + 1):
        a = copy.deepcopy(args)
        t = time.perf_counter()
        sim.kernels.run_substeps(*a)
        if k:          # the first call may load another signature (copies are writeable)
            best = min(best, time.perf_counter() - t)
    return best


def report(sim, what, frame, repeat, dt=1.0 / FPS):
    """Take sim's next step (of dt [s]) apart and print it: its kernels' and Python's time, then
    the substep loop replayed as it is and without each family (variants)."""
    spent, calls, total, args, rounds = timed_step(sim, dt)
    print(f"{what}: the step after frame {frame} ({sim.model.particle_count} particles, "
          f"{sim.backend} backend, {sim.substeps} substeps)")
    print(f"  the step {total * 1e3:8.2f} ms, of which")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"    {name:24s} {s * 1e3:8.2f} ms  ({calls[name]} calls)")
    print(f"    {'Python (the rest)':24s} {(total - sum(spent.values())) * 1e3:8.2f} ms")
    if args is None:
        print("  no substep ran (every body asleep)")
        return
    note = f" (the step ran in {rounds} rounds: the first round's contacts)" if rounds > 1 else ""
    print(f"  the substep loop replayed over the whole step, best of {repeat}{note}:")
    base = None
    for name, v in variants(args):
        s = replay(sim, v, repeat)
        if base is None:
            base = s
            print(f"    {name:40s} {s * 1e3:8.2f} ms")
        else:
            print(f"    {name:40s} {s * 1e3:8.2f} ms  (saves {(base - s) * 1e3:6.2f})")


def demo(frame, repeat, small=False):
    """The demo's bake (scripts/demo.py: its scene built in Blender, baked through the
    extension's operator), its step after ``frame`` reported (report) from the state and the
    targets the add-on set for it, then that state put back and the bake let go on: the bake is
    the one scripts/demo.sh makes (its file unsaved here, the bake's cache in memory). small:
    the tests' reduced scene. Returns the demo's objects ({role: object})."""
    import importlib
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
    import demo as demo_script
    import bpy
    ext = demo_script.fresh_session()
    built = demo_script.build_scene(demo_script.Config.small() if small
                                    else demo_script.Config())
    ext.addon.kernels.ensure_ready()
    # the extension's own solver (imported under the extension's package name)
    cls = importlib.import_module(ext.__name__ + ".solver.simulation").Simulation
    step = cls.step
    seen = [0]

    def taken_apart(self, dt):
        seen[0] += 1
        if seen[0] == frame + 1:
            kept = self.get_state()
            cls.step = step                 # the step report takes is the real one
            try:
                report(self, "the demo" + (" (reduced)" if small else ""), frame, repeat, dt)
            finally:
                cls.step = taken_apart
            self.set_state(kept)
        return step(self, dt)
    cls.step = taken_apart
    try:
        result = bpy.ops.verlet.bake("EXEC_DEFAULT")
    finally:
        cls.step = step
    scene = bpy.context.scene
    if "FINISHED" not in result or scene.get("verlet_error"):
        raise RuntimeError(f"bake failed: {scene.get('verlet_error', result)}")
    if seen[0] <= frame:
        raise ValueError(f"--frame {frame}: the demo took {seen[0]} steps")
    return built["objects"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scene", choices=("crates", "drape", "fold", "ragdolls", "demo"))
    p.add_argument("--size", type=int, default=None,
                   help="crates, cloth vertices a side, or ragdolls (each scene's default)")
    p.add_argument("--frame", type=int, default=30,
                   help="frames stepped (untimed) before the one taken apart, at least 1")
    p.add_argument("--repeat", type=int, default=7, help="replays of each variant (best taken)")
    p.add_argument("--small", action="store_true", help="demo: the tests' reduced scene")
    a = p.parse_args(argv)
    if a.frame < 1:
        p.error("--frame: at least 1 (the first steps load or compile the kernels)")
    if a.scene == "demo":
        demo(a.frame, a.repeat, a.small)
        return
    sim, what = build(a.scene, a.size)
    for _ in range(a.frame):
        sim.step(1.0 / FPS)
    report(sim, what, a.frame, a.repeat)


if __name__ == "__main__":
    main()
