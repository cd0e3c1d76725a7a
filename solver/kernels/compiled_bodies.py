"""Numba-compiled contact between bodies: the broad phase and the Jacobi solve.

Mirrors of collision/bodies.py's find_body_contacts and solve_bodies (that module's docstring
gives the constraints and cites Macklin et al. 2014 and Bridson et al. 2002): the same pairs
(the broad phase's result is defined by exact box comparisons, which the grid only
accelerates; BodyContacts sorts it afterwards), and the same floating-point operations per
contact and per particle in the same order, no fastmath, so the backends agree bit for bit.

Parallel loops: the broad phase counts then fills each query's own output segment; the solve's
pass 1 writes each contact's own rows of dx, pass 2 each particle's own column of X. No two
iterations write the same element, so the thread count changes no bit.
"""

import numpy as np
from numba import njit, prange

_TOL = 1e-6           # collision/bodies.TOL
_DEGENERATE = 1e-30   # collision/bodies.DEGENERATE


@njit(cache=True)
def _cell(x, origin, cell, dims, a):
    c = np.int64(np.floor((x - origin[a]) / cell))
    return min(max(c, 0), dims[a] - 1)


@njit(cache=True)
def _disabled(ga, gb, disabled, n_groups):
    lo = min(ga, gb)
    hi = max(ga, gb)
    key = lo * n_groups + hi
    if disabled.shape[0] == 0:
        return False
    pos = np.searchsorted(disabled, key)
    if pos >= disabled.shape[0]:
        pos = disabled.shape[0] - 1
    return disabled[pos] == key


@njit(cache=True)
def _dist2(x, i, j):
    d0 = x[i, 0] - x[j, 0]
    d1 = x[i, 1] - x[j, 1]
    d2 = x[i, 2] - x[j, 2]
    return d0 * d0 + d1 * d1 + d2 * d2


@njit(cache=True)
def _vt_ok(v, f, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris, tri_thick, self_group,
           disabled):
    a = tris[f, 0]
    b = tris[f, 1]
    c = tris[f, 2]
    if v == a or v == b or v == c:
        return False
    for k in range(3):
        if not (lo[v, k] <= thi[f, k]) or not (hi[v, k] >= tlo[f, k]):
            return False
    if not (inv_mass[v] > 0 or inv_mass[a] > 0 or inv_mass[b] > 0 or inv_mass[c] > 0):
        return False
    gv = group[v]
    ga = group[a]
    if gv == ga:
        if not self_group[gv]:
            return False
        dmin = min(min(_dist2(x0, v, a), _dist2(x0, v, b)), _dist2(x0, v, c))
        rr = radius[v] + tri_thick[f]
        return dmin > rr * rr
    return not _disabled(gv, ga, disabled, self_group.shape[0])


@njit(cache=True)
def _pp_ok(i, j, lo, hi, radius, group, inv_mass, x0, self_group, disabled):
    if not (j > i) or not (radius[j] > 0):
        return False
    for k in range(3):
        if not (lo[j, k] <= hi[i, k]) or not (hi[j, k] >= lo[i, k]):
            return False
    if not (inv_mass[i] > 0 or inv_mass[j] > 0):
        return False
    gi = group[i]
    gj = group[j]
    if gi == gj:
        if not self_group[gi]:
            return False
        r = radius[i] + radius[j]
        return _dist2(x0, i, j) > r * r
    return not _disabled(gi, gj, disabled, self_group.shape[0])


@njit(cache=True)
def _scan(q, qlo, qhi, is_tri, write, out, at, order, ukey, ustart, uend, origin, cell, dims,
          lo, hi, tlo, thi, radius, group, inv_mass, x0, tris, tri_thick, self_group, disabled):
    """Visit the particles in the cells of query q's box; count (write False) or write the
    pairs that pass the exact test into out[at:]. Returns the count."""
    c0 = np.empty(3, np.int64)
    c1 = np.empty(3, np.int64)
    for a in range(3):
        c0[a] = _cell(qlo[a], origin, cell, dims, a)
        c1[a] = _cell(qhi[a], origin, cell, dims, a)
    m = 0
    for cx in range(c0[0], c1[0] + 1):
        for cy in range(c0[1], c1[1] + 1):
            for cz in range(c0[2], c1[2] + 1):
                key = (cx * dims[1] + cy) * dims[2] + cz
                pos = np.searchsorted(ukey, key)
                if pos >= ukey.shape[0] or ukey[pos] != key:
                    continue
                for s in range(ustart[pos], uend[pos]):
                    p = order[s]
                    if is_tri:
                        ok = _vt_ok(p, q, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris,
                                    tri_thick, self_group, disabled)
                    else:
                        ok = _pp_ok(q, p, lo, hi, radius, group, inv_mass, x0, self_group,
                                    disabled)
                    if ok:
                        if write:
                            out[at + m] = p
                        m += 1
    return m


@njit(cache=True, parallel=True)
def find_body_contacts(lo, hi, radius, group, inv_mass, x0, tris, tri_thick, self_group,
                       disabled, origin, cell, dims, reach):
    n = lo.shape[0]
    keys = np.empty(n, np.int64)
    for i in range(n):
        keys[i] = (_cell(lo[i, 0], origin, cell, dims, 0) * dims[1]
                   + _cell(lo[i, 1], origin, cell, dims, 1)) * dims[2] \
            + _cell(lo[i, 2], origin, cell, dims, 2)
    order = np.argsort(keys, kind="mergesort")
    nu = 0
    for s in range(n):
        if s == 0 or keys[order[s]] != keys[order[s - 1]]:
            nu += 1
    ukey = np.empty(nu, np.int64)
    ustart = np.empty(nu, np.int64)
    uend = np.empty(nu, np.int64)
    u = -1
    for s in range(n):
        if s == 0 or keys[order[s]] != keys[order[s - 1]]:
            u += 1
            ukey[u] = keys[order[s]]
            ustart[u] = s
        uend[u] = s + 1
    F = tris.shape[0]
    tlo = np.empty((F, 3))
    thi = np.empty((F, 3))
    for f in prange(F):
        a = tris[f, 0]
        b = tris[f, 1]
        c = tris[f, 2]
        for k in range(3):
            tlo[f, k] = min(min(lo[a, k], lo[b, k]), lo[c, k])
            thi[f, k] = max(max(hi[a, k], hi[b, k]), hi[c, k])
    dummy = np.zeros(0, np.int64)
    qlo = np.empty((F, 3))
    for f in range(F):
        for k in range(3):
            qlo[f, k] = tlo[f, k] - reach
    cnt = np.zeros(F + 1, np.int64)
    for f in prange(F):
        cnt[f + 1] = _scan(f, qlo[f], thi[f], True, False, dummy, 0, order, ukey, ustart, uend,
                           origin, cell, dims, lo, hi, tlo, thi, radius, group, inv_mass, x0,
                           tris, tri_thick, self_group, disabled)
    for f in range(F):
        cnt[f + 1] += cnt[f]
    vt_v = np.empty(cnt[F], np.int64)
    vt_t = np.empty(cnt[F], np.int64)
    for f in prange(F):
        _scan(f, qlo[f], thi[f], True, True, vt_v, cnt[f], order, ukey, ustart, uend, origin,
              cell, dims, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris, tri_thick,
              self_group, disabled)
        for m in range(cnt[f], cnt[f + 1]):
            vt_t[m] = f
    # particle pairs
    nb = 0
    for i in range(n):
        if radius[i] > 0:
            nb += 1
    big = np.empty(nb, np.int64)
    nb = 0
    for i in range(n):
        if radius[i] > 0:
            big[nb] = i
            nb += 1
    plo = np.empty((nb, 3))
    for q in range(nb):
        for k in range(3):
            plo[q, k] = lo[big[q], k] - reach
    pc = np.zeros(nb + 1, np.int64)
    for q in prange(nb):
        pc[q + 1] = _scan(big[q], plo[q], hi[big[q]], False, False, dummy, 0, order, ukey,
                          ustart, uend, origin, cell, dims, lo, hi, tlo, thi, radius, group,
                          inv_mass, x0, tris, tri_thick, self_group, disabled)
    for q in range(nb):
        pc[q + 1] += pc[q]
    pp_i = np.empty(pc[nb], np.int64)
    pp_j = np.empty(pc[nb], np.int64)
    for q in prange(nb):
        _scan(big[q], plo[q], hi[big[q]], False, True, pp_j, pc[q], order, ukey, ustart, uend,
              origin, cell, dims, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris,
              tri_thick, self_group, disabled)
        for m in range(pc[q], pc[q + 1]):
            pp_i[m] = big[q]
    return pp_i, pp_j, vt_v, vt_t


@njit(cache=True)
def _friction_step(r0, r1, r2, m0, m1, m2, pen, mu, W):
    """collision/bodies._friction_step for one contact."""
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
            (m2 * pen - t2 * scale) / W)


@njit(cache=True)
def _solve_tri(X, Xp, k, v, a, b, c, s, D, mu, inv_mass, dx, active):
    e00 = X[0, b] - X[0, a]
    e01 = X[1, b] - X[1, a]
    e02 = X[2, b] - X[2, a]
    e10 = X[0, c] - X[0, a]
    e11 = X[1, c] - X[1, a]
    e12 = X[2, c] - X[2, a]
    nx = e01 * e12 - e02 * e11
    ny = e02 * e10 - e00 * e12
    nz = e00 * e11 - e01 * e10
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
    d00 = e00 * e00 + e01 * e01 + e02 * e02
    d01 = e00 * e10 + e01 * e11 + e02 * e12
    d11 = e10 * e10 + e11 * e11 + e12 * e12
    d20 = d0 * e00 + d1 * e01 + d2 * e02
    d21 = d0 * e10 + d1 * e11 + d2 * e12
    den = d00 * d11 - d01 * d01
    bb = (d11 * d20 - d01 * d21) / den
    bc = (d00 * d21 - d01 * d20) / den
    ba = 1.0 - bb - bc
    if not (ba >= -_TOL and bb >= -_TOL and bc >= -_TOL):
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
    if not (pen > 0 and W > 0):
        return
    r0 = (X[0, v] - Xp[0, v]) - (ba * (X[0, a] - Xp[0, a]) + bb * (X[0, b] - Xp[0, b])
                                 + bc * (X[0, c] - Xp[0, c]))
    r1 = (X[1, v] - Xp[1, v]) - (ba * (X[1, a] - Xp[1, a]) + bb * (X[1, b] - Xp[1, b])
                                 + bc * (X[1, c] - Xp[1, c]))
    r2 = (X[2, v] - Xp[2, v]) - (ba * (X[2, a] - Xp[2, a]) + bb * (X[2, b] - Xp[2, b])
                                 + bc * (X[2, c] - Xp[2, c]))
    r0 = r0 + mx * pen
    r1 = r1 + my * pen
    r2 = r2 + mz * pen
    g0, g1, g2 = _friction_step(r0, r1, r2, mx, my, mz, pen, mu, W)
    fa = -(ba * wa)
    fb = -(bb * wb)
    fc = -(bc * wc)
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
    for j in range(4):
        active[4 * k + j] = True


@njit(cache=True)
def _solve_pair(X, Xp, k, i, j, D, mu, jit, inv_mass, dx, active):
    d0 = X[0, i] - X[0, j]
    d1 = X[1, i] - X[1, j]
    d2 = X[2, i] - X[2, j]
    l2 = d0 * d0 + d1 * d1 + d2 * d2
    ln = np.sqrt(l2)
    if ln > 1e-12:
        m0 = d0 / ln
        m1 = d1 / ln
        m2 = d2 / ln
    else:
        m0 = jit[k, 0]
        m1 = jit[k, 1]
        m2 = jit[k, 2]
    pen = D - ln
    wi = inv_mass[i]
    wj = inv_mass[j]
    W = wi + wj
    if not (pen > 0 and W > 0):
        return
    r0 = ((X[0, i] - Xp[0, i]) - (X[0, j] - Xp[0, j])) + m0 * pen
    r1 = ((X[1, i] - Xp[1, i]) - (X[1, j] - Xp[1, j])) + m1 * pen
    r2 = ((X[2, i] - Xp[2, i]) - (X[2, j] - Xp[2, j])) + m2 * pen
    g0, g1, g2 = _friction_step(r0, r1, r2, m0, m1, m2, pen, mu, W)
    dx[4 * k, 0] = wi * g0
    dx[4 * k, 1] = wi * g1
    dx[4 * k, 2] = wi * g2
    dx[4 * k + 1, 0] = -wj * g0
    dx[4 * k + 1, 1] = -wj * g1
    dx[4 * k + 1, 2] = -wj * g2
    active[4 * k] = True
    active[4 * k + 1] = True


@njit(cache=True, parallel=True)
def solve_bodies(X, Xp, c_idx, c_side, c_dist, c_mu, c_jit, inv_mass, dx, active, g_particle,
                 g_start, g_slot, touched):
    K = c_idx.shape[0]
    for k in prange(K):                                  # pass 1: each contact's own rows
        for j in range(4):
            active[4 * k + j] = False
            for a in range(3):
                dx[4 * k + j, a] = 0.0
        if c_idx[k, 2] >= 0:
            _solve_tri(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_idx[k, 2], c_idx[k, 3], c_side[k],
                       c_dist[k], c_mu[k], inv_mass, dx, active)
        else:
            _solve_pair(X, Xp, k, c_idx[k, 0], c_idx[k, 1], c_dist[k], c_mu[k], c_jit,
                        inv_mass, dx, active)
    for q in prange(g_particle.shape[0]):               # pass 2: each particle's own column
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        cnt = 0.0
        for e in range(g_start[q], g_start[q + 1]):
            sl = g_slot[e]
            s0 += dx[sl, 0]
            s1 += dx[sl, 1]
            s2 += dx[sl, 2]
            if active[sl]:
                cnt += 1.0
        if cnt > 0:
            p = g_particle[q]
            X[0, p] = X[0, p] + s0 / cnt
            X[1, p] = X[1, p] + s1 / cnt
            X[2, p] = X[2, p] + s2 / cnt
            touched[p] = True
