"""Numba-compiled kernels: the NumPy kernels' arithmetic (kernels/__init__.py's table), compiled.

Each function mirrors a NumPy kernel operation for operation (same formulas, same order, no
fastmath, no FMA contraction), so the two backends agree bit for bit. Loops marked prange run in
parallel only over items that touch disjoint particles (the members of one colour, or one
particle each), so the result does not depend on the thread count or schedule.
Importing this module requires Numba; backend.py imports it lazily.

Helpers that take arrays and run once per item (a stick, a cluster) are inlined
(inline="always") into the parallel loop, or written out in it: called as a function, Numba counts
references on each of its array arguments at every call (atomic operations), and its pruning
pass does not always remove them (the joint kernel's _turn and _limit stay calls: inlined, they
measured the same). Measured 2026-11-26: the shape solve of 100 ragdolls (1,200
clusters) 347 us a pass with the polar decomposition's helpers called, 221 us inlined; a serial
loop is worse (a stick sweep calling its helper from a plain loop 8.7 ms, written out 0.57 ms;
inlined into a parallel loop it is free). The same bits either way.
"""

import numpy as np
from numba import njit, prange

# the contact kernels and the loop live in their own modules; the kernel table reaches every
# compiled kernel through this one
from .compiled_candidates import primitive_candidates  # noqa: F401
from .compiled_options import prange_only
from .compiled_sticks import solve_sticks  # noqa: F401
from .compiled_edges import edge_spheres, project_edges  # noqa: F401
from .compiled_contact import (  # noqa: F401
    project_collider, project_points, release_overlap)
from .compiled_forces import (  # noqa: F401
    apply_drag, predict, restitution, squared_motion, surface_normals)
from .compiled_bodies import solve_bodies  # noqa: F401
from .compiled_broad import active_items, edge_sag, find_body_contacts, sweep_pairs  # noqa: F401
from .compiled_boxes import step_boxes, strays  # noqa: F401
from .compiled_pairs import filter_pairs, store_pairs  # noqa: F401
from .compiled_order import gather_slots, merge_round, order_rigid, sort_pairs  # noqa: F401
from .build import islands  # noqa: F401
from .compiled_mesh import mesh_normals, place_meshes, refit_meshes  # noqa: F401
from .compiled_patch import mesh_distances  # noqa: F401

# a colour of fewer clusters than this is fitted on the calling thread (solve_shapes)
SERIAL_CLUSTERS = 48


@njit(cache=True, fastmath=False)
def solve_soft_pins(X, ids, anchor, target, frac, inv_mass, alpha, lam, read_lam):
    """Scalar mirror of constraints/pins.solve_soft_pins; ids unique, so each iteration touches
    its own particle."""
    for q in range(ids.shape[0]):
        al = alpha[q]
        if not al < np.inf:
            continue
        i = ids[q]
        w = inv_mass[i]
        for c in range(3):
            goal = anchor[q, c] + (target[q, c] - anchor[q, c]) * frac
            lam_c = lam[q, c] if read_lam else 0.0
            dl = (goal - X[c, i] - al * lam_c) / (w + al)
            lam[q, c] = lam_c + dl
            X[c, i] = X[c, i] + w * dl


# ---------------------------------------------------------------------------- shape matching
_JACOBI_EPS = 1e-15
_JACOBI_TINY = 1e-30
_JACOBI_SWEEPS = 12
_RANK_TOL = 1e-12
_PINV_RCOND = 1e-15


@njit(cache=True, fastmath=False)
def _jacobi3(b, v):
    """Scalar mirror of shapes.jacobi_columns on one 3x3 matrix b: in place, b becomes
    (A / m) V and v becomes V; returns m."""
    m = _jacobi_scale(b)
    for i in range(3):
        for j in range(3):
            v[i, j] = 1.0 if i == j else 0.0
    _jacobi_sweeps(b, v)
    return m


@njit(cache=True, fastmath=False, inline="always")
def _jacobi3_from(b, v, basis):
    """_jacobi3 with V starting at basis (3, 3) (shapes.jacobi_columns' basis)."""
    m = _jacobi_scale(b)
    for i in range(3):
        r0 = b[i, 0]
        r1 = b[i, 1]
        r2 = b[i, 2]
        for j in range(3):
            b[i, j] = r0 * basis[0, j] + r1 * basis[1, j] + r2 * basis[2, j]
            v[i, j] = basis[i, j]
    _jacobi_sweeps(b, v)
    return m


@njit(cache=True, fastmath=False, inline="always")
def _jacobi_scale(b):
    """b divided in place by its largest absolute entry m (1 for b = 0); returns m."""
    m = 0.0
    for i in range(3):
        for j in range(3):
            e = abs(b[i, j])
            if e > m:
                m = e
    if not m > 0:
        m = 1.0
    for i in range(3):
        for j in range(3):
            b[i, j] = b[i, j] / m
    return m


@njit(cache=True, fastmath=False, inline="always")
def _jacobi_sweeps(b, v):
    """The Jacobi sweeps of shapes.jacobi_columns on b and v in place."""
    for _ in range(_JACOBI_SWEEPS):
        turned = False
        for pair in range(3):
            p = 0 if pair < 2 else 1
            q = 1 if pair == 0 else 2
            alpha = b[0, p] * b[0, p] + b[1, p] * b[1, p] + b[2, p] * b[2, p]
            beta = b[0, q] * b[0, q] + b[1, q] * b[1, q] + b[2, q] * b[2, q]
            gamma = b[0, p] * b[0, q] + b[1, p] * b[1, q] + b[2, p] * b[2, q]
            size = abs(gamma)
            if not (size > _JACOBI_EPS * np.sqrt(alpha * beta) and size > _JACOBI_TINY):
                continue
            zeta = (beta - alpha) / (2.0 * gamma)
            sg = 1.0 if zeta >= 0 else -1.0
            t = sg / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
            if not t != 0.0:
                continue
            turned = True
            c = 1.0 / np.sqrt(1.0 + t * t)
            s = c * t
            for i in range(3):
                mp = b[i, p]
                mq = b[i, q]
                b[i, p] = c * mp - s * mq
                b[i, q] = s * mp + c * mq
            for i in range(3):
                mp = v[i, p]
                mq = v[i, q]
                v[i, p] = c * mp - s * mq
                v[i, q] = s * mp + c * mq
        if not turned:
            break


@njit(cache=True, fastmath=False, inline="always")
def _column_norm(b, j):
    """|column j| of a 3x3 matrix, summed in row order (shapes._column_norms)."""
    return np.sqrt(b[0, j] * b[0, j] + b[1, j] * b[1, j] + b[2, j] * b[2, j])


@njit(cache=True, fastmath=False, inline="always")
def _normal_part(u0, u1, u2, y0, y1, y2):
    """Scalar mirror of shapes._normal_part: y minus its component along unit u, and its norm."""
    d = u0 * y0 + u1 * y1 + u2 * y2
    e0 = y0 - d * u0
    e1 = y1 - d * u1
    e2 = y2 - d * u2
    return e0, e1, e2, np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)


@njit(cache=True, fastmath=False)
def _polar3(a, rot):
    """Scalar mirror of shapes.polar_rotation: rot = the rotation of A = R S (a is destroyed)."""
    _polar3_into(a, rot, np.empty((3, 3)))


@njit(cache=True, fastmath=False)
def _polar3_into(a, rot, v):
    """_polar3 with v (3, 3) scratch from the caller: an allocation per cluster and substep
    cost as much as the rest of a small cluster's solve."""
    _jacobi3(a, v)
    _rotation_of(a, v, rot)


@njit(cache=True, fastmath=False, inline="always")
def _polar3_from(a, rot, v, basis):
    """_polar3_into with Jacobi starting at basis (3, 3) (shapes.polar_rotation's basis)."""
    _jacobi3_from(a, v, basis)
    _rotation_of(a, v, rot)


@njit(cache=True, fastmath=False, inline="always")
def _rotation_of(a, v, rot):
    """rot from Jacobi's columns a = (A / m) V and v = V (shapes.polar_rotation after
    jacobi_columns)."""
    n0 = _column_norm(a, 0)
    n1 = _column_norm(a, 1)
    n2 = _column_norm(a, 2)
    if n0 >= n1 and n0 >= n2:
        o1 = 0
    elif n1 >= n2:
        o1 = 1
    else:
        o1 = 2
    lo = 1 if o1 == 0 else 0
    hi = 1 if o1 == 2 else 2
    n_lo = n0 if lo == 0 else n1
    n_hi = n2 if hi == 2 else n1
    o2 = lo if n_lo >= n_hi else hi
    o3 = 3 - o1 - o2
    big = n0 if o1 == 0 else (n1 if o1 == 1 else n2)
    if not big > 1e-300:
        for i in range(3):
            for j in range(3):
                rot[i, j] = 1.0 if i == j else 0.0
        return
    u10 = a[0, o1] / big
    u11 = a[1, o1] / big
    u12 = a[2, o1] / big
    r0, r1, r2, rn = _normal_part(u10, u11, u12, a[0, o2], a[1, o2], a[2, o2])
    if rn > _RANK_TOL * big:
        u20 = r0 / rn
        u21 = r1 / rn
        u22 = r2 / rn
    else:
        e0, e1, e2, en = _normal_part(u10, u11, u12, v[0, o2], v[1, o2], v[2, o2])
        if not en >= 0.5:
            e0, e1, e2, en = _normal_part(u10, u11, u12, v[0, o3], v[1, o3], v[2, o3])
        u20 = e0 / en
        u21 = e1 / en
        u22 = e2 / en
    u30 = u11 * u22 - u12 * u21
    u31 = u12 * u20 - u10 * u22
    u32 = u10 * u21 - u11 * u20
    v10 = v[0, o1]
    v11 = v[1, o1]
    v12 = v[2, o1]
    v20 = v[0, o2]
    v21 = v[1, o2]
    v22 = v[2, o2]
    w0 = v11 * v22 - v12 * v21
    w1 = v12 * v20 - v10 * v22
    w2 = v10 * v21 - v11 * v20
    rot[0, 0] = u10 * v10 + u20 * v20 + u30 * w0
    rot[0, 1] = u10 * v11 + u20 * v21 + u30 * w1
    rot[0, 2] = u10 * v12 + u20 * v22 + u30 * w2
    rot[1, 0] = u11 * v10 + u21 * v20 + u31 * w0
    rot[1, 1] = u11 * v11 + u21 * v21 + u31 * w1
    rot[1, 2] = u11 * v12 + u21 * v22 + u31 * w2
    rot[2, 0] = u12 * v10 + u22 * v20 + u32 * w0
    rot[2, 1] = u12 * v11 + u22 * v21 + u32 * w1
    rot[2, 2] = u12 * v12 + u22 * v22 + u32 * w2


@njit(cache=True, parallel=prange_only(), fastmath=False)
def solve_shapes(X, particles, rest_offset, start, color_offsets, mass, collider_boost, w, alpha,
                 lam, touching, body_touch, body_boost, origin, rot, basis, skip):
    """Scalar mirror of constraints/shapes.solve_shapes: colour after colour, the clusters of a
    colour in parallel (they share no particle, so the thread count changes no bit), each
    cluster's sums in member order. Parallel since 100 ragdolls (1,200 rigid bones, nearly all
    in one colour) spent 12 ms a frame here on one thread; a colour of fewer than
    SERIAL_CLUSTERS clusters runs on the calling thread (a twelve-bone ragdoll's colour is
    less work than a parallel region costs)."""
    scratch = np.empty((rot.shape[0], 2, 3, 3))      # (K, 2, 3, 3) each cluster's A and V
    for col in range(color_offsets.shape[0] - 1):
        if color_offsets[col + 1] - color_offsets[col] < SERIAL_CLUSTERS:
            for k in range(color_offsets[col], color_offsets[col + 1]):
                if not skip[k]:
                    _shape_one(k, X, particles, rest_offset, start, mass, collider_boost, w,
                               alpha, lam, touching, body_touch, body_boost, origin, rot, basis,
                               scratch)
        else:
            for k in prange(color_offsets[col], color_offsets[col + 1]):
                if not skip[k]:
                    _shape_one(k, X, particles, rest_offset, start, mass, collider_boost, w,
                               alpha, lam, touching, body_touch, body_boost, origin, rot, basis,
                               scratch)


@njit(cache=True, fastmath=False, inline="always")
def _shape_one(k, X, particles, rest_offset, start, mass, collider_boost, w, alpha, lam,
               touching, body_touch, body_boost, origin, rot, basis, scratch):
    """solve_shapes for cluster k: its weighted centre and covariance, the polar rotation
    (warm-started at basis[k]), its pose (origin, rot) and the XPBD move of its particles."""
    s0 = start[k]
    s1 = start[k + 1]
    wsum = 0.0
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    qb0 = 0.0
    qb1 = 0.0
    qb2 = 0.0
    for e in range(s0, s1):
        p = particles[e]
        wg = mass[e] * (body_boost[e] if body_touch[p] else
                         (collider_boost[e] if touching[p] else 1.0))
        wsum += wg
        c0 += X[0, p] * wg
        c1 += X[1, p] * wg
        c2 += X[2, p] * wg
        qb0 += rest_offset[e, 0] * wg
        qb1 += rest_offset[e, 1] * wg
        qb2 += rest_offset[e, 2] * wg
    c0 /= wsum
    c1 /= wsum
    c2 /= wsum
    qb0 /= wsum
    qb1 /= wsum
    qb2 /= wsum
    a = scratch[k, 0]
    for i in range(3):
        for j in range(3):
            a[i, j] = 0.0
    for e in range(s0, s1):
        p = particles[e]
        wg = mass[e] * (body_boost[e] if body_touch[p] else
                         (collider_boost[e] if touching[p] else 1.0))
        dx0 = X[0, p] - c0
        dx1 = X[1, p] - c1
        dx2 = X[2, p] - c2
        wq0 = wg * (rest_offset[e, 0] - qb0)
        wq1 = wg * (rest_offset[e, 1] - qb1)
        wq2 = wg * (rest_offset[e, 2] - qb2)
        a[0, 0] += dx0 * wq0
        a[0, 1] += dx0 * wq1
        a[0, 2] += dx0 * wq2
        a[1, 0] += dx1 * wq0
        a[1, 1] += dx1 * wq1
        a[1, 2] += dx1 * wq2
        a[2, 0] += dx2 * wq0
        a[2, 1] += dx2 * wq1
        a[2, 2] += dx2 * wq2
    r = rot[k]
    _polar3_from(a, r, scratch[k, 1], basis[k])
    for i in range(3):
        origin[k, i] = (c0 if i == 0 else (c1 if i == 1 else c2)) \
            - (r[i, 0] * qb0 + r[i, 1] * qb1 + r[i, 2] * qb2)
    for e in range(s0, s1):
        p = particles[e]
        q0 = rest_offset[e, 0] - qb0
        q1 = rest_offset[e, 1] - qb1
        q2 = rest_offset[e, 2] - qb2
        we = w[e]
        al = alpha[e]
        inv_denom = 1.0 / (we + al + 1e-300)
        g0 = r[0, 0] * q0 + r[0, 1] * q1 + r[0, 2] * q2 + c0
        g1 = r[1, 0] * q0 + r[1, 1] * q1 + r[1, 2] * q2 + c1
        g2 = r[2, 0] * q0 + r[2, 1] * q1 + r[2, 2] * q2 + c2
        d0 = (g0 - X[0, p] - al * lam[e, 0]) * inv_denom
        d1 = (g1 - X[1, p] - al * lam[e, 1]) * inv_denom
        d2 = (g2 - X[2, p] - al * lam[e, 2]) * inv_denom
        lam[e, 0] = lam[e, 0] + d0
        lam[e, 1] = lam[e, 1] + d1
        lam[e, 2] = lam[e, 2] + d2
        X[0, p] = X[0, p] + we * d0
        X[1, p] = X[1, p] + we * d1
        X[2, p] = X[2, p] + we * d2


@njit(cache=True, fastmath=False)
def _offset_and_motion(X, Xp, p, c):
    """Particle p's offset r = x - c from its cluster's centre c and its substep displacement
    u = x - x* [m] (constraints/shapes.damp_shapes' r and u)."""
    return (X[0, p] - c[0], X[1, p] - c[1], X[2, p] - c[2],
            X[0, p] - Xp[0, p], X[1, p] - Xp[1, p], X[2, p] - Xp[2, p])


@njit(cache=True, fastmath=False)
def damp_shapes(X, Xp, particles, start, color_offsets, mass, damping, keep):
    """Scalar mirror of constraints/shapes.damp_shapes (damped clusters only, colour after colour).
    Serial: damped clusters are few, and a parallel kernel costs a second more to compile."""
    for col in range(color_offsets.shape[0] - 1):
        for k in range(color_offsets[col], color_offsets[col + 1]):
            if not damping[k] > 0:
                continue
            s0 = start[k]
            s1 = start[k + 1]
            kp = keep[k]
            msum = 0.0
            c = np.zeros(3)
            ucm = np.zeros(3)
            for e in range(s0, s1):
                p = particles[e]
                m = mass[e]
                msum += m
                for i in range(3):
                    c[i] += X[i, p] * m
                for i in range(3):
                    ucm[i] += (X[i, p] - Xp[i, p]) * m
            for i in range(3):
                c[i] = c[i] / msum
                ucm[i] = ucm[i] / msum
            ang = np.zeros(3)
            inertia = np.zeros((3, 3))
            for e in range(s0, s1):
                p = particles[e]
                m = mass[e]
                r0, r1, r2, u0, u1, u2 = _offset_and_motion(X, Xp, p, c)
                ang[0] += (r1 * u2 - r2 * u1) * m
                ang[1] += (r2 * u0 - r0 * u2) * m
                ang[2] += (r0 * u1 - r1 * u0) * m
                rr = r0 * r0 + r1 * r1 + r2 * r2
                inertia[0, 0] += (rr - r0 * r0) * m
                inertia[0, 1] += (-(r0 * r1)) * m
                inertia[0, 2] += (-(r0 * r2)) * m
                inertia[1, 0] += (-(r1 * r0)) * m
                inertia[1, 1] += (rr - r1 * r1) * m
                inertia[1, 2] += (-(r1 * r2)) * m
                inertia[2, 0] += (-(r2 * r0)) * m
                inertia[2, 1] += (-(r2 * r1)) * m
                inertia[2, 2] += (rr - r2 * r2) * m
            v = np.empty((3, 3))
            scale = _jacobi3(inertia, v)
            nb0 = _column_norm(inertia, 0)
            nb1 = _column_norm(inertia, 1)
            nb2 = _column_norm(inertia, 2)
            big = max(max(nb0, nb1), nb2)
            om0 = 0.0
            om1 = 0.0
            om2 = 0.0
            for j in range(3):
                nj = nb0 if j == 0 else (nb1 if j == 1 else nb2)
                coef = 0.0
                if nj > _PINV_RCOND * big:
                    coef = (inertia[0, j] * ang[0] + inertia[1, j] * ang[1]
                            + inertia[2, j] * ang[2]) / (nj * nj) / scale
                om0 = om0 + v[0, j] * coef
                om1 = om1 + v[1, j] * coef
                om2 = om2 + v[2, j] * coef
            for e in range(s0, s1):
                p = particles[e]
                r0, r1, r2, u0, u1, u2 = _offset_and_motion(X, Xp, p, c)
                g0 = ucm[0] + (om1 * r2 - om2 * r1)
                g1 = ucm[1] + (om2 * r0 - om0 * r2)
                g2 = ucm[2] + (om0 * r1 - om1 * r0)
                Xp[0, p] = X[0, p] - (g0 + (u0 - g0) * kp)
                Xp[1, p] = X[1, p] - (g1 + (u1 - g1) * kp)
                Xp[2, p] = X[2, p] - (g2 + (u2 - g2) * kp)


# ---------------------------------------------------------------------------- volume
@njit(cache=True, fastmath=False)
def solve_volumes(X, particles, particle_start, tris, tri_start, w, rest, alpha, lam):
    """Scalar mirror of constraints/volume.solve_volumes: volumes one after another (one constraint
    each, so nothing to run in parallel within it), every sum in the same order."""
    most = 0
    for k in range(rest.shape[0]):
        most = max(most, particle_start[k + 1] - particle_start[k])
    grad = np.empty((most, 3))
    for k in range(rest.shape[0]):
        p0 = particle_start[k]
        np_k = particle_start[k + 1] - p0
        t0 = tri_start[k]
        t1 = tri_start[k + 1]
        grad[:np_k, :] = 0.0
        vol = 0.0
        for corner in range(3):
            for t in range(t0, t1):
                ia = particles[p0 + tris[t, 0]]
                ib = particles[p0 + tris[t, 1]]
                ic = particles[p0 + tris[t, 2]]
                a0, a1, a2 = X[0, ia], X[1, ia], X[2, ia]
                b0, b1, b2 = X[0, ib], X[1, ib], X[2, ib]
                c0, c1, c2 = X[0, ic], X[1, ic], X[2, ic]
                if corner == 0:                     # b x c at a
                    g0 = b1 * c2 - b2 * c1
                    g1 = b2 * c0 - b0 * c2
                    g2 = b0 * c1 - b1 * c0
                elif corner == 1:                   # c x a at b
                    g0 = c1 * a2 - c2 * a1
                    g1 = c2 * a0 - c0 * a2
                    g2 = c0 * a1 - c1 * a0
                else:                               # a x b at c, and the volume
                    g0 = a1 * b2 - a2 * b1
                    g1 = a2 * b0 - a0 * b2
                    g2 = a0 * b1 - a1 * b0
                    vol += g0 * c0 + g1 * c1 + g2 * c2
                j = tris[t, corner]
                grad[j, 0] += g0
                grad[j, 1] += g1
                grad[j, 2] += g2
        vol = vol / 6.0
        denom = 0.0
        for j in range(np_k):
            grad[j, 0] = grad[j, 0] / 6.0
            grad[j, 1] = grad[j, 1] / 6.0
            grad[j, 2] = grad[j, 2] / 6.0
            denom += w[p0 + j] * (grad[j, 0] * grad[j, 0] + grad[j, 1] * grad[j, 1]
                                  + grad[j, 2] * grad[j, 2])
        al = alpha[k]
        denom = denom + al
        if not denom > 1e-300:
            continue
        dlam = (rest[k] - vol - al * lam[k]) / denom
        lam[k] = lam[k] + dlam
        for j in range(np_k):
            i = particles[p0 + j]
            wd = w[p0 + j] * dlam
            X[0, i] = X[0, i] + wd * grad[j, 0]
            X[1, i] = X[1, i] + wd * grad[j, 1]
            X[2, i] = X[2, i] + wd * grad[j, 2]


from .compiled_loop import run_substeps  # noqa: E402,F401  (it imports the kernels above)


# the joint kernel lives in its own module (it uses _polar3 above); the table reaches it here
from .compiled_joints import body_frames, solve_joints  # noqa: E402,F401
from .compiled_impacts import rigid_pair_velocities, rigid_velocities  # noqa: E402,F401
from .compiled_rigid import solve_rigid  # noqa: E402,F401
