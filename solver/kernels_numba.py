"""Numba-compiled kernels: the same arithmetic as the NumPy kernels, compiled.

Each function mirrors a NumPy kernel operation for operation (same formulas, same order, no
fastmath, no FMA contraction), so the two backends agree bit for bit. Loops marked prange run in
parallel only over items that touch disjoint particles (the members of one colour, or one
particle each), so the result does not depend on the thread count or schedule.
Importing this module requires Numba; backend.py imports it lazily.
"""

import numpy as np
from numba import njit, prange

_EPS = 1e-12


@njit(cache=True, parallel=True, fastmath=False)
def predict(X, Xp, a_h2, keep, lim):
    """Verlet prediction (simulation.py, step 1) on (3, n) rows; keep (n,) velocity fraction kept;
    lim (n,) speed*h or empty."""
    n = X.shape[1]
    clamp = lim.shape[0] > 0
    for p in prange(n):
        dx = X[0, p] - Xp[0, p]
        dy = X[1, p] - Xp[1, p]
        dz = X[2, p] - Xp[2, p]
        Xp[0, p] = X[0, p]
        Xp[1, p] = X[1, p]
        Xp[2, p] = X[2, p]
        dx *= keep[p]
        dy *= keep[p]
        dz *= keep[p]
        dx += a_h2[0, p]
        dy += a_h2[1, p]
        dz += a_h2[2, p]
        if clamp:
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            f = min(1.0, lim[p] / max(length, 1e-300))
            dx *= f
            dy *= f
            dz *= f
        X[0, p] += dx
        X[1, p] += dy
        X[2, p] += dz


@njit(cache=True, parallel=True, fastmath=False)
def solve_sticks(X, si, sj, rest, wi, wj, alpha, denom, lam, lo, hi, offsets, omega, one_sided):
    """One Gauss-Seidel sweep of XPBD sticks, colour after colour (sticks.py)."""
    px = X[0]
    py = X[1]
    pz = X[2]
    for c in range(offsets.shape[0] - 1):
        for k in prange(offsets[c], offsets[c + 1]):
            i = si[k]
            j = sj[k]
            dx = px[i] - px[j]
            dy = py[i] - py[j]
            dz = pz[i] - pz[j]
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            lam_k = lam[k]
            dlam = (rest[k] - length - alpha[k] * lam_k) / denom[k]
            if omega != 1.0:
                dlam *= omega
            if one_sided:
                new = min(max(lam_k + dlam, lo[k]), hi[k])
                dlam = new - lam_k
                lam[k] = new
            else:
                lam[k] = lam_k + dlam
            dlam /= max(length, _EPS)
            s_i = wi[k] * dlam
            s_j = wj[k] * dlam
            px[i] += dx * s_i
            py[i] += dy * s_i
            pz[i] += dz * s_i
            px[j] -= dx * s_j
            py[j] -= dy * s_j
            pz[j] -= dz * s_j


_TINY = 1e-12


@njit(cache=True, inline="always")
def _local_sdf(shape, a, b, c, q0, q1, q2):
    """Scalar mirror of exact.local_sdf (same operations, same order)."""
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
    d0 = rho - a
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


@njit(cache=True, parallel=True, fastmath=False)
def project_exact(X, Xp, idx, shape, a, b, c, thickness, radius, R, t, s, Rb, tb, sb, moving,
                  mu_s, mu_k, k, depth, used, touching, normal, motion, collider):
    """Scalar mirror of exact.project: one exact collider, candidates idx (unique ids)."""
    for m in prange(idx.shape[0]):
        i = idx[m]
        d0 = X[0, i] - t[0]
        d1 = X[1, i] - t[1]
        d2 = X[2, i] - t[2]
        q0 = d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]
        q1 = d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]
        q2 = d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]
        phi, g0, g1, g2 = _local_sdf(shape, a, b, c, q0, q1, q2)
        pen = phi - thickness - radius[i]
        if not pen < 0:
            continue
        d = -pen
        n0 = R[0, 0] * g0 + R[0, 1] * g1 + R[0, 2] * g2
        n1 = R[1, 0] * g0 + R[1, 1] * g1 + R[1, 2] * g2
        n2 = R[2, 0] * g0 + R[2, 1] * g1 + R[2, 2] * g2
        x0 = X[0, i] + n0 * d
        x1 = X[1, i] + n1 * d
        x2 = X[2, i] + n2 * d
        m0 = 0.0
        m1 = 0.0
        m2 = 0.0
        if moving:
            e0 = x0 - t[0]
            e1 = x1 - t[1]
            e2 = x2 - t[2]
            w0 = (e0 * R[0, 0] + e1 * R[1, 0] + e2 * R[2, 0]) / s[0] * sb[0]
            w1 = (e0 * R[0, 1] + e1 * R[1, 1] + e2 * R[2, 1]) / s[1] * sb[1]
            w2 = (e0 * R[0, 2] + e1 * R[1, 2] + e2 * R[2, 2]) / s[2] * sb[2]
            m0 = x0 - (Rb[0, 0] * w0 + Rb[0, 1] * w1 + Rb[0, 2] * w2 + tb[0])
            m1 = x1 - (Rb[1, 0] * w0 + Rb[1, 1] * w1 + Rb[1, 2] * w2 + tb[1])
            m2 = x2 - (Rb[2, 0] * w0 + Rb[2, 1] * w1 + Rb[2, 2] * w2 + tb[2])
        r0 = x0 - Xp[0, i] - m0
        r1 = x1 - Xp[1, i] - m1
        r2 = x2 - Xp[2, i] - m2
        dep = depth[i] + d
        u = used[i]
        rn = r0 * n0 + r1 * n1 + r2 * n2
        t0 = r0 - n0 * rn
        t1 = r1 - n1 * rn
        t2 = r2 - n2 * rn
        t_len = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        if t_len + u <= mu_s * dep:
            take = t_len
        else:
            take = min(max(mu_k * dep - u, 0.0), t_len)
        scale = take / t_len if t_len > 1e-300 else 0.0
        X[0, i] = x0 - t0 * scale
        X[1, i] = x1 - t1 * scale
        X[2, i] = x2 - t2 * scale
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
