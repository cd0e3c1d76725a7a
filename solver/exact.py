"""The contact pass (projection with friction), written column by column.

This is the projection and friction contact.py documents, spelled out as scalar formulas over
coordinate columns (q0, q1, q2) in a fixed order of operations: no matrix products, no norms, no
einsum, no hypot. The compiled mirrors (kernels_contact.project_collider for colliders, exact or
first-order, and kernels_contact.project_points for the embedded points of tetrahedral bodies)
perform exactly these operations per particle or point, so the NumPy and compiled backends
agree bit for bit (tests/solver/test_backends.py).
SDFs of the exact colliders (sdf.is_exact; GAMES103 lecture 4), in the collider's rotation-only
frame q = R^T (x - t) with scaled dimensions:

    plane     phi = q2
    sphere    phi = |q| - r
    box       d = |q| - h,  phi = |max(d, 0)| + min(max_i d_i, 0)
    cylinder  d = (|q_xy| - r, |q2| - depth/2),  phi = |max(d, 0)| + min(max(d), 0)
    capsule   phi = |q - (0, 0, clamp(q2, -l, l))| - r,  l = max(depth/2 - r, 0)

The others (ellipsoid, elliptic cylinder and capsule) use approx.local_sdf, the column form of
sdf.evaluate_local's first-order branches. With the world normal n = R grad, the offset
(collider thickness + particle radius) and the penetration d = offset - phi > 0, a contact at x
with previous position x* (contact.py's rule; (R, t, s) the frame now, (R*, t*, s*) at the
substep's start):

    y = x + n d                                   projected position
    m = y - (R* (R^T (y - t) / s * s*) + t*)      collider motion at y over the substep
    r = y - x* - m,  r_t = r - n (r . n)          relative displacement, tangential part
    D = depth + d                                 normal correction this substep
    take = |r_t|  if |r_t| + used <= mu_s D       (static)
           min(max(mu_k D - used, 0), |r_t|)      (kinetic)
    x <- y - r_t take / |r_t|,  used <- used + take

Embedded points of tetrahedral bodies (Jakobsen, "Advanced Character Physics", section 5):
p = c0 x_a + c1 x_b + c2 x_c + c3 x_d (summed in that order) takes the same contact with
offset = collider thickness, giving the point's move delta = n d - r_t take / |r_t|; each of its
four particles moves by c_k delta / (c0^2 + c1^2 + c2^2 + c3^2), which puts p exactly at p + delta
(the smallest such move of the four).
"""

import numpy as np

from . import approx, sdf

TINY = 1e-12


def _unit(v0, v1, v2, fallback):
    n = np.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    ok = n > TINY
    nn = np.where(ok, n, 1.0)
    return (n, np.where(ok, v0 / nn, fallback[0]), np.where(ok, v1 / nn, fallback[1]),
            np.where(ok, v2 / nn, fallback[2]))


def local_sdf(shape, a, b, c, q0, q1, q2):
    """phi and unit gradient columns of an exact primitive at local columns q0, q1, q2.
    (a, b, c): sphere/cylinder/capsule (radius, half depth, 0); box half extents."""
    if shape == sdf.PLANE:
        z = np.zeros_like(q2)
        return q2.copy(), z, z.copy(), z + 1.0
    if shape == sdf.SPHERE:
        n, g0, g1, g2 = _unit(q0, q1, q2, (0.0, 0.0, 1.0))
        return n - a, g0, g1, g2
    if shape == sdf.CAPSULE:
        seg = max(b - a, 0.0)
        v2 = q2 - np.minimum(np.maximum(q2, -seg), seg)
        n, g0, g1, g2 = _unit(q0, q1, v2, (0.0, 0.0, 1.0))
        return n - a, g0, g1, g2
    if shape == sdf.BOX:
        s0 = np.where(q0 < 0, -1.0, 1.0)
        s1 = np.where(q1 < 0, -1.0, 1.0)
        s2 = np.where(q2 < 0, -1.0, 1.0)
        d0, d1, d2 = np.abs(q0) - a, np.abs(q1) - b, np.abs(q2) - c
        o0, o1, o2 = np.maximum(d0, 0.0), np.maximum(d1, 0.0), np.maximum(d2, 0.0)
        outside = np.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
        dmax = np.maximum(np.maximum(d0, d1), d2)
        phi = outside + np.minimum(dmax, 0.0)
        out = outside > TINY
        on = np.where(out, outside, 1.0)
        ax0 = (d0 >= d1) & (d0 >= d2)                 # argmax, first wins
        ax1 = ~ax0 & (d1 >= d2)
        ax2 = ~ax0 & ~ax1
        g0 = np.where(out, o0 * s0 / on, np.where(ax0, s0, 0.0))
        g1 = np.where(out, o1 * s1 / on, np.where(ax1, s1, 0.0))
        g2 = np.where(out, o2 * s2 / on, np.where(ax2, s2, 0.0))
        return phi, g0, g1, g2
    if shape == sdf.CYLINDER:
        rho = np.sqrt(q0 * q0 + q1 * q1)
        ok = rho > TINY
        rr = np.where(ok, rho, 1.0)
        r0 = np.where(ok, q0 / rr, 1.0)
        r1 = np.where(ok, q1 / rr, 0.0)
        return cylinder_sdf(rho - a, r0, r1, q2, b)
    raise ValueError(f"unknown collider shape code {shape}")


def cylinder_sdf(d0, r0, r1, q2, b):
    """A cylinder's phi and unit gradient columns from its radial distance d0 and radial unit
    direction (r0, r1): combined with the exact axial distance |q2| - b (b = half depth) as
    phi = |max(d, 0)| + min(max(d0, d1), 0). Shared by the round (exact) and elliptic
    (approx.py, first-order d0) cylinders."""
    d1 = np.abs(q2) - b
    o0, o1 = np.maximum(d0, 0.0), np.maximum(d1, 0.0)
    outside = np.sqrt(o0 * o0 + o1 * o1)
    phi = outside + np.minimum(np.maximum(d0, d1), 0.0)
    sz = np.where(q2 < 0, -1.0, 1.0)
    out = outside > TINY
    on = np.where(out, outside, 1.0)
    radial = d0 > d1
    f = o0 / on
    g0 = np.where(out, r0 * f, np.where(radial, r0, 0.0))
    g1 = np.where(out, r1 * f, np.where(radial, r1, 0.0))
    g2 = np.where(out, o1 * sz / on, np.where(radial, 0.0, sz))
    return phi, g0, g1, g2


def scaled_dims(shape, dims, scale):
    """(a, b, c) of local_sdf for an exact collider of dimensions dims under scale."""
    if shape == sdf.BOX:
        return 0.5 * dims[0] * scale[0], 0.5 * dims[1] * scale[1], 0.5 * dims[2] * scale[2]
    return dims[0] * scale[0], 0.5 * dims[1] * scale[2], 0.0


def collider_sdf(shape, approximate, abc, scale, q0, q1, q2):
    """phi and unit gradient columns at local columns q0, q1, q2 of an exact collider
    (local_sdf, abc from scaled_dims) or, with approximate, of a first-order one
    (approx.local_sdf, abc from approx.scaled_dims; scale (3,) its scale)."""
    if approximate:
        return approx.local_sdf(shape, *abc, scale[0], scale[1], q0, q1, q2)
    return local_sdf(shape, *abc, q0, q1, q2)


def _to_local(R, t, x0, x1, x2):
    """Columns of R^T (x - t): world columns into the collider's rotation-only frame."""
    d0, d1, d2 = x0 - t[0], x1 - t[1], x2 - t[2]
    q0 = d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]
    q1 = d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]
    q2 = d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]
    return q0, q1, q2


def _to_world(R, g0, g1, g2):
    """Columns of R g: a local direction into world space."""
    n0 = R[0, 0] * g0 + R[0, 1] * g1 + R[0, 2] * g2
    n1 = R[1, 0] * g0 + R[1, 1] * g1 + R[1, 2] * g2
    n2 = R[2, 0] * g0 + R[2, 1] * g1 + R[2, 2] * g2
    return n0, n1, n2


def _contact(x0, x1, x2, xp0, xp1, xp2, n0, n1, n2, d, depth, used, now, before, moving, mu_s,
             mu_k):
    """Projection and friction of contacts at columns x (k,) [m], previous positions xp, world
    normal n and penetration d (k,) [m], with depth and used (k,) [m] so far this substep.
    Returns the projected position y, the friction correction (subtract it from y), the
    collider motion at y, the new depth and the new used (the module docstring's formulas)."""
    y0 = x0 + n0 * d
    y1 = x1 + n1 * d
    y2 = x2 + n2 * d
    if moving:
        m0, m1, m2 = _motion(now, before, y0, y1, y2)
    else:
        m0 = m1 = m2 = np.zeros_like(y0)
    r0 = y0 - xp0 - m0
    r1 = y1 - xp1 - m1
    r2 = y2 - xp2 - m2
    depth = depth + d
    rn = r0 * n0 + r1 * n1 + r2 * n2
    t0, t1, t2 = r0 - n0 * rn, r1 - n1 * rn, r2 - n2 * rn
    t_len = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    static = t_len + used <= mu_s * depth
    allowed = np.maximum(mu_k * depth - used, 0.0)
    take = np.where(static, t_len, np.minimum(allowed, t_len))
    big = t_len > 1e-300
    scale = np.where(big, take / np.where(big, t_len, 1.0), 0.0)
    return ((y0, y1, y2), (t0 * scale, t1 * scale, t2 * scale), (m0, m1, m2), depth,
            used + take)


def project(x, x_prev, idx, shape, abc, thickness, radius, now, before, moving, mu_s, mu_k, k, cs,
            approximate=False):
    """Project particles idx (unique ids) out of collider k, with friction (contact.py's rule).
    x, x_prev (n, 3) [m] positions (updated in place) and previous positions; abc from
    scaled_dims (exact) or approx.scaled_dims (approximate); radius (n,) [m]; now, before the
    collider's sdf.Frame at the end and start of the substep (moving: they differ);
    cs: contact.ContactState, updated for the particles that touch."""
    xc, xpc = x[idx], x_prev[idx]
    R = now.rotation
    q0, q1, q2 = _to_local(R, now.translation, xc[:, 0], xc[:, 1], xc[:, 2])
    phi, g0, g1, g2 = collider_sdf(shape, approximate, abc, now.scale, q0, q1, q2)
    pen = phi - thickness - radius[idx]
    hit = pen < 0
    if not hit.any():
        return
    ids = idx[hit]
    d = -pen[hit]
    n0, n1, n2 = _to_world(R, g0[hit], g1[hit], g2[hit])
    (y0, y1, y2), (f0, f1, f2), (m0, m1, m2), depth, used = _contact(
        xc[hit, 0], xc[hit, 1], xc[hit, 2], xpc[hit, 0], xpc[hit, 1], xpc[hit, 2], n0, n1, n2, d,
        cs.depth[ids], cs.used[ids], now, before, moving, mu_s, mu_k)
    x[ids, 0] = y0 - f0
    x[ids, 1] = y1 - f1
    x[ids, 2] = y2 - f2
    cs.depth[ids] = depth
    cs.used[ids] = used
    cs.touching[ids] = True
    cs.normal[ids, 0], cs.normal[ids, 1], cs.normal[ids, 2] = n0, n1, n2
    cs.motion[ids, 0], cs.motion[ids, 1], cs.motion[ids, 2] = m0, m1, m2
    cs.collider[ids] = k


def _embedded(col, tet, c):
    """sum_k c_k col[tet_k] (p,): one coordinate of the embedded points, summed k = 0..3."""
    return c[0] * col[tet[0]] + c[1] * col[tet[1]] + c[2] * col[tet[2]] + c[3] * col[tet[3]]


def project_points(x, x_prev, ids, tet, c, inv_c2, shape, abc, thickness, now, before, moving,
                   mu_s, mu_k, cs, approximate=False):
    """Jakobsen's embedded-point contact (module docstring) of points ids (p,) of one rank
    against one collider: tet four (p,) int64 columns, their bodies' corner particles; c four
    (p,) float64 columns, their weights; inv_c2 (p,) float64 1 / sum_k c_k^2. Points of one
    rank belong to different bodies, so their particles are disjoint and the fancy-indexed
    updates never overlap. x (n, 3) [m] updated in place; cs.point_depth and cs.point_used
    updated for the points that touch."""
    cols = (x[:, 0], x[:, 1], x[:, 2])             # views: writes go through to x
    p0, p1, p2 = (_embedded(col, tet, c) for col in cols)
    R = now.rotation
    q0, q1, q2 = _to_local(R, now.translation, p0, p1, p2)
    phi, g0, g1, g2 = collider_sdf(shape, approximate, abc, now.scale, q0, q1, q2)
    pen = phi - thickness
    hit = pen < 0
    if not hit.any():
        return
    ids, inv = ids[hit], inv_c2[hit]
    th, ch = [t[hit] for t in tet], [w[hit] for w in c]
    d = -pen[hit]
    n0, n1, n2 = _to_world(R, g0[hit], g1[hit], g2[hit])
    pp0, pp1, pp2 = (_embedded(x_prev[:, a], th, ch) for a in range(3))
    _, (f0, f1, f2), _, depth, used = _contact(
        p0[hit], p1[hit], p2[hit], pp0, pp1, pp2, n0, n1, n2, d, cs.point_depth[ids],
        cs.point_used[ids], now, before, moving, mu_s, mu_k)
    cs.point_depth[ids] = depth
    cs.point_used[ids] = used
    # the point's move n d - friction, then each corner's share c_k / sum c^2 of it
    w = ((n0 * d - f0) * inv, (n1 * d - f1) * inv, (n2 * d - f2) * inv)
    for j in range(4):                    # the four corners: disjoint particles, fixed order
        for col, wa in zip(cols, w):
            col[th[j]] += ch[j] * wa


def _motion(now, before, x0, x1, x2):
    """Displacement over the substep of the collider's material point now at (x0, x1, x2)."""
    R, t, s = now.rotation, now.translation, now.scale
    Rb, tb, sb = before.rotation, before.translation, before.scale
    d0, d1, d2 = x0 - t[0], x1 - t[1], x2 - t[2]
    w0 = (d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]) / s[0] * sb[0]
    w1 = (d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]) / s[1] * sb[1]
    w2 = (d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]) / s[2] * sb[2]
    p0 = Rb[0, 0] * w0 + Rb[0, 1] * w1 + Rb[0, 2] * w2 + tb[0]
    p1 = Rb[1, 0] * w0 + Rb[1, 1] * w1 + Rb[1, 2] * w2 + tb[1]
    p2 = Rb[2, 0] * w0 + Rb[2, 1] * w1 + Rb[2, 2] * w2 + tb[2]
    return x0 - p0, x1 - p1, x2 - p2
