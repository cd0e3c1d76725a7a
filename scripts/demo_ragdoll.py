"""The demo's ragdolls (issue 12): a twelve-bone ragdoll shoved off the top step (keyed for its
first frames, then released) tumbling down a flight of stairs behind the table, and a rig
walking toward the camera on a keyframed walk cycle that is released
(Animated keyed off) mid-stride and falls, keeping its walking speed. Shared by demo.py and
tests/blender/test_demo.py; the rig is scripts/ragdoll_rig.py's.
"""

import math

import numpy as np

import ragdoll_rig

STAIRS_X = -1.6               # the top step's back edge [m]; the flight goes down along +X
STAIRS_Y = 2.8
STEPS, RISE, RUN = 6, 0.18, 0.35
WALKER_XY = (1.05, 3.0)       # where the walker starts; it walks along -Y (its facing)
WALK_SPEED = 1.2              # [m/s]
RELEASE = 30                  # the frame its Animated switch turns off
PUSH, PUSH_FRAMES = 0.19, 3   # the tumbler's shove down the flight [m] over its first frames
FPS = 24.0


def add(scene, cfg):
    """Stairs, the tumbling ragdoll and the walker: {role: object}."""
    objs = {}
    steps = ragdoll_rig.stairs(n=STEPS, rise=RISE, run=RUN, width=1.6, x0=STAIRS_X)
    for i, s in enumerate(steps):
        s.location.y = STAIRS_Y
        objs[f"step{i}"] = s
    top = STEPS * RISE
    tumbler, body = ragdoll_rig.ragdoll("Tumbler", rotation=(0.1, 1.1, 0.2),
                                        location=(STAIRS_X + 0.15, STAIRS_Y, top + 0.05))
    push(tumbler, PUSH, PUSH_FRAMES)
    objs["tumbler"], objs["tumbler_body"] = tumbler, body
    walker, body = ragdoll_rig.ragdoll("Walker", location=(*WALKER_XY, 0.0))
    walk_cycle(walker, cfg.frames, RELEASE)
    objs["walker"], objs["walker_body"] = walker, body
    return objs


def push(rig, distance, frames):
    """Keyframe the rig moving ``distance`` [m] down the flight (+X) over its first ``frames``
    frames (Blender's default eased keys), Animated on, then released: it leaves the top step
    with the speed its animation had (seed 002's inherited velocity, about 2 m/s here), as an
    artist shoves a ragdoll, instead of dropping it to lie where it lands."""
    rig.keyframe_insert("location", frame=1)
    rig.location.x += distance
    rig.keyframe_insert("location", frame=1 + frames)
    rig.verlet.animated = True
    rig.keyframe_insert("verlet.animated", frame=1)
    rig.verlet.animated = False
    rig.keyframe_insert("verlet.animated", frame=1 + frames)


def walk_cycle(rig, frames, release):
    """A simple keyframed walk along -Y (the rig's facing) at WALK_SPEED: the pelvis glides
    forward with a slight bob, thighs and arms swing in opposition, knees bend on the swing;
    Animated on until ``release``."""
    period = 16                                    # frames per stride
    for f in range(1, frames + 1, 2):
        phase = 2 * math.pi * (f - 1) / period
        pelvis = rig.pose.bones["pelvis"]
        # the pelvis bone's local axes: Y up the spine, Z toward -Y (the roll), X toward +X
        pelvis.location = (0.0, 0.02 * math.cos(2 * phase), WALK_SPEED * (f - 1) / FPS)
        pelvis.keyframe_insert("location", frame=f)
        for side, sign in (("L", 1.0), ("R", -1.0)):
            swing = sign * math.radians(25) * math.sin(phase)
            _key(rig, f"thigh.{side}", swing, f)
            # knees bend back (negative about X) on the swing
            _key(rig, f"shin.{side}", -math.radians(35) * max(0.0, math.sin(phase + sign * 1.6)),
                 f)
            _key(rig, f"upper_arm.{side}", -0.6 * swing, f)
    rig.verlet.animated = True
    rig.keyframe_insert("verlet.animated", frame=1)
    rig.verlet.animated = False
    rig.keyframe_insert("verlet.animated", frame=release)


def _key(rig, bone, angle, frame, axis="X"):
    from mathutils import Quaternion
    v = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1)}[axis]
    pb = rig.pose.bones[bone]
    pb.rotation_quaternion = Quaternion(v, angle)
    pb.keyframe_insert("rotation_quaternion", frame=frame)


def measure(ext, objs):
    """Facts of the baked ragdolls, from their caches."""
    facts = {}
    header, frames = ext.addon.bake.load(objs["tumbler"])
    frames = np.asarray(frames, dtype=np.float64)
    k = header["bones"].index("pelvis")
    start, end = frames[0, k, :3, 3], frames[-1, k, :3, 3]
    facts["tumbler_moved_down_x"] = float(end[0] - start[0])
    facts["tumbler_dropped"] = float(start[2] - end[2])
    header, frames = ext.addon.bake.load(objs["walker"])
    frames = np.asarray(frames, dtype=np.float64)
    k = header["bones"].index("pelvis")
    y = frames[:, k, 1, 3]
    first = header["frame_start"]
    v = -np.diff(y) * FPS                          # speed along -Y, per frame
    i = RELEASE - first                           # the step into the release frame
    facts["walker_speed_walking"] = float(v[max(i - 8, 0):i].mean())
    facts["walker_speed_after_release"] = float(v[i:i + 3].mean()) if i + 3 <= len(v) \
        else float("nan")
    facts["walker_lowest_end"] = float(frames[-1, :, 2, 3].min())
    return facts


def lines(facts):
    f = facts
    return [f"    ragdoll on the stairs: pelvis {f['tumbler_moved_down_x']:.2f} m down the flight, "
            f"{f['tumbler_dropped']:.2f} m lower",
            f"    walker: {f['walker_speed_walking']:.2f} m/s walking, "
            f"{f['walker_speed_after_release']:.2f} m/s just after its release at frame "
            f"{RELEASE}"]
