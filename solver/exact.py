"""The contact pass for colliders whose SDF is exact (sdf.is_exact), written column by column.

This is the same projection and friction as contact.py documents, spelled out as scalar
formulas over coordinate columns (q0, q1, q2) in a fixed order of operations: no matrix
products, no norms, no einsum. kernels_numba.project_exact performs exactly these operations per
particle, so the NumPy and compiled backends agree bit for bit (tests/solver/test_backends.py).
SDFs (GAMES103 lecture 4), in the collider's rotation-only frame with scaled dimensions:

    plane     phi = q2
    sphere    phi = |q| - r
    box       d = |q| - h,  phi = |max(d, 0)| + min(max_i d_i, 0)
    cylinder  d = (|q_xy| - r, |q2| - depth/2),  phi = |max(d, 0)| + min(max(d), 0)
    capsule   phi = |q - (0, 0, clamp(q2, -l, l))| - r,  l = max(depth/2 - r, 0)
"""

import numpy as np

from . import sdf

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
        d0 = rho - a
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
    raise ValueError(f"unknown collider shape code {shape}")


def scaled_dims(shape, dims, scale):
    """(a, b, c) of local_sdf for an exact collider of dimensions dims under scale."""
    if shape == sdf.BOX:
        return 0.5 * dims[0] * scale[0], 0.5 * dims[1] * scale[1], 0.5 * dims[2] * scale[2]
    return dims[0] * scale[0], 0.5 * dims[1] * scale[2], 0.0


def project(x, x_prev, idx, shape, abc, thickness, radius, now, before, moving, mu_s, mu_k, k, cs):
    """Project particles idx out of one exact collider, with friction (contact.py's rule)."""
    xc, xpc = x[idx], x_prev[idx]
    R, t = now.rotation, now.translation
    d0, d1, d2 = xc[:, 0] - t[0], xc[:, 1] - t[1], xc[:, 2] - t[2]
    q0 = d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]
    q1 = d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]
    q2 = d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]
    phi, g0, g1, g2 = local_sdf(shape, *abc, q0, q1, q2)
    pen = phi - thickness - radius[idx]
    hit = pen < 0
    if not hit.any():
        return
    ids = idx[hit]
    d = -pen[hit]
    g0, g1, g2 = g0[hit], g1[hit], g2[hit]
    n0 = R[0, 0] * g0 + R[0, 1] * g1 + R[0, 2] * g2
    n1 = R[1, 0] * g0 + R[1, 1] * g1 + R[1, 2] * g2
    n2 = R[2, 0] * g0 + R[2, 1] * g1 + R[2, 2] * g2
    x0 = xc[hit, 0] + n0 * d
    x1 = xc[hit, 1] + n1 * d
    x2 = xc[hit, 2] + n2 * d
    if moving:
        m0, m1, m2 = _motion(now, before, x0, x1, x2)
    else:
        m0 = m1 = m2 = np.zeros_like(x0)
    r0 = x0 - xpc[hit, 0] - m0
    r1 = x1 - xpc[hit, 1] - m1
    r2 = x2 - xpc[hit, 2] - m2
    depth = cs.depth[ids] + d
    used = cs.used[ids]
    rn = r0 * n0 + r1 * n1 + r2 * n2
    t0, t1, t2 = r0 - n0 * rn, r1 - n1 * rn, r2 - n2 * rn
    t_len = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    static = t_len + used <= mu_s * depth
    allowed = np.maximum(mu_k * depth - used, 0.0)
    take = np.where(static, t_len, np.minimum(allowed, t_len))
    big = t_len > 1e-300
    scale = np.where(big, take / np.where(big, t_len, 1.0), 0.0)
    x[ids, 0] = x0 - t0 * scale
    x[ids, 1] = x1 - t1 * scale
    x[ids, 2] = x2 - t2 * scale
    cs.depth[ids] = depth
    cs.used[ids] = used + take
    cs.touching[ids] = True
    cs.normal[ids, 0], cs.normal[ids, 1], cs.normal[ids, 2] = n0, n1, n2
    cs.motion[ids, 0], cs.motion[ids, 1], cs.motion[ids, 2] = m0, m1, m2
    cs.collider[ids] = k


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
