"""The compiled mirror of collision/impacts.rigid_velocities: the velocity pass of rigid bodies'
collider impacts after each substep (Mueller et al. 2020, section 3.6; that function's docstring
gives the impulses and why), with every expression of the NumPy kernel in its order (no
fastmath), so the backends agree bit for bit. A module of its own beside compiled_rigid.py (the
position solve), which it shares the world inverse inertia with.
"""

import numpy as np
from numba import njit

from .compiled_rigid_scalar import _EDGES, _SEGMENTS, _geometry, _iw9, _resp

VELOCITY_SWEEPS = 4   # collision/impacts.VELOCITY_SWEEPS


@njit(cache=True, fastmath=False, inline="always")
def _push(X, Xp, particles, start, b, c0, c1, c2, d0, d1, d2, t0, t1, t2):
    """Body b's velocity change as an impulse's move of its particles' x*: each particle j of
    its cluster, at x_j - c from its centre c, moves by -(d + t x (x_j - c)) [m], d the centre's
    and t the turn's share (impacts.py's formula, its operations in order)."""
    for e in range(start[b], start[b + 1]):
        j = particles[e]
        q0 = X[0, j] - c0
        q1 = X[1, j] - c1
        q2 = X[2, j] - c2
        Xp[0, j] = Xp[0, j] - (d0 + (t1 * q2 - t2 * q1))
        Xp[1, j] = Xp[1, j] - (d1 + (t2 * q0 - t0 * q2))
        Xp[2, j] = Xp[2, j] - (d2 + (t0 * q1 - t1 * q0))


@njit(cache=True, fastmath=False, inline="always")
def _surface_speed(X, Xp, normal, motion, i):
    """Particle i's collider contact: its normal (3 floats) and its normal motion over the
    substep relative to the surface, (x - x* - m) . n [m] (impacts.py's expression)."""
    n0 = normal[i, 0]
    n1 = normal[i, 1]
    n2 = normal[i, 2]
    un = ((X[0, i] - Xp[0, i] - motion[i, 0]) * n0
          + (X[1, i] - Xp[1, i] - motion[i, 1]) * n1
          + (X[2, i] - Xp[2, i] - motion[i, 2]) * n2)
    return n0, n1, n2, un


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
            n0, n1, n2, un = _surface_speed(X, Xp, normal, motion, i)
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
            _push(X, Xp, particles, start, b, c0, c1, c2, d0, d1, d2, t0, t1, t2)


@njit(cache=True, fastmath=False, inline="always")
def _corner(A, idx, q, k, i):
    """Coordinate i [m] of contact q's corner k in A (3, n), 0 for no corner (-1)."""
    p = idx[q, k]
    return A[i, p] if p >= 0 else 0.0


@njit(cache=True, fastmath=False, inline="always")
def _corner_geometry(A, idx, q, kd, side, dist, jit):
    """compiled_rigid_scalar._geometry of contact q with its corners where A (3, n) has them."""
    return _geometry(kd, side[q], dist[q], jit[q, 0], jit[q, 1], jit[q, 2],
                     _corner(A, idx, q, 0, 0), _corner(A, idx, q, 0, 1), _corner(A, idx, q, 0, 2),
                     _corner(A, idx, q, 1, 0), _corner(A, idx, q, 1, 1), _corner(A, idx, q, 1, 2),
                     _corner(A, idx, q, 2, 0), _corner(A, idx, q, 2, 1), _corner(A, idx, q, 2, 2),
                     _corner(A, idx, q, 3, 0), _corner(A, idx, q, 3, 1), _corner(A, idx, q, 3, 2))


@njit(cache=True, fastmath=False, inline="always")
def _relative_normal(A, B, idx, q, w0, w1, w2, w3, m0, m1, m2):
    """impacts._relative_normal: sum_k w_k (A_k - B_k) . m over contact q's corners."""
    out = 0.0
    for i in range(3):
        u = 0.0
        for k in range(4):
            p = idx[q, k]
            if p >= 0:
                wk = w0 if k == 0 else (w1 if k == 1 else (w2 if k == 2 else w3))
                u = u + wk * (A[i, p] - B[i, p])
        mi = m0 if i == 0 else (m1 if i == 1 else m2)
        out = out + u * mi
    return out


@njit(cache=True, fastmath=False)
def rigid_pair_velocities(X, Xp, X_pred, Xp0, particles, start, origin, rot, rigid, contact,
                          e_particle, slow):
    """Scalar mirror of collision/impacts.rigid_pair_velocities (the same arguments): the
    contacts between rigid bodies that arrived fast with a restitution above 0, one after
    another in each sweep, every expression in the NumPy kernel's order."""
    body, inv_mass, inv_inertia = rigid[0], rigid[2], rigid[3]
    idx, kind, side, dist, jit = rigid[10], rigid[11], rigid[12], rigid[13], rigid[15]
    impact_body, sums = rigid[22], rigid[30]
    Q = kind.shape[0]
    # per impact: its contact, restitution target, normal, weights, bodies, points
    hit_q = np.empty(Q, np.int64)
    hit = np.empty((Q, 14))         # target, m0..m2, w0..w3, pa0..pa2, pb0..pb2
    w = np.empty(4)                 # scratch: one contact's corner weights
    count = 0
    for q in range(Q):
        if not sums[q, 0] > 0:
            continue
        e = 0.0
        for k in range(4):
            if idx[q, k] >= 0:
                e = max(e, e_particle[idx[q, k]])
        if not e > 0:
            continue
        kd = kind[q]
        if kd == _EDGES:
            continue                # edge-edge impacts stay the position solve's (impacts.py)
        two = kd == _SEGMENTS
        ia = idx[q, 0]
        ib = idx[q, 2] if two else idx[q, 1]
        ba = body[ia]
        bb = body[ib] if ib >= 0 else -1
        if (ba >= 0 and impact_body[ia] < 0) or (bb >= 0 and impact_body[ib] < 0):
            continue
        if ba < 0 and bb < 0:
            continue
        ok, m0, m1, m2, pen, w0, w1, w2, w3 = _corner_geometry(Xp0, idx, q, kd, side, dist,
                                                               jit)
        if ok and pen > slow:
            continue                # deep inside a substep ago: not an impact (impacts.py)
        ok, m0, m1, m2, pen, w0, w1, w2, w3 = _corner_geometry(X, idx, q, kd, side, dist, jit)
        if not ok:
            continue
        w[0] = w0 if idx[q, 0] >= 0 else 0.0
        w[1] = w1 if idx[q, 1] >= 0 else 0.0
        w[2] = w2 if idx[q, 2] >= 0 else 0.0
        w[3] = w3 if idx[q, 3] >= 0 else 0.0
        arrive = _relative_normal(X_pred, Xp0, idx, q, w[0], w[1], w[2], w[3], m0, m1, m2)
        if not arrive < -slow:
            continue
        hit_q[count] = q
        hit[count, 0] = -e * arrive
        hit[count, 1] = m0
        hit[count, 2] = m1
        hit[count, 3] = m2
        for k in range(4):
            hit[count, 4 + k] = w[k]
        for i in range(3):
            x0, x1, x2, x3 = _corner(X, idx, q, 0, i), _corner(X, idx, q, 1, i), \
                _corner(X, idx, q, 2, i), _corner(X, idx, q, 3, i)
            hit[count, 8 + i] = w[0] * x0 + (w[1] * x1 if two else 0.0)
            hit[count, 11 + i] = ((0.0 if two else -w[1] * x1) - w[2] * x2) - w[3] * x3
        count += 1
    if count == 0:
        return
    # the involved bodies' resting collider contacts, one-sided (impacts.py)
    involved = np.zeros(inv_mass.shape[0], np.bool_)
    for hh in range(count):
        q = hit_q[hh]
        two = kind[q] == _SEGMENTS
        ib = idx[q, 2] if two else idx[q, 1]
        if body[idx[q, 0]] >= 0:
            involved[body[idx[q, 0]]] = True
        if ib >= 0 and body[ib] >= 0:
            involved[body[ib]] = True
    touching, collider, normal, motion = contact
    cand_particle, cand_collider, cand_impact = rigid[17], rigid[18], rigid[35]
    supports = np.empty(cand_impact.shape[0], np.int64)
    n_sup = 0
    for mm in cand_impact:
        i = cand_particle[mm]
        if touching[i] and collider[i] == cand_collider[mm] and body[i] >= 0 \
                and involved[body[i]]:
            supports[n_sup] = i
            n_sup += 1
    taken = np.zeros(n_sup)         # the impulse each support took, kept >= 0
    for _ in range(VELOCITY_SWEEPS):
        for hh in range(count):
            q = hit_q[hh]
            kd = kind[q]
            two = kd == _SEGMENTS
            ia = idx[q, 0]
            ib = idx[q, 2] if two else idx[q, 1]
            m0 = hit[hh, 1]
            m1 = hit[hh, 2]
            m2 = hit[hh, 3]
            un = _relative_normal(X, Xp, idx, q, hit[hh, 4], hit[hh, 5], hit[hh, 6], hit[hh, 7],
                                  m0, m1, m2)
            W = 0.0
            for s in range(2):
                b = body[ia] if s == 0 else (body[ib] if ib >= 0 else -1)
                if b >= 0:
                    o = 8 + 3 * s
                    W = W + _body_resp(origin, rot, inv_mass, inv_inertia, b, hit[hh, o],
                                       hit[hh, o + 1], hit[hh, o + 2], m0, m1, m2)
            lam = (hit[hh, 0] - un) / W
            for s in range(2):
                b = body[ia] if s == 0 else (body[ib] if ib >= 0 else -1)
                if b >= 0:
                    lb = lam if s == 0 else -lam
                    o = 8 + 3 * s
                    _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass,
                                       inv_inertia, b, hit[hh, o], hit[hh, o + 1],
                                       hit[hh, o + 2], m0 * lb, m1 * lb, m2 * lb)
        for ss in range(n_sup):
            i = supports[ss]
            n0, n1, n2, un = _surface_speed(X, Xp, normal, motion, i)
            b = body[i]
            lam = (0.0 - un) / _body_resp(origin, rot, inv_mass, inv_inertia, b, X[0, i],
                                          X[1, i], X[2, i], n0, n1, n2)
            lam = max(taken[ss] + lam, 0.0) - taken[ss]
            if lam == 0.0:
                continue
            taken[ss] = taken[ss] + lam
            _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass, inv_inertia, b,
                               X[0, i], X[1, i], X[2, i], n0 * lam, n1 * lam, n2 * lam)


@njit(cache=True, fastmath=False, inline="always")
def _body_resp(origin, rot, inv_mass, inv_inertia, b, P0, P1, P2, n0, n1, n2):
    """_resp of body b from its pose and inertia arrays."""
    return _resp(inv_mass[b], origin[b, 0], origin[b, 1], origin[b, 2], rot[b, 0, 0],
                 rot[b, 0, 1], rot[b, 0, 2], rot[b, 1, 0], rot[b, 1, 1], rot[b, 1, 2],
                 rot[b, 2, 0], rot[b, 2, 1], rot[b, 2, 2], inv_inertia[b, 0, 0],
                 inv_inertia[b, 0, 1], inv_inertia[b, 0, 2], inv_inertia[b, 1, 0],
                 inv_inertia[b, 1, 1], inv_inertia[b, 1, 2], inv_inertia[b, 2, 0],
                 inv_inertia[b, 2, 1], inv_inertia[b, 2, 2], P0, P1, P2, n0, n1, n2)


@njit(cache=True, fastmath=False, inline="always")
def _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass, inv_inertia, b, P0, P1,
                       P2, p0, p1, p2):
    """impacts._impulse_on_x_star: the impulse p (signed) at P on body b's x*."""
    c0 = origin[b, 0]
    c1 = origin[b, 1]
    c2 = origin[b, 2]
    r0 = P0 - c0
    r1 = P1 - c1
    r2 = P2 - c2
    im = inv_mass[b]
    d0 = p0 * im
    d1 = p1 * im
    d2 = p2 * im
    t0, t1, t2 = _iw9(rot[b, 0, 0], rot[b, 0, 1], rot[b, 0, 2], rot[b, 1, 0], rot[b, 1, 1],
                      rot[b, 1, 2], rot[b, 2, 0], rot[b, 2, 1], rot[b, 2, 2],
                      inv_inertia[b, 0, 0], inv_inertia[b, 0, 1], inv_inertia[b, 0, 2],
                      inv_inertia[b, 1, 0], inv_inertia[b, 1, 1], inv_inertia[b, 1, 2],
                      inv_inertia[b, 2, 0], inv_inertia[b, 2, 1], inv_inertia[b, 2, 2],
                      r1 * p2 - r2 * p1, r2 * p0 - r0 * p2, r0 * p1 - r1 * p0)
    _push(X, Xp, particles, start, b, c0, c1, c2, d0, d1, d2, t0, t1, t2)
