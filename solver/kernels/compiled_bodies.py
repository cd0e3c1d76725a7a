"""Numba-compiled contact between bodies: the Jacobi solve (the broad phase that finds the
contacts is compiled_broad.py).

Mirror of collision/bodies.py's solve_bodies (that module's docstring gives the constraints and
cites Macklin et al. 2014 and Bridson et al. 2002): the same floating-point operations per
contact and per particle in the same order, no fastmath, so the backends agree bit for bit.

Parallel loops: pass 1 writes each contact's own rows of dx, pass 2 each particle's split into
its own slots, pass 3 scales each contact's own rows (mass splitting), pass 4 writes each
particle's own column of X. No two iterations write the same element, so the thread count
changes no bit.

The per-contact solvers are inlined (inline="always") into the parallel loop: called as
functions they took arrays, and Numba counts references on every array argument of every call
(atomic operations), which its pruning pass did not remove here: 100 ragdolls' 2,036 contacts
took 143 us a pass as calls, 79 us inlined (the same bits; measured 2026-11-26).
"""

import numpy as np
from numba import njit, prange

from .compiled_options import prange_only

_TOL = 1e-6           # collision/bodies.TOL
_DEGENERATE = 1e-30   # collision/bodies.DEGENERATE
_PARALLEL = 1e-3      # collision/bodies.PARALLEL
_ACTIVE = 1e-9        # collision/bodies.ACTIVE
_SEGMENT_PARALLEL = 1e-9   # collision/bodies.SEGMENT_PARALLEL
_VERTEX_TRI = 1       # collision/bodies.VERTEX_TRI
_EDGES = 2            # collision/bodies.EDGES
_SEGMENTS = 3         # collision/bodies.SEGMENTS


@njit(cache=True)
def _friction_step(r0, r1, r2, m0, m1, m2, pen, mu, W, allowance):
    """collision/bodies._friction_step for one contact: g and the lift."""
    into = -(r0 * m0 + r1 * m1 + r2 * m2)
    c = min(pen, max(into + allowance, 0.0))
    lift = c - min(c, max(into, 0.0))
    r0 = r0 + m0 * c
    r1 = r1 + m1 * c
    r2 = r2 + m2 * c
    pen = c
    rn = r0 * m0 + r1 * m1 + r2 * m2
    t0 = r0 - m0 * rn
    t1 = r1 - m1 * rn
    t2 = r2 - m2 * rn
    tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    take = min(mu * pen, tl)
    scale = 0.0
    if tl > 1e-300:
        scale = take / tl
    return ((m0 * pen - t0 * scale) / W, (m1 * pen - t1 * scale) / W,
            (m2 * pen - t2 * scale) / W, m0 * lift / W, m1 * lift / W, m2 * lift / W)


@njit(cache=True, inline="always")
def cross3(a0, a1, a2, b0, b1, b2):
    """a x b, component by component (collision/pairs._cross's operations)."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, inline="always")
def face_gram(e00, e01, e02, e10, e11, e12, d0, d1, d2):
    """The dot products a point's barycentrics on a triangle come from, for its edges e0, e1
    from corner a and the point's offset d from a: (e0.e0, e0.e1, e1.e1, d.e0, d.e1)."""
    return (e00 * e00 + e01 * e01 + e02 * e02, e00 * e10 + e01 * e11 + e02 * e12,
            e10 * e10 + e11 * e11 + e12 * e12, d0 * e00 + d1 * e01 + d2 * e02,
            d0 * e10 + d1 * e11 + d2 * e12)


@njit(cache=True, inline="always")
def _solve_tri(X, Xp, k, v, a, b, c, s, D, mu, inv_mass, allowance, dx, dl, share, on_solid,
               c_side):
    e00 = X[0, b] - X[0, a]
    e01 = X[1, b] - X[1, a]
    e02 = X[2, b] - X[2, a]
    e10 = X[0, c] - X[0, a]
    e11 = X[1, c] - X[1, a]
    e12 = X[2, c] - X[2, a]
    nx, ny, nz = cross3(e00, e01, e02, e10, e11, e12)
    ln2 = nx * nx + ny * ny + nz * nz
    if not (ln2 > _DEGENERATE):
        return
    ln = np.sqrt(ln2)
    nx = nx / ln
    ny = ny / ln
    nz = nz / ln
    d0 = X[0, v] - X[0, a]
    d1 = X[1, v] - X[1, a]
    d2 = X[2, v] - X[2, a]
    d00, d01, d11, d20, d21 = face_gram(e00, e01, e02, e10, e11, e12, d0, d1, d2)
    den = d00 * d11 - d01 * d01
    bb = (d11 * d20 - d01 * d21) / den
    bc = (d00 * d21 - d01 * d20) / den
    ba = 1.0 - bb - bc
    if not (ba >= -_TOL and bb >= -_TOL and bc >= -_TOL):
        # beside a two-sided face: the side it is on (collision/bodies.py)
        if not (on_solid[a] and on_solid[b] and on_solid[c]):
            dd = d0 * nx + d1 * ny + d2 * nz
            c_side[k] = 1.0 if dd >= 0.0 else -1.0
        return
    mx = s * nx
    my = s * ny
    mz = s * nz
    dn = d0 * mx + d1 * my + d2 * mz
    pen = D - dn
    wv = inv_mass[v]
    wa = inv_mass[a]
    wb = inv_mass[b]
    wc = inv_mass[c]
    W = wv + ba * ba * wa + bb * bb * wb + bc * bc * wc
    if not (pen > _ACTIVE and W > 0):
        return
    r0 = (X[0, v] - Xp[0, v]) - (ba * (X[0, a] - Xp[0, a]) + bb * (X[0, b] - Xp[0, b])
                                 + bc * (X[0, c] - Xp[0, c]))
    r1 = (X[1, v] - Xp[1, v]) - (ba * (X[1, a] - Xp[1, a]) + bb * (X[1, b] - Xp[1, b])
                                 + bc * (X[1, c] - Xp[1, c]))
    r2 = (X[2, v] - Xp[2, v]) - (ba * (X[2, a] - Xp[2, a]) + bb * (X[2, b] - Xp[2, b])
                                 + bc * (X[2, c] - Xp[2, c]))
    g0, g1, g2, l0, l1, l2 = _friction_step(r0, r1, r2, mx, my, mz, pen, mu, W, allowance)
    fa = -(ba * wa)
    fb = -(bb * wb)
    fc = -(bc * wc)
    dl[4 * k, 0] = wv * l0
    dl[4 * k, 1] = wv * l1
    dl[4 * k, 2] = wv * l2
    dl[4 * k + 1, 0] = fa * l0
    dl[4 * k + 1, 1] = fa * l1
    dl[4 * k + 1, 2] = fa * l2
    dl[4 * k + 2, 0] = fb * l0
    dl[4 * k + 2, 1] = fb * l1
    dl[4 * k + 2, 2] = fb * l2
    dl[4 * k + 3, 0] = fc * l0
    dl[4 * k + 3, 1] = fc * l1
    dl[4 * k + 3, 2] = fc * l2
    dx[4 * k, 0] = wv * g0
    dx[4 * k, 1] = wv * g1
    dx[4 * k, 2] = wv * g2
    dx[4 * k + 1, 0] = fa * g0
    dx[4 * k + 1, 1] = fa * g1
    dx[4 * k + 1, 2] = fa * g2
    dx[4 * k + 2, 0] = fb * g0
    dx[4 * k + 2, 1] = fb * g1
    dx[4 * k + 2, 2] = fb * g2
    dx[4 * k + 3, 0] = fc * g0
    dx[4 * k + 3, 1] = fc * g1
    dx[4 * k + 3, 2] = fc * g2
    share[4 * k] = 1.0
    share[4 * k + 1] = abs(ba)
    share[4 * k + 2] = abs(bb)
    share[4 * k + 3] = abs(bc)


@njit(cache=True, inline="always")
def _direction(d0, d1, d2, jit, k):
    """|d| and d / |d|, or contact k's jitter direction where d is (nearly) zero."""
    ln = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if ln > 1e-12:
        return ln, d0 / ln, d1 / ln, d2 / ln
    return ln, jit[k, 0], jit[k, 1], jit[k, 2]


@njit(cache=True, inline="always")
def _segment_vectors(X, p, q, u, w):
    """q - p, w - u and p - u by components."""
    return (X[0, q] - X[0, p], X[1, q] - X[1, p], X[2, q] - X[2, p],
            X[0, w] - X[0, u], X[1, w] - X[1, u], X[2, w] - X[2, u],
            X[0, p] - X[0, u], X[1, p] - X[1, u], X[2, p] - X[2, u])


@njit(cache=True, inline="always")
def _segment_dots(d10, d11, d12, d20, d21, d22, r0, r1, r2):
    """collision/bodies._segment_dots' products of d1 = q - p, d2 = w - u, r = p - u:
    (d1.d1, d2.d2, d1.d2, d1.r, d2.r)."""
    return (d10 * d10 + d11 * d11 + d12 * d12, d20 * d20 + d21 * d21 + d22 * d22,
            d10 * d20 + d11 * d21 + d12 * d22, d10 * r0 + d11 * r1 + d12 * r2,
            d20 * r0 + d21 * r1 + d22 * r2)


@njit(cache=True, inline="always")
def _solve_edges(X, Xp, k, p, q, u, w, side, D, mu, jit, inv_mass, allowance, dx, dl, share,
                 on_solid, c_side):
    """collision/bodies._solve_edges for one contact."""
    d10, d11, d12, d20, d21, d22, r0, r1, r2 = _segment_vectors(X, p, q, u, w)
    a, e, b, c, f = _segment_dots(d10, d11, d12, d20, d21, d22, r0, r1, r2)
    nx, ny, nz = cross3(d10, d11, d12, d20, d21, d22)
    ln2 = nx * nx + ny * ny + nz * nz
    if not (ln2 > _PARALLEL * (a * e)):
        return
    den = a * e - b * b
    ln = np.sqrt(ln2)
    sp = (b * f - c * e) / den
    tp = (a * f - b * c) / den
    if nx * jit[k, 0] + ny * jit[k, 1] + nz * jit[k, 2] < 0.0:
        side = -side
    m0 = side * (nx / ln)
    m1 = side * (ny / ln)
    m2 = side * (nz / ln)
    dn = ((r0 + sp * d10) - tp * d20) * m0 + ((r1 + sp * d11) - tp * d21) * m1 \
        + ((r2 + sp * d12) - tp * d22) * m2
    if not (sp >= 0.0 and sp <= 1.0 and tp >= 0.0 and tp <= 1.0):
        # beside each other: the side they are on (collision/bodies.py)
        if dn < 0.0 and not (on_solid[p] or on_solid[q] or on_solid[u] or on_solid[w]):
            c_side[k] = -c_side[k]
        return
    if not (dn > -D or on_solid[p] or on_solid[q] or on_solid[u] or on_solid[w]):
        return
    _four_corners(X, Xp, k, p, q, u, w, sp, tp, m0, m1, m2, D - dn, mu, inv_mass, allowance,
                  dx, dl, share)


@njit(cache=True, inline="always")
def _four_corners(X, Xp, k, p, q, u, w, sp, tp, m0, m1, m2, pen, mu, inv_mass, allowance, dx,
                  dl, share):
    """collision/bodies._four_corners for one contact."""
    c0 = 1.0 - sp
    c1 = sp
    c2 = -(1.0 - tp)
    c3 = -tp
    w0 = inv_mass[p]
    w1 = inv_mass[q]
    w2 = inv_mass[u]
    w3 = inv_mass[w]
    W = c0 * c0 * w0 + c1 * c1 * w1 + c2 * c2 * w2 + c3 * c3 * w3
    if not (pen > _ACTIVE and W > 0):
        return
    u0 = (c0 * (X[0, p] - Xp[0, p]) + c1 * (X[0, q] - Xp[0, q])) \
        + (c2 * (X[0, u] - Xp[0, u]) + c3 * (X[0, w] - Xp[0, w]))
    u1 = (c0 * (X[1, p] - Xp[1, p]) + c1 * (X[1, q] - Xp[1, q])) \
        + (c2 * (X[1, u] - Xp[1, u]) + c3 * (X[1, w] - Xp[1, w]))
    u2 = (c0 * (X[2, p] - Xp[2, p]) + c1 * (X[2, q] - Xp[2, q])) \
        + (c2 * (X[2, u] - Xp[2, u]) + c3 * (X[2, w] - Xp[2, w]))
    g0, g1, g2, l0, l1, l2 = _friction_step(u0, u1, u2, m0, m1, m2, pen, mu, W, allowance)
    cs = (c0, c1, c2, c3)
    ws = (w0, w1, w2, w3)
    for j in range(4):
        fj = cs[j] * ws[j]
        dx[4 * k + j, 0] = fj * g0
        dx[4 * k + j, 1] = fj * g1
        dx[4 * k + j, 2] = fj * g2
        dl[4 * k + j, 0] = fj * l0
        dl[4 * k + j, 1] = fj * l1
        dl[4 * k + j, 2] = fj * l2
        share[4 * k + j] = abs(cs[j])


@njit(cache=True, inline="always")
def _solve_pair(X, Xp, k, i, j, D, mu, jit, inv_mass, allowance, dx, dl, share):
    d0 = X[0, i] - X[0, j]
    d1 = X[1, i] - X[1, j]
    d2 = X[2, i] - X[2, j]
    ln, m0, m1, m2 = _direction(d0, d1, d2, jit, k)
    pen = D - ln
    wi = inv_mass[i]
    wj = inv_mass[j]
    W = wi + wj
    if not (pen > _ACTIVE and W > 0):
        return
    r0 = (X[0, i] - Xp[0, i]) - (X[0, j] - Xp[0, j])
    r1 = (X[1, i] - Xp[1, i]) - (X[1, j] - Xp[1, j])
    r2 = (X[2, i] - Xp[2, i]) - (X[2, j] - Xp[2, j])
    g0, g1, g2, l0, l1, l2 = _friction_step(r0, r1, r2, m0, m1, m2, pen, mu, W, allowance)
    dl[4 * k, 0] = wi * l0
    dl[4 * k, 1] = wi * l1
    dl[4 * k, 2] = wi * l2
    dl[4 * k + 1, 0] = -wj * l0
    dl[4 * k + 1, 1] = -wj * l1
    dl[4 * k + 1, 2] = -wj * l2
    dx[4 * k, 0] = wi * g0
    dx[4 * k, 1] = wi * g1
    dx[4 * k, 2] = wi * g2
    dx[4 * k + 1, 0] = -wj * g0
    dx[4 * k + 1, 1] = -wj * g1
    dx[4 * k + 1, 2] = -wj * g2
    share[4 * k] = 1.0
    share[4 * k + 1] = 1.0


@njit(cache=True, inline="always")
def _unit(x):
    return min(max(x, 0.0), 1.0)


@njit(cache=True)
def segment_closest(a, e, b, c, f):
    """collision/bodies.segment_closest from the dot products a = d1.d1, e = d2.d2, b = d1.d2,
    c = d1.r, f = d2.r: (s, t)."""
    if not a > 0.0:
        a = 1.0
    if not e > 0.0:
        e = 1.0
    den = a * e - b * b
    su = -c / a
    sw = (b - c) / a
    if den > _SEGMENT_PARALLEL * (a * e):
        s = (b * f - c * e) / den
    else:
        s = 0.5 * (max(min(su, sw), 0.0) + min(max(su, sw), 1.0))
    s = _unit(s)
    t = (b * s + f) / e
    if t < 0.0:
        s = _unit(su)
    elif t > 1.0:
        s = _unit(sw)
    return s, _unit(t)


@njit(cache=True, inline="always")
def _solve_segments(X, Xp, k, p, q, u, w, D, mu, jit, inv_mass, allowance, dx, dl, share):
    """collision/bodies._solve_segments for one contact."""
    d10, d11, d12, d20, d21, d22, r0, r1, r2 = _segment_vectors(X, p, q, u, w)
    sp, tp = segment_closest(*_segment_dots(d10, d11, d12, d20, d21, d22, r0, r1, r2))
    e0 = (r0 + sp * d10) - tp * d20
    e1 = (r1 + sp * d11) - tp * d21
    e2 = (r2 + sp * d12) - tp * d22
    ln, m0, m1, m2 = _direction(e0, e1, e2, jit, k)
    _four_corners(X, Xp, k, p, q, u, w, sp, tp, m0, m1, m2, D - ln, mu, inv_mass, allowance,
                  dx, dl, share)


@njit(cache=True, parallel=prange_only())
def solve_bodies(X, Xp, c_idx, c_kind, c_side, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl,
                 share, g_particle, g_start, g_slot, touched, split, act, on_solid):
    K = c_idx.shape[0]
    # pass 1: each contact's own rows; only the shares are cleared (most contacts do not act),
    # the passes after read acting corners only (share 0 is a zero row in the reference: the
    # same sums)
    for k in prange(K):
        for j in range(4):
            share[4 * k + j] = 0.0
        if c_kind[k] == _EDGES:
            _solve_edges(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_idx[k, 2], c_idx[k, 3],
                         c_side[k], c_dist[k], c_mu[k], c_jit, inv_mass, allowance, dx, dl,
                         share, on_solid, c_side)
        elif c_kind[k] == _SEGMENTS:
            _solve_segments(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_idx[k, 2], c_idx[k, 3],
                            c_dist[k], c_mu[k], c_jit, inv_mass, allowance, dx, dl, share)
        elif c_kind[k] == _VERTEX_TRI:
            _solve_tri(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_idx[k, 2], c_idx[k, 3], c_side[k],
                       c_dist[k], c_mu[k], inv_mass, allowance, dx, dl, share, on_solid, c_side)
        else:
            _solve_pair(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_dist[k], c_mu[k], c_jit,
                        inv_mass, allowance, dx, dl, share)
    # pass 2: each particle's share of the contacts acting on it, max(1, it), into its acting
    # slots, which it lists in act[g_start[q]:] in order, ended by -1 where fewer than all
    # (most candidate contacts do not act: pass 4 reads the acting ones only)
    for q in prange(g_particle.shape[0]):
        cnt = 0.0
        na = g_start[q]
        for e in range(g_start[q], g_start[q + 1]):
            sl = g_slot[e]
            if share[sl] != 0.0:
                cnt += share[sl]
                act[na] = sl
                na += 1
        if na < g_start[q + 1]:
            act[na] = -1
        m = max(cnt, 1.0)
        for e in range(g_start[q], na):
            split[act[e]] = m
    # pass 3: each acting contact's rows times W / W', W' its corners' inverse masses times
    # their splits (collision/bodies.py, "Jacobi with mass splitting")
    for k in prange(K):
        W = 0.0
        W2 = 0.0
        for j in range(4):
            sl = 4 * k + j
            if share[sl] != 0.0:
                t = inv_mass[c_idx[k, j]] * (share[sl] * share[sl])
                W = W + t
                W2 = W2 + t * split[sl]
        if not W2 > 0.0:
            continue
        f = W / W2
        for j in range(4):
            sl = 4 * k + j
            if share[sl] != 0.0:
                for a in range(3):
                    dx[sl, a] = dx[sl, a] * f
                    dl[sl, a] = dl[sl, a] * f
    for q in prange(g_particle.shape[0]):               # pass 4: each particle's own column
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        acts = False
        for e in range(g_start[q], g_start[q + 1]):
            sl = act[e]
            if sl < 0:
                break
            s0 += dx[sl, 0]
            s1 += dx[sl, 1]
            s2 += dx[sl, 2]
            p0 += dl[sl, 0]
            p1 += dl[sl, 1]
            p2 += dl[sl, 2]
            acts = True
        if acts:
            p = g_particle[q]
            X[0, p] = X[0, p] + s0
            X[1, p] = X[1, p] + s1
            X[2, p] = X[2, p] + s2
            # x* follows the lift only as far as the particle moved that way in this
            # substep (collision/bodies.py, "The lift")
            ll = p0 * p0 + p1 * p1 + p2 * p2
            if ll > 0.0:
                f = ((X[0, p] - Xp[0, p]) * p0 + (X[1, p] - Xp[1, p]) * p1
                     + (X[2, p] - Xp[2, p]) * p2) / ll
                f = min(max(f, 0.0), 1.0)
                Xp[0, p] = Xp[0, p] + p0 * f
                Xp[1, p] = Xp[1, p] + p1 * f
                Xp[2, p] = Xp[2, p] + p2 * f
            touched[p] = True
