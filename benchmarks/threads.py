"""Thread scaling of the compiled solver, outside Blender: the same scenes stepped on 1, 2, 4, ...
threads and on the default setting, in one process (issue 8: N = 256 on 16 cores at least 8x the
one-thread speed; the default thread setting never slower than one thread).

Scenes (each built afresh for every thread count, so every row steps the same frames):
- cloth N: benchmarks/cloth_drape.py's drape (an N x N cloth onto a sphere and the ground) at
  the product's defaults (40 substeps x 1 iteration);
- ragdolls K: benchmarks/ragdolls.py's K twelve-bone ragdolls down the stairs, at the add-on's
  40 substeps;
- crates K: benchmarks/crates.py's pile of K rigid crates.

For each scene and thread count: the median ms per timed frame (after --warm frames not timed),
the speed-up over one thread, and whether the positions at the end are bit-identical to the
one-thread run's (they must be: preview equals bake whatever the thread count). "default" is
what a user gets with no thread setting: solver.backend.StepThreads, which trials all threads
against one and keeps the faster. Also printed: the cold compile of every kernel (when the
cache was empty), Numba's threading layer, and the OpenMP wait settings, which decide how long
a thread spins before it sleeps between parallel regions (solver.backend.SPIN_COUNT).

Timings depend on the machine and its load: printed, never asserted.

--busy-from F: another process keeps one core busy from the run's F-th timed frame on (in
every row, started afresh); the ms/frame column is then the median of the frames from F on:
what a thread setting gives when a core is taken after the default setting's first trial
(StepThreads measures again when its step time moves twofold).

    .venv/bin/python benchmarks/threads.py                                # every scene
    .venv/bin/python benchmarks/threads.py --scenes cloth256 --threads 1 2 --frames 10
    OMP_WAIT_POLICY=ACTIVE .venv/bin/python benchmarks/threads.py         # threads never sleep
    .venv/bin/python benchmarks/threads.py --scenes cloth64 --frames 72 --busy-from 12
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from solver import Simulation, backend  # noqa: E402

# scene names: a kind and its size (cloth512 times a third of --frames: a frame is 4x N = 256's)
SCENES = ("cloth128", "cloth256", "cloth512", "ragdolls100", "crates100")


def build(scene):
    """(Simulation, frame time [s]) for a scene name of SCENES, at the product's settings."""
    if scene.startswith("cloth"):
        import cloth_drape
        model, _, _ = cloth_drape.build_model(int(scene[5:]))
        return Simulation(model), 1 / 24
    if scene.startswith("ragdolls"):
        import ragdolls
        model = ragdolls.build(int(scene[8:])).build()
        sim = Simulation(model, substeps=40)
        sim.set_velocities(np.arange(model.particle_count),
                           np.tile([1.0, 0.0, 0.0], (model.particle_count, 1)))
        return sim, 1 / 24
    if scene.startswith("crates"):
        import crates
        return Simulation(crates.build_model(int(scene[6:]))), 1 / crates.FPS
    raise SystemExit(f"threads.py: unknown scene {scene!r} (known: {', '.join(SCENES)})")


def run(scene, threads, frames, warm, busy_from=None):
    """Median ms per timed frame and a digest of the end positions, on ``threads`` (0: the
    default setting); with busy_from, a process spins on one core from that timed frame on,
    and the median is of those frames."""
    if busy_from is not None and not 0 <= busy_from < frames:
        raise SystemExit(f"threads.py: --busy-from {busy_from} is not one of {scene}'s "
                         f"{frames} timed frames")
    backend.configure(threads=threads)
    sim, dt = build(scene)
    for _ in range(warm):
        sim.step(dt)
    times, hog = [], None
    try:
        for f in range(frames):
            if f == busy_from:
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                time.sleep(0.2)                    # let it take its core
            t = time.perf_counter()
            sim.step(dt)
            times.append(time.perf_counter() - t)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    digest = hashlib.sha256(np.ascontiguousarray(sim.x).tobytes()).hexdigest()[:12]
    return 1e3 * float(np.median(times[busy_from or 0:])), digest, len(sim.x)


def main(argv=None):
    cores = os.cpu_count() or 1
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=list(SCENES))
    ap.add_argument("--threads", type=int, nargs="+",
                    default=[t for t in (1, 2, 4, 8, 16, 32) if t < cores] + [cores])
    ap.add_argument("--frames", type=int, default=24, help="timed frames per run")
    ap.add_argument("--warm", type=int, default=8,
                    help="frames stepped before timing (for the default setting at least the "
                         "thread trial's 8)")
    ap.add_argument("--busy-from", type=int, default=None,
                    help="a process keeps one core busy from this timed frame on")
    args = ap.parse_args(argv)
    # the untimed frames cover the default setting's thread trial (timed, its one-thread steps
    # counted: 4 timed frames of cloth512 were half of them); every row steps as many frames
    trial = backend.StepThreads
    args.warm = max(args.warm, trial.WARM + 2 * trial.TRIAL)
    if backend.choose() != "numba":
        raise SystemExit("threads.py: the compiled backend is unavailable (Numba missing?)")
    import numba
    t0 = time.perf_counter()
    backend.warm_up()
    compile_s = time.perf_counter() - t0
    print(f"{cores} cores; Numba {numba.__version__}, NumPy {np.__version__}, Python "
          f"{sys.version.split()[0]}; threading layer {numba.threading_layer()}; "
          f"NUMBA_NUM_THREADS {numba.config.NUMBA_NUM_THREADS}; OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')} GOMP_SPINCOUNT="
          f"{os.environ.get('GOMP_SPINCOUNT', '(unset)')}; kernels ready in {compile_s:.1f} s "
          f"(compiling what the kernel cache lacked)", flush=True)
    counts = sorted({t for t in args.threads if t <= numba.config.NUMBA_NUM_THREADS})
    print(f"{'scene':12s} {'particles':>9s} {'threads':>8s} {'ms/frame':>9s} {'speed-up':>9s} "
          f"{'bits':>14s}", flush=True)
    for scene in args.scenes:
        frames = max(4, args.frames // 3) if scene == "cloth512" else args.frames
        base, ref = None, None
        for threads in counts + [0]:
            ms, digest, n = run(scene, threads, frames, args.warm, args.busy_from)
            if threads == counts[0]:
                base, ref = ms, digest
            same = "identical" if digest == ref else f"DIFFER {digest}"
            label = "default" if threads == 0 else str(threads)
            print(f"{scene:12s} {n:9d} {label:>8s} {ms:9.2f} {base / ms:8.2f}x {same:>14s}",
                  flush=True)
    backend.configure(threads=0)


if __name__ == "__main__":
    main()
