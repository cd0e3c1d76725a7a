"""A measured prototype, not product code: contacts of rigid bodies solved on the bodies, as
rigid-body contacts (Mueller, Macklin, Chentanez, Jeschke and Kim, "Detailed Rigid Body
Simulation with Extended Position Based Dynamics", SCA 2020, section 3.5), instead of the
product's particle projection followed by a contact-weighted shape fit (shapes.BOOST).

Per substep, after the shape fit (run with plain mass weights), every body contact is solved in
a fixed order (serial Gauss-Seidel), ``passes`` times, every other pass in reverse order:

    C = s (x_v - p) . n - D (vertex-triangle) or the edge-edge distance (collision/bodies.py),
    w_b = 1 / M_b + (r_b x n)^T I_b^-1 (r_b x n)     (r_b: the contact point from b's centre)
    dlambda_n = min(pen, into + allowance) / (w_a + w_b)        (allowance as the product's)
    then static / kinetic friction from the contact points' relative motion over the substep,
    measured after the normal correction: dlambda_t = min(mu dlambda_n, |dp_t| / (w_a,t + w_b,t))

each impulse moving the two bodies' centres by p / M and turning them by I^-1 (r x p) (the
joints' quaternion update, constraints/joints.py), and the bodies' particles placed on the new
poses. A ground plane z = 0 (the scene's collider 0, when it has one) is solved the same way
for every particle of a rigid body. Only vertex-triangle and edge-edge contacts between rigid
bodies (or a rigid body and a pinned one) are handled: enough for the crate pile and the cube
tests, which is what this measures (README.md in this folder)."""
import os

import numpy as np
from numba import njit

import solver.kernels.compiled  # noqa: F401  (compiled_joints imports it first)
from solver.kernels.compiled_joints import _iw, _rotate

ACTIVE = 1e-9          # as collision/bodies.py
# the variant measured against Gauss-Seidel (README.md): every contact of a pass from the same
# poses, each body moved by the mean of its contacts' impulses times OMEGA (Jacobi with
# averaging, as the product's particle contacts); read once, when the kernels compile
JACOBI = int(os.environ.get("PROTO_JACOBI", "0"))
OMEGA = float(os.environ.get("PROTO_OMEGA", "1.0"))
# the variant that turns a distance-level correction into an impulse through K (README.md)
KMAT = int(os.environ.get("PROTO_K", "0"))
PARALLEL = 1e-3
TOL = 1e-6


@njit(cache=False)
def _gather(X, Xp, corners, cw, ncorner, PA, PB, rel):
    """The contact points on each side (PA from the corners of weight > 0, PB from the others,
    by |weight|) and the corners' relative motion rel = sum w (x - x*) over the substep."""
    PA[:] = 0.0
    PB[:] = 0.0
    rel[:] = 0.0
    for j in range(ncorner):
        p = corners[j]
        w = cw[j]
        for i in range(3):
            if w > 0:
                PA[i] += w * X[i, p]
            else:
                PB[i] -= w * X[i, p]
            rel[i] += w * (X[i, p] - Xp[i, p])


@njit(cache=False)
def _gen(b, Mb, I0inv, c, R, P, n0, n1, n2):
    """generalized inverse mass of body b at point P along n (0 for b < 0)."""
    if b < 0:
        return 0.0
    r0 = P[0] - c[b, 0]
    r1 = P[1] - c[b, 1]
    r2 = P[2] - c[b, 2]
    x0 = r1 * n2 - r2 * n1
    x1 = r2 * n0 - r0 * n2
    x2 = r0 * n1 - r1 * n0
    a0, a1, a2 = _iw(R, I0inv, b, x0, x1, x2)
    return 1.0 / Mb[b] + x0 * a0 + x1 * a1 + x2 * a2


@njit(cache=False)
def _apply(b, sign, Mb, I0inv, c, R, P, p0, p1, p2):
    if b < 0:
        return
    p0 *= sign
    p1 *= sign
    p2 *= sign
    r0 = P[0] - c[b, 0]
    r1 = P[1] - c[b, 1]
    r2 = P[2] - c[b, 2]
    im = 1.0 / Mb[b]
    c[b, 0] += p0 * im
    c[b, 1] += p1 * im
    c[b, 2] += p2 * im
    x0 = r1 * p2 - r2 * p1
    x1 = r2 * p0 - r0 * p2
    x2 = r0 * p1 - r1 * p0
    a0, a1, a2 = _iw(R, I0inv, b, x0, x1, x2)
    _rotate(R, b, a0, a1, a2)


@njit(cache=False)
def _place(X, b, m_particles, m_start, qoff, c, R):
    if b < 0:
        return
    for e in range(m_start[b], m_start[b + 1]):
        p = m_particles[e]
        for i in range(3):
            X[i, p] = c[b, i] + R[b, i, 0] * qoff[e, 0] + R[b, i, 1] * qoff[e, 1] \
                + R[b, i, 2] * qoff[e, 2]


@njit(cache=False)
def _contact(X, Xp, corners, cw, ncorner, A, B, m0, m1, m2, pen, mu, allowance, Mb, I0inv, c,
             R, m_particles, m_start, qoff, PA, PB, rel):
    """corners with weights cw (side A > 0, side B < 0); normal m points from B to A."""
    _gather(X, Xp, corners, cw, ncorner, PA, PB, rel)
    into = -(rel[0] * m0 + rel[1] * m1 + rel[2] * m2)
    cc = min(pen, max(into + allowance, 0.0))
    if not cc > 0:
        return False
    W = _gen(A, Mb, I0inv, c, R, PA, m0, m1, m2) + _gen(B, Mb, I0inv, c, R, PB, m0, m1, m2)
    if not W > 0:
        return False
    ln = cc / W
    _apply(A, 1.0, Mb, I0inv, c, R, PA, ln * m0, ln * m1, ln * m2)
    _apply(B, -1.0, Mb, I0inv, c, R, PB, ln * m0, ln * m1, ln * m2)
    _place(X, A, m_particles, m_start, qoff, c, R)
    _place(X, B, m_particles, m_start, qoff, c, R)
    # friction from the relative motion after the normal correction
    _gather(X, Xp, corners, cw, ncorner, PA, PB, rel)
    rn = rel[0] * m0 + rel[1] * m1 + rel[2] * m2
    t0 = rel[0] - m0 * rn
    t1 = rel[1] - m1 * rn
    t2 = rel[2] - m2 * rn
    tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if tl > 1e-300:
        u0 = t0 / tl
        u1 = t1 / tl
        u2 = t2 / tl
        Wt = _gen(A, Mb, I0inv, c, R, PA, u0, u1, u2) + _gen(B, Mb, I0inv, c, R, PB, u0, u1, u2)
        take = min(mu * ln, tl / Wt)
        _apply(A, 1.0, Mb, I0inv, c, R, PA, -take * u0, -take * u1, -take * u2)
        _apply(B, -1.0, Mb, I0inv, c, R, PB, -take * u0, -take * u1, -take * u2)
    _place(X, A, m_particles, m_start, qoff, c, R)
    _place(X, B, m_particles, m_start, qoff, c, R)
    return True


@njit(cache=False)
def _solve3(K, d0, d1, d2):
    """K^-1 d for a symmetric positive definite 3x3 K (Cramer's rule)."""
    c00 = K[1, 1] * K[2, 2] - K[1, 2] * K[2, 1]
    c01 = K[0, 2] * K[2, 1] - K[0, 1] * K[2, 2]
    c02 = K[0, 1] * K[1, 2] - K[0, 2] * K[1, 1]
    c11 = K[0, 0] * K[2, 2] - K[0, 2] * K[2, 0]
    c12 = K[0, 2] * K[1, 0] - K[0, 0] * K[1, 2]
    c22 = K[0, 0] * K[1, 1] - K[0, 1] * K[1, 0]
    det = K[0, 0] * c00 + K[0, 1] * (K[1, 2] * K[2, 0] - K[1, 0] * K[2, 2]) \
        + K[0, 2] * (K[1, 0] * K[2, 1] - K[1, 1] * K[2, 0])
    inv = 1.0 / det
    return ((c00 * d0 + c01 * d1 + c02 * d2) * inv, (c01 * d0 + c11 * d1 + c12 * d2) * inv,
            (c02 * d0 + c12 * d1 + c22 * d2) * inv)


@njit(cache=False)
def _kadd(b, Mb, I0inv, c, R, P, K):
    """K += the point-response matrix of body b at P: 1/M I - [r]x Iw^-1 [r]x."""
    if b < 0:
        return
    r0 = P[0] - c[b, 0]
    r1 = P[1] - c[b, 1]
    r2 = P[2] - c[b, 2]
    im = 1.0 / Mb[b]
    # columns of Iw^-1 [r]x e_j = Iw^-1 (r x e_j), then -[r]x of them
    for j in range(3):
        e0 = 1.0 if j == 0 else 0.0
        e1 = 1.0 if j == 1 else 0.0
        e2 = 1.0 if j == 2 else 0.0
        x0 = r1 * e2 - r2 * e1
        x1 = r2 * e0 - r0 * e2
        x2 = r0 * e1 - r1 * e0
        a0, a1, a2 = _iw(R, I0inv, b, x0, x1, x2)
        # -(r x a) = a x r
        K[0, j] += (a1 * r2 - a2 * r1) + (im if j == 0 else 0.0)
        K[1, j] += (a2 * r0 - a0 * r2) + (im if j == 1 else 0.0)
        K[2, j] += (a0 * r1 - a1 * r0) + (im if j == 2 else 0.0)


@njit(cache=False)
def _contact_k(X, Xp, corners, cw, ncorner, A, B, m0, m1, m2, pen, mu, allowance, Mb, I0inv, c,
               R, m_particles, m_start, qoff, PA, PB, rel):
    _gather(X, Xp, corners, cw, ncorner, PA, PB, rel)
    into = -(rel[0] * m0 + rel[1] * m1 + rel[2] * m2)
    cc = min(pen, max(into + allowance, 0.0))
    if not cc > 0:
        return False
    r0 = rel[0] + m0 * cc
    r1 = rel[1] + m1 * cc
    r2 = rel[2] + m2 * cc
    rn = r0 * m0 + r1 * m1 + r2 * m2
    t0 = r0 - m0 * rn
    t1 = r1 - m1 * rn
    t2 = r2 - m2 * rn
    tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    take = min(mu * cc, tl)
    sc = take / tl if tl > 1e-300 else 0.0
    d0 = m0 * cc - t0 * sc
    d1 = m1 * cc - t1 * sc
    d2 = m2 * cc - t2 * sc
    K = np.zeros((3, 3))
    _kadd(A, Mb, I0inv, c, R, PA, K)
    _kadd(B, Mb, I0inv, c, R, PB, K)
    p0, p1, p2 = _solve3(K, d0, d1, d2)
    _apply(A, 1.0, Mb, I0inv, c, R, PA, p0, p1, p2)
    _apply(B, -1.0, Mb, I0inv, c, R, PB, p0, p1, p2)
    _place(X, A, m_particles, m_start, qoff, c, R)
    _place(X, B, m_particles, m_start, qoff, c, R)
    return True


@njit(cache=False)
def _accum(b, sign, Mb, I0inv, c, R, P, p0, p1, p2, acc):
    if b < 0:
        return
    p0 *= sign
    p1 *= sign
    p2 *= sign
    r0 = P[0] - c[b, 0]
    r1 = P[1] - c[b, 1]
    r2 = P[2] - c[b, 2]
    im = 1.0 / Mb[b]
    x0 = r1 * p2 - r2 * p1
    x1 = r2 * p0 - r0 * p2
    x2 = r0 * p1 - r1 * p0
    a0, a1, a2 = _iw(R, I0inv, b, x0, x1, x2)
    acc[b, 0] += p0 * im
    acc[b, 1] += p1 * im
    acc[b, 2] += p2 * im
    acc[b, 3] += a0
    acc[b, 4] += a1
    acc[b, 5] += a2
    acc[b, 6] += 1.0


@njit(cache=False)
def _contact_j(X, Xp, corners, cw, ncorner, A, B, m0, m1, m2, pen, mu, allowance, Mb, I0inv, c,
               R, PA, PB, rel, acc):
    _gather(X, Xp, corners, cw, ncorner, PA, PB, rel)
    into = -(rel[0] * m0 + rel[1] * m1 + rel[2] * m2)
    cc = min(pen, max(into + allowance, 0.0))
    if not cc > 0:
        return False
    W = _gen(A, Mb, I0inv, c, R, PA, m0, m1, m2) + _gen(B, Mb, I0inv, c, R, PB, m0, m1, m2)
    if not W > 0:
        return False
    ln = cc / W
    r0 = rel[0] + m0 * cc
    r1 = rel[1] + m1 * cc
    r2 = rel[2] + m2 * cc
    rn = r0 * m0 + r1 * m1 + r2 * m2
    t0 = r0 - m0 * rn
    t1 = r1 - m1 * rn
    t2 = r2 - m2 * rn
    tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    p0 = ln * m0
    p1 = ln * m1
    p2 = ln * m2
    if tl > 1e-300:
        u0 = t0 / tl
        u1 = t1 / tl
        u2 = t2 / tl
        Wt = _gen(A, Mb, I0inv, c, R, PA, u0, u1, u2) + _gen(B, Mb, I0inv, c, R, PB, u0, u1, u2)
        take = min(mu * ln, tl / Wt)
        p0 -= take * u0
        p1 -= take * u1
        p2 -= take * u2
    _accum(A, 1.0, Mb, I0inv, c, R, PA, p0, p1, p2, acc)
    _accum(B, -1.0, Mb, I0inv, c, R, PB, p0, p1, p2, acc)
    return True


@njit(cache=False)
def rigid_contacts(X, Xp, m_particles, m_start, m_mass, qoff, Mb, I0inv, pb, m_rot, b_idx,
                   b_kind, b_side, b_dist, b_mu, b_jit, allowance, c_thickness, radius, c_mu_s,
                   touching, b_touch, c, R, plane_on, passes, reverse):
    K = Mb.shape[0]
    for k in range(K):
        ms = 0.0
        c0 = 0.0
        c1 = 0.0
        c2 = 0.0
        for e in range(m_start[k], m_start[k + 1]):
            p = m_particles[e]
            m = m_mass[e]
            ms += m
            c0 += m * X[0, p]
            c1 += m * X[1, p]
            c2 += m * X[2, p]
        c[k, 0] = c0 / ms
        c[k, 1] = c1 / ms
        c[k, 2] = c2 / ms
        for i in range(3):
            for j in range(3):
                R[k, i, j] = m_rot[k, i, j]
    corners = np.empty(4, np.int64)
    cw = np.empty(4)
    for it in range(passes):
        _pass(X, Xp, m_particles, m_start, qoff, Mb, I0inv, pb, b_idx, b_kind, b_side, b_dist,
              b_mu, b_jit, allowance, c_thickness, radius, c_mu_s, touching, b_touch, c, R,
              plane_on, corners, cw, reverse and it % 2 == 1)


@njit(cache=False)
def _pass(X, Xp, m_particles, m_start, qoff, Mb, I0inv, pb, b_idx, b_kind, b_side, b_dist, b_mu,
          b_jit, allowance, c_thickness, radius, c_mu_s, touching, b_touch, c, R, plane_on,
          corners, cw, rev):
    K = Mb.shape[0]
    NQ = b_idx.shape[0]
    PA = np.zeros(3)
    PB = np.zeros(3)
    rel = np.zeros(3)
    acc = np.zeros((K, 7))
    for qi in range(NQ):
        q = NQ - 1 - qi if rev else qi
        kind = b_kind[q]
        if kind == 1:                       # vertex v against triangle abc
            v = b_idx[q, 0]
            a = b_idx[q, 1]
            b = b_idx[q, 2]
            cc = b_idx[q, 3]
            e00 = X[0, b] - X[0, a]
            e01 = X[1, b] - X[1, a]
            e02 = X[2, b] - X[2, a]
            e10 = X[0, cc] - X[0, a]
            e11 = X[1, cc] - X[1, a]
            e12 = X[2, cc] - X[2, a]
            nx = e01 * e12 - e02 * e11
            ny = e02 * e10 - e00 * e12
            nz = e00 * e11 - e01 * e10
            ln2 = nx * nx + ny * ny + nz * nz
            if not ln2 > 1e-30:
                continue
            ln = np.sqrt(ln2)
            nx /= ln
            ny /= ln
            nz /= ln
            d0 = X[0, v] - X[0, a]
            d1 = X[1, v] - X[1, a]
            d2 = X[2, v] - X[2, a]
            d00 = e00 * e00 + e01 * e01 + e02 * e02
            d01 = e00 * e10 + e01 * e11 + e02 * e12
            d11 = e10 * e10 + e11 * e11 + e12 * e12
            d20 = d0 * e00 + d1 * e01 + d2 * e02
            d21 = d0 * e10 + d1 * e11 + d2 * e12
            den = d00 * d11 - d01 * d01
            bb = (d11 * d20 - d01 * d21) / den
            bc = (d00 * d21 - d01 * d20) / den
            ba = 1.0 - bb - bc
            if ba < -TOL or bb < -TOL or bc < -TOL:
                continue
            s = b_side[q]
            m0 = s * nx
            m1 = s * ny
            m2 = s * nz
            pen = b_dist[q] - (d0 * m0 + d1 * m1 + d2 * m2)
            if not pen > ACTIVE:
                continue
            corners[0] = v
            corners[1] = a
            corners[2] = b
            corners[3] = cc
            cw[0] = 1.0
            cw[1] = -ba
            cw[2] = -bb
            cw[3] = -bc
            if (_contact_j(X, Xp, corners, cw, 4, pb[v], pb[a], m0, m1, m2, pen, b_mu[q],
                        allowance, Mb, I0inv, c, R, PA, PB, rel, acc) if JACOBI else (_contact_k if KMAT else _contact)(X, Xp, corners, cw, 4, pb[v], pb[a], m0, m1, m2, pen, b_mu[q],
                        allowance, Mb, I0inv, c, R, m_particles, m_start, qoff, PA, PB, rel)):
                b_touch[v] = True
                b_touch[a] = True
                b_touch[b] = True
                b_touch[cc] = True
        elif kind == 2:                     # edge pq against edge uw
            p = b_idx[q, 0]
            qq = b_idx[q, 1]
            u = b_idx[q, 2]
            w = b_idx[q, 3]
            d10 = X[0, qq] - X[0, p]
            d11 = X[1, qq] - X[1, p]
            d12 = X[2, qq] - X[2, p]
            d20 = X[0, w] - X[0, u]
            d21 = X[1, w] - X[1, u]
            d22 = X[2, w] - X[2, u]
            r0 = X[0, p] - X[0, u]
            r1 = X[1, p] - X[1, u]
            r2 = X[2, p] - X[2, u]
            a = d10 * d10 + d11 * d11 + d12 * d12
            e = d20 * d20 + d21 * d21 + d22 * d22
            b = d10 * d20 + d11 * d21 + d12 * d22
            cdot = d10 * r0 + d11 * r1 + d12 * r2
            f = d20 * r0 + d21 * r1 + d22 * r2
            nx = d11 * d22 - d12 * d21
            ny = d12 * d20 - d10 * d22
            nz = d10 * d21 - d11 * d20
            ln2 = nx * nx + ny * ny + nz * nz
            if not ln2 > PARALLEL * (a * e):
                continue
            den = a * e - b * b
            ln = np.sqrt(ln2)
            sp = (b * f - cdot * e) / den
            tp = (a * f - b * cdot) / den
            if sp < 0 or sp > 1 or tp < 0 or tp > 1:
                continue
            side = b_side[q]
            turn = -side if nx * b_jit[q, 0] + ny * b_jit[q, 1] + nz * b_jit[q, 2] < 0 else side
            m0 = turn * nx / ln
            m1 = turn * ny / ln
            m2 = turn * nz / ln
            dn = (r0 + sp * d10 - tp * d20) * m0 + (r1 + sp * d11 - tp * d21) * m1 \
                + (r2 + sp * d12 - tp * d22) * m2
            pen = b_dist[q] - dn
            if not pen > ACTIVE:
                continue
            corners[0] = p
            corners[1] = qq
            corners[2] = u
            corners[3] = w
            cw[0] = 1.0 - sp
            cw[1] = sp
            cw[2] = -(1.0 - tp)
            cw[3] = -tp
            if (_contact_j(X, Xp, corners, cw, 4, pb[p], pb[u], m0, m1, m2, pen, b_mu[q],
                        allowance, Mb, I0inv, c, R, PA, PB, rel, acc) if JACOBI else (_contact_k if KMAT else _contact)(X, Xp, corners, cw, 4, pb[p], pb[u], m0, m1, m2, pen, b_mu[q],
                        allowance, Mb, I0inv, c, R, m_particles, m_start, qoff, PA, PB, rel)):
                b_touch[p] = True
                b_touch[qq] = True
                b_touch[u] = True
                b_touch[w] = True
    # the ground plane z = 0 (collider 0), every rigid particle
    if plane_on:
        th = c_thickness[0]
        mu = c_mu_s[0]
        one = np.empty(1, np.int64)
        w1 = np.ones(1)
        for k in range(K):
            for e in range(m_start[k], m_start[k + 1]):
                p = m_particles[e]
                pen = th + radius[p] - X[2, p]
                if not pen > ACTIVE:
                    continue
                one[0] = p
                if (_contact_j(X, Xp, one, w1, 1, k, -1, 0.0, 0.0, 1.0, pen, mu, allowance, Mb,
                            I0inv, c, R, PA, PB, rel, acc) if JACOBI else (_contact_k if KMAT else _contact)(X, Xp, one, w1, 1, k, -1, 0.0, 0.0, 1.0, pen, mu, allowance, Mb,
                            I0inv, c, R, m_particles, m_start, qoff, PA, PB, rel)):
                    touching[p] = True
    if JACOBI:
        for k in range(K):
            if acc[k, 6] > 0:
                f = OMEGA / acc[k, 6]
                c[k, 0] += f * acc[k, 0]
                c[k, 1] += f * acc[k, 1]
                c[k, 2] += f * acc[k, 2]
                _rotate(R, k, f * acc[k, 3], f * acc[k, 4], f * acc[k, 5])
                _place(X, k, m_particles, m_start, qoff, c, R)
