"""What showing a baked frame costs, against the cache's length: a 10,000-vertex cloth baked over
25 and over 250 frames (3 MB and 30 MB caches beside a saved .blend), then 60 frame changes in a
seeded random order through the frame handler (one frame read by seek, the display key written).
Then a baked ragdoll whose armature carries a motion capture's worth of keys (every bone keyed on
every frame, released from it halfway: its keyed Animated switch), the same 60 frame changes:
the frame handler checks the settings on every frame shown (addon/validity.py), which must not
read the bones' animation. Then the demo's bake (out/demo.blend, from `bash scripts/demo.sh
--no-render`; skipped when it is not there): 60 frame changes, and what the settings check costs
in them (validity.current_hash), against the full hash on every frame (as before current_hash).
Prints the median milliseconds per frame of each; nothing is asserted (but that the demo's bake
is current: an outdated one is a stale demo.blend).

    .venv/bin/python benchmarks/baked_playback.py [--n 100] [--lengths 25 250] [--rig-frames 250]
                                                  [--demo out/demo.blend]
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
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, ROOT)


def frame_changes(scene, frames):
    """[ms] of 60 frame changes in a seeded random order over 1..frames (after one untimed)."""
    scene.frame_set(2)
    ts = []
    for f in np.random.default_rng(0).integers(1, frames + 1, 60):
        t = time.perf_counter()
        scene.frame_set(int(f))
        ts.append((time.perf_counter() - t) * 1e3)
    return ts


def demo_playback(path):
    """(ms per frame change, ms of the settings check in it) over 60 frame changes of the
    demo's bake, with validity.current_hash and with the full hash on every frame."""
    import bpy
    from verlet_physics.addon import validity
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    frames = scene.frame_end
    current = validity.current_hash
    out = {}
    for name, check in (("current_hash", current), ("settings_hash", validity.settings_hash)):
        spent = []

        def timed(s, check=check, spent=spent):
            t = time.perf_counter()
            try:
                return check(s)
            finally:
                spent.append((time.perf_counter() - t) * 1e3)
        validity.current_hash = timed          # what the frame handler calls
        try:
            ts = frame_changes(scene, frames)
        finally:
            validity.current_hash = current
        out[name] = (float(np.median(ts)), float(np.median(spent[-len(ts):])))
    outdated = [o.name for o in scene.objects if o.get(validity.OUTDATED_KEY)]
    assert not outdated, f"the demo's bake is outdated for {outdated}: run scripts/demo.sh again"
    return out, sum(o.verlet.kind != "NONE" for o in scene.objects)


def keyed_ragdoll(frames):
    """A skinned ragdoll standing on the ground, every bone keyed on every frame (a motion
    capture: 12 bones x 4 channels x frames keys), Animated keyed on at frame 1 and off halfway."""
    import ragdoll_rig
    import scenes
    scenes.ground()
    r, _ = ragdoll_rig.ragdoll(location=(0.0, 0.0, 0.05))
    for k, pb in enumerate(r.pose.bones):
        pb.rotation_mode = "QUATERNION"
        for f in range(1, frames + 1):
            a = 0.1 * np.sin(0.3 * f + k)
            pb.rotation_quaternion = (np.cos(a), np.sin(a), 0.0, 0.0)
            pb.keyframe_insert("rotation_quaternion", frame=f)
    r.verlet.animated = True
    r.keyframe_insert("verlet.animated", frame=1)
    r.verlet.animated = False
    r.keyframe_insert("verlet.animated", frame=max(2, frames // 2))
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="grid side (100^2 = 10,000 vertices)")
    ap.add_argument("--lengths", type=int, nargs="*", default=[25, 250])
    ap.add_argument("--rig-frames", type=int, default=250,
                    help="frames of the keyed ragdoll's bake (0: skip it)")
    ap.add_argument("--demo", default=os.path.join(ROOT, "out", "demo.blend"),
                    help="the demo's .blend with its bake (skipped when missing)")
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
            ts = frame_changes(bpy.context.scene, frames)
            size = os.path.getsize(bpy.path.abspath(c["verlet_cache"]))
            print(f"{args.n * args.n} vertices x {frames} frames: cache {size / 1e6:.1f} MB, "
                  f"baked playback {float(np.median(ts)):.2f} ms/frame (median of 60)")
        if args.rig_frames:
            frames = args.rig_frames
            bpy.ops.wm.read_factory_settings(use_empty=True)
            scenes.set_range(1, frames)
            r = keyed_ragdoll(frames)
            bpy.ops.wm.save_as_mainfile(filepath=os.path.join(tmp, "rig.blend"))
            scenes.bake_op()
            assert r.get("verlet_baked"), r.get("verlet_status")
            ts = frame_changes(bpy.context.scene, frames)
            print(f"ragdoll x {frames} frames, its bones keyed on every frame: baked playback "
                  f"{float(np.median(ts)):.2f} ms/frame (median of 60)")
    if args.demo and os.path.exists(args.demo):
        res, n = demo_playback(args.demo)
        (play, check), (play_full, check_full) = res["current_hash"], res["settings_hash"]
        print(f"demo ({n} Verlet objects): baked playback {play:.2f} ms/frame, of which the "
              f"settings check {check:.3f} ms; with the full hash on every frame {play_full:.2f} "
              f"ms/frame, of which the hash {check_full:.3f} ms (medians of 60)")
    elif args.demo:
        print(f"demo: {args.demo} not found (bash scripts/demo.sh --no-render makes it)")


if __name__ == "__main__":
    main()
