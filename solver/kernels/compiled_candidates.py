"""Numba-compiled candidates of the colliders: the collide stage's broad phase against the
primitives (collision/colliders.primitive_candidates' mirror), and each candidate pair's
clearance at the step's start, which lets the compiled loop skip the pairs that cannot reach
their collider yet (project_colliders in compiled_contact.py). The same SDF operations as the
projection (compiled_contact._distance, _local_sdf, _approx_sdf).
Importing this module requires Numba.
"""

import numpy as np
from numba import njit, prange

from .compiled_contact import _MESH, _approx_sdf, _distance, _local_sdf
from .compiled_options import prange_only

# [m] kept off a pair's clearance: more than the tunnelling guard's tolerance
# (compiled_contact.GUARD_TOLERANCE, 1e-6 m) and the SDF's rounding
CLEAR_MARGIN = 1e-5


# below this many particles the broad phase runs on the calling thread: called from Python, a
# parallel region first wakes the threads (100 crates: 60 us a call on two threads, 13 on one)
SERIAL_BELOW = 8192


@njit(cache=True, fastmath=False, inline="always")
def _candidates_of(shape, approximate, abc, R, t, s, take, X, reach, extra, out, i):
    """Particle i of X (3, m) against every collider in take: out[k, i]."""
    x0 = X[0, i]
    x1 = X[1, i]
    x2 = X[2, i]
    for k in range(shape.shape[0]):
        if not take[k]:
            continue
        d0 = x0 - t[k, 0]
        d1 = x1 - t[k, 1]
        d2 = x2 - t[k, 2]
        q0 = d0 * R[k, 0, 0] + d1 * R[k, 1, 0] + d2 * R[k, 2, 0]
        q1 = d0 * R[k, 0, 1] + d1 * R[k, 1, 1] + d2 * R[k, 2, 1]
        q2 = d0 * R[k, 0, 2] + d1 * R[k, 1, 2] + d2 * R[k, 2, 2]
        if approximate[k]:
            phi = _approx_sdf(shape[k], abc[k, 0], abc[k, 1], abc[k, 2], s[k, 0], s[k, 1],
                              q0, q1, q2)[0]
        else:
            phi = _local_sdf(shape[k], abc[k, 0], abc[k, 1], abc[k, 2], q0, q1, q2)[0]
        out[k, i] = phi < reach[i] + extra[k]


@njit(cache=True, parallel=prange_only(), fastmath=False)
def primitive_candidates(shape, approximate, abc, R, t, s, take, X, reach, extra, out):
    """Scalar mirror of collision/colliders.primitive_candidates: particle after particle in
    parallel (on the calling thread below SERIAL_BELOW), each against every collider in
    ``take``; the same SDF operations as the projection, so the same candidates on both
    backends."""
    if X.shape[1] < SERIAL_BELOW:
        for i in range(X.shape[1]):
            _candidates_of(shape, approximate, abc, R, t, s, take, X, reach, extra, out, i)
    else:
        for i in prange(X.shape[1]):
            _candidates_of(shape, approximate, abc, R, t, s, take, X, reach, extra, out, i)


@njit(cache=True, fastmath=False, inline="always")
def _exact_still(moving, approximate, k):
    """Whether collider k keeps one exact SDF through the step: in no substep does it move or
    take a first-order SDF (moving, approximate (S, C) bool), so a distance at the step's
    start bounds the distances in every substep (the clearances here and in
    compiled_edges.edge_clearance)."""
    exact = True
    for u in range(moving.shape[0]):
        if moving[u, k] or approximate[u, k]:
            exact = False
    return exact


_SPHERE = 1            # collision/frames.SPHERE


@njit(cache=True, fastmath=False, inline="always")
def _sphere_phi(u0, u1, u2, rho):
    """[m] a sphere's signed distance at u, the point less its centre (radius rho), in world
    space: a square root, where _distance's frame and gradient take three divisions more (a
    bound within rounding of it, which CLEAR_MARGIN covers)."""
    return np.sqrt(u0 * u0 + u1 * u1 + u2 * u2) - rho


@njit(cache=True, parallel=prange_only(), fastmath=False)
def candidate_clearance(X0, particles, particle_start, pair_collider, shape, approximate, abc,
                        thickness, radius, R, t, s, moving, mesh, out):
    """out (q,) [m] for each candidate pair (particles, particle_start, pair_collider, as
    project_colliders'), how far its particle at X0 (3, n) [m] (the step's start) is clear of
    the collider's offset surface, less CLEAR_MARGIN; -inf where no bound holds (a mesh, a
    first-order SDF, a collider that moves in the step). A primitive's exact SDF is a distance,
    so 1-Lipschitz: a point within d of X0 has phi > thickness + radius while d < out, and
    then its projection, tunnelling guard included, changes nothing (project_colliders skips
    it). approximate, moving (S, C) bool and abc (S, C, 3), R (S, C, 3, 3), t, s (S, C, 3) the
    colliders' placements per substep (Colliders.placements)."""
    for v in prange(particles.shape[0]):
        i = particles[v]
        for r in range(particle_start[v], particle_start[v + 1]):
            k = pair_collider[r]
            out[r] = -np.inf
            if shape[k] == _MESH:
                continue
            if shape[k] == _SPHERE and _exact_still(moving, approximate, k):
                phi = _sphere_phi(X0[0, i] - t[0, k, 0], X0[1, i] - t[0, k, 1],
                                  X0[2, i] - t[0, k, 2], abc[0, k, 0])
                out[r] = phi - thickness[k] - radius[i] - CLEAR_MARGIN
            elif _exact_still(moving, approximate, k):
                phi = _distance(shape[k], False, abc[0, k, 0], abc[0, k, 1], abc[0, k, 2],
                                R[0, k], t[0, k], s[0, k], R[0, k], t[0, k], X0[0, i],
                                X0[1, i], X0[2, i], X0[0, i], X0[1, i], X0[2, i], k, mesh)[0]
                out[r] = phi - thickness[k] - radius[i] - CLEAR_MARGIN


@njit(cache=True, fastmath=False)
def least_clearance(particles, particle_start, clear, least2, slot):
    """For project_colliders' test of a particle at once: least2 (n,) [m^2] each candidate
    particle's least clearance (clear (q,) [m], candidate_clearance's) over its pairs, squared,
    or -1 where that is not positive (a pair that is never skipped; a NaN clearance, from a
    degenerate collider, counts as none), and slot (n,) int64 its index in particles (u,)
    (particle_start (u + 1,) int64 its pairs), -1 for a particle that is no candidate."""
    slot[:] = -1
    for v in range(particles.shape[0]):
        least = np.inf
        for r in range(particle_start[v], particle_start[v + 1]):
            c = clear[r]
            least = min(least, c) if c == c else -np.inf
        i = particles[v]
        least2[i] = least * least if least > 0 else -1.0
        slot[i] = v
