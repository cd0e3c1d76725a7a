"""The compiled joint kernel: the scalar mirror of constraints/joints.solve_joints (its docstring
gives the constraints and the method). The NumPy kernel batches a colour; this one runs the
joints of a colour one after another, which is the same, since no two of them share a body
that moves. Every expression is the NumPy kernel's, in its order, so the backends agree bit for bit.
"""

import numpy as np
from numba import njit, prange

from .compiled import _polar3
from .compiled_options import prange_only

_TINY = 1e-12
_HALF_TURN = 1e-12
_HINGE = 1
# below this many bodies the joint solve finds their frames and moves their particles on the
# calling thread (the islands still run in parallel)
SERIAL_BODIES = 64


@njit(cache=True, fastmath=False, inline="always")
def _iw(R, I, b, v0, v1, v2):
    """R_b (I0_b^-1 (R_b^T v)) (joints._iw)."""
    u0 = R[b, 0, 0] * v0 + R[b, 1, 0] * v1 + R[b, 2, 0] * v2
    u1 = R[b, 0, 1] * v0 + R[b, 1, 1] * v1 + R[b, 2, 1] * v2
    u2 = R[b, 0, 2] * v0 + R[b, 1, 2] * v1 + R[b, 2, 2] * v2
    t0 = I[b, 0, 0] * u0 + I[b, 0, 1] * u1 + I[b, 0, 2] * u2
    t1 = I[b, 1, 0] * u0 + I[b, 1, 1] * u1 + I[b, 1, 2] * u2
    t2 = I[b, 2, 0] * u0 + I[b, 2, 1] * u1 + I[b, 2, 2] * u2
    return (R[b, 0, 0] * t0 + R[b, 0, 1] * t1 + R[b, 0, 2] * t2,
            R[b, 1, 0] * t0 + R[b, 1, 1] * t1 + R[b, 1, 2] * t2,
            R[b, 2, 0] * t0 + R[b, 2, 1] * t1 + R[b, 2, 2] * t2)


@njit(cache=True, fastmath=False, inline="always")
def _mul(R, b, v0, v1, v2):
    return (R[b, 0, 0] * v0 + R[b, 0, 1] * v1 + R[b, 0, 2] * v2,
            R[b, 1, 0] * v0 + R[b, 1, 1] * v1 + R[b, 1, 2] * v2,
            R[b, 2, 0] * v0 + R[b, 2, 1] * v1 + R[b, 2, 2] * v2)


@njit(cache=True, fastmath=False, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, fastmath=False, inline="always")
def _rotate(R, b, t0, t1, t2):
    """R_b turned by the unit quaternion (1, t / 2) / |.| (joints._rotate)."""
    hx = t0 * 0.5
    hy = t1 * 0.5
    hz = t2 * 0.5
    s = 1.0 / (1.0 + (hx * hx + hy * hy + hz * hz))
    d00 = 1.0 - 2.0 * s * (hy * hy + hz * hz)
    d01 = 2.0 * s * (hx * hy - hz)
    d02 = 2.0 * s * (hx * hz + hy)
    d10 = 2.0 * s * (hx * hy + hz)
    d11 = 1.0 - 2.0 * s * (hx * hx + hz * hz)
    d12 = 2.0 * s * (hy * hz - hx)
    d20 = 2.0 * s * (hx * hz - hy)
    d21 = 2.0 * s * (hy * hz + hx)
    d22 = 1.0 - 2.0 * s * (hx * hx + hy * hy)
    for j in range(3):
        r0 = R[b, 0, j]
        r1 = R[b, 1, j]
        r2 = R[b, 2, j]
        R[b, 0, j] = d00 * r0 + d01 * r1 + d02 * r2
        R[b, 1, j] = d10 * r0 + d11 * r1 + d12 * r2
        R[b, 2, j] = d20 * r0 + d21 * r1 + d22 * r2


@njit(cache=True, fastmath=False)
def _turn(R, I, free, ba, bb, d0, d1, d2, alpha, lam):
    """joints._Batch.turn for one joint: returns the updated multiplier and the angle removed
    (0 when nothing was)."""
    nrm = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if not nrm > _TINY:
        return lam, 0.0
    inv = 1.0 / nrm
    n0 = d0 * inv
    n1 = d1 * inv
    n2 = d2 * inv
    th = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    a0, a1, a2 = _iw(R, I, ba, n0, n1, n2)
    b0, b1, b2 = _iw(R, I, bb, n0, n1, n2)
    wa = n0 * a0 + n1 * a1 + n2 * a2
    wb = n0 * b0 + n1 * b1 + n2 * b2
    den = wa + wb + alpha
    if not den > 0:
        return lam, 0.0
    dl = (th - alpha * lam) / den
    if free[ba]:
        _rotate(R, ba, dl * a0, dl * a1, dl * a2)
    if free[bb]:
        _rotate(R, bb, -(dl * b0), -(dl * b1), -(dl * b2))
    return lam + dl, th


@njit(cache=True, fastmath=False, inline="always")
def _half_scaled(u0, u1, u2, v0, v1, v2):
    d0, d1, d2 = _cross(u0, u1, u2, v0, v1, v2)
    inv = 1.0 / np.sqrt(max((1.0 + (u0 * v0 + u1 * v1 + u2 * v2)) * 0.5, _HALF_TURN))
    return d0 * inv, d1 * inv, d2 * inv


@njit(cache=True, fastmath=False, inline="always")
def _plane_unit(v0, v1, v2, n0, n1, n2):
    """v on the plane normal to n, normalised, and whether it had a length."""
    d = v0 * n0 + v1 * n1 + v2 * n2
    w0 = v0 - d * n0
    w1 = v1 - d * n1
    w2 = v2 - d * n2
    nrm = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if not nrm > _TINY:
        return 0.0, 0.0, 0.0, False
    inv = 1.0 / nrm
    return w0 * inv, w1 * inv, w2 * inv, True


@njit(cache=True, fastmath=False)
def _limit(R, I, free, ba, bb, n0, n1, n2, va0, va1, va2, vb0, vb1, vb2, rng, j):
    """joints._limit for one joint; returns the angle removed."""
    cphi = va0 * vb0 + va1 * vb1 + va2 * vb2
    x0, x1, x2 = _cross(va0, va1, va2, vb0, vb1, vb2)
    sphi = x0 * n0 + x1 * n1 + x2 * n2
    if cphi * rng[j, 1] + sphi * rng[j, 2] >= rng[j, 3]:
        return 0.0
    if sphi * rng[j, 1] - cphi * rng[j, 2] > 0:
        cb = rng[j, 6]
        sb = rng[j, 7]
    else:
        cb = rng[j, 4]
        sb = rng[j, 5]
    w0, w1, w2 = _cross(n0, n1, n2, va0, va1, va2)
    d0, d1, d2 = _half_scaled(cb * va0 + sb * w0, cb * va1 + sb * w1, cb * va2 + sb * w2,
                              vb0, vb1, vb2)
    return _turn(R, I, free, ba, bb, d0, d1, d2, 0.0, 0.0)[1]


@njit(cache=True, fastmath=False, inline="always")
def _solve_one(j, body, anchor, axis, perp, kind, swing, rng, alpha, drive_on, drive_alpha,
               target, lam, c, R, inv_mass, inv_inertia, moved, free, tol):
    """joints._solve_batch for joint j; returns its largest rigid violation over tolerance."""
    err = 0.0
    ba = body[j, 0]
    bb = body[j, 1]
    I = inv_inertia
    if drive_on[j]:
        T = np.empty((3, 3))
        E = np.empty((3, 3))
        for i in range(3):
            for k in range(3):
                T[i, k] = R[ba, i, 0] * target[j, 0, k] + R[ba, i, 1] * target[j, 1, k] \
                    + R[ba, i, 2] * target[j, 2, k]
        for i in range(3):
            for k in range(3):
                E[i, k] = R[bb, i, 0] * T[k, 0] + R[bb, i, 1] * T[k, 1] + R[bb, i, 2] * T[k, 2]
        s = np.sqrt(max((1.0 + (E[0, 0] + E[1, 1] + E[2, 2])) * 0.25, _HALF_TURN))
        lam[j, 1] = _turn(R, I, free, ba, bb, (E[2, 1] - E[1, 2]) * 0.5 / s,
                          (E[0, 2] - E[2, 0]) * 0.5 / s, (E[1, 0] - E[0, 1]) * 0.5 / s,
                          drive_alpha[j], lam[j, 1])[0]
    u0 = axis[j, 0]
    u1 = axis[j, 1]
    u2 = axis[j, 2]
    v0 = perp[j, 0]
    v1 = perp[j, 1]
    v2 = perp[j, 2]
    if kind[j] == _HINGE:
        a0, a1, a2 = _mul(R, ba, u0, u1, u2)
        b0, b1, b2 = _mul(R, bb, u0, u1, u2)
        d0, d1, d2 = _half_scaled(a0, a1, a2, b0, b1, b2)
        err = max(err, _turn(R, I, free, ba, bb, d0, d1, d2, 0.0, 0.0)[1] / tol[1])
        if rng[j, 0] > 0:
            n0, n1, n2 = _mul(R, ba, u0, u1, u2)
            x0, x1, x2 = _mul(R, ba, v0, v1, v2)
            va0, va1, va2, ok = _plane_unit(x0, x1, x2, n0, n1, n2)
            if ok:
                x0, x1, x2 = _mul(R, bb, v0, v1, v2)
                vb0, vb1, vb2, ok = _plane_unit(x0, x1, x2, n0, n1, n2)
                if ok:
                    err = max(err, _limit(R, I, free, ba, bb, n0, n1, n2, va0, va1, va2, vb0,
                                          vb1, vb2, rng, j) / tol[1])
    else:
        if swing[j, 0] > 0:
            a0, a1, a2 = _mul(R, ba, u0, u1, u2)
            b0, b1, b2 = _mul(R, bb, u0, u1, u2)
            if a0 * b0 + a1 * b1 + a2 * b2 < swing[j, 1]:
                x0, x1, x2 = _cross(a0, a1, a2, b0, b1, b2)
                nrm = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
                if nrm > _TINY:
                    inv = 1.0 / nrm
                    n0 = x0 * inv
                    n1 = x1 * inv
                    n2 = x2 * inv
                    w0, w1, w2 = _cross(n0, n1, n2, a0, a1, a2)
                    cs = swing[j, 1]
                    sn = swing[j, 2]
                    d0, d1, d2 = _half_scaled(cs * a0 + sn * w0, cs * a1 + sn * w1,
                                              cs * a2 + sn * w2, b0, b1, b2)
                    err = max(err, _turn(R, I, free, ba, bb, d0, d1, d2, 0.0, 0.0)[1] / tol[1])
        if rng[j, 0] > 0:
            a0, a1, a2 = _mul(R, ba, u0, u1, u2)
            b0, b1, b2 = _mul(R, bb, u0, u1, u2)
            x0 = a0 + b0
            x1 = a1 + b1
            x2 = a2 + b2
            nrm = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            if nrm > _TINY:
                inv = 1.0 / nrm
                n0 = x0 * inv
                n1 = x1 * inv
                n2 = x2 * inv
                x0, x1, x2 = _mul(R, ba, v0, v1, v2)
                va0, va1, va2, ok = _plane_unit(x0, x1, x2, n0, n1, n2)
                if ok:
                    x0, x1, x2 = _mul(R, bb, v0, v1, v2)
                    vb0, vb1, vb2, ok = _plane_unit(x0, x1, x2, n0, n1, n2)
                    if ok:
                        err = max(err, _limit(R, I, free, ba, bb, n0, n1, n2, va0, va1, va2,
                                              vb0, vb1, vb2, rng, j) / tol[1])
    # the positional joint
    ra0, ra1, ra2 = _mul(R, ba, anchor[j, 0, 0], anchor[j, 0, 1], anchor[j, 0, 2])
    rb0, rb1, rb2 = _mul(R, bb, anchor[j, 1, 0], anchor[j, 1, 1], anchor[j, 1, 2])
    d0 = (c[bb, 0] + rb0) - (c[ba, 0] + ra0)
    d1 = (c[bb, 1] + rb1) - (c[ba, 1] + ra1)
    d2 = (c[bb, 2] + rb2) - (c[ba, 2] + ra2)
    nrm = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if nrm > _TINY:
        inv = 1.0 / nrm
        n0 = d0 * inv
        n1 = d1 * inv
        n2 = d2 * inv
        cval = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        x0, x1, x2 = _cross(ra0, ra1, ra2, n0, n1, n2)
        a0, a1, a2 = _iw(R, I, ba, x0, x1, x2)
        wa = inv_mass[ba] + (x0 * a0 + x1 * a1 + x2 * a2)
        x0, x1, x2 = _cross(rb0, rb1, rb2, n0, n1, n2)
        b0, b1, b2 = _iw(R, I, bb, x0, x1, x2)
        wb = inv_mass[bb] + (x0 * b0 + x1 * b1 + x2 * b2)
        al = alpha[j]
        den = wa + wb + al
        if den > 0:
            lp = lam[j, 0]
            dl = (cval - al * lp) / den
            lam[j, 0] = lp + dl
            if free[ba]:
                c[ba, 0] = c[ba, 0] + inv_mass[ba] * (dl * n0)
                c[ba, 1] = c[ba, 1] + inv_mass[ba] * (dl * n1)
                c[ba, 2] = c[ba, 2] + inv_mass[ba] * (dl * n2)
            if free[bb]:
                c[bb, 0] = c[bb, 0] - inv_mass[bb] * (dl * n0)
                c[bb, 1] = c[bb, 1] - inv_mass[bb] * (dl * n1)
                c[bb, 2] = c[bb, 2] - inv_mass[bb] * (dl * n2)
            if free[ba]:
                _rotate(R, ba, dl * a0, dl * a1, dl * a2)
            if free[bb]:
                _rotate(R, bb, -(dl * b0), -(dl * b1), -(dl * b2))
            if al == 0:
                err = max(err, cval / tol[0])
    if free[ba]:
        moved[ba] = True
    if free[bb]:
        moved[bb] = True
    return err


@njit(cache=True, fastmath=False)
def _frame(X, particles, rest_offset, mass, entries, entry_start, q, b, c0, R0, c, R):
    """Body b's centre and polar rotation from its entries (joints.body_frames_of)."""
    a = np.zeros((3, 3))
    rot = np.empty((3, 3))
    msum = 0.0
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for e in range(entry_start[q], entry_start[q + 1]):
        ent = entries[e]
        p = particles[ent]
        m = mass[ent]
        msum += m
        s0 += X[0, p] * m
        s1 += X[1, p] * m
        s2 += X[2, p] * m
    s0 = s0 / msum
    s1 = s1 / msum
    s2 = s2 / msum
    for e in range(entry_start[q], entry_start[q + 1]):
        ent = entries[e]
        p = particles[ent]
        m = mass[ent]
        dx0 = X[0, p] - s0
        dx1 = X[1, p] - s1
        dx2 = X[2, p] - s2
        for k in range(3):
            wq = m * rest_offset[ent, k]
            a[0, k] += dx0 * wq
            a[1, k] += dx1 * wq
            a[2, k] += dx2 * wq
    _polar3(a, rot)
    c0[b, 0] = s0
    c0[b, 1] = s1
    c0[b, 2] = s2
    c[b, 0] = s0
    c[b, 1] = s1
    c[b, 2] = s2
    for i in range(3):
        for k in range(3):
            R0[b, i, k] = rot[i, k]
            R[b, i, k] = rot[i, k]


@njit(cache=True, parallel=prange_only(), fastmath=False)
def body_frames(X, particles, rest_offset, mass, entries, entry_start, bodies):
    """Mirror of constraints/joints.body_frames_of: (B, 3) centres [m] and (B, 3, 3) polar
    rotations of the clusters ``bodies``, body by body in parallel."""
    B = bodies.shape[0]
    c = np.empty((B, 3))
    R = np.empty((B, 3, 3))
    c0 = np.empty((B, 3))
    R0 = np.empty((B, 3, 3))
    for q in prange(B):
        _frame(X, particles, rest_offset, mass, entries, entry_start, q, q, c0, R0, c, R)
    return c, R


@njit(cache=True, parallel=prange_only(), fastmath=False)
def solve_joints(X, particles, rest_offset, mass, shape_origin, shape_rot, shape_exact, bodies,
                 entries, entry_start, inv_mass, inv_inertia, body_free, c0, R0, c, R, moved,
                 body, anchor, axis, perp, kind, swing, rng, alpha, drive_on, drive_alpha, target,
                 lam, order, color_offsets, island, island_done, island_order, island_start,
                 passes, tolerance, disjoint):
    """Scalar mirror of constraints/joints.solve_joints. The frames are found in parallel, body
    by body (each reads its own entries and writes its own rows; a rigid cluster's is the shape
    solve's goal pose; below SERIAL_BODIES bodies on the calling thread, as are the moves). The
    joints run island by island in parallel (an island's joints are joined through free bodies,
    so two islands share no body the solve moves; island_order and island_start, from the
    JointSolver, list each island's joints in the serial order), each island pass after pass
    until it meets the tolerance, and inside an island colour after colour, joint after joint:
    the NumPy kernel's order for every joint of the island (it runs each colour as one batch
    across islands, which share nothing). Three parallel regions per call, not one per colour
    and pass, and no island waits for another's passes. Then the particles are moved body by
    body: in parallel when no particle is in two bodies (disjoint), else serially (clusters may
    share particles). The thread count changes no bit. _solve_one and _rotate are inlined: a
    call passes each array's reference count in and out, and _solve_one's twenty arrays per
    joint were a sixth of the joint solve at 100 ragdolls (_turn and _limit stay calls: inlined
    too they saved a few percent more and cost 25 s more of a cold compile)."""
    # a few dozen bodies' frames and moves (one or a few ragdolls) are less work than a
    # parallel region's wait (measured: 512 made 10 ragdolls' 120 bodies slower)
    serial = bodies.shape[0] < SERIAL_BODIES
    if serial:
        for q in range(bodies.shape[0]):
            _frame_of(X, particles, rest_offset, mass, shape_origin, shape_rot, shape_exact,
                      entries, entry_start, q, bodies[q], c0, R0, c, R)
    else:
        for q in prange(bodies.shape[0]):
            _frame_of(X, particles, rest_offset, mass, shape_origin, shape_rot, shape_exact,
                      entries, entry_start, q, bodies[q], c0, R0, c, R)
    # plain loops: in a parallel function an array expression or allocation becomes a
    # parallel region of its own, and these cost more than the whole frame copy above
    for b in range(moved.shape[0]):
        moved[b] = False
    for g in range(island_done.shape[0]):
        island_done[g] = False
    for g in prange(island_done.shape[0]):
        for _ in range(passes):
            worst = 0.0
            for o in range(island_start[g], island_start[g + 1]):
                err = _solve_one(island_order[o], body, anchor, axis, perp, kind, swing, rng,
                                 alpha, drive_on, drive_alpha, target, lam, c, R, inv_mass,
                                 inv_inertia, moved, body_free, tolerance)
                if not (worst >= err):       # np.maximum.at: a NaN error is kept
                    worst = err
            if worst < 1.0:
                island_done[g] = True
                break
    if disjoint and not serial:
        for q in prange(bodies.shape[0]):
            if moved[bodies[q]]:
                _move_body(X, particles, entries, entry_start, q, bodies[q], c0, R0, c, R)
    else:
        for q in range(bodies.shape[0]):
            if moved[bodies[q]]:
                _move_body(X, particles, entries, entry_start, q, bodies[q], c0, R0, c, R)


@njit(cache=True, fastmath=False, inline="always")
def _frame_of(X, particles, rest_offset, mass, shape_origin, shape_rot, shape_exact, entries,
              entry_start, q, b, c0, R0, c, R):
    """Body b's frame (its entries q): a rigid cluster's is the shape solve's goal pose."""
    if shape_exact[b]:
        for i in range(3):
            c0[b, i] = shape_origin[b, i]
            c[b, i] = shape_origin[b, i]
            for k in range(3):
                R0[b, i, k] = shape_rot[b, i, k]
                R[b, i, k] = shape_rot[b, i, k]
    else:
        _frame(X, particles, rest_offset, mass, entries, entry_start, q, b, c0, R0, c, R)


@njit(cache=True, fastmath=False, inline="always")
def _move_body(X, particles, entries, entry_start, q, b, c0, R0, c, R):
    """Body b's particles (its entries q) carried by the rigid motion from (c0, R0) to (c, R)."""
    m00 = R[b, 0, 0] * R0[b, 0, 0] + R[b, 0, 1] * R0[b, 0, 1] + R[b, 0, 2] * R0[b, 0, 2]
    m01 = R[b, 0, 0] * R0[b, 1, 0] + R[b, 0, 1] * R0[b, 1, 1] + R[b, 0, 2] * R0[b, 1, 2]
    m02 = R[b, 0, 0] * R0[b, 2, 0] + R[b, 0, 1] * R0[b, 2, 1] + R[b, 0, 2] * R0[b, 2, 2]
    m10 = R[b, 1, 0] * R0[b, 0, 0] + R[b, 1, 1] * R0[b, 0, 1] + R[b, 1, 2] * R0[b, 0, 2]
    m11 = R[b, 1, 0] * R0[b, 1, 0] + R[b, 1, 1] * R0[b, 1, 1] + R[b, 1, 2] * R0[b, 1, 2]
    m12 = R[b, 1, 0] * R0[b, 2, 0] + R[b, 1, 1] * R0[b, 2, 1] + R[b, 1, 2] * R0[b, 2, 2]
    m20 = R[b, 2, 0] * R0[b, 0, 0] + R[b, 2, 1] * R0[b, 0, 1] + R[b, 2, 2] * R0[b, 0, 2]
    m21 = R[b, 2, 0] * R0[b, 1, 0] + R[b, 2, 1] * R0[b, 1, 1] + R[b, 2, 2] * R0[b, 1, 2]
    m22 = R[b, 2, 0] * R0[b, 2, 0] + R[b, 2, 1] * R0[b, 2, 1] + R[b, 2, 2] * R0[b, 2, 2]
    for e in range(entry_start[q], entry_start[q + 1]):
        p = particles[entries[e]]
        r0 = X[0, p] - c0[b, 0]
        r1 = X[1, p] - c0[b, 1]
        r2 = X[2, p] - c0[b, 2]
        X[0, p] = c[b, 0] + (m00 * r0 + m01 * r1 + m02 * r2)
        X[1, p] = c[b, 1] + (m10 * r0 + m11 * r1 + m12 * r2)
        X[2, p] = c[b, 2] + (m20 * r0 + m21 * r1 + m22 * r2)
