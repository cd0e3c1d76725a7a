"""How far each particle may travel during the next step: the margin of the collider broad phase
(colliders.Colliders.collide), per particle.

A particle's motion over a step of dt comes from its own velocity and acceleration, from the
constraints of its island (sticks, shape matching, joints, pins: sleep.py's islands, the connected
components of the constraint graph), from the air and from the bodies it touches during the step
(the body contacts the collide stage found just before). So the speed bound of a particle is the
fastest motion among the islands that this step's body contacts join to its own, not the fastest
particle in the scene:

    v_J = max_{j in J} |x_j - x*_j| / h   (and |pin target - x| / dt for pinned ones)
    s_J = v_J + (v_J + |u|_max) min(1, k_J (dt + h) / 2)    k_J = drag max_{j in J} A_j / m_j
    v_i = max over islands J joined to island(i) of s_J
    reach_i = 2 (v_i dt + |a|_max dt^2 / 2) + 1 mm

The air term: drag relaxes a velocity toward the terminal one, u + g / k, at the rate k = drag
A / m [1/s] (forces.py), so over a time t a particle that starts at v0 travels v0 t less (v0 -
u - g / k)(t - (1 - e^{-kt}) / k), and 0 <= t - (1 - e^{-kt}) / k <= min(k t^2 / 2, t): the
air adds at most (|v0| + |u|) min(k t / 2, 1) t, and its share of gravity's |g| t^2 / 2, which
the acceleration term holds. The substeps move each by the velocity at its end (apply_drag,
then the prediction), h sum_j (1 - e^{-k h j}) <= k h^2 N (N + 1) / 2 = k dt (dt + h) / 2 over
N substeps of h: hence dt + h (a heavy linen travels 2.5 % farther in 40 substeps than the
exact solution). Until 2026-11-30 it was |u| t for any island that feels the air,
the limit of a weightless cloth: the demo's 5 m/s gusts (up to 10.2 m/s) gave its tablecloth,
0.45 kg/m^2 (k = 2.2 / s, k dt / 2 = 0.046), a reach of 1.1 to 1.2 m a step where 0.4 m bounds
it, and every collider within that reach a candidate of each of its edges in every substep.

A rigid body or a ragdoll in a windy scene keeps its own reach (k = 0: no area), unless a contact
this step joins it to a cloth in the wind (in the demo, the stairs' candidates were the whole
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


def particle_reach(motion2, h, dt, acc_max, wind_speed, sleep, pins, body_idx, air_drag):
    """(n,) [m] how far each particle may travel in the step of dt [s] (module docstring).
    motion2 (n,) [m^2] each particle's squared motion over the last substep, |x - x*|^2
    (integrator.squared_motion), h [s] apart; acc_max [m/s^2] the largest acceleration;
    wind_speed [m/s]; sleep the Sleep (its islands: island (n,), order (n,), start (I,),
    air_rate (I,), and Sleep.joined); pins a list of (ids (k,) int64, start (k, 3) [m], target
    (k, 3) [m]) whose targets move the pinned particles in this step; body_idx (K, 4) int64 this
    step's body contacts (particles, -1 for none: collision/bodies.py); air_drag [kg/(m^2 s)]
    the drag coefficient (Simulation.air_drag)."""
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
    # the air's share (module docstring): k (dt + h) / 2 of the speed it may add, at most all
    air = np.minimum(air_drag * sleep.air_rate * (0.5 * (dt + h)), 1.0)             # (I,)
    island_speed = island_speed + (island_speed + wind_speed) * air               # [m/s]
    if len(body_idx):
        joined = sleep.joined(body_idx)
        fastest = np.zeros(int(joined.max()) + 1)
        np.maximum.at(fastest, joined, island_speed)
        island_speed = fastest[joined]
    island_reach = 2.0 * (island_speed * dt + 0.5 * acc_max * dt * dt) + SLACK    # (I,) [m]
    return island_reach[sleep.island]
