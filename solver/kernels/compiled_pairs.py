"""Numba-compiled narrow filter of the body contacts' candidate pairs: the mirror of
collision/pairs.filter_pairs (that module's docstring gives the tests), and of its
store_pairs, which makes the kept pairs the body contacts' arrays. Each pair is one
iteration of a parallel loop that writes only its own results; every quantity is computed with
the NumPy kernel's operations in its order (dot products component by component, left to
right), so both backends keep the same pairs with the same sides and normals.
Importing this module requires Numba.
"""

import math

import numpy as np
from numba import njit, prange

from .compiled_bodies import cross3, face_gram
from .compiled_options import prange_only

# the NumPy side's constants, copied so that this file's digest (backend.KERNEL_SOURCES) keys
# the cached kernels that use them (tests/solver/test_structure.py checks each copy)
BAND = 1e-3        # collision/bodies.BAND
PARALLEL = 1e-3    # collision/bodies.PARALLEL
SLACK = 1e-3       # collision/bodies.SLACK
REACH = 1.5        # collision/pairs.REACH
PAIR = 0           # collision/bodies.PAIR
VERTEX_TRI = 1     # collision/bodies.VERTEX_TRI
EDGES = 2          # collision/bodies.EDGES
SEGMENTS = 3       # collision/bodies.SEGMENTS


@njit(cache=True, inline="always")
def _v(x, xp, h, i, c):
    """Particle i's velocity [m/s] along axis c: (x - x*) / h."""
    return (x[i, c] - xp[i, c]) / h


@njit(cache=True, inline="always")
def _sq(x, xp, h, i):
    """|v_i|^2 [m^2/s^2], component by component."""
    a = _v(x, xp, h, i, 0)
    b = _v(x, xp, h, i, 1)
    c = _v(x, xp, h, i, 2)
    return a * a + b * b + c * c


@njit(cache=True, inline="always")
def _along(v0, v1, v2, u0, u1, u2):
    """The size of v along the plane of the unit normal u (pairs._along)."""
    d = v0 * u0 + v1 * u1 + v2 * u2
    t0 = v0 - d * u0
    t1 = v1 - d * u1
    t2 = v2 - d * u2
    return math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)


@njit(cache=True, inline="always")
def _face_edges(x, tris, f):
    """Triangle f's edges b - a and c - a [m], component by component."""
    a = tris[f, 0]
    b = tris[f, 1]
    c = tris[f, 2]
    return (x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2],
            x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2])


@njit(cache=True, inline="always")
def _face_normal(x, tris, f):
    """Triangle f's normal (b - a) x (c - a), not normalised."""
    e0, e1, e2, g0, g1, g2 = _face_edges(x, tris, f)
    return cross3(e0, e1, e2, g0, g1, g2)


@njit(cache=True)
def _vertex_out(x, tris, solid):
    """Mirror of pairs.vertex_out: each solid face's unit normal added to its corners', face
    after face (bincount's order)."""
    out = np.zeros((x.shape[0], 3))
    for f in range(tris.shape[0]):
        if not solid[f]:
            continue
        n0, n1, n2 = _face_normal(x, tris, f)
        ln = max(math.sqrt(n0 * n0 + n1 * n1 + n2 * n2), 1e-300)
        n0 /= ln
        n1 /= ln
        n2 /= ln
        for k in range(3):
            v = tris[f, k]
            out[v, 0] += n0
            out[v, 1] += n1
            out[v, 2] += n2
    return out


@njit(cache=True, inline="always")
def _edge_out(x, tris, solid, edge_face, e):
    """Mirror of pairs._edge_out for edge e: the sum of its solid faces' unit normals."""
    o0 = 0.0
    o1 = 0.0
    o2 = 0.0
    for j in range(2):
        f = edge_face[e, j]
        if f < 0 or not solid[f]:
            continue
        n0, n1, n2 = _face_normal(x, tris, f)
        ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if not ln > 0:
            ln = 1.0
        o0 += n0 / ln
        o1 += n1 / ln
        o2 += n2 / ln
    return o0, o1, o2


@njit(cache=True, parallel=prange_only())
def filter_pairs(x, xp, h, dt, acc, g_dt2, radius, tris, solid, tri_thick, tri_depth, edges,
                 edge_face, edge_thick, pi, pj, tv, tt, ea, eb):
    """Mirror of collision/pairs.filter_pairs (its docstring gives the arguments and the
    result)."""
    P = pi.shape[0]
    T = tv.shape[0]
    Q = ea.shape[0]
    near = np.empty(P, np.bool_)
    t_keep = np.empty(T, np.bool_)
    t_side = np.empty(T)
    e_keep = np.empty(Q, np.bool_)
    e_side = np.empty(Q)
    e_normal = np.empty((Q, 3))
    slack2 = 2 * SLACK
    for k in prange(P):
        i = pi[k]
        j = pj[k]
        r0 = _v(x, xp, h, i, 0) - _v(x, xp, h, j, 0)
        r1 = _v(x, xp, h, i, 1) - _v(x, xp, h, j, 1)
        r2 = _v(x, xp, h, i, 2) - _v(x, xp, h, j, 2)
        d0 = x[i, 0] - x[j, 0]
        d1 = x[i, 1] - x[j, 1]
        d2 = x[i, 2] - x[j, 2]
        gap = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        fastest = max(max(0.0, _sq(x, xp, h, i)), _sq(x, xp, h, j))
        speed = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2) + math.sqrt(fastest)
        near[k] = gap <= radius[i] + radius[j] + slack2 + (REACH * speed * dt + g_dt2)
    nv = _vertex_out(x, tris, solid) if T else np.zeros((0, 3))
    for k in prange(T):
        v = tv[k]
        f = tt[k]
        a = tris[f, 0]
        b = tris[f, 1]
        c = tris[f, 2]
        e00, e01, e02, e10, e11, e12 = _face_edges(x, tris, f)
        n0, n1, n2 = cross3(e00, e01, e02, e10, e11, e12)
        dd0 = x[v, 0] - x[a, 0]
        dd1 = x[v, 1] - x[a, 1]
        dd2 = x[v, 2] - x[a, 2]
        dn = dd0 * n0 + dd1 * n1 + dd2 * n2
        ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        dn = dn / ln if ln > 0 else 0.0
        dist = radius[v] + tri_thick[f]
        face_solid = solid[f]
        rel0 = _v(x, xp, h, v, 0) - (_v(x, xp, h, a, 0) + _v(x, xp, h, b, 0)
                                     + _v(x, xp, h, c, 0)) / 3.0
        rel1 = _v(x, xp, h, v, 1) - (_v(x, xp, h, a, 1) + _v(x, xp, h, b, 1)
                                     + _v(x, xp, h, c, 1)) / 3.0
        rel2 = _v(x, xp, h, v, 2) - (_v(x, xp, h, a, 2) + _v(x, xp, h, b, 2)
                                     + _v(x, xp, h, c, 2)) / 3.0
        rel_len = math.sqrt(rel0 * rel0 + rel1 * rel1 + rel2 * rel2)
        band = max(dist + BAND + rel_len * dt, 0.5 * tri_depth[f])
        fastest = max(max(max(max(0.0, _sq(x, xp, h, v)), _sq(x, xp, h, a)),
                          _sq(x, xp, h, b)), _sq(x, xp, h, c))
        reach = dist + slack2 + (REACH * (rel_len + math.sqrt(fastest)) * dt + g_dt2)
        keep = dn <= reach and (face_solid or dn >= -reach)
        lu = ln if ln > 0 else 1.0
        u0 = n0 / lu
        u1 = n1 / lu
        u2 = n2 / lu
        fall = max(_along(acc[v, 0], acc[v, 1], acc[v, 2], u0, u1, u2),
                   _along((acc[a, 0] + acc[b, 0] + acc[c, 0]) / 3.0,
                          (acc[a, 1] + acc[b, 1] + acc[c, 1]) / 3.0,
                          (acc[a, 2] + acc[b, 2] + acc[c, 2]) / 3.0, u0, u1, u2))
        side_reach = slack2 + REACH * _along(rel0, rel1, rel2, u0, u1, u2) * dt \
            + 0.5 * fall * dt * dt
        d00, d01, d11, d20, d21 = face_gram(e00, e01, e02, e10, e11, e12, dd0, dd1, dd2)
        den = d00 * d11 - d01 * d01
        bary = 0.0
        if den > 0:
            bb = (d11 * d20 - d01 * d21) / den
            bc = (d00 * d21 - d01 * d20) / den
            bary = min(min(bb, bc), 1.0 - bb - bc)
        g0 = e10 - e00
        g1 = e11 - e01
        g2 = e12 - e02
        longest = math.sqrt(max(max(d00, d11), g0 * g0 + g1 * g1 + g2 * g2))
        height = max(ln / max(longest, 1e-300), 1e-300)
        keep = keep and bary >= -(side_reach / height)
        keep = keep and (not face_solid or dn >= -band)
        o0 = nv[v, 0]
        o1 = nv[v, 1]
        o2 = nv[v, 2]
        facing = o0 * n0 + o1 * n1 + o2 * n2
        keep = keep and (not face_solid or facing < 0 or not (o0 != 0 or o1 != 0 or o2 != 0))
        t_keep[k] = keep
        t_side[k] = 1.0 if face_solid or dn >= 0 else -1.0
    for k in prange(Q):
        p = edges[ea[k], 0]
        q = edges[ea[k], 1]
        u = edges[eb[k], 0]
        w = edges[eb[k], 1]
        a0 = x[q, 0] - x[p, 0]
        a1 = x[q, 1] - x[p, 1]
        a2 = x[q, 2] - x[p, 2]
        b0 = x[w, 0] - x[u, 0]
        b1 = x[w, 1] - x[u, 1]
        b2 = x[w, 2] - x[u, 2]
        r0 = x[p, 0] - x[u, 0]
        r1 = x[p, 1] - x[u, 1]
        r2 = x[p, 2] - x[u, 2]
        n0, n1, n2 = cross3(a0, a1, a2, b0, b1, b2)
        ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        aa = a0 * a0 + a1 * a1 + a2 * a2
        ee = b0 * b0 + b1 * b1 + b2 * b2
        keep = ln * ln > PARALLEL * aa * ee
        lu = ln if ln > 0 else 1.0
        n0 = n0 / lu
        n1 = n1 / lu
        n2 = n2 / lu
        bd = a0 * b0 + a1 * b1 + a2 * b2
        den = aa * ee - bd * bd if keep else 1.0
        cc = a0 * r0 + a1 * r1 + a2 * r2
        ff = b0 * r0 + b1 * r1 + b2 * r2
        sp_ = (bd * ff - cc * ee) / den
        tp_ = (aa * ff - bd * cc) / den
        sp = min(max(sp_, 0.0), 1.0)
        tp = min(max(tp_, 0.0), 1.0)
        dn = (r0 + sp * a0 - tp * b0) * n0 + (r1 + sp * a1 - tp * b1) * n1 \
            + (r2 + sp * a2 - tp * b2) * n2
        oa0, oa1, oa2 = _edge_out(x, tris, solid, edge_face, ea[k])
        ob0, ob1, ob2 = _edge_out(x, tris, solid, edge_face, eb[k])
        solid_a = oa0 != 0 or oa1 != 0 or oa2 != 0
        solid_b = ob0 != 0 or ob1 != 0 or ob2 != 0
        any_solid = solid_a or solid_b
        toward = (ob0 - oa0) * n0 + (ob1 - oa1) * n1 + (ob2 - oa2) * n2
        if any_solid:
            side = 1.0 if toward >= 0 else -1.0
        else:
            side = 1.0 if dn >= 0 else -1.0
        dist = edge_thick[ea[k]] + edge_thick[eb[k]]
        rel0 = (_v(x, xp, h, p, 0) + _v(x, xp, h, q, 0) - _v(x, xp, h, u, 0)
                - _v(x, xp, h, w, 0)) * 0.5
        rel1 = (_v(x, xp, h, p, 1) + _v(x, xp, h, q, 1) - _v(x, xp, h, u, 1)
                - _v(x, xp, h, w, 1)) * 0.5
        rel2 = (_v(x, xp, h, p, 2) + _v(x, xp, h, q, 2) - _v(x, xp, h, u, 2)
                - _v(x, xp, h, w, 2)) * 0.5
        rel_len = math.sqrt(rel0 * rel0 + rel1 * rel1 + rel2 * rel2)
        band = dist + BAND + rel_len * dt
        keep = keep and (not any_solid or (abs(toward) > 1e-6 and side * dn >= -band))
        fastest = max(max(max(max(0.0, _sq(x, xp, h, p)), _sq(x, xp, h, q)),
                          _sq(x, xp, h, u)), _sq(x, xp, h, w))
        reach = dist + slack2 + (REACH * (rel_len + math.sqrt(fastest)) * dt + g_dt2)
        side_reach = dist + slack2 + REACH * _along(rel0, rel1, rel2, n0, n1, n2) * dt + g_dt2
        ma = side_reach / math.sqrt(max(aa, 1e-300))
        mb = side_reach / math.sqrt(max(ee, 1e-300))
        keep = keep and abs(dn) <= reach and sp_ >= -ma and sp_ <= 1 + ma and tp_ >= -mb \
            and tp_ <= 1 + mb
        m0 = side * n0
        m1 = side * n1
        m2 = side * n2
        keep = keep and (not solid_a or oa0 * m0 + oa1 * m1 + oa2 * m2 < -1e-6)
        keep = keep and (not solid_b or ob0 * m0 + ob1 * m1 + ob2 * m2 > 1e-6)
        e_keep[k] = keep
        e_side[k] = side
        e_normal[k, 0] = n0
        e_normal[k, 1] = n1
        e_normal[k, 2] = n2
    return near, t_keep, t_side, e_keep, e_side, e_normal


@njit(cache=True, inline="always")
def _corner_mean(f, corners, r):
    """collision/pairs.corner_mean of row r of corners (m, k) int64."""
    first = f[corners[r, 0]]
    total = first
    same = True
    for j in range(1, corners.shape[1]):
        total = total + f[corners[r, j]]
        same = same and f[corners[r, j]] == first
    return first if same else total / corners.shape[1]


@njit(cache=True, inline="always")
def _two_rows(idx, k, rows, a, b, mu):
    """Contact k between rows a and b of rows (m, 2) int64 (two edges, two capsule axes): its
    corners into idx, and its friction, the geometric mean of the two rows' corner means."""
    for c in range(2):
        idx[k, c] = rows[a, c]
        idx[k, 2 + c] = rows[b, c]
    return np.sqrt(_corner_mean(mu, rows, a) * _corner_mean(mu, rows, b))


@njit(cache=True, inline="always")
def new_contacts(K):
    """The six arrays of K body contacts (contacts.Contacts.set_body_contacts'): idx (K, 4)
    int64 of -1, kind (K,) int64, side (K,), dist (K,), mu (K,) and jit (K, 3) of zeros."""
    return (np.full((K, 4), -1, np.int64), np.empty(K, np.int64), np.zeros(K), np.empty(K),
            np.empty(K), np.zeros((K, 3)))


@njit(cache=True)
def store_pairs(pi, pj, tv, tt, ea, eb, near, t_keep, t_side, e_keep, e_side, e_normal, sa, sb,
                tris, edges, segments, radius, tri_thick, edge_thick, seg_radius, mu):
    """Scalar mirror of collision/pairs.store_pairs (the same arguments and arrays): one pass
    over the pairs instead of some forty NumPy calls (0.3 ms of Python a call at a flag's round
    collide, whatever its size)."""
    P = 0
    for q in range(near.shape[0]):
        P += near[q]
    T = 0
    for q in range(t_keep.shape[0]):
        T += t_keep[q]
    E = 0
    for q in range(e_keep.shape[0]):
        E += e_keep[q]
    S = sa.shape[0]
    K = P + T + E + S
    idx, kind, side, dist, out_mu, jit = new_contacts(K)
    k = 0
    for q in range(near.shape[0]):
        if near[q]:
            i = pi[q]
            j = pj[q]
            idx[k, 0] = i
            idx[k, 1] = j
            kind[k] = PAIR
            dist[k] = radius[i] + radius[j]
            out_mu[k] = np.sqrt(mu[i] * mu[j])
            k += 1
    for q in range(t_keep.shape[0]):
        if t_keep[q]:
            v = tv[q]
            f = tt[q]
            idx[k, 0] = v
            for c in range(3):
                idx[k, 1 + c] = tris[f, c]
            kind[k] = VERTEX_TRI
            side[k] = t_side[q]
            dist[k] = radius[v] + tri_thick[f]
            out_mu[k] = np.sqrt(mu[v] * _corner_mean(mu, tris, f))
            k += 1
    for q in range(e_keep.shape[0]):
        if e_keep[q]:
            out_mu[k] = _two_rows(idx, k, edges, ea[q], eb[q], mu)
            kind[k] = EDGES
            side[k] = e_side[q]
            dist[k] = edge_thick[ea[q]] + edge_thick[eb[q]]
            for c in range(3):
                jit[k, c] = e_normal[q, c]
            k += 1
    for q in range(S):
        out_mu[k] = _two_rows(idx, k, segments, sa[q], sb[q], mu)
        kind[k] = SEGMENTS
        dist[k] = seg_radius[sa[q]] + seg_radius[sb[q]]
        k += 1
    return idx, kind, side, dist, out_mu, jit
