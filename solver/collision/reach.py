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
forces.drag_particles): drag relaxes a velocity toward the wind's, so the wind's speed bounds what
it adds. A rigid body or a ragdoll in a windy scene keeps its own reach, unless a contact this
step joins it to a cloth in the wind (in the demo, the stairs' candidates were the whole
ragdoll, 0.4 m around each particle, for a 5 m/s wind that does not touch it).

The factor 2 is the slack the scene-wide bound had. With one bound for the scene, one ragdoll
flung at 15 m/s made every particle of 100 resting ragdolls a candidate of every stair
(133,000 candidate pairs for 400 contacts); with a bound per island the others keep their own.
"""

import numpy as np

SLACK = 1e-3    # [m] added to every reach


def scene_reach(motion2, h, dt, acc_max, wind_speed):
    """The scene-wide bound [m], the fastest particle's reach: what wakes sleeping bodies near a
    moving collider (sleep.py). motion2 (n,) [m^2] each particle's squared motion over the last
    substep, |x - x*|^2 (integrator.squared_motion), h [s] apart; acc_max [m/s^2] the largest
    acceleration; wind_speed [m/s]."""
    if not len(motion2):
        return SLACK
    vmax = float(np.sqrt(np.max(motion2))) / h + wind_speed
    return 2.0 * (vmax * dt + 0.5 * acc_max * dt * dt) + SLACK


def particle_reach(motion2, h, dt, acc_max, wind_speed, sleep, pins, body_idx):
    """(n,) [m] how far each particle may travel in the step of dt [s] (module docstring).
    motion2 (n,) [m^2] each particle's squared motion over the last substep, |x - x*|^2
    (integrator.squared_motion), h [s] apart; acc_max [m/s^2] the largest acceleration;
    wind_speed [m/s]; sleep the Sleep (its islands: island (n,), order (n,), start (I,),
    airy (I,), and Sleep.joined); pins a list of (ids (k,) int64, start (k, 3) [m], target
    (k, 3) [m]) whose targets move the pinned particles in this step; body_idx (K, 4) int64 this
    step's body contacts (particles, -1 for none: collision/bodies.py)."""
    n = len(motion2)
    if not n:
        return np.zeros(0)
    # an island's fastest particle, then its speed: sqrt and / h are monotonic, so this is
    # the largest of the particles' speeds bit for bit, at the cost of one pass, not five
    island_speed = np.sqrt(np.maximum.reduceat(motion2[sleep.order], sleep.start)) / h  # (I,)
    for ids, start, target in pins:
        if len(ids):
            m = target - start
            np.maximum.at(island_speed, sleep.island[ids],
                          np.sqrt(np.einsum("ij,ij->i", m, m)) / dt)
    island_speed = island_speed + np.where(sleep.airy, wind_speed, 0.0)          # [m/s]
    if len(body_idx):
        joined = sleep.joined(body_idx)
        fastest = np.zeros(int(joined.max()) + 1)
        np.maximum.at(fastest, joined, island_speed)
        island_speed = fastest[joined]
    island_reach = 2.0 * (island_speed * dt + 0.5 * acc_max * dt * dt) + SLACK    # (I,) [m]
    return island_reach[sleep.island]
