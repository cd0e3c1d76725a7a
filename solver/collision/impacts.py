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


def rigid_pair_velocities(X, Xp, X_pred, Xp0, particles, start, origin, rot, rigid, contact,
                          e_particle, slow):
    """The velocity pass at the contacts between rigid bodies (collision/rigid.py, RigidContacts:
    vertex-triangle, edge-edge, particle pairs and capsule axes between two bodies, or a body
    and something immovable), after rigid_velocities: each contact that took a normal impulse
    in this substep's solve (its sum, rigid[30][q, 0] > 0) and arrived faster than slow [m per
    substep], with e the largest restitution of its corners' particles (e_particle (n,)) above
    0, gets the impulse pair that sets the bodies' relative normal speed at its points to
    -e v_arrive: C(v) = v_n - v_n_target on the two bodies' x*, as rigid_velocities does on one
    (Mueller et al. 2020, section 3.6). Only restitution: a contact of e = 0 is left to the
    position solve (so scenes without a bouncy body move as before), as is a contact of a body
    that carries a joint (rigid_velocities leaves those to the particle pass too).

    Its geometry (normal m, corner weights w) is taken again from the corners now (X (3, n)
    [m], after the substep's solve; collision/rigid_pairs._scalar_geometry, the position
    pass's own); v_arrive = sum_k w_k (x'_k - x*0_k) . m before any correction (X_pred, and
    Xp0 (3, n) [m]: x* before rigid_velocities' impulses, so a crate that bounced off the
    ground does not bring that bounce into its arrival at the crate above it), v_n the same
    on X and x* now, both the relative motion of side a (the vertex, the first axis) against
    side b over the substep. An impact is a contact that was apart (or touching, within slow)
    a substep ago, by the same geometry on Xp0: one that began the substep deep inside is the
    position solve's. Edge-edge contacts are left out: with them, in a 100-crate pile of
    restitution 0.7 (benchmarks/crates.py's drop 1), a crate sank 13 cm into another over ten
    frames, the pass pushing the crossing edges along their normal while a corner was inside;
    vertex-triangle contacts carry a box's impacts on faces (without the edges and with the
    filters above, six drops of that pile: no corner deeper than 7 mm in another, sampled
    every fifth frame, none at the end; measured 2026-11-27).

    lambda = (target - v_n) / (w_a + w_b) (rigid._Solve.response's w at the contact points),
    then x* of each particle j of body a -= lambda m / M_a + (I_a^-1 (r_a x lambda m)) x
    (x_j - c_a), and of body b the same with -lambda. The collider contacts of the bodies
    these impacts move that touch this substep (contact: touching, collider, normal, motion,
    solve_rigid's; among RigidContacts.cand_impact's candidates) take part as one-sided
    constraints, v_n >= 0 against the collider's surface, their summed impulse kept >= 0
    (projected Gauss-Seidel): without them a bouncy 0.4 m box dropped 1 m onto a box resting
    on the ground rose 4 mm at e = 0.5 (16 mm at e = 0), the impact driving the lower box into
    the ground; with them 0.34 m (0.25 on a box ten times heavier: e^2 of the drop; the extra
    is the impact's position solve pressing the lower box into the ground, which pushes it
    back; measured 2026-11-27). VELOCITY_SWEEPS Gauss-Seidel sweeps, each over the impacts in
    the contacts' order, then the collider contacts; plain floats, the compiled kernel's
    operations (kernels/compiled_impacts.rigid_pair_velocities)."""
    from .bodies import EDGES, SEGMENTS
    from .rigid_pairs import _scalar_geometry, _scalar_response
    idx, kind, side, dist, jit = rigid[10], rigid[11], rigid[12], rigid[13], rigid[15]
    body, impact_body, sums = rigid[0], rigid[22], rigid[30]
    inv_mass, inv_inertia = rigid[2], rigid[3]
    if not len(kind):
        return
    e = np.where(idx >= 0, e_particle[np.maximum(idx, 0)], 0.0).max(axis=1)     # (Q,)
    live = np.nonzero((e > 0) & (sums[:, 0] > 0))[0]
    if not live.size:
        return
    hits = []          # (q, e, m, w, (ba, bb), target)
    for q in live.tolist():
        ix = idx[q].tolist()
        kd = int(kind[q])
        if kd == EDGES:
            continue            # edge-edge impacts stay the position solve's (docstring)
        two = kd == SEGMENTS
        ia, ib = ix[0], ix[2] if two else ix[1]
        ba = int(body[ia])
        bb = int(body[ib]) if ib >= 0 else -1
        # a jointed body's impacts are the particle pass's; a contact moving no body has none
        if (ba >= 0 and impact_body[ia] < 0) or (bb >= 0 and impact_body[ib] < 0):
            continue
        if ba < 0 and bb < 0:
            continue
        j0, j1, j2 = (float(v) for v in jit[q])
        # an impact is a contact that was apart (or just touching) a substep ago: one that
        # started deep inside (a corner through a face) is the position solve's to undo
        x = [(float(Xp0[0, p]), float(Xp0[1, p]), float(Xp0[2, p])) if p >= 0 else (0.0, 0.0, 0.0)
             for p in ix]
        ok, _, _, _, pen, _, _, _, _ = _scalar_geometry(kd, float(side[q]), float(dist[q]),
                                                        j0, j1, j2, x)
        if ok and pen > slow:
            continue
        x = [(float(X[0, p]), float(X[1, p]), float(X[2, p])) if p >= 0 else (0.0, 0.0, 0.0)
             for p in ix]
        ok, m0, m1, m2, _, w0, w1, w2, w3 = _scalar_geometry(kd, float(side[q]), float(dist[q]),
                                                             j0, j1, j2, x)
        if not ok:
            continue
        w = [w0 if ix[0] >= 0 else 0.0, w1 if ix[1] >= 0 else 0.0, w2 if ix[2] >= 0 else 0.0,
             w3 if ix[3] >= 0 else 0.0]
        arrive = _relative_normal(X_pred, Xp0, ix, w, (m0, m1, m2))
        if not arrive < -slow:
            continue
        # the contact points on each side (the position pass's S[0], S[1])
        pa = [w[0] * x[0][i] + (w[1] * x[1][i] if two else 0.0) for i in range(3)]
        pb = [((0.0 if two else -w[1] * x[1][i]) - w[2] * x[2][i]) - w[3] * x[3][i]
              for i in range(3)]
        hits.append((ix, (m0, m1, m2), w, (ba, bb), (pa, pb), -float(e[q]) * arrive))
    if not hits:
        return
    # the bodies' resting contacts with colliders, in the sweeps as one-sided constraints
    # (v_n >= 0: they push, never pull), so a bouncy box that lands on a box resting on the
    # ground bounces off it as off the ground, not pushing it into the ground
    involved = {b for _, _, _, sides, _, _ in hits for b in sides if b >= 0}
    touching, collider, normal, motion = contact
    cand_particle, cand_collider = rigid[17], rigid[18]
    supports = []       # their particles; the impulse each took, kept >= 0 (projected GS)
    for mm in rigid[35].tolist():
        i = int(cand_particle[mm])
        if touching[i] and collider[i] == cand_collider[mm] and int(body[i]) in involved:
            supports.append(i)
    taken = [0.0] * len(supports)
    for _ in range(VELOCITY_SWEEPS):
        for ix, (m0, m1, m2), w, sides, points, target in hits:
            un = _relative_normal(X, Xp, ix, w, (m0, m1, m2))
            W = 0.0
            for b, P in zip(sides, points):
                if b >= 0:
                    W = W + _scalar_response(float(inv_mass[b]), origin[b].tolist(),
                                             rot[b].ravel().tolist(),
                                             inv_inertia[b].ravel().tolist(), P, m0, m1, m2)
            lam = (target - un) / W
            for s, (b, P) in enumerate(zip(sides, points)):
                if b >= 0:
                    lb = lam if s == 0 else -lam
                    _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass,
                                       inv_inertia, b, P, m0 * lb, m1 * lb, m2 * lb)
        for k, i in enumerate(supports):
            n0, n1, n2 = (float(normal[i, c]) for c in range(3))
            un = ((float(X[0, i]) - float(Xp[0, i]) - float(motion[i, 0])) * n0
                  + (float(X[1, i]) - float(Xp[1, i]) - float(motion[i, 1])) * n1
                  + (float(X[2, i]) - float(Xp[2, i]) - float(motion[i, 2])) * n2)
            b = int(body[i])
            P = [float(X[0, i]), float(X[1, i]), float(X[2, i])]
            lam = (0.0 - un) / _scalar_response(float(inv_mass[b]), origin[b].tolist(),
                                                rot[b].ravel().tolist(),
                                                inv_inertia[b].ravel().tolist(), P, n0, n1, n2)
            lam = max(taken[k] + lam, 0.0) - taken[k]       # the sum stays a push
            if lam == 0.0:
                continue
            taken[k] = taken[k] + lam
            _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass, inv_inertia, b,
                               P, n0 * lam, n1 * lam, n2 * lam)


def _impulse_on_x_star(X, Xp, particles, start, origin, rot, inv_mass, inv_inertia, b, P, p0,
                       p1, p2):
    """The impulse p [kg m] (already signed) at P [m] on body b as a change of its velocity: x*
    of each of its particles j -= p / M + (I^-1 (r x p)) x (x_j - c), r = P - c (plain floats,
    kernels/compiled_impacts._impulse_on_x_star's operations)."""
    from .rigid_pairs import _scalar_iw
    cb = origin[b].tolist()
    r0, r1, r2 = P[0] - cb[0], P[1] - cb[1], P[2] - cb[2]
    im = float(inv_mass[b])
    d0, d1, d2 = p0 * im, p1 * im, p2 * im
    t0, t1, t2 = _scalar_iw(rot[b].ravel().tolist(), inv_inertia[b].ravel().tolist(),
                            r1 * p2 - r2 * p1, r2 * p0 - r0 * p2, r0 * p1 - r1 * p0)
    pid = particles[start[b]:start[b + 1]]
    q0 = X[0, pid] - cb[0]
    q1 = X[1, pid] - cb[1]
    q2 = X[2, pid] - cb[2]
    Xp[0, pid] = Xp[0, pid] - (d0 + (t1 * q2 - t2 * q1))
    Xp[1, pid] = Xp[1, pid] - (d1 + (t2 * q0 - t0 * q2))
    Xp[2, pid] = Xp[2, pid] - (d2 + (t0 * q1 - t1 * q0))


def _relative_normal(A, B, ix, w, m):
    """sum_k w_k (A_k - B_k) . m [m] over a contact's corners ix (4, -1 for none) with weights
    w: its two sides' relative motion along the normal m, in plain floats."""
    out = 0.0
    for i, mi in enumerate(m):
        u = 0.0
        for k in range(4):
            if ix[k] >= 0:
                u = u + w[k] * (float(A[i, ix[k]]) - float(B[i, ix[k]]))
        out = out + u * mi
    return out
