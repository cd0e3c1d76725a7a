"""Numba-compiled mesh collider queries: the BVH closest-point query and the signed distance
(scalar mirrors of collision/mesh_query.py: the same operations in the same order, so the
backends agree bit for bit), place_meshes (the substep's vertices), and the once-per-step
refit_meshes (BVH boxes) and mesh_normals (angle-weighted pseudo-normals; mirrors of
collision/mesh.py's).

The query walks the tree depth first with a small stack, the nearer child first, skipping every
subtree whose box is farther than the best squared distance so far.
Boxes are padded (mesh.py), so no triangle that could win or tie is skipped, and ties go to the
lowest triangle index: the answer is the brute force's. A particle near the surface reads its
patch first (compiled_patch.py, which holds the collide stage's mesh_distances too). Importing
this module requires Numba.
"""

import numpy as np
from numba import njit, prange

from .compiled_options import prange_only

_TINY = 1e-12
_SKIN = 1e-4       # collision/mesh_query.SKIN
_CLEAR_GAP = _SKIN + 1e-6     # collision/mesh_query.CLEAR_GAP
_STACK = 128        # nodes pending at most: one per level of the tree plus one (depth < 100)


@njit(cache=True, fastmath=False, inline="always")
def _tri_closest(p0, p1, p2, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """Scalar mirror of mesh_query.tri_closest: (d2, q0, q1, q2, region, wa, wb, wc)."""
    ab0 = b0 - a0
    ab1 = b1 - a1
    ab2 = b2 - a2
    ac0 = c0 - a0
    ac1 = c1 - a1
    ac2 = c2 - a2
    ap0 = p0 - a0
    ap1 = p1 - a1
    ap2 = p2 - a2
    d1 = ab0 * ap0 + ab1 * ap1 + ab2 * ap2
    d2 = ac0 * ap0 + ac1 * ap1 + ac2 * ap2
    q0, q1, q2 = a0, a1, a2
    region = 1
    wa, wb, wc = 1.0, 0.0, 0.0
    if not (d1 <= 0 and d2 <= 0):
        bp0 = p0 - b0
        bp1 = p1 - b1
        bp2 = p2 - b2
        d3 = ab0 * bp0 + ab1 * bp1 + ab2 * bp2
        d4 = ac0 * bp0 + ac1 * bp1 + ac2 * bp2
        vc = d1 * d4 - d3 * d2
        cp0 = p0 - c0
        cp1 = p1 - c1
        cp2 = p2 - c2
        d5 = ab0 * cp0 + ab1 * cp1 + ab2 * cp2
        d6 = ac0 * cp0 + ac1 * cp1 + ac2 * cp2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        e43 = d4 - d3
        e56 = d5 - d6
        if d3 >= 0 and d4 <= d3:
            q0, q1, q2 = b0, b1, b2
            region = 2
            wa, wb, wc = 0.0, 1.0, 0.0
        elif vc <= 0 and d1 >= 0 and d3 <= 0:
            v = d1 / (d1 - d3)
            q0, q1, q2 = a0 + ab0 * v, a1 + ab1 * v, a2 + ab2 * v
            region = 4
            wa, wb, wc = 1.0 - v, v, 0.0
        elif d6 >= 0 and d5 <= d6:
            q0, q1, q2 = c0, c1, c2
            region = 3
            wa, wb, wc = 0.0, 0.0, 1.0
        elif vb <= 0 and d2 >= 0 and d6 <= 0:
            w = d2 / (d2 - d6)
            q0, q1, q2 = a0 + ac0 * w, a1 + ac1 * w, a2 + ac2 * w
            region = 5
            wa, wb, wc = 1.0 - w, 0.0, w
        elif va <= 0 and e43 >= 0 and e56 >= 0:
            w = e43 / (e43 + e56)
            q0, q1, q2 = b0 + (c0 - b0) * w, b1 + (c1 - b1) * w, b2 + (c2 - b2) * w
            region = 6
            wa, wb, wc = 0.0, 1.0 - w, w
        else:
            den = va + vb + vc
            if den > 0:
                inv = 1.0 / den
                v = vb * inv
                w = vc * inv
                q0 = a0 + ab0 * v + ac0 * w
                q1 = a1 + ab1 * v + ac1 * w
                q2 = a2 + ab2 * v + ac2 * w
                region = 0
                wa, wb, wc = 1.0 - v - w, v, w
    e0 = p0 - q0
    e1 = p1 - q1
    e2 = p2 - q2
    return e0 * e0 + e1 * e1 + e2 * e2, q0, q1, q2, region, wa, wb, wc


@njit(cache=True, fastmath=False, inline="always")
def _box_d2(lo, hi, i, p0, p1, p2):
    """Squared distance from p to node i's box (0 inside)."""
    d0 = max(max(lo[i, 0] - p0, p0 - hi[i, 0]), 0.0)
    d1 = max(max(lo[i, 1] - p1, p1 - hi[i, 1]), 0.0)
    d2 = max(max(lo[i, 2] - p2, p2 - hi[i, 2]), 0.0)
    return d0 * d0 + d1 * d1 + d2 * d2


@njit(cache=True, fastmath=False, inline="always")
def _into(R, t, x0, x1, x2):
    """World point x [m] in the rotation-only frame placed at (R, t)."""
    d0 = x0 - t[0]
    d1 = x1 - t[1]
    d2 = x2 - t[2]
    return (d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0], d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1],
            d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2])


@njit(cache=True, fastmath=False, inline="always")
def _to_world(R, phi, g0, g1, g2, tri, wa, wb, wc):
    """A distance's result with its gradient g turned back to world space."""
    return (phi, R[0, 0] * g0 + R[0, 1] * g1 + R[0, 2] * g2,
            R[1, 0] * g0 + R[1, 1] * g1 + R[1, 2] * g2,
            R[2, 0] * g0 + R[2, 1] * g1 + R[2, 2] * g2, tri, wa, wb, wc)


@njit(cache=True, fastmath=False, inline="always")
def mesh_closest(p0, p1, p2, k, mesh, bound2, slot):
    """The closest triangle of collider k's mesh to local point p (mirror of mesh_query.closest):
    (tri, d2, q0, q1, q2, region, wa, wb, wc); only triangles nearer than sqrt(bound2) count
    (tri = -1 when there is none). slot >= 0: the particle whose last closest triangle
    (mesh[18], the hint) is tried first, a tight first bound; the answer does not depend on it
    (the least (d2, index) is found whatever the order), so it is scratch, not state."""
    return _closest(p0, p1, p2, k, mesh[2], mesh[3], mesh[7], mesh[8], mesh[9], mesh[10],
                    mesh[12], mesh[13], mesh[18], mesh[5], bound2, slot)


@njit(cache=True, fastmath=False, inline="always")
def _missing(d2):
    """_tri_closest's tuple for no triangle yet, at squared distance d2 (a walk's bound)."""
    return d2, 0.0, 0.0, 0.0, 1, 1.0, 0.0, 0.0


@njit(cache=True, fastmath=False, inline="always")
def _tri_at(p0, p1, p2, tri, W, j):
    """_tri_closest of point p and triangle j of tri (T, 3) int64 on the vertices W (V, 3)."""
    ia = tri[j, 0]
    ib = tri[j, 1]
    ic = tri[j, 2]
    return _tri_closest(p0, p1, p2, W[ia, 0], W[ia, 1], W[ia, 2], W[ib, 0], W[ib, 1], W[ib, 2],
                        W[ic, 0], W[ic, 1], W[ic, 2])


@njit(cache=True, fastmath=False, inline="always")
def _hinted(p0, p1, p2, k, tri, W, hint, tri_start, slot):
    """(j,) + _tri_closest's of point p and particle slot's last closest triangle j on collider
    k (hint (n,) int64, tri_start (C + 1,) int64), or (-1,) + none at infinity when it has none
    there (slot -1, or its hint on another collider): where a walk starts."""
    if slot >= 0:
        j = hint[slot]
        if j >= tri_start[k] and j < tri_start[k + 1]:
            return (j,) + _tri_at(p0, p1, p2, tri, W, j)
    return (-1,) + _missing(np.inf)


@njit(cache=True, fastmath=False)
def _closest(p0, p1, p2, k, tri, W, node_start, lo, hi, right, t0, t1, hint, tri_start, bound2,
             slot):
    """mesh_closest on the arrays it reads: a call of its own, not inlined, since the BVH walk
    is large and inlining it at every SDF call site made the cold compile take 50 s longer;
    its arguments are named arrays, not the mesh tuple, so a call passes 10 arrays, not 27."""
    found = _missing(bound2)                   # _tri_closest's of triangle bt
    bt = -1
    h = _hinted(p0, p1, p2, k, tri, W, hint, tri_start, slot)
    if h[1] < found[0]:
        found, bt = h[1:], h[0]
    stack = np.empty(_STACK, np.int64)
    stack[0] = node_start[k]
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        if _box_d2(lo, hi, i, p0, p1, p2) > found[0]:
            continue
        if right[i] >= 0:
            # the nearer child on top, so it is searched first and tightens the bound
            l = i + 1
            r = right[i]
            dl = _box_d2(lo, hi, l, p0, p1, p2)
            dr = _box_d2(lo, hi, r, p0, p1, p2)
            if dl <= dr:
                stack[top] = r
                stack[top + 1] = l
            else:
                stack[top] = l
                stack[top + 1] = r
            top += 2
            continue
        for j in range(t0[i], t1[i]):
            d = _tri_at(p0, p1, p2, tri, W, j)
            if d[0] < found[0] or (d[0] == found[0] and j < bt):
                found, bt = d, j
    if slot >= 0 and bt >= 0:
        hint[slot] = bt
    return (bt,) + found


@njit(cache=True, fastmath=False, inline="always")
def mesh_far(x0, x1, x2, p0, p1, p2, i, k, offset, mesh):
    """Scalar mirror of mesh_query.mesh_far for particle i."""
    clear = mesh[20][i, mesh[21][k]]
    if not clear > offset + _CLEAR_GAP:
        return False
    X0 = mesh[22]
    d0 = x0 - X0[i, 0]
    d1 = x1 - X0[i, 1]
    d2 = x2 - X0[i, 2]
    a = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    d0 = p0 - X0[i, 0]
    d1 = p1 - X0[i, 1]
    d2 = p2 - X0[i, 2]
    b = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    rho = a if a > b else b
    return clear - rho - offset > _CLEAR_GAP


@njit(cache=True, fastmath=False, inline="always")
def mesh_sdf(q0, q1, q2, r0, r1, r2, k, mesh, slot):
    """Scalar mirror of mesh_query.mesh_sdf: (phi, g0, g1, g2, tri, wa, wb, wc); slot the
    particle (its hint, mesh_closest) or -1."""
    t, dd, c0, c1, c2, region, wa, wb, wc = mesh_closest(q0, q1, q2, k, mesh, np.inf, slot)
    return _signed(q0, q1, q2, r0, r1, r2, k, mesh, t, dd, c0, c1, c2, region, wa, wb, wc)


@njit(cache=True, fastmath=False, inline="always")
def _signed(q0, q1, q2, r0, r1, r2, k, mesh, t, dd, c0, c1, c2, region, wa, wb, wc):
    """The signed distance and direction from a closest-point result (mesh_query._signed)."""
    return _signed_on(q0, q1, q2, r0, r1, r2, mesh[2], mesh[3], mesh[4], mesh[14][k], mesh[15],
                      mesh[16], t, dd, c0, c1, c2, region, wa, wb, wc)


@njit(cache=True, fastmath=False)
def _signed_on(q0, q1, q2, r0, r1, r2, tri, W, Wb, closed, vert_normal, edge_normal, t, dd, c0,
               c1, c2, region, wa, wb, wc):
    """_signed on the arrays it reads (closed: this collider's flag), a call of its own for the
    reason _closest is one."""
    ia = tri[t, 0]
    ib = tri[t, 1]
    ic = tri[t, 2]
    if region == 0:
        ab0 = W[ib, 0] - W[ia, 0]
        ab1 = W[ib, 1] - W[ia, 1]
        ab2 = W[ib, 2] - W[ia, 2]
        ac0 = W[ic, 0] - W[ia, 0]
        ac1 = W[ic, 1] - W[ia, 1]
        ac2 = W[ic, 2] - W[ia, 2]
        N0 = ab1 * ac2 - ab2 * ac1
        N1 = ab2 * ac0 - ab0 * ac2
        N2 = ab0 * ac1 - ab1 * ac0
    elif region <= 3:
        v = tri[t, region - 1]
        N0 = vert_normal[v, 0]
        N1 = vert_normal[v, 1]
        N2 = vert_normal[v, 2]
    else:
        slot = 0 if region == 4 else (1 if region == 6 else 2)
        N0 = edge_normal[t, slot, 0]
        N1 = edge_normal[t, slot, 1]
        N2 = edge_normal[t, slot, 2]
    e0 = q0 - c0
    e1 = q1 - c1
    e2 = q2 - c2
    out = e0 * N0 + e1 * N1 + e2 * N2 >= 0
    side = True
    if not closed:
        # the side of x* (r, in the frame of the substep's start) against the same surface
        # point at the substep's start: a sheet that moves must not change it
        b0 = wa * Wb[ia, 0] + wb * Wb[ib, 0] + wc * Wb[ic, 0]
        b1 = wa * Wb[ia, 1] + wb * Wb[ib, 1] + wc * Wb[ic, 1]
        b2 = wa * Wb[ia, 2] + wb * Wb[ib, 2] + wc * Wb[ic, 2]
        side = (r0 - b0) * N0 + (r1 - b1) * N1 + (r2 - b2) * N2 >= 0
    ig = -1.0 if out != side else 1.0
    dist = np.sqrt(dd)
    if dist > _TINY:
        g0 = e0 / dist * ig
        g1 = e1 / dist * ig
        g2 = e2 / dist * ig
    else:
        sg = 1.0 if side else -1.0
        nn = np.sqrt(N0 * N0 + N1 * N1 + N2 * N2)
        if nn > _TINY:
            g0 = N0 / nn * sg
            g1 = N1 / nn * sg
            g2 = N2 / nn * sg
        else:
            g0 = 0.0 * sg
            g1 = 0.0 * sg
            g2 = 1.0 * sg
    phi = dist * ig
    if not closed:
        phi = phi - _SKIN
    return phi, g0, g1, g2, t, wa, wb, wc


@njit(cache=True, fastmath=False, inline="always")
def surface_motion(R, t, Rb, tb, j, wa, wb, wc, mesh):
    """Scalar mirror of mesh_query.surface_motion for one surface point."""
    tri = mesh[2]
    W = mesh[3]
    Wb = mesh[4]
    ia = tri[j, 0]
    ib = tri[j, 1]
    ic = tri[j, 2]
    w0 = wa * W[ia, 0] + wb * W[ib, 0] + wc * W[ic, 0]
    w1 = wa * W[ia, 1] + wb * W[ib, 1] + wc * W[ic, 1]
    w2 = wa * W[ia, 2] + wb * W[ib, 2] + wc * W[ic, 2]
    v0 = wa * Wb[ia, 0] + wb * Wb[ib, 0] + wc * Wb[ic, 0]
    v1 = wa * Wb[ia, 1] + wb * Wb[ib, 1] + wc * Wb[ic, 1]
    v2 = wa * Wb[ia, 2] + wb * Wb[ib, 2] + wc * Wb[ic, 2]
    m0 = (R[0, 0] * w0 + R[0, 1] * w1 + R[0, 2] * w2 + t[0]) \
        - (Rb[0, 0] * v0 + Rb[0, 1] * v1 + Rb[0, 2] * v2 + tb[0])
    m1 = (R[1, 0] * w0 + R[1, 1] * w1 + R[1, 2] * w2 + t[1]) \
        - (Rb[1, 0] * v0 + Rb[1, 1] * v1 + Rb[1, 2] * v2 + tb[1])
    m2 = (R[2, 0] * w0 + R[2, 1] * w1 + R[2, 2] * w2 + t[2]) \
        - (Rb[2, 0] * v0 + Rb[2, 1] * v1 + Rb[2, 2] * v2 + tb[2])
    return m0, m1, m2


@njit(cache=True, parallel=prange_only(), fastmath=False)
def place_meshes(V0, V1, vstart, ids, sc, sb, s, substeps, still, W, Wb):
    """Scalar mirror of mesh_query.place_meshes (threads split the vertices)."""
    f0 = s / substeps
    f1 = (s + 1) / substeps
    last = s == substeps - 1
    for m in range(ids.shape[0]):
        k = ids[m]
        if 0 < s and s < substeps - 1 and still[k]:
            kept = True
            for c in range(3):
                if sc[s, k, c] != sc[s - 1, k, c] or sb[s, k, c] != sb[s - 1, k, c]:
                    kept = False
            if kept:
                continue
        for i in prange(vstart[k], vstart[k + 1]):
            for c in range(3):
                if last:
                    p1 = V1[i, c]
                else:
                    p1 = V0[i, c] + (V1[i, c] - V0[i, c]) * f1
                W[i, c] = p1 * sc[s, k, c]
                Wb[i, c] = (V0[i, c] + (V1[i, c] - V0[i, c]) * f0) * sb[s, k, c]


# collision/mesh.py: fdlibm's arccos, the same operations as mesh.acos
_PIO2_HI = 1.57079632679489655800e+00
_PIO2_LO = 6.12323399573676603587e-17
_PI = 3.14159265358979311600e+00
_PS0, _PS1, _PS2 = 1.66666666666666657415e-01, -3.25565818622400915405e-01, \
    2.01212532134862925881e-01
_PS3, _PS4, _PS5 = -4.00555345006794114027e-02, 7.91534994289814532176e-04, \
    3.47933107596021167570e-05
_QS0, _QS1, _QS2, _QS3 = -2.40339491173441421878e+00, 2.02094576023350569471e+00, \
    -6.88283971605453293030e-01, 7.70381505559019352791e-02
_PAD_REL = 1e-9    # collision/mesh.PAD_REL


@njit(cache=True, fastmath=False, inline="always")
def acos(x):
    """Scalar mirror of mesh.acos (x in [-1, 1])."""
    small = abs(x) < 0.5
    if small:
        z = x * x
    elif x < 0:
        z = (1.0 + x) * 0.5
    else:
        z = (1.0 - x) * 0.5
    p = z * (_PS0 + z * (_PS1 + z * (_PS2 + z * (_PS3 + z * (_PS4 + z * _PS5)))))
    q = 1.0 + z * (_QS0 + z * (_QS1 + z * (_QS2 + z * _QS3)))
    r = p / q
    if small:
        return _PIO2_HI - (x - (_PIO2_LO - x * r))
    s = np.sqrt(z)
    if x < 0:
        return _PI - 2.0 * (s + (r * s - _PIO2_LO))
    return 2.0 * (s + r * s)


@njit(cache=True, parallel=prange_only(), fastmath=False)
def refit_meshes(V0, V1, vstart, ids, s0, s1, tri, node_start, t0, t1, right, leaf, inner,
                 inner_start, vlo, vhi, lo, hi):
    """Mirror of mesh.refit_meshes: only min, max and exact products, so threads may split
    every level (each writes its own vertices or nodes) without changing a bit."""
    for m in range(ids.shape[0]):
        k = ids[m]
        for i in prange(vstart[k], vstart[k + 1]):
            for c in range(3):
                a0 = V0[i, c] * s0[k, c]
                a1 = V0[i, c] * s1[k, c]
                b0 = V1[i, c] * s0[k, c]
                b1 = V1[i, c] * s1[k, c]
                vlo[i, c] = min(min(a0, a1), min(b0, b1))
                vhi[i, c] = max(max(a0, a1), max(b0, b1))
    for j in prange(leaf.shape[0]):
        i = leaf[j]
        for c in range(3):
            l = np.inf
            h = -np.inf
            for t in range(t0[i], t1[i]):
                l = min(l, min(min(vlo[tri[t, 0], c], vlo[tri[t, 1], c]), vlo[tri[t, 2], c]))
                h = max(h, max(max(vhi[tri[t, 0], c], vhi[tri[t, 1], c]), vhi[tri[t, 2], c]))
            lo[i, c] = l
            hi[i, c] = h
    for lv in range(inner_start.shape[0] - 1):
        for j in prange(inner_start[lv], inner_start[lv + 1]):
            i = inner[j]
            r = right[i]
            for c in range(3):
                lo[i, c] = min(lo[i + 1, c], lo[r, c])
                hi[i, c] = max(hi[i + 1, c], hi[r, c])
    for m in range(ids.shape[0]):
        k = ids[m]
        a = node_start[k]
        ext = 0.0
        for c in range(3):
            ext = max(ext, max(abs(lo[a, c]), abs(hi[a, c])))
        pad = _PAD_REL * (ext + 1.0)
        for i in prange(a, node_start[k + 1]):
            for c in range(3):
                lo[i, c] -= pad
                hi[i, c] += pad


@njit(cache=True, parallel=prange_only(), fastmath=False)
def mesh_normals(V1, vstart, ids, s1, tri, tri_edge, W1, face, angle, edge_sum, vert_normal,
                 edge_normal):
    """Mirror of mesh.mesh_normals: per triangle in parallel (its own face and angles), then
    the sums in mesh.mesh_normals' order on one thread, then per triangle slot in parallel."""
    for m in range(ids.shape[0]):
        k = ids[m]
        for i in prange(vstart[k], vstart[k + 1]):
            for c in range(3):
                W1[i, c] = V1[i, c] * s1[k, c]
    T = tri.shape[0]
    for t in prange(T):
        ia = tri[t, 0]
        ib = tri[t, 1]
        ic = tri[t, 2]
        # edge j leaves corner j: e0 = b - a, e1 = c - b, e2 = a - c
        e00 = W1[ib, 0] - W1[ia, 0]
        e01 = W1[ib, 1] - W1[ia, 1]
        e02 = W1[ib, 2] - W1[ia, 2]
        e10 = W1[ic, 0] - W1[ib, 0]
        e11 = W1[ic, 1] - W1[ib, 1]
        e12 = W1[ic, 2] - W1[ib, 2]
        e20 = W1[ia, 0] - W1[ic, 0]
        e21 = W1[ia, 1] - W1[ic, 1]
        e22 = W1[ia, 2] - W1[ic, 2]
        ln0 = np.sqrt(e00 * e00 + e01 * e01 + e02 * e02)
        ln1 = np.sqrt(e10 * e10 + e11 * e11 + e12 * e12)
        ln2 = np.sqrt(e20 * e20 + e21 * e21 + e22 * e22)
        w0 = -e20
        w1 = -e21
        w2 = -e22
        n0 = e01 * w2 - e02 * w1
        n1 = e02 * w0 - e00 * w2
        n2 = e00 * w1 - e01 * w0
        la = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if not la > 0:
            la = 1.0
        face[t, 0] = n0 / la
        face[t, 1] = n1 / la
        face[t, 2] = n2 / la
        d = e00 * e20 + e01 * e21 + e02 * e22
        angle[0, t] = acos(min(max(-d / max(ln0 * ln2, 1e-300), -1.0), 1.0))
        d = e10 * e00 + e11 * e01 + e12 * e02
        angle[1, t] = acos(min(max(-d / max(ln1 * ln0, 1e-300), -1.0), 1.0))
        d = e20 * e10 + e21 * e11 + e22 * e12
        angle[2, t] = acos(min(max(-d / max(ln2 * ln1, 1e-300), -1.0), 1.0))
    vert_normal[:] = 0.0
    for j in range(3):
        for t in range(T):
            v = tri[t, j]
            for c in range(3):
                vert_normal[v, c] += face[t, c] * angle[j, t]
    edge_sum[:] = 0.0
    for t in range(T):
        for j in range(3):
            e = tri_edge[t, j]
            for c in range(3):
                edge_sum[e, c] += face[t, c]
    for t in prange(T):
        for j in range(3):
            e = tri_edge[t, j]
            for c in range(3):
                edge_normal[t, j, c] = edge_sum[e, c]
