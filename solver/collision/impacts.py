"""The velocity pass of rigid bodies' collider impacts after each substep's relaxation
(Mueller et al., "Detailed Rigid Body Simulation with Extended Position Based Dynamics", 2020,
section 3.6): collision/rigid.py's module docstring gives the impulses and why; compiled
mirror kernels/compiled_impacts.py. For each impact (a contact that arrived faster than
2 |g| h), C(v) = v_n - v_n_target, v_n_target = -e v_n_arrival, as impulses on the body's x*
(its velocity changes, not x). Pure NumPy, a colour of candidates (on different bodies) per
batch."""

import numpy as np

from ..constraints.joints import _iw
from .rigid import _cross

# Gauss-Seidel sweeps of the velocity pass over the impacts (rigid_velocities)
VELOCITY_SWEEPS = 4


def rigid_velocities(X, Xp, X_pred, particles, start, origin, rot, rigid, touching, collider,
                     normal, motion, e_restitution, e_particle, slow):
    """The velocity pass at rigid bodies' collider contacts (module docstring), on x* only:
    X, Xp, X_pred (3, n) [m] positions, positions a substep ago (updated) and right after
    integration; particles (e,) int64 and start (K + 1,) int64 the clusters' entries
    (ShapeSolver's); origin (K, 3) [m] and rot (K, 3, 3) the bodies' poses; rigid
    RigidContacts.kernel_args(); touching, collider, normal (n, 3), motion (n, 3) [m] this
    substep's contacts (solve_rigid's); e_restitution (C,) per collider and e_particle (n,) per
    particle (an impact takes the larger: a body's particles carry its restitution); slow [m]
    2 |g| h^2:
    an arrival slower than that is a resting contact, left alone. VELOCITY_SWEEPS sweeps; a
    colour's candidates are on different bodies: one batch."""
    body, inv_mass, inv_inertia = rigid[22], rigid[2], rigid[3]
    cand_particle, cand_collider, cand_start = rigid[17], rigid[18], rigid[19]
    p = cand_particle
    # the impacts, and their arrival along the normal [m per substep], before any impulse
    fast = touching[p] & (collider[p] == cand_collider) & (body[p] >= 0)
    arrive = ((X_pred[0, p] - Xp[0, p] - motion[p, 0]) * normal[p, 0]
              + (X_pred[1, p] - Xp[1, p] - motion[p, 1]) * normal[p, 1]
              + (X_pred[2, p] - Xp[2, p] - motion[p, 2]) * normal[p, 2])
    fast &= arrive < -slow
    if not fast.any():
        return
    e = np.maximum(e_restitution[cand_collider], e_particle[p])
    target = -e * arrive                                  # (Qc,) [m per substep] leaving
    for _ in range(VELOCITY_SWEEPS):
        for col in range(len(cand_start) - 1):
            m = np.arange(cand_start[col], cand_start[col + 1])
            m = m[fast[m]]
            if not m.size:
                continue
            ids = cand_particle[m]
            n = [normal[ids, i] for i in range(3)]
            u = [X[i, ids] - Xp[i, ids] - motion[ids, i] for i in range(3)]
            un = u[0] * n[0] + u[1] * n[1] + u[2] * n[2]
            b = body[ids]
            r = [X[i, ids] - origin[b, i] for i in range(3)]
            x = _cross(r, n)
            a = _iw(rot[b], inv_inertia[b], x)
            w = inv_mass[b] + (x[0] * a[0] + x[1] * a[1] + x[2] * a[2])
            lam = (target[m] - un) / w
            dc = [n[i] * lam * inv_mass[b] for i in range(3)]
            dth = [a[i] * lam for i in range(3)]
            sizes = start[b + 1] - start[b]
            rep = np.repeat(np.arange(len(b)), sizes)
            first = np.repeat(start[b] - (np.cumsum(sizes) - sizes), sizes)
            pid = particles[np.arange(len(rep)) + first]
            rr = [X[i, pid] - origin[b[rep], i] for i in range(3)]
            cr = _cross([v[rep] for v in dth], rr)
            for i in range(3):
                Xp[i, pid] -= dc[i][rep] + cr[i]
