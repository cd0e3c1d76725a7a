"""How far each particle may travel during the next step: the margin of the collider broad phase
(colliders.Colliders.collide), per particle.

A particle's motion over a step of dt comes from its own velocity and acceleration, from the
constraints of its island (sticks, shape matching, joints, pins: sleep.py's islands, the connected
components of the constraint graph) and from the bodies it touches during the step (the body
contacts the collide stage found just before). So the speed bound of a particle is the fastest
motion among the islands that this step's body contacts join to its own, not the fastest
particle in the scene:

    v_i = max over islands J joined to island(i) of (max_{j in J} |x_j - x*_j| / h
                                 (and |pin target - x| / dt for pinned ones)
                                 + the wind's speed if J feels the air)
    reach_i = 2 (v_i dt + |a|_max dt^2 / 2) + 1 mm

An island feels the air when one of its particles has an area (drag acts on nothing else,
forces.drag_terms): drag relaxes a velocity toward the wind's, so the wind's speed bounds what
it adds. A rigid body or a ragdoll in a windy scene keeps its own reach, unless a contact this
step joins it to a cloth in the wind (in the demo, the stairs' candidates were the whole
ragdoll, 0.4 m around each particle, for a 5 m/s wind that does not touch it).

The factor 2 is the slack the scene-wide bound had. With one bound for the scene, one ragdoll
flung at 15 m/s made every particle of 100 resting ragdolls a candidate of every stair
(133,000 candidate pairs for 400 contacts); with a bound per island the others keep their own.
"""

import numpy as np

SLACK = 1e-3    # [m] added to every reach


def scene_reach(x, xp, h, dt, acc, wind_speed):
    """The scene-wide bound ([m], the fastest particle's reach) and the largest acceleration
    [m/s^2] of acc (n, 3): what wakes sleeping bodies near a moving collider (sleep.py)."""
    if not len(x):
        return SLACK, 0.0
    d = x - xp
    vmax = float(np.sqrt(np.max(np.einsum("ij,ij->i", d, d)))) / h + wind_speed
    amax = float(np.sqrt(np.max(np.einsum("ij,ij->i", acc, acc))))
    return 2.0 * (vmax * dt + 0.5 * amax * dt * dt) + SLACK, amax


def particle_reach(x, xp, h, dt, acc_max, wind_speed, sleep, pins, body_idx):
    """(n,) [m] how far each particle may travel in the step of dt [s] (module docstring).
    x, xp (n, 3) [m] positions now and a substep ago (h [s] apart); acc_max [m/s^2] the
    largest acceleration; wind_speed [m/s]; sleep the Sleep (its islands: island (n,),
    order (n,), start (I,), airy (I,), and Sleep.joined); pins a list of (ids (k,) int64, start (k, 3) [m], target (k, 3) [m])
    whose targets move the pinned particles in this step; body_idx (K, 4) int64 this step's
    body contacts (particles, -1 for none: collision/bodies.py)."""
    n = len(x)
    if not n:
        return np.zeros(0)
    d = x - xp
    speed = np.sqrt(np.einsum("ij,ij->i", d, d)) / h          # (n,) [m/s]
    for ids, start, target in pins:
        if len(ids):
            m = target - start
            speed[ids] = np.maximum(speed[ids], np.sqrt(np.einsum("ij,ij->i", m, m)) / dt)
    island_speed = np.maximum.reduceat(speed[sleep.order], sleep.start)      # (I,) [m/s]
    island_speed = island_speed + np.where(sleep.airy, wind_speed, 0.0)
    if len(body_idx):
        joined = sleep.joined(body_idx)
        fastest = np.zeros(int(joined.max()) + 1)
        np.maximum.at(fastest, joined, island_speed)
        island_speed = fastest[joined]
    v = island_speed[sleep.island]
    return 2.0 * (v * dt + 0.5 * acc_max * dt * dt) + SLACK
