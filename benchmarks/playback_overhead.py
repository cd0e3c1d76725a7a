"""What live playback costs per frame beyond the solver step, on a 100k-vertex cloth.

Measures, in one run through bpy: reading positions from the evaluated mesh (one
attributes["position"] foreach_get), writing them to our display shape key (one foreach_set),
the same write through vertices.foreach_set("co") for comparison, and a whole handler frame of
live playback (frame_set: collider and pin reads, the solver step, the display write) against the
solver step alone. Prints milliseconds; nothing is asserted.

    .venv/bin/python benchmarks/playback_overhead.py [--n 317]
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)


def _median_ms(fn, repeat=20):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=317, help="grid side (317^2 = 100,489 vertices)")
    ap.add_argument("--frames", type=int, default=6)
    args = ap.parse_args(argv)

    import bpy
    from conftest import load_extension
    bpy.ops.wm.read_factory_settings(use_empty=True)
    ext = load_extension()
    ext.register()
    from verlet_physics.addon import bridge

    bpy.ops.mesh.primitive_grid_add(x_subdivisions=args.n - 1, y_subdivisions=args.n - 1, size=2,
                                    location=(0, 0, 1))
    obj = bpy.context.object
    obj.verlet.kind = "CLOTH"
    bpy.ops.mesh.primitive_plane_add(size=10)
    bpy.context.object.verlet.kind = "COLLIDER"
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 1 + args.frames
    mesh = obj.data
    n = len(mesh.vertices)
    x = bridge.positions(mesh)
    buf = np.ascontiguousarray(x, dtype=np.float32).ravel()

    read = _median_ms(lambda: bridge.positions(mesh))
    write_key = _median_ms(lambda: bridge.write_display(obj, x))
    write_co = _median_ms(lambda: mesh.vertices.foreach_set("co", buf))
    print(f"{n} vertices")
    print(f"  read positions (attributes foreach_get, float32 -> float64): {read:7.2f} ms")
    print(f"  write our display shape key (foreach_set + update):           {write_key:7.2f} ms")
    print(f"  for comparison, vertices.foreach_set('co'):                     {write_co:7.2f} ms")
    bridge.remove_display_key(obj)

    from verlet_physics.addon import bake
    scene.frame_set(1)                                     # reset: builds the simulation
    step_ms, frame_ms = [], []
    for f in range(2, 2 + args.frames):
        sim = bake._live["sim"].sim
        state = sim.get_state()
        t = time.perf_counter()
        sim.step(1 / 24)                                   # the solver step alone
        step_ms.append((time.perf_counter() - t) * 1e3)
        sim.set_state(state)
        t = time.perf_counter()
        scene.frame_set(f)                                 # the whole handler frame
        frame_ms.append((time.perf_counter() - t) * 1e3)
    s, fr = float(np.median(step_ms)), float(np.median(frame_ms))
    print(f"  live playback frame {fr:.1f} ms = solver step {s:.1f} ms + {fr - s:.1f} ms "
          f"of Blender traffic (collider reads, display write, depsgraph)")
    ext.unregister()


if __name__ == "__main__":
    main()
