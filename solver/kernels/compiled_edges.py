"""Scalar mirror of collision/edges.project_edges (that module's docstring gives the
constraint, the bisection and the order), with every expression of the NumPy kernel in its
order, so the backends agree bit for bit. Each pass runs the candidates' end tests in parallel
on the positions the pass starts from, then the candidates in order on one thread, solving
those whose test passed or whose particles an earlier contact of the pass moved (then testing
them again): a candidate left out saw exactly what the serial pass would have seen, and its
contact would have changed nothing (project_edges_clear). The tunnelling guard's test
(_swept) is part of each candidate's end test, and its trace is compiled_contact._trace, the
particles'.

As the particles' candidates (compiled_candidates.candidate_clearance), an edge candidate
that cannot reach its collider yet is skipped: edge_clearance bounds the collider's distance
along the edge from below at the step's start, and a point of the edge now is within m of the
same point then when both ends moved less than m (the distance is 1-Lipschitz), so while m
stays under that bound less the contact offset (plus the tolerance) the contact would change
nothing: the same bits as the NumPy kernel, which tests every candidate. A wind-blown
tablecloth is a candidate of every collider within the 0.4 m it may travel in a step (the
demo: 10,000 to 20,000 edge candidates a step), most of them that far, and the part lying on
the table stays clear until it moves.

A cloth lying on a sphere is not clear that way (its clearance is the tolerance less its sag,
a third of a millimetre, and it slides farther in a step), yet its edges' contacts and their
guard find nothing while every point of each edge, and of the chords the guard would trace,
stays farther from the centre than the radius plus the offset less the tolerance:
_round_clear tests that from squares (the nearest point of a segment to the centre), before
the two distances the end test takes and the bisection and trace that follow it. The drape's
passes at N = 128, replayed on the substeps of its frame 40: 5.2 ms a frame, 4.3 with it,
no candidate left for the serial loop (2026-11-29), the same bits.
"""

import numpy as np
from numba import njit, prange

from .compiled_candidates import _SPHERE, CLEAR_MARGIN, _exact_still
from .compiled_contact import (GUARD_TOLERANCE, _MESH, _bounded, _carried,
                               _collider_motion, _combined_friction, _distance, _friction,
                               _moved2, _trace)
from .compiled_options import prange_only

EDGE_BISECTIONS = 12       # collision/edges.py's
EDGE_TOLERANCE = 5e-4      # [m]
EDGE_SKIN = 0.25


@njit(cache=True, fastmath=False, inline="always")
def _ends(sh, ap, a, b, c, R, t, s, Rb, tb, a0, a1, a2, b0, b1, b2, k, mesh):
    """The end test's distances (collision/edges.py): phi at the edge's ends a and b and its
    slopes n . (b - a) there, (phi_a, slope_a, phi_b, slope_b); the collider's placement as
    _distance takes it (an edge's point is its own x*: the motion enters only the friction)."""
    e0 = b0 - a0
    e1 = b1 - a1
    e2 = b2 - a2
    phi_a, n0, n1, n2, _, _, _, _ = _distance(sh, ap, a, b, c, R, t, s, Rb, tb, a0, a1, a2, a0,
                                              a1, a2, k, mesh)
    slope_a = n0 * e0 + n1 * e1 + n2 * e2
    phi_b, n0, n1, n2, _, _, _, _ = _distance(sh, ap, a, b, c, R, t, s, Rb, tb, b0, b1, b2, b0,
                                              b1, b2, k, mesh)
    slope_b = n0 * e0 + n1 * e1 + n2 * e2
    return phi_a, slope_a, phi_b, slope_b


@njit(cache=True, fastmath=False, inline="always")
def _lines(phi_a, slope_a, phi_b, slope_b):
    """The tangent lines' lower bound of a convex distance along the edge, where they meet
    (valid when it falls from a and rises to b: slope_a < 0 < slope_b)."""
    return phi_a + slope_a * ((phi_b - slope_b - phi_a) / (slope_a - slope_b))


@njit(cache=True, fastmath=False, inline="always")
def _point(X, i):
    """Column i of X (3, n): a point's coordinates."""
    return X[0, i], X[1, i], X[2, i]


@njit(cache=True, fastmath=False, inline="always")
def _nearest(sh, ap, a, b, c, R, t, s, Rb, tb, a0, a1, a2, e0, e1, e2, k, mesh):
    """t* in [0, 1]: the point of the edge a + t e where the distance stops falling, by
    EDGE_BISECTIONS halvings on the sign of its slope (collision/edges._nearest)."""
    lo = 0.0
    hi = 1.0
    for _ in range(EDGE_BISECTIONS):
        mid = (lo + hi) * 0.5
        m0 = a0 + e0 * mid
        m1 = a1 + e1 * mid
        m2 = a2 + e2 * mid
        _, n0, n1, n2, _, _, _, _ = _distance(sh, ap, a, b, c, R, t, s, Rb, tb, m0, m1, m2, m0,
                                              m1, m2, k, mesh)
        if n0 * e0 + n1 * e1 + n2 * e2 < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) * 0.5


@njit(cache=True, fastmath=False, inline="always")
def _swept(sh, ap, a, b, c, R, t, s, Rb, tb, sb, moving, Xp, ia, ib, a0, a1, a2, b0, b1, b2,
           off, k, mesh):
    """The tunnelling guard's test (collision/edges.py): the edge's ends at the substep's
    start (x*, carried by the collider's motion), and whether the guard takes the edge: its
    ends moved more than the offset, and at the start its distance fell from one end and rose
    to the other, near enough to touch on the way. (swept, sa0, sa1, sa2, sb0, sb1, sb2)."""
    if moving:
        sa0, sa1, sa2 = _carried(R, t, s, Rb, tb, sb, Xp[0, ia], Xp[1, ia], Xp[2, ia])
        sb0, sb1, sb2 = _carried(R, t, s, Rb, tb, sb, Xp[0, ib], Xp[1, ib], Xp[2, ib])
    else:
        sa0, sa1, sa2 = _point(Xp, ia)
        sb0, sb1, sb2 = _point(Xp, ib)
    d0 = a0 - sa0
    d1 = a1 - sa1
    d2 = a2 - sa2
    c0 = b0 - sb0
    c1 = b1 - sb1
    c2 = b2 - sb2
    moved = max(np.sqrt(d0 * d0 + d1 * d1 + d2 * d2), np.sqrt(c0 * c0 + c1 * c1 + c2 * c2))
    swept = False
    if moved > max(off, EDGE_TOLERANCE):
        phi_a, slope_a, phi_b, slope_b = _ends(sh, ap, a, b, c, R, t, s, Rb, tb, sa0, sa1, sa2,
                                               sb0, sb1, sb2, k, mesh)
        swept = (slope_a < 0 and slope_b > 0
                 and _lines(phi_a, slope_a, phi_b, slope_b) - off < moved)
    return swept, sa0, sa1, sa2, sb0, sb1, sb2


# a relative margin over the rounding of the certificate's squares (about 1e-16 each)
_ROUND_MARGIN = 1e-9


@njit(cache=True, fastmath=False, inline="always")
def _segment_near(a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """The least squared distance [m^2] from c to the segment a-b, and |a - c|^2 (the scale
    of its rounding): from the foot of the perpendicular when it falls between the ends."""
    u0 = a0 - c0
    u1 = a1 - c1
    u2 = a2 - c2
    e0 = b0 - a0
    e1 = b1 - a1
    e2 = b2 - a2
    uu = u0 * u0 + u1 * u1 + u2 * u2
    ue = u0 * e0 + u1 * e1 + u2 * e2
    ee = e0 * e0 + e1 * e1 + e2 * e2
    if ue >= 0 or not ee > 0:
        return uu, uu
    if ue + ee <= 0:
        return (u0 + e0) * (u0 + e0) + (u1 + e1) * (u1 + e1) + (u2 + e2) * (u2 + e2), uu
    return uu - ue * (ue / ee), uu


@njit(cache=True, fastmath=False, inline="always")
def _round_clear(a0, a1, a2, b0, b1, b2, pa0, pa1, pa2, pb0, pb1, pb2, c0, c1, c2, rho, off):
    """Whether a still sphere (centre c, radius rho) certainly leaves the edge a-b alone in this
    pass (pa, pb its ends at x*): its contact and its tunnelling guard would both find
    nothing. The contact's point lies on the edge now, and is pushed only when nearer to c
    than need = rho + off - tol (off the larger offset of its ends). The guard (when an end
    moved more than max(off, EDGE_TOLERANCE)) traces a chord from a point of the edge at x* to
    the same point now, at most m long (m the larger motion of the ends), and touches only
    within need + GUARD_TOLERANCE of c; a chord of length m whose ends are D or more from c
    comes no nearer than sqrt(D^2 - m^2 / 4) (its squared distance is a quadratic of
    curvature 2 m^2). From squares, one segment or two, no distance to the collider."""
    tol = max(EDGE_TOLERANCE, EDGE_SKIN * off)
    need = rho + off - tol
    if not need > 0:
        return False
    near, scale = _segment_near(a0, a1, a2, b0, b1, b2, c0, c1, c2)
    g = max(off, EDGE_TOLERANCE)
    d0 = a0 - pa0
    d1 = a1 - pa1
    d2 = a2 - pa2
    m2 = d0 * d0 + d1 * d1 + d2 * d2
    d0 = b0 - pb0
    d1 = b1 - pb1
    d2 = b2 - pb2
    m2 = max(m2, d0 * d0 + d1 * d1 + d2 * d2)
    if m2 < g * g * (1.0 - _ROUND_MARGIN):
        return near * (1.0 - _ROUND_MARGIN) > need * need + _ROUND_MARGIN * scale
    near_p, scale_p = _segment_near(pa0, pa1, pa2, pb0, pb1, pb2, c0, c1, c2)
    reach = need + GUARD_TOLERANCE
    return ((min(near, near_p) - 0.25 * m2) * (1.0 - _ROUND_MARGIN)
            > reach * reach + _ROUND_MARGIN * (max(scale, scale_p) + m2))


@njit(cache=True, fastmath=False)
def project_edges(X, Xp, ea, eb, cand_edge, cand_collider, group_start, inv_mass, e_depth,
                  e_used, shape, thickness, mu_s, mu_k, friction, radius, approximate, abc, R,
                  t, s, Rb, tb, sb, moving, allowance, lift, lifted, mesh):
    """The kernel table's entry, with collision/edges.project_edges' signature:
    project_edges_clear with no clearance (every candidate tested)."""
    q = cand_edge.shape[0]
    project_edges_clear(X, Xp, ea, eb, cand_edge, cand_collider, group_start, inv_mass,
                        e_depth, e_used, shape, thickness, mu_s, mu_k, friction, radius,
                        approximate, abc, R, t, s, Rb, tb, sb, moving, allowance, lift, lifted,
                        mesh, X, np.full(q, -np.inf), np.empty(q, np.bool_),
                        np.zeros(X.shape[1], np.bool_), np.zeros(0, np.int64),
                        np.zeros(X.shape[1]))


@njit(cache=True, parallel=prange_only(), fastmath=False)
def project_edges_clear(X, Xp, ea, eb, cand_edge, cand_collider, group_start, inv_mass,
                        e_depth, e_used, shape, thickness, mu_s, mu_k, friction, radius,
                        approximate, abc, R, t, s, Rb, tb, sb, moving, allowance, lift, lifted,
                        mesh, X0, clear, maybe, moved, parts, moved2):
    """collision/edges.project_edges, compiled (the same arguments; group_start unused: the
    candidates' order is the groups' order), and X0 (3, n) [m] the step's start, clear (q,)
    [m] each candidate's clearance there (edge_clearance), maybe (q,) bool and moved (n,) bool
    scratch (moved all False on entry and on return), parts (p,) int64 the candidates'
    particles (each once) and moved2 (n,) [m^2] scratch. Two passes: every candidate's end test
    in parallel on the positions as the pass finds them (maybe: its edge may dip into the
    collider, or the guard may trace it; a candidate whose two particles are both nearer to X0
    than its clearance, now and at the substep's start, is not: every point the guard traces
    is then as near; nor is one of a still sphere that _round_clear finds every point of the
    edge clear of, by squares alone: the drape's 32,000 edges lying on its ball, whose two
    distances each were half the edges' time), then the candidates in order on one thread,
    each solved where maybe says so or where an earlier contact of this pass moved one of its
    particles (its test is taken again on the positions now; until a contact acts, maybe
    alone; with no candidate marked, the serial pass is not run at all). A candidate skipped
    has positions its first test saw and would change nothing: the same bits as the NumPy
    kernel's one pass. The drape's frame 40 at N = 128 (32,366 candidates, 16,317 particles),
    replayed on two threads: 76 to 113 us a pass, 47 to 81 with the motion taken over every
    particle in order and the serial pass left out (2026-11-29, late)."""
    Q = cand_edge.shape[0]
    # each candidate particle's squared motion since the step's start, once (not once per
    # candidate: a particle is in several), now or at the substep's start: the guard traces
    # from x* (which the lift of an earlier substep may have moved) to x; over every particle
    # in order (a loop the compiler vectorises) when they are half the particles or more
    if 2 * parts.shape[0] >= X.shape[1]:
        for i in prange(X.shape[1]):
            moved2[i] = _moved2(X, Xp, X0, i)
    else:
        for j in prange(parts.shape[0]):
            moved2[parts[j]] = _moved2(X, Xp, X0, parts[j])
    n_maybe = 0
    for q in prange(Q):
        maybe[q] = False
        k = cand_collider[q]
        e = cand_edge[q]
        ia = ea[e]
        ib = eb[e]
        c = clear[q]
        if c > 0 and c * c > max(moved2[ia], moved2[ib]):
            continue
        sh = shape[k]
        ap = approximate[k]
        a0, a1, a2 = _point(X, ia)
        b0, b1, b2 = _point(X, ib)
        if sh == _SPHERE and not ap and not moving[k] and _round_clear(
                a0, a1, a2, b0, b1, b2, Xp[0, ia], Xp[1, ia], Xp[2, ia], Xp[0, ib], Xp[1, ib],
                Xp[2, ib], t[k, 0], t[k, 1], t[k, 2], abc[k, 0],
                thickness[k] + max(radius[ia], radius[ib])):
            continue
        phi_a, slope_a, phi_b, slope_b = _ends(sh, ap, abc[k, 0], abc[k, 1], abc[k, 2], R[k],
                                               t[k], s[k], Rb[k], tb[k], a0, a1, a2, b0, b1,
                                               b2, k, mesh)
        off = thickness[k] + max(radius[ia], radius[ib])
        if (slope_a < 0 and slope_b > 0
                and _lines(phi_a, slope_a, phi_b, slope_b) - off
                < -max(EDGE_TOLERANCE, EDGE_SKIN * off)):
            maybe[q] = True
            n_maybe += 1
            continue
        maybe[q] = _swept(sh, ap, abc[k, 0], abc[k, 1], abc[k, 2], R[k], t[k], s[k], Rb[k],
                          tb[k], sb[k], moving[k], Xp, ia, ib, a0, a1, a2, b0, b1, b2, off, k,
                          mesh)[0]
        if maybe[q]:
            n_maybe += 1
    touched = False
    # the serial pass (a scan of every candidate on one thread) only when one may act
    for q in range(Q if n_maybe else 0):
        if not (maybe[q] or touched):
            continue
        k = cand_collider[q]
        e = cand_edge[q]
        ia = ea[e]
        ib = eb[e]
        if not (maybe[q] or moved[ia] or moved[ib]):
            continue
        sh = shape[k]
        ap = approximate[k]
        a = abc[k, 0]
        b = abc[k, 1]
        c = abc[k, 2]
        Rk = R[k]
        tk = t[k]
        sk = s[k]
        Rbk = Rb[k]
        tbk = tb[k]
        sbk = sb[k]
        a0, a1, a2 = _point(X, ia)
        b0, b1, b2 = _point(X, ib)
        e0 = b0 - a0
        e1 = b1 - a1
        e2 = b2 - a2
        phi_a, slope_a, phi_b, slope_b = _ends(sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk, a0, a1,
                                               a2, b0, b1, b2, k, mesh)
        ra = radius[ia]
        rb = radius[ib]
        off = thickness[k] + max(ra, rb)
        tol = max(EDGE_TOLERANCE, EDGE_SKIN * off)
        # least at an end (the particle's own contact acts there), or not deep enough
        dips = (slope_a < 0 and slope_b > 0
                and _lines(phi_a, slope_a, phi_b, slope_b) - off < -tol)
        swept, sa0, sa1, sa2, sb0, sb1, sb2 = _swept(sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk,
                                                     sbk, moving[k], Xp, ia, ib, a0, a1, a2,
                                                     b0, b1, b2, off, k, mesh)
        if not (dips or swept):
            continue
        pen = np.inf
        tt = 0.0
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        n0 = 0.0
        n1 = 0.0
        n2 = 0.0
        if dips:                     # the contact at the nearest point now
            tt = _nearest(sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk, a0, a1, a2, e0, e1, e2, k,
                          mesh)
            p0 = a0 + e0 * tt
            p1 = a1 + e1 * tt
            p2 = a2 + e2 * tt
            phi, n0, n1, n2, _, _, _, _ = _distance(sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk, p0,
                                                    p1, p2, p0, p1, p2, k, mesh)
            pen = phi - (thickness[k] + (ra + (rb - ra) * tt)) + tol
        if swept:                    # the guard's, at the first touch, unless on the same side
            se0 = sb0 - sa0
            se1 = sb1 - sa1
            se2 = sb2 - sa2
            ts = _nearest(sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk, sa0, sa1, sa2, se0, se1, se2,
                          k, mesh)
            s0 = sa0 + se0 * ts
            s1 = sa1 + se1 * ts
            s2 = sa2 + se2 * ts
            x0 = a0 + e0 * ts
            x1 = a1 + e1 * ts
            x2 = a2 + e2 * ts
            w0 = x0 - s0
            w1 = x1 - s1
            w2 = x2 - s2
            length = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            hit_g, pen_g, h0, h1, h2, _, _, _, _ = _trace(
                sh, ap, a, b, c, Rk, tk, sk, Rbk, tbk, thickness[k], ra + (rb - ra) * ts - tol,
                s0, s1, s2, w0, w1, w2, length, x0, x1, x2, s0, s1, s2, k, mesh)
            same = pen < 0 and n0 * h0 + n1 * h1 + n2 * h2 > 0
            if hit_g and pen_g < 0 and not same:
                tt = ts
                pen = pen_g
                n0 = h0
                n1 = h1
                n2 = h2
                p0 = x0
                p1 = x1
                p2 = x2
        if not pen < 0:
            continue
        d = -pen
        pa0 = Xp[0, ia]
        pa1 = Xp[1, ia]
        pa2 = Xp[2, ia]
        pp0 = pa0 + (Xp[0, ib] - pa0) * tt
        pp1 = pa1 + (Xp[1, ib] - pa1) * tt
        pp2 = pa2 + (Xp[2, ib] - pa2) * tt
        ms, mk = _combined_friction(mu_s[k], mu_k[k], (friction[ia] + friction[ib]) * 0.5)
        m0, m1, m2 = _collider_motion(sh, Rk, tk, sk, Rbk, tbk, sbk, moving[k], p0 + n0 * d,
                                      p1 + n1 * d, p2 + n2 * d, -1, 0.0, 0.0, 0.0, mesh)
        corr, lf = _bounded(p0, p1, p2, pp0, pp1, pp2, m0, m1, m2, n0, n1, n2, d, allowance)
        y0 = p0 + n0 * corr
        y1 = p1 + n1 * corr
        y2 = p2 + n2 * corr
        dep = e_depth[q] + corr
        u = e_used[q]
        f0, f1, f2, scale, take = _friction(y0 - pp0 - m0, y1 - pp1 - m1, y2 - pp2 - m2, n0,
                                            n1, n2, dep, u, ms, mk)
        e_depth[q] = dep
        e_used[q] = u + take
        ca = 1.0 - tt
        wa = inv_mass[ia] * ca
        wb = inv_mass[ib] * tt
        W = wa * ca + wb * tt
        if not W > 0:
            continue
        ga = wa / W
        gb = wb / W
        v0 = n0 * corr - f0 * scale
        v1 = n1 * corr - f1 * scale
        v2 = n2 * corr - f2 * scale
        X[0, ia] += v0 * ga
        X[1, ia] += v1 * ga
        X[2, ia] += v2 * ga
        X[0, ib] += v0 * gb
        X[1, ib] += v1 * gb
        X[2, ib] += v2 * gb
        moved[ia] = True
        moved[ib] = True
        touched = True
        if lf > 0:
            l0 = n0 * lf
            l1 = n1 * lf
            l2 = n2 * lf
            lift[ia, 0] += l0 * ga
            lift[ia, 1] += l1 * ga
            lift[ia, 2] += l2 * ga
            lift[ib, 0] += l0 * gb
            lift[ib, 1] += l1 * gb
            lift[ib, 2] += l2 * gb
            lifted[ia] = True
            lifted[ib] = True
    if touched:
        for q in range(Q):
            e = cand_edge[q]
            moved[ea[e]] = False
            moved[eb[e]] = False


@njit(cache=True, parallel=prange_only(), fastmath=False)
def edge_spheres(X, ea, eb, free, reach):
    """collision/edges.edge_spheres, compiled (the same arguments, results and operations):
    the live edges in one pass, their spheres in parallel (the drape's 49,000 edges: a
    dozen NumPy passes over them each step before)."""
    E = ea.shape[0]
    live = np.empty(E, np.int64)
    m = 0
    for e in range(E):
        if free[ea[e]] or free[eb[e]]:
            live[m] = e
            m += 1
    live = live[:m]
    mid = np.empty((3, m))
    half = np.empty(m)
    end_reach = np.empty(m)
    for j in prange(m):
        a = ea[live[j]]
        b = eb[live[j]]
        d0 = X[0, b] - X[0, a]
        d1 = X[1, b] - X[1, a]
        d2 = X[2, b] - X[2, a]
        mid[0, j] = X[0, a] + d0 * 0.5
        mid[1, j] = X[1, a] + d1 * 0.5
        mid[2, j] = X[2, a] + d2 * 0.5
        half[j] = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) * 0.5
        ra = reach[a]
        rb = reach[b]
        end_reach[j] = ra if (ra >= rb or ra != ra) else rb     # np.maximum's NaN
    return live, mid, half, end_reach


@njit(cache=True, parallel=prange_only(), fastmath=False)
def edge_clearance(X0, ea, eb, cand_edge, cand_collider, shape, abc, thickness, radius, R, t,
                   s, approximate, moving, mesh, out):
    """out (q,) [m] for each edge candidate, how far its two particles may move from X0 (3, n)
    [m] (the step's start) before project_edges could act on it: a lower bound of the
    collider's distance along the edge at X0, less the largest contact offset (thickness + the
    larger radius) and plus the edge's tolerance (collision/edges.py), less CLEAR_MARGIN;
    -inf where no bound holds (a mesh, a first-order SDF, a collider that moves in the step).
    The bound is the larger of phi(midpoint) - L / 2 (an exact SDF is a distance) and the
    tangent lines' (an exact primitive's SDF is convex: the lines at the ends meet under it
    where it falls from one end and rises to the other; else it is least at an end). A cloth
    resting flat on a face is then clear by that tolerance until it moves. A sphere's bound
    is its least distance along the edge itself, from the centre's nearest point of the
    segment (_segment_near, in world space; the drape's 32,000 candidates 1.3 ms a step on two
    threads with the three distances of the general bound, 0.65 with them in world space).
    approximate, moving (S, C) bool and abc (S, C, 3), R (S, C, 3, 3), t, s (S, C, 3) the
    colliders' placements per substep; mesh the mesh group (typing only: a mesh collider
    takes no edges)."""
    for q in prange(cand_edge.shape[0]):
        k = cand_collider[q]
        out[q] = -np.inf
        if shape[k] == _MESH or not _exact_still(moving, approximate, k):
            continue
        ia = ea[cand_edge[q]]
        ib = eb[cand_edge[q]]
        sh = shape[k]
        a = abc[0, k, 0]
        b = abc[0, k, 1]
        c = abc[0, k, 2]
        Rk = R[0, k]
        tk = t[0, k]
        sk = s[0, k]
        a0 = X0[0, ia]
        a1 = X0[1, ia]
        a2 = X0[2, ia]
        if sh == _SPHERE:
            # a sphere's least distance along the edge, exactly: from the centre's nearest
            # point of the segment, in world space (within rounding of _distance's, which
            # CLEAR_MARGIN covers)
            near2 = _segment_near(a0, a1, a2, X0[0, ib], X0[1, ib], X0[2, ib], tk[0], tk[1],
                                  tk[2])[0]
            bound = np.sqrt(max(near2, 0.0)) - a
        else:
            d0 = X0[0, ib] - a0
            d1 = X0[1, ib] - a1
            d2 = X0[2, ib] - a2
            m0 = a0 + d0 * 0.5
            m1 = a1 + d1 * 0.5
            m2 = a2 + d2 * 0.5
            phi_m = _distance(sh, False, a, b, c, Rk, tk, sk, Rk, tk, m0, m1, m2, m0, m1, m2,
                              k, mesh)[0]
            bound = phi_m - np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) * 0.5
            phi_a, slope_a, phi_b, slope_b = _ends(sh, False, a, b, c, Rk, tk, sk, Rk, tk, a0,
                                                   a1, a2, X0[0, ib], X0[1, ib], X0[2, ib], k,
                                                   mesh)
            if slope_a < 0 and slope_b > 0:
                lines = _lines(phi_a, slope_a, phi_b, slope_b)
            else:
                lines = min(phi_a, phi_b)
            if lines > bound:
                bound = lines
        off = thickness[k] + max(radius[ia], radius[ib])
        out[q] = bound - off + max(EDGE_TOLERANCE, EDGE_SKIN * off) - CLEAR_MARGIN
