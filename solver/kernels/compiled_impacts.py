"""The compiled mirror of collision/impacts.rigid_velocities: the velocity pass of rigid bodies'
collider impacts after each substep (Mueller et al. 2020, section 3.6; that function's docstring
gives the impulses and why), with every expression of the NumPy kernel in its order (no
fastmath), so the backends agree bit for bit. A module of its own beside compiled_rigid.py (the
position solve), which it shares the world inverse inertia with.
"""

import numpy as np
from numba import njit

from .compiled_rigid_scalar import _iw9

VELOCITY_SWEEPS = 4   # collision/impacts.VELOCITY_SWEEPS


@njit(cache=True, fastmath=False)
def rigid_velocities(X, Xp, X_pred, particles, start, origin, rot, rigid, touching, collider,
                     normal, motion, e_restitution, e_particle, slow):
    """Scalar mirror of collision/impacts.rigid_velocities (the same arguments): the candidates
    one after another in each sweep, which is the NumPy kernel's colour by colour (a colour's
    are on different bodies). Only the candidates of bodies without a joint can take an
    impact (rigid[35], RigidContacts.cand_impact, in the candidates' order): a ragdoll's
    bones have none, and visiting every candidate each substep to find so cost 1.3 ms a
    frame at 100 ragdolls."""
    body, inv_mass, inv_inertia = rigid[22], rigid[2], rigid[3]
    cand_particle, cand_collider, cand_impact = rigid[17], rigid[18], rigid[35]
    count = cand_impact.shape[0]
    if count == 0:
        return
    fast = np.zeros(count, np.bool_)
    target = np.zeros(count)
    anything = False
    for mm in range(count):
        m = cand_impact[mm]
        i = cand_particle[m]
        if not touching[i] or collider[i] != cand_collider[m] or body[i] < 0:
            continue
        arrive = ((X_pred[0, i] - Xp[0, i] - motion[i, 0]) * normal[i, 0]
                  + (X_pred[1, i] - Xp[1, i] - motion[i, 1]) * normal[i, 1]
                  + (X_pred[2, i] - Xp[2, i] - motion[i, 2]) * normal[i, 2])
        if arrive < -slow:
            fast[mm] = True
            target[mm] = -max(e_restitution[cand_collider[m]], e_particle[i]) * arrive
            anything = True
    if not anything:
        return
    for _ in range(VELOCITY_SWEEPS):
        for mm in range(count):
            if not fast[mm]:
                continue
            i = cand_particle[cand_impact[mm]]
            n0 = normal[i, 0]
            n1 = normal[i, 1]
            n2 = normal[i, 2]
            un = ((X[0, i] - Xp[0, i] - motion[i, 0]) * n0
                  + (X[1, i] - Xp[1, i] - motion[i, 1]) * n1
                  + (X[2, i] - Xp[2, i] - motion[i, 2]) * n2)
            b = body[i]
            c0 = origin[b, 0]
            c1 = origin[b, 1]
            c2 = origin[b, 2]
            r0 = X[0, i] - c0
            r1 = X[1, i] - c1
            r2 = X[2, i] - c2
            x0 = r1 * n2 - r2 * n1
            x1 = r2 * n0 - r0 * n2
            x2 = r0 * n1 - r1 * n0
            a0, a1, a2 = _iw9(rot[b, 0, 0], rot[b, 0, 1], rot[b, 0, 2], rot[b, 1, 0],
                              rot[b, 1, 1], rot[b, 1, 2], rot[b, 2, 0], rot[b, 2, 1],
                              rot[b, 2, 2], inv_inertia[b, 0, 0], inv_inertia[b, 0, 1],
                              inv_inertia[b, 0, 2], inv_inertia[b, 1, 0], inv_inertia[b, 1, 1],
                              inv_inertia[b, 1, 2], inv_inertia[b, 2, 0], inv_inertia[b, 2, 1],
                              inv_inertia[b, 2, 2], x0, x1, x2)
            im = inv_mass[b]
            w = im + (x0 * a0 + x1 * a1 + x2 * a2)
            lam = (target[mm] - un) / w
            d0 = n0 * lam * im
            d1 = n1 * lam * im
            d2 = n2 * lam * im
            t0 = a0 * lam
            t1 = a1 * lam
            t2 = a2 * lam
            for e in range(start[b], start[b + 1]):
                j = particles[e]
                q0 = X[0, j] - c0
                q1 = X[1, j] - c1
                q2 = X[2, j] - c2
                Xp[0, j] = Xp[0, j] - (d0 + (t1 * q2 - t2 * q1))
                Xp[1, j] = Xp[1, j] - (d1 + (t2 * q0 - t0 * q2))
                Xp[2, j] = Xp[2, j] - (d2 + (t0 * q1 - t1 * q0))
