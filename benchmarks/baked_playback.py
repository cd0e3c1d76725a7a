"""What showing a baked frame costs, against the cache's length: a 10,000-vertex cloth baked over
25 and over 250 frames (3 MB and 30 MB caches beside a saved .blend), then 60 frame changes in a
seeded random order through the frame handler (one frame read by seek, the display key written).
Prints the median milliseconds per frame of each; nothing is asserted.

    .venv/bin/python benchmarks/baked_playback.py [--n 100] [--lengths 25 250]
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))
sys.path.insert(0, ROOT)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="grid side (100^2 = 10,000 vertices)")
    ap.add_argument("--lengths", type=int, nargs="+", default=[25, 250])
    args = ap.parse_args(argv)

    import bpy
    from conftest import load_extension
    load_extension().register()
    import scenes
    with tempfile.TemporaryDirectory() as tmp:
        for frames in args.lengths:
            bpy.ops.wm.read_factory_settings(use_empty=True)
            scenes.set_range(1, frames, substeps=4)
            scenes.ground()
            c = scenes.cloth("Cloth", n=args.n, size=2.0, location=(0.0, 0.0, 1.0))
            bpy.ops.wm.save_as_mainfile(filepath=os.path.join(tmp, f"baked{frames}.blend"))
            scenes.bake_op()
            scene = bpy.context.scene
            scene.frame_set(2)
            ts = []
            for f in np.random.default_rng(0).integers(1, frames + 1, 60):
                t = time.perf_counter()
                scene.frame_set(int(f))
                ts.append((time.perf_counter() - t) * 1e3)
            size = os.path.getsize(bpy.path.abspath(c["verlet_cache"]))
            print(f"{args.n * args.n} vertices x {frames} frames: cache {size / 1e6:.1f} MB, "
                  f"baked playback {float(np.median(ts)):.2f} ms/frame (median of 60)")


if __name__ == "__main__":
    main()
