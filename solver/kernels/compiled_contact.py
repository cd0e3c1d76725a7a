"""Numba-compiled contact kernels: colliders (exact and first-order SDFs) and the embedded
points of tetrahedral bodies.

Scalar mirrors of collision/sdf.py (local_sdf, approx_local_sdf) and collision/project.py
(project_collider, project_points): the same formulas in the same order of operations (those
modules' docstrings give them; sources Jakobsen, "Advanced Character Physics", sections 3, 5
and 8, and GAMES103 lecture 4), no fastmath, so the NumPy and compiled backends agree bit for
bit (tests/solver/test_backends.py). Positions are (3, n) coordinate rows X, Xp [m].

prange runs over candidate particles (unique ids: no two iterations touch one particle). The
embedded points run serially, rank after rank, collider after collider inside each, as the
NumPy kernel does: bodies are few points each. Importing this module requires Numba;
compiled.py re-exports its kernels, and backend.py names the kernel cache folder after a digest
of the kernels' files (Numba's own cache only notices a change to a kernel's own file).
"""

import numpy as np
from numba import njit, prange

from .compiled_mesh import _into, _to_world, mesh_far, mesh_sdf, surface_motion
from .compiled_options import prange_only
from .compiled_patch import _mesh_distance

_TINY = 1e-12       # collision/sdf.TINY
# the tunnelling guard (collision/project.py)
GUARD_MIN_MOTION = 1e-3    # [m]
GUARD_TOLERANCE = 1e-6     # [m]
GUARD_STEPS = 32
_MESH = 5           # collision/frames.MESH
_SPHERE, _BOX, _CYLINDER, _CAPSULE = 1, 2, 3, 4     # collision/frames.SPHERE ... CAPSULE


@njit(cache=True, fastmath=False, inline="always")
def _guard_motion(shape, approximate, a, b, c):
    """project.guard_motion: the least motion [m] the guard traces against that collider."""
    if approximate or not (shape == _SPHERE or shape == _BOX or shape == _CYLINDER
                           or shape == _CAPSULE):
        return GUARD_MIN_MOTION
    if shape == _BOX:
        half = min(a, min(b, c))
    elif shape == _CYLINDER:
        half = min(a, b)
    else:
        half = a
    return min(GUARD_MIN_MOTION, half)


@njit(cache=True)
def _cylinder_sdf(d0, r0, r1, q2, b):
    """Scalar mirror of collision/sdf.cylinder_sdf."""
    d1 = abs(q2) - b
    o0 = max(d0, 0.0)
    o1 = max(d1, 0.0)
    outside = np.sqrt(o0 * o0 + o1 * o1)
    phi = outside + min(max(d0, d1), 0.0)
    sz = -1.0 if q2 < 0 else 1.0
    if outside > _TINY:
        f = o0 / outside
        return phi, r0 * f, r1 * f, o1 * sz / outside
    if d0 > d1:
        return phi, r0, r1, 0.0
    return phi, 0.0, 0.0, sz


@njit(cache=True)
def _local_sdf(shape, a, b, c, q0, q1, q2):
    """Scalar mirror of collision/sdf.local_sdf (same operations, same order)."""
    if shape == 0:                                   # plane
        return q2, 0.0, 0.0, 1.0
    if shape == 1 or shape == 4:                     # sphere, capsule
        v2 = q2
        if shape == 4:
            seg = max(b - a, 0.0)
            v2 = q2 - min(max(q2, -seg), seg)
        n = np.sqrt(q0 * q0 + q1 * q1 + v2 * v2)
        if n > _TINY:
            return n - a, q0 / n, q1 / n, v2 / n
        return n - a, 0.0, 0.0, 1.0
    if shape == 2:                                   # box
        s0 = -1.0 if q0 < 0 else 1.0
        s1 = -1.0 if q1 < 0 else 1.0
        s2 = -1.0 if q2 < 0 else 1.0
        d0 = abs(q0) - a
        d1 = abs(q1) - b
        d2 = abs(q2) - c
        o0 = max(d0, 0.0)
        o1 = max(d1, 0.0)
        o2 = max(d2, 0.0)
        outside = np.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
        dmax = max(max(d0, d1), d2)
        phi = outside + min(dmax, 0.0)
        if outside > _TINY:
            return phi, o0 * s0 / outside, o1 * s1 / outside, o2 * s2 / outside
        if d0 >= d1 and d0 >= d2:
            return phi, s0, 0.0, 0.0
        if d1 >= d2:
            return phi, 0.0, s1, 0.0
        return phi, 0.0, 0.0, s2
    # cylinder
    rho = np.sqrt(q0 * q0 + q1 * q1)
    r0 = 1.0
    r1 = 0.0
    if rho > _TINY:
        r0 = q0 / rho
        r1 = q1 / rho
    return _cylinder_sdf(rho - a, r0, r1, q2, b)


@njit(cache=True)
def _approx_sdf(shape, a, b, c, s0, s1, q0, q1, q2):
    """Scalar mirror of collision/sdf.approx_local_sdf (same operations, same order)."""
    if shape == 3:                                   # elliptic cylinder
        u0 = q0 / s0
        u1 = q1 / s1
        rho = np.sqrt(u0 * u0 + u1 * u1)
        e0 = 1.0
        e1 = 0.0
        if rho > _TINY:
            e0 = u0 / rho
            e1 = u1 / rho
        e0 = e0 / s0
        e1 = e1 / s1
        gn = np.sqrt(e0 * e0 + e1 * e1)
        r0 = e0 / gn
        r1 = e1 / gn
        return _cylinder_sdf((rho - a) / gn, r0, r1, q2, b)
    # ellipsoid (shape 1) or elliptic capsule (shape 4): around the nearest axis point
    v2 = q2
    if shape == 4:
        v2 = q2 - min(max(q2, -b), b)
    u0 = q0 / s0
    u1 = q1 / s1
    u2 = v2 / c
    n = np.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    g0 = 0.0
    g1 = 0.0
    g2 = 1.0
    if n > _TINY:
        g0 = u0 / n
        g1 = u1 / n
        g2 = u2 / n
    g0 = g0 / s0
    g1 = g1 / s1
    g2 = g2 / c
    gn = max(np.sqrt(g0 * g0 + g1 * g1 + g2 * g2), _TINY)
    return (n - a) / gn, g0 / gn, g1 / gn, g2 / gn


@njit(cache=True)
def _motion(R, t, s, Rb, tb, sb, y0, y1, y2):
    """Scalar mirror of collision/project._motion: the collider's displacement at (y0, y1, y2)
    [m]."""
    e0 = y0 - t[0]
    e1 = y1 - t[1]
    e2 = y2 - t[2]
    w0 = (e0 * R[0, 0] + e1 * R[1, 0] + e2 * R[2, 0]) / s[0] * sb[0]
    w1 = (e0 * R[0, 1] + e1 * R[1, 1] + e2 * R[2, 1]) / s[1] * sb[1]
    w2 = (e0 * R[0, 2] + e1 * R[1, 2] + e2 * R[2, 2]) / s[2] * sb[2]
    m0 = y0 - (Rb[0, 0] * w0 + Rb[0, 1] * w1 + Rb[0, 2] * w2 + tb[0])
    m1 = y1 - (Rb[1, 0] * w0 + Rb[1, 1] * w1 + Rb[1, 2] * w2 + tb[1])
    m2 = y2 - (Rb[2, 0] * w0 + Rb[2, 1] * w1 + Rb[2, 2] * w2 + tb[2])
    return m0, m1, m2


@njit(cache=True, fastmath=False, inline="always")
def _combined_friction(mu_s, mu_k, friction):
    """Scalar mirror of collision/project.combined_friction (collider's and particle's)."""
    ref = mu_k if mu_k > 0 else mu_s
    if not ref > 0:
        return mu_s, mu_k
    f = np.sqrt(friction / ref)
    return mu_s * f, mu_k * f


@njit(cache=True)
def _friction(r0, r1, r2, n0, n1, n2, dep, u, mu_s, mu_k):
    """Scalar mirror of collision/project._contact's friction: tangential part t of the relative
    displacement r, the fraction of it to remove and the friction distance taken [m]."""
    rn = r0 * n0 + r1 * n1 + r2 * n2
    t0 = r0 - n0 * rn
    t1 = r1 - n1 * rn
    t2 = r2 - n2 * rn
    t_len = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if t_len + u <= mu_s * dep:
        take = t_len                                 # static: stick
    else:
        take = min(max(mu_k * dep - u, 0.0), t_len)  # kinetic: shorten, never reverse
    scale = take / t_len if t_len > 1e-300 else 0.0
    return t0, t1, t2, scale, take


@njit(cache=True)
def _bounded(x0, x1, x2, xp0, xp1, xp2, m0, m1, m2, n0, n1, n2, d, allowance):
    """Scalar mirror of collision/project._contact's bounded depenetration: the normal
    correction taken and the lift owed to x* [m]."""
    into = -((x0 - xp0 - m0) * n0 + (x1 - xp1 - m1) * n1 + (x2 - xp2 - m2) * n2)
    corr = min(d, max(into + allowance, 0.0))
    return corr, corr - min(corr, max(into, 0.0))


@njit(cache=True, fastmath=False, inline="always")
def _distance(shape, approximate, a, b, c, R, t, s, Rb, tb, x0, x1, x2, xp0, xp1, xp2, k, mesh):
    """Signed distance [m] of world point x to collider k placed at (R, t, s), the world
    normal there, and for a mesh the closest triangle and its barycentric weights (-1 and
    zeros otherwise): x into the rotation-only frame, the exact, first-order or mesh SDF, the
    gradient back to world space (collision/project.py's _distance). x* = xp, taken into the
    frame of the substep's start (Rb, tb), picks an open mesh's side (collision/mesh.py). A
    particle's own distance, with its mesh hint and patch, is _particle_distance's."""
    q0, q1, q2 = _into(R, t, x0, x1, x2)
    tri = -1
    wa = 0.0
    wb = 0.0
    wc = 0.0
    if shape == _MESH:
        r0, r1, r2 = _into(Rb, tb, xp0, xp1, xp2)
        phi, g0, g1, g2, tri, wa, wb, wc = mesh_sdf(q0, q1, q2, r0, r1, r2, k, mesh, -1)
    elif approximate:
        phi, g0, g1, g2 = _approx_sdf(shape, a, b, c, s[0], s[1], q0, q1, q2)
    else:
        phi, g0, g1, g2 = _local_sdf(shape, a, b, c, q0, q1, q2)
    return _to_world(R, phi, g0, g1, g2, tri, wa, wb, wc)


@njit(cache=True, fastmath=False, inline="always")
def _particle_distance(shape, approximate, a, b, c, R, t, s, Rb, tb, x0, x1, x2, xp0, xp1, xp2,
                       k, mesh, i):
    """_distance of particle i at x: against a mesh, its patch first (compiled_patch.py)."""
    if shape == _MESH:
        return _mesh_distance(R, t, Rb, tb, x0, x1, x2, xp0, xp1, xp2, k, mesh, i)
    return _distance(shape, approximate, a, b, c, R, t, s, Rb, tb, x0, x1, x2, xp0, xp1, xp2, k,
                     mesh)


@njit(cache=True, fastmath=False, inline="always")
def _collider_motion(shape, R, t, s, Rb, tb, sb, moving, y0, y1, y2, tri, wa, wb, wc, mesh):
    """The collider's motion over the substep at a contact: a mesh's surface point
    (compiled_mesh.surface_motion), else the frame's at y (_motion), zero at rest."""
    if shape == _MESH:
        return surface_motion(R, t, Rb, tb, tri, wa, wb, wc, mesh)
    if moving:
        return _motion(R, t, s, Rb, tb, sb, y0, y1, y2)
    return 0.0, 0.0, 0.0


@njit(cache=True, fastmath=False, inline="always")
def _carried(R, t, s, Rb, tb, sb, x0, x1, x2):
    """Scalar mirror of collision/project._carried: where the collider's material point at
    (x0, x1, x2) [m] at the substep's start (Rb, tb, sb) is at its end (R, t, s)."""
    e0 = x0 - tb[0]
    e1 = x1 - tb[1]
    e2 = x2 - tb[2]
    w0 = (e0 * Rb[0, 0] + e1 * Rb[1, 0] + e2 * Rb[2, 0]) / sb[0] * s[0]
    w1 = (e0 * Rb[0, 1] + e1 * Rb[1, 1] + e2 * Rb[2, 1]) / sb[1] * s[1]
    w2 = (e0 * Rb[0, 2] + e1 * Rb[1, 2] + e2 * Rb[2, 2]) / sb[2] * s[2]
    return (R[0, 0] * w0 + R[0, 1] * w1 + R[0, 2] * w2 + t[0],
            R[1, 0] * w0 + R[1, 1] * w1 + R[1, 2] * w2 + t[1],
            R[2, 0] * w0 + R[2, 1] * w1 + R[2, 2] * w2 + t[2])


@njit(cache=True, fastmath=False)
def _trace(shape, approximate, a, b, c, R, t, s, Rb, tb, thickness, rad, p0, p1, p2, e0, e1, e2,
           length, x0, x1, x2, xp0, xp1, xp2, k, mesh):
    """Scalar mirror of collision/project._trace: sphere tracing from (p0, p1, p2) along
    (e0, e1, e2) (length [m]) to the end point x; x* = xp picks an open mesh's side at every
    point of the segment. Returns (hit, pen, n0, n1, n2, tri, wa, wb, wc): the end point's
    signed distance [m] to the offset tangent plane at the first contact, its normal, and for
    a mesh the triangle and weights there; hit is False when the segment touches nothing (or
    moves away from what it grazes)."""
    phi, n0, n1, n2, tri, wa, wb, wc = _distance(shape, approximate, a, b, c, R, t, s, Rb, tb,
                                                 p0, p1, p2, xp0, xp1, xp2, k, mesh)
    gap = phi - thickness - rad
    q0 = p0
    q1 = p1
    q2 = p2
    if gap > 0:
        if not length > 0:
            # a point that did not move (an edge turning about it) touches nothing: NumPy's
            # tau = gap / 0 = inf, where Numba's float division would raise
            return False, 0.0, 0.0, 0.0, 0.0, -1, 0.0, 0.0, 0.0
        tau = 0.0
        found = False
        for _ in range(GUARD_STEPS):
            tau = tau + gap / length
            if not tau < 1.0:
                return False, 0.0, 0.0, 0.0, 0.0, -1, 0.0, 0.0, 0.0
            q0 = p0 + e0 * tau
            q1 = p1 + e1 * tau
            q2 = p2 + e2 * tau
            phi, n0, n1, n2, tri, wa, wb, wc = _distance(shape, approximate, a, b, c, R, t, s,
                                                         Rb, tb, q0, q1, q2, xp0, xp1, xp2, k,
                                                         mesh)
            gap = phi - thickness - rad
            if gap <= GUARD_TOLERANCE:
                found = True
                break
        if not found:
            return False, 0.0, 0.0, 0.0, 0.0, -1, 0.0, 0.0, 0.0
    pen = gap + ((x0 - q0) * n0 + (x1 - q1) * n1 + (x2 - q2) * n2)
    return pen < 0, pen, n0, n1, n2, tri, wa, wb, wc


@njit(cache=True, fastmath=False, inline="always")
def _project_particle(X, Xp, i, shape, approximate, a, b, c, thickness, radius, R, t, s, Rb, tb,
                      sb, moving, mu, k, depth, used, touching, normal, motion, collider, allowance,
                      lift, lifted, mesh):
    """Particle i against collider k (the arguments of project_collider), with the tunnelling
    guard (collision/project.py); mu (the collider's mu_s, mu_k, the particle's friction), a
    tuple: thirty arguments at most, as a call with more is made with *args, which Numba
    cannot inline into a parallel loop."""
    rad = radius[i]
    # the tunnelling guard's segment: from the substep's start (carried by the collider's
    # motion into its frame now) to the position now
    if moving:
        p0, p1, p2 = _carried(R, t, s, Rb, tb, sb, Xp[0, i], Xp[1, i], Xp[2, i])
    else:
        p0 = Xp[0, i]
        p1 = Xp[1, i]
        p2 = Xp[2, i]
    if shape == _MESH and mesh_far(X[0, i], X[1, i], X[2, i], p0, p1, p2, i, k,
                                   thickness + rad, mesh):
        return
    phi, n0, n1, n2, tri, wa, wb, wc = _particle_distance(
        shape, approximate, a, b, c, R, t, s, Rb, tb, X[0, i], X[1, i], X[2, i], Xp[0, i],
        Xp[1, i], Xp[2, i], k, mesh, i)
    pen = phi - thickness - rad
    e0 = X[0, i] - p0
    e1 = X[1, i] - p1
    e2 = X[2, i] - p2
    length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    if length > max(thickness + rad, _guard_motion(shape, approximate, a, b, c)) and \
            pen < length and (shape != _MESH or mesh[14][k]):
        hit, pen_h, h0, h1, h2, htri, ha, hb, hc = _trace(
            shape, approximate, a, b, c, R, t, s, Rb, tb, thickness, rad, p0, p1, p2, e0, e1, e2,
            length, X[0, i], X[1, i], X[2, i], Xp[0, i], Xp[1, i], Xp[2, i], k, mesh)
        if hit and not (pen < 0 and n0 * h0 + n1 * h1 + n2 * h2 > 0):
            pen = pen_h
            n0 = h0
            n1 = h1
            n2 = h2
            tri = htri
            wa = ha
            wb = hb
            wc = hc
    if not pen < 0:
        return
    d = -pen
    m0, m1, m2 = _collider_motion(shape, R, t, s, Rb, tb, sb, moving, X[0, i] + n0 * d,
                                  X[1, i] + n1 * d, X[2, i] + n2 * d, tri, wa, wb, wc, mesh)
    corr, lf = _bounded(X[0, i], X[1, i], X[2, i], Xp[0, i], Xp[1, i], Xp[2, i], m0, m1,
                        m2, n0, n1, n2, d, allowance)
    y0 = X[0, i] + n0 * corr
    y1 = X[1, i] + n1 * corr
    y2 = X[2, i] + n2 * corr
    dep = depth[i] + corr
    u = used[i]
    mu_s, mu_k = _combined_friction(mu[0], mu[1], mu[2])
    t0, t1, t2, scale, take = _friction(y0 - Xp[0, i] - m0, y1 - Xp[1, i] - m1,
                                        y2 - Xp[2, i] - m2, n0, n1, n2, dep, u, mu_s, mu_k)
    X[0, i] = y0 - t0 * scale
    X[1, i] = y1 - t1 * scale
    X[2, i] = y2 - t2 * scale
    depth[i] = dep
    used[i] = u + take
    touching[i] = True
    normal[i, 0] = n0
    normal[i, 1] = n1
    normal[i, 2] = n2
    motion[i, 0] = m0
    motion[i, 1] = m1
    motion[i, 2] = m2
    collider[i] = k
    if lf > 0:
        lift[i, 0] += n0 * lf
        lift[i, 1] += n1 * lf
        lift[i, 2] += n2 * lf
        lifted[i] = True


@njit(cache=True, parallel=prange_only(), fastmath=False)
def project_collider(X, Xp, idx, shape, approximate, a, b, c, thickness, radius, R, t, s, Rb, tb,
                     sb, moving, mu_s, mu_k, friction, k, depth, used, touching, normal, motion,
                     collider, allowance, lift, lifted, mesh):
    """Scalar mirror of collision/project.project_collider: one collider, exact SDF (local_sdf)
    or, with ``approximate``, the first-order one (approx_local_sdf) of a sphere, cylinder or
    capsule under a non-uniform scale (one kernel: one compile); candidates idx (unique
    ids); (a, b, c) from sdf.placement.
    X, Xp (3, n) float64 [m] positions (updated) and previous positions; radius (n,) [m];
    R, Rb (3, 3), t, tb (3,) [m], s, sb (3,) the frame now and at the substep's start;
    mu_s, mu_k the collider's friction, friction (n,) the particles' (_combined_friction);
    depth, used (n,) [m], touching (n,) bool, normal (n, 3), motion (n, 3) [m],
    collider (n,) int64: the contact state, written for particles that touch; allowance [m],
    lift (n, 3) [m], lifted (n,) bool: the bounded depenetration (collision/project.py)."""
    for m in prange(idx.shape[0]):
        _project_particle(X, Xp, idx[m], shape, approximate, a, b, c, thickness, radius, R, t, s,
                          Rb, tb, sb, moving, (mu_s, mu_k, friction[idx[m]]), k, depth, used,
                          touching, normal, motion, collider, allowance, lift, lifted, mesh)


@njit(cache=True, parallel=prange_only(), fastmath=False)
def project_colliders(X, Xp, particles, particle_start, pair_collider, shape, approximate, abc,
                      thickness, radius, R, t, s, Rb, tb, sb, moving, mu_s, mu_k, friction, depth,
                      used, touching, normal, motion, collider, allowance, lift, lifted, mesh, X0,
                      clear, least2, slot, act):
    """Every collider in one parallel pass (what the compiled loop runs): particle after
    particle, each against its candidate colliders in increasing order; a contact touches only
    its particle, so this gives the bits of project_collider run collider after collider (the
    NumPy loop), with one wait. particles (u,) int64 the candidates, particle_start (u + 1,)
    and pair_collider (q,) int64 their colliders (pair_collider[particle_start[v]:
    particle_start[v + 1]] for particles[v], contacts.Contacts); per collider (C,): shape,
    approximate, abc (C, 3), thickness, the frames R (C, 3, 3), t, s (C, 3) and Rb, tb, sb at
    the substep's start, moving, mu_s, mu_k; friction (n,) and the rest as project_collider.
    X0 (3, n) [m] the step's start, clear (q,) [m] each pair's clearance there
    (compiled_candidates.candidate_clearance): a pair whose particle, now and a substep ago,
    is nearer to X0 than that is skipped, as its projection would change nothing (the NumPy
    loop projects every pair: a wind-blown cloth is a candidate of every collider within the
    0.4 m it may travel in a step, most of them that far). least2 (n,) [m^2] a particle's
    least clearance squared (-1: none; compiled_candidates.least_clearance), slot (n,) int64
    its index in particles (-1: none), act (n,) bool scratch: a particle whose every pair is
    clear is passed over at once, by a first loop over all particles (vectorised) when the
    candidates are half of them or more (the drape's 16,000, 3,600 to 5,100 acting: 125 to
    85 us a pass on two threads). The same pairs in the same order: the same bits."""
    n = X.shape[1]
    if 2 * particles.shape[0] >= n:
        for i in prange(n):
            act[i] = not least2[i] > _moved2(X, Xp, X0, i)
        # the body written twice: one prange loop choosing its particle by mode, or a prange
        # over a range chosen by mode, ran 4 to 5 times slower (measured on the drape)
        for i in prange(n):
            v = slot[i]
            if act[i] and v >= 0:
                moved2 = _moved2(X, Xp, X0, i)
                for r in range(particle_start[v], particle_start[v + 1]):
                    c = clear[r]
                    if c > 0 and c * c > moved2:
                        continue
                    k = pair_collider[r]
                    _project_particle(X, Xp, i, shape[k], approximate[k], abc[k, 0],
                                      abc[k, 1], abc[k, 2], thickness[k], radius, R[k], t[k],
                                      s[k], Rb[k], tb[k], sb[k], moving[k],
                                      (mu_s[k], mu_k[k], friction[i]), k, depth, used,
                                      touching, normal, motion, collider, allowance, lift,
                                      lifted, mesh)
        return
    for v in prange(particles.shape[0]):
        i = particles[v]
        moved2 = _moved2(X, Xp, X0, i)
        if least2[i] > moved2:
            continue
        for r in range(particle_start[v], particle_start[v + 1]):
            c = clear[r]
            if c > 0 and c * c > moved2:
                continue
            k = pair_collider[r]
            _project_particle(X, Xp, i, shape[k], approximate[k], abc[k, 0], abc[k, 1],
                              abc[k, 2], thickness[k], radius, R[k], t[k], s[k], Rb[k], tb[k],
                              sb[k], moving[k], (mu_s[k], mu_k[k], friction[i]), k, depth, used,
                              touching, normal, motion, collider, allowance, lift, lifted, mesh)


@njit(cache=True, fastmath=False, inline="always")
def _moved2(X, Xp, X0, i):
    """[m^2] how far particle i is from X0 (the step's start), squared: the larger of now
    and the substep's start (project_colliders)."""
    a0 = X[0, i] - X0[0, i]
    a1 = X[1, i] - X0[1, i]
    a2 = X[2, i] - X0[2, i]
    b0 = Xp[0, i] - X0[0, i]
    b1 = Xp[1, i] - X0[1, i]
    b2 = Xp[2, i] - X0[2, i]
    return max(a0 * a0 + a1 * a1 + a2 * a2, b0 * b0 + b1 * b1 + b2 * b2)


@njit(cache=True, fastmath=False)
def project_points(X, Xp, rank_start, rank_points, tet, weight, inv_c2, shape, thickness, mu_s,
                   mu_k, friction, approximate, abc, R, t, s, Rb, tb, sb, moving, point_depth,
                   point_used, allowance, lift, lifted, mesh):
    """Scalar mirror of collision/project.project_points (every rank, every collider):
    Jakobsen's embedded-point contact with friction.
    X, Xp (3, n) float64 [m] positions (updated) and previous positions;
    rank_start (ranks + 1,) int64, rank_points (P,) int64: rank r is
    rank_points[rank_start[r]:rank_start[r + 1]] (collision/points.TetraPoints);
    tet (P, 4) int64 each point's corner particles, weight (P, 4) float64 its weights c_k,
    inv_c2 (P,) float64 1 / sum_k c_k^2;
    per collider (C colliders): shape (C,) int64, thickness, mu_s, mu_k (C,) float64
    (combined with friction (n,), the particles' coefficients: a point's is its corners' mean),
    approximate (C,) bool first-order SDF, abc (C, 3) its scaled dims, R, Rb (C, 3, 3),
    t, tb (C, 3) [m], s, sb (C, 3) the frames now and at the substep's start, moving (C,) bool
    (collision/colliders.Colliders.placements, one substep of them); point_depth, point_used
    (P,) float64 [m] updated for hits;
    allowance [m], lift (n, 3) [m], lifted (n,) bool: the bounded depenetration, a point's lift
    shared among its corners."""
    for r in range(rank_start.shape[0] - 1):
        for k in range(shape.shape[0]):
            sh = shape[k]
            ap = approximate[k]
            a = abc[k, 0]
            b = abc[k, 1]
            c = abc[k, 2]
            off = thickness[k]
            mk = moving[k]
            ms = mu_s[k]
            mkin = mu_k[k]
            Rk = R[k]
            tk = t[k]
            sk = s[k]
            Rbk = Rb[k]
            tbk = tb[k]
            sbk = sb[k]
            for m in range(rank_start[r], rank_start[r + 1]):
                i = rank_points[m]
                j0 = tet[i, 0]
                j1 = tet[i, 1]
                j2 = tet[i, 2]
                j3 = tet[i, 3]
                c0 = weight[i, 0]
                c1 = weight[i, 1]
                c2 = weight[i, 2]
                c3 = weight[i, 3]
                p0 = c0 * X[0, j0] + c1 * X[0, j1] + c2 * X[0, j2] + c3 * X[0, j3]
                p1 = c0 * X[1, j0] + c1 * X[1, j1] + c2 * X[1, j2] + c3 * X[1, j3]
                p2 = c0 * X[2, j0] + c1 * X[2, j1] + c2 * X[2, j2] + c3 * X[2, j3]
                pp0 = c0 * Xp[0, j0] + c1 * Xp[0, j1] + c2 * Xp[0, j2] + c3 * Xp[0, j3]
                pp1 = c0 * Xp[1, j0] + c1 * Xp[1, j1] + c2 * Xp[1, j2] + c3 * Xp[1, j3]
                pp2 = c0 * Xp[2, j0] + c1 * Xp[2, j1] + c2 * Xp[2, j2] + c3 * Xp[2, j3]
                phi, n0, n1, n2, tri, wa, wb, wc = _distance(sh, ap, a, b, c, Rk, tk, sk, Rbk,
                                                             tbk, p0, p1, p2, pp0, pp1, pp2, k,
                                                             mesh)
                pen = phi - off
                if not pen < 0:
                    continue
                d = -pen
                m0, m1, m2 = _collider_motion(sh, Rk, tk, sk, Rbk, tbk, sbk, mk, p0 + n0 * d,
                                              p1 + n1 * d, p2 + n2 * d, tri, wa, wb, wc, mesh)
                corr, lf = _bounded(p0, p1, p2, pp0, pp1, pp2, m0, m1, m2, n0, n1, n2, d,
                                    allowance)
                y0 = p0 + n0 * corr
                y1 = p1 + n1 * corr
                y2 = p2 + n2 * corr
                dep = point_depth[i] + corr
                u = point_used[i]
                own = (((friction[j0] + friction[j1]) + friction[j2]) + friction[j3]) * 0.25
                ms2, mk2 = _combined_friction(ms, mkin, own)
                t0, t1, t2, scale, take = _friction(y0 - pp0 - m0, y1 - pp1 - m1, y2 - pp2 - m2,
                                                    n0, n1, n2, dep, u, ms2, mk2)
                point_depth[i] = dep
                point_used[i] = u + take
                # the point's move n c - friction, then each corner's share c_k / sum c^2 of it
                inv = inv_c2[i]
                w0 = (n0 * corr - t0 * scale) * inv
                w1 = (n1 * corr - t1 * scale) * inv
                w2 = (n2 * corr - t2 * scale) * inv
                X[0, j0] += c0 * w0
                X[1, j0] += c0 * w1
                X[2, j0] += c0 * w2
                X[0, j1] += c1 * w0
                X[1, j1] += c1 * w1
                X[2, j1] += c1 * w2
                X[0, j2] += c2 * w0
                X[1, j2] += c2 * w1
                X[2, j2] += c2 * w2
                X[0, j3] += c3 * w0
                X[1, j3] += c3 * w1
                X[2, j3] += c3 * w2
                if lf > 0:
                    li = lf * inv
                    _share(lift, lifted, j0, c0, n0 * li, n1 * li, n2 * li)
                    _share(lift, lifted, j1, c1, n0 * li, n1 * li, n2 * li)
                    _share(lift, lifted, j2, c2, n0 * li, n1 * li, n2 * li)
                    _share(lift, lifted, j3, c3, n0 * li, n1 * li, n2 * li)


@njit(cache=True)
def _share(lift, lifted, j, cj, l0, l1, l2):
    """A corner's share c_j of an embedded point's lift (l0, l1, l2) [m]."""
    lift[j, 0] += cj * l0
    lift[j, 1] += cj * l1
    lift[j, 2] += cj * l2
    lifted[j] = True


@njit(cache=True, fastmath=False, inline="always")
def release_one(Xp, lift, lifted, i):
    """Particle i's overlap resolved without speed: its lift (3,) [m] moved into x*."""
    if lifted[i]:
        for c in range(3):
            Xp[c, i] += lift[i, c]
            lift[i, c] = 0.0
        lifted[i] = False


@njit(cache=True, fastmath=False)
def release_overlap(Xp, lift, lifted):
    """Scalar mirror of collision/project.release_overlap."""
    for i in range(lifted.shape[0]):
        release_one(Xp, lift, lifted, i)
