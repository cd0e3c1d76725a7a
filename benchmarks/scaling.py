"""Scaling benchmark: build time of a 100k-vertex cloth, and cloth from N = 128 to 1000.

1. Build: Builder.add_cloth + build of a 316 x 316 cloth (99,856 vertices), what every playback
   reset pays: the first build in the process (loading the compiled colouring kernel from the
   cache), then the median of warm builds with compiled colouring and with the NumPy fallback
   (both give the same Model), and Simulation() on top. Target: under 0.2 s.
2. Cloth: the benchmark drape (benchmarks/blender_cloth.py: a 2 m cloth onto a sphere and the
   ground) at N x N vertices for each N (N = 1000: 1,000,000 particles, a few frames only),
   printing the bytes per particle (every array of the Model and of the Simulation, each
   buffer counted once, over the particle count), the median ms per frame, and how cost grows
   with N: time per frame per particle relative to the smallest N.

A size whose memory estimate (bytes per particle of the previous size) exceeds the memory
available is skipped with a message. Thread settings are printed. Timings depend on the
machine and its load: printed, never asserted.

    .venv/bin/python benchmarks/scaling.py                      # build, N = 128, 256, 512, 1000
    .venv/bin/python benchmarks/scaling.py --build              # the build time only
    .venv/bin/python benchmarks/scaling.py --sizes 64 128 --frames 5 --threads 1
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import blender_cloth as scene  # noqa: E402  (the drape scene)
from cloth_drape import build_model, thread_settings  # noqa: E402
from solver import Builder, Simulation, backend  # noqa: E402

BUILD_SIDE = 316                 # 316^2 = 99,856 vertices: "a 100k-vertex cloth"
BUILD_TARGET_S = 0.2
FALLBACK_BYTES_PER_PARTICLE = 4096   # memory estimate before any size has been measured


def build_once(x, faces):
    b = Builder()
    b.add_cloth(x, faces)
    return b.build()


def build_times(side=BUILD_SIDE, repeats=5):
    """Seconds to build a side x side cloth: dict of first, warm per colouring backend, and
    Simulation() on the warm Model."""
    x, faces = scene.grid_cloth(side)
    out = {"vertices": side * side}
    t = time.perf_counter()
    build_once(x, faces)
    out["first"] = time.perf_counter() - t
    names = ["numba", "numpy"] if backend.numba_kernels() is not None else ["numpy"]
    saved = os.environ.get("VERLET_BACKEND")
    try:
        for name in names:
            os.environ["VERLET_BACKEND"] = name        # the colouring follows backend.choose()
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                model = build_once(x, faces)
                times.append(time.perf_counter() - t)
            out[name] = float(np.median(times))
            out[name + " best"] = float(np.min(times))
    finally:
        if saved is None:
            os.environ.pop("VERLET_BACKEND", None)
        else:
            os.environ["VERLET_BACKEND"] = saved
    t = time.perf_counter()
    Simulation(model)
    out["simulation"] = time.perf_counter() - t
    return out


def array_bytes(root):
    """Bytes of every NumPy buffer reachable from root through the solver's objects (their
    attributes), lists, tuples and dicts; a view counts as its base, each buffer once."""
    buffers, seen, stack = {}, set(), [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            buffers[id(base)] = base.nbytes
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif type(obj).__module__.split(".")[0] in ("solver", "verlet_physics"):
            stack.extend(getattr(obj, "__dict__", {}).values())
            stack.extend(getattr(obj, s) for s in getattr(type(obj), "__slots__", ())
                         if hasattr(obj, s))
    return sum(buffers.values())


def available_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def run_size(n, frames, fps=24, backend_name=None):
    """One size: build, one untimed frame (first-touch allocations), then frames timed."""
    t = time.perf_counter()
    model, _, _ = build_model(n)
    sim = Simulation(model, backend=backend_name)
    build_s = time.perf_counter() - t
    sim.step(1.0 / fps)
    ms = []
    for _ in range(frames):
        t = time.perf_counter()
        sim.step(1.0 / fps)
        ms.append((time.perf_counter() - t) * 1e3)
    model_bytes = array_bytes(model)
    total_bytes = array_bytes(sim)             # the Simulation holds the Model
    particles = model.particle_count
    finite = bool(np.all(np.isfinite(sim.x)))
    return {"n": n, "particles": particles, "sticks": model.stick_count,
            "batches": len(model.stick_batch_offsets) - 1,
            "groups": len(model.stick_group_task_start) - 1, "build_s": build_s,
            "ms": float(np.median(ms)), "frames": frames, "model_bytes": model_bytes,
            "sim_bytes": total_bytes - model_bytes, "bytes_per_particle": total_bytes / particles,
            "backend": sim.backend, "finite": finite}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="the 100k-vertex build time only")
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1000])
    ap.add_argument("--frames", type=int, default=10, help="timed frames per size")
    ap.add_argument("--big-frames", type=int, default=2,
                    help="timed frames for sizes above 512 (N = 1000 is seconds per frame)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the compiled kernels (default: VERLET_THREADS or all cores)")
    ap.add_argument("--backend", choices=["numba", "numpy"], default=None,
                    help="our kernels (default: VERLET_BACKEND, else the fastest available)")
    args = ap.parse_args(argv)

    compiled = backend.numba_kernels() is not None
    if compiled:
        if args.threads is not None:
            backend.configure(threads=args.threads)
        t = time.perf_counter()
        backend.warm_up()                       # load (or compile) every kernel first
        print(f"numba kernels ready in {time.perf_counter() - t:.1f} s")
    else:
        print(f"numba kernels unavailable ({backend.load_error()}): NumPy only")

    bt = build_times()
    print(f"build of a {BUILD_SIDE} x {BUILD_SIDE} cloth ({bt['vertices']:,} vertices, "
          f"Builder.add_cloth + build): first in this process {bt['first']:.3f} s; warm "
          + ", ".join(f"{name} colouring {bt[name]:.3f} s (best {bt[name + ' best']:.3f})"
                      for name in ("numba", "numpy") if name in bt)
          + f"; Simulation() on it {bt['simulation']:.3f} s")
    best = bt.get("numba", bt["numpy"])
    print(f"target: 100k-vertex build < {BUILD_TARGET_S} s: {best:.3f} s "
          f"{'MET' if best < BUILD_TARGET_S else 'MISSED'} "
          f"({'compiled' if 'numba' in bt else 'NumPy'} colouring, warm median; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    if args.build:
        print(thread_settings(compiled, False))
        return bt

    rows = []
    per_particle = None
    for n in args.sizes:
        estimate = (rows[-1]["bytes_per_particle"] if rows else FALLBACK_BYTES_PER_PARTICLE) \
            * n * n * 1.5
        avail = available_bytes()
        if avail is not None and estimate > avail:
            print(f"N={n}: skipped, needs about {estimate / 2 ** 30:.1f} GiB, "
                  f"{avail / 2 ** 30:.1f} GiB available", flush=True)
            continue
        frames = args.big_frames if n > 512 else args.frames
        r = run_size(n, frames, backend_name=args.backend)
        if per_particle is None:
            per_particle = (r["n"], r["ms"] / r["particles"])
        r["growth"] = (r["ms"] / r["particles"]) / per_particle[1]
        rows.append(r)
        print(f"N={n:5d} ({r['particles']:,} particles, {r['sticks']:,} sticks in "
              f"{r['batches']} stick batches in {r['groups']} thread waits per sweep, {r['backend']}): build {r['build_s']:.2f} s, "
              f"{r['ms']:9.1f} ms/frame (median of {r['frames']}), "
              f"{r['bytes_per_particle']:.0f} bytes/particle (Model {r['model_bytes'] / 2 ** 20:.1f}"
              f" MiB + Simulation {r['sim_bytes'] / 2 ** 20:.1f} MiB), time per particle "
              f"{r['growth']:.2f}x N={per_particle[0]}'s" + ("" if r["finite"] else
                                                           "  NON-FINITE POSITIONS"), flush=True)
    print(thread_settings(compiled and (args.backend or backend.choose()) == "numba", False))
    if rows:
        print()
        print("| N | particles | bytes / particle | ms / frame | frames timed | time per particle "
              f"vs N={rows[0]['n']} |\n|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['n']} | {r['particles']:,} | {r['bytes_per_particle']:.0f} | "
                  f"{r['ms']:.1f} | {r['frames']} | {r['growth']:.2f}x |")
        big = rows[-1]
        if big["n"] >= 1000:
            print(f"target: a 1,000,000-particle cloth runs: {big['particles']:,} particles, "
                  f"{big['ms']:.0f} ms/frame, {big['bytes_per_particle']:.0f} bytes/particle "
                  f"{'MET' if big['finite'] else 'MISSED (non-finite positions)'}")
    return rows


if __name__ == "__main__":
    main()
